/// \file
/// --mixed-warp-roles (LoweringOptions::mixedWarpRoles): a T.Pipelined loop whose products run on wgmma beside one
/// wgmma cannot take takes warp roles, that product on mma.sync over the TMA tiles' panels (gemm_ss_panels).
/// TileLang's attention_sink/example_gqa_sink_bwd_bhsd.py (v0.1.13, read from $TILELANG_SRC), flashattn_bwd at
/// its sm_90 configuration (block_M 128, block_N 32, 2 stages, 256 threads): dQ's 32 x 64 product over two
/// warpgroups is not wgmma's, its operands K_shared (a TMA tile loaded once) and dsT_shared (filled by the
/// consumers). Run on the CPU simulator under three interleavings (a race or a simulator error fails), its dQ, dK
/// and dV against the same kernel lowered without the switch (the cp.async path, which has run right on the GPU).
/// Without TILELANG_SRC, the same loop written here (tests/lit/codegen/mixed_warp_roles.tile's kernel) against
/// its float64 mathematics.
#include "LowerSimUtil.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace {

namespace sim = tilec::simtest;
using tilec::lowertest::LowerRun;

/// The example's flashattn_bwd at 4 heads over 2 KV heads, 256 positions, head dimension 64, lowered for sm_90a
/// with or without the switch.
const tilec::ir::Kernel *lowered(LowerRun &r, const std::string &src, bool mixed) {
    tilec::Variant v{*tilec::Target::parse("sm_90a"), {}};
    v.options.mixedWarpRoles = mixed;
    r.run(src + "\nk = flashattn_bwd(1, 4, 256, 64, 2, None, dtype='float16')\n", "example_gqa_sink_bwd_bhsd.py", v);
    if (!r.lowered) return nullptr;
    if (mixed) return sim::warpRoles(r);
    return r.lowered->kernels.empty() ? nullptr : r.lowered->kernels[0].get();
}

/// The loop of attention backward's products: per block of M key rows, S = K Q_k^T (M x N, float16), dK += S Q_k,
/// dV += S dO_k, dQ_k += S^T K (N x D: 32 rows over two warpgroups, not wgmma's).
const char *kLoop = R"(import tilelang.language as T

def kq_bwd(M, N, D, S):
    @T.prim_func
    def main(K: T.Tensor((S, D), "float16"), Q: T.Tensor((S, D), "float16"), dO: T.Tensor((S, D), "float16"),
             dQ: T.Tensor((S, D), "float32"), dK: T.Tensor((S, D), "float32"), dV: T.Tensor((S, D), "float32")):
        with T.Kernel(S // M, threads=256) as bx:
            K_s = T.alloc_shared((M, D), "float16")
            q_s = T.alloc_shared((N, D), "float16")
            do_s = T.alloc_shared((N, D), "float16")
            s_sh = T.alloc_shared((M, N), "float16")
            s = T.alloc_fragment((M, N), "float32")
            s_cast = T.alloc_fragment((M, N), "float16")
            dk = T.alloc_fragment((M, D), "float32")
            dv = T.alloc_fragment((M, D), "float32")
            dq = T.alloc_fragment((N, D), "float32")
            T.copy(K[bx * M:(bx + 1) * M, :], K_s)
            T.clear(dk)
            T.clear(dv)
            for k in T.Pipelined(S // N, num_stages=2):
                T.copy(Q[k * N:(k + 1) * N, :], q_s)
                T.clear(s)
                T.gemm(K_s, q_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(s, s_cast)
                T.gemm(s_cast, q_s, dk, policy=T.GemmWarpPolicy.FullRow)
                T.copy(dO[k * N:(k + 1) * N, :], do_s)
                T.gemm(s_cast, do_s, dv, policy=T.GemmWarpPolicy.FullRow)
                T.copy(s_cast, s_sh)
                T.clear(dq)
                T.gemm(s_sh, K_s, dq, transpose_A=True)
                T.atomic_add(dQ[k * N:(k + 1) * N, :], dq)
            T.copy(dk, dK[bx * M:(bx + 1) * M, :])
            T.copy(dv, dV[bx * M:(bx + 1) * M, :])

    return main

k = kq_bwd(128, 32, 64, 256)
)";

/// Values in [-1, 1] on a grid of 1/64 (exact in float16).
std::vector<double> grid(size_t n, unsigned seed, double lo = -1, double hi = 1) {
    auto v = sim::randomData(n, seed, lo, hi);
    for (auto &x : v) x = std::round(x * 64) / 64;
    return v;
}

} // namespace

TEST(LowerSimMixedWarpRoles, GqaSinkBwdMatchesTheCpAsyncPath) {
    const std::string src = sim::tilelangExample("attention_sink/example_gqa_sink_bwd_bhsd.py");
    if (src.empty()) GTEST_SKIP() << "set TILELANG_SRC to a TileLang git checkout (tag v0.1.13)";
    LowerRun plain, mixed;
    const tilec::ir::Kernel *ref = lowered(plain, src, false), *k = lowered(mixed, src, true);
    ASSERT_TRUE(ref) << plain.diags();
    ASSERT_TRUE(k) << "no warp roles with --mixed-warp-roles: " << mixed.diags();
    EXPECT_EQ(ref->producerThreads, 0) << "without the switch the loop keeps the cp.async path";
    auto calls = sim::callCounts(*k);
    EXPECT_GT(calls[tilec::passes::lib::Fn::WgmmaSS], 0);
    EXPECT_GT(calls[tilec::passes::lib::Fn::GemmSSPanels], 0) << "dQ's product on mma.sync over the panels";
    constexpr size_t H = 4, HK = 2, S = 256, D = 64;
    std::map<std::string, std::vector<double>> in{{"Q", grid(H * S * D, 1)}, {"K", grid(HK * S * D, 2)},
                                                  {"V", grid(HK * S * D, 3)}, {"dO", grid(H * S * D, 4)},
                                                  {"lse", grid(H * S, 5, 2, 4)}, {"Delta", grid(H * S, 6)}};
    auto run = [&](const tilec::ir::Kernel &kernel, uint64_t seed, std::map<std::string, std::vector<double>> &out) {
        out = {{"dQ", std::vector<double>(H * S * D, 0)}, {"dK", std::vector<double>(HK * S * D, 0)},
               {"dV", std::vector<double>(HK * S * D, 0)}};
        auto io = in;
        sim::Tensors t;
        for (auto &[n, v] : io) t[n] = &v;
        for (auto &[n, v] : out) t[n] = &v;
        return sim::runCaught(kernel, t, {}, seed);
    };
    std::map<std::string, std::vector<double>> want;
    sim::Outcome o = run(*ref, 0, want);
    ASSERT_EQ(o.error, "");
    for (uint64_t seed : {0u, 1u, 7u}) {
        SCOPED_TRACE("interleaving " + std::to_string(seed));
        std::map<std::string, std::vector<double>> got;
        o = run(*k, seed, got);
        EXPECT_EQ(o.error, "");
        for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
        for (const char *n : {"dQ", "dK", "dV"}) sim::expectNear(got[n], want[n], 1e-4, n);
    }
}

/// The loop written here, on warp roles with the switch (dQ's product on mma.sync over the panels), every output
/// exact against float64 (inputs on a grid of 1/2: every score and sum exact in float16 and float32) under three
/// interleavings, race-free; with the switch off (--no-mixed-warp-roles) the loop keeps the cp.async path, and
/// the default is on.
TEST(LowerSimMixedWarpRoles, AttentionBackwardLoopExact) {
    LowerRun plain, mixed;
    tilec::Variant v{*tilec::Target::parse("sm_90a"), {}};
    EXPECT_TRUE(v.options.mixedWarpRoles) << "mixed warp roles are the default";
    v.options.mixedWarpRoles = false;
    plain.run(kLoop, "t.tile", v);
    ASSERT_TRUE(plain.lowered) << plain.diags();
    EXPECT_FALSE(sim::warpRoles(plain)) << "with the switch off the loop keeps the cp.async path";
    v.options.mixedWarpRoles = true;
    mixed.run(kLoop, "t.tile", v);
    const tilec::ir::Kernel *k = sim::warpRoles(mixed);
    ASSERT_TRUE(k) << "no warp roles with mixed warp roles on: " << mixed.diags();
    auto calls = sim::callCounts(*k);
    EXPECT_GT(calls[tilec::passes::lib::Fn::GemmSSPanels], 0);
    constexpr int M = 128, N = 32, D = 64, S = 256;
    auto half = [](size_t n, unsigned seed) {
        auto x = sim::randomData(n, seed, -1, 1);
        for (auto &e : x) e = std::round(e * 2) / 2;
        return x;
    };
    std::vector<double> K = half(S * D, 1), Q = half(S * D, 2), dO = half(S * D, 3);
    std::vector<double> wq(S * D, 0), wk(S * D, 0), wv(S * D, 0);
    for (int b = 0; b < S / M; ++b)
        for (int i = b * M; i < (b + 1) * M; ++i)
            for (int j = 0; j < S; ++j) {
                double sij = 0;
                for (int d = 0; d < D; ++d) sij += K[i * D + d] * Q[j * D + d];
                for (int d = 0; d < D; ++d) {
                    wk[i * D + d] += sij * Q[j * D + d];
                    wv[i * D + d] += sij * dO[j * D + d];
                    wq[j * D + d] += sij * K[i * D + d];
                }
            }
    for (uint64_t seed : {0u, 1u, 7u}) {
        SCOPED_TRACE("interleaving " + std::to_string(seed));
        std::vector<double> dq(S * D, 0), dk(S * D, std::nan("")), dv(S * D, std::nan(""));
        auto kk = K, qq = Q, oo = dO;
        sim::Outcome o = sim::runCaught(*k, {{"K", &kk}, {"Q", &qq}, {"dO", &oo}, {"dQ", &dq}, {"dK", &dk}, {"dV", &dv}}, {}, seed);
        EXPECT_EQ(o.error, "");
        for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
        sim::expectNear(dq, wq, 1e-9, "dQ");
        sim::expectNear(dk, wk, 1e-9, "dK");
        sim::expectNear(dv, wv, 1e-9, "dV");
    }
    // The simulator reads the mma.sync product's tiles as the panels the TMA stored: told B's span wrongly
    // (64-byte panels for K_shared's 128), dQ is wrong.
    auto wrongSpan = sim::rewriteCalls(*k, [](const tilec::ir::Evaluate &e, const tilec::ir::Call &c, sim::Role) -> tilec::ir::Stmt {
        if (c.name != "tilec.gemm_ss_panels") return sim::same(e);
        auto args = c.args;
        args[8] = tilec::ir::intImm(64, tilec::DType::Int32);
        return tilec::ir::Evaluate::make(tilec::ir::Call::make(c.dtype, c.name, args), e.loc);
    });
    std::vector<double> dq(S * D, 0), dk(S * D, 0), dv(S * D, 0);
    auto kk = K, qq = Q, oo = dO;
    sim::runCaught(*wrongSpan, {{"K", &kk}, {"Q", &qq}, {"dO", &oo}, {"dQ", &dq}, {"dK", &dk}, {"dV", &dv}});
    int wrong = 0;
    for (size_t e = 0; e < dq.size(); ++e) wrong += dq[e] != wq[e];
    EXPECT_GT(wrong, 0) << "a wrong panel span for the mma.sync product went unnoticed";
}
