/// \file
/// Assembles the .cu file (header declarations, embedded device runtime, kernels, launchers) and writes
/// the header, whose declarations both files share (include/tilec/Codegen.h).
#include "tilec/Codegen.h"

#include "codegen/CodegenHostParts.h"
#include "codegen/CodegenImpl.h"
#include "codegen/Stdlib.h"

#include "tilec/IRPrinter.h"
#include "tilec/SharedMemory.h"

#include <algorithm>

namespace tilec {

namespace codegen {

using namespace ir;

namespace {

/// What a tensor map of a tensor with no elements is encoded over (the launcher's tilec_zero_tile_address):
/// 128 zero bytes, aligned as TMA's global addresses must be, that nothing writes. A file-local symbol in
/// the .cu (the runtime finds it there; several files link together); in binary mode's module, which NVRTC
/// compiles alone, an unmangled one that cuModuleGetGlobal finds by name.
const char *const kZeroTile = R"tl(// ---- the zero tile: tensor maps of tensors with no elements read it ----
#ifdef __CUDACC_RTC__
extern "C" __device__ __align__(128) unsigned char tilec_zero_tile[128];
__device__ __align__(128) unsigned char tilec_zero_tile[128] = {0};
#else
static __device__ __align__(128) unsigned char tilec_zero_tile[128] = {0};
#endif

)tl";

std::string upperIdent(const std::string &s) {
    std::string out;
    for (char c : s) out += std::isalnum((unsigned char)c) ? (char)std::toupper((unsigned char)c) : '_';
    return out;
}

uint32_t fnv(const std::string &s) {
    uint32_t h = 2166136261u;
    for (unsigned char c : s) h = (h ^ c) * 16777619u;
    return h;
}

std::string hex8(uint32_t h) {
    char b[9];
    std::snprintf(b, sizeof b, "%08X", h);
    return b;
}

std::string shapeText(const BufferNode &b) {
    std::string s = std::string(b.dtype.name()) + "[";
    for (size_t i = 0; i < b.shape.size(); ++i) s += (i ? ", " : "") + print(b.shape[i]);
    return s + "]";
}

/// The comment above a launch function: what each argument is and what the launch needs.
std::string describe(const KernelInfo &info, const Signature &sig, const CodegenOptions &o) {
    const Kernel &k = *info.kernel;
    std::string c = "/* " + info.exportName + ": kernel '" + k.name + "' of " + o.sourceName + "\n";
    for (size_t j = 0; j < sig.params.size(); ++j) { // the exported function's: no workspaces, views or maps
        c += " *   " + sig.names[j] + ": ";
        const size_t i = sig.params[j].index;
        if (sig.params[j].kind == LaunchParam::DynamicSize) {
            c += "T.dynamic size, 0 to 2147483647\n"; // the launch function's check (0: an empty tensor, a stride of 0)
            continue;
        }
        auto &p = k.params[i];
        if (p.kind == Param::Tensor) {
            c += shapeText(*p.buffer) + ", " + (info.written[i] ? "written" : "read");
            // What the launcher accepts over all variants, and where a better alignment picks faster code.
            const int accepted = info.acceptedAlignment[i], fastest = info.fastestAlignment[i];
            if (accepted > 1) c += ", " + std::to_string(accepted) + "-byte aligned";
            if (fastest > std::max(accepted, 1))
                c += (accepted > 1 ? " (" : ", ") + std::to_string(fastest) + "-byte aligned runs the fastest variant" +
                     (accepted > 1 ? ")" : "");
            if (const TensorLayout *l = k.layoutOf(p.buffer.get())) { // T.StridedTensor, T.Layout: not row-major
                auto list = [](const std::vector<Expr> &v) {
                    std::string t;
                    for (size_t d = 0; d < v.size(); ++d) t += (d ? ", " : "") + print(v[d]);
                    return t;
                };
                std::vector<Expr> vars(l->vars.begin(), l->vars.end());
                c += ", element [" + list(vars) + "] at [" + list(l->forward) + "] of a row-major [" + list(l->shape) + "]";
            }
        } else {
            c += std::string(p.var->dtype.name()) + " scalar";
        }
        c += "\n";
    }
    if (k.wrapped()) c += describeLaunches(info);
    if (k.parts > 1) return c + " */\n";
    c += " *   grid (";
    for (int d = 0; d < 3; ++d) c += (d ? ", " : "") + print(k.grid[d]);
    c += "), " + std::to_string(k.launchedThreads()) + " threads, " + std::to_string(info.sharedBytes) +
         " bytes of dynamic shared memory";
    if (k.persistent)
        c += ";\n *   the grid's tiles walked by at most " + std::to_string(std::max(1, k.minBlocksPerSM)) +
             " persistent block" + (k.minBlocksPerSM > 1 ? "s" : "") + " per SM" +
             (k.clusterSize > 1 ? ", in clusters of " + std::to_string(k.clusterSize) + " sharing " +
                                      std::to_string(k.sharedTiles) + " tile(s) per stage by TMA multicast"
                                : "");
    c += " */\n";
    return c;
}

} // namespace

std::vector<KernelInfo> analyzeKernels(const Program &lowered, const CodegenOptions &opts, DiagnosticEngine &diag) {
    std::vector<KernelInfo> infos;
    for (auto &k : lowered.kernels) {
        if (!k) continue;
        KernelInfo info = analyzeKernel(*k, opts, diag);
        info.index = (int)infos.size();
        info.targets = k->targets;
        if (info.targets.empty()) info.targets = opts.targets;
        if (!infos.empty() && infos.back().kernel->name == k->name && infos.back().kernel->part == k->part)
            info.variant = infos.back().variant + 1;
        infos.push_back(std::move(info));
    }
    // The parts of a prim_func of several launches take the same pointers: a tensor any part writes is written.
    for (size_t i = 0; i < infos.size(); ++i)
        for (size_t j = 0; j < infos.size(); ++j)
            if (i != j && infos[i].kernel->parts > 1 && infos[j].kernel->name == infos[i].kernel->name)
                for (size_t p = 0; p < infos[i].written.size() && p < infos[j].written.size(); ++p)
                    if (infos[j].written[p]) infos[i].written[p] = true;
    // Variants of one kernel: a symbol each, and how many there are.
    for (size_t i = 0; i < infos.size();) {
        size_t j = i;
        while (j < infos.size() && (j == i || infos[j].variant != 0)) ++j;
        for (size_t v = i; v < j; ++v) {
            infos[v].variants = (int)(j - i);
            if (j - i > 1) infos[v].symbol += "_v" + std::to_string(infos[v].variant);
        }
        launchAlignments(infos, i, j);
        i = j;
    }
    return infos;
}

std::string printHeader(const std::vector<KernelInfo> &kernels, const CodegenOptions &o) {
    std::string base = o.headerName.empty() ? o.sourceName : o.headerName;
    auto slash = base.find_last_of('/');
    if (slash != std::string::npos) base = base.substr(slash + 1);
    std::string guard = "TILEC_GENERATED_" + upperIdent(base) + "_" + hex8(fnv(o.sourceName + "\n" + o.prefix));
    std::string rtGuard = "TILEC_RUNTIME_DECLS" + (o.prefix.empty() ? std::string() : "_" + o.prefix);
    std::string h;
    h += "/* Generated by tilec from " + o.sourceName + "; do not edit.\n";
    h += " * Launch functions for the kernels it exports: each checks its arguments, returns a tilec_status\n";
    h += " * and launches on `stream` without synchronizing. Compiles as C11 and as C++. */\n";
    h += "#ifndef " + guard + "\n#define " + guard + "\n\n";
    h += "#include <cuda_runtime_api.h>\n#include <stddef.h>\n#include <stdint.h>\n";
    h += "#ifndef __cplusplus\n#include <stdbool.h>\n#endif\n\n";
    h += R"tl(#ifndef TILEC_COMMON_DECLS
#define TILEC_COMMON_DECLS
/* Shared by every header tilec generates, whatever its prefix. */
#define TILEC_ABI_VERSION 1
typedef enum tilec_status {
    TILEC_SUCCESS = 0,
    TILEC_ERROR_NULL_POINTER = 1,   /* a tensor pointer is NULL */
    TILEC_ERROR_MISALIGNED = 2,     /* a tensor pointer lacks the alignment the kernel's vector accesses need */
    TILEC_ERROR_BAD_SIZE = 3,       /* a T.dynamic size is below 0 or above 2147483647 */
    TILEC_ERROR_GRID_TOO_LARGE = 4, /* the sizes need more blocks than CUDA can launch */
    TILEC_ERROR_NO_DEVICE = 5,      /* no usable CUDA device or driver */
    TILEC_ERROR_NO_DEVICE_CODE = 6, /* the kernel was not compiled for the current device */
    TILEC_ERROR_SHARED_MEMORY = 7,  /* the device cannot give the kernel the shared memory it needs */
    TILEC_ERROR_CUDA = 8,           /* another CUDA error */
    TILEC_ERROR_OVERLAP = 9         /* two tensor arguments overlap and the kernel writes one of them */
} tilec_status;
#endif /* TILEC_COMMON_DECLS */

)tl";
    h += "#ifndef " + rtGuard + "\n#define " + rtGuard + "\n";
    h += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n";
    h += "/* A short description of a status, e.g. \"a tensor pointer is NULL\". */\n";
    h += "const char *" + rt(o, "status_string") + "(tilec_status status);\n";
    h += "/* The CUDA error behind the calling thread's last status other than TILEC_SUCCESS (cudaSuccess if none). */\n";
    h += "cudaError_t " + rt(o, "last_cuda_error") + "(void);\n";
    h += "/* The 0-based parameter position behind the calling thread's last argument error (-1 if none). */\n";
    h += "int " + rt(o, "last_error_argument") + "(void);\n";
    h += "#ifdef __cplusplus\n}\n#endif\n#endif /* " + rtGuard + " */\n\n";
    h += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    for (auto &info : kernels) {
        if (info.kernel->part != 0) continue; // one declaration for the launches of a prim_func
        NameTable names;
        names.reserve("stream");
        if (hasWorkspaces(*info.kernel)) // the parameters NAME_with_workspace adds
            for (const char *r : {"workspace", "workspace_bytes"}) names.reserve(r);
        Signature sig = signature(info, names, true);
        h += describe(info, sig, o);
        h += sig.text + ";\n";
        if (hasWorkspaces(*info.kernel)) {
            WorkspaceSignatures w = workspaceSignatures(info, sig);
            h += "/* The bytes of the workspace " + info.exportName + "_with_workspace needs for these sizes (0 when a size is out\n";
            h += " * of range: the launch then returns TILEC_ERROR_BAD_SIZE). */\n" + w.bytes + ";\n";
            h += "/* As " + info.exportName + ", in the caller's workspace (256-byte aligned, at least the bytes above, used until\n";
            h += " * the launches on `stream` finish): allocates nothing, so it suits the application's own allocator. */\n";
            h += w.withWorkspace + ";\n";
        }
        h += "/* Threads per block and dynamic shared memory in bytes on compute capability `sm` (e.g. 90); 0 when\n";
        h += " * the kernel was not generated for it. */\n";
        h += "int " + info.exportName + "_threads(int sm);\n";
        h += "size_t " + info.exportName + "_shared_bytes(int sm);\n";
        h += "/* Loads the kernel's code for the current device now rather than at its first launch, and sets its\n";
        h += " * shared-memory limit. Binary mode: loads the module of all kernels of this file into the current\n";
        h += " * context; _unload unloads it from there (the next launch loads it again; call it only when no launch of\n";
        h += " * them can be running). .cu mode: the CUDA runtime owns the module and _unload does nothing. */\n";
        h += "tilec_status " + info.exportName + "_load(void);\n";
        h += "tilec_status " + info.exportName + "_unload(void);\n\n";
    }
    h += "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " + guard + " */\n";
    return h;
}

} // namespace codegen

using namespace codegen;

GeneratedCode generateCode(const ir::Program &lowered, const CodegenOptions &opts, DiagnosticEngine &diag) {
    std::vector<KernelInfo> infos = analyzeKernels(lowered, opts, diag);
    std::vector<KernelInfo> firsts;
    for (auto &i : infos)
        if (i.variant == 0) firsts.push_back(i);

    GeneratedCode out;
    out.header = printHeader(firsts, opts);
    if (opts.torch) out.torch = printTorch(firsts, opts, diag);
    if (opts.xlaFfi) out.xlaFfi = printXlaFfi(firsts, opts, diag);
    // The device part, which NVRTC compiles alone in binary mode: the device runtime, embedded so the file
    // compiles without tilec's installation, and the kernels.
    std::string &d = out.device;
    for (auto &f : embeddedStdlib()) {
        d += "// ---- embedded from stdlib/" + f.name + " ----\n";
        d += f.text;
        if (!d.empty() && d.back() != '\n') d += '\n';
        d += "\n";
    }
    std::vector<const std::string *> imported; // T.import_source, each distinct text once
    for (auto &info : infos)
        for (auto &src : info.kernel->importedSources)
            if (std::none_of(imported.begin(), imported.end(), [&](const std::string *s) { return *s == src; })) {
                imported.push_back(&src);
                d += "// ---- T.import_source of kernel " + info.kernel->name + " ----\n" + src;
                if (!src.empty() && src.back() != '\n') d += '\n';
                d += "\n";
            }
    bool maps = false;
    for (auto &i : infos) maps |= !i.kernel->tensorMaps.empty();
    if (maps) d += kZeroTile;
    if (std::any_of(infos.begin(), infos.end(), [](const KernelInfo &i) { return syncsGrid(*i.kernel); })) d += gridSyncDevice();
    for (auto &info : infos) {
        d += "// ---- kernel " + info.kernel->name + " ----\n";
        d += printKernel(info, opts, diag);
        d += "\n";
        KernelLayout l{info.kernel->name, info.cName, info.symbol, *info.kernel, info.sharedBytes, {}, (int)info.kernel->tensorMaps.size(), {}};
        for (auto &t : info.targets) l.targets.push_back(t.name);
        l.part = info.kernel->part;
        for (auto &b : info.kernel->allocs) {
            auto at = b ? info.sharedOffset.find(b.get()) : info.sharedOffset.end();
            if (at == info.sharedOffset.end()) continue;
            l.shared.push_back({b->name, b->loc, at->second, smem::sharedBytes(b.get())});
        }
        out.kernels.push_back(std::move(l));
    }
    std::string &c = out.cuda;
    c += "// Generated by tilec from " + opts.sourceName + "; do not edit. Compile with nvcc (C++17).\n";
    c += out.header;
    c += "\n#include <cuda_runtime.h>\n\n#include <atomic>\n#include <stdint.h>\n\n";
    if (maps) c += "#include <cuda.h>\n#include <cudaTypedefs.h>\n\n"; // CUtensorMap, cuTensorMapEncodeTiled's type
    c += d;
    // Back to this file's own lines for the host code, so its messages point here.
    if (!opts.cudaName.empty()) {
        int lines = (int)std::count(c.begin(), c.end(), '\n');
        c += "#line " + std::to_string(lines + 2) + " " + quoted(opts.cudaName) + "\n";
    }
    c += printHost(infos, opts);
    return out;
}

} // namespace tilec
