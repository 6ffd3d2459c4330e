/// \file
/// Rows of a T.gemm accumulator no one observes (passes::boundGemmRows, issue 27's skinny GEMMs): an A of
/// fewer rows than the tile (decoding's M = 16 in a 128-row tile) leaves whole 64-row panels of the
/// accumulator that only out-of-bounds stores read, and the wgmma of those panels is not issued. Lowered for
/// sm_90a (warp roles, TMA, wgmma; and the cp.async path) and run on the CPU simulator against float64
/// references, B holding an infinity (the dead rows would hold NaN had they been computed: no one sees them);
/// and the kernels whose accumulator rows are observed keep every panel.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"
#include "SkinnyGemmSource.h"

#include "tilec/LibraryCalls.h"
#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tilec;
using tilec::simtest::Simulator;

namespace {

/// A GEMM over 128 x 64 x 64 tiles of M x N x K, with `epilogue` after the K loop (acc -> C by default);
/// transA: A stored (K, M).
std::string source(int M, int N, int K, const std::string &epilogue = "", bool transA = false) {
    return simtest::skinnyGemmSource(M, N, K, epilogue, transA);
}

struct Lowered {
    lowertest::LowerRun r;
    Lowered(const std::string &src, bool tma = true) {
        Variant v{*Target::parse("sm_90a"), {}};
        v.options.clusters = false;
        v.options.splitK = false;
        v.options.tma = tma;
        r.run(src, "t.tile", v);
    }
};

/// The `rows` argument of every wgmma_ss of the lowering (-1 where one is not constant).
std::vector<int64_t> wgmmaRows(const ir::Program &p) {
    struct Find : ir::IRVisitor {
        using ir::IRVisitor::visit;
        std::vector<int64_t> rows;
        void visit(const ir::Call &c) override {
            if (passes::lib::is(c, passes::lib::Fn::WgmmaSS))
                rows.push_back(ir::constInt(passes::lib::arg(c, passes::lib::Fn::WgmmaSS, "rows")).value_or(-1));
            ir::IRVisitor::visit(c);
        }
    } f;
    for (auto &k : p.kernels) f.visit(k->body);
    return f.rows;
}

/// Runs the kernel on A (M x K, or K x M) and B with B[0, 3] = +inf; C against float64 (NaN where it is NaN).
void expectRight(const ir::Program &p, int M, int N, int K, bool transA = false) {
    auto a = simtest::quarters((size_t)M * K, 1), b = simtest::quarters((size_t)K * N, 2);
    for (auto &x : a) x = x == 0 ? 0.25 : x; // no zeros in A: the infinity reaches every row of column 3
    b[3] = std::numeric_limits<double>::infinity();
    std::vector<double> c((size_t)M * N, std::nan("")), a2 = a, b2 = b;
    ASSERT_EQ(p.kernels.size(), 1u);
    Simulator s(*p.kernels[0], {{"A", &a2}, {"B", &b2}, {"C", &c}}, {}, 0);
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        FAIL() << e.what();
    }
    for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    int wrong = 0;
    const std::vector<double> ref = simtest::skinnyGemmReference(M, N, K, a, b, transA);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            const double want = ref[(size_t)i * N + j], got = c[(size_t)i * N + j];
            const bool same = got == want || (std::isnan(got) && std::isnan(want));
            if (!same && wrong++ < 5) ADD_FAILURE() << "C[" << i << ", " << j << "] = " << got << ", expected " << want;
        }
    EXPECT_EQ(a2, a) << "A changed";
    EXPECT_EQ(b2, b) << "B changed";
}

} // namespace

// 40 rows in a 128-row tile: panel 1 (rows 64..127) is never issued, on the warp-role path and on cp.async.
TEST(SimLiveRows, SkinnyAInTallTileIssuesLivePanelsOnly) {
    for (bool tma : {true, false}) {
        Lowered run(source(40, 128, 192), tma);
        ASSERT_TRUE(run.r.lowered) << run.r.diags();
        EXPECT_EQ(wgmmaRows(*run.r.lowered), std::vector<int64_t>{40}) << "tma " << tma;
        expectRight(*run.r.lowered, 40, 128, 192);
    }
}

// A transposed A tile ((K, M) in memory): its rows are the tile's second dimension.
TEST(SimLiveRows, TransposedA) {
    Lowered run(source(16, 64, 128, "", true));
    ASSERT_TRUE(run.r.lowered) << run.r.diags();
    EXPECT_EQ(wgmmaRows(*run.r.lowered), std::vector<int64_t>{16});
    expectRight(*run.r.lowered, 16, 64, 128, true);
}

// Rows that fill every panel (100 of 128), and accumulators whose rows are observed otherwise, keep all.
TEST(SimLiveRows, ObservedRowsKeepEveryPanel) {
    Lowered full(source(100, 64, 128));
    ASSERT_TRUE(full.r.lowered) << full.r.diags();
    EXPECT_EQ(wgmmaRows(*full.r.lowered), std::vector<int64_t>{128});
    expectRight(*full.r.lowered, 100, 64, 128);
    // A column sum over all 128 rows reads the dead rows (0 times infinity is NaN there).
    const std::string colSum = "        s = T.alloc_fragment((64,), \"float\")\n"
                               "        T.reduce_sum(acc, s, dim=0)\n"
                               "        for j in T.Parallel(64):\n"
                               "            C[0, bx * 64 + j] = s[j]\n";
    Lowered summed(source(16, 64, 128, colSum));
    ASSERT_TRUE(summed.r.lowered) << summed.r.diags();
    EXPECT_EQ(wgmmaRows(*summed.r.lowered), std::vector<int64_t>{128});
    // An element-wise epilogue reads each row where it is: kept whole (the bound looks at whole-tile copies only).
    const std::string scaled = "        for i, j in T.Parallel(128, 64):\n"
                               "            acc[i, j] = acc[i, j] * 2\n"
                               "        T.copy(acc, C[by * 128, bx * 64])\n";
    Lowered twice(source(16, 64, 128, scaled));
    ASSERT_TRUE(twice.r.lowered) << twice.r.diags();
    EXPECT_EQ(wgmmaRows(*twice.r.lowered), std::vector<int64_t>{128});
    // Staged through shared memory: kept whole (the bound follows whole-tile copies into global tensors only).
    const std::string tall = "        D = T.alloc_shared((128, 64), \"float\")\n"
                             "        T.copy(acc, D)\n"
                             "        T.copy(D, C[by * 128, bx * 64])\n";
    Lowered staged(source(16, 64, 128, tall));
    ASSERT_TRUE(staged.r.lowered) << staged.r.diags();
    EXPECT_EQ(wgmmaRows(*staged.r.lowered), std::vector<int64_t>{128});
}
