/// \file
/// --mma-warp-roles (LoweringOptions::mmaWarpRoles): on sm_90a a T.Pipelined loop none of whose products wgmma can
/// take (a tf32 GEMM whose B is stored (K, N): tf32 operands must be K-major for wgmma) takes warp roles, a TMA
/// producer warpgroup and consumers running every product on mma.sync over the TMA tiles' panels (gemm_ss_panels),
/// instead of the cp.async path. Run on the CPU simulator under three interleavings at a shape the tiles do not
/// divide, exact against float64 (inputs on a grid of 1/16: exact in tf32, every partial sum exact in float32);
/// without the switch the loop keeps the cp.async path.
#include "ExactGemm.h"
#include "LowerSimUtil.h"

#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <string>

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
    sim::ExactGemm g("A", "B", "C", 200, 136, 96, false, 1, 3);
    sim::expectClean([&](uint64_t seed) { return g.run(*k, seed); }, {0, 1, 2});
}

} // namespace
