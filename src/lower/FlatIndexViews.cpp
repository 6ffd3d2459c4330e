/// \file
/// Row-major equivalence of a fragment access and a nest's iteration (src/lower/FlatIndexViews.h), by the affine
/// forms of both over the nest's variables.
#include "FlatIndexViews.h"

#include <map>
#include <optional>

namespace tilec::passes {

using namespace ir;

namespace {

/// c0 + sum of coef[v] * v.
struct Affine {
    int64_t c0 = 0;
    std::map<const VarNode *, int64_t> coef;

    Affine &add(const Affine &o, int64_t scale) {
        c0 += o.c0 * scale;
        for (auto &[v, c] : o.coef)
            if ((coef[v] += c * scale) == 0) coef.erase(v);
        return *this;
    }
};

using Extents = std::map<const VarNode *, int64_t>;

std::optional<Affine> affine(const Expr &e, const Extents &extentOf);

/// x // c or x % c (c > 0) of an affine x over variables in [0, extent): q + r with q the terms (and the part of
/// the constant) that are multiples of c and r in [0, c) for every iteration, so that x // c = q / c and x % c = r
/// (`(i * 64 + g * 8 + h) // 64` is i over g < 8, h < 8: a T.reshape view's element of its base); none otherwise.
std::optional<Affine> divMod(const Affine &x, int64_t c, bool div, const Extents &extentOf) {
    if (c <= 0) return std::nullopt;
    Affine q, r;
    r.c0 = ((x.c0 % c) + c) % c;
    q.c0 = x.c0 - r.c0;
    int64_t lo = r.c0, hi = r.c0;
    for (auto &[v, k] : x.coef) {
        if (k % c == 0) {
            q.coef[v] = k;
            continue;
        }
        auto ext = extentOf.find(v);
        if (ext == extentOf.end()) return std::nullopt;
        r.coef[v] = k;
        (k > 0 ? hi : lo) += k * (ext->second - 1);
    }
    if (lo < 0 || hi >= c) return std::nullopt;
    if (!div) return r;
    q.c0 /= c;
    for (auto &[v, k] : q.coef) k /= c;
    return q;
}

std::optional<Affine> affine(const Expr &e, const Extents &extentOf) {
    Affine out;
    if (auto i = as<IntImm>(e)) {
        out.c0 = i->value;
        return out;
    }
    if (auto v = as<VarNode>(e)) {
        out.coef[v] = 1;
        return out;
    }
    auto b = as<Binary>(e);
    if (!b) return std::nullopt;
    auto x = affine(b->a, extentOf), y = affine(b->b, extentOf);
    if (!x || !y) return std::nullopt;
    switch (b->op) {
    case BinaryOp::Add: return x->add(*y, 1);
    case BinaryOp::Sub: return x->add(*y, -1);
    case BinaryOp::Mul:
        if (y->coef.empty()) return Affine{}.add(*x, y->c0);
        if (x->coef.empty()) return Affine{}.add(*y, x->c0);
        return std::nullopt;
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod:
        if (!y->coef.empty()) return std::nullopt;
        return divMod(*x, y->c0, b->op == BinaryOp::FloorDiv, extentOf);
    default: return std::nullopt;
    }
}

} // namespace

bool flatEquivalent(const std::vector<Expr> &indices, const std::vector<int64_t> &shape, const std::vector<Var> &vars,
                    const std::vector<int64_t> &extents) {
    if (indices.size() != shape.size() || vars.size() != extents.size()) return false;
    bool same = indices.size() == vars.size();
    for (size_t d = 0; same && d < indices.size(); ++d) same = indices[d] == Expr(vars[d]) && shape[d] == extents[d];
    if (same) return false;
    Extents extentOf;
    for (size_t v = 0; v < vars.size(); ++v) extentOf[vars[v].get()] = extents[v];
    Affine flat, iter;
    int64_t stride = 1;
    for (size_t d = indices.size(); d-- > 0;) {
        auto a = affine(indices[d], extentOf);
        if (!a) return false;
        // Inside its dimension for every iteration.
        int64_t lo = a->c0, hi = a->c0;
        for (auto &[v, c] : a->coef) {
            auto e = extentOf.find(v);
            if (e == extentOf.end()) return false; // a variable from outside the nest
            (c > 0 ? hi : lo) += c * (e->second - 1);
        }
        if (lo < 0 || hi >= shape[d]) return false;
        flat.add(*a, stride);
        stride *= shape[d];
    }
    int64_t n = 1;
    for (size_t v = vars.size(); v-- > 0;) {
        Affine x;
        if (extents[v] > 1) x.coef[vars[v].get()] = 1; // a variable of extent 1 is 0
        iter.add(x, n);
        n *= extents[v];
    }
    for (auto it = flat.coef.begin(); it != flat.coef.end();) // likewise in the access
        it = extentOf.at(it->first) == 1 ? flat.coef.erase(it) : std::next(it);
    return n == stride && flat.c0 == iter.c0 && flat.coef == iter.coef;
}

} // namespace tilec::passes
