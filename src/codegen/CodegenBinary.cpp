/// \file
/// Binary mode (`-o x.c` / `-o x.o`): a C file that embeds the compiled kernels (a cubin per target, and the
/// lowest target's PTX: for newer devices when that target is portable, for its own architecture only when it
/// is arch-specific, e.g. sm_90a) and launches them through the CUDA driver API, behind the same header as the .cu, so an
/// application switches modes without changing code and builds with any C or C++ compiler and `-lcuda`.
///
/// At the first launch (or NAME_load) in a context, the file loads its images' best fit for the context's
/// device (the cubin of its compute capability, else PTX the driver JIT-compiles, else "no code for this
/// device"). Up to 64 contexts are remembered per file. Loading happens outside the lock, so a slow PTX JIT
/// never blocks other threads' launches; of two threads loading at once, one keeps its module.
#include "codegen/CodegenHostParts.h"
#include "codegen/Stdlib.h"

namespace tilec::codegen {

using namespace ir;

namespace {

/// The bytes as a C initializer list, 32 to a line.
std::string byteArray(const std::string &bytes, bool terminate) {
    std::string s;
    s.reserve(bytes.size() * 4 + 64);
    size_t n = bytes.size() + (terminate ? 1 : 0);
    for (size_t i = 0; i < n; ++i) {
        unsigned v = i < bytes.size() ? (unsigned char)bytes[i] : 0;
        s += std::to_string(v);
        s += ',';
        if (i % 32 == 31 || i + 1 == n) s += '\n';
    }
    return s;
}

/// Portability (atomics, thread-local storage) and the driver-API helpers every launcher of the file uses:
/// error mapping, the context, the module table, the launch.
const char *const kDriverRuntime = R"tl(#ifdef __cplusplus
#include <atomic>
#define TILEC_THREAD_LOCAL thread_local
#define TILEC_ATOMIC_INT std::atomic<int>
#define TILEC_LOAD(x) (x).load(std::memory_order_acquire)
#define TILEC_STORE(x, v) (x).store((v), std::memory_order_release)
#define TILEC_LOCK(f) while ((f).test_and_set(std::memory_order_acquire)) {}
#define TILEC_UNLOCK(f) (f).clear(std::memory_order_release)
typedef std::atomic_flag tilec_flag;
#else
#include <stdatomic.h>
#define TILEC_THREAD_LOCAL _Thread_local
#define TILEC_ATOMIC_INT atomic_int
#define TILEC_LOAD(x) atomic_load_explicit(&(x), memory_order_acquire)
#define TILEC_STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_release)
#define TILEC_LOCK(f) while (atomic_flag_test_and_set_explicit(&(f), memory_order_acquire)) {}
#define TILEC_UNLOCK(f) atomic_flag_clear_explicit(&(f), memory_order_release)
typedef atomic_flag tilec_flag;
#endif

#ifdef __cplusplus
extern "C" {
#endif

)tl";

/// The module table and the functions around it; needs tilec_images, tilec_kernel_names, the counts and
/// the runtime state (`@ERR@` is the state's name).
const char *const kModuleTable = R"tl(static tilec_status tilec_driver_failure(CUresult r) {
    @ERR@ = (cudaError_t)r; /* the runtime's error codes are the driver's */
    switch (r) {
    case CUDA_ERROR_NO_DEVICE: case CUDA_ERROR_INVALID_DEVICE: case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_SYSTEM_NOT_READY:
        return TILEC_ERROR_NO_DEVICE;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: case CUDA_ERROR_INVALID_PTX: case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
        return TILEC_ERROR_NO_DEVICE_CODE;
    default:
        return TILEC_ERROR_CUDA;
    }
}

/* The calling thread's context; without one, device 0's primary context, as the CUDA runtime does. */
static CUresult tilec_context(CUcontext *ctx, unsigned long long *key) {
    CUresult r = cuCtxGetCurrent(ctx);
    if (r == CUDA_ERROR_NOT_INITIALIZED) {
        r = cuInit(0);
        if (r == CUDA_SUCCESS) r = cuCtxGetCurrent(ctx);
    }
    if (r == CUDA_SUCCESS && *ctx == NULL) {
        CUdevice dev;
        r = cuDeviceGet(&dev, 0);
        if (r == CUDA_SUCCESS) r = cuDevicePrimaryCtxRetain(ctx, dev);
        if (r == CUDA_SUCCESS) r = cuCtxSetCurrent(*ctx);
    }
    if (r != CUDA_SUCCESS) return r;
#if CUDA_VERSION >= 12000
    /* Context IDs are never reused, unlike the addresses of destroyed contexts. */
    return cuCtxGetId(*ctx, key);
#else
    *key = (unsigned long long)(uintptr_t)*ctx;
    return CUDA_SUCCESS;
#endif
}

/* Per context: its key, module and functions, written before the slot is published (slot_count, ready). */
enum { tilec_slots = 64 };
static unsigned long long tilec_slot_key[tilec_slots];
static CUmodule tilec_slot_module[tilec_slots];
static CUfunction tilec_slot_function[tilec_slots][tilec_kernel_count];
static TILEC_ATOMIC_INT tilec_slot_ready[tilec_slots];
static TILEC_ATOMIC_INT tilec_slot_prepared[tilec_slots][tilec_kernel_count];
static TILEC_ATOMIC_INT tilec_slot_count;
static tilec_flag tilec_slot_lock = ATOMIC_FLAG_INIT;

static int tilec_find_slot(unsigned long long key) {
    int n = TILEC_LOAD(tilec_slot_count), i;
    for (i = 0; i < n; ++i)
        if (tilec_slot_key[i] == key) return i;
    return -1;
}

/* The best image for the context's device: the cubin of the highest compatible target, else the PTX. */
static tilec_status tilec_load_module(CUmodule *module, CUfunction *functions) {
    CUdevice dev;
    int major = 0, minor = 0, cc, i;
    const tilec_image *cubin = NULL, *ptx = NULL;
    CUresult r = cuCtxGetDevice(&dev);
    if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    if (r != CUDA_SUCCESS) return tilec_driver_failure(r);
    cc = major * 10 + minor;
    for (i = 0; i < (int)(sizeof tilec_images / sizeof tilec_images[0]); ++i) {
        const tilec_image *im = &tilec_images[i];
        /* sm_XYa runs on XY only; sm_XY on X.Y and later minors of X; PTX on X.Y and later. */
        if (!im->ptx) {
            int fits = im->arch_specific ? im->sm == cc : (im->sm / 10 == cc / 10 && im->sm <= cc);
            if (fits && (!cubin || im->sm > cubin->sm || (im->sm == cubin->sm && im->arch_specific))) cubin = im;
        } else if (im->arch_specific ? im->sm == cc : im->sm <= cc) {
            ptx = im;
        }
    }
    r = CUDA_ERROR_NO_BINARY_FOR_GPU;
    if (cubin) r = cuModuleLoadData(module, cubin->data);
    if (r != CUDA_SUCCESS && ptx) r = cuModuleLoadData(module, ptx->data);
    if (r != CUDA_SUCCESS) return tilec_driver_failure(r);
    for (i = 0; i < tilec_kernels; ++i) {
        r = cuModuleGetFunction(&functions[i], *module, tilec_kernel_names[i]);
        if (r != CUDA_SUCCESS) {
            (void)cuModuleUnload(*module);
            return tilec_driver_failure(r);
        }
    }
    return TILEC_SUCCESS;
}

/* Kernel `k`'s function in the current context, loading the module when this context has none, and the
 * kernel's shared-memory limit raised once per module when it needs more than 48 KiB. */
static tilec_status tilec_function(int k, CUfunction *fn) {
    CUcontext ctx;
    unsigned long long key;
    CUmodule module;
    CUfunction functions[tilec_kernel_count];
    int slot, keep = 1, i;
    tilec_status status;
    CUresult r = tilec_context(&ctx, &key);
    if (r != CUDA_SUCCESS) return tilec_driver_failure(r);
    slot = tilec_find_slot(key);
    if (slot < 0 || !TILEC_LOAD(tilec_slot_ready[slot])) {
        status = tilec_load_module(&module, functions);
        if (status != TILEC_SUCCESS) return status;
        TILEC_LOCK(tilec_slot_lock);
        slot = tilec_find_slot(key);
        if (slot >= 0 && TILEC_LOAD(tilec_slot_ready[slot])) {
            keep = 0; /* another thread was faster */
        } else {
            if (slot < 0) {
                slot = TILEC_LOAD(tilec_slot_count);
                if (slot == tilec_slots) {
                    TILEC_UNLOCK(tilec_slot_lock);
                    (void)cuModuleUnload(module);
                    return tilec_driver_failure(CUDA_ERROR_OUT_OF_MEMORY);
                }
                tilec_slot_key[slot] = key;
            }
            tilec_slot_module[slot] = module;
            for (i = 0; i < tilec_kernels; ++i) {
                tilec_slot_function[slot][i] = functions[i];
                TILEC_STORE(tilec_slot_prepared[slot][i], 0);
            }
            TILEC_STORE(tilec_slot_ready[slot], 1);
            if (slot == TILEC_LOAD(tilec_slot_count)) TILEC_STORE(tilec_slot_count, slot + 1);
        }
        TILEC_UNLOCK(tilec_slot_lock);
        if (!keep) (void)cuModuleUnload(module);
    }
    *fn = tilec_slot_function[slot][k];
    if (!TILEC_LOAD(tilec_slot_prepared[slot][k])) {
        /* Racing threads make the same idempotent call. */
        if (tilec_kernel_shared[k] > 48 * 1024) {
            r = cuFuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)tilec_kernel_shared[k]);
            if (r != CUDA_SUCCESS) {
                tilec_driver_failure(r);
                return TILEC_ERROR_SHARED_MEMORY;
            }
        }
        TILEC_STORE(tilec_slot_prepared[slot][k], 1);
    }
    return TILEC_SUCCESS;
}

/* Unloads the module from the current context, if it has one (without a usable context on this thread,
 * nothing of this file can be loaded there). */
static tilec_status tilec_unload(void) {
    CUcontext ctx = NULL;
    CUmodule module = NULL;
    unsigned long long key;
    int slot;
    CUresult r = cuCtxGetCurrent(&ctx);
    if (r != CUDA_SUCCESS || ctx == NULL) return TILEC_SUCCESS;
    r = tilec_context(&ctx, &key);
    if (r != CUDA_SUCCESS) return tilec_driver_failure(r);
    TILEC_LOCK(tilec_slot_lock);
    slot = tilec_find_slot(key);
    if (slot >= 0 && TILEC_LOAD(tilec_slot_ready[slot])) {
        TILEC_STORE(tilec_slot_ready[slot], 0);
        module = tilec_slot_module[slot];
    }
    TILEC_UNLOCK(tilec_slot_lock);
    if (module) {
        r = cuModuleUnload(module);
        if (r != CUDA_SUCCESS) return tilec_driver_failure(r);
    }
    return TILEC_SUCCESS;
}

/* The current context's device's compute capability times ten (for kernels with variants per target), and its
 * SM count where asked: asked of the driver once per context and thread (context IDs are never reused), so a
 * launch asks only which context is current. */
__attribute__((unused)) static tilec_status tilec_device_sm(int *sm, int *sms) {
    static TILEC_THREAD_LOCAL unsigned long long known_key;
    static TILEC_THREAD_LOCAL int known_sm, known_sms;
    CUcontext ctx;
    CUdevice dev;
    unsigned long long key;
    int major = 0, minor = 0, count = 0;
    CUresult r = tilec_context(&ctx, &key);
    if (r != CUDA_SUCCESS) return tilec_driver_failure(r);
    if (!known_sm || known_key != key) {
        r = cuCtxGetDevice(&dev);
        if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        /* persistent kernels start as many blocks as fit the device at once */
        if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(&count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
        if (r != CUDA_SUCCESS) return tilec_driver_failure(r);
        known_key = key;
        known_sms = count;
        known_sm = major * 10 + minor;
    }
    *sm = known_sm;
    if (sms) *sms = known_sms;
    return TILEC_SUCCESS;
}

#if CUDA_VERSION >= 12000
/* A launch in clusters of `cluster` consecutive blocks along x (no cluster attribute when it is 1). */
static void tilec_launch_config(CUlaunchConfig *config, CUlaunchAttribute *attr, int64_t gx, int64_t gy, int64_t gz,
                                unsigned threads, unsigned shared, unsigned cluster, cudaStream_t stream) {
    attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr[0].value.clusterDim.x = cluster;
    attr[0].value.clusterDim.y = 1;
    attr[0].value.clusterDim.z = 1;
    config->gridDimX = (unsigned)gx;
    config->gridDimY = (unsigned)gy;
    config->gridDimZ = (unsigned)gz;
    config->blockDimX = threads;
    config->blockDimY = 1;
    config->blockDimZ = 1;
    config->sharedMemBytes = shared;
    config->hStream = stream;
    config->attrs = cluster > 1 ? attr : NULL;
    config->numAttrs = cluster > 1 ? 1 : 0;
}
#endif

static CUresult tilec_launch(CUfunction fn, int64_t gx, int64_t gy, int64_t gz, unsigned threads, unsigned shared,
                             unsigned cluster, cudaStream_t stream, void **args) {
#if CUDA_VERSION >= 12000
    CUlaunchAttribute attr[1];
    CUlaunchConfig config;
    tilec_launch_config(&config, attr, gx, gy, gz, threads, shared, cluster, stream);
    return cuLaunchKernelEx(&config, fn, args, NULL);
#else
    if (cluster > 1) return CUDA_ERROR_NOT_SUPPORTED;
    return cuLaunchKernel(fn, (unsigned)gx, (unsigned)gy, (unsigned)gz, threads, 1, 1, shared, stream, args, NULL);
#endif
}

/* How many clusters of `cluster` blocks of kernel `fn` the device holds at once (GPCs pack clusters, not SMs),
 * asked of the driver at each launch: nothing cached, so graph capture, several threads and several contexts
 * are safe. 0 where the driver cannot say (the query fails, or headers older than CUDA 12 lack it): the
 * launcher then plans with its own estimate. */
__attribute__((unused)) static int tilec_active_clusters(CUfunction fn, unsigned threads, unsigned shared,
                                                         unsigned cluster, cudaStream_t stream) {
#if CUDA_VERSION >= 12000
    CUlaunchAttribute attr[1];
    CUlaunchConfig config;
    int active = 0;
    tilec_launch_config(&config, attr, cluster, 1, 1, threads, shared, cluster, stream);
    if (cuOccupancyMaxActiveClusters(&active, fn, &config) != CUDA_SUCCESS) return 0;
    return active;
#else
    (void)fn, (void)threads, (void)shared, (void)cluster, (void)stream;
    return 0;
#endif
}

)tl";

/// What the embedded PTX of `t` runs on, exactly: the driver JIT-compiles PTX of a portable target (compute_80)
/// for that compute capability and every later one; PTX of an arch-specific target (compute_90a) only for that
/// very architecture, so it serves no newer device.
std::string embeddedPtxNote(const Target &t) {
    std::string arch = t.virtualArch();
    if (!t.archSpecific)
        return "Also PTX of " + arch + ", which the driver JIT-compiles for devices of compute capability " +
               std::to_string(t.sm / 10) + "." + std::to_string(t.sm % 10) + " and newer that no cubin fits.";
    return "Also PTX of " + arch + ", which runs on " + t.name + " devices only: arch-specific PTX is not\n * JIT-compiled "
           "for newer devices (add a portable target, e.g. -arch=sm_80," + t.name + ", for PTX that is).";
}

std::string replaceAll(std::string s, const std::string &from, const std::string &to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
}

/// The images and the per-kernel tables.
std::string printImages(const std::vector<KernelInfo> &kernels, const std::vector<DeviceImage> &images,
                        const std::vector<std::string> &loweredNames) {
    std::string s = "/* ---- the device code ---- */\n";
    std::string table;
    for (size_t i = 0; i < images.size(); ++i) {
        const DeviceImage &im = images[i];
        std::string arch = im.ptx ? im.target.virtualArch() : im.target.name;
        std::string name = std::string(im.ptx ? "tilec_ptx_" : "tilec_cubin_") + arch;
        s += "/* " + std::string(im.ptx ? "PTX for " : "cubin for ") + arch + ", " + std::to_string(im.bytes.size()) +
             " bytes */\n";
        s += "static const unsigned char " + name + "[] __attribute__((aligned(16))) = {\n";
        s += byteArray(im.bytes, im.ptx); // the driver reads PTX up to its NUL
        s += "};\n";
        table += "    {" + std::to_string(im.target.sm) + ", " + (im.target.archSpecific ? "1" : "0") + ", " +
                 (im.ptx ? "1" : "0") + ", " + name + "},\n";
    }
    s += "typedef struct tilec_image {\n    int sm, arch_specific, ptx;\n    const void *data;\n} tilec_image;\n";
    s += "static const tilec_image tilec_images[] = {\n" + table;
    if (images.empty()) s += "    {0, 0, 0, NULL},\n";
    s += "};\n";
    // At least one entry, so the arrays are valid C when no kernel is exported.
    size_t n = kernels.size();
    s += "enum { tilec_kernels = " + std::to_string(n) + ", tilec_kernel_count = " + std::to_string(std::max<size_t>(n, 1)) + " };\n";
    s += "static const char *const tilec_kernel_names[] = {";
    for (size_t i = 0; i < n; ++i) s += std::string(i ? ", " : "") + quoted(i < loweredNames.size() ? loweredNames[i] : "");
    s += std::string(n ? "" : "NULL") + "};\n";
    s += "static const size_t tilec_kernel_shared[] = {";
    for (size_t i = 0; i < n; ++i) s += std::string(i ? ", " : "") + std::to_string(kernels[i].sharedBytes);
    s += std::string(n ? "" : "0") + "};\n\n";
    return s;
}

/// The launch function, queries and load/unload of a kernel with several variants or tensor maps.
std::string printVariantLauncher(const std::vector<const KernelInfo *> &group) {
    const KernelInfo &first = *group[0];
    NameTable names = launcherNames();
    names.reserve("sm");
    Signature sig = signature(first, names);
    std::string s = printLaunchPrologue(first, sig, names, false, false);
    s += printVariantLaunches(group, sig, names, false);
    s += printQueries(group, false);
    s += launcherLinkage(first, false) + "tilec_status " + first.cName + "_load(void) {\n    int sm = 0;\n    CUfunction fn;\n";
    s += "    tilec_status status = tilec_device_sm(&sm, NULL);\n    if (status != TILEC_SUCCESS) return status;\n";
    for (auto *v : group)
        s += "    if (" + runsOn(*v, "sm") + ") return tilec_function(" + std::to_string(v->index) + ", &fn);\n";
    s += "    return TILEC_ERROR_NO_DEVICE_CODE;\n}\n";
    s += launcherLinkage(first, false) + "tilec_status " + first.cName + "_unload(void) { return tilec_unload(); }\n\n";
    return s;
}

/// One kernel's launch function, queries and load/unload.
std::string printLauncher(const KernelInfo &info, size_t index, const CodegenOptions &o) {
    const Kernel &k = *info.kernel;
    NameTable names = launcherNames();
    Signature sig = signature(info, names);
    std::string s = printLaunchPrologue(info, sig, names, false);
    s += "    CUfunction fn;\n";
    // C90-style declarations first would be nicer, but C11 and C++ both take them mixed with statements.
    s += "    tilec_status status = tilec_function(" + std::to_string(index) + ", &fn);\n";
    s += "    if (status != TILEC_SUCCESS) return status;\n";
    s += printLaunchArguments(info, sig, false, "    ");
    // Every role's warp groups, as the .cu's launcher (printSingleHost) starts them.
    if (syncsGrid(k)) {
        s += "    return tilec_launch_cooperative(fn, grid_x, grid_y, grid_z, " + std::to_string(k.launchedThreads()) + ", " +
             std::to_string(info.sharedBytes) + ", stream, args);\n}\n";
    } else {
        s += "    CUresult r = tilec_launch(fn, grid_x, grid_y, grid_z, " + std::to_string(k.launchedThreads()) + ", " +
             std::to_string(info.sharedBytes) + ", 1, stream, args);\n";
        s += "    if (r != CUDA_SUCCESS) return tilec_driver_failure(r);\n";
        s += "    return TILEC_SUCCESS;\n}\n";
    }
    s += printQueries({&info}, false);
    s += launcherLinkage(info, false) + "tilec_status " + info.cName + "_load(void) {\n    CUfunction fn;\n    return tilec_function(" +
         std::to_string(index) + ", &fn);\n}\n";
    s += launcherLinkage(info, false) + "tilec_status " + info.cName + "_unload(void) { return tilec_unload(); }\n\n";
    return s;
}

} // namespace

} // namespace tilec::codegen

namespace tilec {

using namespace codegen;

std::string generateBinarySource(const ir::Program &lowered, const CodegenOptions &opts,
                                 const std::vector<DeviceImage> &images, const std::vector<std::string> &loweredNames,
                                 DiagnosticEngine &diag) {
    std::vector<KernelInfo> infos = analyzeKernels(lowered, opts, diag);
    std::vector<KernelInfo> firsts;
    bool maps = false;
    for (auto &i : infos) {
        if (i.variant == 0) firsts.push_back(i);
        maps |= !i.kernel->tensorMaps.empty();
    }
    std::string targets;
    for (auto &im : images)
        if (!im.ptx) targets += (targets.empty() ? "" : ", ") + im.target.name;
    std::string c;
    c += "/* Generated by tilec from " + opts.sourceName + "; do not edit.\n";
    c += " * Binary mode: the kernels compiled for " + (targets.empty() ? std::string("no target") : targets) +
         ", launched through the CUDA driver API.\n";
    for (auto &im : images)
        if (im.ptx) c += " * " + embeddedPtxNote(im.target) + "\n";
    c += " * Compile as C11 or C++ with any compiler and link with -lcuda. */\n";
    c += printHeader(firsts, opts);
    c += "\n#include <cuda.h>\n#include <stddef.h>\n#include <stdint.h>\n\n";
    c += kDriverRuntime;
    c += printRuntimeFunctions(opts, false);
    c += printLauncherHelpers(opts, false);
    c += printImages(infos, images, loweredNames);
    c += replaceAll(kModuleTable, "@ERR@", rt(opts, "last_cuda_error_state"));
    c += "/* ---- launchers ---- */\n";
    if (maps) c += printTensorMapEncoder(opts, false);
    if (std::any_of(infos.begin(), infos.end(), [](const KernelInfo &i) { return syncsGrid(*i.kernel); }))
        c += printCooperativeLaunch(false);
    for (auto &group : variantGroups(infos)) {
        if (group.size() > 1 || !group[0]->kernel->tensorMaps.empty()) c += printVariantLauncher(group);
        else c += printLauncher(*group[0], (size_t)group[0]->index, opts);
    }
    c += printMultiLaunches(infos, opts, false);
    c += "#ifdef __cplusplus\n}\n#endif\n";
    return c;
}

} // namespace tilec
