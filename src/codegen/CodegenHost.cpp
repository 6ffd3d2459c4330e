/// \file
/// The host half of the .cu (CONTRACT.md's generated C interface): the runtime functions, and each
/// kernel's launch function (argument checks, one-time device setup, the launch through the CUDA runtime)
/// and queries. The pieces binary mode shares (src/codegen/CodegenHostParts.h) are here too.
#include "codegen/CodegenHostParts.h"

#include <algorithm>

namespace tilec::codegen {

using namespace ir;

int lowestSm(const CodegenOptions &o) {
    int sm = 1000;
    for (auto &t : o.targets) sm = std::min(sm, t.sm);
    return o.targets.empty() ? 80 : sm;
}

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
    for (const char *r : {"grid_x", "grid_y", "grid_z", "ready", "args", "status", "e", "r", "fn"}) names.reserve(r);
    return names;
}

std::string printLaunchPrologue(const KernelInfo &info, const Signature &sig, NameTable &names, bool cxx) {
    const Kernel &k = *info.kernel;
    std::string s = cLinkage(cxx) + sig.text + " {\n";
    // Arguments, in parameter order: null pointers, then alignment, then sizes.
    for (size_t i = 0; i < k.params.size(); ++i)
        if (k.params[i].kind == Param::Tensor)
            s += "    if (" + sig.names[i] + " == NULL) return tilec_argument_error(TILEC_ERROR_NULL_POINTER, " +
                 std::to_string(i) + ");\n";
    for (size_t i = 0; i < k.params.size(); ++i)
        if (info.alignment[i] > 1)
            s += "    if ((uintptr_t)" + sig.names[i] + " % " + std::to_string(info.alignment[i]) +
                 " != 0) return tilec_argument_error(TILEC_ERROR_MISALIGNED, " + std::to_string(i) + ");\n";
    for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) {
        const std::string &n = sig.names[k.params.size() + i];
        s += "    if (" + n + " < 0 || " + n + " > 2147483647) return tilec_argument_error(TILEC_ERROR_BAD_SIZE, " +
             std::to_string(k.params.size() + i) + ");\n";
    }
    ExprPrinter hp(names, true);
    static const char *axis[] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d) s += "    const int64_t grid_" + std::string(axis[d]) + " = " + hp.print(k.grid[d]) + ";\n";
    // An empty batch (a size of 0) is a no-op, as in cuBLAS and PyTorch: nothing to launch.
    s += "    if (grid_x == 0 || grid_y == 0 || grid_z == 0) return TILEC_SUCCESS;\n";
    s += "    if (grid_x < 1 || grid_x > 2147483647 || grid_y < 1 || grid_y > 65535 || grid_z < 1 || grid_z > 65535)\n";
    s += "        return TILEC_ERROR_GRID_TOO_LARGE;\n";
    return s;
}

std::string printQueries(const KernelInfo &info, const CodegenOptions &o, bool cxx) {
    std::string sm = std::to_string(lowestSm(o));
    std::string s;
    s += cLinkage(cxx) + "int " + info.cName + "_threads(int sm) { return sm >= " + sm + " ? " +
         std::to_string(info.kernel->threads) + " : 0; }\n";
    s += cLinkage(cxx) + "size_t " + info.cName + "_shared_bytes(int sm) { return sm >= " + sm + " ? " +
         std::to_string(info.sharedBytes) + " : 0; }\n";
    return s;
}

std::string printHost(const std::vector<KernelInfo> &kernels, const CodegenOptions &o) {
    std::string s = "// ---- host side: runtime functions and launchers ----\n";
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
[[maybe_unused]] static tilec_status tilec_prepare(const void *kernel, size_t shared, std::atomic<unsigned long long> &ready) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return tilec_cuda_failure(e);
    unsigned long long bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
    if (bit && (ready.load(std::memory_order_acquire) & bit)) return TILEC_SUCCESS;
    cudaFuncAttributes attr;
    e = cudaFuncGetAttributes(&attr, kernel);
    if (e != cudaSuccess) return tilec_cuda_failure(e);
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

)tl";
    for (size_t ki = 0; ki < kernels.size(); ++ki) {
        const KernelInfo &info = kernels[ki];
        const Kernel &k = *info.kernel;
        NameTable names = launcherNames();
        Signature sig = signature(info, names);
        std::string ready = "tilec_ready_" + std::to_string(ki);
        std::string prepare = "tilec_prepare(reinterpret_cast<const void *>(&" + info.symbol + "), " +
                              std::to_string(info.sharedBytes) + ", " + ready + ")";
        s += "static std::atomic<unsigned long long> " + ready + "{0};\n";
        s += printLaunchPrologue(info, sig, names, true);
        s += "    tilec_status status = " + prepare + ";\n";
        s += "    if (status != TILEC_SUCCESS) return status;\n";
        std::string args;
        for (size_t i = 0; i < k.params.size(); ++i) {
            auto &p = k.params[i];
            std::string a = "a" + std::to_string(i);
            if (p.kind == Param::Tensor) {
                std::string t = (info.written[i] ? "" : "const ") + deviceType(p.buffer->dtype) + " *";
                s += "    " + t + a + " = static_cast<" + t + ">(" + sig.names[i] + ");\n";
            } else {
                s += "    " + deviceType(p.var->dtype) + " " + a + " = " + sig.names[i] + ";\n";
            }
            args += (args.empty() ? "" : ", ") + std::string("&") + a;
        }
        for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) {
            std::string a = "d" + std::to_string(i);
            s += "    int " + a + " = (int)" + sig.names[k.params.size() + i] + ";\n";
            args += (args.empty() ? "" : ", ") + std::string("&") + a;
        }
        s += "    void *args[] = {" + (args.empty() ? std::string("nullptr") : args) + "};\n";
        s += "    cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void *>(&" + info.symbol +
             "), dim3((unsigned)grid_x, (unsigned)grid_y, (unsigned)grid_z), dim3(" + std::to_string(k.threads) +
             "), args, " + std::to_string(info.sharedBytes) + ", stream);\n";
        s += "    if (e != cudaSuccess) return tilec_cuda_failure(e);\n";
        s += "    return TILEC_SUCCESS;\n}\n";
        s += printQueries(info, o, true);
        // The CUDA runtime owns the module: loading prepares the kernel for the current device, unloading
        // has nothing to do.
        s += "extern \"C\" tilec_status " + info.cName + "_load(void) { return " + prepare + "; }\n";
        s += "extern \"C\" tilec_status " + info.cName + "_unload(void) { return TILEC_SUCCESS; }\n\n";
    }
    return s;
}

} // namespace tilec::codegen
