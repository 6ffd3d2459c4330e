/// \file
/// IRVisitor reaches every expression (regions included); IRMutator shares what did not change and
/// rebuilds only the path to what did.
#include "tilec/IRMutator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRVisitor.h"

#include <gtest/gtest.h>

using namespace tilec;
using namespace tilec::ir;

namespace {

Expr i32(int64_t v) { return IntImm::make(DType::Int32, v); }
Expr mul(Expr a, Expr b) { return Binary::make(BinaryOp::Mul, std::move(a), std::move(b)); }
Buffer buf(const char *name, Scope s, std::vector<int64_t> shape) {
    std::vector<Expr> dims;
    for (auto d : shape) dims.push_back(i32(d));
    return makeBuffer(name, s, DType::Float32, dims, {});
}

struct Fixture {
    Var bx = makeVar("bx", DType::Int32), ko = makeVar("ko", DType::Int32), i = makeVar("i", DType::Int32);
    Buffer A = buf("A", Scope::Global, {1024, 1024});
    Buffer As = buf("A_shared", Scope::Shared, {128, 64});
    Buffer acc = buf("acc", Scope::Fragment, {128});
    Stmt body;
    Fixture() {
        Region src{A, {{mul(bx, i32(128)), i32(128)}, {mul(ko, i32(64)), i32(64)}}, {}};
        body = Seq::make({
            Fill::make(Region::whole(acc), FloatImm::make(DType::Float32, 0)),
            For::make(ko, i32(0), i32(16), ForKind::Pipelined, 3,
                      Seq::make({
                          Copy::make(src, Region::whole(As)),
                          For::make(i, i32(0), i32(128), ForKind::Parallel, 0,
                                    Store::make(acc, {i}, Load::make(As, {i, mul(ko, i32(2))}))),
                      })),
            Reduce::make(ReduceKind::Sum, As, acc, 1, true),
        });
    }
};

/// Replaces one variable by an expression everywhere.
struct Substitute : IRMutator {
    using IRMutator::visit;
    Var from;
    Expr to;
    Expr visit(const Var &v) override { return v == from ? to : v; }
};

} // namespace

TEST(IRVisitor, ReachesRegionsAndLoads) {
    Fixture f;
    struct Counter : IRVisitor {
        using IRVisitor::visit;
        int vars = 0, loads = 0;
        void visit(const VarNode &) override { ++vars; }
        void visit(const Load &op) override {
            ++loads;
            IRVisitor::visit(op);
        }
    } c;
    c.visit(f.body);
    // bx and ko in the copy's region, i and ko in the store and the load (the loop variables themselves are
    // bindings, not uses).
    EXPECT_EQ(c.vars, 5);
    EXPECT_EQ(c.loads, 1);
}

TEST(IRMutator, IdentityKeepsEveryPointer) {
    Fixture f;
    IRMutator m;
    EXPECT_EQ(m.mutate(f.body), f.body);
    Expr e = Load::make(f.As, {f.i, mul(f.ko, i32(2))});
    EXPECT_EQ(m.mutate(e), e);
    EXPECT_EQ(m.mutate(Expr()), nullptr);
    EXPECT_EQ(m.mutate(Stmt()), nullptr);

    auto k = std::make_shared<Kernel>();
    k->grid = {i32(8), i32(8), i32(1)};
    k->body = f.body;
    KernelP kp = k;
    EXPECT_EQ(m.mutate(kp), kp);
}

TEST(IRMutator, RebuildsOnlyThePathToAChange) {
    Fixture f;
    Substitute s;
    s.from = f.bx;
    s.to = i32(3);
    Stmt out = s.mutate(f.body);
    ASSERT_NE(out, f.body);
    auto before = as<Seq>(f.body), after = as<Seq>(out);
    ASSERT_TRUE(before && after);
    ASSERT_EQ(after->stmts.size(), 3u);
    EXPECT_EQ(after->stmts[0], before->stmts[0]); // the fill does not mention bx
    EXPECT_EQ(after->stmts[2], before->stmts[2]);
    auto loopBefore = as<For>(before->stmts[1]), loopAfter = as<For>(after->stmts[1]);
    ASSERT_TRUE(loopBefore && loopAfter);
    EXPECT_EQ(loopAfter->var, loopBefore->var);
    EXPECT_EQ(loopAfter->numStages, 3);
    auto innerBefore = as<Seq>(loopBefore->body), innerAfter = as<Seq>(loopAfter->body);
    ASSERT_TRUE(innerBefore && innerAfter);
    EXPECT_NE(innerAfter->stmts[0], innerBefore->stmts[0]); // the copy's region changed
    EXPECT_EQ(innerAfter->stmts[1], innerBefore->stmts[1]); // the parallel loop did not
    auto copy = as<Copy>(innerAfter->stmts[0]);
    ASSERT_TRUE(copy);
    EXPECT_EQ(copy->src.buffer, f.A);
    EXPECT_EQ(print(copy->src.ranges[0].min), "3 * 128");
    EXPECT_EQ(copy->src.ranges[1].min, as<Copy>(innerBefore->stmts[0])->src.ranges[1].min);
}

TEST(IRMutator, BufferHookAndRemoval) {
    Fixture f;
    Buffer other = buf("other", Scope::Shared, {128, 64});
    struct Rename : IRMutator {
        using IRMutator::visit;
        Buffer from, to;
        Buffer mutateBuffer(const Buffer &b) override { return b == from ? to : b; }
        Stmt visit(const std::shared_ptr<const Fill> &) override { return nullptr; } // drop fills
    } r;
    r.from = f.As;
    r.to = other;
    Stmt out = r.mutate(f.body);
    std::string text = print(out);
    EXPECT_EQ(text.find("A_shared"), std::string::npos) << text;
    EXPECT_EQ(text.find("fill("), std::string::npos) << text;
    EXPECT_NE(text.find("copy(A[bx * 128:bx * 128 + 128, ko * 64:ko * 64 + 64], other[0:128, 0:64])"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("reduce_sum(other -> acc"), std::string::npos) << text;

    // A loop whose whole body is removed keeps an empty body.
    struct DropStores : IRMutator {
        using IRMutator::visit;
        Stmt visit(const std::shared_ptr<const Store> &) override { return nullptr; }
    } d;
    Stmt loop = For::make(f.i, i32(0), i32(4), ForKind::Serial, 0, Store::make(f.acc, {f.i}, i32(0)));
    EXPECT_EQ(print(d.mutate(loop)), "for i in serial(4):\n  pass\n");
}

TEST(IRVisitor, DeepNestingIsAnInternalErrorNotACrash) {
    Expr e = makeVar("x", DType::Int32);
    for (int i = 0; i < kMaxIRDepth + 10; ++i) e = Binary::make(BinaryOp::Add, e, i32(1));
    IRVisitor v;
    EXPECT_THROW(v.visit(e), InternalError);
    IRMutator m;
    EXPECT_THROW(m.mutate(e), InternalError);
    // the guard unwinds: a shallow walk afterwards works
    EXPECT_NO_THROW(v.visit(Binary::make(BinaryOp::Add, i32(1), i32(2))));
}
