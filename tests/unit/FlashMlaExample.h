/// \file
/// TileLang's examples/warp_specialize/example_warp_specialize_flashmla.py for the simulator tests
/// (LowerSimPanelPartsTest, LowerSimProgramWaitsTest): its source with a reduced instantiation (batch 1, 64 heads,
/// dim 256, pe_dim 64, seqlen_kv 256: two 64-column parts per half, two loop iterations), inputs of a few bits,
/// and the float64 attention it computes.
#pragma once

#include "LowerSimUtil.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

namespace tilec::simtest {

struct FlashMlaExample {
    static constexpr int H = 64, DIM = 256, PE = 64, S = 256;
    std::vector<double> q, qpe, kv, kpe, want;

    static constexpr const char *kNoSource = "set TILELANG_SRC to a TileLang git checkout (tag v0.1.13)";

    /// The example's flashattn (unchanged, from the TileLang checkout TILELANG_SRC names) at the reduced shape;
    /// empty without a checkout.
    static std::string source() {
        std::string src = tilelangExample("warp_specialize/example_warp_specialize_flashmla.py");
        return src.empty() ? src : src + "\n\nkernel = flashattn(1, 64, 1, 256, 256, 64, 64, 64, 1)\n";
    }

    FlashMlaExample() {
        // float16 inputs (the simulator rounds what it stores in float16 tiles): values of a few bits
        auto data = [](size_t n, unsigned seed) {
            std::vector<double> v = randomData(n, seed, -1, 1);
            for (auto &x : v) x = std::round(x * 64) / 64;
            return v;
        };
        q = data((size_t)H * DIM, 11), qpe = data((size_t)H * PE, 12), kv = data((size_t)S * DIM, 13), kpe = data((size_t)S * PE, 14);
        // softmax(q k^T / sqrt(dim + pe_dim)) v in float64, v = kv
        want.assign((size_t)H * DIM, 0);
        for (int h = 0; h < H; ++h) {
            std::vector<double> s(S);
            double mx = -INFINITY, sum = 0;
            for (int t = 0; t < S; ++t) {
                double x = 0;
                for (int d = 0; d < DIM; ++d) x += q[(size_t)h * DIM + d] * kv[(size_t)t * DIM + d];
                for (int d = 0; d < PE; ++d) x += qpe[(size_t)h * PE + d] * kpe[(size_t)t * PE + d];
                s[t] = x / std::sqrt((double)(DIM + PE));
                mx = std::max(mx, s[t]);
            }
            for (int t = 0; t < S; ++t) sum += s[t] = std::exp(s[t] - mx);
            for (int t = 0; t < S; ++t)
                for (int d = 0; d < DIM; ++d) want[(size_t)h * DIM + d] += s[t] / sum * kv[(size_t)t * DIM + d];
        }
    }

    /// One run of `k` under interleaving `seed`, its output compared with `want` (2e-3: P is cast to float16
    /// before P V, the output stored in float16).
    Outcome run(const ir::Kernel &k, uint64_t seed) {
        std::vector<double> out((size_t)H * DIM, NAN), glse(H, 0), partial((size_t)H * DIM, 0);
        Outcome o = runCaught(k, {{"Q", &q}, {"Q_pe", &qpe}, {"KV", &kv}, {"K_pe", &kpe}, {"glse", &glse},
                                  {"Output_partial", &partial}, {"Output", &out}}, {}, seed);
        for (size_t i = 0; i < out.size(); ++i)
            o.check(std::abs(out[i] - want[i]) <= 2e-3, [&] { return "Output[" + std::to_string(i) + "]"; });
        return o;
    }

    /// A clean, right run of `k` under each interleaving of `seeds` (a test failure for an error, a race or a wrong
    /// element).
    void expectRight(const ir::Kernel &k, std::initializer_list<uint64_t> seeds) {
        for (uint64_t seed : seeds) {
            SCOPED_TRACE("interleaving " + std::to_string(seed));
            Outcome o = run(k, seed);
            EXPECT_EQ(o.error, "");
            for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
            EXPECT_EQ(o.wrong, 0) << o.firstWrong;
        }
    }
};

} // namespace tilec::simtest
