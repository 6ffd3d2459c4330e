/// \file
/// Two T.gemm products on mma.sync whose accumulators per-row values link (FlashAttention's row maximum and
/// sum of the scores scaling the output, as DeepSeek's MLA decoding and the seesaw sparse MLA kernels write it)
/// take one split of their rows over the warps (src/lower/MmaLayouts.cpp, commonRowSplits) where their own
/// splits differ: run on the CPU simulator against a float64 softmax(Q K^T) V, for shapes whose own splits are
/// 2x2 and 1x4 (common 2x2, or 4x1 where 64 rows allow it) and with the scores' split fixed by their policy.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

const char *kAttn = R"(import tilelang.language as T

def attn(M, N, D, DV, policy):
    @T.prim_func
    def main(Q: T.Tensor((M, D), "float16"), K: T.Tensor((N, D), "float16"), V: T.Tensor((N, DV), "float16"),
             O: T.Tensor((M, DV), "float32")):
        with T.Kernel(1, threads=128) as bx:
            q = T.alloc_shared((M, D), "float16")
            k = T.alloc_shared((N, D), "float16")
            v = T.alloc_shared((N, DV), "float16")
            p = T.alloc_shared((M, N), "float16")
            s = T.alloc_fragment((M, N), "float32")
            o = T.alloc_fragment((M, DV), "float32")
            m = T.alloc_fragment((M,), "float32")
            l = T.alloc_fragment((M,), "float32")
            T.copy(Q, q)
            T.copy(K, k)
            T.copy(V, v)
            T.clear(s)
            T.gemm(q, k, s, transpose_B=True, policy=policy)
            T.reduce_max(s, m, dim=1)
            for i, j in T.Parallel(M, N):
                s[i, j] = T.exp(s[i, j] - m[i])
            T.reduce_sum(s, l, dim=1)
            T.copy(s, p)
            T.clear(o)
            T.gemm(p, v, o)
            for i, j in T.Parallel(M, DV):
                o[i, j] = o[i, j] / l[i]
            T.copy(o, O)

    return main
)";

/// Values on a grid of 1/16 in [-1, 1] (exact in float16).
std::vector<double> sixteenths(size_t n, unsigned seed) {
    auto v = sim::randomData(n, seed, -1, 1);
    for (auto &x : v) x = std::round(x * 16) / 16;
    return v;
}

/// attn(M, N, D, DV, policy) lowered for sm_80 and run on the simulator against float64.
void runAttn(int M, int N, int D, int DV, const std::string &policy) {
    const std::string src = std::string(kAttn) + "k = attn(" + std::to_string(M) + ", " + std::to_string(N) + ", " +
                            std::to_string(D) + ", " + std::to_string(DV) + ", T.GemmWarpPolicy." + policy + ")\n";
    tilec::lowertest::LowerRun r;
    sim::lowerFor(r, src);
    ASSERT_TRUE(r.lowered) << r.diags();
    auto q = sixteenths((size_t)M * D, 1), k = sixteenths((size_t)N * D, 2), v = sixteenths((size_t)N * DV, 3);
    std::vector<double> o((size_t)M * DV, std::nan("")), want((size_t)M * DV);
    for (int i = 0; i < M; ++i) {
        std::vector<double> w(N);
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < N; ++j) {
            for (int d = 0; d < D; ++d) w[j] += q[(size_t)i * D + d] * k[(size_t)j * D + d];
            mx = std::max(mx, w[j]);
        }
        for (auto &x : w) sum += x = std::exp(x - mx);
        for (int c = 0; c < DV; ++c) {
            double acc = 0;
            for (int j = 0; j < N; ++j) acc += w[j] * v[(size_t)j * DV + c];
            want[(size_t)i * DV + c] = acc / sum;
        }
    }
    sim::runAll(r, {{"Q", &q}, {"K", &k}, {"V", &v}, {"O", &o}});
    sim::expectNear(o, want, 2e-3, "O"); // the probabilities are rounded to float16 for the second product
}

TEST(LowerSimRowLinkedSplits, CommonSplitOfTwoWarpRows) { runAttn(32, 32, 64, 128, "Square"); }

TEST(LowerSimRowLinkedSplits, WholeRowsPerWarp) { runAttn(64, 64, 64, 256, "Square"); }

TEST(LowerSimRowLinkedSplits, FixedPolicySetsTheSplit) { runAttn(64, 64, 64, 128, "FullCol"); }

} // namespace
