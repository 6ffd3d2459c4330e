/// \file
/// The forms of reducer updates that lowerReducers knows (src/lower/ReducerNests.cpp): the reducers a kernel
/// declares, a nest of T.Parallel loops accumulating into one, and small reducers updated at computed indices
/// rewritten into that form.
#pragma once

#include "tilec/IR.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace tilec::passes::reducers {

/// The reducers a kernel declares (their markers), by buffer.
std::map<const ir::BufferNode *, ir::ReduceKind> reducersOf(const ir::Stmt &body);

/// `e` with the reducer's old value `old` taken out: e for `old + e` / `e + old` (sum), `max(old, e)` (max),
/// `min(old, e)` (min); null when the value is not that.
ir::Expr contribution(const ir::Expr &value, const ir::Load &old, ir::ReduceKind k);

constexpr int kNone = -1, kAll = -2, kUniform = -3;

/// A nest of T.Parallel loops whose one statement accumulates into a reducer: `r[...] = r[...] (op) e` with r
/// indexed by the nest's variables in order, all but one (`missing`), over their whole extents; or a one-element
/// r[0] reduced over every variable (`missing` kAll, 0 in a one-variable nest); or r indexed by expressions none
/// of the nest's variables appear in (`da[i, o]` in a nest over h inside T.serial loops over i and o: `missing`
/// kUniform), each iteration adding to the one element they pick; possibly under an `if` (`cond`).
struct Nest {
    std::vector<const ir::For *> loops;
    const ir::Store *st = nullptr;
    ir::Expr e;           ///< the contribution
    ir::Expr cond;        ///< the `if` the update is under, or null
    bool oneElement = false;
    int missing = kNone; ///< the loop whose variable does not index r
    /// The form whose accumulation in registers is proven (Deferral): unconditional, r indexed by the variables.
    bool plain() const { return !cond && !oneElement; }
    std::vector<int64_t> extents() const {
        std::vector<int64_t> x;
        for (auto *l : loops) x.push_back(*ir::constInt(l->extent));
        return x;
    }
};

/// `at` with Seqs of one statement taken off.
ir::Stmt single(ir::Stmt at);

/// The loops of a nest of T.Parallel loops from 0 with constant extents and the body below them (single
/// statements out of their Seq); false when a loop of the nest is not that.
bool nestLoops(const ir::For &top, std::vector<const ir::For *> &loops, ir::Stmt &body);

/// The body of a nest with its `if` (no else) taken off: the update and the condition (null when none).
std::pair<ir::Stmt, ir::Expr> underIf(const ir::Stmt &body);

/// The nest variable the store to reducer r reduces over, kNone when r is not indexed by the nest's other
/// variables in their order; a one-element r (`r[0]`) over every variable (kAll; 0 in a one-variable nest).
int missingVariable(const std::vector<const ir::For *> &loops, const ir::Store &st);

/// `top` as a Nest updating one of `reducers`, or nullopt.
std::optional<Nest> matchNest(const ir::For &top, const std::map<const ir::BufferNode *, ir::ReduceKind> &reducers);

/// `body` with every update of a small reducer (at most 16 elements) at an index computed from its T.Parallel
/// nest's variables (`r[T.min(2, j // 4)] += e`) rewritten as one update per element of r, in the element form
/// matchNest knows: `r[k] = r[k] (op) select(index == k, e, identity)` for each k.
ir::Stmt withScatteredUpdates(const ir::Stmt &body, const std::map<const ir::BufferNode *, ir::ReduceKind> &reducers);

} // namespace tilec::passes::reducers
