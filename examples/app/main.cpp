/// \file
/// The example application of tilec: calls kernels that tilec generated (an element-wise axpby with a run-time
/// length, RMSNorm and, when built with it, a GEMM) through their C headers, and checks every output element
/// against a float64 host reference (the GEMM also against cuBLAS when the build found it).
///
/// It uses only the CUDA driver API itself, so the same source builds in both of tilec's modes: `.cu` (the
/// kernels' library links the CUDA runtime) and binary (it links libcuda alone, no nvcc anywhere).
/// Prints one PASS/FAIL line per kernel; exit status 0 when all pass, 1 on a failure, 77 (skipped) when there
/// is no usable GPU or no code for it.
#include <cuda.h>

#include "axpby.h"
#include "rms_norm.h"
#ifdef TILEC_APP_GEMM
#include "gemm.h"
#endif
#ifdef TILEC_APP_CUBLAS
#include <cublas_v2.h>
#endif

#include "numerics.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kSkip = 77;
constexpr double kU32 = 1.0 / (1 << 24); // float32 unit roundoff

std::string driverError(CUresult r) {
    if (r == CUDA_ERROR_STUB_LIBRARY) return "CUDA_ERROR_STUB_LIBRARY: libcuda is the toolkit's stub, no driver";
    const char *s = nullptr;
    if (cuGetErrorName(r, &s) != CUDA_SUCCESS || !s) return "CUresult " + std::to_string(int(r));
    return s;
}

/// Stops the program on a failed driver call of the application's own (allocation, copy): not a kernel result.
void check(CUresult r, const char *what) {
    if (r == CUDA_SUCCESS) return;
    std::fprintf(stderr, "app: %s failed: %s\n", what, driverError(r).c_str());
    std::exit(1);
}

/// Device memory of one tensor; its bytes are set to 0xFF (NaN in every float format) before each run.
class DeviceBuffer {
public:
    explicit DeviceBuffer(size_t bytes) : bytes_(bytes) { check(cuMemAlloc(&ptr_, bytes), "cuMemAlloc"); }
    template <class T> explicit DeviceBuffer(const std::vector<T> &host) : DeviceBuffer(host.size() * sizeof(T)) {
        check(cuMemcpyHtoD(ptr_, host.data(), bytes_), "cuMemcpyHtoD");
        check(cuCtxSynchronize(), "cuCtxSynchronize"); // the copy may still be in flight on return
    }
    ~DeviceBuffer() { cuMemFree(ptr_); }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
    void *get() const { return reinterpret_cast<void *>(ptr_); }
    void poison() { // done before the launch starts: the memset is asynchronous, on another stream
        check(cuMemsetD8(ptr_, 0xFF, bytes_), "cuMemsetD8");
        check(cuCtxSynchronize(), "cuCtxSynchronize");
    }
    template <class T> std::vector<T> download() const {
        std::vector<T> v(bytes_ / sizeof(T));
        check(cuMemcpyDtoH(v.data(), ptr_, bytes_), "cuMemcpyDtoH");
        return v;
    }

private:
    CUdeviceptr ptr_ = 0;
    size_t bytes_;
};

/// One kernel's result; NO_DEVICE_CODE (the application was built for other GPUs) makes it a skip.
enum class Outcome { Pass, Fail, Skip };

Outcome launched(const char *name, tilec_status s, CUstream stream) {
    if (s == TILEC_ERROR_NO_DEVICE_CODE) {
        std::printf("SKIP %s: %s (the application was built for other GPUs)\n", name, tilec_status_string(s));
        return Outcome::Skip;
    }
    if (s != TILEC_SUCCESS) {
        std::printf("FAIL %s: %s (CUDA error %d)\n", name, tilec_status_string(s), int(tilec_last_cuda_error()));
        return Outcome::Fail;
    }
    CUresult r = cuStreamSynchronize(stream);
    if (r != CUDA_SUCCESS) {
        std::printf("FAIL %s: the kernel failed: %s\n", name, driverError(r).c_str());
        std::exit(1); // the context is unusable after a kernel fault
    }
    return Outcome::Pass;
}

Outcome report(const char *name, const app::Verdict &v, const std::string &what) {
    std::printf("%s %s: %zu elements, %zu outside %s; worst at %zu: %.6g vs %.6g (%.2f of the bound)\n",
                v.passed() ? "PASS" : "FAIL", name, v.checked, v.bad, what.c_str(), v.worstIndex, v.worstGot,
                v.worstWant, v.worstRatio);
    return v.passed() ? Outcome::Pass : Outcome::Fail;
}

/// Z = alpha X + beta Y, float16, n elements (not a multiple of the kernel's 1024-element block).
Outcome runAxpby(app::Inputs &in, CUstream stream) {
    const int64_t n = 1000003;
    const float alpha = 1.5f, beta = -0.75f;
    auto x = in.half(n), y = in.half(n);
    DeviceBuffer dx(x), dy(y), dz(n * 2);
    // the launcher's argument checks: a null tensor is refused without a launch
    if (app_axpby(nullptr, dy.get(), dz.get(), alpha, beta, n, stream) != TILEC_ERROR_NULL_POINTER) {
        std::printf("FAIL app_axpby: a null tensor pointer was not refused\n");
        return Outcome::Fail;
    }
    dz.poison();
    Outcome o = launched("app_axpby", app_axpby(dx.get(), dy.get(), dz.get(), alpha, beta, n, stream), stream);
    if (o != Outcome::Pass) return o;
    auto z = dz.download<uint16_t>();
    app::Verdict v;
    for (int64_t i = 0; i < n; ++i) {
        double ax = double(alpha) * app::halfToFloat(x[i]), by = double(beta) * app::halfToFloat(y[i]);
        double r = ax + by;
        v.add(size_t(i), app::halfToFloat(z[i]), r, 2 * app::ulpHalf(r) + 4 * kU32 * (std::fabs(ax) + std::fabs(by)));
    }
    return report("app_axpby", v, "2 ulp of float16");
}

/// Y = X rsqrt(mean(X^2) + eps) W, bfloat16, the shape of examples/rms_norm.tile's rms_norm_4096.
Outcome runRmsNorm(app::Inputs &in, CUstream stream) {
    const size_t M = 8192, N = 4096;
    auto x = in.bf16(M * N), w = in.bf16(N);
    DeviceBuffer dx(x), dw(w), dy(M * N * 2);
    dy.poison();
    Outcome o = launched("rms_norm_4096", rms_norm_4096(dx.get(), dw.get(), dy.get(), stream), stream);
    if (o != Outcome::Pass) return o;
    auto y = dy.download<uint16_t>();
    app::Verdict v;
    for (size_t i = 0; i < M; ++i) {
        double ss = 0;
        for (size_t j = 0; j < N; ++j) {
            double e = app::bf16ToFloat(x[i * N + j]);
            ss += e * e;
        }
        double scale = 1.0 / std::sqrt(ss / double(N) + 1e-6);
        for (size_t j = 0; j < N; ++j) {
            double r = app::bf16ToFloat(x[i * N + j]) * scale * app::bf16ToFloat(w[j]);
            v.add(i * N + j, app::bf16ToFloat(y[i * N + j]), r,
                  2 * app::ulpBf16(r) + double(N + 16) * kU32 * std::fabs(r));
        }
    }
    return report("rms_norm_4096", v, "2 ulp of bfloat16 + (N+16) u32 |R|");
}

#ifdef TILEC_APP_GEMM
/// C = A B, float16 in and out, float32 accumulation; M and N are not multiples of the 128x128 tiles.
Outcome runGemm(app::Inputs &in, CUstream stream) {
    const size_t M = 1000, N = 1000, K = 512;
    auto a = in.half(M * K), b = in.half(K * N);
    DeviceBuffer da(a), db(b), dc(M * N * 2);
    dc.poison();
    Outcome o = launched("app_gemm", app_gemm(da.get(), db.get(), dc.get(), stream), stream);
    if (o != Outcome::Pass) return o;
    auto c = dc.download<uint16_t>();
    // float64 reference R and sum |a b| per element, row by row (i, k, j order for the caches)
    std::vector<double> r(M * N, 0.0), mag(M * N, 0.0), bf(K * N);
    for (size_t i = 0; i < K * N; ++i) bf[i] = app::halfToFloat(b[i]);
    for (size_t i = 0; i < M; ++i) {
        double *ri = &r[i * N], *mi = &mag[i * N];
        for (size_t k = 0; k < K; ++k) {
            double aik = app::halfToFloat(a[i * K + k]);
            const double *bk = &bf[k * N];
            for (size_t j = 0; j < N; ++j) {
                ri[j] += aik * bk[j];
                mi[j] += std::fabs(aik * bk[j]);
            }
        }
    }
    const double u = 1.0 / 2048; // float16 operands and output
    app::Verdict v;
    for (size_t i = 0; i < M * N; ++i) v.add(i, app::halfToFloat(c[i]), r[i], 4 * u * mag[i] + u * std::fabs(r[i]));
    o = report("app_gemm", v, "4 u sum|ab| + u |R|");
#ifdef TILEC_APP_CUBLAS
    // cuBLAS on the same inputs: row-major C = A B is column-major C^T = B^T A^T
    cublasHandle_t h;
    DeviceBuffer dref(M * N * 2);
    const float one = 1, zero = 0;
    bool ok = cublasCreate(&h) == CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasSetStream(h, stream) == CUBLAS_STATUS_SUCCESS &&
         cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M), int(K), &one, db.get(), CUDA_R_16F, int(N),
                      da.get(), CUDA_R_16F, int(K), &zero, dref.get(), CUDA_R_16F, int(N), CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    cublasDestroy(h);
    if (!ok) {
        std::printf("FAIL app_gemm vs cuBLAS: cublasGemmEx failed\n");
        return Outcome::Fail;
    }
    auto ref = dref.download<uint16_t>();
    app::Verdict vc; // both within the bound of R: within twice the bound of each other
    for (size_t i = 0; i < M * N; ++i)
        vc.add(i, app::halfToFloat(c[i]), app::halfToFloat(ref[i]), 2 * (4 * u * mag[i] + u * std::fabs(r[i])));
    Outcome oc = report("app_gemm vs cuBLAS", vc, "twice the bound");
    if (oc == Outcome::Fail) o = oc;
#endif
    return o;
}
#endif

} // namespace

int main() {
    CUresult r = cuInit(0);
    int devices = 0;
    if (r == CUDA_SUCCESS) r = cuDeviceGetCount(&devices);
    if (r != CUDA_SUCCESS || devices == 0) {
        std::printf("SKIP: no usable GPU (%s)\n", r != CUDA_SUCCESS ? driverError(r).c_str() : "no CUDA device");
        return kSkip;
    }
    CUdevice dev;
    CUcontext ctx;
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    // the primary context: the one the CUDA runtime uses too, so both modes share it
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    char name[256] = {0};
    int major = 0, minor = 0;
    cuDeviceGetName(name, sizeof name - 1, dev);
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    const char *seedEnv = std::getenv("TILEC_APP_SEED");
    uint64_t seed = seedEnv ? std::strtoull(seedEnv, nullptr, 10)
                            : uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) & 0x3FFFFFFF;
    std::printf("app: %s (sm_%d%d), TILEC_ABI_VERSION %d, seed %" PRIu64 "\n", name, major, minor,
                TILEC_ABI_VERSION, seed);

    CUstream stream;
    check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    app::Inputs in(seed);
    std::vector<Outcome> outcomes{runAxpby(in, stream), runRmsNorm(in, stream)};
#ifdef TILEC_APP_GEMM
    outcomes.push_back(runGemm(in, stream));
#else
    std::printf("app: built without the GEMM (TILEC_APP_GEMM)\n");
#endif
    cuStreamDestroy(stream);
    cuDevicePrimaryCtxRelease(dev);

    int failed = 0, skipped = 0;
    for (Outcome o : outcomes) {
        failed += o == Outcome::Fail;
        skipped += o == Outcome::Skip;
    }
    if (failed) {
        std::printf("FAIL: %d of %zu kernels\n", failed, outcomes.size());
        return 1;
    }
    if (skipped) {
        std::printf("SKIP: %d of %zu kernels have no code for this GPU\n", skipped, outcomes.size());
        return kSkip;
    }
    std::printf("PASS: %zu kernels\n", outcomes.size());
    return 0;
}
