/// \file
/// The dispatcher of a kernel tuned at several values of a T.dynamic size (include/tilec/Tune.h): a launch
/// function with the kernel's C signature that forwards to the configuration of the size's bucket, and
/// queries, load and unload over all of its configurations. It is written from the generated header's
/// declaration of the first configuration, so its signature is that of the kernels it forwards to.
#include "tilec/Tune.h"

#include <cctype>
#include <functional>
#include <map>
#include <stdexcept>

namespace tilec::tune {

namespace {

std::string trim(const std::string &s) {
    size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// The distinct names, in first-seen order.
std::vector<std::string> distinct(const std::vector<std::string> &names) {
    std::vector<std::string> out;
    for (auto &n : names) {
        bool seen = false;
        for (auto &o : out) seen = seen || o == n;
        if (!seen) out.push_back(n);
    }
    return out;
}

std::string signature(const std::string &ret, const std::string &name, const std::vector<CParam> &params) {
    std::string s = ret + " " + name + "(" + (params.empty() ? "void" : "");
    for (size_t i = 0; i < params.size(); ++i) {
        const std::string &t = params[i].type;
        s += (i ? ", " : "") + t + (t.empty() || t.back() == '*' ? "" : " ") + params[i].name;
    }
    return s + ")";
}

std::string arguments(const std::vector<CParam> &params) {
    std::string s;
    for (size_t i = 0; i < params.size(); ++i) s += (i ? ", " : "") + params[i].name;
    return s;
}

/// The buckets with neighbours of one configuration merged: (launch function, largest size; none for the last).
std::vector<std::pair<std::string, std::optional<int64_t>>> mergedBuckets(const Dispatch &d) {
    if (d.cfgNames.empty() || d.cfgNames.size() != d.upTo.size() || d.upTo.back())
        throw std::invalid_argument("internal error: in tune: a dispatch without buckets, or with a bound on the last");
    std::vector<std::pair<std::string, std::optional<int64_t>>> out;
    for (size_t i = 0; i < d.cfgNames.size(); ++i) {
        if (!out.empty() && out.back().first == d.cfgNames[i]) out.back().second = d.upTo[i];
        else out.emplace_back(d.cfgNames[i], d.upTo[i]);
    }
    return out;
}


/// `if (SYMBOL <= UP) return CALL;` per bucket, the last without a bound; `call` writes a configuration's call.
std::string forwardByBucket(const Dispatch &d, const std::function<std::string(const std::string &)> &call) {
    std::string s;
    for (auto &[name, upTo] : mergedBuckets(d))
        s += upTo ? "    if (" + d.symbol + " <= " + std::to_string(*upTo) + ") return " + call(name) + ";\n"
                  : "    return " + call(name) + ";\n";
    return s;
}

/// The workspace forms of a dispatcher whose configurations have T.alloc_global workspaces: the parameters of
/// NAME_workspace_bytes and NAME_with_workspace (those of the first configuration that declares them: every
/// configuration has the kernel's scalars and sizes), and per configuration whether it has them (one without
/// needs no workspace: 0 bytes, and its own launch function). None when no configuration has a workspace.
struct WorkspaceForms {
    std::vector<CParam> bytes, with;
    std::map<std::string, bool> has;
};

std::optional<WorkspaceForms> workspaceForms(const Dispatch &d, const std::string &header) {
    WorkspaceForms w;
    bool any = false;
    for (auto &c : distinct(d.cfgNames)) {
        auto bytes = declaredParameters(header, "size_t", c + "_workspace_bytes");
        auto with = declaredParameters(header, "tilec_status", c + "_with_workspace");
        if (bytes.has_value() != with.has_value())
            throw std::invalid_argument("internal error: in tune: '" + c + "' has one of its two workspace functions");
        w.has[c] = bytes.has_value();
        if (bytes && !any) w.bytes = *bytes, w.with = *with, any = true;
    }
    if (!any) return std::nullopt;
    bool hasSymbol = false;
    for (auto &p : w.bytes) hasSymbol = hasSymbol || p.name == d.symbol;
    if (!hasSymbol || w.with.size() < 3)
        throw std::invalid_argument("internal error: in tune: the workspace functions of '" + d.cfgNames[0] +
                                    "' are not of the form the dispatcher forwards");
    return w;
}

} // namespace

std::string configKernelName(const std::string &kernel, size_t k) { return kernel + "__cfg" + std::to_string(k); }

std::optional<std::vector<CParam>> declaredParameters(const std::string &header, const std::string &ret,
                                                      const std::string &name) {
    std::string key = ret + " " + name + "(";
    size_t at = 0;
    for (;;) {
        at = header.find(key, at);
        if (at == std::string::npos) return std::nullopt;
        if (at == 0 || header[at - 1] == '\n') break;
        at += key.size();
    }
    size_t open = at + key.size(), close = header.find(')', open);
    if (close == std::string::npos) throw std::invalid_argument("internal error: in tune: '" + name + "' is cut off");
    std::vector<CParam> params;
    std::string list = header.substr(open, close - open);
    if (trim(list) == "void") return params;
    size_t b = 0;
    while (b <= list.size()) {
        size_t e = list.find(',', b);
        if (e == std::string::npos) e = list.size();
        std::string p = trim(list.substr(b, e - b));
        size_t n = p.size();
        while (n > 0 && (std::isalnum((unsigned char)p[n - 1]) || p[n - 1] == '_')) --n;
        if (n == 0 || n == p.size())
            throw std::invalid_argument("internal error: in tune: cannot read parameter '" + p + "' of " + name);
        params.push_back(CParam{trim(p.substr(0, n)), p.substr(n)});
        b = e + 1;
    }
    return params;
}

std::vector<CParam> launchParameters(const std::string &header, const std::string &cName) {
    auto params = declaredParameters(header, "tilec_status", cName);
    if (!params) throw std::invalid_argument("internal error: in tune: the header declares no '" + cName + "'");
    return *params;
}

std::string dispatchDeclarations(const Dispatch &d, const std::string &header) {
    auto buckets = mergedBuckets(d);
    auto params = launchParameters(header, d.cfgNames[0]);
    std::string s = "/* " + d.cName + ": tuned (tilec tune); dispatches on " + d.symbol + " to";
    for (size_t i = 0; i < buckets.size(); ++i)
        s += (i ? ", " : " ") + buckets[i].first +
             (buckets[i].second ? " up to " + std::to_string(*buckets[i].second)
                                : std::string(i ? " above" : " for every size"));
    s += ".\n * Its queries give the largest figure of those kernels (0 when one of them has no code). */\n";
    s += signature("tilec_status", d.cName, params) + ";\n";
    if (auto w = workspaceForms(d, header)) {
        s += "/* The bytes of the workspace " + d.cName + "_with_workspace needs for these sizes: those of the configuration\n";
        s += " * it dispatches to (0 when a size is out of range: the launch then returns TILEC_ERROR_BAD_SIZE). */\n";
        s += signature("size_t", d.cName + "_workspace_bytes", w->bytes) + ";\n";
        s += "/* As " + d.cName + ", in the caller's workspace (256-byte aligned, at least the bytes above, used until\n";
        s += " * the launches on `stream` finish): allocates nothing, so it suits the application's own allocator. */\n";
        s += signature("tilec_status", d.cName + "_with_workspace", w->with) + ";\n";
    }
    s += "int " + d.cName + "_threads(int sm);\nsize_t " + d.cName + "_shared_bytes(int sm);\n";
    s += "tilec_status " + d.cName + "_load(void);\ntilec_status " + d.cName + "_unload(void);\n";
    return s;
}

std::string dispatchDefinitions(const Dispatch &d, const std::string &header, bool cxx) {
    auto params = launchParameters(header, d.cfgNames[0]);
    bool hasSymbol = false;
    for (auto &p : params) hasSymbol = hasSymbol || p.name == d.symbol;
    if (!hasSymbol)
        throw std::invalid_argument("internal error: in tune: '" + d.cfgNames[0] + "' has no parameter " + d.symbol);
    std::string link = cxx ? "extern \"C\" " : "";
    std::string s = "\n/* " + d.cName + ": the tuned configuration of the size's bucket (tilec tune). */\n";
    if (!cxx) s += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n";
    s += link + signature("tilec_status", d.cName, params) + " {\n";
    s += forwardByBucket(d, [&](const std::string &c) { return c + "(" + arguments(params) + ")"; }) + "}\n";
    if (auto w = workspaceForms(d, header)) {
        std::vector<CParam> plain = w->with; // less `void *workspace, size_t workspace_bytes` before the stream
        plain.erase(plain.end() - 3, plain.end() - 1);
        s += link + signature("size_t", d.cName + "_workspace_bytes", w->bytes) + " {\n";
        s += forwardByBucket(d, [&](const std::string &c) {
            return w->has[c] ? c + "_workspace_bytes(" + arguments(w->bytes) + ")" : std::string("0");
        }) + "}\n";
        s += link + signature("tilec_status", d.cName + "_with_workspace", w->with) + " {\n";
        s += forwardByBucket(d, [&](const std::string &c) {
            return w->has[c] ? c + "_with_workspace(" + arguments(w->with) + ")" : c + "(" + arguments(plain) + ")";
        }) + "}\n";
    }
    auto all = distinct(d.cfgNames);
    for (const char *q : {"threads", "shared_bytes"}) {
        std::string type = std::string(q) == "threads" ? "int" : "size_t";
        s += link + type + " " + d.cName + "_" + q + "(int sm) {\n    " + type + " most = 0, x;\n";
        for (auto &c : all)
            s += "    x = " + c + "_" + q + "(sm);\n    if (x == 0) return 0;\n    if (x > most) most = x;\n";
        s += "    return most;\n}\n";
    }
    for (const char *q : {"load", "unload"}) {
        s += link + "tilec_status " + d.cName + "_" + q + "(void) {\n    tilec_status s;\n";
        for (auto &c : all) s += "    s = " + c + "_" + q + "();\n    if (s != TILEC_SUCCESS) return s;\n";
        s += "    return TILEC_SUCCESS;\n}\n";
    }
    if (!cxx) s += "#ifdef __cplusplus\n}\n#endif\n";
    return s;
}

std::string insertIntoHeader(const std::string &header, const std::string &declarations) {
    const std::string close = "#ifdef __cplusplus\n}\n#endif\n";
    size_t at = header.rfind(close);
    if (at == std::string::npos)
        throw std::invalid_argument("internal error: in tune: the header has no closing extern \"C\" block");
    return header.substr(0, at) + declarations + "\n" + header.substr(at);
}

} // namespace tilec::tune
