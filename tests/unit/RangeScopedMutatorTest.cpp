/// \file
/// RangeScopedMutator (src/lower/RangeScopedMutator.h): a loop's variable has its range inside the loop and
/// nowhere else, nested loops see each other's, the kernel's indices are in scope everywhere, and a traversal
/// that changes nothing hands back the very nodes it was given.
#include "lower/RangeScopedMutator.h"

#include "tilec/IROperator.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

using namespace tilec;
using namespace tilec::ir;
using tilec::passes::Interval;
using tilec::passes::RangeMap;
using tilec::passes::RangeScopedMutator;

namespace {

Expr i32(int64_t v) { return IntImm::make(DType::Int32, v); }

/// Per store (in visiting order, named by the value it stores): the ranges in scope there, by variable name.
struct Recorder : RangeScopedMutator {
    using RangeScopedMutator::RangeScopedMutator;
    using RangeScopedMutator::visit;
    std::vector<std::map<std::string, Interval>> seen;
    Stmt visit(const std::shared_ptr<const Store> &op) override {
        std::map<std::string, Interval> at;
        for (auto &[v, r] : ranges()) at[v->name] = r;
        seen.push_back(at);
        return RangeScopedMutator::visit(op);
    }
};

void expectRange(const std::map<std::string, Interval> &at, const std::string &name, int64_t lo, int64_t hi) {
    auto it = at.find(name);
    ASSERT_NE(it, at.end()) << name << " not in scope";
    EXPECT_EQ(it->second.lo, lo) << name;
    EXPECT_EQ(it->second.hi, hi) << name;
}

/// for i in [0, 16): { out[i] = 0; for j in [2, 2 + 8): out[i * 8 + j] = 1; out[i] = 2 }  out[0] = 3
struct Nest {
    Var i = makeVar("i", DType::Int32), j = makeVar("j", DType::Int32);
    Buffer out = makeBuffer("out", Scope::Global, DType::Int32, {i32(256)}, {});
    Stmt body;
    Nest() {
        Stmt inner = For::make(j, i32(2), i32(8), ForKind::Serial, 0,
                               Store::make(out, {binary(BinaryOp::Add, binary(BinaryOp::Mul, Expr(i), i32(8)), j)}, i32(1)));
        Stmt outer = For::make(i, i32(0), i32(16), ForKind::Serial, 0,
                               Seq::make({Store::make(out, {i}, i32(0)), inner, Store::make(out, {i}, i32(2))}));
        body = Seq::make({outer, Store::make(out, {i32(0)}, i32(3))});
    }
};

} // namespace

TEST(RangeScopedMutator, LoopRangesInScopeOnlyInsideTheirLoops) {
    Nest n;
    Recorder r;
    r.mutate(n.body);
    ASSERT_EQ(r.seen.size(), 4u);
    expectRange(r.seen[0], "i", 0, 15);
    EXPECT_FALSE(r.seen[0].count("j")); // before the inner loop
    expectRange(r.seen[1], "i", 0, 15); // nested: both loops' variables
    expectRange(r.seen[1], "j", 2, 9);
    expectRange(r.seen[2], "i", 0, 15); // after the inner loop: j restored away, i still there
    EXPECT_FALSE(r.seen[2].count("j"));
    EXPECT_TRUE(r.seen[3].empty()); // after the outer loop: nothing
}

TEST(RangeScopedMutator, OuterRangesEverywhereAndRestoredAfterShadowing) {
    Nest n;
    RangeMap outer;
    Var tx = makeVar("tx", DType::Int32);
    outer[tx.get()] = Interval::of(0, 127);
    outer[n.i.get()] = Interval::of(100, 200); // a range for i outside its loop: the loop's own wins inside it
    Recorder r(outer);
    r.mutate(n.body);
    ASSERT_EQ(r.seen.size(), 4u);
    for (auto &at : r.seen) expectRange(at, "tx", 0, 127);
    expectRange(r.seen[1], "i", 0, 15);
    expectRange(r.seen[3], "i", 100, 200);
}

TEST(RangeScopedMutator, LoopBoundsFromTheRangesAround) {
    // for i in [0, 4): for j in [i, i + 4): the inner range is [0, 6], from i's; for j in [0, m) with m in [1, 32]
    // (a range the mutator was given): [0, 31].
    Var i = makeVar("i", DType::Int32), j = makeVar("j", DType::Int32), m = makeVar("m", DType::Int32);
    Buffer out = makeBuffer("out", Scope::Global, DType::Int32, {i32(64)}, {});
    Stmt body = For::make(
        i, i32(0), i32(4), ForKind::Serial, 0,
        Seq::make({For::make(j, i, i32(4), ForKind::Serial, 0, Store::make(out, {j}, i32(0))),
                   For::make(j, i32(0), m, ForKind::Serial, 0, Store::make(out, {j}, i32(1)))}));
    Recorder r(RangeMap{{m.get(), Interval::of(1, 32)}});
    r.mutate(body);
    ASSERT_EQ(r.seen.size(), 2u);
    expectRange(r.seen[0], "j", 0, 6);
    expectRange(r.seen[1], "j", 0, 31);
}

TEST(RangeScopedMutator, KernelIndicesInScope) {
    Kernel k;
    k.threads = 256;
    k.threadIdx = makeVar("tx", DType::Int32);
    k.grid = {i32(8), i32(1), i32(1)};
    k.blockIdx = {makeVar("bx", DType::Int32), makeVar("by", DType::Int32), makeVar("bz", DType::Int32)};
    Nest n;
    Recorder r(k);
    r.mutate(n.body);
    ASSERT_EQ(r.seen.size(), 4u);
    expectRange(r.seen[3], "tx", 0, 255);
    expectRange(r.seen[3], "bx", 0, 7);
    expectRange(r.seen[1], "tx", 0, 255);
}

TEST(RangeScopedMutator, UnchangedNodesComeBackAsTheSamePointer) {
    Nest n;
    Recorder r;
    EXPECT_EQ(r.mutate(n.body), n.body);
    // A rewrite of one store inside the inner loop rebuilds only its path: the outer loop's other stores stay.
    struct Ones : RangeScopedMutator {
        using RangeScopedMutator::visit;
        Expr visit(const std::shared_ptr<const IntImm> &op) override { return op->value == 1 ? i32(7) : Expr(op); }
    } ones;
    Stmt out = ones.mutate(n.body);
    ASSERT_NE(out, n.body);
    auto seq = as<Seq>(out), before = as<Seq>(n.body);
    ASSERT_TRUE(seq && before);
    EXPECT_EQ(seq->stmts[1], before->stmts[1]);
    auto loop = as<For>(seq->stmts[0]), loopBefore = as<For>(before->stmts[0]);
    ASSERT_TRUE(loop && loopBefore);
    EXPECT_NE(seq->stmts[0], before->stmts[0]);
    auto body = as<Seq>(loop->body), bodyBefore = as<Seq>(loopBefore->body);
    EXPECT_EQ(body->stmts[0], bodyBefore->stmts[0]);
    EXPECT_NE(body->stmts[1], bodyBefore->stmts[1]);
    EXPECT_EQ(body->stmts[2], bodyBefore->stmts[2]);
}
