/// \file
/// Reductions of multi-dimensional fragments whose results a nest reads broadcast along its trailing variables
/// (`x[i, j, k] - row_max[i, j]`): layout inference spreads such results over the threads like the nest
/// (issue 25), so they stay in registers; checked for numbers on the CPU simulator against references computed
/// here, beside the layouts themselves, with the ones that cannot be spread (a broadcast along a middle
/// variable, a run of trailing iterations wider than a thread's vector) kept whole in every thread.
#include "LowerSimulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace tilec;
using lowertest::LowerRun;
using simtest::expectNear, simtest::randomData, simtest::Simulator;

namespace {

/// Sinkhorn's first steps on a (B, H, H) block: softmax along k, then each column (along j) normalized.
std::string sinkhorn(int B, int H, int threads) {
    std::string b = std::to_string(B), h = std::to_string(H);
    return "import tilelang.language as T\n"
           "@T.prim_func\n"
           "def k(X: T.Tensor((" + b + ", " + h + ", " + h + "), \"float32\"), Y: T.Tensor((" + b + ", " + h + ", " + h +
           "), \"float32\"), R: T.Tensor((" + b + ", " + h + "), \"float32\")):\n"
           "    with T.Kernel(1, threads=" + std::to_string(threads) + ") as bx:\n"
           "        f = T.alloc_fragment((" + b + ", " + h + ", " + h + "), \"float\")\n"
           "        mx = T.alloc_fragment((" + b + ", " + h + "), \"float\")\n"
           "        rs = T.alloc_fragment((" + b + ", " + h + "), \"float\")\n"
           "        cs = T.alloc_fragment((" + b + ", " + h + "), \"float\")\n"
           "        T.copy(X, f)\n"
           "        T.reduce_max(f, mx, dim=2)\n"
           "        for i, j, k in T.Parallel(" + b + ", " + h + ", " + h + "):\n"
           "            f[i, j, k] = T.exp(f[i, j, k] - mx[i, j])\n"
           "        T.reduce_sum(f, rs, dim=2)\n"
           "        for i, j, k in T.Parallel(" + b + ", " + h + ", " + h + "):\n"
           "            f[i, j, k] = f[i, j, k] / rs[i, j]\n"
           "        T.reduce_sum(f, cs, dim=1)\n"
           "        for i, j, k in T.Parallel(" + b + ", " + h + ", " + h + "):\n"
           "            f[i, j, k] = f[i, j, k] / cs[i, k]\n"
           "        T.copy(f, Y)\n"
           "        T.copy(rs, R)\n";
}

void sinkhornCase(int B, int H, int threads, const char *rowLayout) {
    LowerRun r;
    r.dumpAfter = "inferLayouts";
    r.run(sinkhorn(B, H, threads), "t.tile", *Target::parse("sm_90a"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_NE(r.dump.str().find(rowLayout), std::string::npos) << r.dump.str();
    auto x = randomData((size_t)B * H * H, 11, -3, 3);
    std::vector<double> y(x.size(), std::nan("")), rs((size_t)B * H, std::nan("")), want(x.size()), wantRs(rs.size());
    for (int i = 0; i < B; ++i) {
        for (int j = 0; j < H; ++j) {
            double m = -INFINITY, s = 0;
            for (int c = 0; c < H; ++c) m = std::max(m, x[(i * H + j) * H + c]);
            for (int c = 0; c < H; ++c) s += want[(i * H + j) * H + c] = std::exp(x[(i * H + j) * H + c] - m);
            for (int c = 0; c < H; ++c) want[(i * H + j) * H + c] /= s;
            wantRs[i * H + j] = s;
        }
        for (int c = 0; c < H; ++c) {
            double s = 0;
            for (int j = 0; j < H; ++j) s += want[(i * H + j) * H + c];
            for (int j = 0; j < H; ++j) want[(i * H + j) * H + c] /= s;
        }
    }
    Simulator s(*k, {{"X", &x}, {"Y", &y}, {"R", &rs}}, {});
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        FAIL() << e.what();
    }
    for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    expectNear(y, want, 1e-5, "Y");
    expectNear(rs, wantRs, 1e-5, "R");
}

} // namespace

// 32 x 4 x 4 over 128 threads: each thread's 4-wide vector is one (i, j) row, so the row results take one slot.
TEST(LowerSimBroadcast, RowResultsInTheNestsThreads) { sinkhornCase(32, 4, 128, "fragment mx: distributed over 128 threads, 1-wide"); }
// 16 x 2 x 2 over 32 threads: the nest's vectors narrow to the rows of 2, one row result per vector.
TEST(LowerSimBroadcast, ShortRowsInNarrowVectors) {
    sinkhornCase(16, 2, 32, "fragment mx: distributed over 32 threads, 1-wide");
}
// 4 x 8 x 8 over 32 threads: rows of 8 wider than a 4-wide vector: several threads need each row result, which stays whole in every one.
TEST(LowerSimBroadcast, RowsWiderThanAVectorStayReplicated) { sinkhornCase(4, 8, 32, "fragment mx: replicated"); }
