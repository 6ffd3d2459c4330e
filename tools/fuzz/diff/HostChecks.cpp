/// \file
/// The launch-function oracle (HostChecks.h): the generated launch function's null-pointer and overlap checks,
/// evaluated for the program's sizes and compared with the fuzzer's model of its tensors.
#include "HostChecks.h"

#include "Check.h"
#include "LoopHeaders.h"

#include <optional>
#include <sstream>

namespace tilec::difffuzz {

namespace {

/// The launch function: its C parameters' names (the stream left out) and its checks, one statement a line.
struct Launcher {
    std::vector<std::string> params;
    std::vector<std::string> lines;
};

/// The definition `HEAD...(..., cudaStream_t stream) {` (`extern "C" tilec_status NAME`, or a wrapped export's
/// launcher `static tilec_status tilec_partP_NAME`): its parameters and its lines up to the grid's (the argument
/// checks come first).
std::optional<Launcher> findLauncher(const std::string &cuda, const std::string &head) {
    const std::string stream = "cudaStream_t stream";
    for (size_t at = cuda.find(head); at != std::string::npos; at = cuda.find(head, at + 1)) {
        const size_t open = cuda.find('(', at), close = cuda.find(')', open);
        if (open == std::string::npos || close == std::string::npos) return std::nullopt;
        const std::string sig = cuda.substr(open + 1, close - open - 1);
        if (sig.size() < stream.size() || sig.compare(sig.size() - stream.size(), stream.size(), stream) != 0 ||
            cuda.compare(close, 3, ") {") != 0)
            continue;
        Launcher l;
        std::istringstream ps(sig.substr(0, sig.size() - stream.size()));
        for (std::string p; std::getline(ps, p, ',');) {
            const size_t name = p.find_last_of(" *");
            if (p.find_first_not_of(' ') != std::string::npos) l.params.push_back(p.substr(name + 1));
        }
        const size_t end = cuda.find("const int64_t grid_x", close);
        std::istringstream body(cuda.substr(close, end == std::string::npos ? std::string::npos : end - close));
        for (std::string line; std::getline(body, line);) l.lines.push_back(line);
        return l;
    }
    return std::nullopt;
}

/// `if (COND) return tilec_argument_error(KIND, J);`: COND and J, where the line is such a check of KIND.
std::optional<std::pair<std::string, int64_t>> check(const std::string &line, const std::string &kind) {
    const std::string ret = ") return tilec_argument_error(" + kind + ", ";
    const size_t at = line.find("if ("), r = line.rfind(ret);
    if (at == std::string::npos || r == std::string::npos || r < at) return std::nullopt;
    return std::make_pair(line.substr(at + 4, r - at - 4), std::stoll(line.substr(r + ret.size())));
}

/// The model of a tensor argument: its elements and the bytes of storage its pointer reaches.
struct Model {
    std::string name;
    int64_t elements = 1, bytes = 0;
    bool workspace = false; ///< a T.alloc_global workspace: the launch function's own memory, no caller's
};

} // namespace

std::string checkLaunchArguments(const std::string &cuda, const ir::Kernel &typed, const std::map<std::string, double> &dyn,
                                 const std::map<std::string, std::vector<int64_t>> &strides,
                                 const std::set<std::string> &inputs, const std::set<std::string> &written) {
    // A wrapped export (several launches, workspaces) checks in each launch's own launcher, which takes every
    // parameter (workspaces too); otherwise the exported function takes the arguments.
    const std::string head = typed.wrapped() ? "static tilec_status tilec_part" + std::to_string(typed.part) + "_"
                                             : "extern \"C\" tilec_status ";
    auto l = findLauncher(cuda, head);
    if (!l) return "no launch function `" + head + "NAME(..., cudaStream_t stream) {`";
    // Its parameters: the kernel's arguments in order, then the T.dynamic sizes.
    std::map<size_t, Model> tensors;
    std::map<std::string, int64_t> vars;
    size_t at = 0;
    for (auto &p : typed.params) {
        if (!p.argument() && !typed.wrapped()) continue;
        if (at < l->params.size() && p.kind == ir::Param::Tensor) {
            Model &m = tensors[at];
            m.name = p.buffer->name;
            m.workspace = p.workspace;
            std::vector<int64_t> dims;
            for (auto &e : p.buffer->shape) {
                auto c = ir::constInt(e);
                auto v = ir::as<ir::VarNode>(e);
                if (!c && !(v && dyn.count(v->name))) return "a shape the oracle cannot size: " + m.name;
                dims.push_back(c ? *c : (int64_t)dyn.at(v->name));
                m.elements *= dims.back();
            }
            auto st = strides.find(m.name);
            m.bytes = (st == strides.end() ? m.elements : stridedSpan(dims, st->second)) * std::max(1, p.buffer->dtype.bits() / 8);
        }
        ++at;
    }
    for (auto &d : typed.dynamicSymbols)
        if (at < l->params.size()) vars[l->params[at++]] = (int64_t)dyn.at(d->name);
    if (at != l->params.size())
        return "the launch function has " + std::to_string(l->params.size()) + " parameters, the kernel " + std::to_string(at);
    auto index = [&](const std::string &c) {
        for (auto &[i, m] : tensors)
            if (l->params[i] == c) return (int64_t)i;
        return (int64_t)-1;
    };
    std::set<std::pair<int64_t, int64_t>> pairs;
    std::set<int64_t> sized; // run-time sizes (strides too) whose range the function checks
    for (auto &line : l->lines) {
        if (auto z = check(line, "TILEC_ERROR_BAD_SIZE")) {
            const std::string n = l->params.at((size_t)std::min<int64_t>(z->second, (int64_t)l->params.size() - 1));
            if (z->first != n + " < 0 || " + n + " > 2147483647") return "a size check of another range: " + line;
            sized.insert(z->second);
        }
        if (auto a = check(line, "TILEC_ERROR_MISALIGNED")) { // a tensor of no elements may be anywhere
            const size_t cond = a->first.find(" && !");
            auto empty = cond == std::string::npos ? std::optional<int64_t>(0) : evaluateC(a->first.substr(cond + 5), vars);
            if (!tensors.count((size_t)a->second) || !empty) return "an alignment check the oracle cannot read: " + line;
            const Model &m = tensors[(size_t)a->second];
            if ((*empty != 0) != (m.elements == 0))
                return m.name + " has " + std::to_string(m.elements) + " elements, but the alignment check takes it for " +
                       (*empty ? "empty" : "not empty") + ": " + line;
        }
        if (auto n = check(line, "TILEC_ERROR_NULL_POINTER")) {
            const size_t eq = n->first.find(" == NULL"), cond = n->first.find(" && !");
            const int64_t i = index(n->first.substr(0, eq));
            if (eq == std::string::npos || i != n->second || !tensors.count((size_t)i)) return "a null check of another argument: " + line;
            const Model &m = tensors[(size_t)i];
            auto empty = cond == std::string::npos ? std::optional<int64_t>(0) : evaluateC(n->first.substr(cond + 5), vars);
            if (!empty) return "a null check the oracle cannot evaluate: " + line;
            if ((*empty != 0) != (m.elements == 0))
                return m.name + " has " + std::to_string(m.elements) + " elements, but the null check takes it for " +
                       (*empty ? "empty" : "not empty") + ": " + line;
        }
        auto o = check(line, "TILEC_ERROR_OVERLAP");
        if (!o) continue;
        auto args = callArguments(o->first, "tilec_overlap");
        if (!args || args->size() != 4) return "an overlap check the oracle cannot read: " + line;
        const int64_t i = index((*args)[0]), j = index((*args)[2]);
        if (i < 0 || j < 0 || i >= j || o->second != j) return "an overlap check of other arguments, or naming another: " + line;
        pairs.insert({i, j});
        for (int k : {0, 2}) {
            const Model &m = tensors[(size_t)(k ? j : i)];
            auto bytes = evaluateC((*args)[(size_t)k + 1], vars);
            if (!bytes) return "an overlap check the oracle cannot evaluate: " + line;
            if (*bytes != m.bytes)
                return "the overlap check takes " + m.name + " for " + std::to_string(*bytes) + " bytes, its storage spans " +
                       std::to_string(m.bytes) + ": " + line;
        }
    }
    for (size_t i = l->params.size() - typed.dynamicSymbols.size(); i < l->params.size(); ++i)
        if (!sized.count((int64_t)i)) return "no range check of the run-time size " + l->params[i];
    // Every pair with a written tensor is checked; no pair of tensors the program only reads is.
    for (auto &[i, a] : tensors)
        for (auto &[j, b] : tensors) {
            if (i >= j || a.workspace || b.workspace) continue; // the launch function's own memory
            const bool checked = pairs.count({(int64_t)i, (int64_t)j}) > 0;
            if (!checked && (written.count(a.name) || written.count(b.name)))
                return "no overlap check of " + a.name + " and " + b.name + ", though the kernel writes one of them";
            if (checked && inputs.count(a.name) && inputs.count(b.name))
                return "an overlap check of " + a.name + " and " + b.name + ", which the kernel only reads";
        }
    return "";
}

} // namespace tilec::difffuzz
