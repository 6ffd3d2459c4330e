/// \file
/// Barriers the author writes, run on the CPU simulator: T.sync_grid (src/sim/SimulatorGrid.cpp: every block
/// finishes the phase before the grid barrier before any block goes on), so that block 0 sums what every block
/// wrote before it; and the author's named barrier of exactly the threads of a whole-warp branch on the thread
/// index (insertSyncs accepts it there), ordering those threads' exchanges through shared memory.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimGridSync, BlockZeroReadsWhatEveryBlockWroteBeforeTheGridBarrier) {
    const int B = 6, W = 64;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def two_phase(A: T.Tensor((6 * 64,), \"float32\"), P: T.Tensor((6,), \"float32\"),\n"
          "              Out: T.Tensor((6,), \"float32\")):\n"
          "    with T.Kernel(6, threads=64) as bx:\n"
          "        tx = T.get_thread_binding()\n"
          "        s = T.alloc_shared((64,), \"float32\")\n"
          "        s[tx] = A[bx * 64 + tx]\n"
          "        T.sync_threads()\n"
          "        if tx == 0:\n"
          "            acc = T.alloc_var(\"float32\")\n"
          "            acc = 0.0\n"
          "            for i in T.serial(64):\n"
          "                acc = acc + s[i]\n"
          "            P[bx] = acc\n"
          "        T.sync_grid()\n"
          "        if tx == 0:\n"
          "            total = T.alloc_var(\"float32\")\n"
          "            total = 0.0\n"
          "            for b in T.serial(6):\n"
          "                total = total + P[b]\n"
          "            Out[bx] = total + s[63]\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto a = sim::randomData(B * W, 3);
    std::vector<double> p(B, std::nan("")), out(B, std::nan("")), wantP(B, 0.0), wantOut(B);
    double total = 0;
    for (int b = 0; b < B; ++b) {
        for (int i = 0; i < W; ++i) wantP[b] += a[b * W + i];
        total += wantP[b];
    }
    // every block sees every block's partial sum, and its own shared memory survives the barrier
    for (int b = 0; b < B; ++b) wantOut[b] = total + a[b * W + W - 1];
    sim::runAll(r, {{"A", &a}, {"P", &p}, {"Out", &out}});
    sim::expectNear(p, wantP, 1e-5, "P");
    sim::expectNear(out, wantOut, 1e-5, "Out");
}

TEST(LowerSimGridSync, NamedBarrierOfAWholeWarpBranchOrdersItsExchanges) {
    const int N = 128;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def mirror_half(A: T.Tensor((256,), \"int32\"), B: T.Tensor((128,), \"int32\")):\n"
          "    with T.Kernel(1, threads=256) as bx:\n"
          "        s = T.alloc_shared((128,), \"int32\")\n"
          "        v = T.alloc_var(\"int32\")\n"
          "        tx = T.get_thread_binding(0)\n"
          "        if tx < 128:\n"
          "            s[tx] = A[tx]\n"
          "            for i in T.serial(3):\n"
          "                T.sync_threads(3, 128)\n"
          "                v = s[127 - tx] + i\n"
          "                T.sync_threads(3, 128)\n"
          "                s[tx] = v\n"
          "            B[tx] = s[tx]\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    std::vector<double> a(256), b(N, std::nan("")), want(N);
    for (int i = 0; i < 256; ++i) a[i] = (i * 7) % 13 - 6;
    // three mirrorings: s[j] = A[127 - j] + 0, then A[j] + 0 + 1, then A[127 - j] + 1 + 2
    for (int j = 0; j < N; ++j) want[j] = a[127 - j] + 3;
    sim::runAll(r, {{"A", &a}, {"B", &b}});
    sim::expectNear(b, want, 0, "B");
}

} // namespace
