/// \file
/// Values a loop nest computes again at every iteration, computed once per value (include/tilec/passes/
/// HoistNestInvariants.h).
#include "tilec/passes/HoistNestInvariants.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LoopInvariants.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// The most values one hoisted expression keeps (registers per thread).
constexpr int64_t kMostSlots = 16;

bool nestLoop(const For &f) {
    return (f.forKind == ForKind::Unrolled || f.forKind == ForKind::Vectorized) && constInt(f.min) == 0 &&
           constInt(f.extent).value_or(0) > 0;
}

/// The loops of the perfect nest `top` heads (outermost first) and its innermost body; no loops where a loop
/// sits below the innermost nest loop.
struct Nest {
    std::vector<const For *> loops;
    Stmt body;
};

Nest nestOf(const For &top) {
    Nest n;
    const For *f = &top;
    while (true) {
        n.loops.push_back(f);
        auto inner = as<For>(f->body);
        if (!inner || !nestLoop(*inner)) break;
        f = inner;
    }
    n.body = n.loops.back()->body;
    struct AnyLoop : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const For &) override { found = true; }
        void visit(const While &) override { found = true; }
    } loops;
    loops.visit(n.body);
    if (loops.found) n.loops.clear();
    return n;
}

/// What an expression reads and uses: the nest's variables, a global tensor in a select's arm (a guarded load:
/// predicateBounds' `select(inside, X[...], 0)`), any call.
struct Uses : IRVisitor {
    using IRVisitor::visit;
    std::set<const VarNode *> vars;
    bool guarded = false, calls = false;
    int arms = 0; ///< select arms being visited
    void visit(const VarNode &v) override { vars.insert(&v); }
    void visit(const Load &op) override {
        guarded |= arms > 0 && op.buffer && op.buffer->scope == Scope::Global;
        IRVisitor::visit(op);
    }
    void visit(const Select &op) override {
        visit(op.cond);
        ++arms;
        visit(op.t);
        visit(op.f);
        --arms;
    }
    void visit(const Call &op) override { calls = true, IRVisitor::visit(op); }
};

/// One hoisted expression: its value, the nest variables it uses (in nest order) and the array holding it.
struct Hoisted {
    Expr value;
    std::vector<const For *> loops;
    Buffer slots;
};

class Hoist : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Hoist(const Kernel &k) : kernel_(k) {
        for (auto &p : k.params) taken_.insert(p.name());
        for (auto &b : k.allocs) taken_.insert(b->name);
    }
    std::vector<Buffer> added;

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (inNest_ || !nestLoop(*op)) return IRMutator::visit(op);
        Nest n = nestOf(*op);
        if (n.loops.empty()) return IRMutator::visit(op);
        invariant_ = loopInvariantBuffers(*op, kernel_.body);
        nest_ = &n;
        found_.clear();
        for (auto &s : Seq::items(n.body))
            if (auto st = as<Store>(s)) {
                for (auto &i : st->indices) find(i);
                find(st->value);
            }
        if (found_.empty()) return op;
        std::vector<Stmt> out;
        for (auto &h : found_) out.push_back(fill(h));
        inNest_ = true;
        out.push_back(IRMutator::visit(op));
        inNest_ = false;
        found_.clear();
        return Seq::make(out, op->loc);
    }

    Expr visit(const std::shared_ptr<const Binary> &op) override { return replaced(op, [&] { return IRMutator::visit(op); }); }
    Expr visit(const std::shared_ptr<const Unary> &op) override { return replaced(op, [&] { return IRMutator::visit(op); }); }
    Expr visit(const std::shared_ptr<const Select> &op) override { return replaced(op, [&] { return IRMutator::visit(op); }); }
    Expr visit(const std::shared_ptr<const Cast> &op) override { return replaced(op, [&] { return IRMutator::visit(op); }); }
    Expr visit(const std::shared_ptr<const Load> &op) override { return replaced(op, [&] { return IRMutator::visit(op); }); }

  private:
    const Kernel &kernel_;
    std::set<std::string> taken_;
    std::set<const BufferNode *> invariant_;
    const Nest *nest_ = nullptr;
    bool inNest_ = false; ///< rewriting a nest's loops (their reads of the hoisted values)
    std::vector<Hoisted> found_;

    /// The outermost subexpressions of `e` worth hoisting, recorded once each (structurally). Only those `e`
    /// evaluates whenever it is evaluated: not inside a select's arms (predicateBounds' guards, T.if_then_else)
    /// nor right of `and` / `or`, which may be safe only where the condition holds.
    void find(const Expr &e) {
        if (!e) return;
        if (worth(e)) return;
        if (auto b = as<Binary>(e)) { // (`and` / `or` evaluate their right operand only as the left one says)
            find(b->a);
            if (b->op != BinaryOp::And && b->op != BinaryOp::Or) find(b->b);
        }
        else if (auto u = as<Unary>(e)) find(u->a);
        else if (auto s = as<Select>(e)) find(s->cond);
        else if (auto c = as<Cast>(e)) find(c->value);
        else if (auto l = as<Load>(e))
            for (auto &i : l->indices) find(i);
    }

    /// Records `e` and says so when it loads a global tensor under a guard (unguarded loads of the same address
    /// nvcc merges itself), reads only what the nest leaves unchanged, calls nothing, is the same in every lane
    /// of a vectorized loop (one evaluation per vector already), and takes few values over the other loops (at
    /// most half their iterations).
    bool worth(const Expr &e) {
        Uses u;
        u.visit(e);
        if (!u.guarded || u.calls || !readsOnly(e, invariant_)) return false;
        Hoisted h{e, {}, nullptr};
        int64_t values = 1, iterations = 1;
        for (const For *f : nest_->loops) {
            const bool used = u.vars.count(f->var.get()) > 0;
            if (f->forKind == ForKind::Vectorized) {
                if (used) return false;
                continue;
            }
            const int64_t n = *constInt(f->extent);
            iterations *= n;
            if (used) h.loops.push_back(f), values *= n;
        }
        if (values > kMostSlots || 2 * values > iterations) return false;
        for (auto &o : found_)
            if (structurallyEqual(o.value, e)) return true;
        std::string name = "hoisted";
        for (int i = 1; taken_.count(name); ++i) name = "hoisted_" + std::to_string(i);
        taken_.insert(name);
        h.slots = makeBuffer(name, Scope::Local, e->dtype, {intImm(values)}, e->loc);
        added.push_back(h.slots);
        found_.push_back(std::move(h));
        return true;
    }

    /// The slot of `h` for the current values of its loops' variables (`vars`: those variables, or fresh
    /// ones standing for them).
    static Expr slot(const Hoisted &h, const std::vector<Var> &vars) {
        Expr at = intImm(0);
        for (size_t i = 0; i < h.loops.size(); ++i)
            at = binary(BinaryOp::Add, binary(BinaryOp::Mul, at, h.loops[i]->extent), vars[i]);
        return simplify(at);
    }

    /// The nest over `h`'s loops (fresh variables, unrolled) storing its value per slot.
    static Stmt fill(const Hoisted &h) {
        std::vector<Var> vars;
        VarMap fresh;
        for (const For *f : h.loops) {
            vars.push_back(makeVar(f->var->name, f->var->dtype, f->loc));
            fresh[f->var.get()] = vars.back();
        }
        Stmt s = Store::make(h.slots, {slot(h, vars)}, substitute(h.value, fresh), h.value->loc);
        for (size_t i = h.loops.size(); i-- > 0;)
            s = For::make(vars[i], intImm(0), h.loops[i]->extent, ForKind::Unrolled, 0, s, h.loops[i]->loc);
        return s;
    }

    template <typename F> Expr replaced(const Expr &e, F fallback) {
        for (auto &h : found_)
            if (structurallyEqual(h.value, e)) {
                std::vector<Var> vars;
                for (const For *f : h.loops) vars.push_back(f->var);
                return Load::make(h.slots, {slot(h, vars)}, e->loc);
            }
        return fallback();
    }
};

} // namespace

Program hoistNestInvariants(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Hoist h(*k);
        KernelP nk = h.mutate(k);
        if (!h.added.empty()) {
            auto copy = std::make_shared<Kernel>(*nk);
            copy->allocs.insert(copy->allocs.end(), h.added.begin(), h.added.end());
            nk = copy;
        }
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
