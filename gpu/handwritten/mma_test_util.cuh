/// \file
/// Host-side helpers of mma_test.cu: element types on the host, random operands, device buffers, the
/// accumulator register order, and the pass/fail bookkeeping.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace mma_test {

// Whether the code being compiled has float8 mma.sync (a compute_80 build running on the H200 does not).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
constexpr bool kDeviceHasFp8 = false;
#else
constexpr bool kDeviceHasFp8 = true;
#endif

using Rng = std::mt19937_64;

template <class T> const char *type_name() {
    if (std::is_same<T, __half>::value)
        return "f16";
    if (std::is_same<T, __nv_bfloat16>::value)
        return "bf16";
    if (std::is_same<T, float>::value)
        return "f32";
    if (std::is_same<T, int8_t>::value)
        return "s8";
    if (std::is_same<T, uint8_t>::value)
        return "u8";
    if (std::is_same<T, int32_t>::value)
        return "s32";
    if (std::is_same<T, __nv_fp8_e4m3>::value)
        return "e4m3";
    if (std::is_same<T, __nv_fp8_e5m2>::value)
        return "e5m2";
    return "?";
}

inline double to_double(__half x) {
    return __half2float(x);
}
inline double to_double(__nv_bfloat16 x) {
    return __bfloat162float(x);
}
inline double to_double(__nv_fp8_e4m3 x) {
    return (float)x;
}
inline double to_double(__nv_fp8_e5m2 x) {
    return (float)x;
}
inline double to_double(float x) {
    return x;
}
inline double to_double(int8_t x) {
    return x;
}
inline double to_double(uint8_t x) {
    return x;
}
inline double to_double(int32_t x) {
    return x;
}

/// `x` rounded to T (exact inputs only: the values used here fit in float).
template <class T> T from_double_host(double x) {
    if constexpr (std::is_same<T, __half>::value)
        return __float2half_rn((float)x);
    else if constexpr (std::is_same<T, __nv_bfloat16>::value)
        return __float2bfloat16_rn((float)x);
    else if constexpr (std::is_same<T, __nv_fp8_e4m3>::value || std::is_same<T, __nv_fp8_e5m2>::value)
        return T((float)x);
    else
        return (T)x;
}

/// Random operands. 16-bit and float8 values have few significant bits, so that products and their sums are
/// exact in float and a mismatch is a bug, not rounding; float operands are arbitrary, to exercise the
/// rounding to tf32.
template <class T> T random_value(Rng &rng) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    if constexpr (std::is_same<T, float>::value)
        return std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
    else if constexpr (std::is_same<T, __nv_fp8_e4m3>::value)
        return from_double_host<T>(pick(-15, 15) / 8.0);
    else if constexpr (std::is_same<T, __nv_fp8_e5m2>::value)
        return from_double_host<T>(pick(-7, 7) / 4.0);
    else if constexpr (std::is_same<T, int8_t>::value)
        return (int8_t)pick(-128, 127);
    else if constexpr (std::is_same<T, uint8_t>::value)
        return (uint8_t)pick(0, 255);
    else if constexpr (std::is_same<T, int32_t>::value)
        return pick(-1000, 1000);
    else
        return from_double_host<T>(pick(-8, 8) / 8.0);
}

/// The error bound, relative to sum |a * b| + |c| of the element.
template <class TA, class TC> double tolerance() {
    if (std::is_same<TC, int32_t>::value)
        return 0.0;
    if (std::is_same<TC, __half>::value)
        return 4e-3; // the f16 accumulator rounds at every k-step
    if (std::is_same<TA, float>::value)
        return 1.5e-3; // both operands rounded to tf32 (2^-11 each)
    if (sizeof(TA) == 1)
        return 1e-3; // float8: the accumulation may be narrower than fp32
    return 1e-5;
}

/// A stored operand tile in global memory: rows x cols with a padded leading dimension, random everywhere,
/// of which validRows x validCols are to be read (the rest must arrive as zeros).
template <class T> struct Operand {
    int rows, cols, validRows, validCols;
    long long ld;
    std::vector<T> data;
    Operand(Rng &rng, int r, int c, int vec, bool partial) : rows(r), cols(c) {
        ld = cols + 16 / (int)sizeof(T);
        data.resize((size_t)(rows * ld));
        for (auto &x : data)
            x = random_value<T>(rng);
        if (partial) {
            validRows = rows - rows / 4 - 1;
            validCols = std::max(vec, (cols - cols / 4 - 1) / vec * vec);
        } else {
            validRows = rows + 5; // beyond the tile: allowed, and nothing beyond is read
            validCols = cols + 1000;
        }
    }
    double at(int r, int c) const {
        return r < validRows && c < validCols ? to_double(data[r * ld + c]) : 0.0;
    }
};

template <class T> struct DevBuf {
    T *p = nullptr;
    size_t n;
    explicit DevBuf(size_t count) : n(count) { cudaMalloc(&p, n * sizeof(T) + 16); }
    explicit DevBuf(const std::vector<T> &v) : DevBuf(v.size()) {
        cudaMemcpy(p, v.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    }
    ~DevBuf() { cudaFree(p); }
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    std::vector<T> get() const {
        std::vector<T> v(n);
        cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
        return v;
    }
};

/// The accumulator register order of stdlib/tilec/mma.cuh: register i of the calling thread is element
/// (row, col) of the M x N tile; index() gives row * N + col.
template <int M, int N, int WM, int WN> struct AccMap {
    static constexpr int WTM = M / WM, WTN = N / WN, NT = WTN / 8;
    __device__ int index(int i) const {
        const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
        const int wm = warp % WM, wn = warp / WM;
        const int c = i % 2, h = (i / 2) % 2, tile = i / 4, mi = tile / NT, ni = tile % NT;
        const int row = wm * WTM + mi * 16 + h * 8 + lane / 4, col = wn * WTN + ni * 8 + (lane % 4) * 2 + c;
        return row * N + col;
    }
};

/// Compares a result tile element by element and remembers the worst and the first failure.
struct Checker {
    double tol, worst = 0;
    int bad = 0, badM = -1, badN = -1;
    double badGot = 0, badWant = 0;
    explicit Checker(double t) : tol(t) {}
    void check(int m, int n, double got, double want, double mag) {
        const double err = std::fabs(got - want), bound = tol * mag + 1e-6;
        if (tol == 0.0 ? !(got == want) : !(err <= bound)) {
            if (bad++ == 0)
                badM = m, badN = n, badGot = got, badWant = want;
        }
        if (mag > 0)
            worst = std::max(worst, err / mag);
    }
    bool ok() const { return bad == 0; }
    std::string text() const {
        char buf[200];
        if (bad == 0)
            std::snprintf(buf, sizeof buf, "max rel err %.2e", worst);
        else
            std::snprintf(buf, sizeof buf, "%d bad, first (%d, %d) = %.6g, want %.6g", bad, badM, badN,
                          badGot, badWant);
        return buf;
    }
};

struct Summary {
    int arch = 0, passed = 0, failed = 0, skipped = 0;
    void vline(const char *tag, const char *fmt, va_list ap) {
        std::printf("%s ", tag);
        std::vprintf(fmt, ap);
        std::printf("\n");
        std::fflush(stdout);
    }
    void report(bool ok, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vline(ok ? "PASS" : "FAIL", fmt, ap);
        va_end(ap);
        (ok ? passed : failed)++;
    }
    void skip(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vline("SKIP", fmt, ap);
        va_end(ap);
        skipped++;
    }
    int finish() const {
        std::printf("mma_test (device code sm_%d): %d passed, %d failed, %d skipped\n", arch / 10, passed,
                    failed, skipped);
        return failed == 0 && passed > 0 ? 0 : 1;
    }
};

/// Synchronizes and reports an error of the last kernel (a trap or a launch failure).
inline bool last_error_ok() {
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        e = cudaGetLastError();
    if (e != cudaSuccess)
        std::printf("  CUDA error: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess;
}

__global__ void arch_kernel(int *out) {
#ifdef __CUDA_ARCH__
    *out = __CUDA_ARCH__;
#endif
}

/// The __CUDA_ARCH__ the device code was compiled for (800 for compute_80 running on sm_90), or -1.
inline int device_arch() {
    int *d = nullptr, v = -1;
    if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) {
        std::printf("FAIL no usable CUDA device: %s\n", cudaGetErrorString(cudaGetLastError()));
        return -1;
    }
    arch_kernel<<<1, 1>>>(d);
    if (!last_error_ok())
        return -1;
    cudaMemcpy(&v, d, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(d);
    cudaDeviceProp prop{};
    int dev = 0;
    cudaGetDevice(&dev);
    cudaGetDeviceProperties(&prop, dev);
    std::printf("device %s (sm_%d%d), device code compiled for sm_%d\n", prop.name, prop.major, prop.minor,
                v / 10);
    return v;
}

} // namespace mma_test
