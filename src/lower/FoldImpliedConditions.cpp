/// \file
/// Tests decided by the branches around them, folded (include/tilec/passes/FoldImpliedConditions.h).
#include "tilec/passes/FoldImpliedConditions.h"

#include "EachKernel.h"
#include "RangeScopedMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/LaneUniformity.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

bool isIntCompare(const Binary &b) {
    bool cmp = b.op == BinaryOp::LT || b.op == BinaryOp::LE || b.op == BinaryOp::GT || b.op == BinaryOp::GE ||
               b.op == BinaryOp::EQ;
    return cmp && b.a->dtype.isInt() && b.b->dtype.isInt();
}

/// An integer expression rebuilt in 64 bits with the casts at its leaves, so that the linear simplifier sees
/// `int64(n + 127)` and `int64(n)` as the same n (exact arithmetic: see the header).
Expr wide(const Expr &e) {
    if (auto i = as<IntImm>(e)) return intImm(i->value, DType::Int64);
    if (auto c = as<Cast>(e); c && c->dtype.isInt() && c->value->dtype.isInt() && c->dtype.bits() >= c->value->dtype.bits())
        return wide(c->value);
    if (auto b = as<Binary>(e)) {
        switch (b->op) {
        case BinaryOp::Add: case BinaryOp::Sub: case BinaryOp::Mul: case BinaryOp::FloorDiv: case BinaryOp::FloorMod:
        case BinaryOp::Min: case BinaryOp::Max:
            if (b->a->dtype.isInt() && b->b->dtype.isInt()) return binary(b->op, wide(b->a), wide(b->b));
            break;
        default: break;
        }
    }
    if (auto u = as<Unary>(e); u && u->op == UnaryOp::Neg && u->a->dtype.isInt()) return unary(UnaryOp::Neg, wide(u->a));
    return cast(DType::Int64, e);
}

/// The variables an expression reads, in the order met.
std::vector<const VarNode *> varsOf(const Expr &e) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        std::vector<const VarNode *> vars;
        void visit(const VarNode &v) override {
            for (auto *w : vars)
                if (w == &v) return;
            vars.push_back(&v);
        }
    } v;
    v.IRVisitor::visit(e);
    return v.vars;
}

bool isBoundedTerm(const Expr &e) {
    auto b = as<Binary>(e);
    return b && b->dtype.isInt() &&
           ((b->op == BinaryOp::FloorDiv && constInt(b->b).value_or(0) > 0) || b->op == BinaryOp::Min ||
            b->op == BinaryOp::Max);
}

/// The number of nodes of an arithmetic expression.
int64_t sizeOf(const Expr &e) {
    if (auto b = as<Binary>(e)) return 1 + sizeOf(b->a) + sizeOf(b->b);
    if (auto u = as<Unary>(e)) return 1 + sizeOf(u->a);
    if (auto c = as<Cast>(e)) return 1 + sizeOf(c->value);
    return 1;
}

/// The floor divisions by a positive constant, minima and maxima of integers in `e` that no other one contains,
/// the largest first: one nested in another (`tx // 64` in `(n - 1 - tx // 64) // 4`) must wait for the outer one's
/// elimination to bring it to the top of the sum.
Expr firstBoundedTerm(const Expr &e) {
    std::vector<Expr> found;
    std::function<void(const Expr &)> walk = [&](const Expr &x) {
        if (isBoundedTerm(x)) return found.push_back(x);
        if (auto b = as<Binary>(x)) return walk(b->a), walk(b->b);
        if (auto u = as<Unary>(x)) return walk(u->a);
        if (auto c = as<Cast>(x)) return walk(c->value);
    };
    walk(e);
    Expr best;
    for (auto &t : found)
        if (!best || sizeOf(t) > sizeOf(best)) best = t;
    return best;
}

/// `e` with every occurrence of `t` (structurally) replaced by `q`.
Expr replaceTerm(const Expr &e, const Expr &t, const Expr &q) {
    if (structurallyEqual(e, t)) return q;
    if (auto b = as<Binary>(e)) return binary(b->op, replaceTerm(b->a, t, q), replaceTerm(b->b, t, q));
    if (auto u = as<Unary>(e)) return unary(u->op, replaceTerm(u->a, t, q));
    if (auto c = as<Cast>(e)) return cast(c->dtype, replaceTerm(c->value, t, q));
    return e;
}

class Fold : public RangeScopedMutator {
  public:
    using RangeScopedMutator::visit;
    explicit Fold(const Kernel &k) : RangeScopedMutator(k), tx_(k.threadIdx.get()), lanes_(laneUniformity(k)) {}

    /// Each role with its own threads' range of the thread index (the kernel's `threads` counts the consumers'
    /// first warp group only: the producers run [consumerThreads, consumerThreads + producerThreads)).
    Stmt visit(const std::shared_ptr<const WarpRoles> &op) override {
        auto at = tx_ ? ranges().find(tx_) : ranges().end();
        if (at == ranges().end()) return RangeScopedMutator::visit(op);
        const Interval outer = at->second;
        setRange(tx_, Interval::of(0, op->consumerThreads - 1));
        Stmt consumer = mutate(op->consumer);
        setRange(tx_, Interval::of(op->consumerThreads, op->consumerThreads + op->producerThreads - 1));
        // No producer threads (lowerWarpRoles' roles where every warp group computes): nothing runs there.
        Stmt producer = op->producer && op->producerThreads > 0 ? mutate(op->producer) : op->producer;
        setRange(tx_, outer);
        if (consumer == op->consumer && producer == op->producer) return op;
        return WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, producer,
                               consumer, op->loc);
    }

    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        Expr cond = fold(mutate(op->cond));
        const size_t saved = facts_.size();
        note(cond, false);
        Stmt then = mutate(op->then);
        facts_.resize(saved);
        note(cond, true);
        Stmt otherwise = op->otherwise ? mutate(op->otherwise) : nullptr;
        facts_.resize(saved);
        if (auto k = constInt(cond)) {
            if (*k) return then;
            return otherwise ? otherwise : Seq::make({}, op->loc);
        }
        if (cond == op->cond && then == op->then && otherwise == op->otherwise) return op;
        return IfThenElse::make(cond, then, otherwise, op->loc);
    }

    Expr visit(const std::shared_ptr<const Select> &op) override {
        Expr e = RangeScopedMutator::visit(op);
        auto s = as<Select>(e);
        if (!s) return e;
        Expr cond = fold(s->cond);
        return cond == s->cond ? e : select(cond, s->t, s->f, op->loc);
    }

    /// A library call's `valid` argument (a cp.async chunk's bounds test) is a test like any other.
    Expr visit(const std::shared_ptr<const Call> &op) override {
        Expr e = RangeScopedMutator::visit(op);
        auto c = as<Call>(e);
        const lib::Info *f = c ? lib::find(c->name) : nullptr;
        if (!f) return e;
        std::vector<Expr> args = c->args;
        bool changed = false;
        for (size_t i = 0; i < args.size() && i < f->args.size(); ++i) {
            if (std::string(f->args[i]) != "valid") continue;
            Expr folded = fold(args[i]);
            changed |= folded != args[i];
            args[i] = folded;
        }
        return changed ? Call::make(c->dtype, c->name, std::move(args), c->loc) : e;
    }

  private:
    /// What holds here: `a < b`, both in 64 bits (wide); `uniform`: it reads no thread-varying variable.
    struct Fact {
        Expr a, b;
        bool uniform;
    };
    std::vector<Fact> facts_;
    const VarNode *tx_;
    /// Which values differ across the block (the thread index, the loop variables whose bounds read it).
    const LaneUniformity lanes_;

    bool readsVarying(const Expr &e) const { return !lanes_.sameInBlock(e); }

    /// Records what `cond` (or its negation) says as facts `a < b`.
    void note(const Expr &cond, bool negated) {
        if (auto u = as<Unary>(cond); u && u->op == UnaryOp::Not) return note(u->a, !negated);
        auto b = as<Binary>(cond);
        if (!b) return;
        if (b->op == (negated ? BinaryOp::Or : BinaryOp::And)) return note(b->a, negated), note(b->b, negated);
        if (!isIntCompare(*b) || readsMemory(cond) || callsAnything(cond)) return;
        Expr x = wide(b->a), y = wide(b->b), one = intImm(1, DType::Int64);
        const bool uniform = !readsVarying(cond);
        BinaryOp op = b->op;
        if (negated) {
            if (op == BinaryOp::EQ) return;
            op = op == BinaryOp::LT ? BinaryOp::GE : op == BinaryOp::LE ? BinaryOp::GT : op == BinaryOp::GT ? BinaryOp::LE : BinaryOp::LT;
        }
        switch (op) {
        case BinaryOp::LT: facts_.push_back({x, y, uniform}); break;
        case BinaryOp::LE: facts_.push_back({x, binary(BinaryOp::Add, y, one), uniform}); break;
        case BinaryOp::GT: facts_.push_back({y, x, uniform}); break;
        case BinaryOp::GE: facts_.push_back({y, binary(BinaryOp::Add, x, one), uniform}); break;
        case BinaryOp::EQ:
            facts_.push_back({x, binary(BinaryOp::Add, y, one), uniform});
            facts_.push_back({y, binary(BinaryOp::Add, x, one), uniform});
            break;
        default: break;
        }
    }

    /// `cond` with each comparison conjunct that follows from the facts replaced by true.
    Expr fold(const Expr &cond) {
        auto b = as<Binary>(cond);
        if (!b) return cond;
        if (b->op == BinaryOp::And) {
            Expr x = fold(b->a), y = fold(b->b);
            return x == b->a && y == b->b ? cond : binary(BinaryOp::And, x, y, cond->loc);
        }
        if (!isIntCompare(*b) || b->op == BinaryOp::EQ || readsMemory(cond) || callsAnything(cond)) return cond;
        Expr x = wide(b->a), y = wide(b->b), one = intImm(1, DType::Int64);
        // x < y holds when y - x - 1 >= 0; x <= y when y - x >= 0; the others mirrored.
        Expr gap;
        switch (b->op) {
        case BinaryOp::LT: gap = binary(BinaryOp::Sub, binary(BinaryOp::Sub, y, x), one); break;
        case BinaryOp::LE: gap = binary(BinaryOp::Sub, y, x); break;
        case BinaryOp::GT: gap = binary(BinaryOp::Sub, binary(BinaryOp::Sub, x, y), one); break;
        default: gap = binary(BinaryOp::Sub, x, y); break;
        }
        return provedNonNegative(gap, 2, !readsVarying(cond)) ? boolImm(true, cond->loc) : cond;
    }

    /// Whether `gap >= 0` follows from the facts (each variable of a fact substituted at the bound it gives
    /// where the gap falls as the variable grows; `depth` facts at most) and the ranges. `uniform`: from the
    /// uniform facts only, so that the gap never comes to read the thread index (see the header).
    bool provedNonNegative(const Expr &gap, int depth, bool uniform) {
        if (lowerBoundNonNegative(gap, 4)) return true;
        if (depth == 0) return false;
        for (auto &[a, b, u] : facts_) {
            if (uniform && !u) continue;
            for (const VarNode *v : varsOf(a)) {
                auto fa = linearIn(a, v), g = linearIn(gap, v);
                if (!fa || fa->second <= 0 || !g || g->second >= 0) continue;
                // k * v + rest < b: v <= (b - 1 - rest) // k, and the gap falls with v (coefficient c < 0).
                Expr top = binary(BinaryOp::Sub, b, intImm(1, DType::Int64));
                if (fa->first) top = binary(BinaryOp::Sub, top, wide(fa->first));
                Expr bound = fa->second == 1 ? top : binary(BinaryOp::FloorDiv, top, intImm(fa->second, DType::Int64));
                Expr at = binary(BinaryOp::Mul, bound, intImm(g->second, DType::Int64));
                if (g->first) at = binary(BinaryOp::Add, wide(g->first), at);
                if (provedNonNegative(simplify(at), depth - 1, uniform)) return true;
            }
        }
        return false;
    }

    /// Whether `e >= 0` by the ranges, after bounding its floor divisions, minima and maxima by their operands.
    bool lowerBoundNonNegative(const Expr &expr, int depth) {
        Expr e = simplify(expr);
        Interval iv = boundsOf(e, ranges());
        if (iv.lo && *iv.lo >= 0) return true;
        Expr t = depth > 0 ? firstBoundedTerm(e) : nullptr;
        if (!t) return false;
        Var q = makeVar("q", DType::Int64);
        auto lin = linearIn(replaceTerm(e, t, cast(DType::Int64, q)), q.get());
        if (!lin || (lin->first && uses(lin->first, q.get()))) return false;
        const int64_t c = lin->second;
        Expr rest = lin->first ? wide(lin->first) : intImm(0, DType::Int64);
        if (c == 0) return lowerBoundNonNegative(rest, depth - 1);
        auto with = [&](const Expr &v, int64_t k) {
            return lowerBoundNonNegative(binary(BinaryOp::Add, rest, binary(BinaryOp::Mul, wide(v), intImm(k, DType::Int64))), depth - 1);
        };
        auto b = as<Binary>(t);
        if (b->op == BinaryOp::FloorDiv && c % *constInt(b->b) == 0) {
            // d * (x // d) is in [x - d + 1, x].
            const int64_t d = *constInt(b->b);
            Expr x = c < 0 ? b->a : binary(BinaryOp::Sub, wide(b->a), intImm(d - 1, DType::Int64));
            return with(x, c / d);
        }
        if (b->op == BinaryOp::FloorDiv) {
            // Otherwise the term at the end of its range that lowers the sum (`tx // 16` in [0, 15]).
            Interval iv = boundsOf(t, ranges());
            std::optional<int64_t> end = c < 0 ? iv.hi : iv.lo;
            return end && with(intImm(*end, DType::Int64), c);
        }
        // c * min(x, y) >= c * x and c * y when c < 0, and at least the smaller of them when c > 0; max mirrored.
        bool either = (b->op == BinaryOp::Min) == (c < 0);
        return either ? (with(b->a, c) || with(b->b, c)) : (with(b->a, c) && with(b->b, c));
    }
};

} // namespace

Program foldImpliedConditions(const Program &p) {
    return eachKernel(p, [](const KernelP &k) { return Fold(*k).mutate(k); });
}

} // namespace tilec::passes
