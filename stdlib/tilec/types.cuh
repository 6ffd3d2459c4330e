// tilec device runtime: element types, conversions and the arithmetic of narrow floats.
// Part of tilec (https://github.com/...); embedded into generated code, which must compile on its own.
#ifndef TILEC_STDLIB_TYPES_CUH
#define TILEC_STDLIB_TYPES_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

namespace tilec {

// Narrow floats compute in float: each operation rounds its float result once to the narrow type, which
// is the correctly rounded result of that operation (float has more than twice their precision).
template <class T> struct is_narrow_float : std::false_type {};
template <> struct is_narrow_float<__half> : std::true_type {};
template <> struct is_narrow_float<__nv_bfloat16> : std::true_type {};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <class T> __device__ __forceinline__ T from_double(double x) { return from_float<T>((float)x); }
template <> __device__ __forceinline__ __half from_double<__half>(double x) { return __double2half(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_double<__nv_bfloat16>(double x) { return __double2bfloat16(x); }

template <class T> struct int_limits;
#define TILEC_INT_LIMITS(T, LO, HI)                                                                          \
    template <> struct int_limits<T> {                                                                       \
        static constexpr T lo = LO, hi = HI;                                                                 \
    };
TILEC_INT_LIMITS(int8_t, -128, 127)
TILEC_INT_LIMITS(int16_t, -32768, 32767)
TILEC_INT_LIMITS(int32_t, (-2147483647 - 1), 2147483647)
TILEC_INT_LIMITS(int64_t, (-9223372036854775807LL - 1), 9223372036854775807LL)
TILEC_INT_LIMITS(uint8_t, 0, 255)
TILEC_INT_LIMITS(uint16_t, 0, 65535)
TILEC_INT_LIMITS(uint32_t, 0u, 4294967295u)
TILEC_INT_LIMITS(uint64_t, 0ull, 18446744073709551615ull)
#undef TILEC_INT_LIMITS

// Float to integer: truncation toward zero, clamped to the integer's range, NaN to 0 (never undefined).
template <class To, class F> __device__ __forceinline__ To saturate_int(F x) {
    if (!(x == x)) return To(0);
    if (x <= (F)int_limits<To>::lo) return int_limits<To>::lo;
    if (x >= (F)int_limits<To>::hi) return int_limits<To>::hi;
    return (To)x;
}

template <class T> struct is_fp8 : std::false_type {};

// float8 (e4m3, e5m2): narrowing saturates to the largest finite value (__NV_SATFINITE), so out-of-range
// values clamp instead of becoming NaN; NaN stays NaN.
template <> struct is_fp8<__nv_fp8_e4m3> : std::true_type {};
template <> struct is_fp8<__nv_fp8_e5m2> : std::true_type {};

__device__ __forceinline__ float to_float(__nv_fp8_e4m3 x) { return (float)x; }
__device__ __forceinline__ float to_float(__nv_fp8_e5m2 x) { return (float)x; }

template <> __device__ __forceinline__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) {
    __nv_fp8_e4m3 r;
    r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    return r;
}
template <> __device__ __forceinline__ __nv_fp8_e5m2 from_float<__nv_fp8_e5m2>(float x) {
    __nv_fp8_e5m2 r;
    r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
    return r;
}
template <> __device__ __forceinline__ __nv_fp8_e4m3 from_double<__nv_fp8_e4m3>(double x) {
    __nv_fp8_e4m3 r;
    r.__x = __nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    return r;
}
template <> __device__ __forceinline__ __nv_fp8_e5m2 from_double<__nv_fp8_e5m2>(double x) {
    __nv_fp8_e5m2 r;
    r.__x = __nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
    return r;
}

// The conversion every T.cast and implicit promotion goes through.
template <class To, class From> __device__ __forceinline__ To cast(From x) {
    if constexpr (std::is_same_v<To, From>) {
        return x;
    } else if constexpr (std::is_same_v<To, bool>) {
        if constexpr (is_narrow_float<From>::value || is_fp8<From>::value) return to_float(x) != 0.0f;
        else return x != From(0);
    } else if constexpr (is_narrow_float<From>::value || is_fp8<From>::value) {
        return cast<To>(to_float(x)); // exact: every narrow float is a float
    } else if constexpr (is_narrow_float<To>::value || is_fp8<To>::value) {
        if constexpr (std::is_same_v<From, double> || std::is_same_v<From, int64_t> || std::is_same_v<From, uint64_t>)
            return from_double<To>((double)x);
        else return from_float<To>((float)x);
    } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
        return saturate_int<To>(x);
    } else {
        return (To)x;
    }
}

// Two floats to two adjacent 16-bit floats at dst (4-byte aligned; lo at dst[0]) by one conversion of the pair
// (cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32: round to nearest even, each element exactly as cast<To> rounds it),
// which lands in one 32-bit register, already packed the way mma and wgmma read 16-bit operands. Float8: two
// bytes (2-byte aligned) by one cvt.rn.satfinite.e4m3x2 / e5m2x2.f32, saturating like cast<To>.
template <class To> __device__ __forceinline__ void cast_pair(To *dst, float lo, float hi) {
    static_assert(std::is_same_v<To, __half> || std::is_same_v<To, __nv_bfloat16> || is_fp8<To>::value,
                  "pairs of float16, bfloat16 or float8");
    if constexpr (std::is_same_v<To, __half>) *reinterpret_cast<__half2 *>(dst) = __floats2half2_rn(lo, hi);
    else if constexpr (std::is_same_v<To, __nv_bfloat16>) *reinterpret_cast<__nv_bfloat162 *>(dst) = __floats2bfloat162_rn(lo, hi);
    else
        *reinterpret_cast<__nv_fp8x2_storage_t *>(dst) = __nv_cvt_float2_to_fp8x2(
            make_float2(lo, hi), __NV_SATFINITE, std::is_same_v<To, __nv_fp8_e4m3> ? __NV_E4M3 : __NV_E5M2);
}

// T.reinterpret(x, dtype): the same bits as another type of the same width (a byte copy is how C++ spells it;
// nvcc compiles it to a register move). CUDA's device memcpy needs no header, under nvcc and NVRTC alike;
// __builtin_memcpy is unknown to NVRTC (session 42: every kernel with T.reinterpret failed --emit=cubin).
template <class To, class From> __device__ __forceinline__ To bit_cast(From x) {
    static_assert(sizeof(To) == sizeof(From), "T.reinterpret keeps the width");
    To r;
    memcpy(&r, &x, sizeof(To));
    return r;
}

template <class T> __device__ __forceinline__ T sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// --use_fast_math / "tl.enable_fast_math" (src/codegen/CodegenExpr.cpp): exp2f as nvcc -use_fast_math compiles
// it, one MUFU.EX2 with subnormal results flushed to zero; CUDA has no intrinsic for it (__expf scales its
// argument first), so the PTX instruction is written here.
__device__ __forceinline__ float fast_exp2f(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float fast_sigmoid(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }

// Python's floor division and modulo of integers (the operands are not known to be non-negative).
template <class T> __device__ __forceinline__ T floordiv(T a, T b) {
    T q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <class T> __device__ __forceinline__ T floormod(T a, T b) {
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

} // namespace tilec

#endif // TILEC_STDLIB_TYPES_CUH
