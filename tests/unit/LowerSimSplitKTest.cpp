/// \file
/// Issue 27's split-K GEMM (benchmarks/gemm_splitk.tile) lowered for sm_90a and run on the CPU simulator
/// (LowerSimulator.h), launch after launch on the same memory: the first launch's warp roles (TMA producer,
/// wgmma consumer) write each split's float32 partial tile into the workspace, the second sums the partials
/// in split order and rounds once. Checked against float64 references, with shapes whose tiles and K blocks
/// do not divide them, splits chosen by the file (one wave of blocks) and given, and bit-identical results
/// under different interleavings of the roles.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;
using tilec::simtest::quarters;

namespace {

struct SplitCase {
    int M, N, K, bm, bn, bk, stages, splits; ///< splits 0: the file chooses
};

/// The lowering of one instantiation for sm_90a (clusters off: the simulator runs one block at a time).
void lowerCase(LowerRun &r, const SplitCase &c) {
    std::string call = "k = matmul_splitk(" + std::to_string(c.M) + ", " + std::to_string(c.N) + ", " + std::to_string(c.K) +
                       ", block_M=" + std::to_string(c.bm) + ", block_N=" + std::to_string(c.bn) + ", block_K=" +
                       std::to_string(c.bk) + ", num_stages=" + std::to_string(c.stages) + ", threads=128, splits=" +
                       std::to_string(c.splits) + ")";
    Variant v{*Target::parse("sm_90a"), {}};
    v.options.clusters = false;
    r.run(simtest::withExport("gemm_splitk.tile", call, "benchmarks"), "gemm_splitk.tile", v);
}

/// The splits the lowering got: the extent of the first launch's grid z.
int64_t splitsOf(const LowerRun &r) {
    for (auto &k : r.lowered->kernels)
        if (k->name == "k" && k->part == 0) return ir::constInt(k->grid[2]).value_or(-1);
    return -1;
}

/// Runs both launches on A and B and returns C (the workspace P sized for `splits`).
std::vector<double> run(const LowerRun &r, const SplitCase &c, int64_t splits, const std::vector<double> &a,
                        const std::vector<double> &b, uint64_t seed) {
    std::vector<double> cOut((size_t)c.M * c.N, std::nan("")), p((size_t)splits * c.M * c.N, std::nan(""));
    std::vector<double> a2 = a, b2 = b;
    int launches = 0;
    for (auto &k : r.lowered->kernels) {
        if (k->name != "k") continue;
        EXPECT_EQ(k->part, launches++);
        if (k->part == 0) EXPECT_GT(k->producerThreads, 0) << "the partials' launch has no warp roles";
        Simulator s(*k, {{"A", &a2}, {"B", &b2}, {"C", &cOut}, {"P", &p}}, {}, seed);
        try {
            s.run();
        } catch (const simtest::SimError &e) {
            ADD_FAILURE() << "launch " << launches << ": " << e.what();
        }
        for (auto &race : s.races) ADD_FAILURE() << "launch " << launches << ": race: " << race;
    }
    EXPECT_EQ(launches, 2);
    return cOut;
}

std::vector<double> reference(const SplitCase &c, const std::vector<double> &a, const std::vector<double> &b) {
    std::vector<double> ref((size_t)c.M * c.N);
    for (int i = 0; i < c.M; ++i)
        for (int j = 0; j < c.N; ++j) {
            double s = 0;
            for (int k = 0; k < c.K; ++k) s += a[(size_t)i * c.K + k] * b[(size_t)k * c.N + j];
            ref[(size_t)i * c.N + j] = s;
        }
    return ref;
}

void exactCase(const SplitCase &c, int64_t expectedSplits) {
    LowerRun r;
    lowerCase(r, c);
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(splitsOf(r), expectedSplits);
    auto a = quarters((size_t)c.M * c.K, 1), b = quarters((size_t)c.K * c.N, 2);
    auto ref = reference(c, a, b);
    auto got = run(r, c, expectedSplits, a, b, 0);
    int wrong = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        double want = simtest::roundToDType(DType(DType::Float16), ref[i]);
        if (!(got[i] == want) && wrong++ < 5) ADD_FAILURE() << "C[" << i / c.N << ", " << i % c.N << "] = " << got[i] << ", expected " << want;
    }
}

} // namespace

// 100 x 72 x 456 on 64 x 64 x 64 tiles: 4 output tiles, 8 K blocks (the last one 8 wide): the file splits
// K 8 ways (4 x 8 = 32 blocks, short of a wave: every divisor tried), one K block per split.
TEST(SimSplitK, SplitsChosenForAWaveOddShape) { exactCase({100, 72, 456, 64, 64, 64, 2, 0}, 8); }
// Two splits given, four K blocks each through a two-stage ring (the ring wraps inside a split).
TEST(SimSplitK, TwoSplitsGivenRingWraps) { exactCase({100, 72, 456, 64, 64, 64, 2, 2}, 2); }
// One split: the partials' launch is the plain GEMM, the second launch a rounding copy.
TEST(SimSplitK, OneSplit) { exactCase({72, 64, 200, 64, 64, 64, 3, 1}, 1); }

// Values that round: three interleavings of the roles give the same bits, within float32's error of the
// float64 reference (rounded to float16 once).
TEST(SimSplitK, BitIdenticalUnderOtherInterleavings) {
    const SplitCase c{80, 64, 384, 64, 64, 64, 2, 3};
    LowerRun r;
    lowerCase(r, c);
    ASSERT_TRUE(r.lowered) << r.diags();
    ASSERT_EQ(splitsOf(r), 3);
    auto a = simtest::randomData((size_t)c.M * c.K, 5), b = simtest::randomData((size_t)c.K * c.N, 6);
    auto first = run(r, c, 3, a, b, 0);
    for (uint64_t seed : {1, 2}) {
        auto again = run(r, c, 3, a, b, seed);
        EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(double)), 0) << "seed " << seed;
    }
    simtest::expectNear(first, reference(c, a, b), 2e-3, "C");
}
