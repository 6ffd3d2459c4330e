/// \file
/// An IRMutator that knows the range of every variable in scope where it visits a node: the kernel's block and
/// thread indices and T.dynamic sizes (kernelRanges), and the variable of every enclosing loop whose bounds are
/// known (addLoopRange). The passes that decide by bounds while they rewrite (flattenBuffers' index widths,
/// predicateBounds' checks, selectRegisterSlots' slots, vectorizeAccesses' lanes) derive from it instead of each
/// keeping the same map and the same save-add-restore around a loop.
#pragma once

#include "tilec/IRMutator.h"
#include "tilec/passes/Arith.h"

namespace tilec::passes {

class RangeScopedMutator : public ir::IRMutator {
  public:
    using IRMutator::visit;
    /// The kernel's ranges (kernelRanges) in scope everywhere.
    explicit RangeScopedMutator(const ir::Kernel &k);
    /// `outer` in scope everywhere (a test's own ranges, or none).
    explicit RangeScopedMutator(RangeMap outer = {});

    /// The loop mutated as IRMutator does, its variable's range in scope over its bounds and body; the same
    /// handle when nothing changed.
    ir::Stmt visit(const std::shared_ptr<const ir::For> &op) override;

  protected:
    /// The ranges in scope at the node being visited.
    const RangeMap &ranges() const { return ranges_; }

    /// `v`'s range in scope from here (a pass that knows more of a part of the kernel than kernelRanges does: a
    /// warp role's threads); the caller puts back the range it replaced when the part ends.
    void setRange(const ir::VarNode *v, Interval r) { ranges_[v] = r; }

    /// While it lives, `loop`'s variable is in scope (where its bounds are known); the ranges as they were before
    /// it come back when it ends. visit(For) holds one; a pass that must rewrite more of a loop inside its scope
    /// (or partly outside it) holds its own instead of calling it.
    class LoopScope {
      public:
        LoopScope(RangeScopedMutator &m, const ir::For &loop);
        ~LoopScope();
        LoopScope(const LoopScope &) = delete;
        LoopScope &operator=(const LoopScope &) = delete;

      private:
        RangeMap &ranges_;
        RangeMap saved_;
    };

  private:
    RangeMap ranges_;
};

} // namespace tilec::passes
