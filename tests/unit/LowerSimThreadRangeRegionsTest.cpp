/// \file
/// Tile statements under `if T.get_thread_binding() < 32:` / `else:` (TileKernels' mhc_pre_big_fuse: the first
/// warp computes the mixes and a row softmax, the other two a pipelined weighted sum of the rows of x) run on the
/// CPU simulator against a reference: each branch is run by the whole block, one after the other, the second
/// reading through shared memory what the first stored (src/lower/ThreadRangeRegions.cpp).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimThreadRangeRegions, BranchesOfThreadRangesComputeAsWritten) {
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def fused(mul: T.Tensor((2, 4, 24), \"float32\"), x: T.Tensor((2, 4, 256), \"float32\"),\n"
          "          comb: T.Tensor((2, 16), \"float32\"), out: T.Tensor((2, 256), \"float32\")):\n"
          "    with T.Kernel(2, threads=96) as pid:\n"
          "        mixes_shared = T.alloc_shared(24, \"float32\")\n"
          "        if T.get_thread_binding() < 32:\n"
          "            mixes = T.alloc_fragment(24, \"float32\")\n"
          "            rms = T.alloc_fragment(1, \"float32\")\n"
          "            rms[0] = 0\n"
          "            for s in T.serial(4):\n"
          "                rms[0] += mul[pid, s, 0]\n"
          "            for j in T.Parallel(24):\n"
          "                mixes[j] = 0\n"
          "                for s in T.serial(4):\n"
          "                    mixes[j] += mul[pid, s, j]\n"
          "                mixes[j] *= rms[0]\n"
          "            T.copy(mixes, mixes_shared)\n"
          "        if T.get_thread_binding() < 32:\n"
          "            cm = T.alloc_fragment((4, 4), \"float32\")\n"
          "            row_max = T.alloc_fragment(4, \"float32\")\n"
          "            for j, k in T.Parallel(4, 4):\n"
          "                cm[j, k] = mixes_shared[j * 4 + k + 8]\n"
          "            T.reduce_max(cm, row_max, dim=1)\n"
          "            for j, k in T.Parallel(4, 4):\n"
          "                comb[pid, j * 4 + k] = cm[j, k] - row_max[j]\n"
          "        else:\n"
          "            pre = T.alloc_shared(4, \"float32\")\n"
          "            for j in T.Parallel(4):\n"
          "                pre[j] = mixes_shared[j] * 0.5\n"
          "            for h in T.Pipelined(2, num_stages=2):\n"
          "                xs = T.alloc_shared((4, 128), \"float32\")\n"
          "                xl = T.alloc_fragment((4, 128), \"float32\")\n"
          "                T.copy(x[pid, 0, h * 128], xs)\n"
          "                T.copy(xs, xl)\n"
          "                ol = T.alloc_fragment(128, \"float32\")\n"
          "                T.clear(ol)\n"
          "                for m in T.serial(4):\n"
          "                    w = pre[m]\n"
          "                    for i in T.Parallel(128):\n"
          "                        ol[i] += w * xl[m, i]\n"
          "                T.copy(ol, out[pid, h * 128])\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto mul = sim::randomData(2 * 4 * 24, 7), x = sim::randomData(2 * 4 * 256, 8);
    std::vector<double> comb(32, std::nan("")), out(512, std::nan("")), wcomb(32), wout(512, 0);
    for (int n = 0; n < 2; ++n) {
        float rms = 0;
        for (int s = 0; s < 4; ++s) rms += (float)mul[(n * 4 + s) * 24];
        std::vector<float> mixes(24, 0);
        for (int j = 0; j < 24; ++j) {
            for (int s = 0; s < 4; ++s) mixes[j] += (float)mul[(n * 4 + s) * 24 + j];
            mixes[j] *= rms;
        }
        for (int j = 0; j < 4; ++j) {
            float mx = -1e30f;
            for (int k = 0; k < 4; ++k) mx = std::max(mx, mixes[j * 4 + k + 8]);
            for (int k = 0; k < 4; ++k) wcomb[n * 16 + j * 4 + k] = mixes[j * 4 + k + 8] - mx;
        }
        for (int i = 0; i < 256; ++i)
            for (int m = 0; m < 4; ++m) wout[n * 256 + i] += mixes[m] * 0.5f * (float)x[(n * 4 + m) * 256 + i];
    }
    sim::simulate(*r.lowered->kernels[0], {{"mul", &mul}, {"x", &x}, {"comb", &comb}, {"out", &out}});
    sim::expectNear(comb, wcomb, 1e-5, "comb");
    sim::expectNear(out, wout, 1e-4, "out");
}

} // namespace
