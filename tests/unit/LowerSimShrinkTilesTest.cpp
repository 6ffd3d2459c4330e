/// \file
/// GEMM tiles computed at the rows anyone observes (passes::shrinkGemmTiles, issue 27's decode GEMMs): the
/// seed's 128-row tile over an A of 1 or 16 rows becomes a 64-row tile (A's shared tile, the accumulator, the
/// copies' rows) and its T.Pipelined loop deepens in the shared memory saved; then split-K weighs the shrunk
/// tile. Lowered for sm_90a (warp roles, TMA, wgmma; and the variant without TMA) and sm_80 (cp.async,
/// mma.sync), every launch run on the CPU simulator on the same memory against float64 references, for M = 1,
/// 16, 100 and 128 (the last two keep their tile: every panel holds live rows) and K not a multiple of the
/// tile; and the kernels whose rows are observed otherwise keep their tile. SimDeepRing: the K loop's ring
/// that split-K deepens with its split count (and alone for one-wave GEMMs it does not split), at M = 65..256.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"
#include "SkinnyGemmSource.h"

#include "tilec/IRVisitor.h"
#include "tilec/passes/ShrinkGemmTiles.h"
#include "tilec/passes/SplitK.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace tilec;
using tilec::simtest::Simulator;

namespace {

/// The seed's GEMM over 128 x 64 x 64 tiles, `stages` deep, C float16.
std::string source(int M, int N, int K, int stages = 3, const std::string &epilogue = "", bool transA = false) {
    return simtest::skinnyGemmSource(M, N, K, epilogue, transA, stages, "float16");
}

/// The front end, shrinkGemmTiles, split-K for a GPU of `sms` SMs (0: off), then lower() for `arch`.
struct ShrinkRun {
    evaltest::EvalRun front;
    std::optional<ir::Program> shrunk, split, lowered;
    ShrinkRun(const std::string &src, const char *arch, bool tma = true, int sms = 0) {
        Variant v{Target::parse(arch)->withSmCount(sms ? sms : 132), {}};
        v.options.clusters = false;
        v.options.splitK = sms > 0;
        v.options.tma = tma;
        front.run(src, "t.tile");
        if (!front.program || front.diag.hasErrors()) return;
        shrunk = passes::shrinkGemmTiles(*front.program);
        split = passes::splitK(*shrunk, {v.target}, v.options);
        PassContext ctx;
        ctx.diag = &front.diag;
        ir::Program p = lower(*split, v, ctx);
        if (!front.diag.hasErrors()) lowered = std::move(p);
    }
    /// The shrunk kernel's buffer `name` (before lowering).
    ir::Buffer buffer(const std::string &name) const {
        for (auto &b : shrunk->kernels[0]->allocs)
            if (b->name == name) return b;
        return nullptr;
    }
    /// The stages of the first T.Pipelined loop of `p`'s first kernel (the shrunk program's by default).
    int stages(const ir::Program *p = nullptr) const {
        struct Find : ir::IRVisitor {
            using ir::IRVisitor::visit;
            int stages = -1;
            void visit(const ir::For &f) override {
                if (f.forKind == ir::ForKind::Pipelined && stages < 0) stages = f.numStages;
                ir::IRVisitor::visit(f);
            }
        } f;
        f.visit((p ? *p : *shrunk).kernels[0]->body);
        return f.stages;
    }
    /// The splits split-K chose (the partials launch's grid z; 1 where it kept one launch).
    int64_t splits() const {
        return split->kernels.size() == 2 ? ir::constInt(split->kernels[0]->grid[2]).value_or(-1) : 1;
    }
};

int64_t rows(const ir::Buffer &b, size_t d = 0) { return b ? ir::constInt(b->shape[d]).value_or(-1) : -1; }

/// Every launch of `r` in order on the same memory (C and the workspace filled with NaN); C against float64 (the
/// quarters keep every partial sum exact: C is the reference rounded once to float16).
void expectRight(const ShrinkRun &r, int M, int N, int K, bool transA = false) {
    auto a = simtest::quarters((size_t)M * K, 1), b = simtest::quarters((size_t)K * N, 2);
    std::vector<double> c((size_t)M * N, std::nan("")), a2 = a, b2 = b, ws;
    const auto &ks = r.lowered->kernels;
    if (ks.size() == 2) ws.assign((size_t)*ir::constInt(ks[0]->grid[2]) * M * N, std::nan(""));
    for (auto &k : ks) {
        Simulator s(*k, {{"A", &a2}, {"B", &b2}, {"C", &c}, {"splitk_partials", &ws}}, {}, 0);
        try {
            s.run();
        } catch (const simtest::SimError &e) {
            FAIL() << "M " << M << " K " << K << ": launch " << k->part << ": " << e.what();
        }
        for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    }
    int wrong = 0;
    const std::vector<double> ref = simtest::skinnyGemmReference(M, N, K, a, b, transA);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            const double want = simtest::roundToDType(DType(DType::Float16), ref[(size_t)i * N + j]), got = c[(size_t)i * N + j];
            if (!(got == want) && wrong++ < 5) ADD_FAILURE() << "M " << M << " K " << K << ": C[" << i << ", " << j << "] = " << got << ", expected " << want;
        }
    EXPECT_EQ(a2, a) << "A changed";
    EXPECT_EQ(b2, b) << "B changed";
}

} // namespace

// M = 1 and 16 in a 128-row tile: A's tile and the accumulator become 64 rows, the 3 stages of 24 KiB (16 KiB
// of A, 8 of B) become 4 of 16 (floor(3 * 24 / 16)); right on every path, K a multiple of the tile or not.
TEST(SimShrinkTiles, SkinnyTileShrinksAndDeepens) {
    for (int M : {1, 16})
        for (int K : {192, 200}) {
            for (const char *arch : {"sm_90a", "sm_80"})
                for (bool tma : {true, false}) {
                    if (!tma && std::string(arch) == "sm_80") continue;
                    ShrinkRun r(source(M, 128, K), arch, tma);
                    ASSERT_TRUE(r.lowered) << r.front.diags();
                    EXPECT_EQ(rows(r.buffer("A_s")), 64);
                    EXPECT_EQ(rows(r.buffer("acc")), 64);
                    EXPECT_EQ(rows(r.buffer("B_s")), 64);
                    EXPECT_EQ(r.stages(), 4);
                    expectRight(r, M, 128, K);
                }
        }
}

// A transposed A tile ((K, M) in memory): its rows are its second dimension.
TEST(SimShrinkTiles, TransposedA) {
    ShrinkRun r(source(16, 64, 200, 2, "", true), "sm_90a");
    ASSERT_TRUE(r.lowered) << r.front.diags();
    EXPECT_EQ(rows(r.buffer("A_s"), 0), 64);
    EXPECT_EQ(rows(r.buffer("A_s"), 1), 64);
    EXPECT_EQ(rows(r.buffer("acc")), 64);
    expectRight(r, 16, 64, 200, true);
}

// With split-K after it (2 tiles on a GPU of 16 SMs): the partials' launch runs the shrunk tile.
TEST(SimShrinkTiles, ThenSplitK) {
    ShrinkRun r(source(16, 128, 1000), "sm_90a", true, 16);
    ASSERT_TRUE(r.lowered) << r.front.diags();
    ASSERT_EQ(r.lowered->kernels.size(), 2u);
    EXPECT_EQ(rows(r.buffer("A_s")), 64);
    expectRight(r, 16, 128, 1000);
}

// Rows in every panel (M = 100, 128) keep the tile; so do accumulators whose rows are observed otherwise (a
// column sum reads all 128) and A tiles read otherwise (an element of A_s stored to C).
TEST(SimShrinkTiles, ObservedRowsKeepTheTile) {
    for (int M : {100, 128}) {
        ShrinkRun r(source(M, 64, 200), "sm_90a");
        ASSERT_TRUE(r.lowered) << r.front.diags();
        EXPECT_EQ(rows(r.buffer("A_s")), 128);
        EXPECT_EQ(r.stages(), 3);
        expectRight(r, M, 64, 200);
    }
    const std::string colSum = "        s = T.alloc_fragment((64,), \"float\")\n"
                               "        T.reduce_sum(acc, s, dim=0)\n"
                               "        for j in T.Parallel(64):\n"
                               "            C[0, bx * 64 + j] = s[j]\n";
    ShrinkRun summed(source(16, 64, 128, 3, colSum), "sm_90a");
    ASSERT_TRUE(summed.shrunk);
    EXPECT_EQ(rows(summed.buffer("acc")), 128);
    EXPECT_EQ(rows(summed.buffer("A_s")), 128);
    const std::string peek = "        T.copy(acc, C[by * 128, bx * 64])\n"
                             "        C[0, bx * 64] = A_s[0, 0]\n";
    ShrinkRun peeked(source(16, 64, 128, 3, peek), "sm_90a");
    ASSERT_TRUE(peeked.shrunk);
    EXPECT_EQ(rows(peeked.buffer("A_s")), 128);
    EXPECT_EQ(rows(peeked.buffer("acc")), 128);
}

// Issue 27's M between 64 and 256: the seed's 128-row tile over two column tiles (N = 128), K = 1100 (18 K blocks,
// the last 12 wide). On a GPU of 8 SMs the 2 tiles of M <= 128 and the 4 of M = 129 fill at most half: split K;
// on 6 SMs the 4 tiles of M = 192, 256 fill more than half, one block per SM: no split. A stage reads up to 16
// KiB of A and 8 of B; a tensor that several blocks re-read counts once (A: both column blocks, about half of
// its tile from DRAM; B too once there are two row blocks). Either way the ring deepens past the 3 stages
// written until the stages ahead keep 48 KiB of DRAM reads in flight per SM: 5 stages of 16 KiB from DRAM at
// M = 128, 8 of 7.7 at M = 129 (A and B both re-read), capped at 6 stages of 24 KiB by sm_80's 163 KiB per
// block. Every path right, the partials summed in split order, rows past M (65, 100, 129: a second tile of 1
// row, 192) and the short last K block included.
TEST(SimDeepRing, RingDeepensAtEdgeRows) {
    struct Want {
        int M, sms, splits, stages;
    };
    for (const Want w : {Want{65, 8, 3, 6}, Want{100, 8, 2, 5}, Want{128, 8, 2, 5}, Want{129, 8, 2, 8}, Want{192, 6, 1, 7},
                         Want{256, 6, 1, 6}})
        for (const char *arch : {"sm_90a", "sm_80"})
            for (bool tma : {true, false}) {
                if (!tma && std::string(arch) == "sm_80") continue;
                ShrinkRun r(source(w.M, 128, 1100), arch, tma, w.sms);
                ASSERT_TRUE(r.lowered) << r.front.diags();
                EXPECT_EQ(r.splits(), w.splits) << "M " << w.M;
                EXPECT_EQ(r.stages(&*r.split), std::string(arch) == "sm_80" ? std::min(w.stages, 6) : w.stages) << "M " << w.M << " " << arch;
                expectRight(r, w.M, 128, 1100);
            }
}

// Tiles that fill more than half the SMs but are one block per SM (M = 128, 2 column tiles on 3 SMs): no split,
// the ring deepens 3 -> 5 (A's tiles re-read by both blocks count half: 16 KiB a stage from DRAM, 3 stages
// ahead 47 KiB); two blocks on one SM each (4 tiles on 3 SMs, M = 256) or a ring of one stage keep the loop as
// written.
TEST(SimDeepRing, OneWaveWithoutSplitDeepens) {
    for (const char *arch : {"sm_90a", "sm_80"}) {
        ShrinkRun r(source(128, 128, 1000), arch, true, 3);
        ASSERT_TRUE(r.lowered) << r.front.diags();
        EXPECT_EQ(r.splits(), 1);
        EXPECT_EQ(r.stages(&*r.split), 5);
        expectRight(r, 128, 128, 1000);
    }
    ShrinkRun two(source(256, 128, 1000), "sm_90a", true, 3);
    ASSERT_TRUE(two.lowered) << two.front.diags();
    EXPECT_EQ(two.splits(), 1);
    EXPECT_EQ(two.stages(&*two.split), 3);
    ShrinkRun one(source(128, 128, 1000, 1), "sm_90a", true, 3);
    ASSERT_TRUE(one.split);
    EXPECT_EQ(one.stages(&*one.split), 1);
}
