/// \file
/// Serial loops split where the element-wise conditions of their body are uniformly true or false over the
/// tile (include/tilec/passes/SplitUniformConditions.h).
#include "tilec/passes/SplitUniformConditions.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LoopInvariants.h"

#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// An integer expression as a sum of constant multiples of atoms plus a constant.
struct Affine {
    std::vector<std::pair<int64_t, Expr>> terms;
    int64_t constant = 0;
    bool ok = true; ///< false where a coefficient overflowed or an operand is not a signed integer

    /// Adds k * e, looking through sums, differences, negations, products by constants and widening casts.
    void add(const Expr &e, int64_t k) {
        if (!ok) return;
        if (!e->dtype.isSigned()) { ok = false; return; }
        if (auto i = as<IntImm>(e)) {
            int64_t v;
            ok = !__builtin_mul_overflow(k, i->value, &v) && !__builtin_add_overflow(constant, v, &constant);
            return;
        }
        if (auto b = as<Binary>(e)) {
            if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
                add(b->a, k);
                add(b->b, b->op == BinaryOp::Add ? k : -k);
                return;
            }
            const IntImm *c = b->op == BinaryOp::Mul ? as<IntImm>(b->b) : nullptr;
            const Expr &other = c ? b->a : b->b;
            if (!c && b->op == BinaryOp::Mul) c = as<IntImm>(b->a);
            if (c) {
                int64_t kc;
                if (__builtin_mul_overflow(k, c->value, &kc)) { ok = false; return; }
                add(other, kc);
                return;
            }
        }
        if (auto u = as<Unary>(e); u && u->op == UnaryOp::Neg) return add(u->a, -k);
        if (auto c = as<Cast>(e); c && c->value->dtype.isSigned() && c->value->dtype.bits() <= e->dtype.bits())
            return add(c->value, k);
        terms.push_back({k, e});
    }
};

/// The variables an expression reads.
std::set<const VarNode *> varsOf(const Expr &e) {
    struct Vars : IRVisitor {
        using IRVisitor::visit;
        std::set<const VarNode *> found;
        void visit(const VarNode &v) override { found.insert(&v); }
    } v;
    v.visit(e);
    return v.found;
}

bool callsAnything(const Expr &e) {
    struct Calls : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Call &) override { found = true; }
    } c;
    c.visit(e);
    return c.found;
}

/// floor(x / m) for m > 0, exact: the terms whose coefficients m divides are divided, the rest divided at run
/// time with Python's floor division.
Expr floorDivided(const Affine &x, int64_t m, DType t) {
    Expr quotient = intImm(0, t), rest;
    for (auto &[k, atom] : x.terms) {
        if (k % m == 0) {
            quotient = binary(BinaryOp::Add, quotient, binary(BinaryOp::Mul, intImm(k / m, t), atom));
        } else {
            Expr term = binary(BinaryOp::Mul, intImm(k, t), atom);
            rest = rest ? binary(BinaryOp::Add, rest, term) : term;
        }
    }
    if (!rest) {
        int64_t q = x.constant / m - (x.constant % m < 0 ? 1 : 0);
        return simplify(binary(BinaryOp::Add, quotient, intImm(q, t)));
    }
    rest = binary(BinaryOp::Add, rest, intImm(x.constant, t));
    return simplify(binary(BinaryOp::Add, quotient, binary(BinaryOp::FloorDiv, rest, intImm(m, t))));
}

Affine negated(Affine x) {
    for (auto &t : x.terms) t.first = -t.first;
    x.constant = -x.constant;
    return x;
}

/// Where one comparison is the same over the whole tile: for k < lowEnd it is lowValue, for k >= highStart it
/// is highValue (either may be missing).
struct Sides {
    Expr lowEnd, highStart;
    bool lowValue = false, highValue = false;
};

/// What the comparisons of one loop's body may depend on.
struct Scope {
    const VarNode *loopVar = nullptr;
    const VarNode *tx = nullptr;
    std::set<const VarNode *> inner;            ///< variables of the loops inside the body
    std::set<const BufferNode *> invariant;     ///< buffers the loop cannot change
};

/// The sides of `cmp` (an integer comparison in the body, with `ranges` of the tile's variables at that point).
std::optional<Sides> sidesOf(const Binary &cmp, const Scope &s, const RangeMap &ranges) {
    if (cmp.op != BinaryOp::LT && cmp.op != BinaryOp::LE && cmp.op != BinaryOp::GT && cmp.op != BinaryOp::GE)
        return std::nullopt;
    if (!cmp.a->dtype.isSigned() || !cmp.b->dtype.isSigned()) return std::nullopt;
    // The comparison as d >= 0.
    const bool greater = cmp.op == BinaryOp::GT || cmp.op == BinaryOp::GE;
    Affine d;
    d.add(cmp.a, greater ? 1 : -1);
    d.add(cmp.b, greater ? -1 : 1);
    if (cmp.op == BinaryOp::GT || cmp.op == BinaryOp::LT) d.constant -= 1;
    if (!d.ok) return std::nullopt;
    // d = symbolic + c * k + (a part in [vlo, vhi] over the tile).
    Affine symbolic;
    int64_t c = 0, vlo = d.constant, vhi = d.constant;
    bool varying = false;
    for (auto &[k, atom] : d.terms) {
        auto vars = varsOf(atom);
        if (atom.get() == s.loopVar) { c += k; continue; }
        if (vars.count(s.loopVar) || callsAnything(atom)) return std::nullopt;
        size_t tile = 0;
        for (auto *v : vars) tile += s.inner.count(v) || v == s.tx;
        if (tile == 0) {
            if (readsMemory(atom) && !readsOnly(atom, s.invariant)) return std::nullopt;
            symbolic.terms.push_back({k, atom});
            continue;
        }
        if (tile != vars.size() || readsMemory(atom)) return std::nullopt;
        Interval r = boundsOf(atom, ranges);
        if (!r.lo || !r.hi) return std::nullopt;
        int64_t a, b;
        if (__builtin_mul_overflow(k, *r.lo, &a) || __builtin_mul_overflow(k, *r.hi, &b)) return std::nullopt;
        if (__builtin_add_overflow(vlo, std::min(a, b), &vlo) || __builtin_add_overflow(vhi, std::max(a, b), &vhi))
            return std::nullopt;
        varying = true;
    }
    if (c == 0 || !varying) return std::nullopt;
    const DType t = s.loopVar->dtype;
    const int64_t m = c < 0 ? -c : c;
    Affine atLo = symbolic, atHi = symbolic; // symbolic + vlo, symbolic + vhi
    atLo.constant = vlo;
    atHi.constant = vhi;
    Sides out;
    if (c < 0) {
        // True for every element while symbolic + vlo - m k >= 0: k <= floor((symbolic + vlo) / m).
        out.lowEnd = simplify(binary(BinaryOp::Add, floorDivided(atLo, m, t), intImm(1, t)));
        out.lowValue = true;
        // False for every element once symbolic + vhi - m k < 0: k >= floor((symbolic + vhi) / m) + 1.
        out.highStart = simplify(binary(BinaryOp::Add, floorDivided(atHi, m, t), intImm(1, t)));
        out.highValue = false;
    } else {
        // True once symbolic + vlo + m k >= 0: k >= ceil(-(symbolic + vlo) / m) = -floor((symbolic + vlo) / m).
        out.highStart = simplify(unary(UnaryOp::Neg, floorDivided(atLo, m, t)));
        out.highValue = true;
        // False while symbolic + vhi + m k < 0: k <= floor((-(symbolic + vhi) - 1) / m).
        Affine below = negated(atHi);
        below.constant -= 1;
        out.lowEnd = simplify(binary(BinaryOp::Add, floorDivided(below, m, t), intImm(1, t)));
        out.lowValue = false;
    }
    return out;
}

enum class Side { Collect, Low, High };

/// Walks one loop's body with the ranges of the loops inside it: collects the sides of its comparisons
/// (Collect), or replaces those constant on one side by their value there and folds what that makes constant.
class Sider : public IRMutator {
  public:
    using IRMutator::visit;
    Sider(const Scope &s, RangeMap ranges, Side side) : s_(s), ranges_(std::move(ranges)), side_(side) {}

    std::vector<Sides> found;

    Stmt visit(const std::shared_ptr<const For> &op) override {
        auto saved = ranges_;
        addLoopRange(ranges_, *op);
        Stmt out = IRMutator::visit(op);
        ranges_ = std::move(saved);
        return out;
    }

    Expr visit(const std::shared_ptr<const Binary> &op) override {
        if (auto sides = sidesOf(*op, s_, ranges_)) {
            if (side_ == Side::Collect) found.push_back(*sides);
            if (side_ == Side::Low && sides->lowEnd) return boolImm(sides->lowValue, op->loc);
            if (side_ == Side::High && sides->highStart) return boolImm(sides->highValue, op->loc);
            return op;
        }
        Expr e = IRMutator::visit(op);
        auto b = as<Binary>(e);
        if (!b || (b->op != BinaryOp::And && b->op != BinaryOp::Or)) return e;
        // true && x = x, false && x = false; false || x = x, true || x = true.
        const bool isAnd = b->op == BinaryOp::And;
        for (auto [c, other] : {std::pair{b->a, b->b}, std::pair{b->b, b->a}})
            if (auto v = constValue(c)) return (*v != 0) == isAnd ? other : boolImm(!isAnd, op->loc);
        return e;
    }

    Expr visit(const std::shared_ptr<const Unary> &op) override {
        Expr e = IRMutator::visit(op);
        auto u = as<Unary>(e);
        if (u && u->op == UnaryOp::Not)
            if (auto v = constValue(u->a)) return boolImm(*v == 0, op->loc);
        return e;
    }

    Expr visit(const std::shared_ptr<const Select> &op) override {
        Expr e = IRMutator::visit(op);
        if (auto s = as<Select>(e))
            if (auto v = constValue(s->cond)) return *v ? s->t : s->f;
        return e;
    }

    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        Stmt st = IRMutator::visit(op);
        if (auto i = as<IfThenElse>(st))
            if (auto v = constValue(i->cond)) return *v ? i->then : (i->otherwise ? i->otherwise : Seq::make({}));
        return st;
    }

  private:
    const Scope &s_;
    RangeMap ranges_;
    Side side_;
};

/// The variables of the loops inside `s`.
std::set<const VarNode *> loopVars(const Stmt &s) {
    struct Loops : IRVisitor {
        using IRVisitor::visit;
        std::set<const VarNode *> found;
        void visit(const For &op) override {
            if (op.var) found.insert(op.var.get());
            IRVisitor::visit(op);
        }
    } l;
    l.visit(s);
    return l.found;
}

Expr minOf(const Expr &a, const Expr &b) {
    if (auto d = constValue(binary(BinaryOp::Sub, a, b))) return *d <= 0 ? a : b;
    return binary(BinaryOp::Min, a, b);
}

Expr maxOf(const Expr &a, const Expr &b) {
    if (auto d = constValue(binary(BinaryOp::Sub, a, b))) return *d >= 0 ? a : b;
    return binary(BinaryOp::Max, a, b);
}

/// Provably a <= b.
bool atMost(const Expr &a, const Expr &b) {
    auto d = constValue(binary(BinaryOp::Sub, b, a));
    return d && *d >= 0;
}

class Splitter : public IRMutator {
  public:
    using IRMutator::visit;
    Splitter(const Kernel &k, const SourceManager *sources) : k_(k), sources_(sources), ranges_(kernelRanges(k)) {}

    Stmt visit(const std::shared_ptr<const WarpRoles> &op) override {
        // Each role's threads: the consumers [0, consumerThreads), the producers after them.
        auto saved = ranges_;
        const VarNode *tx = k_.threadIdx.get();
        if (tx) ranges_[tx] = Interval::of(0, op->consumerThreads - 1);
        Stmt consumer = mutate(op->consumer);
        if (tx) ranges_[tx] = Interval::of(op->consumerThreads, op->consumerThreads + op->producerThreads - 1);
        Stmt producer = op->producer ? mutate(op->producer) : op->producer;
        ranges_ = std::move(saved);
        if (consumer == op->consumer && producer == op->producer) return op;
        return WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, producer,
                               consumer, op->loc);
    }

    Stmt visit(const std::shared_ptr<const For> &op) override {
        Stmt st = IRMutator::visit(op);
        auto f = std::dynamic_pointer_cast<const For>(st);
        if (!f || f->forKind != ForKind::Serial || !f->var) return st;
        if (Stmt split = splitLoop(*f)) return split;
        return st;
    }

  private:
    Stmt splitLoop(const For &f) {
        Scope s;
        s.loopVar = f.var.get();
        s.tx = k_.threadIdx.get();
        s.inner = loopVars(f.body);
        s.invariant = loopInvariantBuffers(f, k_.body);
        Sider collect(s, ranges_, Side::Collect);
        collect.mutate(f.body);
        if (collect.found.empty()) return nullptr;
        const Expr lo = f.min, hi = simplify(binary(BinaryOp::Add, f.min, f.extent));
        for (const Expr &bound : {lo, hi})
            if (callsAnything(bound) || (readsMemory(bound) && !readsOnly(bound, s.invariant))) return nullptr;
        Expr lowEnd, highStart;
        for (auto &sd : collect.found) {
            if (sd.lowEnd) lowEnd = lowEnd ? minOf(lowEnd, sd.lowEnd) : sd.lowEnd;
            if (sd.highStart) highStart = highStart ? maxOf(highStart, sd.highStart) : sd.highStart;
        }
        // A side that provably holds no iteration is left out.
        if (lowEnd && atMost(lowEnd, lo)) lowEnd = nullptr;
        if (highStart && atMost(hi, highStart)) highStart = nullptr;
        if (!lowEnd && !highStart) return nullptr;
        const DType t = f.var->dtype;
        // lo <= s1 <= s2 <= hi where lo <= hi; all three loops empty (or negative) where lo > hi.
        Expr s1 = lowEnd ? cast(t, maxOf(lo, minOf(lowEnd, hi))) : lo;
        Expr s2 = highStart ? cast(t, maxOf(s1, minOf(highStart, hi))) : hi;
        std::vector<Stmt> loops;
        auto loop = [&](const Expr &from, const Expr &to, Side side) {
            Stmt body = f.body;
            Var v = f.var;
            if (side != Side::Collect) {
                body = Sider(s, ranges_, side).mutate(f.body);
                v = makeVar(f.var->name, f.var->dtype, f.var->loc);
                body = substitute(body, VarMap{{f.var.get(), v}});
            }
            loops.push_back(For::make(v, from, simplify(binary(BinaryOp::Sub, to, from)), f.forKind, f.numStages,
                                      body, f.loc));
        };
        if (lowEnd) loop(lo, s1, Side::Low);
        loop(s1, s2, Side::Collect);
        if (highStart) loop(s2, hi, Side::High);
        remark(sources_, f.loc,
               "loop over `" + f.var->name + "` split: " + std::to_string(collect.found.size()) +
                   " element-wise condition(s) on it; " +
                   (lowEnd ? "iterations below " + print(s1) + " run them as constants (uniform over the tile); " : "") +
                   (highStart ? "iterations from " + print(s2) + " run them as constants (uniform over the tile); " : "") +
                   "the rest keep them");
        return Seq::make(loops, f.loc);
    }

    const Kernel &k_;
    const SourceManager *sources_;
    RangeMap ranges_;
};

} // namespace

Program splitUniformConditions(const Program &p, const SourceManager *sources) {
    Program out;
    for (auto &k : p.kernels) {
        Splitter s(*k, sources);
        out.kernels.push_back(s.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
