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
#include <functional>
#include <map>
#include <optional>
#include <utility>

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

/// A nest of T.Parallel loops whose one statement accumulates into a reducer: `r[...] = r[...] (op) e` with r
/// indexed by the nest's variables in order, all but one (`missing`), over their whole extents.
struct Nest {
    std::vector<const For *> loops;
    const Store *st = nullptr;
    Expr e;          ///< the contribution
    int missing = -1; ///< the loop whose variable does not index r
    std::vector<int64_t> extents() const {
        std::vector<int64_t> x;
        for (auto *l : loops) x.push_back(*constInt(l->extent));
        return x;
    }
};

/// Finds any read or write of one buffer (elements, regions, reductions).
struct Touch : IRVisitor {
    using IRVisitor::visit;
    explicit Touch(const BufferNode *b) : b(b) {}
    const BufferNode *b;
    bool any = false;
    void visit(const Load &l) override {
        any |= l.buffer.get() == b;
        IRVisitor::visit(l);
    }
    void visit(const Store &st) override {
        any |= st.buffer.get() == b;
        IRVisitor::visit(st);
    }
    void visit(const Reduce &r) override { any |= r.src.get() == b || r.dst.get() == b; }
    void visitRegion(const Region &r) override {
        any |= r.buffer.get() == b;
        IRVisitor::visitRegion(r);
    }
};

bool mentionsBuffer(const Expr &e, const BufferNode *b) {
    Touch v(b);
    v.visit(e);
    return v.any;
}

bool touches(const Stmt &s, const BufferNode *b) {
    Touch v(b);
    v.visit(s);
    return v.any;
}

std::optional<Nest> matchNest(const For &top, const std::map<const BufferNode *, ReduceKind> &reducers) {
    Nest n;
    Stmt at;
    for (const For *f = &top; f; f = as<For>(at)) {
        if (f->forKind != ForKind::Parallel || constInt(f->min) != std::optional<int64_t>(0) || !constInt(f->extent))
            return std::nullopt;
        n.loops.push_back(f);
        at = f->body;
        while (auto q = as<Seq>(at)) {
            if (q->stmts.size() != 1) return std::nullopt;
            at = q->stmts[0];
        }
    }
    auto st = as<Store>(at);
    if (!st || !reducers.count(st->buffer.get())) return std::nullopt;
    auto old = Load::make(st->buffer, st->indices);
    n.st = st;
    n.e = contribution(st->value, *as<Load>(old), reducers.at(st->buffer.get()));
    if (!n.e || mentionsBuffer(n.e, st->buffer.get())) return std::nullopt;
    size_t next = 0;
    for (size_t l = 0; l < n.loops.size(); ++l) {
        if (next < st->indices.size() && st->indices[next].get() == n.loops[l]->var.get()) {
            if (constInt(st->buffer->shape[next]) != constInt(n.loops[l]->extent)) return std::nullopt;
            ++next;
        } else if (n.missing < 0) {
            n.missing = (int)l;
        } else {
            return std::nullopt;
        }
    }
    if (next != st->indices.size() || n.missing < 0) return std::nullopt;
    return n;
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
/// next T.finalize_reducer, and the accumulator (the nest's shape) fits in `maxSlots` registers per thread.
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

    void update(const Nest &n) {
        State &s = state_[n.st->buffer.get()];
        if (!s.declared) s.bad = true;
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
        for (auto &[b, kind] : reducers_)
            if (touches(s, b) && (f || state_[b].pending)) state_[b].bad = true; // another nest, or between
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
            Stmt combine = Reduce::make(reducers_.at(b.get()), d.acc, b, d.missing, false, op->loc);
            return Seq::make({combine, reset(b.get(), op->loc)}, op->loc);
        }
        return op;
    }

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (op->forKind != ForKind::Parallel) return IRMutator::visit(op);
        if (auto n = matchNest(*op, reducers_)) return deferred_.count(n->st->buffer.get()) ? accumulate(*n) : reduceEach(*n, op->loc);
        return IRMutator::visit(op);
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
    /// Each iteration adds its contribution to its own element of the accumulator (no thread meets another's).
    Stmt accumulate(const Nest &n) {
        const Deferred &d = deferred_.at(n.st->buffer.get());
        std::vector<Expr> idx;
        for (auto *l : n.loops) idx.push_back(l->var);
        ReduceKind k = reducers_.at(n.st->buffer.get());
        BinaryOp op = k == ReduceKind::Sum ? BinaryOp::Add : k == ReduceKind::Max ? BinaryOp::Max : BinaryOp::Min;
        Stmt body = Store::make(d.acc, idx, binary(op, Load::make(d.acc, idx), cast(d.acc->dtype, n.e), n.st->loc), n.st->loc);
        return wrap(n, body);
    }
    /// The nest storing its contributions into a fragment of its shape, reduced into r at once.
    Stmt reduceEach(const Nest &n, const SourceRange &loc) {
        std::vector<Expr> shape, idx;
        for (auto *l : n.loops) shape.push_back(l->extent), idx.push_back(l->var);
        Buffer part = makeBuffer(n.st->buffer->name + "_part", Scope::Fragment, n.st->buffer->dtype, shape, n.st->loc);
        k_.allocs.push_back(part);
        Stmt body = wrap(n, Store::make(part, idx, n.e, n.st->loc));
        return Seq::make({body, Reduce::make(reducers_.at(n.st->buffer.get()), part, n.st->buffer, n.missing, false, n.st->loc)},
                         loc);
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
        Rewriter r(reducersOf(k->body), *nk);
        nk->body = r.mutate(k->body);
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
