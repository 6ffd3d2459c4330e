/// \file
/// cuRAND's Philox4_32_10 (counter-based: ten rounds of multiply-xor over a 128-bit counter and a 64-bit key,
/// Salmon et al., SC'11) as cuRAND's device API steps it: curand_init skips `seq` subsequences of 2^66 numbers
/// (the counter's upper 64 bits) and `off` numbers (four per counter value), curand returns the four words of each
/// counter value in turn. Written from cuRAND's documented behaviour and checked against its output in
/// tests/unit/LowerSimRandomTest.cpp.
#include "sim/SimulatorRandom.h"

#include <cmath>

namespace tilec::simtest {

namespace {

struct Philox {
    uint32_t ctr[4], out[4], key[2], state;
};

void round(uint32_t c[4], const uint32_t k[2]) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0), hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    const uint32_t r[4] = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    for (int i = 0; i < 4; ++i) c[i] = r[i];
}

void generate(Philox &s) {
    uint32_t c[4] = {s.ctr[0], s.ctr[1], s.ctr[2], s.ctr[3]}, k[2] = {s.key[0], s.key[1]};
    for (int r = 0; r < 10; ++r) {
        if (r) k[0] += 0x9E3779B9u, k[1] += 0xBB67AE85u;
        round(c, k);
    }
    for (int i = 0; i < 4; ++i) s.out[i] = c[i];
}

/// The 128-bit counter plus n << (32 * from).
void add(Philox &s, uint64_t n, int from) {
    uint64_t carry = 0;
    for (int i = from; i < 4; ++i) {
        uint64_t sum = uint64_t(s.ctr[i]) + (i - from < 2 ? uint32_t(n >> (32 * (i - from))) : 0) + carry;
        s.ctr[i] = uint32_t(sum);
        carry = sum >> 32;
    }
}

Philox load(const double *w) {
    Philox s;
    for (int i = 0; i < 4; ++i) s.ctr[i] = uint32_t(w[i]), s.out[i] = uint32_t(w[4 + i]);
    s.key[0] = uint32_t(w[8]);
    s.key[1] = uint32_t(w[9]);
    s.state = uint32_t(w[10]);
    return s;
}

void store(double *w, const Philox &s) {
    for (int i = 0; i < 4; ++i) w[i] = s.ctr[i], w[4 + i] = s.out[i];
    w[8] = s.key[0];
    w[9] = s.key[1];
    w[10] = s.state;
    for (int i = 11; i < 16; ++i) w[i] = 0; // the Box-Muller fields curand_init clears
}

} // namespace

void philoxInit(double *w, uint64_t seed, uint64_t seq, uint64_t off) {
    Philox s{};
    s.key[0] = uint32_t(seed);
    s.key[1] = uint32_t(seed >> 32);
    add(s, seq, 2);                // the subsequence: the counter's upper half
    s.state = uint32_t(off & 3);   // the offset: whole counter values, then a word within one
    add(s, off / 4, 0);
    generate(s);
    store(w, s);
}

uint32_t philoxNext(double *w) {
    Philox s = load(w);
    const uint32_t r = s.out[s.state & 3];
    if (++s.state == 4) {
        add(s, 1, 0);
        generate(s);
        s.state = 0;
    }
    store(w, s);
    return r;
}

float philoxUniform(double *w) {
    const float scale = 2.3283064e-10f; // 2^-32, as cuRAND's CURAND_2POW32_INV
    // x * scale + scale / 2, which nvcc contracts into one fused multiply-add
    return std::fmaf(float(philoxNext(w)), scale, scale / 2.0f);
}

} // namespace tilec::simtest
