/// \file
/// A mutator of the consumer code of warp-specialized kernels that replaces chosen statements by several.
#pragma once

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <optional>
#include <vector>

namespace tilec::passes {

/// The helpers of the consumer rewriters: an int32 constant, a binary operation simplified.
namespace consumer {
inline ir::Expr i32(int64_t v) {
    return ir::intImm(v, DType::Int32);
}
inline ir::Expr op(ir::BinaryOp o, ir::Expr a, ir::Expr b) {
    return simplify(ir::binary(o, std::move(a), std::move(b)));
}
} // namespace consumer

/// Descends into the consumer branch of each WarpRoles that `takes` (never into the producer's) and replaces
/// every statement of a Seq for which `rewrite` returns statements by those; all other statements are mutated
/// as usual. Unchanged code is returned as the same nodes.
class ConsumerRewriter : public ir::IRMutator {
  public:
    using IRMutator::visit;

    ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
        // consumer warp groups that each run code of their own (explicit roles: `if tilec.warp_group(c)`) keep it
        // as written: the rewrites change one consumer's schedule, or make warp groups take turns in one loop
        auto groups = ir::as<ir::IfThenElse>(op->consumer);
        if (!takes(*op) || (groups && lib::is(groups->cond, lib::Fn::WarpGroup)))
            return op;
        ir::Stmt c = mutate(op->consumer);
        if (c == op->consumer)
            return op;
        return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs,
                                   op->producer, c, op->loc);
    }

    ir::Stmt visit(const std::shared_ptr<const ir::Seq> &op) override {
        std::vector<ir::Stmt> out;
        bool changed = false;
        for (auto &s : op->stmts) {
            if (auto r = rewrite(s)) {
                out.insert(out.end(), r->begin(), r->end());
                changed = true;
                continue;
            }
            ir::Stmt m = mutate(s);
            changed |= m != s;
            out.push_back(m);
        }
        if (!changed)
            return op;
        return ir::Seq::make(std::move(out), op->loc);
    }

  protected:
    virtual bool takes(const ir::WarpRoles &) const { return true; }
    virtual std::optional<std::vector<ir::Stmt>> rewrite(const ir::Stmt &s) = 0;
};

} // namespace tilec::passes
