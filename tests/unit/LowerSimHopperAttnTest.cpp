/// \file
/// FlashAttention on the Hopper schedule, checked on the CPU simulator (src/sim/Simulator.h):
/// benchmarks/flash_fwd.tile and examples/flash_attn.tile lowered for sm_90a into warp roles (Q loaded once by
/// TMA, K and V through a TMA ring behind separate full/empty barriers, QK^T as wgmma SS, the softmax in
/// registers, P.V as wgmma RS with P in registers) and run under several interleavings against float64,
/// causal and not, with key lengths the tiles do not divide, under the schedule's options (--pingpong,
/// --intra-overlap, persistent walks); and the schedule as lowered. Its mutations, which the simulator must
/// report, are in LowerSimHopperAttnMutantTest.cpp (helpers: LowerSimHopperAttnUtil.h).
#include "LowerSimHopperAttnUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

using namespace tilec;
using namespace tilec::simtest::attn;
using tilec::simtest::Outcome;
using tilec::simtest::callCounts;

namespace {

// benchmarks/flash_fwd.tile: its defaults (128 x 32 tiles, 2 stages, one consumer warpgroup of 128 rows)...
TEST(SimHopperAttn, CausalBenchmarkDefaults) { attnCase({1, 2, 256, 64, true, 128, 32, 2, 128}); }
TEST(SimHopperAttn, NonCausalBenchmarkDefaults) { attnCase({1, 1, 256, 64, false, 128, 32, 2, 128}); }
// ... keys past the end masked (and Q's rows past it zero-filled by TMA, their output rows cut off)
TEST(SimHopperAttn, NonCausalRaggedLength) { attnCase({1, 1, 200, 64, false, 128, 32, 2, 128}); }
TEST(SimHopperAttn, CausalRaggedLength) { attnCase({1, 1, 200, 64, true, 128, 32, 2, 128}, {0, 2}); }
// two consumer warpgroups of 64 rows each, 128 x 64 and 128 x 128 tiles, D = 128, three stages
TEST(SimHopperAttn, CausalTwoConsumerWarpgroups) { attnCase({1, 1, 256, 64, true, 128, 64, 2, 256}, {0, 3}); }
TEST(SimHopperAttn, NonCausalTwoWarpgroupsD128) { attnCase({1, 1, 160, 128, false, 128, 128, 3, 256}, {0, 5}); }
// a ring of one stage: K's stage is released after QK^T, so the producer loads the next K during the softmax
TEST(SimHopperAttn, OneStage) { attnCase({1, 1, 128, 64, true, 64, 64, 1, 128}); }
// examples/flash_attn.tile as written (64 x 64 tiles, one consumer warpgroup)
TEST(SimHopperAttn, ExampleCausal) { attnCase({1, 2, 192, 64, true, 64, 64, 2, 128, true}); }
// issue 10's coverage: bfloat16 (the probabilities packed to bf16 pairs as wgmma RS's A), D = 64 with the
// benchmark's 128 x 128 tiles over two consumer warpgroups, D = 256 (64-key blocks), grouped-query attention
TEST(SimHopperAttn, Bfloat16CausalTwoWarpgroups) {
    attnCase({1, 1, 256, 64, true, 128, 64, 2, 256, false, ", dtype='bfloat16'"}, {0, 3});
}
TEST(SimHopperAttn, Bfloat16NonCausalRagged) { attnCase({1, 1, 200, 128, false, 128, 64, 2, 256, false, ", dtype='bfloat16'"}, {0}); }
TEST(SimHopperAttn, D64BenchmarkTiles) { attnCase({1, 1, 256, 64, true, 128, 128, 2, 256}, {0, 4}); }
TEST(SimHopperAttn, D256) { attnCase({1, 1, 128, 256, true, 64, 64, 2, 128}, {0}); }
TEST(SimHopperAttn, GroupedQueryAttention) { attnCase({1, 4, 128, 64, true, 64, 32, 2, 128, false, "", 2}, {0, 1}); }
// the schedule options' other settings: the mask on every key block, the scale as its own pass
TEST(SimHopperAttn, CausalMaskOnEveryBlock) {
    attnCase({1, 1, 256, 64, true, 128, 32, 2, 128, false, ", split_mask=False"}, {0, 2});
}
TEST(SimHopperAttn, ScaleNotFolded) { attnCase({1, 1, 200, 64, false, 128, 32, 2, 128, false, ", fold_scale=False"}, {0, 2}); }

// --pingpong: the two consumer warpgroups take turns at their wgmmas (named barriers 4 and 5)
TEST(SimHopperAttn, PingPongCausal) { attnCase(pingPong({1, 1, 256, 64, true, 128, 64, 2, 256}), {0, 1, 3}); }
TEST(SimHopperAttn, PingPongNonCausalRaggedD128) { attnCase(pingPong({1, 1, 200, 128, false, 128, 128, 2, 256}), {0, 2}); }
TEST(SimHopperAttn, PingPongBfloat16OneStage) {
    attnCase(pingPong({1, 1, 256, 64, true, 128, 64, 1, 256, false, ", dtype='bfloat16'"}), {0, 5});
}

// --intra-overlap: QK^T of block ko issued with P.V of ko - 1, the softmax under that P.V
TEST(SimHopperAttn, OverlapCausal) { attnCase(overlapped({1, 2, 256, 64, true, 128, 32, 2, 128}), {0, 1, 2}); }
TEST(SimHopperAttn, OverlapNonCausalRagged) { attnCase(overlapped({1, 1, 200, 64, false, 128, 32, 2, 128}), {0, 3}); }
TEST(SimHopperAttn, OverlapCausalRagged) { attnCase(overlapped({1, 1, 200, 64, true, 128, 32, 2, 128}), {0, 2}); }
TEST(SimHopperAttn, OverlapTwoWarpgroupsD128) { attnCase(overlapped({1, 1, 160, 128, false, 128, 128, 3, 256}), {0, 5}); }
TEST(SimHopperAttn, OverlapBfloat16CausalTwoWarpgroups) {
    attnCase(overlapped({1, 1, 256, 64, true, 128, 64, 2, 256, false, ", dtype='bfloat16'"}), {0, 3});
}
// a ring of one stage: K's stage of ko is released before the wait for K of ko + 1, V's of ko - 1 after it
TEST(SimHopperAttn, OverlapOneStage) { attnCase(overlapped({1, 1, 128, 64, true, 64, 64, 1, 128}), {0, 1}); }
// one key block (the prologue's QK^T, no next one) and grouped-query heads
TEST(SimHopperAttn, OverlapOneKeyBlock) { attnCase(overlapped({1, 1, 64, 64, false, 64, 64, 2, 128}), {0, 1}); }
// the seed's file as written (P written by the exponentials, its sum over P: those after P.V, the rest under it)
TEST(SimHopperAttn, OverlapExampleCausal) { attnCase(overlapped({1, 2, 192, 64, true, 64, 64, 2, 128, true}), {0, 1}); }
TEST(SimHopperAttn, OverlapPingPongExampleD128) {
    attnCase(bothSchedules({1, 2, 256, 128, true, 128, 64, 2, 256, true}), {0, 1});
}
// both: the two wgmmas of an iteration issued in one ping-pong turn
TEST(SimHopperAttn, OverlapPingPongCausal) { attnCase(bothSchedules({1, 1, 256, 64, true, 128, 64, 2, 256}), {0, 1, 3}); }
TEST(SimHopperAttn, OverlapPingPongNonCausalRaggedD128) {
    attnCase(bothSchedules({1, 1, 200, 128, false, 128, 128, 2, 256}), {0, 2});
}
TEST(SimHopperAttn, OverlapPingPongCausalRaggedBfloat16) {
    attnCase(bothSchedules({1, 1, 200, 64, true, 128, 64, 2, 256, false, ", dtype='bfloat16'"}), {0, 4});
}
TEST(SimHopperAttn, OverlapPingPongOneStage) { attnCase(bothSchedules({1, 1, 256, 64, false, 128, 64, 1, 256}), {0, 1}); }
TEST(SimHopperAttn, OverlapPingPongOneKeyBlock) {
    AttnCase a = bothSchedules({1, 1, 64, 64, true, 128, 64, 2, 256});
    a.noPersistent = true; // one output tile
    attnCase(a, {0, 1});
}
TEST(SimHopperAttn, OverlapPingPongUnfoldedScale) {
    attnCase(bothSchedules({1, 1, 200, 64, true, 128, 64, 2, 256, false, ", fold_scale=False, split_mask=False"}), {0, 1});
}
TEST(SimHopperAttn, OverlapGroupedQuery) { attnCase(overlapped({1, 4, 128, 64, true, 64, 32, 2, 128, false, "", 2}), {0, 1}); }

// seq=None: the sequence length a T.dynamic size (one lowering for every length; keys past the end masked)
AttnCase dynamicSeq(AttnCase a) {
    a.dynamicSeq = true;
    return a;
}
TEST(SimHopperAttn, DynamicSeqNonCausalRagged) { attnCase(dynamicSeq({1, 1, 200, 64, false, 128, 64, 2, 256}), {0, 2}); }
TEST(SimHopperAttn, DynamicSeqCausalRagged) { attnCase(dynamicSeq({1, 1, 200, 64, true, 128, 64, 2, 256}), {0, 1}); }
TEST(SimHopperAttn, DynamicSeqDivisible) { attnCase(dynamicSeq({1, 2, 128, 64, true, 64, 32, 2, 128}), {0}); }
TEST(SimHopperAttn, DynamicSeqShort) { attnCase(dynamicSeq({1, 1, 37, 64, false, 64, 32, 2, 128}), {0, 1}); }
TEST(SimHopperAttn, DynamicSeqOverlapped) { attnCase(overlapped(dynamicSeq({1, 1, 200, 64, true, 128, 64, 2, 256})), {0, 3}); }

// Persistent roles walking several output tiles each (two simulated blocks; 4 to 8 tiles): Q reloaded per tile
// behind its full/empty pair, the ring running on across tiles; causal tiles walked with the query block
// slowest (longest first, the benchmark's HEAVY_FIRST order across the whole grid)
TEST(SimHopperAttn, PersistentCausalWalksTiles) { attnCase({1, 2, 256, 64, true, 64, 32, 2, 128}, {0, 1, 2}); }
TEST(SimHopperAttn, PersistentNonCausalRagged) { attnCase({1, 2, 200, 64, false, 64, 64, 2, 128}, {0, 3}); }
TEST(SimHopperAttn, PersistentCausalRaggedTwoWarpgroups) { attnCase({1, 2, 300, 64, true, 128, 64, 2, 256}, {0, 1}); }
TEST(SimHopperAttn, PersistentD128) { attnCase({1, 2, 256, 128, false, 128, 128, 2, 256}, {0, 2}); }
TEST(SimHopperAttn, PersistentD256) { attnCase({1, 2, 128, 256, true, 64, 64, 2, 128}, {0}); }
TEST(SimHopperAttn, PersistentGroupedQuery) { attnCase({1, 4, 128, 64, true, 64, 32, 2, 128, false, "", 2}, {0, 1}); }
TEST(SimHopperAttn, PersistentDynamicSeq) { attnCase(dynamicSeq({1, 2, 200, 64, true, 64, 32, 2, 128}), {0, 2}); }
TEST(SimHopperAttn, PersistentOneStage) { attnCase({1, 2, 128, 64, true, 64, 64, 1, 128}, {0, 1}); }
TEST(SimHopperAttn, PersistentOverlapped) { attnCase(overlapped({1, 2, 200, 64, true, 64, 32, 2, 128}), {0, 1}); }
TEST(SimHopperAttn, PersistentPingPong) { attnCase(pingPong({1, 2, 256, 64, false, 128, 64, 2, 256}), {0, 1}); }
// --no-persistent: one output tile per block, Q behind one barrier
AttnCase notPersistent(AttnCase a) {
    a.noPersistent = true;
    return a;
}
TEST(SimHopperAttn, NotPersistentCausal) { attnCase(notPersistent({1, 2, 256, 64, true, 64, 32, 2, 128}), {0, 1}); }
TEST(SimHopperAttn, NotPersistentRaggedTwoWarpgroups) { attnCase(notPersistent({1, 1, 200, 64, false, 128, 64, 2, 256}), {0}); }

/// --walk-group: causal tiles walked with the query blocks in groups (5 query blocks in groups of 2: the last
/// group a single block; 4 in groups of 3), each simulated block walking 5 or 4 tiles of mixed work.
AttnCase walkGroup(AttnCase a, int g) {
    a.walkGroup = g;
    return a;
}
/// Kernel::walkTile visits every tile once for any group size; 1, or a group no smaller than the grid
/// dimension, is the plain walk with that dimension slowest.
TEST(SimHopperAttn, WalkTileIsABijection) {
    for (const std::array<int64_t, 3> grid : {std::array<int64_t, 3>{5, 3, 2}, {8, 16, 1}, {1, 4, 3}, {7, 1, 1}})
        for (int slowest : {0, 2})
            for (int g = 1; g <= grid[0] + 2; ++g) {
                ir::Kernel k;
                k.walkSlowest = slowest;
                k.walkGroup = g;
                const int64_t n = grid[0] * grid[1] * grid[2];
                std::set<std::array<int64_t, 3>> seen;
                for (int64_t t = 0; t < n; ++t) {
                    const auto c = k.walkTile(t, grid);
                    for (int d = 0; d < 3; ++d) ASSERT_TRUE(c[d] >= 0 && c[d] < grid[d]) << "tile " << t << " group " << g;
                    seen.insert(c);
                    const std::array<int, 3> o = k.walkOrder();
                    if (g == 1 || g >= grid[o[2]]) { // the plain walk: fastest, middle, slowest
                        EXPECT_EQ(c[o[0]], t % grid[o[0]]);
                        EXPECT_EQ(c[o[2]], t / (grid[o[0]] * grid[o[1]]));
                    }
                    else if (t < grid[o[0]] * grid[o[1]] * g) EXPECT_EQ(c[o[2]], t % g) << "the first group's positions fastest";
                }
                EXPECT_EQ((int64_t)seen.size(), n) << "group " << g;
            }
}

TEST(SimHopperAttn, PersistentCausalWalkGroups) {
    const AttnCase a = walkGroup({1, 2, 320, 64, true, 64, 32, 2, 128}, 2);
    Lowered l(a);
    ASSERT_TRUE(l.roles) << l.r.diags();
    EXPECT_EQ(l.roles->walkSlowest, 0);
    EXPECT_EQ(l.roles->walkGroup, 2);
    attnCase(a, {0, 1});
    attnCase(walkGroup({2, 1, 256, 64, true, 64, 64, 2, 128}, 3), {0});
    Lowered full(walkGroup({1, 2, 256, 64, false, 64, 32, 2, 128}, 2));
    ASSERT_TRUE(full.roles);
    EXPECT_EQ(full.roles->walkGroup, 1) << "tiles alike: the grid's order";
}

/// By default causal attention, whose tiles run different numbers of key blocks, is persistent with its query
/// blocks walked in groups of 7 (where there are more than 7: 512 / 64 = 8 here); with --walk-group=0 it
/// launches one block per tile; both run against float64.
TEST(SimHopperAttn, DefaultCausalWalkAndWalkGroupZero) {
    const AttnCase causal{1, 2, 512, 64, true, 64, 64, 2, 128};
    Lowered d(causal), z(causal, false);
    ASSERT_TRUE(d.roles && z.roles) << d.r.diags();
    EXPECT_TRUE(d.roles->persistent);
    EXPECT_EQ(d.roles->walkSlowest, 0);
    EXPECT_EQ(d.roles->walkGroup, 7);
    EXPECT_FALSE(z.roles->persistent);
    const Data data = reference(causal);
    for (const Lowered *l : {&d, &z}) {
        Outcome o = simulate(*l->roles, causal, data, 0);
        EXPECT_EQ(o.error, "");
        EXPECT_TRUE(o.races.empty());
        EXPECT_EQ(o.wrong, 0) << o.firstWrong;
    }
}

/// Causal tiles no more than the target's SMs are one wave: one block per tile, whose walk would be one tile.
TEST(SimHopperAttn, OneWaveCausalNotPersistent) {
    const AttnCase causal{1, 2, 512, 64, true, 64, 64, 2, 128}; // 8 x 2 tiles
    for (int sms : {16, 15}) {
        Target t = Target::parse("sm_90a")->withSmCount(sms);
        LowerRun r;
        r.run(causal.source(), "flash.tile", t);
        ASSERT_TRUE(r.lowered) << r.diags();
        const ir::Kernel *roles = simtest::warpRoles(r);
        ASSERT_TRUE(roles) << r.diags();
        EXPECT_EQ(roles->persistent, sms < 16) << sms << " SMs";
    }
}

/// The persistent walk's order: the query block (grid dimension 0) slowest where the causal loop's trip count
/// depends on it, the usual x-fastest order otherwise; Q's barriers a full/empty pair, one otherwise.
TEST(SimHopperAttn, PersistentWalkOrderAndQBarriers) {
    Lowered causal(AttnCase{1, 2, 256, 64, true, 64, 32, 2, 128}), full(AttnCase{1, 2, 256, 64, false, 64, 32, 2, 128}),
        off(notPersistent({1, 2, 256, 64, true, 64, 32, 2, 128}));
    ASSERT_TRUE(causal.roles && full.roles && off.roles) << causal.r.diags();
    EXPECT_EQ(causal.roles->walkSlowest, 0);
    EXPECT_EQ(causal.roles->walkOrder(), (std::array<int, 3>{1, 2, 0}));
    EXPECT_EQ(full.roles->walkSlowest, 2);
    EXPECT_EQ(off.roles->walkSlowest, 2);
    auto c = callCounts(*causal.scheduled), o = callCounts(*off.scheduled);
    EXPECT_EQ(c[lib::Fn::MbarrierInit] - o[lib::Fn::MbarrierInit], 1) << "Q's empty barrier";
    EXPECT_EQ(c[lib::Fn::MbarrierWait] - o[lib::Fn::MbarrierWait], 1) << "the producer's wait for Q's release";
    EXPECT_EQ(c[lib::Fn::MbarrierArrive] - o[lib::Fn::MbarrierArrive], 2) << "Q's release in the last iteration, or after no iteration";
}

/// The rotated loop as lowered: QK^T in the peeled first block and in the loop, P.V in the loop (of ko - 1) and
/// after it (of the last block); four waits (the first block's QK^T, the loop's wait_group 1 for QK^T and 0 for
/// P.V, the last P.V's); one score accumulator (no copy); none of this without the flag.
TEST(SimHopperAttn, OverlapAsLowered) {
    const AttnCase a{1, 1, 128, 64, true, 64, 32, 2, 128};
    Lowered on(overlapped(a)), off(a);
    ASSERT_TRUE(on.roles && off.roles) << on.r.diags();
    auto c = callCounts(*on.scheduled), o = callCounts(*off.scheduled);
    EXPECT_EQ(c[lib::Fn::WgmmaSS], 2);
    EXPECT_EQ(c[lib::Fn::WgmmaRS], 2);
    EXPECT_EQ(o[lib::Fn::WgmmaSS], 1);
    EXPECT_EQ(c[lib::Fn::WgmmaWait], 4);
    EXPECT_EQ(o[lib::Fn::WgmmaWait], 2);
    EXPECT_EQ(on.roles->allocs.size(), off.roles->allocs.size()) << "no second score accumulator";
}

/// zeroInitWgmma: the overlapped loop's QK^T overwrites the scores (wgmma_ss_init) and the result is right; the same kernel with those products accumulating instead (scale-d 1, no clear) adds
/// each block's scores to the previous block's probabilities, and the simulator sees it wrong.
TEST(SimHopperAttn, OverlapScoresOverwrittenByTheProduct) {
    const AttnCase a = overlapped({1, 1, 128, 64, true, 64, 32, 2, 128});
    Lowered l(a);
    ASSERT_TRUE(l.roles) << l.r.diags();
    auto c = callCounts(*l.roles);
    EXPECT_GT(c[lib::Fn::WgmmaSSInit], 0);
    const Data d = reference(a);
    Outcome right = simulate(*l.roles, a, d, 0);
    EXPECT_TRUE(right.error.empty() && right.races.empty() && !right.wrong) << right.error << right.firstWrong;
    auto accumulating = simtest::rewriteCalls(*l.roles, [](const ir::Evaluate &e, const ir::Call &call, simtest::Role) {
        if (!lib::is(call, lib::Fn::WgmmaSSInit)) return simtest::same(e);
        return lib::stmt(lib::Fn::WgmmaSS, call.args, e.loc);
    });
    Outcome wrong = simulate(*accumulating, a, d, 0);
    EXPECT_TRUE(wrong.wrong > 0 || !wrong.error.empty());
}

/// Both schedules: one turn for the first block's QK^T, one per later block (its QK^T and P.V of the block
/// before), one for the last P.V; warpgroup 1's first hand-over and warpgroup 0's last turn around them.
TEST(SimHopperAttn, OverlapPingPongTurnsAsLowered) {
    Lowered on(bothSchedules({1, 1, 256, 64, true, 128, 64, 2, 256})), off(AttnCase{1, 1, 256, 64, true, 128, 64, 2, 256});
    ASSERT_TRUE(on.roles && off.roles) << on.r.diags();
    auto c = callCounts(*on.scheduled);
    EXPECT_EQ(c[lib::Fn::NamedArrive], 4) << "the first hand-over, and one after each of the three turns";
    EXPECT_EQ(c[lib::Fn::NamedSync] - callCounts(*off.scheduled)[lib::Fn::NamedSync], 4);
    EXPECT_EQ(c[lib::Fn::WgmmaWait], 4);
}

/// The turns as lowered: every wgmma between a bar.sync on the warpgroup's own barrier and a bar.arrive on the
/// other's, warpgroup 1's first hand-over before the loop and warpgroup 0's last turn after it; none without
/// --pingpong, and none with one consumer warpgroup.
TEST(SimHopperAttn, PingPongTurnsAsLowered) {
    Lowered on(pingPong({1, 1, 256, 64, true, 128, 64, 2, 256})), off(AttnCase{1, 1, 256, 64, true, 128, 64, 2, 256}),
        one(pingPong({1, 1, 256, 64, true, 128, 64, 2, 128}));
    ASSERT_TRUE(on.roles && off.roles && one.roles) << on.r.diags();
    auto c = callCounts(*on.scheduled);
    EXPECT_EQ(c[lib::Fn::NamedArrive], 3);
    EXPECT_EQ(c[lib::Fn::NamedSync] - callCounts(*off.scheduled)[lib::Fn::NamedSync], 3);
    EXPECT_EQ(callCounts(*off.scheduled)[lib::Fn::NamedArrive], 0);
    EXPECT_EQ(callCounts(*one.scheduled)[lib::Fn::NamedArrive], 0);
}


// The default switches: FlashAttention-3's schedule (the rotated loop with turns) from head dimension 128 on,
// the loop in order below it; --pingpong then still gives turns to a loop the overlap left in order.
TEST(SimHopperAttn, DefaultScheduleRotatesD128) { attnCase(byDefault({1, 1, 200, 128, false, 128, 128, 2, 256}), {0, 2}); }
TEST(SimHopperAttn, DefaultScheduleKeepsD64) { attnCase(byDefault({1, 1, 256, 64, true, 128, 64, 2, 256}), {0, 1}); }
// ... and a loop of one stage in order at D = 128 too (V of ko would load only after P.V of ko - 1 retired)
TEST(SimHopperAttn, DefaultScheduleKeepsOneStageD128) { attnCase(byDefault({1, 1, 200, 128, true, 128, 64, 1, 256}), {0, 2}); }
// ... and where the rotated loop would hold more than a consumer thread's registers leave (one warpgroup of 128 query
// rows at D = 128: output 128, scores 64, P 32 of 240 registers; it spilled rotated)
TEST(SimHopperAttn, DefaultScheduleKeepsD128WhereRegistersRunOut) { attnCase(byDefault({1, 1, 200, 128, false, 128, 64, 2, 128}), {0, 2}); }
TEST(SimHopperAttn, DefaultScheduleAsLowered) {
    Lowered d128(byDefault({1, 1, 200, 128, false, 128, 128, 2, 256})), d64(byDefault({1, 1, 256, 64, true, 128, 64, 2, 256}));
    AttnCase asked = byDefault({1, 1, 256, 64, true, 128, 64, 2, 256});
    asked.pingPong = true; // the defaults, but --pingpong
    Lowered d64turns(asked);
    ASSERT_TRUE(d128.roles && d64.roles && d64turns.roles) << d128.r.diags();
    auto c128 = callCounts(*d128.scheduled), c64 = callCounts(*d64.scheduled), t64 = callCounts(*d64turns.scheduled);
    EXPECT_EQ(c128[lib::Fn::WgmmaSS], 2) << "D = 128: the prologue's QK^T and the loop's";
    EXPECT_GT(c128[lib::Fn::NamedArrive], 0) << "D = 128: the two consumer warpgroups take turns";
    EXPECT_EQ(c64[lib::Fn::WgmmaSS], 1) << "D = 64: the loop in order";
    EXPECT_EQ(c64[lib::Fn::NamedArrive], 0) << "D = 64: no turns";
    EXPECT_EQ(t64[lib::Fn::WgmmaSS], 1) << "D = 64 with --pingpong: still in order";
    EXPECT_EQ(t64[lib::Fn::NamedArrive], 3) << "D = 64 with --pingpong: pingPongConsumers' turns";
}

} // namespace
