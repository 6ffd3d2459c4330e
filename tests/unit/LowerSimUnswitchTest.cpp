/// \file
/// A test around a serial loop's whole body taken out of the loop (unswitchLoops) keeps what the kernel
/// computes: TileKernels' fn_normw_merge_bwd shape (a 256-column fragment over 64 of 128 threads walked down the
/// rows, the last block past the tensor's edge), and a loop whose test reads a register the loop writes (kept
/// inside). Both on the CPU simulator against a float64 reference.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimUnswitch, ColumnsDownRows) {
    const int M = 6, N = 600;
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(a: T.Tensor((6, 600), \"float32\"), w: T.Tensor((600,), \"float32\"),\n"
                      "      g: T.Tensor((6, 600), \"float32\"), wg: T.Tensor((600,), \"float32\")):\n"
                      "    with T.Kernel(T.ceildiv(600, 256)) as pid:\n"
                      "        wf = T.alloc_fragment(256, \"float32\")\n"
                      "        acc = T.alloc_fragment(256, \"float32\")\n"
                      "        T.copy(w[pid * 256], wf)\n"
                      "        T.clear(acc)\n"
                      "        for i in T.serial(6):\n"
                      "            for j in T.Parallel(256):\n"
                      "                if pid * 256 + j < 600:\n"
                      "                    g[i, pid * 256 + j] += a[i, pid * 256 + j] * wf[j]\n"
                      "                    acc[j] += a[i, pid * 256 + j]\n"
                      "        for j in T.Parallel(256):\n"
                      "            wg[pid * 256 + j] += acc[j]\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse("sm_90a"));
    ASSERT_TRUE(run.lowered) << run.diags();
    auto a = sim::randomData(M * N, 81), w = sim::randomData(N, 82), g = sim::randomData(M * N, 83), wg = sim::randomData(N, 84);
    std::vector<double> wantG = g, wantWg = wg;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) wantG[i * N + j] += a[i * N + j] * w[j], wantWg[j] += a[i * N + j];
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    sim::simulate(*run.lowered->kernels[0], {{"a", &a}, {"w", &w}, {"g", &g}, {"wg", &wg}});
    sim::expectNear(g, wantG, 1e-6, "g");
    sim::expectNear(wg, wantWg, 1e-6, "wg");
}

TEST(LowerSimUnswitch, TestReadsWhatTheLoopWrites) {
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(a: T.Tensor((24, 128), \"float32\"), c: T.Tensor((1,), \"int32\")):\n"
                      "    with T.Kernel(1, threads=128) as bx:\n"
                      "        tx = T.get_thread_binding()\n"
                      "        flag = T.alloc_var(\"int32\")\n"
                      "        flag = c[0]\n"
                      "        for i in T.serial(24):\n"
                      "            if flag > 0:\n"
                      "                a[i, tx] = 1.0\n"
                      "                flag = flag - 1\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(run.lowered) << run.diags();
    std::vector<double> a(24 * 128, 0), c{5}, want(24 * 128, 0);
    for (int i = 0; i < 5; ++i)
        for (int t = 0; t < 128; ++t) want[i * 128 + t] = 1;
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    sim::simulate(*run.lowered->kernels[0], {{"a", &a}, {"c", &c}});
    sim::expectNear(a, want, 0, "a");
}

} // namespace
