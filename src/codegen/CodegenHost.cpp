/// \file
/// The host half of the .cu (CONTRACT.md's generated C interface): the runtime functions, and each
/// kernel's launch function (argument checks, one-time device setup, the launch) and queries
/// (src/codegen/CodegenImpl.h).
#include "codegen/CodegenImpl.h"

#include <algorithm>

namespace tilec::codegen {

using namespace ir;

namespace {

int minSm(const CodegenOptions &o) {
    int sm = 1000;
    for (auto &t : o.targets) sm = std::min(sm, t.sm);
    return o.targets.empty() ? 80 : sm;
}

} // namespace

std::string printHost(const std::vector<KernelInfo> &kernels, const CodegenOptions &o) {
    std::string s;
    s += R"tl(// ---- host side: runtime functions and launchers ----
namespace tilec_abi_v1 {
// The calling thread's last CUDA error and argument position. Inline functions with one definition in
// the whole program, so every tilec file linked together shares them.
inline cudaError_t &last_cuda_error() {
    static thread_local cudaError_t e = cudaSuccess;
    return e;
}
inline int &last_error_argument() {
    static thread_local int a = -1;
    return a;
}
} // namespace tilec_abi_v1

)tl";
    // Weak, so that several generated files with the same prefix link together.
    s += "extern \"C\" __attribute__((weak)) const char *" + rt(o, "status_string") + "(tilec_status status) {\n";
    s += R"tl(    switch (status) {
    case TILEC_SUCCESS: return "success";
    case TILEC_ERROR_NULL_POINTER: return "a tensor pointer is NULL";
    case TILEC_ERROR_MISALIGNED: return "a tensor pointer is not aligned enough for the kernel's vector accesses";
    case TILEC_ERROR_BAD_SIZE: return "a dynamic size is out of range (1 to 2147483647)";
    case TILEC_ERROR_GRID_TOO_LARGE: return "the sizes need more thread blocks than CUDA can launch";
    case TILEC_ERROR_NO_DEVICE: return "no usable CUDA device";
    case TILEC_ERROR_NO_DEVICE_CODE: return "the kernel was not compiled for this device";
    case TILEC_ERROR_SHARED_MEMORY: return "the device cannot provide the kernel's shared memory";
    case TILEC_ERROR_CUDA: return "CUDA error";
    }
    return "unknown tilec_status";
}
)tl";
    s += "extern \"C\" __attribute__((weak)) cudaError_t " + rt(o, "last_cuda_error") +
         "(void) { return tilec_abi_v1::last_cuda_error(); }\n";
    s += "extern \"C\" __attribute__((weak)) int " + rt(o, "last_error_argument") +
         "(void) { return tilec_abi_v1::last_error_argument(); }\n\n";
    s += R"tl(namespace {

tilec_status tilec_argument_error(tilec_status status, int argument) {
    tilec_abi_v1::last_error_argument() = argument;
    return status;
}

tilec_status tilec_cuda_failure(cudaError_t e) {
    (void)cudaGetLastError(); // reported through the status; do not leave it pending for the caller
    tilec_abi_v1::last_cuda_error() = e;
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return TILEC_ERROR_NO_DEVICE;
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) return TILEC_ERROR_NO_DEVICE_CODE;
    return TILEC_ERROR_CUDA;
}

// Once per kernel and device (devices 0 to 63 are remembered; others are checked at every launch): the
// kernel has code for the device, and its shared-memory limit is raised when it needs more than 48 KiB.
// Racing threads do the same idempotent calls, so no lock is needed.
tilec_status tilec_prepare(const void *kernel, size_t shared, std::atomic<unsigned long long> &ready) {
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

[[maybe_unused]] int64_t tilec_floordiv64(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
[[maybe_unused]] int64_t tilec_floormod64(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

} // namespace

)tl";
    int sm = minSm(o);
    for (auto &info : kernels) {
        const Kernel &k = *info.kernel;
        NameTable names;
        names.reserve("stream");
        for (const char *r : {"grid_x", "grid_y", "grid_z", "ready", "args", "status", "e"}) names.reserve(r);
        Signature sig = signature(info, names);
        s += "extern \"C\" " + sig.text + " {\n";
        // Arguments, in parameter order: null pointers, then alignment, then sizes.
        for (size_t i = 0; i < k.params.size(); ++i)
            if (k.params[i].kind == Param::Tensor)
                s += "    if (" + sig.names[i] + " == NULL) return tilec_argument_error(TILEC_ERROR_NULL_POINTER, " +
                     std::to_string(i) + ");\n";
        for (size_t i = 0; i < k.params.size(); ++i)
            if (info.alignment[i] > 1)
                s += "    if (reinterpret_cast<uintptr_t>(" + sig.names[i] + ") % " + std::to_string(info.alignment[i]) +
                     " != 0) return tilec_argument_error(TILEC_ERROR_MISALIGNED, " + std::to_string(i) + ");\n";
        for (size_t i = 0; i < k.dynamicSymbols.size(); ++i) {
            const std::string &n = sig.names[k.params.size() + i];
            s += "    if (" + n + " < 1 || " + n + " > 2147483647) return tilec_argument_error(TILEC_ERROR_BAD_SIZE, " +
                 std::to_string(k.params.size() + i) + ");\n";
        }
        ExprPrinter hp(names, true);
        static const char *axis[] = {"x", "y", "z"};
        for (int d = 0; d < 3; ++d) s += "    const int64_t grid_" + std::string(axis[d]) + " = " + hp.print(k.grid[d]) + ";\n";
        s += "    if (grid_x < 1 || grid_x > 2147483647 || grid_y < 1 || grid_y > 65535 || grid_z < 1 || grid_z > 65535)\n";
        s += "        return TILEC_ERROR_GRID_TOO_LARGE;\n";
        s += "    static std::atomic<unsigned long long> ready{0};\n";
        s += "    tilec_status status = tilec_prepare(reinterpret_cast<const void *>(&" + info.symbol + "), " +
             std::to_string(info.sharedBytes) + ", ready);\n";
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
        s += "extern \"C\" int " + info.cName + "_threads(int sm) { return sm >= " + std::to_string(sm) + " ? " +
             std::to_string(k.threads) + " : 0; }\n";
        s += "extern \"C\" size_t " + info.cName + "_shared_bytes(int sm) { return sm >= " + std::to_string(sm) + " ? " +
             std::to_string(info.sharedBytes) + " : 0; }\n\n";
    }
    return s;
}

} // namespace tilec::codegen
