/// \file
/// Block-uniform selects of unrolled nests made once around the nest (include/tilec/passes/UnswitchUniformSelects.h).
#include "tilec/passes/UnswitchUniformSelects.h"

#include "EachKernel.h"
#include "SyncElements.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/LaneUniformity.h"

#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// Tests taken out of one nest: each doubles its code.
constexpr int kMaxSplits = 2;

/// Whether evaluating `e` can trap where the nest did not evaluate it: a division, remainder or shift by a
/// non-constant.
struct MayTrap : IRVisitor {
    using IRVisitor::visit;
    bool trap = false;
    void visit(const Binary &op) override {
        const bool divides = op.op == BinaryOp::Div || op.op == BinaryOp::FloorDiv || op.op == BinaryOp::FloorMod ||
                             op.op == BinaryOp::Shl || op.op == BinaryOp::Shr;
        if (divides && !constInt(op.b)) trap = true;
        IRVisitor::visit(op);
    }
};

/// The first select, outermost first, whose test is uniform over the nest and the block and whose choices are not.
class FindUniformSelect : public IRVisitor {
  public:
    using IRVisitor::visit;
    FindUniformSelect(const std::set<const VarNode *> &inner, const LaneUniformity &lanes) : inner_(inner), lanes_(lanes) {}
    Expr found;

    void visit(const Select &op) override {
        if (found) return;
        if (uniform(op.cond) && (varies(op.t) || varies(op.f))) {
            found = op.cond;
            return;
        }
        IRVisitor::visit(op);
    }

  private:
    /// Whether `e` differs between the nest's elements or the block's threads.
    bool varies(const Expr &e) const {
        if (!lanes_.sameInBlock(e)) return true;
        for (const VarNode *v : inner_)
            if (uses(e, v)) return true;
        return false;
    }
    bool uniform(const Expr &c) const {
        if (constInt(c) || varies(c) || readsMemory(c) || callsAnything(c)) return false;
        MayTrap t;
        t.visit(c);
        return !t.trap;
    }
    const std::set<const VarNode *> &inner_;
    const LaneUniformity &lanes_;
};

/// The nest with every select testing `cond` replaced by the choice `value` makes.
class Decide : public IRMutator {
  public:
    using IRMutator::visit;
    Decide(Expr cond, bool value) : cond_(std::move(cond)), value_(value) {}
    Expr visit(const std::shared_ptr<const Select> &op) override {
        if (structurallyEqual(op->cond, cond_)) return mutate(value_ ? op->t : op->f);
        return IRMutator::visit(op);
    }

  private:
    Expr cond_;
    bool value_;
};

class Unswitch : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Unswitch(const LaneUniformity &lanes) : lanes_(lanes) {}

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (op->forKind != ForKind::Unrolled) return IRMutator::visit(op);
        return split(op, kMaxSplits);
    }

  private:
    Stmt split(const Stmt &nest, int left) {
        if (left == 0) return nest;
        const std::set<const VarNode *> vars = syncs::loopVars(nest);
        FindUniformSelect f(vars, lanes_);
        f.visit(nest);
        if (!f.found) return nest;
        Stmt yes = Decide(f.found, true).mutate(nest), no = Decide(f.found, false).mutate(nest);
        return IfThenElse::make(f.found, split(yes, left - 1), split(no, left - 1), nest->loc);
    }
    const LaneUniformity &lanes_;
};

} // namespace

Program unswitchUniformSelects(const Program &p) {
    return eachKernel(p, [](const KernelP &k) -> KernelP {
        const LaneUniformity lanes = laneUniformity(*k);
        Stmt body = Unswitch(lanes).mutate(k->body);
        if (body == k->body) return k;
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        return nk;
    });
}

} // namespace tilec::passes
