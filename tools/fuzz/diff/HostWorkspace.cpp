/// \file
/// The workspace-size oracle (HostChecks.h: checkWorkspaceBytes): the header's `NAME_workspace_bytes(...)` query,
/// which callers with their own allocator (PyTorch's) use to size the memory they pass to `NAME_with_workspace`,
/// and which the plain entry allocates, read from the generated CUDA and evaluated for the program's sizes: each
/// T.alloc_global workspace's bytes must be its elements times its element size (a smaller one would let a
/// launch write past it into the next workspace or past the allocation), each rounded up to its own 256-byte
/// slot, in the order of the kernel's parameters.
#include "HostChecks.h"

#include "Check.h"
#include "LoopHeaders.h"

#include <sstream>

namespace tilec::difffuzz {

std::string checkWorkspaceBytes(const std::string &cuda, const ir::Kernel &typed, const std::map<std::string, double> &dyn) {
    std::vector<const ir::Param *> spaces;
    for (auto &p : typed.params)
        if (p.workspace) spaces.push_back(&p);
    if (spaces.empty()) return "";
    const std::string head = "_workspace_bytes(";
    size_t at = cuda.find("extern \"C\" size_t ");
    while (at != std::string::npos && cuda.compare(cuda.find('(', at) - head.size() + 1, head.size(), head) != 0)
        at = cuda.find("extern \"C\" size_t ", at + 1);
    if (at == std::string::npos) return "no `extern \"C\" size_t NAME_workspace_bytes(...)` for the workspaces";
    const size_t open = cuda.find('(', at), close = cuda.find(')', open), end = cuda.find("return (size_t)ws_total;", close);
    if (end == std::string::npos) return "a workspace-size query the oracle cannot read";
    std::map<std::string, int64_t> vars;
    std::istringstream ps(cuda.substr(open + 1, close - open - 1));
    for (std::string p; std::getline(ps, p, ',');) {
        const std::string name = p.substr(p.find_last_of(" *") + 1);
        if (name == "void") continue;
        if (!dyn.count(name)) return "the workspace-size query takes '" + name + "', which the program has no value for";
        vars[name] = (int64_t)dyn.at(name);
    }
    // Each workspace's block: `/* NAME: DTYPE workspace */`, its bytes multiplied up, then its rounded slot.
    std::istringstream body(cuda.substr(close, end - close));
    std::vector<std::pair<std::string, int64_t>> blocks;
    for (std::string line; std::getline(body, line);) {
        if (auto c = line.find("/* "); c != std::string::npos && line.find(" workspace */") != std::string::npos)
            blocks.push_back({line.substr(c + 3, line.find(':', c) - c - 3), -1});
        else if (auto b = line.find("int64_t ws_bytes = "); b != std::string::npos && !blocks.empty())
            blocks.back().second = std::stoll(line.substr(b + 19));
        else if (auto m = line.find("__builtin_mul_overflow(ws_bytes, (int64_t)("); m != std::string::npos && !blocks.empty()) {
            const size_t from = m + 43, to = line.find("), &ws_bytes)", from);
            auto f = to == std::string::npos ? std::nullopt : evaluateC(line.substr(from, to - from), vars);
            if (!f) return "a workspace size factor the oracle cannot evaluate: " + line;
            blocks.back().second *= *f;
        } else if (line.find("ws_total += ") != std::string::npos && line.find("(ws_bytes + 255) / 256 * 256") == std::string::npos)
            return "a workspace slot not rounded up to 256 bytes: " + line;
    }
    if (blocks.size() != spaces.size())
        return "the workspace-size query sizes " + std::to_string(blocks.size()) + " workspaces, the kernel has " + std::to_string(spaces.size());
    for (size_t i = 0; i < spaces.size(); ++i) {
        const ir::Buffer &b = spaces[i]->buffer;
        int64_t want = b->dtype.bytes();
        for (auto &e : b->shape) {
            auto c = ir::constInt(e);
            auto v = ir::as<ir::VarNode>(e);
            if (!c && !(v && dyn.count(v->name))) return "a workspace shape the oracle cannot size: " + b->name;
            want *= c ? *c : (int64_t)dyn.at(v->name);
        }
        if (blocks[i].first != b->name || blocks[i].second != want)
            return "the workspace-size query gives " + blocks[i].first + " " + std::to_string(blocks[i].second) + " bytes; " +
                   b->name + " holds " + std::to_string(want);
    }
    return "";
}

} // namespace tilec::difffuzz
