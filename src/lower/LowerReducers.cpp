/// \file
/// Reducers as reductions (include/tilec/passes/LowerReducers.h).
#include "tilec/passes/LowerReducers.h"

#include "ReducerNests.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace tilec::passes {

using namespace ir;

namespace {

using namespace reducers;

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

/// The updates of a nest whose body updates reducers among other statements (`out[j] = x[j] * s; r[0] += x[j] *
/// y[j]`, possibly under an `if`): each reducer updated once, outside any loop of the body, read only by its own
/// update, in a form missingVariable knows (Nest::cond stays null; `conditional` says whether one is under an `if`).
/// Nullopt when the body is not that.
std::optional<std::vector<Nest>> updatesAmongOthers(const For &top, const std::map<const BufferNode *, ReduceKind> &reducers,
                                                    bool &conditional) {
    Nest base;
    Stmt body;
    if (!nestLoops(top, base.loops, body) || as<Store>(underIf(body).first)) return std::nullopt;
    ReducerUpdates f(reducers);
    f.visit(body);
    // Each element updated once: a reducer's stores at indices that differ (scatteredUpdates' one per element).
    bool twice = false;
    for (size_t a = 0; a < f.stores.size(); ++a)
        for (size_t b = 0; b < a; ++b)
            if (f.stores[a]->buffer == f.stores[b]->buffer)
                twice |= missingVariable(base.loops, *f.stores[a]) != kUniform ||
                         std::equal(f.stores[a]->indices.begin(), f.stores[a]->indices.end(), f.stores[b]->indices.begin(),
                                    [](const Expr &x, const Expr &y) { return structurallyEqual(x, y); });
    if (f.stores.empty() || twice || f.loads != (int)f.stores.size() || f.inLoop)
        return std::nullopt;
    std::vector<Nest> out;
    for (auto *st : f.stores) {
        Nest n = base;
        n.st = st;
        auto old = Load::make(st->buffer, st->indices);
        n.e = contribution(st->value, *as<Load>(old), reducers.at(st->buffer.get()));
        n.missing = missingVariable(n.loops, *st);
        if (!n.e || n.missing == kNone) return std::nullopt;
        out.push_back(n);
    }
    conditional = f.conditional;
    return out;
}

/// The reducer a marker statement (T.alloc_reducer's or T.finalize_reducer's) names, or null.
Buffer markerOf(const Stmt &s, lib::Fn f) {
    auto ev = as<Evaluate>(s);
    auto c = ev ? as<Call>(ev->value) : nullptr;
    if (!c || !lib::is(*c, f)) return nullptr;
    auto l = addressedLoad(lib::arg(*c, f, "buffer"));
    return l ? l->buffer : nullptr;
}

/// Which reducers can accumulate in each thread's own registers across their nests and combine the threads
/// once, at T.finalize_reducer: walking the kernel in program order (loop bodies twice, for the way back,
/// branches from one state), every nest of one reducer has the same extents and missing variable, its marker
/// comes first, a T.finalize_reducer follows the last nest, nothing else touches it between a nest and the
/// next T.finalize_reducer, and the accumulator (the nest's shape; for kUniform the reducer's shape, then the
/// nest's) fits in `maxSlots` registers per thread. A kUniform update may stand among other statements of its nest
/// (updatesAmongOthers), under an `if` there too: each iteration updates its own element of the accumulator.
class Deferral {
  public:
    Deferral(const std::map<const BufferNode *, ReduceKind> &reducers, int threads) : reducers_(reducers), threads_(threads) {}

    std::map<const BufferNode *, Nest> decide(const Stmt &body) {
        walk(body);
        std::map<const BufferNode *, Nest> out;
        for (auto &[b, s] : state_) {
            if (s.bad || s.pending || !s.finalized || !s.shape) continue;
            int64_t n = 1;
            for (auto e : s.shape->extents()) n *= e;
            if (s.shape->missing == kUniform)
                for (auto &e : b->shape) n *= *constInt(e);
            if ((n + threads_ - 1) / threads_ <= kMaxSlots) out.emplace(b, *s.shape);
        }
        return out;
    }

  private:
    static constexpr int64_t kMaxSlots = 128;
    struct State {
        bool declared = false, pending = false, finalized = false, bad = false;
        std::optional<Nest> shape;
    };
    const std::map<const BufferNode *, ReduceKind> &reducers_;
    int threads_;
    std::map<const BufferNode *, State> state_;

    void update(const Nest &n, bool amongOthers = false) {
        State &s = state_[n.st->buffer.get()];
        if (!s.declared || !n.plain() || (amongOthers && n.missing != kUniform)) s.bad = true; // the other forms keep their reduction per nest
        if (s.shape && (s.shape->extents() != n.extents() || s.shape->missing != n.missing)) s.bad = true;
        if (!s.shape) s.shape = n;
        s.pending = true;
    }
    void walk(const Stmt &s) {
        if (auto q = as<Seq>(s)) {
            for (auto &x : q->stmts) walk(x);
        } else if (auto f = as<For>(s); f && f->forKind != ForKind::Parallel) {
            walk(f->body), walk(f->body);
        } else if (auto w = as<While>(s)) {
            walk(w->body), walk(w->body);
        } else if (auto i = as<IfThenElse>(s)) {
            auto before = state_;
            walk(i->then);
            auto after = std::exchange(state_, before);
            if (i->otherwise) walk(i->otherwise);
            for (auto &[b, st] : after) {
                State &m = state_[b];
                m.pending |= st.pending, m.bad |= st.bad, m.finalized |= st.finalized, m.declared &= st.declared;
                if (!m.shape) m.shape = st.shape;
            }
        } else if (auto b = markerOf(s, lib::Fn::Reducer)) {
            state_[b.get()].declared = true;
        } else if (auto b = markerOf(s, lib::Fn::FinalizeReducer)) {
            state_[b.get()].pending = false, state_[b.get()].finalized = true;
        } else {
            leaf(s);
        }
    }
    void leaf(const Stmt &s) {
        auto f = as<For>(s);
        std::optional<Nest> n = f ? matchNest(*f, reducers_) : std::nullopt;
        if (n) return update(*n);
        bool conditional = false;
        if (auto us = f && f->forKind == ForKind::Parallel ? updatesAmongOthers(*f, reducers_, conditional) : std::nullopt) {
            for (auto &u : *us) update(u, true);
            return;
        }
        for (auto &[b, kind] : reducers_)
            if (uses(s, b) && (f || state_[b].pending)) state_[b].bad = true; // another nest, or between
    }
};

class Rewriter : public IRMutator {
  public:
    using IRMutator::visit;
    Rewriter(std::map<const BufferNode *, ReduceKind> reducers, Kernel &k) : reducers_(std::move(reducers)), k_(k) {
        auto deferred = Deferral(reducers_, k.threads).decide(k.body);
        const std::vector<Buffer> allocs = k.allocs; // their order, not the pointers', names the accumulators
        for (auto &b : allocs) {
            if (!deferred.count(b.get())) continue;
            const Nest &n = deferred.at(b.get());
            std::vector<Expr> shape;
            if (n.missing == kUniform) shape = b->shape;
            for (auto *l : n.loops) shape.push_back(l->extent);
            Buffer acc = makeBuffer(b->name + "_acc", Scope::Fragment, b->dtype, shape, n.st->loc);
            k_.allocs.push_back(acc);
            deferred_.emplace(b.get(), Deferred{acc, n.missing});
        }
    }

    Stmt visit(const std::shared_ptr<const Evaluate> &op) override {
        if (auto b = markerOf(op, lib::Fn::Reducer))
            return deferred_.count(b.get()) ? reset(b.get(), op->loc) : Seq::make({}, op->loc);
        if (auto b = markerOf(op, lib::Fn::FinalizeReducer)) {
            if (!deferred_.count(b.get())) return Seq::make({}, op->loc);
            const Deferred &d = deferred_.at(b.get());
            Stmt combine = d.missing == kUniform ? reduceTrailing(reducers_.at(b.get()), d.acc, b, op->loc)
                                                 : Reduce::make(reducers_.at(b.get()), d.acc, b, d.missing, false, op->loc);
            return Seq::make({combine, reset(b.get(), op->loc)}, op->loc);
        }
        return op;
    }

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (op->forKind != ForKind::Parallel) return IRMutator::visit(op);
        if (auto n = matchNest(*op, reducers_))
            return deferred_.count(n->st->buffer.get()) && n->plain() ? accumulate(*n) : reduceEach(*n, op->loc);
        if (Stmt s = amongOthers(op)) return s;
        return op; // its inner loops are the nest's own: never a nest of their own (r[i] in a nest over i, j, k)
    }

  private:
    struct Deferred {
        Buffer acc;
        int missing;
    };
    std::map<const BufferNode *, ReduceKind> reducers_;
    std::map<const BufferNode *, Deferred> deferred_;
    Kernel &k_;

    static Stmt nestOf(const std::vector<Expr> &shape, const std::function<Stmt(const std::vector<Expr> &)> &body,
                       const SourceRange &loc) {
        std::vector<Expr> idx;
        for (size_t d = 0; d < shape.size(); ++d) idx.push_back(makeVar("ra" + std::to_string(d), DType::Int32, loc));
        Stmt s = body(idx);
        for (size_t d = shape.size(); d-- > 0;)
            s = For::make(std::static_pointer_cast<const VarNode>(idx[d]), intImm(0), shape[d], ForKind::Parallel, 0, s, loc);
        return s;
    }
    /// The accumulator set to the reduction's identity (where T.alloc_reducer is, and after each combine).
    Stmt reset(const BufferNode *b, const SourceRange &loc) const {
        const Buffer &acc = deferred_.at(b).acc;
        Expr id = reduceIdentity(reducers_.at(b), acc->dtype);
        return nestOf(acc->shape, [&](const std::vector<Expr> &i) { return Store::make(acc, i, id, loc); }, loc);
    }
    static BinaryOp opOf(ReduceKind k) {
        return k == ReduceKind::Sum ? BinaryOp::Add : k == ReduceKind::Max ? BinaryOp::Max : BinaryOp::Min;
    }
    /// Each iteration adds its contribution to its own element of the accumulator (no thread meets another's):
    /// the element of the nest's variables (after the reducer's own indices for kUniform).
    Stmt accStore(const Nest &n) const {
        const Deferred &d = deferred_.at(n.st->buffer.get());
        std::vector<Expr> idx;
        if (n.missing == kUniform) idx = n.st->indices;
        for (auto *l : n.loops) idx.push_back(l->var);
        BinaryOp op = opOf(reducers_.at(n.st->buffer.get()));
        return Store::make(d.acc, idx, binary(op, Load::make(d.acc, idx), cast(d.acc->dtype, n.e), n.st->loc), n.st->loc);
    }
    Stmt accumulate(const Nest &n) const { return wrap(n, accStore(n)); }
    /// A kUniform accumulator (r's shape, then the nest's) reduced along its trailing dimensions into r, the last first.
    Stmt reduceTrailing(ReduceKind kind, const Buffer &acc, const Buffer &r, const SourceRange &loc) {
        std::vector<Stmt> steps;
        Buffer cur = acc;
        const size_t keep = r->shape.size();
        for (size_t d = acc->shape.size(); d-- > keep + 1;) {
            std::vector<Expr> shape(acc->shape.begin(), acc->shape.begin() + (long)d);
            Buffer next = makeBuffer(acc->name + std::to_string(d), Scope::Fragment, acc->dtype, shape, loc);
            k_.allocs.push_back(next);
            steps.push_back(Reduce::make(kind, cur, next, (int)d, true, loc));
            cur = next;
        }
        steps.push_back(Reduce::make(kind, cur, r, (int)keep, false, loc));
        return Seq::make(std::move(steps), loc);
    }
    /// The nest's contributions in `part` combined into the update's reducer: reduced along `missing` (reduceInto),
    /// or for kUniform reduced whole into one element that the element r[...] of the update then takes in.
    Stmt combine(ReduceKind kind, const Buffer &part, const Store &st, int missing) {
        if (missing != kUniform) return reduceInto(kind, part, st.buffer, missing, st.loc);
        Buffer one = makeBuffer(st.buffer->name + "_all", Scope::Fragment, st.buffer->dtype, {intImm(1)}, st.loc);
        k_.allocs.push_back(one);
        Stmt all = reduceInto(kind, part, one, kAll, st.loc, true);
        Expr v = binary(opOf(kind), Load::make(st.buffer, st.indices), Load::make(one, {intImm(0)}), st.loc);
        return Seq::make({all, Store::make(st.buffer, st.indices, v, st.loc)}, st.loc);
    }
    /// The nest storing its contributions into a fragment of its shape, reduced into r at once. Under an `if`, a
    /// failing iteration contributes 0 for a sum; for max and min the reducer's own value (combining it again
    /// changes nothing).
    Stmt reduceEach(const Nest &n, const SourceRange &loc) {
        const Store &st = *n.st;
        const ReduceKind kind = reducers_.at(st.buffer.get());
        Expr e = n.e;
        if (n.cond)
            e = select(n.cond, e, kind == ReduceKind::Sum ? cast(st.buffer->dtype, intImm(0), st.loc) : Load::make(st.buffer, st.indices),
                       st.loc);
        std::vector<Expr> shape, idx;
        for (auto *l : n.loops) shape.push_back(l->extent), idx.push_back(l->var);
        Buffer part = makeBuffer(st.buffer->name + "_part", Scope::Fragment, st.buffer->dtype, shape, st.loc);
        k_.allocs.push_back(part);
        Stmt body = wrap(n, Store::make(part, idx, e, st.loc));
        return Seq::make({body, combine(kind, part, st, n.missing)}, loc);
    }

    /// A nest whose body updates reducers among other statements, each once (`out[j] = x[j] * s; r[0] += x[j] *
    /// y[j]`, possibly under an `if`): the nest stores each update's contribution into a fragment of its shape
    /// instead, which a nest before it fills with what leaves the reducer unchanged where an update is under an `if`,
    /// and reductions into the reducers follow. Null when the body is not that (a reducer read elsewhere, updated
    /// twice or inside a loop of the body). A deferred (kUniform) reducer's update adds to its accumulator in place.
    Stmt amongOthers(const std::shared_ptr<const For> &top) {
        bool conditional = false;
        auto updates = updatesAmongOthers(*top, reducers_, conditional);
        if (!updates) return nullptr;
        std::vector<const For *> loops;
        Stmt body;
        nestLoops(*top, loops, body);
        std::vector<Expr> shape, idx, freshIdx;
        VarMap rename; // the filling nest's own variables
        for (auto *l : loops) {
            shape.push_back(l->extent), idx.push_back(l->var);
            freshIdx.push_back(makeVar(l->var->name, l->var->dtype, l->loc));
            rename[l->var.get()] = freshIdx.back();
        }
        std::vector<Stmt> fills, reduces;
        std::map<const Store *, Stmt> with;
        for (auto &n : *updates) {
            const Store *st = n.st;
            if (deferred_.count(st->buffer.get())) {
                with[st] = accStore(n);
                continue;
            }
            const ReduceKind kind = reducers_[st->buffer.get()];
            auto old = Load::make(st->buffer, st->indices);
            Buffer part = makeBuffer(st->buffer->name + "_part", Scope::Fragment, st->buffer->dtype, shape, st->loc);
            k_.allocs.push_back(part);
            Expr none = kind == ReduceKind::Sum ? cast(st->buffer->dtype, intImm(0), st->loc) : substitute(old, rename);
            fills.push_back(Store::make(part, freshIdx, none, st->loc));
            with[st] = Store::make(part, idx, n.e, st->loc);
            reduces.push_back(combine(kind, part, *st, n.missing));
        }
        return withParts(top, loops, freshIdx, body, with, fills, reduces, conditional && !fills.empty());
    }

    /// amongOthers' result: the fill (only when an update is under an `if`), the nest with its updates replaced,
    /// the reductions.
    static Stmt withParts(const std::shared_ptr<const For> &top, const std::vector<const For *> &loops,
                          const std::vector<Expr> &fresh, const Stmt &body, const std::map<const Store *, Stmt> &with,
                          const std::vector<Stmt> &fills, const std::vector<Stmt> &reduces, bool conditional) {
        struct Replace : IRMutator {
            using IRMutator::visit;
            const std::map<const Store *, Stmt> *with = nullptr;
            Stmt visit(const std::shared_ptr<const Store> &op) override {
                auto it = with->find(op.get());
                return it != with->end() ? it->second : Stmt(op);
            }
        } r;
        r.with = &with;
        Stmt inner = r.mutate(body), fill = Seq::make(fills, top->loc);
        for (size_t l = loops.size(); l-- > 0;) {
            auto v = std::static_pointer_cast<const VarNode>(fresh[l]);
            fill = For::make(v, loops[l]->min, loops[l]->extent, ForKind::Parallel, 0, fill, loops[l]->loc);
            inner = For::make(loops[l]->var, loops[l]->min, loops[l]->extent, ForKind::Parallel, 0, inner, loops[l]->loc);
        }
        std::vector<Stmt> out;
        if (conditional) out.push_back(fill);
        out.push_back(inner);
        out.insert(out.end(), reduces.begin(), reduces.end());
        return Seq::make(std::move(out), top->loc);
    }

    /// The reduction of `part` (the nest's shape) into reducer r along nest variable `missing`, combined with r's
    /// value (or not: `clear`); for kAll (a one-element r), along every variable, the last first.
    Stmt reduceInto(ReduceKind kind, const Buffer &part, const Buffer &r, int missing, const SourceRange &loc,
                    bool clear = false) {
        if (missing != kAll) return Reduce::make(kind, part, r, missing, clear, loc);
        std::vector<Stmt> steps;
        Buffer cur = part;
        for (size_t d = part->shape.size(); d-- > 1;) {
            std::vector<Expr> shape(part->shape.begin(), part->shape.begin() + (long)d);
            Buffer next = makeBuffer(part->name + std::to_string(d), Scope::Fragment, part->dtype, shape, loc);
            k_.allocs.push_back(next);
            steps.push_back(Reduce::make(kind, cur, next, (int)d, true, loc));
            cur = next;
        }
        steps.push_back(Reduce::make(kind, cur, r, 0, clear, loc));
        return Seq::make(std::move(steps), loc);
    }

    static Stmt wrap(const Nest &n, Stmt body) {
        for (size_t l = n.loops.size(); l-- > 0;)
            body = For::make(n.loops[l]->var, n.loops[l]->min, n.loops[l]->extent, ForKind::Parallel, 0, body, n.loops[l]->loc);
        return body;
    }
};

} // namespace

Program lowerReducers(const Program &p, DiagnosticEngine &) {
    Program out;
    for (auto &k : p.kernels) {
        if (!k->body) {
            out.kernels.push_back(k);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        const auto reducers = reducersOf(k->body);
        nk->body = withScatteredUpdates(k->body, reducers);
        Rewriter r(reducers, *nk);
        nk->body = r.mutate(nk->body);
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
