/// \file
/// A fragment read a slice at a time at a run-time leading index (`T.copy(lse_local[k, :], lse_local_split)` and
/// `lse_local_split[i] = lse_local[k, i]` in TileLang's split-KV decoding combine, example_mha_inference.py), too
/// big to be held whole by every thread, takes a layout with copies in which every thread holds its column of every
/// slice (src/lower/CopiedLayouts.cpp; slices k * P / T' registers apart), and runs on the CPU simulator against a
/// float64 reference: the log-sum-exp of the splits' LSEs, then the splits' partial outputs weighted by it.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace {

namespace sim = tilec::simtest;

TEST(LowerSimSliceCopies, RunTimeSlicesOfACopiedFragment) {
    const int S = 4, M = 128, D = 64;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def combine(L: T.Tensor((4, 128), \"float16\"), P: T.Tensor((4, 128, 64), \"float16\"), O: T.Tensor((128, 64), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        lse = T.alloc_fragment((4, 128), \"float16\")\n"
          "        split = T.alloc_fragment((128,), \"float32\")\n"
          "        mx = T.alloc_fragment((128,), \"float32\")\n"
          "        total = T.alloc_fragment((128,), \"float32\")\n"
          "        scale = T.alloc_fragment((128,), \"float32\")\n"
          "        part = T.alloc_fragment((128, 64), \"float16\")\n"
          "        acc = T.alloc_fragment((128, 64), \"float32\")\n"
          "        T.copy(L, lse)\n"
          "        T.reduce_max(lse, mx, dim=0)\n"
          "        T.clear(total)\n"
          "        T.clear(acc)\n"
          "        for k in T.Pipelined(4):\n"
          "            T.copy(lse[k, :], split)\n"
          "            for i in T.Parallel(128):\n"
          "                total[i] += T.exp2(split[i] - mx[i])\n"
          "        for i in T.Parallel(128):\n"
          "            total[i] = T.log2(total[i]) + mx[i]\n"
          "        for k in T.Pipelined(4):\n"
          "            T.copy(P[k, :, :], part)\n"
          "            for i in T.Parallel(128):\n"
          "                split[i] = lse[k, i]\n"
          "            for i in T.Parallel(128):\n"
          "                scale[i] = T.exp2(split[i] - total[i])\n"
          "            for i, j in T.Parallel(128, 64):\n"
          "                acc[i, j] += part[i, j] * scale[i]\n"
          "        T.copy(acc, O)\n",
          "t.tile", *tilec::Target::parse("sm_90a"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto l = sim::quarters(S * M, 71), p = sim::quarters(S * M * D, 72);
    std::vector<double> o(M * D, std::nan("")), want(M * D, 0);
    for (int i = 0; i < M; ++i) {
        double mx = -INFINITY, total = 0;
        for (int k = 0; k < S; ++k) mx = std::max(mx, l[k * M + i]);
        for (int k = 0; k < S; ++k) total += std::exp2(l[k * M + i] - mx);
        double lse = std::log2(total) + mx;
        for (int k = 0; k < S; ++k)
            for (int j = 0; j < D; ++j) want[i * D + j] += p[(k * M + i) * D + j] * std::exp2(l[k * M + i] - lse);
    }
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    sim::simulate(*r.lowered->kernels[0], {{"L", &l}, {"P", &p}, {"O", &o}});
    sim::expectNear(o, want, 1e-4, "O");
}

} // namespace
