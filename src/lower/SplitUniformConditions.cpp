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

#include <algorithm>
#include <functional>
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
    bool perElement = false; ///< it varies with a loop inside the body: a thread tests it more than once an iteration
};

/// What the comparisons of one loop's body may depend on.
struct LoopScope {
    const VarNode *loopVar = nullptr;
    const VarNode *tx = nullptr;
    std::set<const VarNode *> inner;            ///< variables of the loops inside the body
    std::set<const BufferNode *> invariant;     ///< buffers the loop cannot change
};

/// The sides of `cmp` (an integer comparison in the body, with `ranges` of the tile's variables at that point).
std::optional<Sides> sidesOf(const Binary &cmp, const LoopScope &s, const RangeMap &ranges) {
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
    bool varying = false, perElement = false;
    for (auto &[k, atom] : d.terms) {
        auto vars = varsOf(atom);
        if (atom.get() == s.loopVar) { c += k; continue; }
        if (vars.count(s.loopVar) || callsAnything(atom)) return std::nullopt;
        size_t tile = 0;
        for (auto *v : vars) tile += s.inner.count(v) || v == s.tx;
        for (auto *v : vars) perElement = perElement || s.inner.count(v);
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
    out.perElement = perElement;
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

/// Provably a <= b.
bool atMost(const Expr &a, const Expr &b) {
    auto d = constValue(binary(BinaryOp::Sub, b, a));
    return d && *d >= 0;
}

/// The side of one comparison the interior iterations take: the one where it is true (a mask's visible keys, a
/// bounds check's inside), unless that side provably holds none of the loop's iterations [lo, hi) and the other
/// may; then the other.
struct Choice {
    bool low = false; ///< the side k < point, else k >= point
    Expr point;
    bool value = false;
    bool perElement = false; ///< Sides::perElement
};

Choice choose(const Sides &s, const Expr &lo, const Expr &hi) {
    const bool lowIsTrue = s.lowValue;
    const bool lowEmpty = atMost(s.lowEnd, lo), highEmpty = atMost(hi, s.highStart);
    const bool low = lowIsTrue ? !(lowEmpty && !highEmpty) : (highEmpty && !lowEmpty);
    return low ? Choice{true, s.lowEnd, s.lowValue, s.perElement}
               : Choice{false, s.highStart, s.highValue, s.perElement};
}

bool empty(const Stmt &s) {
    auto seq = as<Seq>(s);
    return !s || (seq && seq->stmts.empty());
}

/// Walks one loop's body with the ranges of the loops inside it: collects the sides its comparisons take
/// (collect), or replaces each by its value on that side and folds what that makes constant.
class Sider : public IRMutator {
  public:
    using IRMutator::visit;
    Sider(const LoopScope &s, RangeMap ranges, Expr lo, Expr hi, bool collect)
        : s_(s), ranges_(std::move(ranges)), lo_(std::move(lo)), hi_(std::move(hi)), collect_(collect) {}

    std::vector<Choice> found;

    Stmt visit(const std::shared_ptr<const For> &op) override {
        auto saved = ranges_;
        addLoopRange(ranges_, *op);
        Stmt out = IRMutator::visit(op);
        ranges_ = std::move(saved);
        // A loop left with nothing to do (a mask's nest where the mask was all it did) goes.
        auto f = as<For>(out);
        if (!collect_ && f && empty(f->body)) return Seq::make({});
        return out;
    }

    Expr visit(const std::shared_ptr<const Binary> &op) override {
        if (auto sides = sidesOf(*op, s_, ranges_)) {
            Choice c = choose(*sides, lo_, hi_);
            if (collect_) found.push_back(c);
            return collect_ ? Expr(op) : boolImm(c.value, op->loc);
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

    Stmt visit(const std::shared_ptr<const Store> &op) override {
        // `x[i] = select(c, x[i], y)` with c now true stores a register to itself: nothing.
        Stmt st = IRMutator::visit(op);
        auto store = as<Store>(st);
        auto load = store && !collect_ ? as<Load>(store->value) : nullptr;
        if (!load || load->buffer != store->buffer || load->indices.size() != store->indices.size()) return st;
        if (store->buffer->scope != Scope::Fragment && store->buffer->scope != Scope::Local) return st;
        for (size_t i = 0; i < load->indices.size(); ++i)
            if (!structurallyEqual(load->indices[i], store->indices[i])) return st;
        return Seq::make({});
    }

    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        Stmt st = IRMutator::visit(op);
        auto i = as<IfThenElse>(st);
        if (!i) return st;
        if (auto v = constValue(i->cond)) return *v ? i->then : (i->otherwise ? i->otherwise : Seq::make({}));
        // A test left with nothing to do either way (a hand-written `if` around the mask, the mask now gone).
        if (!collect_ && empty(i->then) && (!i->otherwise || empty(i->otherwise)) && !callsAnything(i->cond))
            return Seq::make({});
        return st;
    }

  private:
    const LoopScope &s_;
    RangeMap ranges_;
    Expr lo_, hi_;
    bool collect_;
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

/// The least (or greatest) of `xs`, those provably not it left out.
Expr extremum(const std::vector<Expr> &in, bool least) {
    // Nested minima (maxima) flattened first.
    std::vector<Expr> xs;
    std::function<void(const Expr &)> flatten = [&](const Expr &e) {
        auto b = as<Binary>(e);
        if (b && b->op == (least ? BinaryOp::Min : BinaryOp::Max)) return flatten(b->a), flatten(b->b);
        xs.push_back(e);
    };
    for (auto &e : in) flatten(e);
    std::vector<Expr> kept;
    for (size_t i = 0; i < xs.size(); ++i) {
        bool beaten = false;
        for (size_t j = 0; j < xs.size() && !beaten; ++j) {
            if (i == j) continue;
            // xs[j] is at least as extreme; of two provably equal ones the first stays.
            const bool asGood = least ? atMost(xs[j], xs[i]) : atMost(xs[i], xs[j]);
            const bool equal = atMost(xs[i], xs[j]) && atMost(xs[j], xs[i]);
            beaten = asGood && (!equal || j < i);
        }
        if (!beaten) kept.push_back(xs[i]);
    }
    Expr out = kept[0];
    for (size_t i = 1; i < kept.size(); ++i) out = binary(least ? BinaryOp::Min : BinaryOp::Max, out, kept[i]);
    return out;
}

class Splitter : public IRMutator {
  public:
    using IRMutator::visit;
    Splitter(const Kernel &k, const LoweringOptions &options, const SourceManager *sources)
        : k_(k), options_(options), sources_(sources), ranges_(kernelRanges(k)) {}

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
        // A loop holding a split one is not split again (at most three copies of any body).
        const bool outer = splitBelow_;
        splitBelow_ = false;
        Stmt st = IRMutator::visit(op);
        auto f = std::dynamic_pointer_cast<const For>(st);
        Stmt split = f && f->forKind == ForKind::Serial && f->var && !splitBelow_ ? splitLoop(*f) : nullptr;
        splitBelow_ = outer || splitBelow_ || split;
        return split ? split : st;
    }

  private:
    Stmt splitLoop(const For &f) {
        LoopScope s;
        s.loopVar = f.var.get();
        s.tx = k_.threadIdx.get();
        s.inner = loopVars(f.body);
        s.invariant = loopInvariantBuffers(f, k_.body);
        const Expr lo = f.min, hi = simplify(binary(BinaryOp::Add, f.min, f.extent));
        for (const Expr &bound : {lo, hi})
            if (callsAnything(bound) || (readsMemory(bound) && !readsOnly(bound, s.invariant))) return nullptr;
        Sider collect(s, ranges_, lo, hi, true);
        collect.mutate(f.body);
        if (collect.found.empty()) return nullptr;
        // The interior [from, to): every comparison on its side.
        std::vector<Expr> froms, tos;
        for (auto &c : collect.found) (c.low ? tos : froms).push_back(c.point);
        Expr from = froms.empty() ? nullptr : extremum(froms, false);
        Expr to = tos.empty() ? nullptr : extremum(tos, true);
        if ((from && atMost(hi, from)) || (to && atMost(to, lo)) || (from && to && atMost(to, from))) return nullptr;
        if (from && atMost(from, lo)) from = nullptr;
        if (to && atMost(hi, to)) to = nullptr;
        if (!from && !to) {
            // The whole loop is interior.
            Stmt body = Sider(s, ranges_, lo, hi, false).mutate(f.body);
            remark(sources_, f.loc, "loop over `" + f.var->name + "`: " + std::to_string(collect.found.size()) +
                                        " element-wise condition(s) on it constant over the tile at every iteration");
            return For::make(f.var, f.min, f.extent, f.forKind, f.numStages, body, f.loc);
        }
        const DType t = f.var->dtype;
        // lo <= s1 <= s2 <= hi where lo <= hi; every loop empty (or negative) where lo > hi.
        Expr s1 = from ? cast(t, extremum({lo, extremum({from, hi}, true)}, false)) : lo;
        Expr s2 = to ? cast(t, extremum({s1, extremum({to, hi}, true)}, false)) : hi;
        // The copies pay where the interior drops a test a thread makes more than once an iteration (a mask over its
        // fragment's elements), or where they cost nothing: split points that are constants leave every copy a
        // constant trip count, the original's unrolled iterations partitioned at compile time (a ring fed ahead's
        // `i + 2 < n` prefetch, its bounds predicate gone from the first iterations). Tests made once an iteration
        // (the thread index against a bound) at run-time points save one comparison an iteration and cost the
        // copies, their run-time trip counts (unrolling) and registers (fp8_lighting_indexer's clean_logits_, 48
        // registers against TileLang's 32 unsplit, 0.74x TileLang).
        const bool perElement = std::any_of(collect.found.begin(), collect.found.end(),
                                            [](const Choice &c) { return c.perElement; });
        auto constantTrip = [](const Expr &a, const Expr &b) {
            return constValue(simplify(binary(BinaryOp::Sub, b, a))).has_value();
        };
        if (!perElement && options_.perElementSplits &&
            !((!from || constantTrip(lo, s1)) && constantTrip(s1, s2) && (!to || constantTrip(s2, hi)))) {
            remark(sources_, f.loc, "loop over `" + f.var->name + "` not split: its element-wise condition(s) are " +
                                        "tested once an iteration by each thread, at run-time split points");
            return nullptr;
        }
        std::vector<Stmt> loops;
        auto loop = [&](const Expr &a, const Expr &b, bool interior) {
            Stmt body = f.body;
            Var v = f.var;
            if (interior) {
                body = Sider(s, ranges_, lo, hi, false).mutate(f.body);
                v = makeVar(f.var->name, f.var->dtype, f.var->loc);
                body = substitute(body, VarMap{{f.var.get(), v}});
            }
            loops.push_back(
                For::make(v, a, simplify(binary(BinaryOp::Sub, b, a)), f.forKind, f.numStages, body, f.loc));
        };
        if (from) loop(lo, s1, false);
        loop(s1, s2, true);
        if (to) loop(s2, hi, false);
        remark(sources_, f.loc, "loop over `" + f.var->name + "` split: " + std::to_string(collect.found.size()) +
                                    " element-wise condition(s) on it constant over the tile in iterations [" +
                                    print(s1) + ", " + print(s2) + "), kept in the rest");
        return Seq::make(loops, f.loc);
    }

    const Kernel &k_;
    const LoweringOptions &options_;
    const SourceManager *sources_;
    RangeMap ranges_;
    bool splitBelow_ = false; ///< a loop split inside the statement being visited
};

} // namespace

Program splitUniformConditions(const Program &p, const LoweringOptions &options, const SourceManager *sources) {
    Program out;
    for (auto &k : p.kernels) {
        Splitter s(*k, options, sources);
        out.kernels.push_back(s.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
