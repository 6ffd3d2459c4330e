/// \file
/// A T.gemm operand A whose fragment another product's accumulator split lays out otherwise (columns split over
/// warps) is read from a shared copy (src/lower/StagedOperands.cpp, decided by inferLayouts): TileLang's
/// FlashAttention backward of examples/amd/example_amd_flash_attn_bwd.py (`flashattn_bwd`, v0.1.13, its CUDA
/// branch: IsRDNA() false), whose 64 x 64 products over 8 warps split 4x2 (FullRow: 64 rows hold 4 warps of 16)
/// while the probabilities computed from them are operand A of dV's and dK's products. Lowered for sm_80 and
/// sm_90a and run on the CPU simulator (a race or a simulator error fails the test) against a float64 reference of
/// the kernel's mathematics, at the example's own configuration (block_M = block_N = 64, 256 threads) and reduced
/// sequence lengths; dim 64 and 128 as the manifest's two rows.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace sim = tilec::simtest;

/// The example's flashattn_bwd, unchanged but for its decorators (autotune) and IsRDNA (no GPU here: CUDA).
const char *kBwd = R"(import tilelang
import tilelang.language as T


def IsRDNA():
    return False


@tilelang.jit
def flashattn_bwd(
    batch,
    heads,
    seq_len,
    dim,
    is_causal,
    groups,
    block_M: int,
    block_N: int,
    num_stages: int,
    threads: int,
    enable_rasterization: bool,
    panel_size: int,
):
    sm_scale = (1.0 / dim) ** 0.5
    head_kv = heads // groups
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, head_kv, dim]
    dtype = T.float16
    accum_dtype = T.float32

    @T.prim_func
    def flash_bwd_kernel(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        dO: T.Tensor(q_shape, dtype),
        lse: T.Tensor([batch, heads, seq_len], accum_dtype),
        Delta: T.Tensor([batch, heads, seq_len], accum_dtype),
        dQ: T.Tensor(q_shape, accum_dtype),
        dK: T.Tensor(kv_shape, accum_dtype),
        dV: T.Tensor(kv_shape, accum_dtype),
    ):
        with T.Kernel(heads, T.ceildiv(seq_len, block_M), batch, threads=threads) as (bx, by, bz):
            T.use_swizzle(panel_size, enable=enable_rasterization)

            K_shared = T.alloc_shared([block_M, dim], dtype)
            V_shared = T.alloc_shared([block_M, dim], dtype)
            q_shared = T.alloc_shared([block_N, dim], dtype)
            do_shared = T.alloc_shared([block_N, dim], dtype)
            lse_shared = T.alloc_shared([block_N], accum_dtype)
            delta_shared = T.alloc_shared([block_N], accum_dtype)
            ds_shared = T.alloc_shared([block_M, block_N], dtype)
            if IsRDNA():
                p_shared = T.alloc_shared([block_M, block_N], dtype)

            p_cast = T.alloc_fragment([block_M, block_N], dtype)
            qkT = T.alloc_fragment([block_M, block_N], accum_dtype)
            P_acc = T.alloc_fragment([block_M, block_N], accum_dtype)
            dP = T.alloc_fragment([block_M, block_N], accum_dtype)

            dv = T.alloc_fragment([block_M, dim], accum_dtype)
            dk = T.alloc_fragment([block_M, dim], accum_dtype)
            dq = T.alloc_fragment([block_N, dim], accum_dtype)

            T.copy(K[bz, by * block_M : (by + 1) * block_M, bx // groups, :], K_shared)
            T.copy(V[bz, by * block_M : (by + 1) * block_M, bx // groups, :], V_shared)
            T.clear(dv)
            T.clear(dk)

            loop_st = T.floordiv(by * block_M, block_N) if is_causal else 0
            loop_ed = T.ceildiv(seq_len, block_N)

            for k in T.Pipelined(loop_st, loop_ed, num_stages=num_stages):
                T.copy(Q[bz, k * block_N : (k + 1) * block_N, bx, :], q_shared)
                T.clear(qkT)

                T.gemm(K_shared, q_shared, qkT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

                T.copy(lse[bz, bx, k * block_N : (k + 1) * block_N], lse_shared)

                for i, j in T.Parallel(block_M, block_N):
                    P_acc[i, j] = T.exp(qkT[i, j] * sm_scale - lse_shared[j])

                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        P_acc[i, j] = T.if_then_else(by * block_M + i <= k * block_N + j, P_acc[i, j], 0.0)

                T.copy(dO[bz, k * block_N : (k + 1) * block_N, bx, :], do_shared)
                T.clear(dP)

                T.gemm(V_shared, do_shared, dP, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

                if IsRDNA():
                    for i, j in T.Parallel(block_M, block_N):
                        p_shared[i, j] = T.cast(P_acc[i, j], dtype)
                    T.copy(p_shared, p_cast)
                else:
                    T.copy(P_acc, p_cast)
                T.gemm(p_cast, do_shared, dv, policy=T.GemmWarpPolicy.FullRow)

                T.copy(Delta[bz, bx, k * block_N : (k + 1) * block_N], delta_shared)

                if IsRDNA():
                    for i, j in T.Parallel(block_M, block_N):
                        dP[i, j] = P_acc[i, j] * (dP[i, j] - delta_shared[j]) * sm_scale
                    for i, j in T.Parallel(block_M, block_N):
                        p_shared[i, j] = T.cast(dP[i, j], dtype)
                    T.copy(p_shared, p_cast)
                    T.gemm(p_cast, q_shared, dk, policy=T.GemmWarpPolicy.FullRow)
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        p_cast[i, j] = P_acc[i, j] * (dP[i, j] - delta_shared[j]) * sm_scale
                    T.gemm(p_cast, q_shared, dk, policy=T.GemmWarpPolicy.FullRow)
                T.copy(p_cast, ds_shared)

                T.clear(dq)
                T.gemm(ds_shared, K_shared, dq, transpose_A=True)
                for i, j in T.Parallel(block_N, dim):
                    T.atomic_add(dQ[bz, k * block_N + i, bx, j], dq[i, j])

            for i, j in T.Parallel(block_M, dim):
                T.atomic_add(dV[bz, by * block_M + i, bx // groups, j], dv[i, j])
                T.atomic_add(dK[bz, by * block_M + i, bx // groups, j], dk[i, j])

    return flash_bwd_kernel
)";

/// Values on a grid of 1/16 in [-1, 1] (exact in float16).
std::vector<double> sixteenths(size_t n, unsigned seed) {
    auto v = sim::randomData(n, seed, -1, 1);
    for (auto &x : v) x = std::round(x * 16) / 16;
    return v;
}

/// flashattn_bwd(1, H, L, D, causal, 1, block_M=64, block_N=64, num_stages=1, threads=256, ...) lowered for `arch`
/// and run once on the simulator (float16 values at float32 precision, ScalarSemantics.h); dQ, dK, dV against
/// float64.
void runBwd(int H, int L, int D, bool causal, const char *arch) {
    const std::string call = "k = flashattn_bwd(1, " + std::to_string(H) + ", " + std::to_string(L) + ", " + std::to_string(D) +
                             (causal ? ", True" : ", False") +
                             ", 1, block_M=64, block_N=64, num_stages=1, threads=256, enable_rasterization=True, panel_size=7)\n";
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, std::string(kBwd) + call, arch);
    ASSERT_TRUE(r.lowered) << r.diags();
    const size_t n = (size_t)L * H * D;
    auto q = sixteenths(n, 1), k = sixteenths(n, 2), v = sixteenths(n, 3), dO = sixteenths(n, 4);
    auto at = [&](int l, int h, int d) { return ((size_t)l * H + h) * D + d; };
    const double scale = std::sqrt(1.0 / D);
    std::vector<double> lse((size_t)H * L), delta = sim::randomData((size_t)H * L, 5, -0.5, 0.5);
    std::vector<double> wantQ(n, 0), wantK(n, 0), wantV(n, 0);
    for (int h = 0; h < H; ++h) {
        std::vector<double> s((size_t)L * L);
        for (int i = 0; i < L; ++i) { // query i, key j
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < L; ++j) {
                double x = 0;
                for (int d = 0; d < D; ++d) x += q[at(i, h, d)] * k[at(j, h, d)];
                s[(size_t)i * L + j] = x * scale;
                mx = std::max(mx, x * scale);
            }
            for (int j = 0; j < L; ++j) sum += std::exp(s[(size_t)i * L + j] - mx);
            lse[(size_t)h * L + i] = mx + std::log(sum);
        }
        for (int j = 0; j < L; ++j)     // key j (the kernel's rows)
            for (int i = 0; i < L; ++i) { // query i
                double p = causal && j > i ? 0.0 : std::exp(s[(size_t)i * L + j] - lse[(size_t)h * L + i]);
                double dp = 0;
                for (int d = 0; d < D; ++d) dp += v[at(j, h, d)] * dO[at(i, h, d)];
                const double ph = p, ds = p * (dp - delta[(size_t)h * L + i]) * scale;
                for (int d = 0; d < D; ++d) {
                    wantV[at(j, h, d)] += ph * dO[at(i, h, d)];
                    wantK[at(j, h, d)] += ds * q[at(i, h, d)];
                    wantQ[at(i, h, d)] += ds * k[at(j, h, d)];
                }
            }
    }
    std::vector<double> dQ(n, 0), dK(n, 0), dV(n, 0);
    sim::runAll(r, {{"Q", &q}, {"K", &k}, {"V", &v}, {"dO", &dO}, {"lse", &lse}, {"Delta", &delta}, {"dQ", &dQ},
                    {"dK", &dK}, {"dV", &dV}});
    sim::expectNear(dV, wantV, 1e-4, "dV");
    sim::expectNear(dK, wantK, 1e-4, "dK");
    sim::expectNear(dQ, wantQ, 1e-4, "dQ");
}

TEST(LowerSimStagedOperand, FlashAttnBwdDim64) { runBwd(2, 128, 64, false, "sm_80"); }

TEST(LowerSimStagedOperand, FlashAttnBwdDim128Hopper) { runBwd(1, 128, 128, false, "sm_90a"); }

TEST(LowerSimStagedOperand, FlashAttnBwdCausal) { runBwd(1, 192, 64, true, "sm_90a"); }

// The manifest row's own call (flashattn_bwd(1, 8, 1024, 64, ...)): 128 blocks of 16 key blocks, about a minute on
// the simulator, so only where TILEC_SIM_EXAMPLE_SHAPES is set.
TEST(LowerSimStagedOperand, FlashAttnBwdExampleShape) {
    if (!std::getenv("TILEC_SIM_EXAMPLE_SHAPES")) GTEST_SKIP() << "set TILEC_SIM_EXAMPLE_SHAPES to run the example's shape";
    runBwd(8, 1024, 64, false, "sm_90a");
}

} // namespace
