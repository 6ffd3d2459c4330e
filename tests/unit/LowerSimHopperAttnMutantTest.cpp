/// \file
/// Mutations of FlashAttention's Hopper schedule (LowerSimHopperAttnTest.cpp) which the CPU simulator
/// (src/sim/Simulator.h) must report: a race, a deadlock, registers of an in-flight wgmma overwritten, waits
/// and releases removed or moved, the ping-pong turns and persistent Q's barriers broken.
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

using tilec::simtest::anyFailure;

// ---- mutations of the attention schedule that the simulator must catch ----

/// The kernel with each consumer library-call statement (and each outside the warp roles) passed through `f`
/// (null: removed).
std::shared_ptr<ir::Kernel> mutateConsumers(const ir::Kernel &k, std::function<ir::Stmt(const ir::Evaluate &, const ir::Call &)> f) {
    return simtest::rewriteCalls(k, [f](const ir::Evaluate &e, const ir::Call &c, simtest::Role role) {
        return role == simtest::Role::Producer ? simtest::same(e) : f(e, c);
    });
}

// Four key blocks through a ring of two, the loop one copy (--no-split-conditions): the mutants remove the n-th
// call of the schedule.
const AttnCase kMutant = unsplit({1, 1, 128, 64, true, 64, 32, 2, 128});

TEST(SimHopperAttnMutant, UnmutatedRunsClean) { attnCase(kMutant, {0, 4}); }

/// The kernel without the `nth` (from 1) consumer call of `f`; `seen` counts the calls of f there are.
std::shared_ptr<ir::Kernel> withoutNth(const ir::Kernel &k, lib::Fn f, int nth, int *seen = nullptr) {
    int n = 0;
    auto out = mutateConsumers(k, [&](const ir::Evaluate &e, const ir::Call &c) -> ir::Stmt {
        if (lib::is(c, f) && ++n == nth) return ir::Stmt();
        return ir::Evaluate::make(e.value, e.loc);
    });
    if (seen) *seen = n;
    return out;
}

/// Some interleaving of `seeds` fails (an error, a race or a wrong result).
void expectCaught(const ir::Kernel &k, std::initializer_list<uint64_t> seeds, bool everySeed) {
    const Data d = reference(kMutant);
    bool any = false;
    for (uint64_t seed : seeds) {
        bool caught = anyFailure(simulate(k, kMutant, d, seed));
        any |= caught;
        if (everySeed) EXPECT_TRUE(caught) << "seed " << seed;
    }
    EXPECT_TRUE(any);
}

/// The wait after P.V removed (the waits: after QK^T, then after P.V): V's stage is released while the
/// wgmma reading it is in flight, and the next block's QK^T wait retires it only after the producer may have
/// refilled the stage.
TEST(SimHopperAttnMutant, NoWaitAfterPVIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    int waits = 0;
    auto k = withoutNth(*l.roles, lib::Fn::WgmmaWait, 2, &waits);
    ASSERT_EQ(waits, 2);
    expectCaught(*k, {0, 1, 2, 5}, false);
}

/// A store into P's registers between the P.V that reads them and the wait that retires it (what a compiler
/// reusing those registers would do): the hardware may read either value, an error.
TEST(SimHopperAttnMutant, OverwritingInFlightRegistersIsAnError) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    auto k = mutateConsumers(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c) -> ir::Stmt {
        ir::Stmt same = ir::Evaluate::make(e.value, e.loc);
        if (!lib::is(c, lib::Fn::WgmmaRS)) return same;
        const ir::Load *a = passes::addressedLoad(lib::arg(c, lib::Fn::WgmmaRS, "a"));
        return ir::Seq::make({same, ir::Store::make(a->buffer, {ir::intImm(5, DType::Int32)}, ir::floatImm(0.5, a->buffer->dtype))});
    });
    Outcome o = simulate(*k, kMutant, reference(kMutant), 0);
    EXPECT_NE(o.error.find("the A registers probs of a wgmma_rs in flight changed in thread "), std::string::npos) << o.error;
}

/// The consumers not waiting for V's full barrier (their waits: Q's once, then K's and V's in the loop): P.V
/// reads a stage before (or while) V lands.
TEST(SimHopperAttnMutant, NotWaitingForVIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    int waits = 0;
    auto k = withoutNth(*l.roles, lib::Fn::MbarrierWait, 3, &waits);
    ASSERT_EQ(waits, 3);
    expectCaught(*k, {0, 5}, true);
}

/// The consumers not waiting for Q: QK^T reads Q's tile before TMA writes it.
TEST(SimHopperAttnMutant, NotWaitingForQIsCaught) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    expectCaught(*withoutNth(*l.roles, lib::Fn::MbarrierWait, 1), {0, 5}, true);
}

/// --intra-overlap's waits (the first block's wait(0) for its QK^T; in the loop wait(1) for QK^T of ko with P.V
/// of ko - 1 left in flight, then wait(0) for that P.V; the last P.V's wait(0)), each needed: without the first
/// two the softmax reads scores a QK^T still writes; without the third it writes P.V's A registers in flight;
/// without the last the epilogue reads the output a P.V still accumulates; a pending count one too high in
/// the loop lets the softmax read the scores in flight.
struct OverlapMutant {
    AttnCase a = overlapped(kMutant);
    Lowered l{a};
    Data d = reference(a);
    Outcome run(const ir::Kernel &k, uint64_t seed) { return simulate(k, a, d, seed); }
    std::shared_ptr<ir::Kernel> without(std::initializer_list<int> nths) {
        int n = 0;
        return mutateConsumers(*l.roles, [&](const ir::Evaluate &e, const ir::Call &c) -> ir::Stmt {
            if (lib::is(c, lib::Fn::WgmmaWait) && std::count(nths.begin(), nths.end(), ++n)) return ir::Stmt();
            return ir::Evaluate::make(e.value, e.loc);
        });
    }
};

TEST(SimHopperAttnMutant, OverlapUnmutatedRunsClean) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    for (uint64_t seed : {0, 4}) EXPECT_FALSE(anyFailure(m.run(*m.l.roles, seed))) << "seed " << seed;
}

TEST(SimHopperAttnMutant, OverlapWithoutFirstWaitForScoresIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    EXPECT_TRUE(anyFailure(m.run(*m.without({1}), 0)));
}

TEST(SimHopperAttnMutant, OverlapWithoutLoopWaitForScoresIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    EXPECT_TRUE(anyFailure(m.run(*m.without({2}), 0)));
}

TEST(SimHopperAttnMutant, OverlapWithoutWaitForPVIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    Outcome o = m.run(*m.without({3}), 0);
    EXPECT_NE(o.error.find("the A registers probs of a wgmma_rs in flight changed"), std::string::npos) << o.error;
}

TEST(SimHopperAttnMutant, OverlapWithoutLastWaitIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    EXPECT_TRUE(anyFailure(m.run(*m.without({4}), 0)));
}

TEST(SimHopperAttnMutant, OverlapWaitOneTooLaxIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    int n = 0;
    auto k = mutateConsumers(*m.l.roles, [&](const ir::Evaluate &e, const ir::Call &c) -> ir::Stmt {
        if (lib::is(c, lib::Fn::WgmmaWait) && ++n == 2) // the loop's wait(1) for QK^T of ko: wait(2)
            return lib::stmt(lib::Fn::WgmmaWait, {ir::intImm(2, DType::Int32)}, e.loc);
        return ir::Evaluate::make(e.value, e.loc);
    });
    EXPECT_TRUE(anyFailure(m.run(*k, 0)));
}

/// V's stage of ko - 1 released in the loop before the wait(0) that retires its P.V: the producer may refill it
/// (with V of ko + 1) while that P.V reads it. (K's stage released before its wait(1) is no such mutation: the
/// producer reaches K of ko + 2 only after V of ko + 1, whose stage is freed after that wait.)
TEST(SimHopperAttnMutant, OverlapReleasingVBeforeItsPVRetiresIsCaught) {
    OverlapMutant m;
    ASSERT_TRUE(m.l.roles) << m.l.r.diags();
    struct Early : ir::IRMutator {
        using IRMutator::visit;
        int moved = 0;
        static bool waits(const ir::Stmt &s, int64_t pending) {
            auto c = passes::callOf(s);
            return c && lib::is(*c, lib::Fn::WgmmaWait) && ir::constInt(c->args[0]) == std::optional<int64_t>(pending);
        }
        ir::Stmt visit(const std::shared_ptr<const ir::Seq> &op) override {
            auto s = op->stmts;
            const bool loop = std::any_of(s.begin(), s.end(), [](const ir::Stmt &x) { return waits(x, 1); });
            for (size_t i = 0; loop && i + 3 < s.size(); ++i) {
                auto release = ir::as<ir::IfThenElse>(s[i + 3]);
                if (waits(s[i], 0) && release && passes::isCall(release->then, lib::Fn::MbarrierArrive)) {
                    std::rotate(s.begin() + (long)i, s.begin() + (long)i + 3, s.begin() + (long)i + 4);
                    ++moved;
                    return ir::Seq::make(std::move(s), op->loc);
                }
            }
            return IRMutator::visit(op);
        }
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, op->producer,
                                       mutate(op->consumer), op->loc);
        }
    } early;
    auto k = std::make_shared<ir::Kernel>(*m.l.roles);
    k->body = early.mutate(k->body);
    ASSERT_EQ(early.moved, 1);
    bool caught = false;
    for (uint64_t seed : {0, 1, 2, 5}) {
        Outcome o = m.run(*k, seed);
        for (auto &r : o.races) caught |= r.find("on V_shared[") != std::string::npos;
    }
    EXPECT_TRUE(caught) << "no race on V_shared under four interleavings";
}

/// Both schedules, the loop's hand-over (after P.V of ko - 1) left out: warpgroup 0 waits for a turn that never
/// comes.
TEST(SimHopperAttnMutant, OverlapPingPongWithoutLoopHandOverDeadlocks) {
    const AttnCase a = bothSchedules({1, 1, 256, 64, false, 128, 64, 2, 256});
    Lowered l(a);
    ASSERT_TRUE(l.roles) << l.r.diags();
    // arrivals: the first hand-over (warpgroup 1's), the first block's, the loop's, the last P.V's
    Outcome o = simulate(*withoutNth(*l.roles, lib::Fn::NamedArrive, 3), a, reference(a), 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
}

/// The ping-pong turns without warpgroup 1's first hand-over: both warpgroups wait for their turn for ever.
TEST(SimHopperAttnMutant, PingPongWithoutFirstTurnDeadlocks) {
    const AttnCase a = pingPong({1, 1, 128, 64, true, 128, 64, 2, 256});
    Lowered l(a);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Outcome o = simulate(*withoutNth(*l.roles, lib::Fn::NamedArrive, 1), a, reference(a), 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
}

/// ... and without warpgroup 0's last turn: warpgroup 1's last hand-over is left pending on the barrier.
TEST(SimHopperAttnMutant, PingPongWithoutLastTurnIsCaught) {
    const AttnCase a = pingPong({1, 1, 128, 64, true, 128, 64, 2, 256});
    Lowered l(a);
    ASSERT_TRUE(l.roles) << l.r.diags();
    int syncs = 0;
    withoutNth(*l.roles, lib::Fn::NamedSync, 1000, &syncs);
    // the last turn's: before the epilogue's two barriers per staged piece (StageEpilogue)
    const int turn = syncs - 2 * callCounts(*l.roles)[lib::Fn::StmatrixTile];
    Outcome o = simulate(*withoutNth(*l.roles, lib::Fn::NamedSync, turn), a, reference(a), 0);
    EXPECT_NE(o.error.find("threads arrived at named barrier 4 and no one to complete it"), std::string::npos) << o.error;
}

/// Persistent Q: two blocks walking two output tiles each (heavy-first causal, four and two key blocks).
const AttnCase kPersistentMutant = unsplit({1, 2, 128, 64, true, 64, 32, 2, 128});

TEST(SimHopperAttnMutant, PersistentUnmutatedRunsClean) { attnCase(kPersistentMutant, {0, 1, 2, 5}); }

/// The producer not waiting for the consumers' release of Q (its first wait): the next tile's Q lands while
/// this tile's QK^Ts still read Q_shared.
TEST(SimHopperAttnMutant, PersistentQReloadedBeforeItsReleaseIsCaught) {
    Lowered l(kPersistentMutant);
    ASSERT_TRUE(l.roles && l.roles->persistent) << l.r.diags();
    struct M : ir::IRMutator {
        using IRMutator::visit;
        int removed = 0;
        ir::Stmt visit(const std::shared_ptr<const ir::Evaluate> &op) override {
            auto c = ir::as<ir::Call>(op->value);
            if (c && lib::is(*c, lib::Fn::MbarrierWait) && removed++ == 0) return ir::Stmt();
            return op;
        }
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, mutate(op->producer),
                                       op->consumer, op->loc);
        }
    } m;
    auto k = std::make_shared<ir::Kernel>(*l.roles);
    k->body = m.mutate(k->body);
    ASSERT_GT(m.removed, 1);
    const Data d = reference(kPersistentMutant);
    bool any = false;
    for (uint64_t seed : {0, 1, 2, 5}) any |= anyFailure(simulate(*k, kPersistentMutant, d, seed));
    EXPECT_TRUE(any);
}

/// The consumers not releasing Q in the tile's last iteration (their second arrival): the producer waits for
/// ever on Q's empty barrier (after the ring's four: tilec_mbar[9]).
TEST(SimHopperAttnMutant, PersistentQNotReleasedDeadlocks) {
    Lowered l(kPersistentMutant);
    ASSERT_TRUE(l.roles && l.roles->persistent) << l.r.diags();
    Outcome o = simulate(*withoutNth(*l.roles, lib::Fn::MbarrierArrive, 2), kPersistentMutant, reference(kPersistentMutant), 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("waits on tilec_mbar[9]"), std::string::npos) << o.error;
}

/// No release of K's stages (the consumers' first arrival): the producer waits for ever on K's empty barrier,
/// the consumers on K's full one.
TEST(SimHopperAttnMutant, NoReleaseOfKDeadlocks) {
    Lowered l(kMutant);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Outcome o = simulate(*withoutNth(*l.roles, lib::Fn::MbarrierArrive, 1), kMutant, reference(kMutant), 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << o.error;
    EXPECT_NE(o.error.find("producer warpgroup 0 (threads 128..255) waits on tilec_mbar[2]"), std::string::npos) << o.error;
}

} // namespace
