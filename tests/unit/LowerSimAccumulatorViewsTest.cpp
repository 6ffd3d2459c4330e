/// \file
/// A T.gemm accumulator seen through a T.reshape that splits its columns ((M, N) as (M, G, N / G), DeepSeek's
/// lightning indexer: `s_reshaped = T.reshape(s, (block_N, block_Q, heads))`) keeps its tensor-core layout
/// (Layout::columns): a T.Parallel nest over the view scales it in place, and reductions along the view's last
/// and middle dimensions (and its rows) run on the CPU simulator from the plan of the accumulator's slots
/// (lanes by shuffles, warps through shared memory), against a float64 reference, for each warp split (and
/// Hopper's warpgroup row order).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace {

namespace sim = tilec::simtest;

/// C = A B^T (64 x 64, K = 32) viewed as (64, G, 64 / G): C * w[g, h] summed over h (dim 2) and maximised over g
/// (dim 1), and the column sums of the view (dim 0).
void viewReductions(const std::string &policy, int threads, int G, const char *target = "sm_80") {
    const int M = 64, N = 64, K = 32, H = N / G;
    std::string g = std::to_string(G), h = std::to_string(H);
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(A: T.Tensor((64, 32), \"float16\"), B: T.Tensor((64, 32), \"float16\"),\n"
                      "      W: T.Tensor((" + g + ", " + h + "), \"float32\"), S: T.Tensor((64, " + g + "), \"float32\"),\n"
                      "      X: T.Tensor((64, " + h + "), \"float32\"), C: T.Tensor((" + g + ", " + h + "), \"float32\")):\n"
                      "    with T.Kernel(1, threads=" + std::to_string(threads) + ") as bx:\n"
                      "        a = T.alloc_shared((64, 32), \"float16\")\n"
                      "        b = T.alloc_shared((64, 32), \"float16\")\n"
                      "        acc = T.alloc_fragment((64, 64), \"float32\")\n"
                      "        v = T.reshape(acc, (64, " + g + ", " + h + "))\n"
                      "        w = T.alloc_fragment((" + g + ", " + h + "), \"float32\")\n"
                      "        s = T.alloc_fragment((64, " + g + "), \"float32\")\n"
                      "        x = T.alloc_fragment((64, " + h + "), \"float32\")\n"
                      "        c = T.alloc_fragment((" + g + ", " + h + "), \"float32\")\n"
                      "        T.copy(A, a)\n"
                      "        T.copy(B, b)\n"
                      "        T.copy(W, w)\n"
                      "        T.gemm(a, b, acc, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy." + policy + ")\n"
                      "        for i, j, q in T.Parallel(64, " + g + ", " + h + "):\n"
                      "            v[i, j, q] = v[i, j, q] * w[j, q]\n"
                      "        T.reduce_sum(v, s, dim=-1)\n"
                      "        T.reduce_max(v, x, dim=1)\n"
                      "        T.reduce_sum(v, c, dim=0)\n"
                      "        T.copy(s, S)\n"
                      "        T.copy(x, X)\n"
                      "        T.copy(c, C)\n";
    tilec::lowertest::LowerRun r;
    r.run(src, "t.tile", *tilec::Target::parse(target));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto a = sim::randomData(M * K, 51, -1, 1), b = sim::randomData(N * K, 52, -1, 1), w = sim::randomData(N, 53, -1, 1);
    std::vector<double> s(M * G, std::nan("")), x(M * H, std::nan("")), c(N, std::nan(""));
    std::vector<double> ws(M * G, 0), wx(M * H, -INFINITY), wc(N, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double e = 0;
            for (int q = 0; q < K; ++q) e += a[i * K + q] * b[j * K + q];
            e *= w[j];
            ws[i * G + j / H] += e;
            wx[i * H + j % H] = std::max(wx[i * H + j % H], e);
            wc[j] += e;
        }
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    sim::simulate(*r.lowered->kernels[0], {{"A", &a}, {"B", &b}, {"W", &w}, {"S", &s}, {"X", &x}, {"C", &c}});
    sim::expectNear(s, ws, 1e-4, "S");
    sim::expectNear(x, wx, 1e-4, "X");
    sim::expectNear(c, wc, 1e-4, "C");
}

TEST(LowerSimAccumulatorViews, GroupsWithinAWarpsColumns) { viewReductions("FullCol", 128, 4); }
TEST(LowerSimAccumulatorViews, GroupsAcrossWarps) { viewReductions("FullCol", 128, 2); }
TEST(LowerSimAccumulatorViews, RowsOverWarps) { viewReductions("FullRow", 128, 8); }
TEST(LowerSimAccumulatorViews, SquareSplit) { viewReductions("Square", 128, 4); }
TEST(LowerSimAccumulatorViews, OneWarp) { viewReductions("Square", 32, 16); }
TEST(LowerSimAccumulatorViews, HopperWarpgroupRows) { viewReductions("FullCol", 128, 2, "sm_90a"); }

} // namespace
