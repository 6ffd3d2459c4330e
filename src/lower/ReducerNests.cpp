/// \file
/// The forms of reducer updates that lowerReducers knows (src/lower/ReducerNests.h).
#include "ReducerNests.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <algorithm>

namespace tilec::passes::reducers {

using namespace ir;

namespace {

/// The most elements a reducer may have for an update at an index computed from the nest's variables.
constexpr int64_t kMaxScatterElements = 16;

/// An update of a small reducer at an index computed from the nest's variables (`r[T.min(2, j // 4)] += e`,
/// TileKernels' mHC split-mixes backward), which no form above knows, as one update per element of r in the
/// element form: `r[k] = r[k] (op) select(index == k, e, identity)` for each k. Each iteration adds e to the
/// element its index picks, as written, and the element form's machinery (updatesAmongOthers, Deferral) takes
/// them. Other statements are returned as they are.
Stmt scatteredUpdates(const Stmt &body, const std::vector<const For *> &loops,
                      const std::map<const BufferNode *, ReduceKind> &reducers) {
    struct R : IRMutator {
        using IRMutator::visit;
        const std::map<const BufferNode *, ReduceKind> *reducers;
        const std::vector<const For *> *loops;
        Stmt visit(const std::shared_ptr<const Store> &st) override {
            auto kind = reducers->find(st->buffer.get());
            if (kind == reducers->end() || missingVariable(*loops, *st) != kNone) return st;
            auto old = Load::make(st->buffer, st->indices);
            Expr e = contribution(st->value, *as<Load>(old), kind->second);
            if (!e || uses(e, st->buffer.get())) return st;
            std::vector<int64_t> shape;
            int64_t n = 1;
            for (auto &x : st->buffer->shape) {
                auto c = constInt(x);
                if (!c) return st;
                shape.push_back(*c), n *= *c;
            }
            if (n > kMaxScatterElements || shape.size() != st->indices.size()) return st;
            const BinaryOp op = kind->second == ReduceKind::Sum ? BinaryOp::Add : kind->second == ReduceKind::Max ? BinaryOp::Max : BinaryOp::Min;
            const Expr id = reduceIdentity(kind->second, st->buffer->dtype);
            std::vector<Stmt> each;
            for (int64_t f = 0; f < n; ++f) {
                std::vector<Expr> at(shape.size());
                Expr here;
                for (size_t d = shape.size(), rest = (size_t)f; d-- > 0; rest /= (size_t)shape[d]) {
                    at[d] = intImm((int64_t)(rest % (size_t)shape[d]), st->indices[d]->dtype);
                    Expr eq = binary(BinaryOp::EQ, st->indices[d], at[d], st->loc);
                    here = here ? binary(BinaryOp::And, here, eq, st->loc) : eq;
                }
                Expr v = binary(op, Load::make(st->buffer, at, st->loc), select(here, cast(st->buffer->dtype, e), id, st->loc), st->loc);
                each.push_back(Store::make(st->buffer, at, v, st->loc));
            }
            return Seq::make(std::move(each), st->loc);
        }
    } r;
    r.reducers = &reducers;
    r.loops = &loops;
    return r.mutate(body);
}

} // namespace

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

Stmt single(Stmt at) {
    while (auto q = as<Seq>(at)) {
        if (q->stmts.size() != 1) break;
        at = q->stmts[0];
    }
    return at;
}

/// The loops of a nest of T.Parallel loops from 0 with constant extents and the body below them (single
/// statements out of their Seq); false when a loop of the nest is not that.
bool nestLoops(const For &top, std::vector<const For *> &loops, Stmt &body) {
    Stmt at;
    for (const For *f = &top; f; f = as<For>(at)) {
        if (f->forKind != ForKind::Parallel || constInt(f->min) != std::optional<int64_t>(0) || !constInt(f->extent))
            return false;
        loops.push_back(f);
        at = single(f->body);
    }
    body = at;
    return true;
}

/// The body of a nest with its `if` (no else) taken off: the update and the condition (null when none).
std::pair<Stmt, Expr> underIf(const Stmt &body) {
    if (auto i = as<IfThenElse>(body); i && !i->otherwise) return {single(i->then), i->cond};
    return {body, nullptr};
}

/// The nest variable the store to reducer r reduces over, kNone when r is not indexed by the nest's other
/// variables in their order; a one-element r (`r[0]`) over every variable (kAll; 0 in a one-variable nest).
int missingVariable(const std::vector<const For *> &loops, const Store &st) {
    if (st.indices.size() == 1 && constInt(st.indices[0]) == std::optional<int64_t>(0) &&
        constInt(st.buffer->shape[0]) == std::optional<int64_t>(1) && !loops.empty())
        return loops.size() == 1 ? 0 : kAll;
    bool uniform = !loops.empty() && st.indices.size() == st.buffer->shape.size();
    for (size_t d = 0; uniform && d < st.indices.size(); ++d) {
        uniform = constInt(st.buffer->shape[d]).has_value();
        for (auto *l : loops) uniform = uniform && !uses(st.indices[d], l->var.get());
    }
    if (uniform) return kUniform;
    size_t next = 0;
    int missing = kNone;
    for (size_t l = 0; l < loops.size(); ++l) {
        if (next < st.indices.size() && st.indices[next].get() == loops[l]->var.get()) {
            if (constInt(st.buffer->shape[next]) != constInt(loops[l]->extent)) return kNone;
            ++next;
        } else if (missing == kNone) {
            missing = (int)l;
        } else {
            return kNone;
        }
    }
    return next == st.indices.size() ? missing : kNone;
}

std::optional<Nest> matchNest(const For &top, const std::map<const BufferNode *, ReduceKind> &reducers) {
    Nest n;
    Stmt body;
    if (!nestLoops(top, n.loops, body)) return std::nullopt;
    auto [at, cond] = underIf(body);
    auto st = as<Store>(at);
    if (!st || !reducers.count(st->buffer.get())) return std::nullopt;
    auto old = Load::make(st->buffer, st->indices);
    n.st = st, n.cond = cond;
    n.e = contribution(st->value, *as<Load>(old), reducers.at(st->buffer.get()));
    if (!n.e || uses(n.e, st->buffer.get()) || (cond && uses(cond, st->buffer.get())))
        return std::nullopt;
    n.missing = missingVariable(n.loops, *st);
    n.oneElement = n.missing != kUniform && st->indices.size() == 1 && constInt(st->indices[0]).has_value();
    if (n.missing == kNone) return std::nullopt;
    return n;
}

/// `body` with scatteredUpdates applied to every T.Parallel nest.
Stmt withScatteredUpdates(const Stmt &body, const std::map<const BufferNode *, ReduceKind> &reducers) {
    struct N : IRMutator {
        using IRMutator::visit;
        const std::map<const BufferNode *, ReduceKind> *reducers;
        Stmt visit(const std::shared_ptr<const For> &op) override {
            if (op->forKind != ForKind::Parallel) return IRMutator::visit(op);
            std::vector<const For *> loops;
            Stmt inner;
            if (!nestLoops(*op, loops, inner)) return op;
            Stmt s = scatteredUpdates(inner, loops, *reducers);
            if (s == inner) return op;
            for (size_t l = loops.size(); l-- > 0;)
                s = For::make(loops[l]->var, loops[l]->min, loops[l]->extent, ForKind::Parallel, 0, s, loops[l]->loc);
            return s;
        }
    } n;
    n.reducers = &reducers;
    return reducers.empty() ? body : n.mutate(body);
}

} // namespace tilec::passes::reducers
