/// addLoopRange (src/lower/Arith.cpp): a loop variable's range is bounded by its start's range plus its
/// extent's, and also by its end min + extent bounded as one expression. A loop that splitUniformConditions cut
/// at run-time points starts at `s` and runs `hi - s'` times where s and s' are one value written two ways
/// (TileLang's causal backward: `by * 64 // 32` and `by * 2`); only the simplified end says the variable stays
/// below hi, which is what lets foldImpliedConditions drop the dQ atomics' row test.
#include "tilec/IROperator.h"
#include "tilec/passes/Arith.h"

#include <gtest/gtest.h>

using namespace tilec;
using ir::BinaryOp;

namespace {

ir::Expr i32(int64_t v) { return ir::IntImm::make(DType::Int32, v); }
ir::Expr bin(BinaryOp op, ir::Expr a, ir::Expr b) { return ir::binary(op, std::move(a), std::move(b)); }

} // namespace

TEST(ArithLoopRange, EndBoundedAsOneExpression) {
    ir::Var by = ir::makeVar("by", DType::Int32), k = ir::makeVar("k", DType::Int32);
    passes::RangeMap ranges{{by.get(), passes::Interval::of(0, 63)}};
    // s = max(by * 64 // 32, min(by * 2 + 2, 128)); extent = 128 - max(by * 2, min(by * 2 + 2, 128))
    ir::Expr inner = bin(BinaryOp::Min, bin(BinaryOp::Add, bin(BinaryOp::Mul, by, i32(2)), i32(2)), i32(128));
    ir::Expr s = bin(BinaryOp::Max, bin(BinaryOp::FloorDiv, bin(BinaryOp::Mul, by, i32(64)), i32(32)), inner);
    ir::Expr s2 = bin(BinaryOp::Max, bin(BinaryOp::Mul, by, i32(2)), inner);
    ir::Expr extent = bin(BinaryOp::Sub, i32(128), s2);
    auto loop = ir::For::make(k, s, extent, ir::ForKind::Serial, 0, ir::Evaluate::make(i32(0), {}), {});
    passes::addLoopRange(ranges, *std::static_pointer_cast<const ir::For>(loop));
    ASSERT_TRUE(ranges[k.get()].hi.has_value());
    EXPECT_EQ(*ranges[k.get()].hi, 127); // the separate bounds alone give max(s) + max(extent) - 1 = 253
    ASSERT_TRUE(ranges[k.get()].lo.has_value());
    EXPECT_EQ(*ranges[k.get()].lo, 2);
}

TEST(ArithLoopRange, NeverWiderThanTheSeparateBounds) {
    // k in [n, n + 4) for n in [10, 20]: both ways give [10, 23]; and a start that is a product of variables (no
    // linear end) keeps the separate bound.
    ir::Var n = ir::makeVar("n", DType::Int32), m = ir::makeVar("m", DType::Int32), k = ir::makeVar("k", DType::Int32);
    passes::RangeMap ranges{{n.get(), passes::Interval::of(10, 20)}, {m.get(), passes::Interval::of(1, 2)}};
    auto loop = ir::For::make(k, n, i32(4), ir::ForKind::Serial, 0, ir::Evaluate::make(i32(0), {}), {});
    passes::addLoopRange(ranges, *std::static_pointer_cast<const ir::For>(loop));
    EXPECT_EQ(*ranges[k.get()].lo, 10);
    EXPECT_EQ(*ranges[k.get()].hi, 23);
    auto loop2 = ir::For::make(k, bin(BinaryOp::Mul, n, m), i32(4), ir::ForKind::Serial, 0,
                               ir::Evaluate::make(i32(0), {}), {});
    passes::addLoopRange(ranges, *std::static_pointer_cast<const ir::For>(loop2));
    EXPECT_EQ(*ranges[k.get()].hi, 43);
}
