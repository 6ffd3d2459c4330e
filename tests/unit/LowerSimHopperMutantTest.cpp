/// \file
/// Mutations of the Hopper schedule (examples/gemm.tile lowered for sm_90a into warp roles) that a GPU would hang
/// on or compute wrongly with, which the CPU simulator (src/sim/Simulator.h) must report: a deadlock naming who
/// waits on what, a race, a poisoned result. TileLang's explicit warp roles (tests/gpu/gemm_warp_roles.tile: T.ws,
/// T.alloc_barrier, T.tma_copy) run the same way against the float64 product, with mutations. The schedule's
/// numbers are checked in LowerSimHopperTest.cpp (helpers: LowerSimHopperUtil.h).
#include "LowerSimHopperUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

using namespace tilec;
using namespace tilec::simtest::gemm;
using tilec::simtest::Outcome;

namespace {

// ---- mutations of the lowered IR that the simulator must catch ----

TEST(SimHopperMutant, UnmutatedRunsClean) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    expectCorrect(*l.roles, kMutant, {0, 3});
}

TEST(SimHopperMutant, SeedsInterleaveTheRolesDifferently) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    // seed 0 runs each agent until it blocks; other seeds also switch at synchronisation points
    std::set<int64_t> switches;
    for (uint64_t seed : {0, 1, 2, 3}) {
        Outcome o = simulate(*l.roles, kMutant, seed);
        EXPECT_TRUE(o.error.empty() && o.races.empty() && !o.wrong) << "seed " << seed << ": " << o.error << o.firstWrong;
        switches.insert(o.switches);
    }
    EXPECT_GE(switches.size(), 3u);
}

TEST(SimHopperMutant, NoEmptyBarrierArrivalDeadlocks) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Mutated m(*l.roles, [](const ir::Evaluate &e, const ir::Call &c, bool) {
        return lib::is(c, lib::Fn::MbarrierArrive) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
    });
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*m.kernel, kMutant, seed);
        EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
        EXPECT_NE(o.error.find("producer warpgroup 0 (threads 128..255) waits on tilec_mbar["), std::string::npos) << o.error;
        EXPECT_NE(o.error.find("consumer warpgroup 0 (threads 0..127) waits on tilec_mbar["), std::string::npos) << o.error;
    }
}

/// The full barrier's expect_tx changed by `delta` bytes.
std::shared_ptr<ir::Kernel> expectTxOff(const ir::Kernel &k, int64_t delta) {
    return Mutated(k, [delta](const ir::Evaluate &e, const ir::Call &c, bool) -> ir::Stmt {
               if (!lib::is(c, lib::Fn::MbarrierArriveExpectTx)) return ir::Evaluate::make(e.value, e.loc);
               int64_t bytes = *ir::constInt(lib::arg(c, lib::Fn::MbarrierArriveExpectTx, "bytes"));
               return lib::stmt(lib::Fn::MbarrierArriveExpectTx,
                                {lib::arg(c, lib::Fn::MbarrierArriveExpectTx, "bar"), ir::intImm(bytes + delta, DType::Int32)}, e.loc);
           }).kernel;
}

TEST(SimHopperMutant, ExpectTxTooLargeDeadlocks) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    auto k = expectTxOff(*l.roles, 128);
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*k, kMutant, seed);
        EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
        EXPECT_NE(o.error.find("0 of 1 arrivals and 128 transaction bytes pending"), std::string::npos) << o.error;
    }
}

TEST(SimHopperMutant, ExpectTxTooSmallIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    auto k = expectTxOff(*l.roles, -8192); // the phase completes when the first tile has landed
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*k, kMutant, seed);
        EXPECT_TRUE(!o.error.empty() || !o.races.empty() || o.wrong) << "seed " << seed;
    }
}

TEST(SimHopperMutant, NoWgmmaWaitInTheLoopIsARace) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    int dropped = 0;
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool) {
        if (lib::is(c, lib::Fn::WgmmaWait)) return ++dropped, ir::Stmt();
        return ir::Evaluate::make(e.value, e.loc);
    });
    ASSERT_EQ(dropped, 1);
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*m.kernel, kMutant, seed);
        EXPECT_EQ(o.error, "");
        ASSERT_FALSE(o.races.empty()) << "seed " << seed;
        EXPECT_NE(o.races[0].find("read-after-write"), std::string::npos) << o.races[0];
        EXPECT_NE(o.races[0].find("by consumer warpgroup 0"), std::string::npos) << o.races[0];
        EXPECT_NE(o.races[0].find("after the TMA load"), std::string::npos) << o.races[0];
    }
}

TEST(SimHopperMutant, NoFinalWgmmaWaitPoisonsTheResult) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool) {
        return lib::is(c, lib::Fn::WgmmaWaitAcc) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
    });
    Outcome o = simulate(*m.kernel, kMutant, 0);
    EXPECT_EQ(o.wrong, kMutant.M * kMutant.N) << "the accumulators read before any wait retired them";
    EXPECT_NE(o.firstWrong.find("nan"), std::string::npos) << o.firstWrong;
    // A block that walks on to its next tile clears the accumulators under the group still in flight; the
    // last one leaves with it.
    EXPECT_TRUE(o.error.find("wgmma groups in flight") != std::string::npos ||
                o.error.find("wgmma group in flight writes") != std::string::npos)
        << o.error;
}

TEST(SimHopperMutant, ConsumerNotWaitingOnTheFullBarrierIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) {
        return consumer && lib::is(c, lib::Fn::MbarrierWait) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
    });
    // Seed 0 runs the consumers ahead of every load: they read the stages before the TMA writes them, and
    // each write is ordered after those reads by the stage's release, so it is no race, but the result is
    // wrong (NaN). Seed 5 interleaves a load with the reads: a race.
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*m.kernel, kMutant, seed);
        if (seed != 0) EXPECT_FALSE(o.races.empty()) << "seed " << seed;
        EXPECT_GT(o.wrong, 0) << "seed " << seed;
    }
}

TEST(SimHopperMutant, ConsumerWaitingOnTheWrongParityIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Mutated m(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) -> ir::Stmt {
        if (!consumer || !lib::is(c, lib::Fn::MbarrierWait)) return ir::Evaluate::make(e.value, e.loc);
        auto parity = lib::arg(c, lib::Fn::MbarrierWait, "parity");
        return lib::stmt(lib::Fn::MbarrierWait,
                         {lib::arg(c, lib::Fn::MbarrierWait, "bar"), ir::Binary::make(ir::BinaryOp::BitXor, parity, ir::intImm(1, parity->dtype))}, e.loc);
    });
    Outcome o = simulate(*m.kernel, kMutant, 0);
    EXPECT_TRUE(!o.races.empty() || !o.error.empty());
    EXPECT_GT(o.wrong, 0);
}

/// The consumers' accumulator clearing preceded by a consumer barrier (the role's __syncthreads: a named
/// barrier over the consumer warpgroups) under `cond` of the thread index.
std::shared_ptr<ir::Kernel> barrierBeforeClear(const ir::Kernel &k, std::function<ir::Expr(const ir::Var &)> cond) {
    return Mutated(k, [&](const ir::Evaluate &e, const ir::Call &c, bool consumer) -> ir::Stmt {
               ir::Stmt same = ir::Evaluate::make(e.value, e.loc);
               if (!consumer || !lib::is(c, lib::Fn::WgmmaClear)) return same;
               ir::Stmt sync = lib::stmt(lib::Fn::Sync, {});
               return ir::Seq::make({cond ? ir::IfThenElse::make(cond(k.threadIdx), sync, nullptr) : sync, same});
           }).kernel;
}

TEST(SimHopperMutant, ConsumerBarriersAcrossWarpgroups) {
    const GemmCase g{200, 72, 136, 128, 64, 64, 3, 256};
    Lowered l(g);
    ASSERT_TRUE(l.roles) << l.r.diags();
    // both consumer warpgroups reach it: they wait for each other and go on
    Outcome all = simulate(*barrierBeforeClear(*l.roles, nullptr), g, 1);
    EXPECT_EQ(all.error, "");
    EXPECT_TRUE(all.races.empty() && !all.wrong) << all.firstWrong;
    // only warpgroup 0 reaches it: it waits for ever
    auto first = [](const ir::Var &tx) { return ir::Binary::make(ir::BinaryOp::LT, tx, ir::intImm(128, tx->dtype)); };
    Outcome one = simulate(*barrierBeforeClear(*l.roles, first), g, 0);
    EXPECT_NE(one.error.find("deadlock"), std::string::npos) << one.error;
    EXPECT_NE(one.error.find("consumer warpgroup 0 (threads 0..127) waits on a barrier (128 of 256 threads arrived)"), std::string::npos) << one.error;
    // some threads of a warpgroup reach it
    auto lanes = [](const ir::Var &tx) { return ir::Binary::make(ir::BinaryOp::LT, ir::Binary::make(ir::BinaryOp::FloorMod, tx, ir::intImm(128, tx->dtype)), ir::intImm(64, tx->dtype)); };
    Outcome some = simulate(*barrierBeforeClear(*l.roles, lanes), g, 0);
    EXPECT_NE(some.error.find("a barrier in divergent code"), std::string::npos) << some.error;
}

TEST(SimHopperMutant, SetmaxnregOutOfRangeIsReported) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    struct M : ir::IRMutator {
        using IRMutator::visit;
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, 20, op->consumerRegs, op->producer, op->consumer, op->loc);
        }
    } m;
    auto k = std::make_shared<ir::Kernel>(*l.roles);
    k->body = m.mutate(l.roles->body);
    Outcome o = simulate(*k, kMutant, 0);
    EXPECT_NE(o.error.find("setmaxnreg 20"), std::string::npos) << o.error;
}


// ---- TileLang's explicit warp roles (tests/gpu/gemm_warp_roles.tile: T.ws, T.alloc_barrier, T.tma_copy) ----

/// `call` of tests/gpu/gemm_warp_roles.tile lowered for sm_90a, with TMA and as the variant without (explicit
/// TMA is honoured in both; they differ only in the epilogue, which stores through TMA in the first).
std::vector<LowerRun> explicitRoles(const std::string &call, const std::string &file = "gemm_warp_roles.tile") {
    std::vector<LowerRun> runs(2);
    for (int i = 0; i < 2; ++i) {
        Variant t{*Target::parse("sm_90a"), {}};
        t.options.tma = i == 0;
        runs[(size_t)i].run(simtest::withExport("../tests/gpu/" + file, "k = " + call), file, t);
    }
    return runs;
}

void explicitRolesCase(const GemmCase &g, const std::string &call) {
    auto runs = explicitRoles(call);
    for (auto &r : runs) {
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k && k->producerThreads == 128 && k->threads == 128 && k->needsTma) << r.diags();
        expectCorrect(*k, g, {0, 1, 2, 3});
    }
    EXPECT_GT(epilogueCalls(*runs[0].kernel("k"))[lib::Fn::TmaStoreTile], 0);
    EXPECT_EQ(epilogueCalls(*runs[1].kernel("k"))[lib::Fn::TmaStoreTile], 0);
}

// One tile per operand (copy_1_gemm_0 / softpipe_stage2: the producer is T.ws(1)), shapes the tiles do not divide.
TEST(SimExplicitRoles, OneTileProducerOne) { explicitRolesCase({100, 72, 200, 64, 64, 64, 0, 0}, "ws_gemm(100, 72, 200, 64, 64, 64)"); }
// copy_0_gemm_1: the producer is T.ws(0), T.Pipelined(num_stages=0).
TEST(SimExplicitRoles, OneTileProducerZero) {
    explicitRolesCase({100, 72, 200, 64, 64, 64, 0, 0}, "ws_gemm(100, 72, 200, 64, 64, 64, producer=0, num_stages=0)");
}
// TileLang's tile: 128x128 over one consumer warp group.
TEST(SimExplicitRoles, OneTile128) { explicitRolesCase({128, 128, 192, 128, 128, 64, 0, 0}, "ws_gemm(128, 128, 192)"); }
// barrierpipe_stage2: a ring of two stages, full and empty mbarriers per stage, five k-blocks.
TEST(SimExplicitRoles, TwoStageRing) { explicitRolesCase({100, 72, 320, 64, 64, 64, 0, 0}, "ws_ring_gemm(100, 72, 320, 64, 64, 64)"); }

// Issue 23: tests/gpu/zero_dims.tile's ws_gemm with a run-time K, 0 among its values: neither role's loop has a
// trip, C = 0; the producer's maps of A and B (tensors with no elements) read the zero tile, as the launcher
// encodes them (the only variants there are need TMA).
TEST(SimExplicitRoles, DynamicKOfZero) {
    auto runs = explicitRoles("ws_gemm_dk(128, 128, 64, 64, 64)", "zero_dims.tile");
    for (auto &r : runs) {
        const ir::Kernel *k = r.kernel("k");
        ASSERT_TRUE(k && k->needsTma && !k->tensorMaps.empty()) << r.diags();
        for (int K : {0, 72}) {
            SCOPED_TRACE("K = " + std::to_string(K));
            expectCorrect(*k, {128, 128, K, 64, 64, 64, 0, 0}, {0, 1}, {{"k", (double)K}});
        }
    }
}

/// The kernel with every call of f removed.
std::shared_ptr<ir::Kernel> without(const ir::Kernel &k, lib::Fn f, bool consumerOnly) {
    return Mutated(k, [f, consumerOnly](const ir::Evaluate &e, const ir::Call &c, bool consumer) -> ir::Stmt {
               return lib::is(c, f) && (consumer || !consumerOnly) ? ir::Stmt() : ir::Evaluate::make(e.value, e.loc);
           }).kernel;
}

TEST(SimExplicitRolesMutant, WithoutTheConsumersArrivalDeadlocks) {
    const GemmCase g{100, 72, 320, 64, 64, 64, 0, 0};
    auto runs = explicitRoles("ws_ring_gemm(100, 72, 320, 64, 64, 64)");
    ASSERT_TRUE(runs[0].kernel("k")) << runs[0].diags();
    Outcome o = simulate(*without(*runs[0].kernel("k"), lib::Fn::MbarrierArriveEach, true), g, 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
}

TEST(SimExplicitRolesMutant, WithoutExpectTxIsCaught) {
    const GemmCase g{100, 72, 200, 64, 64, 64, 0, 0};
    auto runs = explicitRoles("ws_gemm(100, 72, 200, 64, 64, 64)");
    ASSERT_TRUE(runs[0].kernel("k")) << runs[0].diags();
    for (uint64_t seed : {0, 5}) {
        Outcome o = simulate(*without(*runs[0].kernel("k"), lib::Fn::MbarrierExpectTx, false), g, seed);
        EXPECT_TRUE(!o.error.empty() || !o.races.empty() || o.wrong) << "seed " << seed;
    }
}

// Without the wgmma wait before the consumer's arrival the producer could overwrite a tile wgmma still reads.
TEST(SimExplicitRolesMutant, WithoutTheWgmmaWaitIsCaught) {
    const GemmCase g{100, 72, 200, 64, 64, 64, 0, 0};
    auto runs = explicitRoles("ws_gemm(100, 72, 200, 64, 64, 64)");
    ASSERT_TRUE(runs[0].kernel("k")) << runs[0].diags();
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 3, 5}) {
        Outcome o = simulate(*without(*runs[0].kernel("k"), lib::Fn::WgmmaWait, true), g, seed);
        caught |= !o.error.empty() || !o.races.empty() || o.wrong;
    }
    EXPECT_TRUE(caught);
}

} // namespace
