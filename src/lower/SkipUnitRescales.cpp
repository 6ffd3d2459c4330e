/// \file
/// In-place rescales skipped by a warp vote where every factor is 1 (include/tilec/passes/SkipUnitRescales.h).
#include "tilec/passes/SkipUnitRescales.h"

#include "EachKernel.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LaneUniformity.h"

namespace tilec::passes {

using namespace ir;

namespace {

/// Factor values one thread tests (each an FSETP, ORed into the vote's predicate).
constexpr int64_t kMaxFactors = 8;
/// Elements each tested factor must cover: fewer and the test costs about what the multiplies do.
constexpr int64_t kMinElementsPerFactor = 4;

bool inRegisters(const BufferNode &b) { return b.scope == Scope::Local || b.scope == Scope::Var; }

/// Whether an expression reads registers, and only registers (and calls nothing): a value the program computed
/// (what the vote may evaluate again; a factor of constants and indices alone is not data that can turn 1).
struct ReadsRegistersOnly : IRVisitor {
    using IRVisitor::visit;
    bool ok = true, loads = false;
    void visit(const Load &op) override {
        ok = ok && inRegisters(*op.buffer);
        loads = true;
        IRVisitor::visit(op);
    }
    void visit(const Call &) override { ok = false; }
};

/// `nest` as a rescale the vote can skip: its loops (outermost first), its store and the factor.
struct Rescale {
    std::vector<const For *> loops;
    const Store *store = nullptr;
    Expr factor;
};

std::optional<Rescale> matchRescale(const For &outer) {
    Rescale r;
    const Stmt *s = nullptr;
    for (const For *f = &outer; f; f = as<For>(*s)) {
        if ((f->forKind != ForKind::Unrolled && f->forKind != ForKind::Vectorized) || !constInt(f->min) ||
            !constInt(f->extent))
            return std::nullopt;
        r.loops.push_back(f);
        s = &f->body;
        if ((*s)->kind != NodeKind::For) break;
    }
    auto st = as<Store>(*s);
    const DType t = st ? st->buffer->dtype : DType();
    if (!st || !inRegisters(*st->buffer) || (t.kind != DType::Float32 && t.kind != DType::Float64)) return std::nullopt;
    auto mul = as<Binary>(st->value);
    if (!mul || mul->op != BinaryOp::Mul) return std::nullopt;
    auto self = [&](const Expr &e) {
        auto l = as<Load>(e);
        if (!l || l->buffer != st->buffer || l->indices.size() != st->indices.size()) return false;
        for (size_t i = 0; i < l->indices.size(); ++i)
            if (!structurallyEqual(l->indices[i], st->indices[i])) return false;
        return true;
    };
    r.factor = self(mul->a) ? mul->b : self(mul->b) ? mul->a : nullptr;
    if (!r.factor || r.factor->dtype != st->buffer->dtype || uses(r.factor, st->buffer.get())) return std::nullopt;
    ReadsRegistersOnly regs;
    regs.visit(r.factor);
    if (!regs.ok || !regs.loads) return std::nullopt;
    r.store = st;
    return r;
}

/// `f_1 != 1 || ... || f_n != 1` over the values of the factor's loop variables; null where there are too many
/// or too few elements share each.
Expr anyFactorNotOne(const Rescale &r) {
    std::vector<const For *> factorLoops;
    int64_t factors = 1, elements = 1;
    for (const For *f : r.loops) {
        elements *= *constInt(f->extent);
        if (uses(r.factor, f->var.get())) factorLoops.push_back(f), factors *= *constInt(f->extent);
    }
    if (factors > kMaxFactors || elements < kMinElementsPerFactor * factors) return nullptr;
    Expr any;
    for (int64_t n = 0; n < factors; ++n) {
        VarMap at;
        int64_t rest = n;
        for (auto it = factorLoops.rbegin(); it != factorLoops.rend(); ++it) {
            const int64_t extent = *constInt((*it)->extent);
            at[(*it)->var.get()] = intImm(*constInt((*it)->min) + rest % extent, (*it)->var->dtype);
            rest /= extent;
        }
        Expr f = as<Evaluate>(simplifyIndices(Evaluate::make(substitute(r.factor, at))))->value;
        Expr ne = Binary::make(BinaryOp::NE, f, floatImm(1.0, f->dtype));
        any = any ? Binary::make(BinaryOp::Or, any, ne) : ne;
    }
    return any;
}

class Skip : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Skip(const LaneUniformity &lanes) : lanes_(lanes) {}
    int skipped = 0;
    SourceRange first;

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (divergent_ == 0)
            if (auto r = matchRescale(*op))
                if (Expr any = anyFactorNotOne(*r)) {
                    if (!skipped++) first = op->loc;
                    Expr vote = lib::call(lib::Fn::WarpAny, {any}, op->loc, DType::Bool);
                    return IfThenElse::make(vote, op, nullptr, op->loc);
                }
        return under(*op, [&] { return IRMutator::visit(op); });
    }
    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        return under(*op, [&] { return IRMutator::visit(op); });
    }
    Stmt visit(const std::shared_ptr<const While> &op) override {
        return under(*op, [&] { return IRMutator::visit(op); });
    }

  private:
    /// Walks `around`'s body, counting it divergent where its control differs between the lanes of a warp.
    template <class F> Stmt under(const StmtNode &around, F f) {
        const bool d = lanes_.around(around) == Spread::Lane;
        divergent_ += d;
        Stmt s = f();
        divergent_ -= d;
        return s;
    }
    const LaneUniformity &lanes_;
    int divergent_ = 0;
};

} // namespace

Program skipUnitRescales(const Program &p, const SourceManager *sources) {
    return eachKernel(p, [&](const KernelP &k) -> KernelP {
        if (k->threads % 32 || k->producerThreads % 32) return k; // a partial warp: the vote needs 32 lanes
        const LaneUniformity lanes = laneUniformity(*k);
        Skip s(lanes);
        Stmt body = s.mutate(k->body);
        if (body == k->body) return k;
        remark(sources, s.first,
               "kernel '" + k->name + "': " + std::to_string(s.skipped) +
                   " in-place rescale(s) of registers skipped where the warp's factors are all exactly 1 (one "
                   "__any_sync vote each)");
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        return nk;
    });
}

} // namespace tilec::passes
