/// \file
/// Offsets as sums of terms, for the passes that regroup an offset's terms by what fixes them (splitSwizzles'
/// swizzled shared offsets, splitIndexDivisions' divisions of global ones): the terms of an offset, and whether
/// a term is a constant once nvcc unrolls the loops around it.
#pragma once

#include "tilec/IR.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"

#include <cstdint>
#include <cstdlib>
#include <set>
#include <vector>

namespace tilec::passes::offsets {

constexpr int64_t kMaxCoefficient = int64_t(1) << 40; ///< far past any offset: larger terms are not regrouped

/// One additive term of an offset: coeff * leaf, or the constant coeff where leaf is null.
struct Term {
    ir::Expr leaf;
    int64_t coeff = 0;
};

/// `e` times `scale` as a sum of terms, through sums, differences, negations and products by constants; false
/// past kMaxCoefficient or for a leaf whose type is not `leafType`.
inline bool flatten(const ir::Expr &e, int64_t scale, DType leafType, std::vector<Term> &out) {
    using namespace ir;
    if (scale <= -kMaxCoefficient || scale >= kMaxCoefficient) return false;
    if (auto c = constValue(e)) {
        if (*c <= -kMaxCoefficient || *c >= kMaxCoefficient) return false;
        out.push_back({nullptr, scale * *c});
        return true;
    }
    if (auto b = as<Binary>(e)) {
        if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub)
            return flatten(b->a, scale, leafType, out) &&
                   flatten(b->b, b->op == BinaryOp::Add ? scale : -scale, leafType, out);
        if (b->op == BinaryOp::Mul) {
            const bool right = constValue(b->b).has_value();
            const std::optional<int64_t> k = right ? constValue(b->b) : constValue(b->a);
            if (k && std::llabs(*k) < kMaxCoefficient) return flatten(right ? b->a : b->b, scale * *k, leafType, out);
        }
    }
    if (auto u = as<Unary>(e); u && u->op == UnaryOp::Neg) return flatten(u->a, -scale, leafType, out);
    if (e->dtype != leafType) return false;
    out.push_back({e, scale});
    return true;
}

/// Whether `e` reads only the variables in `vars` (no memory, no call): a constant once they are.
inline bool readsOnly(const ir::Expr &e, const std::set<const ir::VarNode *> &vars) {
    struct Reads : ir::IRVisitor {
        using IRVisitor::visit;
        std::set<const ir::VarNode *> vars;
        bool opaque = false;
        void visit(const ir::VarNode &op) override { vars.insert(&op); }
        void visit(const ir::Load &) override { opaque = true; }
        void visit(const ir::Call &) override { opaque = true; }
    } r;
    r.visit(e);
    if (r.opaque) return false;
    for (auto *v : r.vars)
        if (!vars.count(v)) return false;
    return true;
}

/// Whether nvcc unrolls `loop` whole (a _Pragma("unroll") loop of constant trip count): its variable is a
/// constant in each copy of the body.
inline bool unrolledWhole(const ir::For &loop) {
    return (loop.forKind == ir::ForKind::Unrolled || loop.forKind == ir::ForKind::Vectorized) &&
           ir::constValue(loop.min) && ir::constValue(loop.extent);
}

} // namespace tilec::passes::offsets
