/// \file
/// `break` and `continue` of run-time loops (src/eval/InterpLoopExit.cpp) run on the CPU simulator: each thread
/// leaves its T.serial loop at its own first negative element, and a while loop skips negative elements and
/// stops once its sum passes a bound; both compute what Python's loops compute.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimLoopExit, BreakAndContinueUnderRunTimeIfs) {
    const int T = 128, W = 16;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def exits(A: T.Tensor((128, 16), \"float32\"), N: T.Tensor((128,), \"int32\"),\n"
          "         S: T.Tensor((128,), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        tx = T.get_thread_binding()\n"
          "        n = T.alloc_var(\"int32\")\n"
          "        n = 16\n"
          "        for j in T.serial(16):\n"
          "            if A[tx, j] < -1.5:\n"
          "                n = j\n"
          "                break\n"
          "            A[tx, j] = A[tx, j] * 2\n"
          "        N[tx] = n\n"
          "        i = T.alloc_var(\"int32\")\n"
          "        acc = T.alloc_var(\"float32\")\n"
          "        i = 0\n"
          "        acc = 0.0\n"
          "        while i < 16:\n"
          "            i = i + 1\n"
          "            if A[tx, i - 1] < 0:\n"
          "                continue\n"
          "            if acc > 3.0:\n"
          "                break\n"
          "            acc = acc + A[tx, i - 1]\n"
          "        S[tx] = acc\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto a = sim::randomData(T * W, 11);
    std::vector<double> want(a), n(T, std::nan("")), s(T, std::nan("")), wantN(T), wantS(T);
    for (int t = 0; t < T; ++t) {
        wantN[t] = W;
        for (int j = 0; j < W; ++j) {
            if (want[t * W + j] < -1.5) {
                wantN[t] = j;
                break;
            }
            want[t * W + j] *= 2;
        }
        double acc = 0;
        for (int i = 0; i < W; ++i) {
            if (want[t * W + i] < 0) continue;
            if (acc > 3.0) break;
            acc += want[t * W + i];
        }
        wantS[t] = acc;
    }
    int stopped = 0;
    for (int t = 0; t < T; ++t) stopped += wantN[t] < W;
    ASSERT_GT(stopped, 0) << "the data leave no loop early";
    ASSERT_LT(stopped, T) << "the data leave every loop early";
    sim::runAll(r, {{"A", &a}, {"N", &n}, {"S", &s}});
    sim::expectNear(a, want, 1e-6, "A");
    sim::expectNear(n, wantN, 0, "N");
    sim::expectNear(s, wantS, 1e-5, "S");
}

} // namespace
