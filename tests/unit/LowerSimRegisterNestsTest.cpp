/// \file
/// A T.Parallel nest over a thread's own registers (only T.alloc_local stores, no fragment) under a condition on
/// the thread index runs on the CPU simulator as TileLang runs it: whole in each thread that takes the branch,
/// untouched in the others (src/lower/LayoutUses.h, ownRegisterNest).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimRegisterNests, WholeInEachThreadUnderThreadCondition) {
    const int blocks = 2, threads = 128, V = 8, n = blocks * threads * V;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def scale_some(A: T.Tensor((2048,), \"float32\"), S: T.Tensor((256,), \"float32\"), C: T.Tensor((2048,), \"float32\")):\n"
          "    with T.Kernel(2, threads=128) as bx:\n"
          "        tx = T.get_thread_binding()\n"
          "        w = T.alloc_local((8,), \"float32\")\n"
          "        for v in T.vectorized(8):\n"
          "            w[v] = A[(bx * 128 + tx) * 8 + v]\n"
          "        if tx % 3 == 1:\n"
          "            for v in T.Parallel(8):\n"
          "                w[v] = w[v] * S[bx * 128 + tx] + v\n"
          "        for v in T.vectorized(8):\n"
          "            C[(bx * 128 + tx) * 8 + v] = w[v]\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto a = sim::randomData(n, 3), s = sim::randomData(blocks * threads, 4);
    std::vector<double> c(n, std::nan("")), want(n);
    for (int i = 0; i < n; ++i) {
        int t = i / V, tx = t % threads;
        want[i] = tx % 3 == 1 ? (double)((float)a[i] * (float)s[t] + (float)(i % V)) : a[i];
    }
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    sim::simulate(*r.lowered->kernels[0], {{"A", &a}, {"S", &s}, {"C", &c}});
    sim::expectNear(c, want, 1e-6, "C");
}

} // namespace
