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

std::optional<Affine> affine(const Expr &e) {
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
    auto x = affine(b->a), y = affine(b->b);
    if (!x || !y) return std::nullopt;
    switch (b->op) {
    case BinaryOp::Add: return x->add(*y, 1);
    case BinaryOp::Sub: return x->add(*y, -1);
    case BinaryOp::Mul:
        if (y->coef.empty()) return Affine{}.add(*x, y->c0);
        if (x->coef.empty()) return Affine{}.add(*y, x->c0);
        return std::nullopt;
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
    std::map<const VarNode *, int64_t> extentOf;
    for (size_t v = 0; v < vars.size(); ++v) extentOf[vars[v].get()] = extents[v];
    Affine flat, iter;
    int64_t stride = 1;
    for (size_t d = indices.size(); d-- > 0;) {
        auto a = affine(indices[d]);
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
