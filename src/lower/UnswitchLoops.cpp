/// \file
/// Loop-invariant tests around a loop's whole body taken out of the loop (include/tilec/passes/UnswitchLoops.h).
#include "tilec/passes/UnswitchLoops.h"

#include "tilec/IRMutator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/LoopInvariants.h"

namespace tilec::passes {

using namespace ir;

namespace {


class Unswitch : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Unswitch(const Stmt &kernelBody) : kernelBody_(kernelBody) {}

    Stmt visit(const std::shared_ptr<const For> &op) override {
        Stmt s = IRMutator::visit(op);
        auto f = as<For>(s);
        if (!f || f->forKind != ForKind::Serial) return s;
        auto test = as<IfThenElse>(f->body);
        if (!test || test->otherwise || uses(test->cond, f->var.get()) || callsAnything(test->cond)) return s;
        if (readsMemory(test->cond) && !readsOnly(test->cond, loopInvariantBuffers(*f, kernelBody_))) return s;
        Stmt loop = For::make(f->var, f->min, f->extent, f->forKind, f->numStages, test->then, f->loc);
        return IfThenElse::make(test->cond, loop, nullptr, test->loc);
    }

  private:
    const Stmt &kernelBody_;
};

} // namespace

Program unswitchLoops(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Unswitch u(k->body);
        out.kernels.push_back(u.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
