/// \file
/// Loops whose bounds depend on the thread, run on the CPU simulator: `T.serial(tx, n, 32)` (a strided loop each
/// lane starts at its own index, as TileKernels' MoE routing writes it) gives each thread its own trip count; the
/// simulator runs iteration i for the threads whose count passes it (src/sim/SimulatorExec.cpp), where it used to
/// refuse the kernel ("loop bounds differ between threads").
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimThreadBounds, EachLaneWalksItsOwnStridedRange) {
    const int N = 100;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def strided(A: T.Tensor((100,), \"float32\"), B: T.Tensor((100,), \"float32\"), C: T.Tensor((32,), \"float32\")):\n"
          "    with T.Kernel(1, threads=32) as bx:\n"
          "        tx = T.get_thread_binding()\n"
          "        n = T.alloc_var(\"float32\")\n"
          "        n = 0.0\n"
          "        for i in T.serial(tx, 100, 32):\n"
          "            B[i] = A[i] * 2.0\n"
          "            n = n + 1.0\n"
          "        C[tx] = n\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto a = sim::randomData(N, 5);
    std::vector<double> b(N, std::nan("")), c(32, std::nan("")), wantB(N), wantC(32);
    for (int i = 0; i < N; ++i) wantB[i] = 2 * a[i];
    for (int t = 0; t < 32; ++t) wantC[t] = t < N % 32 ? N / 32 + 1 : N / 32;   // lanes 0..3 take 4 elements, the rest 3
    sim::runAll(r, {{"A", &a}, {"B", &b}, {"C", &c}});
    sim::expectNear(b, wantB, 0, "B");
    sim::expectNear(c, wantC, 0, "C");
}

} // namespace
