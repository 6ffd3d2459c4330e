/// \file
/// Rows of a T.gemm accumulator that no one can observe (include/tilec/passes/BoundGemmRows.h).
#include "tilec/passes/BoundGemmRows.h"

#include "tilec/IRMutator.h"
#include "tilec/passes/LiveRows.h"

#include <map>

namespace tilec::passes {

using namespace ir;

namespace {

/// T.gemms into the accumulators of `live` marked with their live rows (Gemm::liveRows).
struct Mark : IRMutator {
    using IRMutator::visit;
    std::map<const BufferNode *, int64_t> live;
    std::map<const BufferNode *, Expr> liveAt;
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        if (auto at = liveAt.find(op->c.buffer.get()); at != liveAt.end() && !op->liveRowsAt)
            return op->withLiveRowsAt(at->second);
        auto it = live.find(op->c.buffer.get());
        if (it == live.end() || op->liveRows == it->second) return op;
        return op->withLiveRows(it->second);
    }
};

} // namespace

Program boundGemmRows(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Mark mark;
        mark.live = liveAccumulatorRows(*k);
        mark.liveAt = liveAccumulatorRowsAt(*k);
        out.kernels.push_back(mark.live.empty() && mark.liveAt.empty() ? k : mark.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
