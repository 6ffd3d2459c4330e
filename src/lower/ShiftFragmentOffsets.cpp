/// \file
/// Fragment reads at a constant offset from a guarded T.Parallel variable, re-indexed
/// (include/tilec/passes/ShiftFragmentOffsets.h).
#include "tilec/passes/ShiftFragmentOffsets.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelNest.h"

#include <optional>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// The fragment index expressions of `s` that use `v`, each with the extent of the fragment dimension it indexes
/// (nullopt when not a constant).
std::vector<std::pair<Expr, std::optional<int64_t>>> fragmentIndicesOf(const Stmt &s, const VarNode *v) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        const VarNode *v;
        std::vector<std::pair<Expr, std::optional<int64_t>>> out;
        void add(const Buffer &b, const std::vector<Expr> &indices) {
            if (!b || b->scope != Scope::Fragment) return;
            for (size_t d = 0; d < indices.size(); ++d)
                if (uses(indices[d], v))
                    out.push_back({indices[d], d < b->shape.size() ? constInt(b->shape[d]) : std::nullopt});
        }
        void visit(const Load &op) override { add(op.buffer, op.indices), IRVisitor::visit(op); }
        void visit(const Store &op) override { add(op.buffer, op.indices), IRVisitor::visit(op); }
    } f;
    f.v = v;
    f.visit(s);
    return f.out;
}

/// c when `e` is `v + c` (c a constant, 0 for `v` itself); nullopt for any other use of v.
std::optional<int64_t> offsetOf(const Expr &e, const VarNode *v) {
    auto l = linearIn(e, v);
    if (!l || l->second != 1) return std::nullopt;
    if (!l->first) return 0;
    return constInt(simplify(l->first));
}

/// The conjuncts of `e` (`a and b and c`).
void conjuncts(const Expr &e, std::vector<Expr> &out) {
    if (auto b = as<Binary>(e); b && b->op == BinaryOp::And) return conjuncts(b->a, out), conjuncts(b->b, out);
    out.push_back(e);
}

/// The least n for which a conjunct of `cond` is `v < n` (or `v <= n - 1`, `n > v`); nullopt when none is.
std::optional<int64_t> upperBoundOf(const Expr &cond, const VarNode *v) {
    std::vector<Expr> cs;
    conjuncts(cond, cs);
    std::optional<int64_t> best;
    for (auto &c : cs) {
        auto b = as<Binary>(c);
        if (!b) continue;
        std::optional<int64_t> n;
        auto isV = [&](const Expr &x) { return x.get() == v; };
        auto plusOne = [](std::optional<int64_t> x) { return x ? std::optional<int64_t>(*x + 1) : std::nullopt; };
        if (b->op == BinaryOp::LT && isV(b->a)) n = constInt(b->b);
        else if (b->op == BinaryOp::LE && isV(b->a)) n = plusOne(constInt(b->b));
        else if (b->op == BinaryOp::GT && isV(b->b)) n = constInt(b->a);
        else if (b->op == BinaryOp::GE && isV(b->b)) n = plusOne(constInt(b->a));
        if (n && (!best || *n < *best)) best = n;
    }
    return best;
}

class Shifter : public IRMutator {
  public:
    using IRMutator::visit;

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (op->forKind != ForKind::Parallel) return IRMutator::visit(op);
        const std::vector<const For *> loops = parallelNest(*op);
        Stmt body = loops.back()->body;
        std::vector<Var> vars;
        for (auto *f : loops) vars.push_back(f->var);
        for (size_t k = 0; k < loops.size(); ++k) {
            auto shifted = shift(body, *loops[k]);
            if (!shifted) continue;
            body = shifted->second;
            vars[k] = shifted->first;
        }
        if (body == loops.back()->body) return op;
        for (size_t d = loops.size(); d-- > 0;) {
            const For &f = *loops[d];
            body = For::make(vars[d], f.min, f.extent, ForKind::Parallel, f.numStages, body, f.loc);
        }
        return body;
    }

  private:
    /// The body over a new variable u = v + c replacing loop f's v, when the class of the header applies.
    static std::optional<std::pair<Var, Stmt>> shift(const Stmt &body, const For &f) {
        auto e = constInt(f.extent), m = constInt(f.min);
        auto test = as<IfThenElse>(body);
        if (!e || !m || *m != 0 || !test || test->otherwise) return std::nullopt;
        const VarNode *v = f.var.get();
        std::set<int64_t> offsets;
        for (auto &[idx, extent] : fragmentIndicesOf(body, v)) {
            auto c = offsetOf(idx, v);
            if (!c || extent != e) return std::nullopt;
            offsets.insert(*c);
        }
        if (offsets.size() != 1 || *offsets.begin() <= 0) return std::nullopt;
        const int64_t c = *offsets.begin();
        auto n = upperBoundOf(test->cond, v);
        if (!n || *n + c > *e) return std::nullopt;
        Var u = makeVar(f.var->name, f.var->dtype, f.var->loc);
        VarMap to{{v, binary(BinaryOp::Sub, u, intImm(c, f.var->dtype), f.loc)}};
        Expr cond = binary(BinaryOp::And, binary(BinaryOp::GE, u, intImm(c, f.var->dtype), test->loc),
                           simplify(substitute(test->cond, to)), test->loc);
        Stmt then = simplifyIndices(substitute(test->then, to));
        return std::pair{u, IfThenElse::make(cond, then, nullptr, test->loc)};
    }
};

} // namespace

Program shiftFragmentOffsets(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Shifter s;
        out.kernels.push_back(s.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
