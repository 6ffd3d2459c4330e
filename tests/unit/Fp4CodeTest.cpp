/// \file
/// The device library's float-to-fp4 conversion (stdlib/tilec/fp4.cuh, integer arithmetic on the float's bits),
/// compiled here as host C++, against the definition it replaced in the front end (seven comparisons of |x| with
/// the midpoints between fp4's magnitudes): bit-exact on every float whose magnitude is in [1/8, 8), where all the
/// rounding happens, both signs; on every sign and exponent (zeros, subnormals, infinities, NaNs) with mantissas
/// around their rounding bits; and on the 2^16 floats either side of each midpoint and each end.
#include "tilec/fp4.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

float fromBits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

uint32_t bitsOf(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

/// Nearest of 0, 0.5, 1, 1.5, 2, 3, 4, 6 (a midpoint to the even code: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2,
/// 2.5 -> 2, 3.5 -> 4, 5 -> 4; past 5 -> 6), the sign bit for x < 0 (not for -0.0 or a NaN), NaN to 0.
int reference(float x) {
    bool neg = x < 0.0f;
    float a = neg ? -x : x;
    int mag = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
    return mag + (neg ? 8 : 0);
}

/// Counts the floats of bit patterns [first, last] whose code differs from the reference; names the first.
int64_t mismatches(uint64_t first, uint64_t last, std::string *example) {
    int64_t bad = 0;
    for (uint64_t u = first; u <= last; ++u) {
        float x = fromBits((uint32_t)u);
        int got = tilec::fp4_code(x), want = reference(x);
        if (got != want && bad++ == 0)
            *example = "bits " + std::to_string(u) + " (" + std::to_string(x) + "): " + std::to_string(got) +
                       " instead of " + std::to_string(want);
    }
    return bad;
}

TEST(Fp4Code, EveryFloatWhereRoundingHappens) {
    // |x| in [0.125, 8): exponents 124 .. 129, every mantissa, both signs (1/8 and below round to 0, 8 and up to 6).
    std::string ex;
    for (uint32_t sign : {0u, 0x80000000u}) {
        uint64_t first = sign | bitsOf(0.125f), last = sign | (bitsOf(8.0f) - 1);
        EXPECT_EQ(mismatches(first, last, &ex), 0) << ex;
    }
}

TEST(Fp4Code, EverySignAndExponentAroundTheRoundingBits) {
    // Every sign and exponent (zeros, subnormals, the largest floats, infinities, NaNs), the top 12 mantissa bits
    // all, the 11 below them at the values that decide a rounding (0, 1, the half and its neighbours, all ones).
    std::string ex;
    int64_t bad = 0;
    for (uint32_t se = 0; se < 512; ++se)
        for (uint32_t top = 0; top < 4096; ++top)
            for (uint32_t low : {0u, 1u, 0x3ffu, 0x400u, 0x401u, 0x7ffu}) {
                uint32_t u = se << 23 | top << 11 | low;
                bad += mismatches(u, u, &ex);
            }
    EXPECT_EQ(bad, 0) << ex;
}

TEST(Fp4Code, TwoToTheSixteenFloatsEitherSideOfEachMidpointAndEnd) {
    std::string ex;
    for (float b : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f, 8.0f,
                    3.4028235e38f, INFINITY})
        for (uint32_t sign : {0u, 0x80000000u}) {
            uint64_t c = sign | bitsOf(b);
            uint64_t lo = (c & 0x7fffffffu) >= 65536 ? c - 65536 : (c & 0x80000000u), hi = std::min<uint64_t>(c + 65536, sign | 0x7fffffffu);
            EXPECT_EQ(mismatches(lo, hi, &ex), 0) << "around " << b << ": " << ex;
        }
}

TEST(Fp4Code, SpecialValues) {
    EXPECT_EQ(tilec::fp4_code(0.0f), 0);
    EXPECT_EQ(tilec::fp4_code(-0.0f), 0);            // not below zero: no sign bit
    EXPECT_EQ(tilec::fp4_code(-0.1f), 8);            // a negative value rounding to zero keeps its sign
    EXPECT_EQ(tilec::fp4_code(NAN), 0);
    EXPECT_EQ(tilec::fp4_code(-NAN), 0);
    EXPECT_EQ(tilec::fp4_code(INFINITY), 7);
    EXPECT_EQ(tilec::fp4_code(-INFINITY), 15);
    EXPECT_EQ(tilec::fp4_code(1.25f), 2);            // ties to the even code
    EXPECT_EQ(tilec::fp4_code(1.75f), 4);
    EXPECT_EQ(tilec::fp4_code(-5.0f), 14);
    EXPECT_EQ(tilec::fp4_code(std::nextafter(5.0f, 6.0f)), 7);
    EXPECT_EQ(tilec::fp4_code(1e-45f), 0);           // the smallest subnormal
}

TEST(Fp4Code, PairsPackTheLowElementInTheLowNibble) {
    const std::vector<float> v = {0.0f, -0.0f, 0.25f, 0.2500001f, -0.75f, 1.25f, -1.7499999f, 2.5f, 3.5f, -5.0f, 6.0f,
                                  7.0f, -1e30f, INFINITY, NAN, 1e-40f, -1e-40f};
    for (float lo : v)
        for (float hi : v) EXPECT_EQ(tilec::fp4x2_code(lo, hi), reference(lo) | reference(hi) << 4) << lo << ", " << hi;
}

} // namespace
