/// \file
/// Integer facts the lowering passes need about index expressions: value ranges (is this access inside
/// the tensor?), known divisors (is this address 16-byte aligned?), linear forms in one variable (is this
/// access contiguous in the vector lane?), substitution of variables, and numeric evaluation.
#pragma once

#include "tilec/IR.h"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace tilec::passes {

/// A closed integer interval; a missing end is unbounded.
struct Interval {
    using value_type = int64_t;
    std::optional<int64_t> lo, hi;
    static Interval point(int64_t v) { return {v, v}; }
    static Interval of(int64_t lo, int64_t hi) { return {lo, hi}; }
    bool nonNegative() const { return lo && *lo >= 0; }
};

/// An interval of exact values past 64 bits: the ranges of index expressions before they are given a width.
struct WideInterval {
    using value_type = __int128;
    std::optional<__int128> lo, hi;
    bool nonNegative() const { return lo && *lo >= 0; }
    /// Both ends known and inside [lo, hi].
    bool within(__int128 min, __int128 max) const { return this->lo && this->hi && *this->lo >= min && *this->hi <= max; }
};

/// What is known about the variables in scope: loop variables, block and thread indices, dynamic sizes.
using RangeMap = std::map<const ir::VarNode *, Interval>;

/// The ranges every expression of a kernel may rely on: block indices in [0, grid - 1], the thread index in
/// [0, threads - 1], T.dynamic symbols in [1, 2^31 - 1] (the launcher checks them).
RangeMap kernelRanges(const ir::Kernel &k);

/// Adds a loop's variable to `ranges` when its bounds are known (constant min; extent constant or bounded).
void addLoopRange(RangeMap &ranges, const ir::For &loop);

/// addLoopRange where every signed operation of the bounds narrower than 64 bits holds a value of its type
/// (signed overflow is undefined in C and in the tile language alike): sound only for bounds whose widths are
/// final (src/lower/WidenIndices.cpp; one it will still widen takes values past its type). A count read from
/// memory and computed in 32 bits then bounds the variable by what 32 bits hold: `k < ceildiv(cu[b + 1] -
/// cu[b], 128)` gives k < 2^24, not 2^25, so `k * 128 + j` stays 32-bit.
void addTypedLoopRange(RangeMap &ranges, const ir::For &loop);

/// A conservative interval containing every value `e` can take.
Interval boundsOf(const ir::Expr &e, const RangeMap &ranges);

/// The same for the mathematical value of `e` (no operation wraps: the ranges of index arithmetic before it is
/// given a width); a bound is unknown only where a leaf is unbounded or a value passes 127 bits.
WideInterval exactBoundsOf(const ir::Expr &e, const RangeMap &ranges);

/// The largest integer known to divide every value of `e` (1 when nothing is known; 0 for the constant 0).
int64_t knownMultiple(const ir::Expr &e);

/// `e` as `rest + coeff * v` with `rest` free of v, when e is linear in v (sums, differences, products by
/// constants and widening casts of such); nullopt otherwise. rest is null when it is 0.
std::optional<std::pair<ir::Expr, int64_t>> linearIn(const ir::Expr &e, const ir::VarNode *v);

using VarMap = std::map<const ir::VarNode *, ir::Expr>;
/// Replaces variables by expressions (loop variables stay bound by their loops).
ir::Expr substitute(const ir::Expr &e, const VarMap &m);
ir::Stmt substitute(const ir::Stmt &s, const VarMap &m);

/// Simplifies the indices of every load and store (after a substitution made them constant-foldable).
ir::Stmt simplifyIndices(const ir::Stmt &s);

/// The value of an integer expression under an assignment of its variables; nullopt when it reads
/// anything else (a load, an unassigned variable) or divides by zero.
std::optional<int64_t> evalInt(const ir::Expr &e, const std::map<const ir::VarNode *, int64_t> &values);

/// Greatest common divisor of non-negative numbers (gcd(0, x) = x).
int64_t gcd64(int64_t a, int64_t b);

} // namespace tilec::passes
