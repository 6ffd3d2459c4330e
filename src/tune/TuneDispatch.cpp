/// \file
/// The dispatcher of a kernel tuned at several values of a T.dynamic size (include/tilec/Tune.h): a launch
/// function with the kernel's C signature that forwards to the configuration of the size's bucket, and
/// queries, load and unload over all of its configurations. It is written from the generated header's
/// declaration of the first configuration, so its signature is that of the kernels it forwards to.
#include "tilec/Tune.h"

#include <cctype>
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
    std::string s = ret + " " + name + "(";
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

} // namespace

std::string configKernelName(const std::string &kernel, size_t k) { return kernel + "__cfg" + std::to_string(k); }

std::vector<CParam> launchParameters(const std::string &header, const std::string &cName) {
    std::string key = "tilec_status " + cName + "(";
    size_t at = 0;
    for (;;) {
        at = header.find(key, at);
        if (at == std::string::npos)
            throw std::invalid_argument("internal error: in tune: the header declares no '" + cName + "'");
        if (at == 0 || header[at - 1] == '\n') break;
        at += key.size();
    }
    size_t open = at + key.size(), close = header.find(')', open);
    if (close == std::string::npos) throw std::invalid_argument("internal error: in tune: '" + cName + "' is cut off");
    std::vector<CParam> params;
    std::string list = header.substr(open, close - open);
    size_t b = 0;
    while (b <= list.size()) {
        size_t e = list.find(',', b);
        if (e == std::string::npos) e = list.size();
        std::string p = trim(list.substr(b, e - b));
        size_t n = p.size();
        while (n > 0 && (std::isalnum((unsigned char)p[n - 1]) || p[n - 1] == '_')) --n;
        if (n == 0 || n == p.size())
            throw std::invalid_argument("internal error: in tune: cannot read parameter '" + p + "' of " + cName);
        params.push_back(CParam{trim(p.substr(0, n)), p.substr(n)});
        b = e + 1;
    }
    return params;
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
    s += "int " + d.cName + "_threads(int sm);\nsize_t " + d.cName + "_shared_bytes(int sm);\n";
    s += "tilec_status " + d.cName + "_load(void);\ntilec_status " + d.cName + "_unload(void);\n";
    return s;
}

std::string dispatchDefinitions(const Dispatch &d, const std::string &header, bool cxx) {
    auto buckets = mergedBuckets(d);
    auto params = launchParameters(header, d.cfgNames[0]);
    bool hasSymbol = false;
    for (auto &p : params) hasSymbol = hasSymbol || p.name == d.symbol;
    if (!hasSymbol)
        throw std::invalid_argument("internal error: in tune: '" + d.cfgNames[0] + "' has no parameter " + d.symbol);
    std::string link = cxx ? "extern \"C\" " : "";
    std::string s = "\n/* " + d.cName + ": the tuned configuration of the size's bucket (tilec tune). */\n";
    if (!cxx) s += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n";
    s += link + signature("tilec_status", d.cName, params) + " {\n";
    std::string args = arguments(params);
    for (auto &[name, upTo] : buckets)
        s += upTo ? "    if (" + d.symbol + " <= " + std::to_string(*upTo) + ") return " + name + "(" + args + ");\n"
                  : "    return " + name + "(" + args + ");\n";
    s += "}\n";
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
