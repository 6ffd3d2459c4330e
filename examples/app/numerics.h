/// \file
/// Host-side numerics of the example application: float16 / bfloat16 conversions, the unit in the last
/// place, and a seeded generator of non-zero inputs. Plain C++, so the application needs no CUDA headers for
/// them (the generated kernels take float16 and bfloat16 tensors as `void *`).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace app {

inline uint32_t bitsOf(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float floatOf(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

/// float16 bits -> float, exactly (subnormals, infinities and NaN included: outputs are poisoned with NaN).
inline float halfToFloat(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    if (exp == 0x1F) return floatOf(sign | 0x7F800000u | (mant << 13));
    if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(float(mant), -24); // zero and subnormals
    return floatOf(sign | ((exp + 112) << 23) | (mant << 13));
}

/// float -> float16 bits, rounded to nearest even; only used on inputs, which are normal float16 numbers.
inline uint16_t floatToHalf(float f) {
    uint32_t u = bitsOf(f), sign = (u >> 16) & 0x8000;
    int exp = int((u >> 23) & 0xFF) - 127 + 15;
    uint32_t mant = u & 0x7FFFFF;
    if (exp <= 0 || exp >= 0x1F) return uint16_t(sign); // out of the inputs' range: never generated
    uint32_t h = (uint32_t(exp) << 10) | (mant >> 13), rest = mant & 0x1FFF;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h; // a carry into the exponent is still right
    return uint16_t(sign | h);
}

inline float bf16ToFloat(uint16_t b) { return floatOf(uint32_t(b) << 16); }
inline uint16_t floatToBf16(float f) {
    uint32_t u = bitsOf(f);
    return uint16_t((u + 0x7FFF + ((u >> 16) & 1)) >> 16); // nearest even; inputs are finite
}

/// The unit in the last place of `x` in a format with `mantBits` stored mantissa bits and smallest normal
/// exponent `minExp` (float16: 10, -14; bfloat16: 7, -126).
inline double ulp(double x, int mantBits, int minExp) {
    int e = x == 0 ? minExp : std::max(std::ilogb(x), minExp);
    return std::ldexp(1.0, e - mantBits);
}
inline double ulpHalf(double x) { return ulp(x, 10, -14); }
inline double ulpBf16(double x) { return ulp(x, 7, -126); }

/// Inputs: fresh random values each run, never zero, magnitudes in [1/16, 1] with either sign.
class Inputs {
public:
    explicit Inputs(uint64_t seed) : rng_(seed) {}
    float next() {
        float m = std::uniform_real_distribution<float>(0.0625f, 1.0f)(rng_);
        return (rng_() & 1) ? -m : m;
    }
    std::vector<uint16_t> half(size_t n) {
        std::vector<uint16_t> v(n);
        for (auto &x : v) x = floatToHalf(next());
        return v;
    }
    std::vector<uint16_t> bf16(size_t n) {
        std::vector<uint16_t> v(n);
        for (auto &x : v) x = floatToBf16(next());
        return v;
    }

private:
    std::mt19937_64 rng_;
};

/// Counts the elements outside their bound and remembers the worst one, for the report.
struct Verdict {
    size_t checked = 0, bad = 0, worstIndex = 0;
    double worstRatio = 0, worstGot = 0, worstWant = 0;
    void add(size_t i, double got, double want, double bound) {
        ++checked;
        double err = std::fabs(got - want);
        bool ok = err <= bound; // false for NaN: a poisoned element that was never written fails
        double ratio = std::isnan(err) ? INFINITY : err / bound;
        if (!ok) ++bad;
        if (ratio > worstRatio) {
            worstRatio = ratio, worstIndex = i, worstGot = got, worstWant = want;
        }
    }
    bool passed() const { return checked > 0 && bad == 0; }
};

} // namespace app
