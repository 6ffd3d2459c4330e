/// \file
/// Building IR expressions the way the language means them: type promotion, constant folding and a
/// linear-arithmetic simplifier (so `(by + 1) * 128 - by * 128` is the constant 128).
#pragma once

#include "tilec/IR.h"

namespace tilec::ir {

Expr intImm(int64_t v, DType t = DType::Int32, SourceRange loc = {});
Expr floatImm(double v, DType t = DType::Float32, SourceRange loc = {});
Expr boolImm(bool v, SourceRange loc = {});

/// The common type of a binary operation: float beats int (the wider float wins; float16 with bfloat16 is
/// float32), wider ints beat narrower, bool promotes to the other operand's type.
DType promote(DType a, DType b);

/// `a op b` with both operands cast to promote(a, b) (comparisons yield bool; And/Or take bools), folded when
/// both are constant. Integer folding that overflows the type widens int32 to int64 (never wraps silently).
/// Div of two integers is C division; FloorDiv/FloorMod follow Python.
Expr binary(BinaryOp op, Expr a, Expr b, SourceRange loc = {});
Expr unary(UnaryOp op, Expr a, SourceRange loc = {});
/// A cast, folded for constants; the same expression when it already has type t.
Expr cast(DType t, Expr v, SourceRange loc = {});
/// Select with both branches promoted to a common type; folded when cond is constant.
Expr select(Expr cond, Expr t, Expr f, SourceRange loc = {});

/// Constant folding plus linear normalisation of integer arithmetic (sums of constant multiples of
/// non-constant terms, sorted deterministically); returns the same node when nothing simplifies.
Expr simplify(const Expr &e);
/// Structural equality without simplifying: variables and buffers by identity, the rest by value.
bool structurallyEqual(const Expr &a, const Expr &b);
/// True when a and b are structurally equal after simplify (same variables by identity).
bool provablyEqual(const Expr &a, const Expr &b);
/// Element-wise provablyEqual of two lists (shapes, extents); false when their lengths differ.
bool provablyEqual(const std::vector<Expr> &a, const std::vector<Expr> &b);
/// simplify(e) as a constant, if it is one.
std::optional<int64_t> constValue(const Expr &e);
/// The value a reduction of `kind` starts from in type `t`: 0 for sums and absolute ones, the lowest value for
/// maxima (-inf for floats), the highest for minima.
Expr reduceIdentity(ReduceKind kind, DType t);

} // namespace tilec::ir
