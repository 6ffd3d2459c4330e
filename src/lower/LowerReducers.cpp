/// \file
/// Reducers as reductions (include/tilec/passes/LowerReducers.h).
#include "tilec/passes/LowerReducers.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IRVisitor.h"
#include "tilec/IROperator.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LibraryCalls.h"

#include <algorithm>
#include <map>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// The reducers a kernel declares (their markers), by buffer.
std::map<const BufferNode *, ReduceKind> reducersOf(const Stmt &body) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        std::map<const BufferNode *, ReduceKind> found;
        void visit(const Call &c) override {
            if (lib::is(c, lib::Fn::Reducer))
                if (auto l = addressedLoad(lib::arg(c, lib::Fn::Reducer, "buffer")))
                    found[l->buffer.get()] = (ReduceKind)*constInt(lib::arg(c, lib::Fn::Reducer, "op"));
            IRVisitor::visit(c);
        }
    } v;
    v.visit(body);
    return v.found;
}

/// `e` with the reducer's old value `old` taken out: e for `old + e` / `e + old` (sum), `max(old, e)` (max),
/// `min(old, e)` (min); null when the value is not that.
Expr contribution(const Expr &value, const Load &old, ReduceKind k) {
    auto b = as<Binary>(value);
    BinaryOp want = k == ReduceKind::Sum ? BinaryOp::Add : k == ReduceKind::Max ? BinaryOp::Max : BinaryOp::Min;
    if (!b || b->op != want) return nullptr;
    auto same = [&](const Expr &e) {
        auto l = as<Load>(e);
        return l && l->buffer == old.buffer && l->indices.size() == old.indices.size() &&
               std::equal(l->indices.begin(), l->indices.end(), old.indices.begin(),
                          [](const Expr &x, const Expr &y) { return structurallyEqual(x, y); });
    };
    if (same(b->a)) return b->b;
    if (same(b->b)) return b->a;
    return nullptr;
}

/// The stores to reducers in a nest's body, the loads of reducers there, and whether a store is inside a loop of
/// the body or under an `if`.
struct ReducerUpdates : IRVisitor {
    using IRVisitor::visit;
    explicit ReducerUpdates(const std::map<const BufferNode *, ReduceKind> &r) : reducers(r) {}
    const std::map<const BufferNode *, ReduceKind> &reducers;
    std::vector<const Store *> stores;
    int loads = 0, depth = 0, conds = 0;
    bool inLoop = false, conditional = false;
    void visit(const Store &op) override {
        if (reducers.count(op.buffer.get())) stores.push_back(&op), inLoop |= depth > 0, conditional |= conds > 0;
        IRVisitor::visit(op);
    }
    void visit(const IfThenElse &op) override {
        ++conds;
        IRVisitor::visit(op);
        --conds;
    }
    void visit(const Load &op) override {
        loads += reducers.count(op.buffer.get()) ? 1 : 0;
        IRVisitor::visit(op);
    }
    void visit(const For &op) override {
        ++depth;
        IRVisitor::visit(op);
        --depth;
    }
};

class Rewriter : public IRMutator {
  public:
    using IRMutator::visit;
    Rewriter(std::map<const BufferNode *, ReduceKind> reducers, Kernel &k) : reducers_(std::move(reducers)), k_(k) {}

    Stmt visit(const std::shared_ptr<const Evaluate> &op) override {
        auto c = as<Call>(op->value);
        return c && lib::is(*c, lib::Fn::Reducer) ? Seq::make({}, op->loc) : Stmt(op);
    }

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (op->forKind != ForKind::Parallel) return IRMutator::visit(op);
        if (Stmt s = nest(op)) return s;
        return IRMutator::visit(op);
    }

  private:
    std::map<const BufferNode *, ReduceKind> reducers_;
    Kernel &k_;

    /// The rewritten nest, or null when `top` is not a reducer's nest.
    Stmt nest(const std::shared_ptr<const For> &top) {
        std::vector<const For *> loops;
        Stmt at = top;
        while (auto f = as<For>(at)) {
            if (f->forKind != ForKind::Parallel || constInt(f->min) != std::optional<int64_t>(0) || !constInt(f->extent))
                return nullptr;
            loops.push_back(f);
            at = f->body;
            while (auto q = as<Seq>(at)) {
                if (q->stmts.size() != 1) break; // several statements: amongOthers below
                at = q->stmts[0];
            }
        }
        // `if cond: r[...] = op(r[...], e)`: an iteration whose condition fails contributes nothing.
        const Stmt whole = at;
        Expr cond;
        if (auto i = as<IfThenElse>(at); i && !i->otherwise) {
            cond = i->cond;
            at = i->then;
            while (auto q = as<Seq>(at)) {
                if (q->stmts.size() != 1) break;
                at = q->stmts[0];
            }
        }
        auto st = as<Store>(at);
        if (!st) return amongOthers(top, loops, whole);
        if (!st || !reducers_.count(st->buffer.get())) return nullptr;
        const ReduceKind kind = reducers_[st->buffer.get()];
        auto old = Load::make(st->buffer, st->indices);
        Expr e = contribution(st->value, *as<Load>(old), kind);
        if (!e || mentionedBuffersIn(e, st->buffer.get()) || (cond && mentionedBuffersIn(cond, st->buffer.get())))
            return nullptr;
        int missing = missingVariable(loops, *st);
        if (missing == kNone) return nullptr;
        // Nothing: 0 for a sum; for max and min the reducer's own value (combining it again changes nothing).
        if (cond) e = select(cond, e, kind == ReduceKind::Sum ? cast(st->buffer->dtype, intImm(0), st->loc) : old, st->loc);
        std::vector<Expr> shape, idx;
        for (auto *l : loops) shape.push_back(l->extent), idx.push_back(l->var);
        Buffer part = makeBuffer(st->buffer->name + "_part", Scope::Fragment, st->buffer->dtype, shape, st->loc);
        k_.allocs.push_back(part);
        Stmt body = Store::make(part, idx, e, st->loc);
        for (size_t l = loops.size(); l-- > 0;)
            body = For::make(loops[l]->var, loops[l]->min, loops[l]->extent, ForKind::Parallel, 0, body, loops[l]->loc);
        return Seq::make({body, reduceInto(kind, part, st->buffer, missing, st->loc)}, top->loc);
    }

    /// A nest whose body updates reducers among other statements, each once (`out[j] = x[j] * s; r[0] += x[j] *
    /// y[j]`, possibly under an `if`): the nest stores each update's contribution into a fragment of its shape
    /// instead, which a nest before it fills with what leaves the reducer unchanged where an update is under an `if`,
    /// and reductions into the reducers follow. Null when the body is not that (a reducer read elsewhere, updated
    /// twice or inside a loop of the body).
    Stmt amongOthers(const std::shared_ptr<const For> &top, const std::vector<const For *> &loops, const Stmt &body) {
        ReducerUpdates f(reducers_);
        f.visit(body);
        std::set<const BufferNode *> updated;
        for (auto *st : f.stores) updated.insert(st->buffer.get());
        if (f.stores.empty() || updated.size() != f.stores.size() || f.loads != (int)f.stores.size() || f.inLoop) return nullptr;
        std::vector<Expr> shape, idx, freshIdx;
        std::vector<Var> fresh; // the filling nest's own variables
        VarMap rename;
        for (auto *l : loops) {
            shape.push_back(l->extent), idx.push_back(l->var);
            fresh.push_back(makeVar(l->var->name, l->var->dtype, l->loc));
            freshIdx.push_back(fresh.back());
            rename[l->var.get()] = fresh.back();
        }
        std::vector<Stmt> fills, reduces;
        std::map<const Store *, Stmt> with;
        for (auto *st : f.stores) {
            const ReduceKind kind = reducers_[st->buffer.get()];
            auto old = Load::make(st->buffer, st->indices);
            Expr e = contribution(st->value, *as<Load>(old), kind);
            int missing = missingVariable(loops, *st);
            if (!e || missing == kNone) return nullptr;
            Buffer part = makeBuffer(st->buffer->name + "_part", Scope::Fragment, st->buffer->dtype, shape, st->loc);
            k_.allocs.push_back(part);
            Expr none = kind == ReduceKind::Sum ? cast(st->buffer->dtype, intImm(0), st->loc) : substitute(old, rename);
            fills.push_back(Store::make(part, freshIdx, none, st->loc));
            with[st] = Store::make(part, idx, e, st->loc);
            reduces.push_back(reduceInto(kind, part, st->buffer, missing, st->loc));
        }
        struct Replace : IRMutator {
            using IRMutator::visit;
            std::map<const Store *, Stmt> *with = nullptr;
            Stmt visit(const std::shared_ptr<const Store> &op) override {
                auto it = with->find(op.get());
                return it != with->end() ? it->second : Stmt(op);
            }
        } r;
        r.with = &with;
        Stmt inner = r.mutate(body), fill = Seq::make(fills, top->loc);
        for (size_t l = loops.size(); l-- > 0;) {
            fill = For::make(fresh[l], loops[l]->min, loops[l]->extent, ForKind::Parallel, 0, fill, loops[l]->loc);
            inner = For::make(loops[l]->var, loops[l]->min, loops[l]->extent, ForKind::Parallel, 0, inner, loops[l]->loc);
        }
        // Every iteration stores its contributions unless an update is under an `if`: only then is the fill needed.
        std::vector<Stmt> out;
        if (f.conditional) out.push_back(fill);
        out.push_back(inner);
        out.insert(out.end(), reduces.begin(), reduces.end());
        return Seq::make(std::move(out), top->loc);
    }

    /// The reduction of `part` (the nest's shape) into reducer r along nest variable `missing`, combined with r's
    /// value; for kAll (a one-element r), along every variable, the last first.
    Stmt reduceInto(ReduceKind kind, const Buffer &part, const Buffer &r, int missing, const SourceRange &loc) {
        if (missing != kAll) return Reduce::make(kind, part, r, missing, false, loc);
        std::vector<Stmt> steps;
        Buffer cur = part;
        for (size_t d = part->shape.size(); d-- > 1;) {
            std::vector<Expr> shape(part->shape.begin(), part->shape.begin() + (long)d);
            Buffer next = makeBuffer(part->name + std::to_string(d), Scope::Fragment, part->dtype, shape, loc);
            k_.allocs.push_back(next);
            steps.push_back(Reduce::make(kind, cur, next, (int)d, true, loc));
            cur = next;
        }
        steps.push_back(Reduce::make(kind, cur, r, 0, false, loc));
        return Seq::make(std::move(steps), loc);
    }

    static constexpr int kNone = -1, kAll = -2;
    /// The nest variable the store to reducer r sums over, kNone when r is not indexed by the nest's other
    /// variables in their order; a one-element r (`r[0]`) sums over every variable (kAll; 0 in a one-variable nest).
    static int missingVariable(const std::vector<const For *> &loops, const Store &st) {
        if (st.indices.size() == 1 && constInt(st.indices[0]) == std::optional<int64_t>(0) &&
            constInt(st.buffer->shape[0]) == std::optional<int64_t>(1) && !loops.empty())
            return loops.size() == 1 ? 0 : kAll;
        size_t next = 0;
        int missing = -1;
        for (size_t l = 0; l < loops.size(); ++l) {
            if (next < st.indices.size() && st.indices[next].get() == loops[l]->var.get()) {
                if (constInt(st.buffer->shape[next]) != constInt(loops[l]->extent)) return -1;
                ++next;
            } else if (missing < 0) {
                missing = (int)l;
            } else {
                return -1;
            }
        }
        return next == st.indices.size() ? missing : -1;
    }

    static bool mentionedBuffersIn(const Expr &e, const BufferNode *b) {
        struct V : IRVisitor {
            using IRVisitor::visit;
            const BufferNode *b = nullptr;
            bool any = false;
            void visit(const Load &l) override {
                any |= l.buffer.get() == b;
                IRVisitor::visit(l);
            }
        } v;
        v.b = b;
        v.visit(e);
        return v.any;
    }
};

} // namespace

Program lowerReducers(const Program &p, DiagnosticEngine &) {
    Program out;
    for (auto &k : p.kernels) {
        auto reducers = k->body ? reducersOf(k->body) : std::map<const BufferNode *, ReduceKind>{};
        if (reducers.empty()) {
            out.kernels.push_back(k);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        Rewriter r(std::move(reducers), *nk);
        nk->body = r.mutate(k->body);
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
