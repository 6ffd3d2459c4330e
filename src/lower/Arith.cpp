/// \file
/// Interval and divisibility analysis of integer index expressions, linear forms, substitution and
/// numeric evaluation (include/tilec/passes/Arith.h). Every routine is conservative: when in doubt it
/// answers "unknown", never a wrong fact, because the passes drop bounds checks and pick vector widths on
/// these answers.
#include "tilec/passes/Arith.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace tilec::passes {

using namespace ir;

namespace {

/// Interval arithmetic over the value type V (int64_t for the passes' facts, __int128 for the exact ranges of
/// index expressions, whose point is to see values past 64 bits); an end that overflows V is unknown.
template <class V> using OptT = std::optional<V>;

template <class V> OptT<V> add(OptT<V> a, OptT<V> b) {
    V r;
    if (!a || !b || __builtin_add_overflow(*a, *b, &r)) return std::nullopt;
    return r;
}
template <class V> OptT<V> sub(OptT<V> a, OptT<V> b) {
    V r;
    if (!a || !b || __builtin_sub_overflow(*a, *b, &r)) return std::nullopt;
    return r;
}
template <class V> OptT<V> mul(OptT<V> a, OptT<V> b) {
    V r;
    if (!a || !b || __builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
    return r;
}

/// Python's floor division and modulo (b != 0).
template <class V> V floorDiv(V a, V b) {
    V q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
template <class V> V floorMod(V a, V b) { return a - floorDiv(a, b) * b; }

/// The product interval of two intervals: the extremes of the four corner products, when all are known.
template <class IV> IV mulIntervals(const IV &a, const IV &b) {
    using V = typename IV::value_type;
    if (!a.lo || !a.hi || !b.lo || !b.hi) {
        // One common special case stays precise: a non-negative range times a non-negative constant.
        if (b.lo && b.hi && *b.lo == *b.hi && *b.lo >= 0 && a.nonNegative()) return {mul<V>(a.lo, b.lo), mul<V>(a.hi, b.hi)};
        if (a.lo && a.hi && *a.lo == *a.hi && *a.lo >= 0 && b.nonNegative()) return {mul<V>(a.lo, b.lo), mul<V>(a.hi, b.hi)};
        if (a.nonNegative() && b.nonNegative()) return {mul<V>(a.lo, b.lo), std::nullopt};
        return {};
    }
    OptT<V> c[4] = {mul<V>(a.lo, b.lo), mul<V>(a.lo, b.hi), mul<V>(a.hi, b.lo), mul<V>(a.hi, b.hi)};
    for (auto &x : c)
        if (!x) return {};
    return {std::min({*c[0], *c[1], *c[2], *c[3]}), std::max({*c[0], *c[1], *c[2], *c[3]})};
}

using Opt = OptT<int64_t>;

template <class IV> class Bounds {
    using V = typename IV::value_type;
    using Opt = OptT<V>;

  public:
    /// typed: every signed operation narrower than 64 bits holds a value of its type (see addTypedLoopRange).
    explicit Bounds(const RangeMap &r, bool typed = false) : ranges_(r), typed_(typed) {}

    IV of(const Expr &e) {
        if (!e || ++depth_ > kMaxIRDepth) return {};
        IV r = compute(e);
        --depth_;
        return r;
    }

  private:
    const RangeMap &ranges_;
    bool typed_;
    int depth_ = 0;

    static IV point(V v) { return {v, v}; }
    static IV range(V lo, V hi) { return {lo, hi}; }

    IV typeRange(DType t) {
        if (t.isBool()) return range(0, 1);
        if (!t.isInt() || t.bits() >= 64) return t.isInt() && !t.isSigned() ? IV{V(0), std::nullopt} : IV{};
        if (t.isSigned()) return range(-(V(1) << (t.bits() - 1)), (V(1) << (t.bits() - 1)) - 1);
        return range(0, (V(1) << t.bits()) - 1);
    }

    IV compute(const Expr &e) {
        if (auto i = as<IntImm>(e)) return point(i->value);
        if (auto v = as<VarNode>(e)) {
            auto it = ranges_.find(v);
            if (it == ranges_.end()) return typeRange(e->dtype);
            return {it->second.lo ? Opt(*it->second.lo) : std::nullopt, it->second.hi ? Opt(*it->second.hi) : std::nullopt};
        }
        if (auto c = as<Cast>(e)) {
            if (!c->dtype.isInt() || !c->value->dtype.isInt()) return typeRange(c->dtype);
            IV in = of(c->value), t = typeRange(c->dtype);
            // A widening (or value-preserving) cast keeps the range; anything else may wrap.
            if (in.lo && in.hi && t.lo && t.hi && *in.lo >= *t.lo && *in.hi <= *t.hi) return in;
            if (in.lo && in.hi && c->dtype.bits() >= 64 && c->dtype.isSigned()) return in;
            return t;
        }
        if (auto s = as<Select>(e)) {
            IV a = of(s->t), b = of(s->f);
            IV r;
            if (a.lo && b.lo) r.lo = std::min(*a.lo, *b.lo);
            if (a.hi && b.hi) r.hi = std::max(*a.hi, *b.hi);
            return r;
        }
        if (auto u = as<Unary>(e); u && u->op == UnaryOp::Neg && e->dtype.isInt()) {
            IV a = of(u->a);
            return {sub<V>(V(0), a.hi), sub<V>(V(0), a.lo)};
        }
        if (auto c = as<Call>(e); c && lib::is(*c, lib::Fn::RoleThread)) { // its role's threads
            auto first = constInt(lib::arg(*c, lib::Fn::RoleThread, "first"));
            auto count = constInt(lib::arg(*c, lib::Fn::RoleThread, "count"));
            if (first && count) return range(V(*first), V(*first + *count - 1));
        }
        auto b = as<Binary>(e);
        // Anything else (a load, a call) holds some value of its type.
        if (!b || !e->dtype.isInt()) return e->dtype.isBool() || e->dtype.isInt() ? typeRange(e->dtype) : IV{};
        IV r = binary(b->op, of(b->a), of(b->b), e->dtype);
        if (typed_ && e->dtype.isSigned() && e->dtype.bits() < 64) r = clampTo(r, typeRange(e->dtype));
        // x % d of an x known to be a multiple of m is one too, so at most d - gcd(m, d): `tx * 4 % 64` is at
        // most 60, and a vector's lanes added to it stay inside a row of 64.
        if (auto d = b->op == BinaryOp::FloorMod ? constInt(b->b) : std::nullopt; d && *d > 0 && r.hi) {
            const int64_t top = *d - gcd64(knownMultiple(b->a), *d);
            if (*r.hi > V(top) && (!r.lo || *r.lo <= V(top))) r.hi = V(top);
        }
        return r;
    }

    /// r narrowed to t's range (a missing end becomes t's).
    static IV clampTo(const IV &r, const IV &t) {
        IV c = r;
        if (!c.lo || *c.lo < *t.lo) c.lo = t.lo;
        if (!c.hi || *c.hi > *t.hi) c.hi = t.hi;
        if (*c.lo > *c.hi) return t; // r lies wholly past the type: that value is undefined, any will do
        return c;
    }

    IV binary(BinaryOp op, const IV &x, const IV &y, DType t) {
        switch (op) {
        case BinaryOp::Add: return {add<V>(x.lo, y.lo), add<V>(x.hi, y.hi)};
        case BinaryOp::Sub: return {sub<V>(x.lo, y.hi), sub<V>(x.hi, y.lo)};
        case BinaryOp::Mul: return mulIntervals(x, y);
        case BinaryOp::Min: {
            IV r;
            if (x.lo && y.lo) r.lo = std::min(*x.lo, *y.lo);
            r.hi = x.hi && y.hi ? std::min(*x.hi, *y.hi) : x.hi ? x.hi : y.hi;
            return r;
        }
        case BinaryOp::Max: {
            IV r;
            if (x.hi && y.hi) r.hi = std::max(*x.hi, *y.hi);
            r.lo = x.lo && y.lo ? std::max(*x.lo, *y.lo) : x.lo ? x.lo : y.lo;
            return r;
        }
        case BinaryOp::Div:
        case BinaryOp::FloorDiv: {
            // Division by a positive constant is monotone.
            if (!(y.lo && y.hi && *y.lo == *y.hi && *y.lo > 0)) return {};
            V d = *y.lo;
            IV r;
            bool floor = op == BinaryOp::FloorDiv || x.nonNegative();
            if (x.lo) r.lo = floor ? floorDiv(*x.lo, d) : *x.lo / d;
            if (x.hi) r.hi = floor ? floorDiv(*x.hi, d) : *x.hi / d;
            return r;
        }
        case BinaryOp::FloorMod: {
            if (!(y.lo && y.hi && *y.lo == *y.hi && *y.lo > 0)) return {};
            V d = *y.lo;
            // A range that stays inside one period keeps its shape.
            if (x.lo && x.hi && floorDiv(*x.lo, d) == floorDiv(*x.hi, d))
                return range(floorMod(*x.lo, d), floorMod(*x.hi, d));
            return range(0, d - 1);
        }
        case BinaryOp::BitAnd:
            if (x.nonNegative() && y.nonNegative()) {
                IV r = range(0, 0);
                r.hi = x.hi && y.hi ? Opt(std::min(*x.hi, *y.hi)) : x.hi ? x.hi : y.hi;
                return r;
            }
            return {};
        case BinaryOp::Shr:
            if (x.nonNegative() && y.lo && y.hi && *y.lo == *y.hi && *y.lo >= 0 && *y.lo < 63)
                return {*x.lo >> (int)*y.lo, x.hi ? Opt(*x.hi >> (int)*y.lo) : std::nullopt};
            return {};
        default: return typeRange(t);
        }
    }
};

class Substitute : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Substitute(const VarMap &m) : map_(m) {}
    Expr visit(const Var &op) override {
        auto it = map_.find(op.get());
        return it != map_.end() ? it->second : op;
    }

  private:
    const VarMap &map_;
};

class SimplifyIndices : public IRMutator {
  public:
    using IRMutator::visit;
    Expr visit(const std::shared_ptr<const Load> &op) override {
        Expr e = IRMutator::visit(op);
        auto l = as<Load>(e);
        std::vector<Expr> idx;
        bool changed = false;
        for (auto &i : l->indices) {
            idx.push_back(simplify(i));
            changed |= idx.back() != i;
        }
        return changed ? Load::make(l->buffer, idx, l->loc) : e;
    }
    Stmt visit(const std::shared_ptr<const Store> &op) override {
        Stmt s = IRMutator::visit(op);
        auto st = as<Store>(s);
        std::vector<Expr> idx;
        bool changed = false;
        for (auto &i : st->indices) {
            idx.push_back(simplify(i));
            changed |= idx.back() != i;
        }
        return changed ? Store::make(st->buffer, idx, st->value, st->loc) : s;
    }
};

} // namespace

Stmt simplifyIndices(const Stmt &s) {
    SimplifyIndices m;
    return m.mutate(s);
}

int64_t gcd64(int64_t a, int64_t b) {
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

RangeMap kernelRanges(const Kernel &k) {
    RangeMap r;
    // A T.dynamic size may be 0 (an empty tensor): no access is provably inside it.
    for (auto &s : k.dynamicSymbols)
        if (s) r[s.get()] = Interval::of(0, std::numeric_limits<int32_t>::max());
    Bounds<Interval> b(r);
    // CUDA launches at most 2^31 - 1 blocks along x and 65535 along y and z (the launcher refuses larger grids,
    // TILEC_ERROR_GRID_TOO_LARGE): a block index of a grid sized at run time is below that even where the size is
    // not (`bz * 128` of a T.dynamic grid fits a 32-bit sum).
    for (int d = 0; d < 3; ++d) {
        if (!k.blockIdx[d]) continue;
        const int64_t most = d == 0 ? std::numeric_limits<int32_t>::max() : 65535;
        Interval g = b.of(k.grid[d]);
        r[k.blockIdx[d].get()] = Interval{0, std::min(g.hi ? *g.hi : most, most) - 1};
    }
    if (k.threadIdx) r[k.threadIdx.get()] = Interval::of(0, k.threads - 1);
    return r;
}

namespace {
void loopRange(RangeMap &ranges, const For &loop, bool typed) {
    if (!loop.var) return;
    Bounds<Interval> b(ranges, typed);
    Interval m = b.of(loop.min), x = b.of(loop.extent);
    Interval r;
    r.lo = m.lo;
    if (m.hi && x.hi) r.hi = sub(add(m.hi, x.hi), Opt(1));
    // The end min + extent bounded as one expression: a loop split at run-time points starts at `s` and runs
    // `hi - s'` times where s and s' are one value written two ways, which the simplified sum cancels (the
    // causal backward's `for k in [max(by*64//32, ...), ... + 128 - max(by*2, ...))` ends at 128, not at
    // max(s) + max(128 - s') - 1).
    Interval end = b.of(simplify(binary(BinaryOp::Add, loop.min, loop.extent)));
    if (Opt last = end.hi ? sub(end.hi, Opt(1)) : Opt(); last && (!r.lo || *last >= *r.lo))
        r.hi = r.hi ? Opt(std::min(*r.hi, *last)) : last;
    ranges[loop.var.get()] = r;
}
} // namespace

void addLoopRange(RangeMap &ranges, const For &loop) { loopRange(ranges, loop, false); }

void addTypedLoopRange(RangeMap &ranges, const For &loop) { loopRange(ranges, loop, true); }

Interval boundsOf(const Expr &e, const RangeMap &ranges) {
    Bounds<Interval> b(ranges);
    return b.of(e);
}

WideInterval exactBoundsOf(const Expr &e, const RangeMap &ranges) {
    Bounds<WideInterval> b(ranges);
    return b.of(e);
}

int64_t knownMultiple(const Expr &e) {
    struct M {
        int depth = 0;
        int64_t of(const Expr &e) {
            if (!e || ++depth > kMaxIRDepth) return 1;
            int64_t r = compute(e);
            --depth;
            return r;
        }
        /// A shared tile's swizzle (tilec::swz, swz_panels and their split forms: the physical offset of logical
        /// offset `offset`, or `runtime + fixed`) moves whole 16-byte chunks and XORs chunk bits only, so the
        /// physical offset keeps the logical one's residue modulo a chunk's elements (swizzle.cuh).
        int64_t swizzled(const Call &c) {
            const bool split = lib::is(c, lib::Fn::SwzSplit) || lib::is(c, lib::Fn::SwzPanelsSplit);
            if (!split && !lib::is(c, lib::Fn::Swz) && !lib::is(c, lib::Fn::SwzPanels)) return 1;
            const lib::Fn f = lib::find(c.name)->fn;
            if (c.args.size() != lib::info(f).args.size()) return 1;
            auto eb = as<IntImm>(lib::arg(c, f, "elemBytes"));
            if (!eb || eb->value <= 0 || 16 % eb->value != 0) return 1;
            int64_t logical = split ? gcd64(of(lib::arg(c, f, "runtime")), of(lib::arg(c, f, "fixed"))) : of(lib::arg(c, f, "offset"));
            return gcd64(logical, 16 / eb->value);
        }
        int64_t compute(const Expr &e) {
            if (auto i = as<IntImm>(e)) {
                if (i->value == 0) return 0;
                return i->value > -(int64_t(1) << 40) && i->value < (int64_t(1) << 40) ? std::llabs(i->value) : 1;
            }
            if (auto c = as<Cast>(e)) return c->dtype.isInt() && c->value->dtype.isInt() ? of(c->value) : 1;
            if (auto s = as<Select>(e)) return gcd64(of(s->t), of(s->f));
            if (auto c = as<Call>(e)) return swizzled(*c);
            // -x: a multiple of what x is (simplify writes `(1 - i % 2) * 1024` as `-(i % 2 * 1024) + 1024`)
            if (auto u = as<Unary>(e)) return u->op == UnaryOp::Neg && e->dtype.isInt() ? of(u->a) : 1;
            auto b = as<Binary>(e);
            if (!b || !e->dtype.isInt()) return 1;
            int64_t x = of(b->a), y = of(b->b);
            switch (b->op) {
            case BinaryOp::Add:
            case BinaryOp::Sub:
            case BinaryOp::Min:
            case BinaryOp::Max: return gcd64(x, y);
            case BinaryOp::Mul: {
                if (x == 0 || y == 0) return 0;
                int64_t r;
                // Past the cap, either factor alone still divides the product.
                return __builtin_mul_overflow(x, y, &r) || r > (int64_t(1) << 40) ? std::max(x, y) : r;
            }
            case BinaryOp::FloorMod: {
                auto d = as<IntImm>(b->b);
                return d && d->value > 0 ? gcd64(x, d->value) : 1;
            }
            case BinaryOp::FloorDiv:
            case BinaryOp::Div: {
                auto d = as<IntImm>(b->b);
                if (!d || d->value <= 0) return 1;
                if (x == 0) return 0;
                return x % d->value == 0 ? x / d->value : 1;
            }
            case BinaryOp::Shl: {
                auto d = as<IntImm>(b->b);
                return d && d->value >= 0 && d->value < 20 && x < (int64_t(1) << 20) ? x * (int64_t(1) << d->value) : x;
            }
            default: return 1;
            }
        }
    } m;
    return m.of(e);
}

std::optional<std::pair<Expr, int64_t>> linearIn(const Expr &e, const VarNode *v) {
    using R = std::optional<std::pair<Expr, int64_t>>;
    struct L {
        const VarNode *v;
        int depth = 0;
        static Expr plus(const Expr &a, const Expr &b, bool minus) {
            if (!b) return a;
            if (!a) return minus ? Binary::make(BinaryOp::Sub, IntImm::make(b->dtype, 0), b) : b;
            DType t = a->dtype.bits() >= b->dtype.bits() ? a->dtype : b->dtype;
            Expr x = a->dtype == t ? a : Cast::make(t, a), y = b->dtype == t ? b : Cast::make(t, b);
            return Binary::make(minus ? BinaryOp::Sub : BinaryOp::Add, x, y);
        }
        R of(const Expr &e) {
            if (!e || ++depth > kMaxIRDepth) return std::nullopt;
            R r = compute(e);
            --depth;
            return r;
        }
        R compute(const Expr &e) {
            if (!uses(e, v)) return std::make_pair(e, int64_t(0));
            if (e.get() == v) return std::make_pair(Expr(), int64_t(1));
            if (auto c = as<Cast>(e)) {
                if (!c->dtype.isInt() || !c->value->dtype.isInt() || c->dtype.bits() < c->value->dtype.bits())
                    return std::nullopt;
                auto in = of(c->value);
                if (!in) return std::nullopt;
                return std::make_pair(in->first ? Cast::make(c->dtype, in->first) : Expr(), in->second);
            }
            auto b = as<Binary>(e);
            if (!b) return std::nullopt;
            if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
                auto x = of(b->a), y = of(b->b);
                if (!x || !y) return std::nullopt;
                bool minus = b->op == BinaryOp::Sub;
                return std::make_pair(plus(x->first, y->first, minus), minus ? x->second - y->second : x->second + y->second);
            }
            if (b->op == BinaryOp::Mul) {
                auto k = as<IntImm>(b->b) ? as<IntImm>(b->b) : as<IntImm>(b->a);
                const Expr &other = as<IntImm>(b->b) ? b->a : b->b;
                if (!k || std::llabs(k->value) > (int64_t(1) << 32)) return std::nullopt;
                auto x = of(other);
                if (!x) return std::nullopt;
                Expr rest = x->first ? Binary::make(BinaryOp::Mul, x->first, IntImm::make(x->first->dtype, k->value)) : Expr();
                return std::make_pair(rest, x->second * k->value);
            }
            return std::nullopt;
        }
    } l{v};
    return l.of(e);
}

Expr substitute(const Expr &e, const VarMap &m) {
    if (m.empty()) return e;
    Substitute s(m);
    return s.mutate(e);
}

Stmt substitute(const Stmt &st, const VarMap &m) {
    if (m.empty()) return st;
    Substitute s(m);
    return s.mutate(st);
}

std::optional<int64_t> evalInt(const Expr &e, const std::map<const VarNode *, int64_t> &values) {
    struct E {
        const std::map<const VarNode *, int64_t> &values;
        int depth = 0;
        Opt of(const Expr &e) {
            if (!e || ++depth > kMaxIRDepth) return std::nullopt;
            Opt r = compute(e);
            --depth;
            return r;
        }
        Opt compute(const Expr &e) {
            if (auto i = as<IntImm>(e)) return i->value;
            if (auto v = as<VarNode>(e)) {
                auto it = values.find(v);
                return it != values.end() ? Opt(it->second) : std::nullopt;
            }
            if (auto c = as<Cast>(e)) return c->dtype.isInt() || c->dtype.isBool() ? of(c->value) : std::nullopt;
            if (auto s = as<Select>(e)) {
                Opt c = of(s->cond);
                if (!c) return std::nullopt;
                return *c ? of(s->t) : of(s->f);
            }
            if (auto u = as<Unary>(e)) {
                Opt a = of(u->a);
                if (!a) return std::nullopt;
                if (u->op == UnaryOp::Not) return !*a;
                if (u->op == UnaryOp::BitNot) return ~*a;
                return sub(Opt(0), a);
            }
            auto b = as<Binary>(e);
            if (!b) return std::nullopt;
            Opt x = of(b->a), y = of(b->b);
            if (!x || !y) return std::nullopt;
            switch (b->op) {
            case BinaryOp::Add: return add(x, y);
            case BinaryOp::Sub: return sub(x, y);
            case BinaryOp::Mul: return mul(x, y);
            case BinaryOp::Div: return *y == 0 || (*x == INT64_MIN && *y == -1) ? std::nullopt : Opt(*x / *y);
            case BinaryOp::FloorDiv: return *y == 0 || (*x == INT64_MIN && *y == -1) ? std::nullopt : Opt(floorDiv(*x, *y));
            case BinaryOp::FloorMod: return *y == 0 || (*x == INT64_MIN && *y == -1) ? std::nullopt : Opt(floorMod(*x, *y));
            case BinaryOp::Min: return std::min(*x, *y);
            case BinaryOp::Max: return std::max(*x, *y);
            case BinaryOp::And: return *x && *y;
            case BinaryOp::Or: return *x || *y;
            case BinaryOp::BitAnd: return *x & *y;
            case BinaryOp::BitOr: return *x | *y;
            case BinaryOp::BitXor: return *x ^ *y;
            case BinaryOp::Shl: return *y < 0 || *y > 62 ? std::nullopt : mul(x, Opt(int64_t(1) << *y));
            case BinaryOp::Shr: return *y < 0 || *y > 63 ? std::nullopt : Opt(*x >> *y);
            case BinaryOp::EQ: return *x == *y;
            case BinaryOp::NE: return *x != *y;
            case BinaryOp::LT: return *x < *y;
            case BinaryOp::LE: return *x <= *y;
            case BinaryOp::GT: return *x > *y;
            case BinaryOp::GE: return *x >= *y;
            default: return std::nullopt;
            }
        }
    } ev{values};
    return ev.of(e);
}

} // namespace tilec::passes
