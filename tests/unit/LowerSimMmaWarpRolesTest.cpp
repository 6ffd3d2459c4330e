/// \file
/// --mma-warp-roles (LoweringOptions::mmaWarpRoles): on sm_90a a T.Pipelined loop none of whose products wgmma can
/// take (a tf32 GEMM whose B is stored (K, N): tf32 operands must be K-major for wgmma) takes warp roles, a TMA
/// producer warpgroup and consumers running every product on mma.sync over the TMA tiles' panels (gemm_ss_panels),
/// instead of the cp.async path. Run on the CPU simulator under three interleavings at a shape the tiles do not
/// divide, exact against float64 (inputs on a grid of 1/16: exact in tf32, every partial sum exact in float32);
/// without the switch the loop keeps the cp.async path.
#include "LowerSimUtil.h"

#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

namespace sim = tilec::simtest;
using tilec::lowertest::LowerRun;

const char *kSgemm = R"(import tilelang.language as T

def sgemm(M, N, K, BM=128, BN=64, BK=32, threads=256, stages=3):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=threads) as (bx, by):
            A_tile = T.alloc_shared((BM, BK), "float32")
            B_tile = T.alloc_shared((BK, BN), "float32")
            acc = T.alloc_fragment((BM, BN), "float32")
            T.fill(acc, 0.0)
            for ko in T.Pipelined(T.ceildiv(K, BK), num_stages=stages):
                T.copy(A[by * BM, ko * BK], A_tile)
                T.copy(B[ko * BK, bx * BN], B_tile)
                T.gemm(A_tile, B_tile, acc)
            T.copy(acc, C[by * BM, bx * BN])
    return kernel

k = sgemm(200, 136, 96)
)";

TEST(LowerSimMmaWarpRoles, Tf32GemmExactOnPanels) {
    tilec::Variant v{*tilec::Target::parse("sm_90a"), {}};
    EXPECT_FALSE(v.options.mmaWarpRoles) << "off by default until timed on the GPU";
    LowerRun plain, roles;
    plain.run(kSgemm, "t.tile", v);
    ASSERT_TRUE(plain.lowered) << plain.diags();
    EXPECT_FALSE(sim::warpRoles(plain)) << "without the switch the loop keeps the cp.async path";
    v.options.mmaWarpRoles = true;
    roles.run(kSgemm, "t.tile", v);
    const tilec::ir::Kernel *k = sim::warpRoles(roles);
    ASSERT_TRUE(k) << "no warp roles with --mma-warp-roles: " << roles.diags();
    auto calls = sim::callCounts(*k);
    EXPECT_GT(calls[tilec::passes::lib::Fn::GemmSSPanels], 0) << "the product is not on mma.sync over the panels";
    constexpr int M = 200, N = 136, K = 96;
    auto grid = [](size_t n, unsigned seed) {
        auto x = sim::randomData(n, seed, -1, 1);
        for (auto &e : x) e = std::round(e * 16) / 16;
        return x;
    };
    std::vector<double> A = grid((size_t)M * K, 3), B = grid((size_t)K * N, 4), want((size_t)M * N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
            for (int kk = 0; kk < K; ++kk) want[(size_t)i * N + j] += A[(size_t)i * K + kk] * B[(size_t)kk * N + j];
    for (uint64_t seed : {0u, 1u, 2u}) {
        std::vector<double> C(want.size(), std::nan(""));
        sim::Outcome o = sim::runCaught(*k, {{"A", &A}, {"B", &B}, {"C", &C}}, {}, seed);
        EXPECT_EQ(o.error, "") << "interleaving " << seed;
        for (auto &race : o.races) ADD_FAILURE() << "race: " << race;
        int wrong = 0;
        for (size_t e = 0; e < want.size(); ++e)
            if (C[e] != want[e] && ++wrong <= 3) ADD_FAILURE() << "C[" << e << "] = " << C[e] << ", expected " << want[e] << " (interleaving " << seed << ")";
        EXPECT_EQ(wrong, 0);
    }
}

} // namespace
