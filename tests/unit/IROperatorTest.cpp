/// \file
/// IROperator.h: type promotion, constant folding (with int32 -> int64 widening instead of wrapping) and
/// the linear simplifier's identities.
#include "tilec/IROperator.h"

#include <gtest/gtest.h>

using namespace tilec;
using namespace tilec::ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }
std::optional<int64_t> cv(const Expr &e) { return constInt(e); }

TEST(IROperator, Promotion) {
    EXPECT_EQ(promote(DType::Int32, DType::Float16), DType::Float16);
    EXPECT_EQ(promote(DType::Float16, DType::BFloat16), DType::Float32);
    EXPECT_EQ(promote(DType::Float16, DType::Float32), DType::Float32);
    EXPECT_EQ(promote(DType::Int32, DType::Int64), DType::Int64);
    EXPECT_EQ(promote(DType::Int32, DType::UInt32), DType::UInt32);
    EXPECT_EQ(promote(DType::Bool, DType::Int8), DType::Int8);
    EXPECT_EQ(promote(DType::Float8E4M3, DType::Float8E5M2), DType::Float16);
    EXPECT_EQ(promote(DType::Float64, DType::Int64), DType::Float64);
}

TEST(IROperator, FoldsConstants) {
    EXPECT_EQ(cv(binary(BinaryOp::Add, i32(2), i32(3))), 5);
    EXPECT_EQ(cv(binary(BinaryOp::FloorDiv, i32(-7), i32(2))), -4);
    EXPECT_EQ(cv(binary(BinaryOp::FloorMod, i32(-7), i32(2))), 1);
    EXPECT_EQ(cv(binary(BinaryOp::Div, i32(-7), i32(2))), -3); // C division
    EXPECT_EQ(cv(binary(BinaryOp::Pow, i32(2), i32(10))), 1024);
    EXPECT_EQ(cv(binary(BinaryOp::Max, i32(2), i32(10))), 10);
    EXPECT_EQ(cv(binary(BinaryOp::Shl, i32(1), i32(4))), 16);
    Expr lt = binary(BinaryOp::LT, i32(1), i32(2));
    EXPECT_EQ(lt->dtype, DType::Bool);
    EXPECT_EQ(cv(lt), 1);
    Expr f = binary(BinaryOp::Mul, floatImm(1.5), i32(2));
    ASSERT_TRUE(as<FloatImm>(f));
    EXPECT_EQ(as<FloatImm>(f)->value, 3.0);
    EXPECT_EQ(f->dtype, DType::Float32);
    // Division by a constant zero is left for the checks to report.
    EXPECT_TRUE(as<Binary>(binary(BinaryOp::FloorDiv, i32(1), i32(0))));
}

TEST(IROperator, OverflowWidensInsteadOfWrapping) {
    Expr big = binary(BinaryOp::Mul, i32(1 << 20), i32(1 << 20));
    EXPECT_EQ(big->dtype, DType::Int64);
    EXPECT_EQ(cv(big), int64_t(1) << 40);
    Expr neg = unary(UnaryOp::Neg, i32(INT32_MIN));
    EXPECT_EQ(neg->dtype, DType::Int64);
    EXPECT_EQ(cv(neg), -(int64_t)INT32_MIN);
    Expr max64 = intImm(INT64_MAX, DType::Int64);
    EXPECT_TRUE(as<Binary>(binary(BinaryOp::Add, max64, intImm(1, DType::Int64))));
}

TEST(IROperator, CastsAndSelect) {
    Expr five = i32(5);
    EXPECT_EQ(cast(DType::Int32, five), five);
    Expr c = cast(DType::Float16, i32(3));
    ASSERT_TRUE(as<FloatImm>(c));
    EXPECT_EQ(c->dtype, DType::Float16);
    EXPECT_EQ(cv(cast(DType::Int8, i32(300))), 44);          // a cast truncates, like C
    EXPECT_EQ(cv(cast(DType::Int32, floatImm(-2.7))), -2);   // toward zero
    Var x = makeVar("x", DType::Int32);
    Expr s = select(binary(BinaryOp::GT, x, i32(0)), floatImm(1.0), i32(0));
    ASSERT_TRUE(as<Select>(s));
    EXPECT_EQ(s->dtype, DType::Float32);
    EXPECT_EQ(cv(select(boolImm(true), i32(1), i32(2))), 1);
    Expr n = unary(UnaryOp::Not, unary(UnaryOp::Not, binary(BinaryOp::LT, x, i32(3))));
    EXPECT_TRUE(as<Binary>(n));
}

TEST(IROperator, Identities) {
    Var x = makeVar("x", DType::Int32);
    EXPECT_EQ(binary(BinaryOp::Add, binary(BinaryOp::Mul, x, i32(1)), i32(0)), x);
    EXPECT_EQ(binary(BinaryOp::FloorDiv, x, i32(1)), x);
    EXPECT_EQ(cv(binary(BinaryOp::Mul, x, i32(0))), 0);
    EXPECT_EQ(cv(binary(BinaryOp::FloorMod, x, i32(1))), 0);
    Expr a = binary(BinaryOp::And, boolImm(true), binary(BinaryOp::LT, x, i32(2)));
    EXPECT_TRUE(as<Binary>(a));
    EXPECT_EQ(as<Binary>(a)->op, BinaryOp::LT);
}

TEST(IROperator, LinearSimplifier) {
    Var by = makeVar("by", DType::Int32), bx = makeVar("bx", DType::Int32);
    Expr hi = binary(BinaryOp::Mul, binary(BinaryOp::Add, by, i32(1)), i32(128));
    Expr lo = binary(BinaryOp::Mul, by, i32(128));
    EXPECT_EQ(constValue(binary(BinaryOp::Sub, hi, lo)), 128);
    EXPECT_TRUE(provablyEqual(binary(BinaryOp::Add, lo, i32(128)), hi));
    EXPECT_FALSE(provablyEqual(lo, hi));
    EXPECT_TRUE(provablyEqual(binary(BinaryOp::Add, bx, by), binary(BinaryOp::Add, by, bx)));
    // (bx * 128 + 64) // 64 == bx * 2 + 1 and (bx * 128 + 64) % 64 == 0
    Expr t = binary(BinaryOp::Add, binary(BinaryOp::Mul, bx, i32(128)), i32(64));
    EXPECT_TRUE(provablyEqual(binary(BinaryOp::FloorDiv, t, i32(64)),
                              binary(BinaryOp::Add, binary(BinaryOp::Mul, bx, i32(2)), i32(1))));
    EXPECT_EQ(constValue(binary(BinaryOp::FloorMod, t, i32(64))), 0);
    EXPECT_EQ(constValue(binary(BinaryOp::LT, lo, hi)), 1);
    EXPECT_EQ(constValue(binary(BinaryOp::Min, lo, hi)), std::nullopt);
    EXPECT_TRUE(provablyEqual(binary(BinaryOp::Min, lo, hi), lo));
    // Products of variables stay terms; equal terms still cancel.
    Expr sq = binary(BinaryOp::Mul, bx, by);
    EXPECT_EQ(constValue(binary(BinaryOp::Sub, binary(BinaryOp::Add, sq, i32(3)), sq)), 3);
}

TEST(IROperator, LinearSimplifierExactCDivision) {
    // A causal loop's start `by * 64 / 32` (C division) is by * 2, so its trip count
    // `S + (128 - max(by * 2, ...))` with S = max(by * 64 / 32, ...) is a constant end (TileLang's backward examples).
    Var by = makeVar("by", DType::Int32);
    Expr q = binary(BinaryOp::Div, binary(BinaryOp::Mul, by, i32(64)), i32(32));
    EXPECT_TRUE(provablyEqual(q, binary(BinaryOp::Mul, by, i32(2))));
    Expr s1 = binary(BinaryOp::Max, q, i32(5)), s2 = binary(BinaryOp::Max, binary(BinaryOp::Mul, by, i32(2)), i32(5));
    EXPECT_EQ(constValue(binary(BinaryOp::Add, s1, binary(BinaryOp::Sub, i32(128), s2))), 128);
    // Exact for negative values too: (-3 * 64 - 32) / 32 == -7 in C.
    Expr r = binary(BinaryOp::Div, binary(BinaryOp::Sub, binary(BinaryOp::Mul, by, i32(64)), i32(32)), i32(32));
    EXPECT_TRUE(provablyEqual(r, binary(BinaryOp::Sub, binary(BinaryOp::Mul, by, i32(2)), i32(1))));
    // Not exact: a remainder that truncation rounds toward zero stays a division.
    Expr n = binary(BinaryOp::Div, binary(BinaryOp::Add, binary(BinaryOp::Mul, by, i32(64)), i32(16)), i32(32));
    EXPECT_FALSE(provablyEqual(n, binary(BinaryOp::Mul, by, i32(2))));
    // Unsigned division is left alone: its products wrap.
    Var u = makeVar("u", DType::UInt32);
    EXPECT_TRUE(as<Binary>(simplify(binary(BinaryOp::Div, binary(BinaryOp::Mul, u, cast(DType::UInt32, i32(64))),
                                            cast(DType::UInt32, i32(32))))));
}

TEST(IROperator, SimplifyKeepsNodesWhenNothingChanges) {
    Var by = makeVar("by", DType::Int32);
    Expr e = binary(BinaryOp::Add, binary(BinaryOp::Mul, by, i32(128)), i32(5));
    EXPECT_EQ(simplify(e), e);
    EXPECT_EQ(simplify(by), by);
    Expr messy = binary(BinaryOp::Sub, binary(BinaryOp::Add, by, by), by);
    EXPECT_EQ(simplify(messy), by);
    Expr f = binary(BinaryOp::Add, makeVar("x", DType::Float32), floatImm(1.0));
    EXPECT_EQ(simplify(f), f);
}

TEST(IROperator, SimplifierSurvivesDeepExpressions) {
    Var x = makeVar("x", DType::Int32);
    Expr e = x;
    for (int i = 0; i < 5000; ++i) e = Binary::make(BinaryOp::Add, e, i32(1));
    Expr s = simplify(e); // must not overflow the stack
    EXPECT_TRUE(s);
}

TEST(IROperator, SimplifierIsFastOnMinMaxChains) {
    Var x = makeVar("x", DType::Int32), y = makeVar("y", DType::Int32);
    Expr e = x;
    for (int i = 0; i < 200; ++i) e = binary(i % 2 ? BinaryOp::Min : BinaryOp::Max, e, binary(BinaryOp::Add, y, i32(i)));
    Expr c = binary(BinaryOp::LT, e, binary(BinaryOp::Add, e, i32(1)));
    EXPECT_EQ(constValue(c), 1); // would take exponential time if subexpressions were simplified repeatedly
}

} // namespace
