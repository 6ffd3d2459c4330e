// tilec device runtime: float32 to fp4 (e2m1: a sign bit, two exponent bits, exponent 1 meaning 2^0, one mantissa
// bit; the magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6) by integer and float arithmetic, for sm_80 and sm_90, which have no
// conversion instruction for it (cvt.rn.satfinite.e2m1x2.f32 is sm_100a's). Rounding to nearest, ties to the
// even code, magnitudes past 6 (infinity too) to 6, NaN to code 0, the sign bit for values below zero (so -0.0
// is code 0 and -0.1 is code 8, a negative zero). The functions also compile as host C++ (the CPU simulator
// and the unit tests run the same arithmetic), with no header of their own.
#ifndef TILEC_STDLIB_FP4_CUH
#define TILEC_STDLIB_FP4_CUH

#include <stdint.h>

#if defined(__CUDACC__)
#define TILEC_FP4_FN __host__ __device__ __forceinline__
#else
#define TILEC_FP4_FN inline
#endif

namespace tilec {

namespace fp4_detail {

TILEC_FP4_FN uint32_t bits(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    uint32_t u;
    __builtin_memcpy(&u, &x, sizeof u);
    return u;
#endif
}

/// |x| clamped to [0, 6]; every NaN to 0. The GPU's fmaxf (max.f32) returns its other operand for any NaN; the
/// host's may return a quiet NaN for a signalling one, so the host compares instead.
TILEC_FP4_FN float magnitude(float x) {
#if defined(__CUDA_ARCH__)
    return fminf(fmaxf(fabsf(x), 0.0f), 6.0f);
#else
    const float a = __builtin_fabsf(x);
    return a >= 0.0f ? (a < 6.0f ? a : 6.0f) : 0.0f;
#endif
}

TILEC_FP4_FN float fused(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return fmaf(a, b, c);
#else
    return __builtin_fmaf(a, b, c);
#endif
}

} // namespace fp4_detail

/// The code (0 .. 7) of magnitude a in [0, 6]. From 1 on, the codes 2 .. 7 are float32's exponent and top mantissa
/// bit (exponent 127 is code 2): the 22 bits below rounded to nearest, ties to even, by one integer add whose carry
/// may step the exponent. Below 1 the codes 0, 1, 2 are 2a rounded to the nearest integer, ties to even: float32's
/// own rounding of 2a + 1.5 * 2^23, whose last mantissa bits are then that integer.
TILEC_FP4_FN uint32_t fp4_magnitude_code(float a) {
    const uint32_t b = fp4_detail::bits(a);
    const uint32_t high = ((b + 0x1fffffu + ((b >> 22) & 1u)) >> 22) - 252u;
    const uint32_t low = fp4_detail::bits(fp4_detail::fused(a, 2.0f, 12582912.0f)) - 0x4b400000u;
    return a < 1.0f ? low : high;
}

/// The fp4 code of x (0 .. 15), as the file's comment says.
TILEC_FP4_FN int fp4_code(float x) {
    return (int)(fp4_magnitude_code(fp4_detail::magnitude(x)) | (x < 0.0f ? 8u : 0u));
}

/// The byte of two fp4 codes: lo's in bits 0-3, hi's in bits 4-7 (element 2k and 2k + 1 of packed memory).
TILEC_FP4_FN int fp4x2_code(float lo, float hi) { return fp4_code(lo) | fp4_code(hi) << 4; }

} // namespace tilec

#undef TILEC_FP4_FN

#endif // TILEC_STDLIB_FP4_CUH
