/// \file
/// The ranges in scope of a rewriting traversal (RangeScopedMutator.h).
#include "RangeScopedMutator.h"

#include <utility>

namespace tilec::passes {

using namespace ir;

RangeScopedMutator::RangeScopedMutator(const Kernel &k) : ranges_(kernelRanges(k)) {}

RangeScopedMutator::RangeScopedMutator(RangeMap outer) : ranges_(std::move(outer)) {}

Stmt RangeScopedMutator::visit(const std::shared_ptr<const For> &op) {
    LoopScope in(*this, *op);
    return IRMutator::visit(op);
}

RangeScopedMutator::LoopScope::LoopScope(RangeScopedMutator &m, const For &loop)
    : ranges_(m.ranges_), saved_(m.ranges_) {
    addLoopRange(ranges_, loop);
}

RangeScopedMutator::LoopScope::~LoopScope() { ranges_ = std::move(saved_); }

} // namespace tilec::passes
