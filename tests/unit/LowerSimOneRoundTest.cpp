/// \file
/// Two issue-25 mechanisms checked for numbers and races on the CPU simulator (which reports a shared-memory
/// race where a barrier is missing): insertSyncs' one-round loops, which carry no hazards into a next round (a
/// loop of constant trip count 1 loses the barrier between its last read and its first write of a shared
/// scratch; a loop whose trip count is only known at run time keeps it, and so does an outer loop around a
/// one-round inner one, run with 0, 1 and several rounds), and inferLayouts' vector width for the busiest thread
/// (256 floats 2-wide over all 128 threads, 768 4-wide in 2 rounds, 600 columns in 256-column blocks with the
/// last block past the tensor's edge).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "LowerSimUtil.h"

#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

using namespace tilec;
using lowertest::LowerRun;
using simtest::expectNear, simtest::randomData;

namespace {

using simtest::countSyncs;
using simtest::vectorLanes;

/// Rounds of 128 elements of X through a shared scratch, each thread storing its neighbour's element:
/// Y[r * 128 + i] = X[r * 128 + (i + 1) % 128]. A round's write of the scratch follows the previous round's
/// reads by other threads, so only a loop of more than one round needs a barrier between them. `rounds` is the
/// loop's trip count (a constant or `T.ceildiv(n, 128)`); `outer` > 0 wraps it in an outer loop of that many
/// rounds over the tensor's blocks of `128 * rounds` elements.
std::string neighbours(const std::string &n, const std::string &rounds, int outer) {
    std::string base = outer ? "(o * " + rounds + " + r) * 128" : "r * 128";
    std::string indent = outer ? "            " : "        ";
    std::string s = "import tilelang.language as T\n"
                    "n = " + n + "\n"
                    "@T.prim_func\n"
                    "def k(X: T.Tensor((n,), 'float32'), Y: T.Tensor((n,), 'float32')):\n"
                    "    with T.Kernel(1, threads=128) as bx:\n"
                    "        s = T.alloc_shared((128,), 'float32')\n";
    if (outer) s += "        for o in T.serial(" + std::to_string(outer) + "):\n";
    s += indent + "for r in T.serial(" + rounds + "):\n" +
         indent + "    for i in T.Parallel(128):\n" +
         indent + "        s[i] = X[" + base + " + i]\n" +
         indent + "    for i in T.Parallel(128):\n" +
         indent + "        Y[" + base + " + i] = s[(i + 1) % 128] * 2\n";
    return s;
}

/// Lowers `src` for sm_80, checks its barrier count, runs it over n elements (the scalar n where it is a
/// T.dynamic size) and compares Y with the reference over the first `covered` elements (the rest stay NaN).
void runNeighbours(const std::string &src, int n, int covered, int syncs, bool dynamic) {
    LowerRun r;
    r.run(src, "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_EQ(countSyncs(k->body), syncs);
    auto x = randomData((size_t)n, 5);
    std::vector<double> y((size_t)n, std::nan("")), want = y;
    for (int i = 0; i < covered; ++i) want[i] = 2 * x[i / 128 * 128 + (i % 128 + 1) % 128];
    std::map<std::string, double> scalars;
    if (dynamic) scalars["n"] = n;
    simtest::simulate(*k, {{"X", &x}, {"Y", &y}}, scalars);
    for (int i = 0; i < n; ++i) {
        if (i < covered) EXPECT_EQ(y[i], want[i]) << "Y[" << i << "]";
        else EXPECT_TRUE(std::isnan(y[i])) << "Y[" << i << "] written";
    }
}

} // namespace

// One round: the barrier between the scratch's writes and reads only; nothing is carried into a next round.
TEST(LowerSimOneRound, ConstantOneRoundCarriesNoBarrier) {
    runNeighbours(neighbours("128", "1", 0), 128, 128, 1, false);
}

// Three rounds: a second barrier orders each round's reads before the next round's writes (the simulator
// reports the race without it).
TEST(LowerSimOneRound, ConstantRoundsKeepTheirBarrier) {
    runNeighbours(neighbours("384", "3", 0), 384, 384, 2, false);
}

// A trip count known only at run time is not one round, even where it happens to be: the barrier stays, and
// the kernel is right (and race-free) with 0, 1 and 3 rounds.
TEST(LowerSimOneRound, RunTimeTripCountKeepsTheBarrier) {
    std::string src = neighbours("T.dynamic('n')", "T.ceildiv(n, 128)", 0);
    for (int n : {0, 128, 384}) {
        SCOPED_TRACE("n = " + std::to_string(n));
        runNeighbours(src, n, n, 2, true);
    }
}

// A one-round inner loop inside a loop of 3 rounds: the inner loop carries nothing, but the outer one does, so
// the barrier between one outer round's reads and the next one's writes stays (the simulator checks the race).
TEST(LowerSimOneRound, OuterRoundsAroundAOneRoundLoop) {
    runNeighbours(neighbours("384", "1", 3), 384, 384, 2, false);
}

// A loop of constant trip count 0 runs nothing (its body keeps the barrier between its own write and read).
TEST(LowerSimOneRound, ZeroRoundLoopRunsNothing) {
    runNeighbours(neighbours("128", "0", 0), 128, 0, 1, false);
}

namespace {

/// y = x * w over blocks of `blk` floats in 128 threads, `n` elements (the last block may pass the edge).
void busiestThread(int n, int blk, int64_t lanes) {
    const std::string N = std::to_string(n), B = std::to_string(blk);
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(x: T.Tensor((" + N + ",), 'float32'), w: T.Tensor((" + N + ",), 'float32'),\n"
                      "      y: T.Tensor((" + N + ",), 'float32')):\n"
                      "    with T.Kernel(T.ceildiv(" + N + ", " + B + "), threads=128) as pid:\n"
                      "        for j in T.Parallel(" + B + "):\n"
                      "            y[pid * " + B + " + j] = x[pid * " + B + " + j] * w[pid * " + B + " + j]\n";
    LowerRun r;
    r.run(src, "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_EQ(vectorLanes(k->body, "x"), lanes);
    EXPECT_EQ(vectorLanes(k->body, "y"), lanes);
    auto x = randomData((size_t)n, 21), w = randomData((size_t)n, 22);
    std::vector<double> y((size_t)n, std::nan("")), want(y.size());
    for (int i = 0; i < n; ++i) want[i] = x[i] * w[i];
    simtest::simulate(*k, {{"x", &x}, {"w", &w}, {"y", &y}});
    expectNear(y, want, 1e-6, "y");
}

} // namespace

// 256 floats over 128 threads: 2-wide in every thread (not 4-wide in half of them).
TEST(LowerSimOneRound, BusiestThreadWidthAllThreads) { busiestThread(1024, 256, 2); }
// 768 floats: 4-wide in 2 rounds (2-wide would take 3 accesses per thread).
TEST(LowerSimOneRound, BusiestThreadWidthTwoRounds) { busiestThread(1536, 768, 4); }
// 600 floats in blocks of 256: the last block's vectors past the edge are tested once per vector.
TEST(LowerSimOneRound, BusiestThreadWidthPastTheEdge) { busiestThread(600, 256, 2); }
// 8192 floats stay 4-wide (16 rounds either way).
TEST(LowerSimOneRound, BusiestThreadWidthLargeBlocks) { busiestThread(8192, 8192, 4); }

// A transpose through a shared tile with padded rows (64 + 4 float16): the copy out moves 4-wide vectors that
// every padded row starts aligned (rowAlignment), and the result is the transpose.
TEST(LowerSimOneRound, PaddedSharedRowsTranspose) {
    std::string src = "import tilelang.language as T\n"
                      "@T.prim_func\n"
                      "def k(A: T.Tensor((128, 128), 'float16'), B: T.Tensor((128, 128), 'float16')):\n"
                      "    with T.Kernel(2, 2, threads=128) as (bx, by):\n"
                      "        s = T.alloc_shared((64, 68), 'float16')\n"
                      "        for i, j in T.Parallel(64, 64):\n"
                      "            s[j, i] = A[by * 64 + i, bx * 64 + j]\n"
                      "        for j, i in T.Parallel(64, 64):\n"
                      "            B[bx * 64 + j, by * 64 + i] = s[j, i]\n";
    LowerRun r;
    r.run(src, "t.tile", *Target::parse("sm_80"));
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k) << r.diags();
    EXPECT_EQ(vectorLanes(k->body, "B"), 4);
    auto a = simtest::quarters(128 * 128, 3);
    std::vector<double> b(a.size(), std::nan("")), want(a.size());
    for (int i = 0; i < 128; ++i)
        for (int j = 0; j < 128; ++j) want[j * 128 + i] = a[i * 128 + j];
    simtest::simulate(*k, {{"A", &a}, {"B", &b}});
    expectNear(b, want, 0, "B");
}
