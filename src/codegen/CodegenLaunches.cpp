/// \file
/// Prim_funcs of several launches (`with T.Kernel` more than once, T.alloc_global workspaces between them): the
/// exported function checks the sizes, allocates the workspaces in one stream-ordered allocation on the
/// caller's stream (cudaMallocAsync / cuMemAllocAsync: no synchronization, capturable in a CUDA graph), calls
/// the parts' launchers in order, and frees the allocation stream-ordered after the last launch. Its queries
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

std::string printOne(const std::vector<std::vector<const KernelInfo *>> &parts, const CodegenOptions &o, bool cxx) {
    const KernelInfo &first = *parts[0][0];
    const Kernel &k = *first.kernel;
    NameTable names = launcherNames();
    for (const char *r : {"ws", "ws_total", "ws_bytes", "most", "v", "ctx", "key"}) names.reserve(r);
    for (size_t j = 0; j < k.params.size(); ++j) names.reserve("ws_at" + std::to_string(j));
    Signature sig = signature(first, names, true);
    const size_t dynamicBase = sig.dynamicBase;
    std::string s = cLinkage(cxx) + sig.text + " {\n";
    for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) {
        const std::string &n = sig.names[dynamicBase + i];
        s += "    if (" + n + " < 0 || " + n + " > 2147483647) return tilec_argument_error(TILEC_ERROR_BAD_SIZE, " +
             std::to_string(dynamicBase + i) + ");\n";
    }
    // The workspaces' bytes and offsets (overflow-checked: dynamic sizes may be large).
    ExprPrinter hp(names, true);
    auto ws = workspaces(k);
    if (!ws.empty()) s += "    int64_t ws_total = 0;\n";
    for (size_t j = 0; j < ws.size(); ++j) {
        const BufferNode &b = *ws[j]->buffer;
        std::string at = "ws_at" + std::to_string(j);
        s += "    /* " + b.name + ": " + std::string(b.dtype.name()) + " workspace */\n";
        s += "    const int64_t " + at + " = ws_total;\n";
        s += "    {\n        int64_t ws_bytes = " + std::to_string(b.dtype.bytes()) + ";\n";
        for (auto &d : b.shape)
            s += "        if (__builtin_mul_overflow(ws_bytes, (int64_t)(" + hp.print(d) + "), &ws_bytes) || ws_bytes > " +
                 kWorkspaceLimit + ") return TILEC_ERROR_BAD_SIZE;\n";
        const std::string a = std::to_string(kWorkspaceAlignment);
        s += "        ws_total += (ws_bytes + " + std::to_string(kWorkspaceAlignment - 1) + ") / " + a + " * " + a + ";\n";
        s += "        if (ws_total > " + std::string(kWorkspaceLimit) + ") return TILEC_ERROR_BAD_SIZE;\n    }\n";
    }
    if (!ws.empty() && cxx) {
        s += "    char *ws = NULL;\n";
        s += "    if (ws_total > 0) {\n";
        s += "        cudaError_t e = cudaMallocAsync(reinterpret_cast<void **>(&ws), (size_t)ws_total, stream);\n";
        s += "        if (e != cudaSuccess) return tilec_cuda_failure(e);\n    }\n";
    } else if (!ws.empty()) {
        // The driver API allocates in the current context: the one the launches will use.
        s += "    CUdeviceptr ws = 0;\n";
        s += "    if (ws_total > 0) {\n";
        s += "        CUcontext ctx;\n        unsigned long long key;\n";
        s += "        CUresult r = tilec_context(&ctx, &key);\n";
        s += "        if (r == CUDA_SUCCESS) r = cuMemAllocAsync(&ws, (size_t)ws_total, stream);\n";
        s += "        if (r != CUDA_SUCCESS) return tilec_driver_failure(r);\n    }\n";
    }
    // The parts in order; a failing one stops the rest. Each checks the caller's pointers itself.
    s += "    tilec_status status = TILEC_SUCCESS;\n";
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
                std::string base = cxx ? "ws" : "(char *)(uintptr_t)ws";
                a = "(" + headerType(q.buffer->dtype) + " *)(" + base + " + ws_at" + std::to_string(w++) + ")";
            }
            args += (args.empty() ? "" : ", ") + a;
        }
        for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) args += (args.empty() ? "" : ", ") + sig.names[dynamicBase + i];
        args += (args.empty() ? "" : ", ") + std::string("stream");
        s += "    if (status == TILEC_SUCCESS) status = " + p.cName + "(" + args + ");\n";
    }
    if (!ws.empty() && cxx) {
        s += "    if (ws) {\n        cudaError_t e = cudaFreeAsync(ws, stream);\n";
        s += "        if (e != cudaSuccess && status == TILEC_SUCCESS) status = tilec_cuda_failure(e);\n    }\n";
    } else if (!ws.empty()) {
        s += "    if (ws) {\n        CUresult r = cuMemFreeAsync(ws, stream);\n";
        s += "        if (r != CUDA_SUCCESS && status == TILEC_SUCCESS) status = tilec_driver_failure(r);\n    }\n";
    }
    s += "    return status;\n}\n";
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
    c += "; their workspaces, allocated with cudaMallocAsync\n *   on `stream` at each call and freed with cudaFreeAsync after the last launch:";
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
