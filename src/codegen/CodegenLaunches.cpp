/// \file
/// Prim_funcs of several launches (`with T.Kernel` more than once, T.alloc_global workspaces between them): the
/// exported function checks the sizes, allocates the workspaces in one stream-ordered allocation on the
/// caller's stream (cudaMallocAsync / cuMemAllocAsync: no synchronization, capturable in a CUDA graph), calls
/// the parts' launchers in order, and frees the allocation stream-ordered after the last launch. Where there are
/// workspaces, NAME_workspace_bytes and NAME_with_workspace let an application with its own allocator (PyTorch's
/// caching allocator, a buffer XLA allocates: --emit=torch, --emit=xla-ffi) supply them instead. Its queries
/// answer for all parts; the parts' launchers are the ordinary ones, file-local (CodegenHost.cpp,
/// CodegenBinary.cpp).
#include "codegen/CodegenHostParts.h"

#include "tilec/IRPrinter.h"

namespace tilec::codegen {

using namespace ir;

namespace {

/// Offsets within the allocation are multiples of this (cudaMallocAsync's own alignment is at least as large),
/// so every workspace meets any alignment a launcher checks.
constexpr int kWorkspaceAlignment = 256;
/// Larger requests fail as a bad size before any allocation (no device has 2^56 bytes); it keeps the sums in range.
constexpr const char *kWorkspaceLimit = "((int64_t)1 << 56)";

std::vector<const Param *> workspaces(const Kernel &k) {
    std::vector<const Param *> w;
    for (auto &p : k.params)
        if (p.workspace) w.push_back(&p);
    return w;
}

/// The parameters of NAME_workspace_bytes: the exported function's scalars and T.dynamic sizes (the only values a
/// workspace's shape may use), as `TYPE NAME` and as the names.
std::pair<std::string, std::string> workspaceSizeParams(const KernelInfo &info, const Signature &sig) {
    const Kernel &k = *info.kernel;
    std::string decl, args;
    auto add = [&](const std::string &type, const std::string &name) {
        decl += (decl.empty() ? "" : ", ") + type + " " + name;
        args += (args.empty() ? "" : ", ") + name;
    };
    size_t i = 0;
    for (auto &p : k.params)
        if (p.argument()) {
            if (p.kind == Param::Scalar) add(headerType(p.var->dtype), sig.names[i]);
            ++i;
        }
    for (size_t j = 0; j < k.dynamicSymbols.size(); ++j) add("int64_t", sig.names[i + j]);
    return {decl.empty() ? "void" : decl, args};
}

} // namespace

bool hasWorkspaces(const Kernel &k) { return !workspaces(k).empty(); }

WorkspaceSignatures workspaceSignatures(const KernelInfo &info, const Signature &sig) {
    WorkspaceSignatures w;
    const std::string &name = info.exportName;
    auto [decl, args] = workspaceSizeParams(info, sig);
    w.bytes = "size_t " + name + "_workspace_bytes(" + decl + ")";
    w.sizeArgs = args;
    const std::string head = "tilec_status " + name + "(", tail = "cudaStream_t stream)";
    TILEC_ASSERT(sig.text.rfind(head, 0) == 0 && sig.text.size() >= tail.size() &&
                     sig.text.compare(sig.text.size() - tail.size(), tail.size(), tail) == 0,
                 "an exported signature of another form");
    w.withWorkspace = "tilec_status " + name + "_with_workspace(" + sig.text.substr(head.size(), sig.text.size() - head.size() - tail.size()) +
                      "void *workspace, size_t workspace_bytes, " + tail;
    return w;
}

namespace {

/// The checks of the T.dynamic sizes, each an argument error at its position.
std::string printDynamicChecks(const Kernel &k, const Signature &sig) {
    std::string s;
    const size_t dynamicBase = sig.names.size() - k.dynamicSymbols.size();
    for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) {
        const std::string &n = sig.names[dynamicBase + i];
        s += "    if (" + n + " < 0 || " + n + " > 2147483647) return " + "tilec_argument_error(TILEC_ERROR_BAD_SIZE, " +
             std::to_string(dynamicBase + i) + ");\n";
    }
    return s;
}

/// `ws_total` (the bytes of all workspaces, each at a multiple of kWorkspaceAlignment) and `ws_atJ` (workspace J's
/// offset), overflow-checked since dynamic sizes may be large; `fail` is what a size beyond the limit returns.
std::string printWorkspaceSizes(const Kernel &k, NameTable &names, const std::string &fail) {
    ExprPrinter hp(names, true);
    auto ws = workspaces(k);
    std::string s = "    int64_t ws_total = 0;\n";
    for (size_t j = 0; j < ws.size(); ++j) {
        const BufferNode &b = *ws[j]->buffer;
        std::string at = "ws_at" + std::to_string(j);
        s += "    /* " + b.name + ": " + std::string(b.dtype.name()) + " workspace */\n";
        s += "    const int64_t " + at + " = ws_total;\n";
        s += "    {\n        int64_t ws_bytes = " + std::to_string(b.dtype.bytes()) + ";\n";
        for (auto &d : b.shape)
            s += "        if (__builtin_mul_overflow(ws_bytes, (int64_t)(" + hp.print(d) + "), &ws_bytes) || ws_bytes < 0 || ws_bytes > " +
                 kWorkspaceLimit + ") return " + fail + ";\n"; // a negative scalar size too
        const std::string a = std::to_string(kWorkspaceAlignment);
        s += "        ws_total += (ws_bytes + " + std::to_string(kWorkspaceAlignment - 1) + ") / " + a + " * " + a + ";\n";
        s += "        if (ws_total > " + std::string(kWorkspaceLimit) + ") return " + fail + ";\n    }\n";
    }
    for (size_t j = 0; j < ws.size(); ++j) s += "    (void)ws_at" + std::to_string(j) + ";\n"; // _workspace_bytes reads only the total
    return s;
}

/// The parts in order on `stream`, a failing one stopping the rest (each checks the caller's pointers itself);
/// the workspaces at `base` + their offsets.
std::string printParts(const std::vector<std::vector<const KernelInfo *>> &parts, const Signature &sig,
                       const std::string &base) {
    const Kernel &k = *parts[0][0]->kernel;
    const size_t dynamicBase = sig.names.size() - k.dynamicSymbols.size();
    std::string s = "    tilec_status status = TILEC_SUCCESS;\n";
    for (auto &part : parts) {
        const KernelInfo &p = *part[0];
        std::string args;
        size_t w = 0;
        for (size_t i = 0; i < p.kernel->params.size(); ++i) {
            const Param &q = p.kernel->params[i];
            std::string a;
            if (q.viewOf) {
                size_t b = 0;
                while (b < p.kernel->params.size() && p.kernel->params[b].buffer != q.viewOf) ++b;
                TILEC_ASSERT(b < p.kernel->params.size() && p.kernel->params[b].argument(), "a view of no tensor argument");
                a = "(" + std::string(p.written[i] ? "" : "const ") + headerType(q.buffer->dtype) + " *)" + sig.names[b];
            } else if (!q.workspace) {
                a = sig.names[i];
            } else {
                a = "(" + headerType(q.buffer->dtype) + " *)(" + base + " + ws_at" + std::to_string(w++) + ")";
            }
            args += (args.empty() ? "" : ", ") + a;
        }
        for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) args += (args.empty() ? "" : ", ") + sig.names[dynamicBase + i];
        args += (args.empty() ? "" : ", ") + std::string("stream");
        s += "    if (status == TILEC_SUCCESS) status = " + p.cName + "(" + args + ");\n";
    }
    return s;
}

/// NAME_workspace_bytes and NAME_with_workspace (the launches in a caller's workspace, allocating nothing), and
/// NAME, which allocates the workspace stream-ordered on `stream`, calls NAME_with_workspace and frees it.
std::string printWithWorkspace(const std::vector<std::vector<const KernelInfo *>> &parts, const Signature &sig,
                               NameTable &names, bool cxx) {
    const KernelInfo &first = *parts[0][0];
    const Kernel &k = *first.kernel;
    const WorkspaceSignatures w = workspaceSignatures(first, sig);
    const std::string link = cLinkage(cxx);
    std::string s = link + w.bytes + " {\n";
    const size_t dynamicBase = sig.names.size() - k.dynamicSymbols.size();
    for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) {
        const std::string &n = sig.names[dynamicBase + i];
        s += "    if (" + n + " < 0 || " + n + " > 2147483647) return 0;\n";
    }
    s += printWorkspaceSizes(k, names, "0") + "    return (size_t)ws_total;\n}\n";
    const std::string at = std::to_string(sig.names.size());
    s += link + w.withWorkspace + " {\n" + printDynamicChecks(k, sig) + printWorkspaceSizes(k, names, "TILEC_ERROR_BAD_SIZE");
    s += "    if (workspace_bytes < (size_t)ws_total) return tilec_argument_error(TILEC_ERROR_BAD_SIZE, " +
         std::to_string(sig.names.size() + 1) + ");\n";
    s += "    if (ws_total > 0 && !workspace) return tilec_argument_error(TILEC_ERROR_NULL_POINTER, " + at + ");\n";
    s += "    if ((uintptr_t)workspace % " + std::to_string(kWorkspaceAlignment) +
         " != 0) return tilec_argument_error(TILEC_ERROR_MISALIGNED, " + at + ");\n";
    s += printParts(parts, sig, "(char *)workspace") + "    return status;\n}\n";
    // NAME: its own workspace, stream-ordered (no synchronization, capturable in a CUDA graph). Sizes out of range
    // ask for none, and NAME_with_workspace reports them.
    std::string args;
    for (auto &n : sig.names) args += n + ", ";
    s += link + sig.text + " {\n    const size_t ws_total = " + first.exportName + "_workspace_bytes(" + w.sizeArgs + ");\n";
    if (cxx) {
        s += "    void *ws = NULL;\n    if (ws_total > 0) {\n";
        s += "        cudaError_t e = cudaMallocAsync(&ws, ws_total, stream);\n";
        s += "        if (e != cudaSuccess) return tilec_cuda_failure(e);\n    }\n";
    } else {
        // The driver API allocates in the current context: the one the launches will use.
        s += "    CUdeviceptr ws = 0;\n    if (ws_total > 0) {\n";
        s += "        CUcontext ctx;\n        unsigned long long key;\n";
        s += "        CUresult r = tilec_context(&ctx, &key);\n";
        s += "        if (r == CUDA_SUCCESS) r = cuMemAllocAsync(&ws, ws_total, stream);\n";
        s += "        if (r != CUDA_SUCCESS) return tilec_driver_failure(r);\n    }\n";
    }
    s += "    tilec_status status = " + first.exportName + "_with_workspace(" + args +
         (cxx ? "ws" : "(void *)(uintptr_t)ws") + ", ws_total, stream);\n";
    if (cxx) {
        s += "    if (ws) {\n        cudaError_t e = cudaFreeAsync(ws, stream);\n";
        s += "        if (e != cudaSuccess && status == TILEC_SUCCESS) status = tilec_cuda_failure(e);\n    }\n";
    } else {
        s += "    if (ws) {\n        CUresult r = cuMemFreeAsync(ws, stream);\n";
        s += "        if (r != CUDA_SUCCESS && status == TILEC_SUCCESS) status = tilec_driver_failure(r);\n    }\n";
    }
    return s + "    return status;\n}\n";
}

std::string printOne(const std::vector<std::vector<const KernelInfo *>> &parts, const CodegenOptions &o, bool cxx) {
    const KernelInfo &first = *parts[0][0];
    const Kernel &k = *first.kernel;
    NameTable names = launcherNames();
    for (const char *r : {"ws", "ws_total", "ws_bytes", "most", "v", "ctx", "key", "workspace", "workspace_bytes"})
        names.reserve(r);
    for (size_t j = 0; j < k.params.size(); ++j) names.reserve("ws_at" + std::to_string(j));
    Signature sig = signature(first, names, true);
    std::string s;
    if (workspaces(k).empty())
        s = cLinkage(cxx) + sig.text + " {\n" + printDynamicChecks(k, sig) + printParts(parts, sig, "") +
            "    return status;\n}\n";
    else
        s = printWithWorkspace(parts, sig, names, cxx);
    // Queries: 0 when any part has no code for `sm` (its launch would fail), else the largest part's need.
    auto query = [&](const std::string &type, const char *suffix) {
        std::string q = cLinkage(cxx) + type + " " + first.exportName + suffix + "(int sm) {\n    " + type + " most = 0;\n";
        for (auto &part : parts) {
            q += "    {\n        " + type + " v = " + part[0]->cName + suffix + "(sm);\n";
            q += "        if (v == 0) return 0;\n        if (v > most) most = v;\n    }\n";
        }
        return q + "    return most;\n}\n";
    };
    s += query("int", "_threads") + query("size_t", "_shared_bytes");
    s += cLinkage(cxx) + "tilec_status " + first.exportName + "_load(void) {\n    tilec_status status = TILEC_SUCCESS;\n";
    for (auto &part : parts) s += "    if (status == TILEC_SUCCESS) status = " + part[0]->cName + "_load();\n";
    s += "    return status;\n}\n";
    s += cLinkage(cxx) + "tilec_status " + first.exportName + "_unload(void) { return " +
         (cxx ? "TILEC_SUCCESS" : "tilec_unload()") + "; }\n\n";
    (void)o;
    return s;
}

} // namespace

std::string describeLaunches(const KernelInfo &part) {
    const Kernel &k = *part.kernel;
    std::string c;
    for (auto &p : k.params)
        if (p.viewOf) {
            std::string shape;
            for (auto &d : p.buffer->shape) shape += (shape.empty() ? "" : ", ") + print(d);
            c += " *   view " + p.buffer->name + ": " + p.viewOf->name + "'s data as " + std::string(p.buffer->dtype.name()) + "[" + shape + "]\n";
        }
    if (k.parts > 1) c += " *   runs " + std::to_string(k.parts) + " kernels in order on `stream`";
    auto ws = workspaces(k);
    if (ws.empty()) return c + (k.parts > 1 ? "\n" : "");
    c += std::string(k.parts > 1 ? ";" : " *  ") + " their workspaces, allocated with cudaMallocAsync\n *   on `stream` at each call and freed with cudaFreeAsync after the last launch (" +
         part.exportName + "_with_workspace\n *   takes the caller's instead):";
    for (auto *p : ws) {
        std::string shape;
        for (auto &d : p->buffer->shape) shape += (shape.empty() ? "" : ", ") + print(d);
        c += "\n *     " + p->buffer->name + ": " + std::string(p->buffer->dtype.name()) + "[" + shape + "]";
    }
    return c + "\n";
}

std::string printMultiLaunches(const std::vector<KernelInfo> &kernels, const CodegenOptions &o, bool cxx) {
    std::string s;
    auto groups = variantGroups(kernels);
    for (size_t g = 0; g < groups.size(); ++g) {
        const Kernel &k = *groups[g][0]->kernel;
        if (!k.wrapped() || k.part != k.parts - 1) continue;
        TILEC_ASSERT(g + 1 >= (size_t)k.parts, "the parts of a prim_func of several launches are not consecutive");
        s += printOne({groups.begin() + (long)(g + 1 - k.parts), groups.begin() + (long)(g + 1)}, o, cxx);
    }
    return s;
}

} // namespace tilec::codegen
