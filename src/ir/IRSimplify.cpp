/// \file
/// The linear simplifier of IROperator.h: integer expressions become sums of constant multiples of
/// non-constant terms plus a constant, so `(by + 1) * 128 - by * 128` is 128 and index arithmetic written
/// two ways compares equal.
///
/// Terms keep the order in which they first appear (deterministic and close to what the user wrote).
/// Anything the linear form cannot express (products of two variables, divisions that do not distribute)
/// is an opaque term whose operands are simplified recursively.
#include "tilec/IROperator.h"

#include <unordered_map>

namespace tilec::ir {

namespace {

/// Structural equality: variables and buffers by identity, everything else by value.
bool same(const Expr &a, const Expr &b, int depth = 0) {
    if (a == b) return true;
    if (depth > 2000) return false; // conservative on pathological depth
    if (!a || !b || a->kind != b->kind || !(a->dtype == b->dtype)) return false;
    switch (a->kind) {
    case NodeKind::IntImm: return as<IntImm>(a)->value == as<IntImm>(b)->value;
    case NodeKind::FloatImm: {
        double x = as<FloatImm>(a)->value, y = as<FloatImm>(b)->value;
        return x == y || (x != x && y != y);
    }
    case NodeKind::Var: return false; // identity only, checked above
    case NodeKind::Binary: {
        auto x = as<Binary>(a), y = as<Binary>(b);
        return x->op == y->op && same(x->a, y->a, depth + 1) && same(x->b, y->b, depth + 1);
    }
    case NodeKind::Unary: {
        auto x = as<Unary>(a), y = as<Unary>(b);
        return x->op == y->op && same(x->a, y->a, depth + 1);
    }
    case NodeKind::Select: {
        auto x = as<Select>(a), y = as<Select>(b);
        return same(x->cond, y->cond, depth + 1) && same(x->t, y->t, depth + 1) && same(x->f, y->f, depth + 1);
    }
    case NodeKind::Cast: return same(as<Cast>(a)->value, as<Cast>(b)->value, depth + 1);
    case NodeKind::Call: {
        auto x = as<Call>(a), y = as<Call>(b);
        if (x->name != y->name || x->args.size() != y->args.size()) return false;
        for (size_t i = 0; i < x->args.size(); ++i)
            if (!same(x->args[i], y->args[i], depth + 1)) return false;
        return true;
    }
    case NodeKind::Load: {
        auto x = as<Load>(a), y = as<Load>(b);
        if (x->buffer != y->buffer || x->indices.size() != y->indices.size()) return false;
        for (size_t i = 0; i < x->indices.size(); ++i)
            if (!same(x->indices[i], y->indices[i], depth + 1)) return false;
        return true;
    }
    default: return false;
    }
}

/// sum(coef * term) + constant, all of one integer type.
struct Linear {
    std::vector<std::pair<Expr, int64_t>> terms;
    int64_t c = 0;
    bool ok = true; ///< false after a coefficient overflowed: the caller keeps the original form
    bool isConst() const {
        for (auto &t : terms)
            if (t.second != 0) return false;
        return true;
    }
};

void addTerm(Linear &l, const Expr &t, int64_t k) {
    for (auto &p : l.terms) {
        if (same(p.first, t)) {
            if (__builtin_add_overflow(p.second, k, &p.second)) l.ok = false;
            return;
        }
    }
    l.terms.push_back({t, k});
}

void addScaled(Linear &into, const Linear &l, int64_t k) {
    if (!l.ok) into.ok = false;
    for (auto &p : l.terms) {
        int64_t m;
        if (__builtin_mul_overflow(p.second, k, &m)) into.ok = false;
        else addTerm(into, p.first, m);
    }
    int64_t m;
    if (__builtin_mul_overflow(l.c, k, &m) || __builtin_add_overflow(into.c, m, &into.c)) into.ok = false;
}

bool representable(const Linear &l, DType t);

struct DepthGuard {
    int &d;
    explicit DepthGuard(int &d) : d(d) { ++d; }
    ~DepthGuard() { --d; }
};
constexpr int kMaxDepth = 2000;

class Simplifier {
  public:
    Expr simp(const Expr &e);
    Linear lin(const Expr &e);
    Expr build(const Linear &l, DType t, SourceRange loc);

  private:
    Expr atomOf(const Expr &e);
    Expr atomUncached(const Expr &e);
    Expr decide(const Binary *b);
    /// Results by node, so shared and already simplified subexpressions are not simplified again (without
    /// it, min/max chains would take exponential time). The entries keep their keys alive: an address is
    /// never reused by another node while the simplifier runs.
    using Cache = std::unordered_map<const ExprNode *, std::pair<Expr, Expr>>;
    Cache simpCache_, atomCache_;
    static Expr remember(Cache &c, const Expr &key, Expr r) {
        c[key.get()] = {key, r};
        if (r != key) c[r.get()] = {r, r};
        return r;
    }
    int depth_ = 0;
};

bool isLinearInt(const Expr &e) { return e->dtype.isInt(); }

/// Floor division/modulo distribute over the linear form when every variable coefficient is a multiple of
/// the divisor: (d*k*x + c) // d == k*x + c // d for every integer x.
bool divisible(const Linear &l, int64_t d) {
    for (auto &t : l.terms)
        if (t.second % d != 0) return false;
    return true;
}

Linear Simplifier::lin(const Expr &e) {
    Linear l;
    if (auto i = as<IntImm>(e)) {
        l.c = i->value;
        return l;
    }
    // Expressions are built with bounded depth by the evaluator; this guards hand-made IR.
    if (depth_ > kMaxDepth) {
        addTerm(l, e, 1);
        return l;
    }
    DepthGuard guard(depth_);
    if (auto u = as<Unary>(e); u && u->op == UnaryOp::Neg && isLinearInt(u->a)) {
        addScaled(l, lin(u->a), -1);
        return l;
    }
    if (auto b = as<Binary>(e); b && b->a->dtype == e->dtype && b->b->dtype == e->dtype) {
        switch (b->op) {
        case BinaryOp::Add:
        case BinaryOp::Sub:
            addScaled(l, lin(b->a), 1);
            addScaled(l, lin(b->b), b->op == BinaryOp::Add ? 1 : -1);
            return l;
        case BinaryOp::Mul: {
            Linear x = lin(b->a), y = lin(b->b);
            if (x.ok && y.ok && y.isConst()) {
                addScaled(l, x, y.c);
                return l;
            }
            if (x.ok && y.ok && x.isConst()) {
                addScaled(l, y, x.c);
                return l;
            }
            if (representable(x, e->dtype) && representable(y, e->dtype)) {
                addTerm(l, Binary::make(BinaryOp::Mul, build(x, e->dtype, b->a->loc), build(y, e->dtype, b->b->loc),
                                        e->loc),
                        1);
                return l;
            }
            break;
        }
        case BinaryOp::FloorDiv:
        case BinaryOp::FloorMod: {
            Linear x = lin(b->a), y = lin(b->b);
            if (x.ok && y.ok && y.isConst() && y.c > 0) {
                int64_t d = y.c;
                if (divisible(x, d)) {
                    if (b->op == BinaryOp::FloorMod) {
                        int64_t r = x.c % d;
                        l.c = r < 0 ? r + d : r;
                        return l;
                    }
                    for (auto &t : x.terms)
                        if (t.second != 0) addTerm(l, t.first, t.second / d);
                    int64_t q = x.c / d;
                    if (x.c % d != 0 && x.c < 0) --q;
                    l.c = q;
                    return l;
                }
            }
            break;
        }
        case BinaryOp::Div: {
            // C division is exact, whatever the signs, when the divisor divides every coefficient and the
            // constant: (d*k*x + d*m) / d == k*x + m (signed types: their overflow is undefined, unsigned wraps).
            Linear x = lin(b->a), y = lin(b->b);
            if (e->dtype.isSigned() && x.ok && y.ok && y.isConst() && y.c > 0 && divisible(x, y.c) &&
                x.c % y.c == 0) {
                for (auto &t : x.terms)
                    if (t.second != 0) addTerm(l, t.first, t.second / y.c);
                l.c = x.c / y.c;
                return l;
            }
            break;
        }
        default: break;
        }
    }
    Expr s = atomOf(e);
    if (auto i = as<IntImm>(s)) l.c = i->value;
    else addTerm(l, s, 1);
    return l;
}

Expr Simplifier::atomOf(const Expr &e) {
    if (auto it = atomCache_.find(e.get()); it != atomCache_.end()) return it->second.second;
    return remember(atomCache_, e, atomUncached(e));
}

/// A term of a linear form: the expression with its operands simplified, folded where constant.
Expr Simplifier::atomUncached(const Expr &e) {
    if (auto b = as<Binary>(e)) {
        if (Expr d = decide(b)) return d;
        Expr x = simp(b->a), y = simp(b->b);
        if (x == b->a && y == b->b) {
            // binary() may still fold or apply an identity the original construction skipped.
            Expr r = binary(b->op, x, y, e->loc);
            return same(r, e) ? e : r;
        }
        return binary(b->op, x, y, e->loc);
    }
    if (auto u = as<Unary>(e)) {
        Expr x = simp(u->a);
        return x == u->a ? e : unary(u->op, x, e->loc);
    }
    if (auto s = as<Select>(e)) {
        Expr c = simp(s->cond), t = simp(s->t), f = simp(s->f);
        if (auto k = constInt(c)) return *k ? t : f;
        return (c == s->cond && t == s->t && f == s->f) ? e : select(c, t, f, e->loc);
    }
    if (auto c = as<Cast>(e)) {
        Expr x = simp(c->value);
        return x == c->value ? e : cast(e->dtype, x, e->loc);
    }
    if (auto c = as<Call>(e)) {
        std::vector<Expr> args;
        bool changed = false;
        for (auto &a : c->args) {
            args.push_back(simp(a));
            changed |= args.back() != a;
        }
        return changed ? Call::make(e->dtype, c->name, std::move(args), e->loc) : e;
    }
    if (auto l = as<Load>(e)) {
        std::vector<Expr> idx;
        bool changed = false;
        for (auto &a : l->indices) {
            idx.push_back(simp(a));
            changed |= idx.back() != a;
        }
        return changed ? Load::make(l->buffer, std::move(idx), e->loc) : e;
    }
    return e;
}


/// Comparisons and min/max of integers are decided when the difference of the operands is constant.
Expr Simplifier::decide(const Binary *b) {
    if (!b->a->dtype.isInt() || !(b->a->dtype == b->b->dtype)) return nullptr;
    bool cmp = isComparison(b->op), mm = b->op == BinaryOp::Min || b->op == BinaryOp::Max;
    if (!cmp && !mm) return nullptr;
    Linear d;
    addScaled(d, lin(b->a), 1);
    addScaled(d, lin(b->b), -1);
    if (!d.ok || !d.isConst()) return nullptr;
    if (mm) return simp((d.c <= 0) == (b->op == BinaryOp::Min) ? b->a : b->b);
    bool r = false;
    switch (b->op) {
    case BinaryOp::EQ: r = d.c == 0; break;
    case BinaryOp::NE: r = d.c != 0; break;
    case BinaryOp::LT: r = d.c < 0; break;
    case BinaryOp::LE: r = d.c <= 0; break;
    case BinaryOp::GT: r = d.c > 0; break;
    case BinaryOp::GE: r = d.c >= 0; break;
    default: break;
    }
    return boolImm(r, b->loc);
}

Expr Simplifier::build(const Linear &l, DType t, SourceRange loc) {
    Expr sum;
    for (auto &[term, k] : l.terms) {
        if (k == 0) continue;
        int64_t mag = k < 0 ? -k : k;
        Expr scaled = mag == 1 ? term : Binary::make(BinaryOp::Mul, term, intImm(mag, t, loc), loc);
        if (!sum) sum = k < 0 ? Unary::make(UnaryOp::Neg, scaled, loc) : scaled;
        else sum = Binary::make(k < 0 ? BinaryOp::Sub : BinaryOp::Add, sum, scaled, loc);
    }
    if (!sum) return intImm(l.c, t, loc);
    if (l.c > 0) sum = Binary::make(BinaryOp::Add, sum, intImm(l.c, t, loc), loc);
    else if (l.c < 0) sum = Binary::make(BinaryOp::Sub, sum, intImm(-l.c, t, loc), loc);
    return sum;
}

bool representable(const Linear &l, DType t) {
    if (!l.ok || !t.holds(l.c)) return false;
    for (auto &[term, k] : l.terms)
        if (k == INT64_MIN || !t.holds(k < 0 ? -k : k) || !(term->dtype == t)) return false;
    return true;
}

Expr Simplifier::simp(const Expr &e) {
    if (!e) return e;
    if (depth_ > kMaxDepth) return e;
    if (auto it = simpCache_.find(e.get()); it != simpCache_.end()) return it->second.second;
    DepthGuard guard(depth_);

    if (isLinearInt(e)) {
        Linear l = lin(e);
        if (representable(l, e->dtype)) {
            Expr r = build(l, e->dtype, e->loc);
            return remember(simpCache_, e, same(r, e) ? e : r);
        }
    }
    return remember(simpCache_, e, atomOf(e));
}

} // namespace

Expr simplify(const Expr &e) {
    Simplifier s;
    return s.simp(e);
}

bool provablyEqual(const Expr &a, const Expr &b) {
    if (!a || !b) return a == b;
    Simplifier s;
    if (a->dtype.isInt() && b->dtype.isInt()) {
        Linear d;
        addScaled(d, s.lin(a), 1);
        addScaled(d, s.lin(b), -1);
        if (d.ok && d.isConst()) return d.c == 0;
    }
    return same(s.simp(a), s.simp(b));
}

std::optional<int64_t> constValue(const Expr &e) {
    if (!e) return std::nullopt;
    if (auto i = as<IntImm>(e)) return i->value;
    Simplifier s;
    return constInt(s.simp(e));
}

bool structurallyEqual(const Expr &a, const Expr &b) { return same(a, b); }

bool provablyEqual(const std::vector<Expr> &a, const std::vector<Expr> &b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!provablyEqual(a[i], b[i])) return false;
    return true;
}

} // namespace tilec::ir
