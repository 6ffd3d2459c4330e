/// \file
/// Shared copies of fragments staged for a nest that reads them across threads (transposeFragments), made once
/// before the loops that keep their source (hoistStagedCopies), on the CPU simulator against float64
/// references: TileKernels' pre_norm_fn_fwd_mul shape (a sum of squares of a T.gemm operand four columns at a
/// time in `for jj in T.serial(64)`, inside a pipelined loop that reloads the operand; here a bfloat16 operand,
/// held in the accumulator order: a float one is held in the tf32 operand order and read in registers,
/// LowerSimOperandOrderTest), whose copy runs once per pipeline stage instead of 64 times, with as many fewer
/// barriers; and a loop that writes the source, whose copy stays at every iteration (and the sum stays right).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

namespace sim = tilec::simtest;

/// Values a bfloat16 holds exactly (eighths below 2 in magnitude).
std::vector<double> bf16Data(size_t n, unsigned seed) {
    auto v = sim::randomData(n, seed);
    for (auto &x : v) x = std::round(x * 8) / 8;
    return v;
}

TEST(LowerSimHoistedStaging, SumOfSquaresOfAGemmOperand) {
    const int M = 32, K = 1024, N = 32, BK = 256, stages = K / BK;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(X: T.Tensor((32, 1024), \"bfloat16\"), W: T.Tensor((32, 1024), \"bfloat16\"),\n"
                      "      O: T.Tensor((32, 32), \"float32\"), S: T.Tensor((32, 4), \"float32\")):\n"
                      "    with T.Kernel(1, threads=128) as bx:\n"
                      "        acc = T.alloc_fragment((32, 32), \"float32\")\n"
                      "        sq = T.alloc_fragment((32, 4), \"float32\")\n"
                      "        T.clear(acc)\n"
                      "        T.clear(sq)\n"
                      "        for k in T.Pipelined(4, num_stages=2):\n"
                      "            xs = T.alloc_shared((32, 256), \"bfloat16\")\n"
                      "            ws = T.alloc_shared((32, 256), \"bfloat16\")\n"
                      "            T.copy(X[0, k * 256], xs)\n"
                      "            T.copy(W[0, k * 256], ws)\n"
                      "            x = T.alloc_fragment((32, 256), \"bfloat16\")\n"
                      "            T.copy(xs, x)\n"
                      "            for jj in T.serial(64):\n"
                      "                for i, j in T.Parallel(32, 4):\n"
                      "                    sq[i, j] += x[i, jj * 4 + j] * x[i, jj * 4 + j]\n"
                      "            T.gemm(x, ws, acc, transpose_B=True)\n"
                      "        T.copy(acc, O)\n"
                      "        T.copy(sq, S)\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(run.lowered) << run.diags();
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    auto X = bf16Data(M * K, 91), W = bf16Data(N * K, 92);
    std::vector<double> O(M * N, 0), S(M * 4, 0), wantO(M * N, 0), wantS(M * 4, 0);
    for (int i = 0; i < M; ++i)
        for (int c = 0; c < K; ++c) {
            wantS[i * 4 + c % 4] += X[i * K + c] * X[i * K + c];
            for (int n = 0; n < N; ++n) wantO[i * N + n] += X[i * K + c] * W[n * K + c];
        }
    sim::Simulator s(*run.lowered->kernels[0], {{"X", &X}, {"W", &W}, {"O", &O}, {"S", &S}});
    s.run();
    EXPECT_TRUE(s.races.empty()) << s.races.front();
    sim::expectNear(O, wantO, 1e-4, "O");
    sim::expectNear(S, wantS, 1e-5, "S");
    // One copy of the 32x256 operand per pipeline stage (64 per stage before), and the barriers around it once
    // per stage: a handful per stage, not two per jj iteration.
    EXPECT_EQ(s.sharedStores("x_staged"), (int64_t)stages * M * BK);
    EXPECT_LE(s.blockBarriers, 8 * stages);
}

TEST(LowerSimHoistedStaging, LoopWritingTheSourceCopiesEveryIteration) {
    const int M = 32, K = 256, J = 64;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(X: T.Tensor((32, 256), \"float32\"), S: T.Tensor((32, 4), \"float32\")):\n"
                      "    with T.Kernel(1, threads=128) as bx:\n"
                      "        sq = T.alloc_fragment((32, 4), \"float32\")\n"
                      "        y = T.alloc_fragment((32, 256), \"float32\")\n"
                      "        T.clear(sq)\n"
                      "        T.copy(X, y)\n"
                      "        for jj in T.serial(64):\n"
                      "            for i, j in T.Parallel(32, 256):\n"
                      "                y[i, j] = y[i, j] * 0.5\n"
                      "            for i, j in T.Parallel(32, 4):\n"
                      "                sq[i, j] += y[i, jj * 4 + j]\n"
                      "        T.copy(sq, S)\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(run.lowered) << run.diags();
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    auto X = sim::randomData(M * K, 93);
    std::vector<double> S(M * 4, 0), wantS(M * 4, 0);
    for (int i = 0; i < M; ++i)
        for (int jj = 0; jj < J; ++jj)
            for (int j = 0; j < 4; ++j) wantS[i * 4 + j] += X[i * K + jj * 4 + j] * std::ldexp(1.0, -(jj + 1));
    sim::Simulator s(*run.lowered->kernels[0], {{"X", &X}, {"S", &S}});
    s.run();
    EXPECT_TRUE(s.races.empty()) << s.races.front();
    sim::expectNear(S, wantS, 1e-5, "S");
    EXPECT_EQ(s.sharedStores("y_staged"), (int64_t)J * M * K);
}

} // namespace
