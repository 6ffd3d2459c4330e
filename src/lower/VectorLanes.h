/// \file
/// What vectorizeAccesses (VectorizeAccesses.cpp) knows about the lanes of a vectorized loop: which of its
/// indices are aligned vectors, which of its tests hold for all lanes of a vector or for none, which registers
/// every lane sets alike, and what its body reads and stores.
#pragma once

#include "tilec/IR.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace tilec::passes::lanes {

/// Whether `e` is the constant 0 (integer or floating).
bool isZero(const ir::Expr &e);

bool isMemory(const ir::Buffer &b);

/// Variables bound inside a statement, and buffers it stores to.
struct Inside : ir::IRVisitor {
    using IRVisitor::visit;
    std::set<const ir::VarNode *> bound;
    std::set<const ir::BufferNode *> stored;
    void visit(const ir::For &op) override;
    void visit(const ir::Store &op) override;
    void visit(const ir::AtomicAdd &op) override;
};

bool mentionsAny(const ir::Expr &e, const std::set<const ir::VarNode *> &vars);

/// What a lowering that assumes aligned rows (LoweringOptions::assumeAlignedRows) may take of the T.dynamic
/// sizes to give a vector of lanes an aligned start: that a size is a multiple of the lane count. Each size
/// taken is recorded with the tensor the vector reads or writes, as a Kernel::assumptions entry the launcher
/// checks (the tensor's pointer aligned to the vector's bytes, the size times the element size a multiple of
/// them); arguments that break one run the variant lowered without assumptions. With no sizes it assumes
/// nothing.
struct SizeAssumptions {
    std::map<const ir::VarNode *, ir::Var> sizes; ///< the sizes that may be assumed
    std::vector<ir::Assumption> made;
    /// Whether every value of `e` is a multiple of `width`: known, or once the fewest of `sizes` are taken
    /// to be multiples of it, which are then recorded for `tensor` (a global tensor accessed `width` lanes at
    /// a time from an offset that relies on it).
    bool multiple(const ir::Expr &e, int64_t width, const ir::Buffer &tensor);
};

/// The base of `index` as `base + lane` with base aligned to `width`, or null. With `assumed`, an alignment
/// that needs a size to be a multiple of `width` counts, that size recorded for `tensor` (see
/// SizeAssumptions).
ir::Expr alignedBase(const ir::Expr &index, const ir::VarNode *lane, int64_t width,
                     SizeAssumptions *assumed = nullptr, const ir::Buffer &tensor = nullptr);

/// The top-level store of a vectorized loop's body (a statement of its Seq, optionally under an if without else).
const ir::Store *topStore(const ir::Stmt &s);

/// Whether a condition reads nothing (no load, no call): evaluating it again, or once for several lanes or
/// statements, gives the same answer.
bool pureIndexTest(const ir::Expr &c);

/// Whether a condition may be evaluated before a vectorized loop's body: it calls nothing and reads only
/// registers (local buffers) that the body does not write (see VectorLanes.cpp).
bool registerTest(const ir::Expr &c, const std::set<const ir::BufferNode *> &stored);

/// Whether `e` loads an element of one of `bufs`.
bool loadsAny(const ir::Expr &e, const std::set<const ir::BufferNode *> &bufs);

/// The number of statements at the head of a vectorized loop's body that set a register to the same value in
/// every lane, so that they may run once before the loop (see VectorLanes.cpp).
size_t invariantRegisterDefs(const std::vector<ir::Stmt> &stmts, const ir::VarNode *lane,
                             const std::set<const ir::VarNode *> &bound,
                             const std::set<const ir::BufferNode *> &stored);

/// A vectorized loop's body with each top-level `if c { s1; s2; ... }` (c a pure index test) split into
/// `if c s1; if c s2; ...`.
ir::Stmt splitGuards(const ir::Stmt &body);

/// Whether memory buffer `b` is only read-modified-written in `body` (see VectorLanes.cpp).
bool readModifyWriteOnly(const ir::Stmt &body, const ir::BufferNode *b);

/// The conjuncts of `c` (its operands of `and`, recursively), appended to `out`.
void conjuncts(const ir::Expr &c, std::vector<ir::Expr> &out);

/// A comparison of `base + lane` with a bound, as the same comparison of `base` alone where it holds for every
/// lane of an aligned vector or for none; null when `c` is not of that form.
/// With `assumed`, the sizes `base` and the bound need may be assumed for `tensor` (see SizeAssumptions).
ir::Expr laneFree(const ir::Expr &c, const ir::VarNode *lane, int64_t width, SizeAssumptions *assumed = nullptr,
                  const ir::Buffer &tensor = nullptr);

/// A comparison that holds for every value its operands can take.
bool provablyTrue(const ir::Expr &c, const RangeMap &ranges);

/// A hoisted load `e` (a load, or `c ? load : 0`) read only where `guards` hold as well, zero elsewhere.
ir::Expr underGuards(ir::Expr e, const std::vector<ir::Expr> &guards);

/// A vectorized loop's body with its ifs' tests made once per vector where they can be (LaneConditions).
/// With `assumed`, a store's test may rely on sizes assumed for the stored tensor.
ir::Stmt laneConditions(const ir::Stmt &body, const ir::VarNode *lane, int64_t width, const RangeMap &ranges,
                        SizeAssumptions *assumed = nullptr);

/// A vectorized loop's body with the lanes of a vector taken as one where they provably are: flattened
/// `x // c * c + x % c` folded to x (FoldDivMod), then `(base + lane) // d` and `% d` split (LaneSplit).
/// With `assumed`, a guarded load's test may rely on sizes assumed for the loaded tensor.
ir::Stmt splitLanes(const ir::Stmt &body, const ir::Var &lane, int64_t width, SizeAssumptions *assumed = nullptr);

/// An index of a vectorized loop as `base + offset`: base free of the lane, offset a function of the lane alone,
/// whose values at lanes 0 to width - 1 are `values`. A remainder or floor division of `rest + lane` by a
/// divisor d of rest is split on the way (`(rest + lane) // d` is `rest // d + lane // d`, `(rest + lane) % d` is
/// `lane % d`, for every lane): the index of a tensor whose annotated layout interleaves its columns
/// (TileLang's dQ accumulator layout) or of packed elements (`x[base + lane // 2]`). base is null when 0.
struct LaneOffsets {
    ir::Expr base, offset;
    std::vector<int64_t> values;
};
std::optional<LaneOffsets> laneOffsets(const ir::Expr &index, const ir::Var &lane, int64_t width);

} // namespace tilec::passes::lanes
