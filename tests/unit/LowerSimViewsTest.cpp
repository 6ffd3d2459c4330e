/// \file
/// T.reshape / T.view (src/eval/TileLangViews.cpp) run on the CPU simulator: element accesses through views of a
/// global tensor, a shared buffer (written through a view by each thread, read back in the buffer's own shape by
/// another thread) and a local array land on the same elements as row-major indexing of the buffer would.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimViews, ReshapedGlobalSharedAndLocal) {
    const int n = 37, topk = 6, total = n * topk;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "def reversed_blocks(n, topk):\n"
          "    @T.prim_func\n"
          "    def main(X: T.Tensor((n, topk), \"float32\"), Y: T.Tensor((n, topk), \"float32\")):\n"
          "        with T.Kernel(T.ceildiv(n * topk, 128), threads=128) as bx:\n"
          "            x1 = T.reshape(X, (n * topk,))\n"
          "            y1 = T.view(Y, (n * topk,))\n"
          "            s = T.alloc_shared((4, 32), \"float32\")\n"
          "            s1 = T.view(s, (128,))\n"
          "            loc = T.alloc_local((2, 4), \"float32\")\n"
          "            l1 = T.reshape(loc, (8,))\n"
          "            tx = T.get_thread_binding()\n"
          "            i = bx * 128 + tx\n"
          "            for j in T.serial(8):\n"
          "                l1[j] = j\n"
          "            s1[tx] = 0\n"
          "            if i < n * topk:\n"
          "                s1[tx] = x1[i]\n"
          "            T.sync_threads()\n"
          "            if i < n * topk:\n"
          "                y1[i] = s[(127 - tx) // 32, (127 - tx) % 32] * 2 + loc[1, 3]\n"
          "    return main\n"
          "k = reversed_blocks(37, 6)\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto x = sim::randomData(total, 5);
    std::vector<double> y(total, std::nan("")), want(total);
    for (int i = 0; i < total; ++i) {
        int mirror = i / 128 * 128 + 127 - i % 128;
        want[i] = (mirror < total ? x[mirror] : 0.0) * 2 + 7;
    }
    for (auto &k : r.lowered->kernels) {
        sim::Simulator s(*k, {{"X", &x}, {"Y", &y}});
        s.run();
        for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    }
    sim::expectNear(y, want, 1e-6, "Y");
}

} // namespace
