/// \file
/// LoweringOptions::mmaWarpRoles (by default for loops with a product whose A is in registers, --mma-warp-roles for
/// all, --no-mma-warp-roles for none): on sm_90a a T.Pipelined loop none of whose products wgmma can
/// take (a tf32 GEMM whose B is stored (K, N): tf32 operands must be K-major for wgmma) takes warp roles, a TMA
/// producer warpgroup and consumers running every product on mma.sync over the TMA tiles' panels (gemm_ss_panels),
/// instead of the cp.async path. Run on the CPU simulator under three interleavings at a shape the tiles do not
/// divide, exact against float64 (inputs on a grid of 1/16: exact in tf32, every partial sum exact in float32);
/// without --mma-warp-roles the loop keeps the cp.async path. The same with A from registers, by default
/// (RegisterAExactOnPanels).
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

using MmaRoles = tilec::LoweringOptions::MmaWarpRoles;

/// `src` lowered for sm_90a with `off` (expected to keep the cp.async path) and with `on` (`roles`): the
/// warp-role kernel, null (the failure reported) where either lowering is missing.
const tilec::ir::Kernel *lowerBothWays(const std::string &src, LowerRun &plain, LowerRun &roles, MmaRoles off,
                                       MmaRoles on) {
    tilec::Variant v{*tilec::Target::parse("sm_90a"), {}};
    EXPECT_EQ(v.options.mmaWarpRoles, MmaRoles::RegisterA) << "the default: loops with a product whose A is in registers";
    v.options.mmaWarpRoles = off;
    plain.run(src, "t.tile", v);
    EXPECT_TRUE(plain.lowered) << plain.diags();
    EXPECT_FALSE(sim::warpRoles(plain)) << "without the switch the loop keeps the cp.async path";
    v.options.mmaWarpRoles = on;
    roles.run(src, "t.tile", v);
    const tilec::ir::Kernel *k = sim::warpRoles(roles);
    EXPECT_TRUE(k) << "no warp roles for mma.sync products: " << roles.diags();
    return plain.lowered ? k : nullptr;
}

TEST(LowerSimMmaWarpRoles, Tf32GemmExactOnPanels) {
    LowerRun plain, roles;
    // products of shared operands alone: only with --mma-warp-roles (All), not by default (RegisterA)
    const tilec::ir::Kernel *k = lowerBothWays(kSgemm, plain, roles, MmaRoles::RegisterA, MmaRoles::All);
    ASSERT_TRUE(k);
    auto calls = sim::callCounts(*k);
    EXPECT_GT(calls[tilec::passes::lib::Fn::GemmSSPanels], 0) << "the product is not on mma.sync over the panels";
    sim::ExactGemm g("A", "B", "C", 200, 136, 96, false, 1, 3);
    sim::expectClean([&](uint64_t seed) { return g.run(*k, seed); }, {0, 1, 2});
}

/// A product with A from registers (RS) over TMA tiles: A's tile copied into a fragment by the consumers' own
/// loads (and widened to float: a tf32 product of bfloat16 values, TileKernels' pre_norm_fn_fwd_mul), B a TMA tile
/// stored (N, K) where transB.
const char *kRegisterA = R"(import tilelang.language as T

def rs(M, N, K, BM=32, BN=32, BK=256, threads=128, stages=2, at="bfloat16", wide=True, bt="float32", transB=True):
    bshape = (N, K) if transB else (K, N)
    bs = (BN, BK) if transB else (BK, BN)
    @T.prim_func
    def kernel(A: T.Tensor((M, K), at), B: T.Tensor(bshape, bt), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=threads) as (bx, by):
            acc = T.alloc_fragment((BM, BN), "float32")
            A_s = T.alloc_shared((BM, BK), at)
            B_s = T.alloc_shared(bs, bt)
            a_frag = T.alloc_fragment((BM, BK), at)
            a_wide = T.alloc_fragment((BM, BK), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, BK), num_stages=stages):
                T.copy(A[by * BM, ko * BK], A_s)
                if transB:
                    T.copy(B[bx * BN, ko * BK], B_s)
                else:
                    T.copy(B[ko * BK, bx * BN], B_s)
                T.copy(A_s, a_frag)
                if wide:
                    T.copy(a_frag, a_wide)
                    T.gemm(a_wide, B_s, acc, transpose_B=transB)
                else:
                    T.gemm(a_frag, B_s, acc, transpose_B=transB)
            T.copy(acc, C[by * BM, bx * BN])
    return kernel
)";

/// A from registers (the default, RegisterA; --no-mma-warp-roles turns it off): the product on mma.sync over B's panels (gemm_rs_panels), tf32 (A
/// widened from bfloat16: exact, or float32 as it is) and 16-bit; M, N and K that the tiles do not divide (the
/// TMA boxes past the tensors' ends zero-filled, as the cp.async copies fill them). Each run exact under three
/// interleavings, and so is the cp.async path the kernel has without the switch. The last case has two consumer
/// warpgroups, each an agent of the simulator's: their product reads A from their own registers only.
TEST(LowerSimMmaWarpRoles, RegisterAExactOnPanels) {
    struct Case {
        const char *call;
        int M, N, K;
        bool transB;
    };
    const Case cases[] = {
        {"rs(100, 24, 600)", 100, 24, 600, true},                                                           // tf32, A exact
        {"rs(72, 40, 520, at='float16', wide=False, bt='float16', transB=False)", 72, 40, 520, false},      // 16-bit, B (K, N)
        {"rs(72, 40, 520, at='bfloat16', wide=False, bt='bfloat16')", 72, 40, 520, true},                   // 16-bit, B (N, K)
        {"rs(130, 48, 200, BM=64, BK=128, threads=256, stages=3, at='float32', wide=False, transB=False)", 130, 48, 200, false}, // tf32
        // M at run time: the ring stage from the tile modulo 2S (the simulator's 2 blocks walk 2 tiles each)
        {"rs(T.dynamic('m'), 24, 600)", 100, 24, 600, true},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.call);
        LowerRun plain, roles;
        const tilec::ir::Kernel *k = lowerBothWays(std::string(kRegisterA) + "k = " + c.call + "\n", plain, roles,
                                                   MmaRoles::Off, MmaRoles::RegisterA);
        ASSERT_TRUE(k);
        const std::map<std::string, double> scalars{{"m", c.M}};
        EXPECT_EQ(sim::callCounts(*k)[tilec::passes::lib::Fn::GemmRSPanels], 1) << "the product is not on mma.sync over B's panels";
        sim::ExactGemm g("A", "B", "C", c.M, c.N, c.K, c.transB, 1, 7);
        sim::expectClean([&](uint64_t seed) { return g.run(*k, seed, scalars); }, {0, 1, 2});
        sim::expectClean([&](uint64_t seed) { return g.run(*plain.lowered->kernels[0], seed, scalars); }, {0});
    }
}

} // namespace
