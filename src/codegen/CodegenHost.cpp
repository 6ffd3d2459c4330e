/// \file
/// The host half of the .cu (docs/INTERFACE.md's generated C interface): the runtime functions, and each
/// kernel's launch function (argument checks, one-time device setup, the launch through the CUDA runtime)
/// and queries. The pieces binary mode shares (src/codegen/CodegenHostParts.h) are here too.
#include "codegen/CodegenHostParts.h"

#include <algorithm>

namespace tilec::codegen {

using namespace ir;

std::string printRuntimeFunctions(const CodegenOptions &o, bool cxx) {
    std::string err = rt(o, "last_cuda_error_state"), arg = rt(o, "last_error_argument_state");
    std::string tls = cxx ? "thread_local" : "TILEC_THREAD_LOCAL"; // C11 or C++: the binary file defines it
    std::string s;
    s += "/* The calling thread's last CUDA error and argument position: weak, so that every tilec file with this\n";
    s += " * prefix, whichever its mode, shares one copy. */\n";
    // A braced linkage block: `extern "C" T x = v;` would read as an initialized extern to GCC.
    if (cxx) s += "extern \"C\" {\n";
    s += "__attribute__((weak)) " + tls + " cudaError_t " + err + " = cudaSuccess;\n";
    s += "__attribute__((weak)) " + tls + " int " + arg + " = -1;\n";
    if (cxx) s += "}\n";
    // Weak, so that several generated files with the same prefix link together.
    s += cLinkage(cxx) + "__attribute__((weak)) const char *" + rt(o, "status_string") + "(tilec_status status) {\n";
    s += R"tl(    switch (status) {
    case TILEC_SUCCESS: return "success";
    case TILEC_ERROR_NULL_POINTER: return "a tensor pointer is NULL";
    case TILEC_ERROR_MISALIGNED: return "a tensor pointer is not aligned enough for the kernel's vector accesses";
    case TILEC_ERROR_BAD_SIZE: return "a dynamic size is out of range (0 to 2147483647)";
    case TILEC_ERROR_GRID_TOO_LARGE: return "the sizes need more thread blocks than CUDA can launch";
    case TILEC_ERROR_NO_DEVICE: return "no usable CUDA device";
    case TILEC_ERROR_NO_DEVICE_CODE: return "the kernel was not compiled for this device";
    case TILEC_ERROR_SHARED_MEMORY: return "the device cannot provide the kernel's shared memory";
    case TILEC_ERROR_CUDA: return "CUDA error";
    case TILEC_ERROR_OVERLAP: return "two tensor arguments overlap in memory and the kernel writes one of them";
    }
    return "unknown tilec_status";
}
)tl";
    s += cLinkage(cxx) + "__attribute__((weak)) cudaError_t " + rt(o, "last_cuda_error") + "(void) { return " + err + "; }\n";
    s += cLinkage(cxx) + "__attribute__((weak)) int " + rt(o, "last_error_argument") + "(void) { return " + arg + "; }\n\n";
    return s;
}

std::string printLauncherHelpers(const CodegenOptions &o, bool cxx) {
    // File-local: `static` works in both languages (the .cu's anonymous namespace would not be C).
    std::string unused = cxx ? "[[maybe_unused]] " : "__attribute__((unused)) ";
    std::string s;
    s += unused + "static tilec_status tilec_argument_error(tilec_status status, int argument) {\n";
    s += "    " + rt(o, "last_error_argument_state") + " = argument;\n";
    s += "    return status;\n}\n";
    // Whether byte ranges [a, a + na) and [b, b + nb) share a byte (an empty range shares none).
    s += unused + R"tl(static int tilec_overlap(const void *a, int64_t na, const void *b, int64_t nb) {
    return na > 0 && nb > 0 && (uintptr_t)a < (uintptr_t)b + (uint64_t)nb && (uintptr_t)b < (uintptr_t)a + (uint64_t)na;
}
)tl";
    return s + printFloorDivision(unused) + "\n";
}

std::string printFloorDivision(const std::string &unused) {
    std::string s;
    s += unused + R"tl(static int64_t tilec_floordiv64(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
)tl";
    s += unused + R"tl(static int64_t tilec_floormod64(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
)tl";
    return s;
}

NameTable launcherNames() {
    NameTable names;
    names.reserve("stream");
    for (const char *r : {"grid_x", "grid_y", "grid_z", "ready", "args", "status", "e", "r", "fn", "sms", "blocks", "unmet", "active",
                          "config", "cluster", "zero", "empty", "maps", "known_clusters"})
        names.reserve(r);
    return names;
}

std::string noElements(const BufferNode &tensor, ExprPrinter &hp) {
    std::string c;
    for (auto &d : tensor.shape) {
        auto v = constInt(d);
        if (!v || *v == 0) c += std::string(c.empty() ? "" : " || ") + "(" + hp.print(d) + ") == 0";
    }
    return c;
}

std::string printAlignmentChecks(const KernelInfo &info, const Signature &sig, NameTable &names, const std::string &indent) {
    // A tensor of no elements is never accessed: any pointer will do, as for the null check.
    ExprPrinter hp(names, true);
    std::string s;
    for (size_t i = 0; i < info.kernel->params.size(); ++i)
        if (info.alignment[i] > 1) {
            std::string empty = noElements(*info.kernel->params[i].buffer, hp);
            s += indent + "if ((uintptr_t)" + sig.names[i] + " % " + std::to_string(info.alignment[i]) + " != 0" +
                 (empty.empty() ? "" : " && !(" + empty + ")") + ") return tilec_argument_error(TILEC_ERROR_MISALIGNED, " +
                 std::to_string(i) + ");\n";
        }
    return s;
}

std::string printOverlapChecks(const KernelInfo &info, const Signature &sig, NameTable &names) {
    // The device code declares tensor pointers __restrict__ (docs/INTERFACE.md): a tensor the kernel writes
    // must share no byte with another argument. Two tensors it only reads may overlap; an empty one overlaps
    // nothing. The status names the later parameter of the pair.
    const Kernel &k = *info.kernel;
    ExprPrinter hp(names, true);
    std::vector<size_t> tensors;
    for (size_t i = 0; i < k.params.size(); ++i)
        if (k.params[i].kind == Param::Tensor && k.params[i].argument()) tensors.push_back(i);
    // The bytes a tensor's pointer reaches: its storage (a T.StridedTensor's or T.Layout's span, which may be
    // more or fewer elements than its own shape), nothing when the tensor has no elements.
    auto bytes = [&](size_t i) {
        const BufferNode &b = *k.params[i].buffer;
        const TensorLayout *layout = k.layoutOf(&b);
        int64_t known = std::max<int64_t>(1, b.dtype.bits() / 8);
        std::string s;
        for (auto &d : layout ? layout->shape : b.shape) {
            if (auto v = constInt(d)) known *= *v;
            else s += " * (int64_t)(" + hp.print(d) + ")";
        }
        const std::string span = std::to_string(known) + "LL" + s;
        const std::string empty = layout ? noElements(b, hp) : "";
        return empty.empty() ? span : "((" + empty + ") ? 0LL : " + span + ")";
    };
    std::string s;
    for (size_t x = 0; x < tensors.size(); ++x)
        for (size_t y = x + 1; y < tensors.size(); ++y) {
            const size_t i = tensors[x], j = tensors[y];
            if (!info.written[i] && !info.written[j]) continue;
            s += "    if (tilec_overlap(" + sig.names[i] + ", " + bytes(i) + ", " + sig.names[j] + ", " + bytes(j) +
                 ")) return tilec_argument_error(TILEC_ERROR_OVERLAP, " + std::to_string(j) + ");\n";
        }
    return s;
}

std::string printLaunchPrologue(const KernelInfo &info, const Signature &sig, NameTable &names, bool cxx, bool checkAlignment) {
    const Kernel &k = *info.kernel;
    std::string s = launcherLinkage(info, cxx) + sig.text + " {\n";
    // Arguments, in parameter order: null pointers, then alignment, then sizes. A tensor of no elements (a
    // T.dynamic size of 0) may be null, as PyTorch's empty tensors are.
    ExprPrinter np(names, true);
    for (size_t i = 0; i < k.params.size(); ++i) {
        if (k.params[i].kind != Param::Tensor) continue;
        std::string empty = noElements(*k.params[i].buffer, np);
        s += "    if (" + sig.names[i] + " == NULL" + (empty.empty() ? "" : " && !(" + empty + ")") +
             ") return tilec_argument_error(TILEC_ERROR_NULL_POINTER, " + std::to_string(i) + ");\n";
    }
    if (checkAlignment) s += printAlignmentChecks(info, sig, names, "    ");
    for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) {
        const std::string &n = sig.names[sig.dynamicBase + i];
        s += "    if (" + n + " < 0 || " + n + " > 2147483647) return tilec_argument_error(TILEC_ERROR_BAD_SIZE, " +
             std::to_string(sig.dynamicBase + i) + ");\n";
    }
    s += printOverlapChecks(info, sig, names);
    ExprPrinter hp(names, true);
    static const char *axis[] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d) s += "    const int64_t grid_" + std::string(axis[d]) + " = " + hp.print(k.grid[d]) + ";\n";
    // An empty batch (a size of 0) is a no-op, as in cuBLAS and PyTorch: nothing to launch.
    s += "    if (grid_x == 0 || grid_y == 0 || grid_z == 0) return TILEC_SUCCESS;\n";
    s += "    if (grid_x < 1 || grid_x > 2147483647 || grid_y < 1 || grid_y > 65535 || grid_z < 1 || grid_z > 65535)\n";
    s += "        return TILEC_ERROR_GRID_TOO_LARGE;\n";
    return s;
}

std::vector<std::vector<const KernelInfo *>> variantGroups(const std::vector<KernelInfo> &kernels) {
    std::vector<std::vector<const KernelInfo *>> groups;
    for (auto &k : kernels) {
        if (k.variant == 0 || groups.empty()) groups.emplace_back();
        groups.back().push_back(&k);
    }
    return groups;
}

namespace {
/// tilec_prepare's last arguments for a variant: its oldest target, and whether it was lowered for
/// arch-specific targets (sm_90a) alone.
std::string prepareTargets(const KernelInfo &v) {
    if (v.targets.empty()) return "0";
    int minSm = 1000;
    bool archOnly = !v.targets.empty();
    for (auto &t : v.targets) minSm = std::min(minSm, t.sm), archOnly &= t.archSpecific;
    return std::to_string(minSm) + (archOnly ? ", true" : "");
}
} // namespace

std::vector<DeviceTerm> deviceTerms(const KernelInfo &v) {
    int portable = 1000; // the oldest target without the `a`: it covers every later device
    for (auto &t : v.targets)
        if (!t.archSpecific) portable = std::min(portable, t.sm);
    std::vector<DeviceTerm> terms;
    for (auto &t : v.targets) {
        if (t.archSpecific && t.sm >= portable) continue;
        const DeviceTerm term{t.sm, t.archSpecific};
        if (std::none_of(terms.begin(), terms.end(), [&](const DeviceTerm &u) { return u.sm == term.sm && u.exact == term.exact; }))
            terms.push_back(term);
    }
    return terms;
}

bool runsOnDevice(const KernelInfo &v, int sm) {
    for (auto &t : deviceTerms(v))
        if (t.exact ? sm == t.sm : sm >= t.sm) return true;
    return false;
}

std::string runsOn(const KernelInfo &v, const std::string &sm) {
    std::string c;
    for (auto &t : deviceTerms(v)) c += (c.empty() ? "" : " || ") + sm + (t.exact ? " == " : " >= ") + std::to_string(t.sm);
    return c.empty() ? "0" : c;
}

std::string printQueries(const std::vector<const KernelInfo *> &variants, bool cxx) {
    const KernelInfo &first = *variants[0];
    auto query = [&](const std::string &type, const char *suffix, auto value) {
        std::string s = launcherLinkage(first, cxx) + type + " " + first.cName + suffix + "(int sm) {\n";
        for (auto *v : variants) s += "    if (" + runsOn(*v, "sm") + ") return " + value(*v) + ";\n";
        return s + "    return 0;\n}\n";
    };
    return query("int", "_threads", [](const KernelInfo &v) { return std::to_string(v.kernel->launchedThreads()); }) +
           query("size_t", "_shared_bytes", [](const KernelInfo &v) { return std::to_string(v.sharedBytes); });
}

std::string printVariantLaunches(const std::vector<const KernelInfo *> &variants, const Signature &sig, NameTable &names,
                                 bool cxx) {
    // The device is looked up once: its compute capability, and its SM count where a variant is persistent.
    bool persistent = std::any_of(variants.begin(), variants.end(), [](auto *v) { return v->kernel->persistent; });
    std::string s = persistent ? "    int sm = 0, sms = 0;\n" : "    int sm = 0;\n";
    s += std::string("    tilec_status status = tilec_device_sm(&sm, ") + (persistent ? "&sms" : "NULL") + ");\n";
    s += "    if (status != TILEC_SUCCESS) return status;\n";
    ExprPrinter hp(names, true);
    // Without a last variant free of argument rules (explicit TMA: every variant needs it), arguments that break
    // every rule on a device the file has code for are reported as misaligned, not as "no device code".
    const bool lastHasRules = !variants.empty() &&
                              (!variants.back()->kernel->tensorMaps.empty() || !variants.back()->kernel->assumptions.empty());
    if (lastHasRules) s += "    int unmet = 0; /* the device has code, but the arguments break its rules */\n";
    for (auto *vp : variants) {
        const KernelInfo &v = *vp;
        const Kernel &k = *v.kernel;
        std::string when = runsOn(v, "sm");
        const std::string device = when;
        // The conditions on the run-time arguments: TMA's (CodegenTensorMaps.cpp), then the assumptions'.
        std::vector<std::string> tmaRules;
        auto rule = [&](const std::string &r) {
            if (std::find(tmaRules.begin(), tmaRules.end(), r) == tmaRules.end()) tmaRules.push_back(r);
        };
        for (auto &r : tensorMapRules(v, sig, names)) rule(r);
        // What the lowering assumed for wider tile transfers (Kernel::assumptions), exactly.
        // A T.make_tensor tensor of a run-time address is no argument: its address is 16-byte aligned by
        // contract (docs/LANGUAGE.md 3.9), so only its row length is the launcher's to check.
        for (auto &a : k.assumptions) {
            const std::string bytes = std::to_string(a.bytes);
            if (!k.addressOf(a.tensor.get())) rule("(uintptr_t)" + sig.names[paramOf(k, a.tensor)] + " % " + bytes + " == 0");
            else TILEC_ASSERT(a.bytes <= 16, "an assumption wider than a T.make_tensor address's 16 bytes");
            rule("((int64_t)(" + hp.print(a.extent) + ") * " + std::to_string(a.tensor->dtype.bytes()) + ") % " + bytes + " == 0");
        }
        std::string rules;
        for (auto &r : tmaRules) when = "(" + when + ") && " + r, rules += (rules.empty() ? "" : " && ") + r;
        if (lastHasRules && !rules.empty()) s += "    if ((" + device + ") && !(" + rules + ")) unmet = 1;\n";
        // A persistent kernel counts its tiles in int.
        if (k.persistent) when = "(" + when + ") && grid_x * grid_y * grid_z <= 2147483647";
        // Clustered for a run-time tile count: from that many waves of the planned blocks per SM, else the next.
        if (k.clusterMinWaves > 0)
            when += " && grid_x * grid_y * grid_z >= (int64_t)sms * " + std::to_string(k.clusterMinWaves * std::max(1, k.minBlocksPerSM));
        std::string targets;
        for (auto &t : v.targets) targets += (targets.empty() ? "" : ", ") + t.name;
        s += "    /* variant " + std::to_string(v.variant) + ": " + targets + (k.tensorMaps.empty() ? "" : ", TMA") +
             (k.clusterMinWaves > 0 ? ", clusters from " + std::to_string(k.clusterMinWaves) + " waves of tiles" : "") +
             (k.assumptions.empty() ? "" : ", wide transfers of run-time rows") + " */\n";
        s += "    if (" + when + ") {\n";
        if (cxx) {
            s += "        status = tilec_prepare(reinterpret_cast<const void *>(&" + v.symbol + "), " + std::to_string(v.sharedBytes) +
                 ", tilec_ready_" + v.symbol + ", " + prepareTargets(v) + ");\n";
        } else {
            s += "        CUfunction fn;\n";
            s += "        status = tilec_function(" + std::to_string(v.index) + ", &fn);\n";
        }
        s += "        if (status == TILEC_SUCCESS) {\n";
        const std::string in = "            ";
        s += printAlignmentChecks(v, sig, names, in);
        s += printTensorMaps(v, sig, names, cxx, in);
        s += printLaunchArguments(v, sig, cxx, in);
        std::string threads = std::to_string(k.launchedThreads()), shared = std::to_string(v.sharedBytes);
        std::string grid = "grid_x, grid_y, grid_z";
        const std::string cm = std::to_string(k.clusterSize);
        const bool clustered = cxx && k.clusterSize > 1;
        TILEC_ASSERT(k.clusterSize == 1 || k.persistent, "a clustered kernel that is not persistent");
        if (clustered) {
            // Clusters of consecutive blocks (cluster rank = blockIdx.x % size), through the extended launch;
            // the grid is set below, once the clusters the device holds at once are known.
            s += in + "cudaLaunchAttribute cluster[1];\n";
            s += in + "cluster[0].id = cudaLaunchAttributeClusterDimension;\n";
            s += in + "cluster[0].val.clusterDim.x = " + cm + ";\n";
            s += in + "cluster[0].val.clusterDim.y = 1;\n";
            s += in + "cluster[0].val.clusterDim.z = 1;\n";
            s += in + "cudaLaunchConfig_t config = {};\n";
            s += in + "config.gridDim = dim3(" + cm + ");\n";
            s += in + "config.blockDim = dim3(" + threads + ");\n";
            s += in + "config.dynamicSmemBytes = " + shared + ";\n";
            s += in + "config.stream = stream;\n";
            s += in + "config.attrs = cluster;\n";
            s += in + "config.numAttrs = 1;\n";
        }
        if (k.persistent) {
            // As many blocks as fit the device at once (the launch bound's blocks per SM), none idle; clustered:
            // as many clusters, each walking cluster units (2 or 4 tiles).
            std::string units = k.clusterSize > 1 ? "grid_x * grid_y * grid_z / " + cm : "grid_x * grid_y * grid_z";
            std::string resident = "(int64_t)sms * " + std::to_string(std::max(1, k.minBlocksPerSM));
            if (k.clusterSize > 1) resident = "(" + resident + " / " + cm + ")";
            if (k.clusterSize > 1) {
                // How many clusters the device co-schedules is the runtime's (binary mode: the driver's) to say:
                // GPCs pack them, not SMs. The .cu asks once per device and thread (tilec_active_clusters),
                // binary mode at every launch; the planned blocks per SM in clusters where the query fails.
                if (clustered) {
                    s += in + "static thread_local int known_clusters[64]; /* per device, this thread's answers */\n";
                    s += in + "const int active = tilec_active_clusters(reinterpret_cast<const void *>(&" + v.symbol +
                         "), &config, known_clusters);\n";
                } else {
                    s += in + "const int active = tilec_active_clusters(fn, " + threads + ", " + shared + ", " + cm + ", stream);\n";
                }
                resident = "(active > 0 ? (int64_t)active : " + resident + ")";
            }
            std::string fewer = units + " < " + resident + " ? " + units + " : " + resident;
            s += in + "const int64_t blocks = " + (k.clusterSize > 1 ? "(" + fewer + ") * " + cm : fewer) + ";\n";
            grid = "blocks, 1, 1";
        }
        if (clustered) {
            s += in + "config.gridDim = dim3((unsigned)blocks);\n";
            s += in + "cudaError_t e = cudaLaunchKernelExC(&config, reinterpret_cast<const void *>(&" + v.symbol + "), args);\n";
            s += in + "return e == cudaSuccess ? TILEC_SUCCESS : tilec_cuda_failure(e);\n";
        } else if (cxx && syncsGrid(k)) {
            TILEC_ASSERT(!k.persistent, "a persistent kernel with T.sync_grid");
            s += in + "return tilec_launch_cooperative(reinterpret_cast<const void *>(&" + v.symbol +
                 "), dim3((unsigned)grid_x, (unsigned)grid_y, (unsigned)grid_z), dim3(" + threads + "), args, " + shared +
                 ", stream);\n";
        } else if (cxx) {
            std::string dims = k.persistent ? "dim3((unsigned)blocks)" : "dim3((unsigned)grid_x, (unsigned)grid_y, (unsigned)grid_z)";
            s += in + "cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void *>(&" + v.symbol +
                 "), " + dims + ", dim3(" + threads + "), args, " + shared + ", stream);\n";
            s += in + "return e == cudaSuccess ? TILEC_SUCCESS : tilec_cuda_failure(e);\n";
        } else if (syncsGrid(k)) {
            TILEC_ASSERT(!k.persistent, "a persistent kernel with T.sync_grid");
            s += in + "return tilec_launch_cooperative(fn, " + grid + ", " + threads + ", " + shared + ", stream, args);\n";
        } else {
            s += in + "CUresult r = tilec_launch(fn, " + grid + ", " + threads + ", " + shared + ", " + cm + ", stream, args);\n";
            s += in + "return r == CUDA_SUCCESS ? TILEC_SUCCESS : tilec_driver_failure(r);\n";
        }
        s += "        }\n";
        s += "        if (status != TILEC_ERROR_NO_DEVICE_CODE) return status;\n";
        s += "    }\n";
    }
    if (lastHasRules) s += "    if (unmet) return TILEC_ERROR_MISALIGNED;\n";
    s += "    return TILEC_ERROR_NO_DEVICE_CODE;\n}\n";
    return s;
}

namespace {

/// The host side's fixed part: the runtime functions, the launchers' helpers, and the per-device preparation
/// and queries every launcher calls.
std::string printHostHelpers(const CodegenOptions &o) {
    std::string s;
    s += printRuntimeFunctions(o, true);
    s += printLauncherHelpers(o, true);
    s += R"tl([[maybe_unused]] static tilec_status tilec_cuda_failure(cudaError_t e) {
    (void)cudaGetLastError(); // reported through the status; do not leave it pending for the caller
)tl";
    s += "    " + rt(o, "last_cuda_error_state") + " = e;\n";
    s += R"tl(    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return TILEC_ERROR_NO_DEVICE;
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) return TILEC_ERROR_NO_DEVICE_CODE;
    return TILEC_ERROR_CUDA;
}

// Once per kernel and device (devices 0 to 63 are remembered; others are checked at every launch): the
// kernel has code for the device, and its shared-memory limit is raised when it needs more than 48 KiB.
// Racing threads do the same idempotent calls, so no lock is needed.
// `min_sm`: the oldest target of the kernel's variant; code the runtime loaded from older PTX (the .cu compiled
// without that target) counts as none, so the launcher tries the next variant. `arch_specific`: the variant was
// lowered for sm_90a alone; where the runtime loaded another image of this file on the device (a cubin for sm_90,
// or PTX, in which that variant's body is a trap), the probe below lacks its 4 KiB of shared memory (the image
// for sm_90a alone has them; 1 KiB may be reserved in both), and that too counts as no code for the device. The
// probe's attributes come from the same module as the kernels'.
static __global__ void tilec_probe_arch_specific() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ volatile int marker[1024];
    marker[threadIdx.x & 1023] = 1;
#endif
}
[[maybe_unused]] static tilec_status tilec_prepare(const void *kernel, size_t shared, std::atomic<unsigned long long> &ready,
                                                   int min_sm = 0, bool arch_specific = false) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return tilec_cuda_failure(e);
    unsigned long long bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
    if (bit && (ready.load(std::memory_order_acquire) & bit)) return TILEC_SUCCESS;
    cudaFuncAttributes attr;
    e = cudaFuncGetAttributes(&attr, kernel);
    if (e != cudaSuccess) return tilec_cuda_failure(e);
    if (attr.ptxVersion < min_sm) return TILEC_ERROR_NO_DEVICE_CODE;
    if (arch_specific) {
        cudaFuncAttributes probe;
        e = cudaFuncGetAttributes(&probe, reinterpret_cast<const void *>(&tilec_probe_arch_specific));
        if (e != cudaSuccess) return tilec_cuda_failure(e);
        if (probe.sharedSizeBytes < 4096) return TILEC_ERROR_NO_DEVICE_CODE;
    }
    if (shared > 48 * 1024) {
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared);
        if (e != cudaSuccess) {
            tilec_cuda_failure(e);
            return TILEC_ERROR_SHARED_MEMORY;
        }
    }
    if (bit) ready.fetch_or(bit, std::memory_order_release);
    return TILEC_SUCCESS;
}

// The current device's compute capability times ten, and its SM count where asked. Looked up once per device
// and thread (devices 0 to 63; others at every launch): the answers never change, so a launch asks the
// runtime only which device is current.
[[maybe_unused]] static tilec_status tilec_device_sm(int *sm, int *sms) {
    static thread_local int known_sm[64], known_sms[64];
    int dev = 0, major = 0, minor = 0, count = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return tilec_cuda_failure(e);
    const bool slot = dev >= 0 && dev < 64;
    if (!slot || !known_sm[dev]) {
        e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
        /* persistent kernels start as many blocks as fit the device at once */
        if (e == cudaSuccess) e = cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev);
        if (e != cudaSuccess) return tilec_cuda_failure(e);
        if (!slot) {
            *sm = major * 10 + minor;
            if (sms) *sms = count;
            return TILEC_SUCCESS;
        }
        known_sms[dev] = count;
        known_sm[dev] = major * 10 + minor;
    }
    *sm = known_sm[dev];
    if (sms) *sms = known_sms[dev];
    return TILEC_SUCCESS;
}

// How many clusters of a clustered kernel the current device holds at once (GPCs pack clusters, not SMs):
// asked of the runtime once per device and thread and kept in the launcher's `known` (a pure function of the
// kernel, its launch shape and the device, so graph capture and several threads are safe); 0 where the
// runtime cannot say (the launcher then plans with its own estimate).
[[maybe_unused]] static int tilec_active_clusters(const void *kernel, const cudaLaunchConfig_t *config, int *known) {
    int dev = 0, active = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const bool slot = dev >= 0 && dev < 64;
    if (slot && known[dev] > 0) return known[dev];
    if (cudaOccupancyMaxActiveClusters(&active, kernel, config) != cudaSuccess) {
        (void)cudaGetLastError(); // the query's own error: not the launch's to report
        return 0;
    }
    if (slot && active > 0) known[dev] = active;
    return active;
}

)tl";
    return s;
}

/// The launcher, queries and load/unload of a group of variants of one kernel (or of a kernel with tensor maps):
/// each variant prepared on the devices it runs on.
std::string printVariantGroupHost(const std::vector<const KernelInfo *> &group) {
    std::string s;
    const KernelInfo &first = *group[0];
    NameTable names = launcherNames();
    names.reserve("sm");
    Signature sig = signature(first, names);
    for (auto *v : group) s += "static std::atomic<unsigned long long> tilec_ready_" + v->symbol + "{0};\n";
    s += printLaunchPrologue(first, sig, names, true, false);
    s += printVariantLaunches(group, sig, names, true);
    s += printQueries(group, true);
    s += launcherLinkage(first, true) + "tilec_status " + first.cName + "_load(void) {\n    int sm = 0;\n";
    s += "    tilec_status status = tilec_device_sm(&sm, NULL);\n    if (status != TILEC_SUCCESS) return status;\n";
    for (auto *v : group) {
        s += "    if (" + runsOn(*v, "sm") + ") {\n        status = tilec_prepare(reinterpret_cast<const void *>(&" + v->symbol +
             "), " + std::to_string(v->sharedBytes) + ", tilec_ready_" + v->symbol + ", " + prepareTargets(*v) + ");\n";
        s += "        if (status != TILEC_ERROR_NO_DEVICE_CODE) return status;\n    }\n";
    }
    s += "    return TILEC_ERROR_NO_DEVICE_CODE;\n}\n";
    s += launcherLinkage(first, true) + "tilec_status " + first.cName + "_unload(void) { return TILEC_SUCCESS; }\n\n";
    return s;
}

/// The launcher, queries and load/unload of a kernel of one variant (`group`) without tensor maps.
std::string printSingleHost(const std::vector<const KernelInfo *> &group) {
    std::string s;
    const size_t ki = (size_t)group[0]->index;
    const KernelInfo &info = *group[0];
    const Kernel &k = *info.kernel;
    NameTable names = launcherNames();
    Signature sig = signature(info, names);
    std::string ready = "tilec_ready_" + std::to_string(ki);
    // The variant's targets too: a kernel lowered for sm_90a alone, compiled by the user's nvcc for sm_80 or plain
    // sm_90, has a body whose Hopper instructions compiled to nothing (its bulk stores, its wgmmas); run on an H100
    // it would return garbage and success. Such code counts as none for the device.
    std::string prepare = "tilec_prepare(reinterpret_cast<const void *>(&" + info.symbol + "), " +
                          std::to_string(info.sharedBytes) + ", " + ready + ", " + prepareTargets(info) + ")";
    s += "static std::atomic<unsigned long long> " + ready + "{0};\n";
    s += printLaunchPrologue(info, sig, names, true);
    s += "    tilec_status status = " + prepare + ";\n";
    s += "    if (status != TILEC_SUCCESS) return status;\n";
    s += printLaunchArguments(info, sig, true, "    ");
    // Every role's warp groups (launchedThreads, as __launch_bounds__ and the _threads query say), not `threads`, the
    // warp group one role's tile statements are laid out over: started alone, its waits for the other groups'
    // mbarrier arrivals never ended (mla_decode_ws and the seesaw sparse MLA kernel hung on the H100).
    const std::string dims = "dim3((unsigned)grid_x, (unsigned)grid_y, (unsigned)grid_z), dim3(" + std::to_string(k.launchedThreads()) + ")";
    if (syncsGrid(k)) {
        s += "    return tilec_launch_cooperative(reinterpret_cast<const void *>(&" + info.symbol + "), " + dims +
             ", args, " + std::to_string(info.sharedBytes) + ", stream);\n}\n";
    } else {
        s += "    cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void *>(&" + info.symbol + "), " + dims +
             ", args, " + std::to_string(info.sharedBytes) + ", stream);\n";
        s += "    if (e != cudaSuccess) return tilec_cuda_failure(e);\n";
        s += "    return TILEC_SUCCESS;\n}\n";
    }
    s += printQueries(group, true);
    // The CUDA runtime owns the module: loading prepares the kernel for the current device, unloading
    // has nothing to do.
    s += launcherLinkage(info, true) + "tilec_status " + info.cName + "_load(void) { return " + prepare + "; }\n";
    s += launcherLinkage(info, true) + "tilec_status " + info.cName + "_unload(void) { return TILEC_SUCCESS; }\n\n";
    return s;
}

} // namespace

std::string printHost(const std::vector<KernelInfo> &kernels, const CodegenOptions &o) {
    std::string s = "// ---- host side: runtime functions and launchers ----\n";
    s += printHostHelpers(o);
    bool maps = false, cooperative = false;
    for (auto &k : kernels) maps |= !k.kernel->tensorMaps.empty(), cooperative |= syncsGrid(*k.kernel);
    if (maps) s += printTensorMapEncoder(o, true);
    if (cooperative) s += printCooperativeLaunch(true);
    for (auto &group : variantGroups(kernels))
        s += group.size() > 1 || !group[0]->kernel->tensorMaps.empty() ? printVariantGroupHost(group) : printSingleHost(group);
    return s + printMultiLaunches(kernels, o, true);
}

} // namespace tilec::codegen
