/// \file
/// A thread's own T.copy between a local buffer and a tensor row, taken as vector accesses (lowerTileOps marks
/// it like a program's T.vectorized loop), moves the same elements: rows in and out of registers through 16-byte
/// vectors, the rows past S read as zeros and not written, and a copy whose start is not aligned kept element by
/// element. On the CPU simulator against the elements themselves.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <string>

namespace {

namespace sim = tilec::simtest;

void pairSums(int start, const char *target) {
    const int S = 40, D = 64, W = 32, st = start;
    std::string s0 = std::to_string(st), s1 = std::to_string(st + W), h0 = std::to_string(st / 2), h1 = std::to_string(st / 2 + W / 2);
    std::string src = "import tilelang.language as T\n"
                      "S = T.dynamic(\"S\")\n"
                      "@T.prim_func\n"
                      "def k(dense: T.Tensor((S, 64), \"float32\"), out: T.Tensor((S, 64), \"float32\")):\n"
                      "    with T.Kernel(T.ceildiv(S, 32), threads=32) as bz:\n"
                      "        tm = T.get_thread_binding(0)\n"
                      "        d = T.alloc_local([32], \"float32\")\n"
                      "        o = T.alloc_local([16], \"float32\")\n"
                      "        T.copy(dense[bz * 32 + tm, " + s0 + ":" + s1 + "], d)\n"
                      "        for i in T.unroll(16):\n"
                      "            o[i] = d[2 * i] + d[2 * i + 1]\n"
                      "        T.copy(o, out[bz * 32 + tm, " + h0 + ":" + h1 + "])\n";
    tilec::lowertest::LowerRun run;
    run.run(src, "t.tile", *tilec::Target::parse(target));
    ASSERT_TRUE(run.lowered) << run.diags();
    auto dense = sim::randomData(S * D, 91);
    std::vector<double> out(S * D, 7), want(S * D, 7);
    for (int r = 0; r < S; ++r)
        for (int i = 0; i < W / 2; ++i) want[r * D + st / 2 + i] = dense[r * D + st + 2 * i] + dense[r * D + st + 2 * i + 1];
    ASSERT_EQ(run.lowered->kernels.size(), 1u);
    sim::simulate(*run.lowered->kernels[0], {{"dense", &dense}, {"out", &out}}, {{"S", S}});
    sim::expectNear(out, want, 1e-6, "out");
}

TEST(LowerSimLocalCopy, AlignedRows) { pairSums(32, "sm_90a"); }
TEST(LowerSimLocalCopy, UnalignedRows) { pairSums(6, "sm_80"); }

} // namespace
