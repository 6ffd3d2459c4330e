/// \file
/// Reduction results into a distributed destination: each thread reads (or computes) only the results its own
/// slots hold (lowerReductions' resultLoop), not every result behind a test of its owner, for each way a
/// reduction meets its destination: published in shared memory by a tensor-core accumulator's view (DeepSeek's
/// lightning indexer, its destination held by 2 or 4 threads each), staged through shared memory (a column
/// reduction of a distributed fragment), folded from a replicated source, and the columns of an mma
/// accumulator; with a destination accumulated into (clear=False) and with a last round only partly inside it.
/// Each runs on the CPU simulator against a float64 reference.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

namespace sim = tilec::simtest;

std::string S(int64_t v) { return std::to_string(v); }

/// C = A B^T (M x G*H, K = 32) viewed as (M, G, H), summed over H into r (M, G), stored transposed into Y (G, M);
/// with `accumulate`, r starts as R (G, M) transposed and the sum adds to it.
void viewSum(int M, int G, int H, int threads, bool accumulate, const char *target) {
    const int N = G * H, K = 32;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(A: T.Tensor((" + S(M) + ", 32), \"float16\"), B: T.Tensor((" + S(N) + ", 32), \"float16\"),\n"
                      "      R: T.Tensor((" + S(G) + ", " + S(M) + "), \"float32\"), Y: T.Tensor((" + S(G) + ", " + S(M) + "), \"float32\")):\n"
                      "    with T.Kernel(1, threads=" + S(threads) + ") as bx:\n"
                      "        a = T.alloc_shared((" + S(M) + ", 32), \"float16\")\n"
                      "        b = T.alloc_shared((" + S(N) + ", 32), \"float16\")\n"
                      "        acc = T.alloc_fragment((" + S(M) + ", " + S(N) + "), \"float32\")\n"
                      "        v = T.reshape(acc, (" + S(M) + ", " + S(G) + ", " + S(H) + "))\n"
                      "        r = T.alloc_fragment((" + S(M) + ", " + S(G) + "), \"float32\")\n"
                      "        T.copy(A, a)\n"
                      "        T.copy(B, b)\n"
                      "        for q, i in T.Parallel(" + S(G) + ", " + S(M) + "):\n"
                      "            r[i, q] = R[q, i]\n"
                      "        T.gemm(a, b, acc, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullCol)\n"
                      "        T.reduce_sum(v, r, dim=-1, clear=" + (accumulate ? "False" : "True") + ")\n"
                      "        for q, i in T.Parallel(" + S(G) + ", " + S(M) + "):\n"
                      "            Y[q, i] = r[i, q]\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse(target));
    ASSERT_TRUE(run.lowered) << run.diags();
    auto a = sim::randomData(M * K, 61, -1, 1), b = sim::randomData(N * K, 62, -1, 1), r = sim::randomData(G * M, 63);
    std::vector<double> y(G * M, std::nan("")), want(G * M, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double e = 0;
            for (int q = 0; q < K; ++q) e += a[i * K + q] * b[j * K + q];
            want[(j / H) * M + i] += e;
        }
    if (accumulate)
        for (int i = 0; i < G * M; ++i) want[i] += r[i];
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    sim::simulate(*run.lowered->kernels[0], {{"A", &a}, {"B", &b}, {"R", &r}, {"Y", &y}});
    sim::expectNear(y, want, 1e-4, "Y");
}

TEST(LowerSimReductionResults, ViewIntoTwoCopies) { viewSum(128, 4, 16, 256, false, "sm_80"); }
TEST(LowerSimReductionResults, ViewIntoFourCopies) { viewSum(128, 4, 32, 512, false, "sm_80"); }
TEST(LowerSimReductionResults, ViewAccumulated) { viewSum(128, 4, 16, 256, true, "sm_80"); }
TEST(LowerSimReductionResults, ViewHopperRows) { viewSum(128, 4, 32, 512, true, "sm_90a"); }

/// X (R x C) reduced along `dim` of a fragment loaded from it (`op`: sum or max), the results into Y through a
/// fragment that T.copy stores; `rep` loads the source into every thread (T.copy of a shared tile into a
/// fragment read whole by a serial loop: a replicated source).
void fragmentReduce(int R, int C, int dim, int threads, const std::string &op, bool accumulate) {
    const int outs = dim == 0 ? C : R;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(X: T.Tensor((" + S(R) + ", " + S(C) + "), \"float32\"), P: T.Tensor((" + S(outs) + ",), \"float32\"),\n"
                      "      Y: T.Tensor((" + S(outs) + ",), \"float32\")):\n"
                      "    with T.Kernel(1, threads=" + S(threads) + ") as bx:\n"
                      "        f = T.alloc_fragment((" + S(R) + ", " + S(C) + "), \"float32\")\n"
                      "        s = T.alloc_fragment((" + S(outs) + ",), \"float32\")\n"
                      "        T.copy(X, f)\n"
                      "        T.copy(P, s)\n"
                      "        T.reduce_" + op + "(f, s, dim=" + S(dim) + ", clear=" + (accumulate ? "False" : "True") + ")\n"
                      "        T.copy(s, Y)\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(run.lowered) << run.diags();
    auto x = sim::randomData(R * C, 71), p = sim::randomData(outs, 72);
    std::vector<double> y(outs, std::nan("")), want(outs, op == "sum" ? 0.0 : -INFINITY);
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
            double &w = want[dim == 0 ? j : i];
            w = op == "sum" ? w + x[i * C + j] : std::max(w, x[i * C + j]);
        }
    if (accumulate)
        for (int o = 0; o < outs; ++o) want[o] = op == "sum" ? want[o] + p[o] : std::max(want[o], p[o]);
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    sim::simulate(*run.lowered->kernels[0], {{"X", &x}, {"P", &p}, {"Y", &y}});
    sim::expectNear(y, want, 1e-5, "Y");
}

TEST(LowerSimReductionResults, ColumnsStaged) { fragmentReduce(64, 96, 0, 128, "sum", false); }
TEST(LowerSimReductionResults, ColumnsStagedAccumulated) { fragmentReduce(64, 96, 0, 128, "max", true); }
TEST(LowerSimReductionResults, ColumnsPartialRound) { fragmentReduce(48, 20, 0, 128, "sum", true); }
TEST(LowerSimReductionResults, RowsPartialRound) { fragmentReduce(20, 48, 1, 128, "sum", true); }
TEST(LowerSimReductionResults, ManyRowsFewThreads) { fragmentReduce(300, 8, 1, 64, "max", false); }

} // namespace
