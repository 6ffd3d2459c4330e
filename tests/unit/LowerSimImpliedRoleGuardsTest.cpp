/// \file
/// foldImpliedConditions in warp-specialized kernels, whose roles must agree on every tile they walk: a producer
/// that loads a tile the consumers skip (or the reverse) leaves the ring's mbarriers waiting for ever. A guarded
/// GEMM under tilec's persistent walk (gemm_tile_walk.tile's `guarded` / `guarded_x`): the guard on the row
/// tiles (`by < m_blocks` over m_blocks + 1 rows: the last row of tiles skipped) stays in both roles; the same
/// guard on the column tiles, whose grid dimension is exactly m_blocks, is always true and is folded in both
/// (session 32 folded it in the producer only). Run on the CPU simulator with partial last tiles, and a producer
/// that ignores its guard must be caught. Each role is folded with its own threads' range of the thread index:
/// a test on tx around a role's body is decided by that role's threads, not by the kernel's `threads`.
#include "LowerSimUtil.h"

#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRUses.h"
#include "tilec/passes/FoldImpliedConditions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace tilec;
using tilec::lowertest::LowerRun;

namespace {

const char *kGuarded = R"(import tilelang.language as T


def guarded_gemm(M, N, K, bm, bn, bk, on_x):
    m_blocks = T.ceildiv(M, bm)

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), m_blocks + 1, threads=128) as (bx, by):
            if on_x:
                by, bx = bx, by
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float")
            if by < m_blocks:
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                    T.copy(A[by * bm, k * bk], A_s)
                    T.copy(B[k * bk, bx * bn], B_s)
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C[by * bm, bx * bn])
    return kernel
)";

struct Case {
    int M, N, K;
    bool onX;
};

std::string source(const Case &c) {
    return std::string(kGuarded) + "\n\nk = guarded_gemm(" + std::to_string(c.M) + ", " + std::to_string(c.N) + ", " +
           std::to_string(c.K) + ", 64, 64, 32, " + (c.onX ? "True" : "False") + ")\n";
}

void lowerCase(LowerRun &r, const Case &c, const std::string &keepBefore = "") {
    Variant v{*Target::parse("sm_90a"), {}};
    v.options.clusters = false; // the simulator runs one block at a time
    r.keepBefore = keepBefore;
    r.run(source(c), "guarded.tile", v);
}

bool callsMbarrier(const ir::Stmt &s) {
    struct V : ir::IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const ir::Call &c) override { found |= c.name.find("mbarrier") != std::string::npos, IRVisitor::visit(c); }
    } v;
    v.visit(s);
    return v.found;
}

/// The tests of the `if`s in `s` that read neither the thread index nor memory and hold a ring operation (the
/// guards that decide which tiles a role walks), as printed.
std::multiset<std::string> ringGuards(const ir::Stmt &s, const ir::VarNode *tx) {
    struct V : ir::IRVisitor {
        using IRVisitor::visit;
        const ir::VarNode *tx;
        std::multiset<std::string> found;
        void visit(const ir::IfThenElse &op) override {
            if (!ir::uses(op.cond, tx) && !ir::readsMemory(op.cond) && !ir::callsAnything(op.cond) &&
                (callsMbarrier(op.then) || callsMbarrier(op.otherwise)))
                found.insert(ir::print(op.cond));
            IRVisitor::visit(op);
        }
    } v;
    v.tx = tx;
    v.visit(s);
    return v.found;
}

const ir::WarpRoles *rolesOf(const ir::Kernel &k) {
    for (auto &s : ir::Seq::items(k.body))
        if (auto r = ir::as<ir::WarpRoles>(s)) return r;
    return nullptr;
}

/// Both roles walk the tiles under the same guards; `kept`: the guard on the row tiles is there (else folded).
void expectRolesInStep(const Case &c, bool kept) {
    LowerRun r;
    lowerCase(r, c);
    const ir::Kernel *k = simtest::warpRoles(r);
    ASSERT_TRUE(k) << "no warp-specialized kernel\n" << r.diags();
    const ir::WarpRoles *roles = rolesOf(*k);
    ASSERT_TRUE(roles);
    auto producer = ringGuards(roles->producer, k->threadIdx.get()), consumer = ringGuards(roles->consumer, k->threadIdx.get());
    EXPECT_EQ(producer, consumer) << ir::print(*k);
    EXPECT_EQ(consumer.size(), kept ? 1u : 0u) << ir::print(*k);
}

TEST(LowerImpliedRoleGuards, GuardThatSkipsTheLastRowStaysInBothRoles) { expectRolesInStep({4096, 4096, 4096, false}, true); }
TEST(LowerImpliedRoleGuards, AlwaysTrueGuardIsFoldedInBothRoles) { expectRolesInStep({4096, 4096, 4096, true}, false); }
TEST(LowerImpliedRoleGuards, PartialTilesRolesInStep) {
    expectRolesInStep({200, 200, 136, false}, true);
    expectRolesInStep({200, 200, 136, true}, false);
}

/// The producer ignoring its tile guards (those that read no thread index).
std::shared_ptr<ir::Kernel> producerIgnoringItsGuards(const ir::Kernel &k) {
    struct Unguard : ir::IRMutator {
        using IRMutator::visit;
        const ir::VarNode *tx = nullptr;
        bool inProducer = false;
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            inProducer = true;
            ir::Stmt producer = mutate(op->producer);
            inProducer = false;
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, producer,
                                       op->consumer, op->loc);
        }
        ir::Stmt visit(const std::shared_ptr<const ir::IfThenElse> &op) override {
            if (inProducer && !op->otherwise && !ir::uses(op->cond, tx) && callsMbarrier(op->then)) return mutate(op->then);
            return IRMutator::visit(op);
        }
    } u;
    u.tx = k.threadIdx.get();
    auto nk = std::make_shared<ir::Kernel>(k);
    nk->body = u.mutate(k.body);
    return nk;
}

/// C = A * B on the simulator (tilec's persistent walk over 2 blocks) under three interleavings: how many runs
/// failed (an error such as a deadlock, a race, a wrong element of C), each reported unless `mutant`.
int simulateCase(const ir::Kernel &k, const Case &c, bool mutant) {
    auto a = simtest::quarters((size_t)c.M * c.K, 1), b = simtest::quarters((size_t)c.K * c.N, 2);
    int failures = 0;
    for (uint64_t seed : {0, 1, 2}) {
        std::vector<double> out((size_t)c.M * c.N, std::nan(""));
        simtest::Outcome o = simtest::runCaught(k, {{"A", &a}, {"B", &b}, {"C", &out}}, {}, seed);
        for (int i = 0; i < c.M && o.error.empty(); ++i)
            for (int j = 0; j < c.N; ++j) {
                double acc = 0;
                for (int kk = 0; kk < c.K; ++kk) acc += a[(size_t)i * c.K + kk] * b[(size_t)kk * c.N + j];
                const double want = simtest::roundToDType(DType::Float16, acc), got = out[(size_t)i * c.N + j];
                o.check(got == want, [&] { return "C[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(got); });
            }
        failures += simtest::anyFailure(o);
        if (!mutant) {
            EXPECT_EQ(o.error, "") << "seed " << seed;
            for (auto &race : o.races) ADD_FAILURE() << "seed " << seed << ": race: " << race;
            EXPECT_EQ(o.wrong, 0) << "seed " << seed << ": " << o.firstWrong;
        }
    }
    return failures;
}

/// The case lowered and simulated clean; `mutantCaught`: a producer ignoring its guards must then fail.
void simulateGuarded(const Case &c, bool mutantCaught) {
    LowerRun r;
    lowerCase(r, c);
    const ir::Kernel *k = simtest::warpRoles(r);
    ASSERT_TRUE(k && k->persistent) << "a warp-specialized kernel under tilec's persistent walk\n" << r.diags();
    simulateCase(*k, c, false);
    if (mutantCaught)
        EXPECT_GT(simulateCase(*producerIgnoringItsGuards(*k), c, true), 0) << "a producer walking the skipped tiles ran clean";
}

// 200 = 3 x 64 + 8: the last row and column of tiles partial; 4 + 1 row tiles, the fifth skipped by the guard.
TEST(LowerSimImpliedRoleGuards, PartialLastTilesRowGuard) { simulateGuarded({200, 200, 136, false}, true); }
// The guard on the column tiles, always true, folded in both roles; the fifth row of tiles (rows 256..319, past
// M) loaded as zeros and stored nowhere.
TEST(LowerSimImpliedRoleGuards, PartialLastTilesFoldedGuard) { simulateGuarded({200, 200, 136, true}, false); }

/// `k` with each role's body under `if tx < bound` (role 0: the consumers, 1: the producer).
std::shared_ptr<ir::Kernel> roleUnder(const ir::Kernel &k, int role, ir::BinaryOp op, int64_t bound) {
    struct Wrap : ir::IRMutator {
        using IRMutator::visit;
        ir::Expr test;
        int role = 0;
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &r) override {
            ir::Stmt p = r->producer, c = r->consumer;
            (role ? p : c) = ir::IfThenElse::make(test, role ? p : c, nullptr, r->loc);
            return ir::WarpRoles::make(r->consumerThreads, r->producerThreads, r->producerRegs, r->consumerRegs, p, c, r->loc);
        }
    } w;
    w.test = ir::binary(op, k.threadIdx, ir::intImm(bound, DType::Int32));
    w.role = role;
    auto nk = std::make_shared<ir::Kernel>(k);
    nk->body = w.mutate(k.body);
    return nk;
}

/// Whether role `role`'s body of the only kernel of `p` is still under the `if` roleUnder put around it.
bool roleStillGuarded(const ir::Program &p, int role) {
    const ir::WarpRoles *r = rolesOf(*p.kernels.at(0));
    auto i = r ? ir::as<ir::IfThenElse>(role ? r->producer : r->consumer) : nullptr;
    return i && ir::print(i->cond).find("128") != std::string::npos && ir::print(i->cond).find("==") == std::string::npos;
}

// The kernel's `threads` is 128 (the consumers); the producer warp group runs threads [128, 256). `tx < 128` is
// false for every producer thread and true for every consumer; `tx >= 128` the reverse.
TEST(LowerImpliedRoleGuards, EachRoleFoldedWithItsOwnThreads) {
    LowerRun r;
    lowerCase(r, {200, 200, 136, false}, "foldImpliedConditions");
    ASSERT_TRUE(r.kept) << r.diags();
    const ir::Kernel *k = nullptr;
    for (auto &kk : r.kept->kernels)
        if (kk->producerThreads) k = kk.get();
    ASSERT_TRUE(k && k->threads == 128 && k->producerThreads == 128);
    auto foldOne = [&](int role, ir::BinaryOp op) {
        ir::Program p;
        p.kernels.push_back(roleUnder(*k, role, op, 128));
        return passes::foldImpliedConditions(p);
    };
    EXPECT_TRUE(roleStillGuarded(foldOne(1, ir::BinaryOp::LT), 1)) << "tx < 128 holds in no producer thread";
    EXPECT_FALSE(roleStillGuarded(foldOne(1, ir::BinaryOp::GE), 1)) << "tx >= 128 holds in every producer thread";
    EXPECT_FALSE(roleStillGuarded(foldOne(0, ir::BinaryOp::LT), 0)) << "tx < 128 holds in every consumer thread";
    EXPECT_TRUE(roleStillGuarded(foldOne(0, ir::BinaryOp::GE), 0)) << "tx >= 128 holds in no consumer thread";
}

} // namespace
