/// \file
/// laneUniformity (include/tilec/passes/LaneUniformity.h): which values of a lowered kernel can differ between
/// the lanes of a warp or the threads of a block; and the rule for calls that tile-level syncs::Uniformity
/// shares with it (src/lower/SyncHazards.h).
#include "lower/SyncHazards.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/LaneUniformity.h"
#include "tilec/passes/Layout.h"

#include <gtest/gtest.h>

namespace {

using namespace tilec;
using namespace tilec::ir;
using passes::LaneUniformity;
using passes::laneUniformity;
using passes::Spread;
namespace lib = passes::lib;

Expr c(int64_t v) { return intImm(v, DType::Int32); }
Expr bin(BinaryOp op, Expr a, Expr b) { return Binary::make(op, std::move(a), std::move(b)); }
Expr ld(const Buffer &b, Expr i = c(0)) { return Load::make(b, {std::move(i)}); }
Stmt st(const Buffer &b, Expr v, Expr i = c(0)) { return Store::make(b, {std::move(i)}, std::move(v)); }
Stmt loop(const Var &v, Expr extent, Stmt body) {
    return For::make(v, c(0), std::move(extent), ForKind::Serial, 0, std::move(body));
}

/// A kernel of 256 threads over tensors A (read) and C (written), shared S, fragment F and registers.
struct LaneUniformityTest : ::testing::Test {
    Var tx = makeVar("tx", DType::Int32), bx = makeVar("bx", DType::Int32), n = makeVar("n", DType::Int32);
    Buffer A = makeBuffer("A", Scope::Global, DType::Float32, {c(4096)}, {});
    Buffer C = makeBuffer("C", Scope::Global, DType::Float32, {c(4096)}, {});
    Buffer S = makeBuffer("S", Scope::Shared, DType::Float32, {c(256)}, {});
    Buffer F = makeBuffer("F", Scope::Fragment, DType::Float32, {c(8)}, {});
    Buffer R = makeBuffer("R", Scope::Local, DType::Float32, {c(8)}, {});
    Buffer x = makeBuffer("x", Scope::Var, DType::Int32, {c(1)}, {}), y = makeBuffer("y", Scope::Var, DType::Int32, {c(1)}, {});

    LaneUniformity of(std::vector<Stmt> body) {
        Kernel k;
        k.name = "k";
        k.threads = 256;
        k.threadIdx = tx;
        k.blockIdx = {bx, makeVar("by", DType::Int32), makeVar("bz", DType::Int32)};
        body.push_back(st(C, ld(A, tx), tx)); // the kernel writes C
        k.body = Seq::make(std::move(body));
        return laneUniformity(k);
    }
};

TEST_F(LaneUniformityTest, ThreadIndexAndItsWarp) {
    const LaneUniformity u = of({});
    EXPECT_EQ(u.of(tx), Spread::Lane);
    EXPECT_EQ(u.of(bin(BinaryOp::Add, tx, c(1))), Spread::Lane);
    EXPECT_EQ(u.of(bin(BinaryOp::FloorMod, tx, c(32))), Spread::Lane);
    // the warp index and what only it decides
    EXPECT_EQ(u.of(bin(BinaryOp::FloorDiv, tx, c(32))), Spread::Warp);
    EXPECT_EQ(u.of(bin(BinaryOp::Div, tx, c(128))), Spread::Warp);
    EXPECT_EQ(u.of(bin(BinaryOp::Shr, tx, c(5))), Spread::Warp);
    EXPECT_EQ(u.of(bin(BinaryOp::FloorMod, bin(BinaryOp::FloorDiv, tx, c(32)), c(4))), Spread::Warp);
    EXPECT_EQ(u.of(bin(BinaryOp::FloorDiv, bin(BinaryOp::Add, tx, c(64)), c(32))), Spread::Warp);
    EXPECT_EQ(u.of(bin(BinaryOp::LT, tx, c(128))), Spread::Warp);
    EXPECT_EQ(u.of(bin(BinaryOp::GT, tx, c(63))), Spread::Warp);
    EXPECT_EQ(u.of(bin(BinaryOp::LT, c(127), tx)), Spread::Warp);
    // a boundary inside a warp, a divisor that splits one, an offset that shifts the warps
    EXPECT_EQ(u.of(bin(BinaryOp::LT, tx, c(100))), Spread::Lane);
    EXPECT_EQ(u.of(bin(BinaryOp::FloorDiv, tx, c(16))), Spread::Lane);
    EXPECT_EQ(u.of(bin(BinaryOp::FloorDiv, bin(BinaryOp::Add, tx, c(8)), c(32))), Spread::Lane);
    EXPECT_EQ(u.of(bin(BinaryOp::Shr, tx, c(4))), Spread::Lane);
    // (tx - 32) / 32 truncates: lane 0 of warp 0 gets -1, the others 0
    EXPECT_EQ(u.of(bin(BinaryOp::Div, bin(BinaryOp::Sub, tx, c(32)), c(32))), Spread::Lane);
    EXPECT_EQ(u.of(bin(BinaryOp::FloorDiv, bin(BinaryOp::Sub, tx, c(32)), c(32))), Spread::Warp);
    // the role's own thread index is the thread index
    Expr role = lib::call(lib::Fn::RoleThread, {c(128), c(128)}, {}, DType::Int32);
    EXPECT_EQ(u.of(role), Spread::Lane);
    EXPECT_EQ(u.of(bin(BinaryOp::FloorDiv, role, c(32))), Spread::Warp);
    // block indices, parameters, constants
    EXPECT_EQ(u.of(bin(BinaryOp::Mul, bx, n)), Spread::Block);
    EXPECT_TRUE(u.sameInBlock(c(3)) && u.sameInWarp(bin(BinaryOp::FloorDiv, tx, c(32))));
    EXPECT_FALSE(u.sameInBlock(bin(BinaryOp::FloorDiv, tx, c(32))));
}

TEST_F(LaneUniformityTest, Memory) {
    const LaneUniformity u = of({});
    EXPECT_EQ(u.of(ld(A, bx)), Spread::Block);                            // a read-only tensor at one index
    EXPECT_EQ(u.of(ld(A, tx)), Spread::Lane);                             // at the thread's own
    EXPECT_EQ(u.of(ld(A, bin(BinaryOp::FloorDiv, tx, c(32)))), Spread::Warp); // at its warp's
    EXPECT_EQ(u.of(ld(C, bx)), Spread::Lane); // a tensor the kernel writes may change between two loads
    EXPECT_EQ(u.of(ld(S, c(0))), Spread::Block);
    EXPECT_EQ(u.of(ld(F, c(0))), Spread::Lane); // a fragment's element: each thread's own
    EXPECT_EQ(u.of(ld(R, c(0))), Spread::Block); // registers nothing stores
}

TEST_F(LaneUniformityTest, VariablesAndControl) {
    // x = bx; if tx < 5: y = 1 (lanes differ)
    LaneUniformity u = of({st(x, bx), IfThenElse::make(bin(BinaryOp::LT, tx, c(5)), st(y, c(1)), nullptr)});
    EXPECT_EQ(u.of(ld(x)), Spread::Block);
    EXPECT_EQ(u.of(ld(y)), Spread::Lane);
    // under a test of the warp index: the same in each warp
    u = of({IfThenElse::make(bin(BinaryOp::EQ, bin(BinaryOp::FloorDiv, tx, c(32)), c(0)), st(y, c(1)), nullptr)});
    EXPECT_EQ(u.of(ld(y)), Spread::Warp);
    // a varying value stored at a uniform index, a uniform value at a varying index
    Buffer Q = makeBuffer("Q", Scope::Local, DType::Int32, {c(8)}, {});
    u = of({st(R, ld(A, tx)), st(Q, c(1), bin(BinaryOp::FloorMod, tx, c(8)))});
    EXPECT_EQ(u.of(ld(R, c(3))), Spread::Lane);
    EXPECT_EQ(u.of(ld(Q, c(0))), Spread::Lane);
    // y = x before x = tx: the fixed point carries it back
    u = of({st(y, ld(x)), st(x, tx)});
    EXPECT_EQ(u.of(ld(y)), Spread::Lane);
    // while the thread's own value is positive: a varying trip count
    u = of({While::make(bin(BinaryOp::GT, ld(x), c(0)), st(y, c(0))), st(x, tx)});
    EXPECT_EQ(u.of(ld(y)), Spread::Lane);
    // each role of WarpRoles is whole warps
    u = of({WarpRoles::make(128, 128, 0, 0, st(x, c(1)), st(x, c(2)), {})});
    EXPECT_EQ(u.of(ld(x)), Spread::Warp);
}

TEST_F(LaneUniformityTest, LoopVariables) {
    Var i = makeVar("i", DType::Int32), j = makeVar("j", DType::Int32), k = makeVar("k", DType::Int32);
    Stmt uniformLoop = loop(i, n, st(x, i));
    Stmt varyingLoop = loop(j, bin(BinaryOp::FloorMod, tx, c(4)), st(y, c(1)));
    Stmt warpLoop = loop(k, bin(BinaryOp::FloorDiv, tx, c(32)), Evaluate::make(c(0)));
    const LaneUniformity u = of({uniformLoop, varyingLoop, warpLoop});
    EXPECT_EQ(u.of(i), Spread::Block);
    EXPECT_EQ(u.of(ld(x)), Spread::Block);
    EXPECT_EQ(u.of(j), Spread::Lane);
    EXPECT_EQ(u.of(ld(y)), Spread::Lane); // stored a trip count that differs
    EXPECT_EQ(u.of(k), Spread::Warp);
    EXPECT_EQ(u.around(*uniformLoop), Spread::Block);
    EXPECT_EQ(u.around(*varyingLoop), Spread::Lane);
    EXPECT_EQ(u.around(*warpLoop), Spread::Warp);
    EXPECT_EQ(u.around(*For::make(i, c(0), c(4), ForKind::Parallel, 0, Evaluate::make(c(0)))), Spread::Lane);
    EXPECT_EQ(u.around(*WarpRoles::make(128, 128, 0, 0, Seq::make({}), Seq::make({}), {})), Spread::Warp);
}

TEST_F(LaneUniformityTest, ShufflesVotesAndCalls) {
    const LaneUniformity u = of({});
    Expr full = c(-1);
    auto shfl = [&](Expr v, Expr lane, int64_t width) { return lib::call(lib::Fn::Shfl, {full, v, lane, c(width)}, {}, DType::Int32); };
    EXPECT_EQ(u.of(shfl(tx, c(0), 32)), Spread::Warp); // every lane takes lane 0's
    EXPECT_EQ(u.of(shfl(tx, bin(BinaryOp::FloorDiv, tx, c(32)), 32)), Spread::Warp);
    EXPECT_EQ(u.of(shfl(tx, c(0), 16)), Spread::Lane); // lane 0 of each half
    EXPECT_EQ(u.of(shfl(tx, bin(BinaryOp::FloorMod, tx, c(8)), 32)), Spread::Lane);
    EXPECT_EQ(u.of(shfl(bx, tx, 32)), Spread::Block); // a uniform value from any lane
    Expr xorTx = lib::call(lib::Fn::ShflXorSync, {full, tx, c(1), c(32)}, {}, DType::Int32);
    Expr xorBx = lib::call(lib::Fn::ShflXorSync, {full, bx, c(1), c(32)}, {}, DType::Int32);
    EXPECT_EQ(u.of(xorTx), Spread::Lane);
    EXPECT_EQ(u.of(xorBx), Spread::Block);
    EXPECT_EQ(u.of(lib::call(lib::Fn::WarpAny, {bin(BinaryOp::LT, tx, c(5))}, {}, DType::Bool)), Spread::Warp);
    EXPECT_EQ(u.of(lib::call(lib::Fn::WarpAny, {bin(BinaryOp::LT, bx, c(5))}, {}, DType::Bool)), Spread::Block);
    // a math function spreads as its arguments; T.call_extern may return each thread its own (an atomic's old value)
    EXPECT_EQ(u.of(Call::make(DType::Float32, "exp2", {ld(A, bx)})), Spread::Block);
    EXPECT_EQ(u.of(Call::make(DType::Float32, "exp2", {ld(A, tx)})), Spread::Lane);
    EXPECT_EQ(u.of(Call::make(DType::Int32, "extern:atomicAdd", {passes::addressOf(C, {c(0)}), c(1)})), Spread::Lane);
}

TEST_F(LaneUniformityTest, RegistersACallWrites) {
    // registers handed to a library call (an ldmatrix's destination) hold each lane's own values
    Stmt fill = st(R, c(0));
    Stmt ldm = Evaluate::make(Call::make(DType::Void, "extern:fill_regs", {passes::addressOf(R, {c(0)})}));
    const LaneUniformity u = of({fill, ldm});
    EXPECT_EQ(u.of(ld(R, c(0))), Spread::Lane);
}

// Tile level (insertSyncs): the thread's own index in a warp role is thread-dependent there too.
TEST_F(LaneUniformityTest, TileLevelSharesTheCallRule) {
    Kernel k;
    k.threads = 128;
    k.threadIdx = tx;
    k.blockIdx = {bx, makeVar("by", DType::Int32), makeVar("bz", DType::Int32)};
    Expr role = lib::call(lib::Fn::RoleThread, {c(128), c(128)}, {}, DType::Int32);
    k.body = Seq::make({st(x, role), st(y, Call::make(DType::Int32, "extern:tilec_rng_next", {})), st(R, bx)});
    passes::KernelLayouts layouts;
    passes::syncs::Uniformity u(k, layouts);
    EXPECT_FALSE(u.uniform(role));
    EXPECT_FALSE(u.uniform(ld(x)));
    EXPECT_FALSE(u.uniform(ld(y)));
    EXPECT_TRUE(u.uniform(ld(R)));
    EXPECT_TRUE(u.uniform(Call::make(DType::Float32, "exp2", {ld(A, bx)})));
}

} // namespace
