/// \file
/// T.Parallel nests that are tile copies at heart (include/tilec/passes/ParallelCopies.h). TileLang's examples
/// often fill a shared tile with an element-wise nest rather than T.copy (example_gemm_intrinsics'
/// `A_shared[i, k] = A[by * block_M + i, ko * block_K + k]`); TileLang pipelines such a nest with cp.async
/// like a T.copy, so tilec gives it the copy form that its own transfers take.
#include "tilec/passes/ParallelCopies.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelNest.h"

#include <optional>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// The value a tile copy loads, with the condition it is loaded under (null: always) when the nest stores
/// `T.if_then_else(cond, value, 0)`.
struct Loaded {
    const Load *load = nullptr;
    Expr cond;
};

std::optional<Loaded> loadedValue(const Expr &value) {
    if (auto ld = as<Load>(value)) return Loaded{ld, nullptr};
    auto sel = as<Select>(value);
    if (!sel) return std::nullopt;
    auto ld = as<Load>(sel->t);
    Expr zero = sel->f;
    while (auto c = as<Cast>(zero)) zero = c->value;
    auto i = as<IntImm>(zero);
    auto f = as<FloatImm>(zero);
    if (!ld || !((i && i->value == 0) || (f && f->value == 0.0))) return std::nullopt;
    return Loaded{ld, sel->cond};
}

/// Whether `cond` is a conjunction of tests `index < extent` of `load`'s own indices against its tensor's shape:
/// false only where the copy reads past the tensor's end, where a tile copy reads zeros (not below its start: a
/// test `0 <= index` is no such copy).
bool testsBoundsOnly(const Expr &cond, const Load &load) {
    auto b = as<Binary>(cond);
    if (!b) return false;
    if (b->op == BinaryOp::And) return testsBoundsOnly(b->a, load) && testsBoundsOnly(b->b, load);
    Expr index, bound;
    if (b->op == BinaryOp::LT) index = b->a, bound = b->b;
    else if (b->op == BinaryOp::GT) index = b->b, bound = b->a;
    else return false;
    for (size_t d = 0; d < load.indices.size(); ++d)
        if (provablyEqual(index, load.indices[d]) && provablyEqual(bound, load.buffer->shape[d])) return true;
    return false;
}

} // namespace

Stmt copyOfNest(const Stmt &s) {
    auto outer = as<For>(s);
    if (!outer || outer->forKind != ForKind::Parallel) return nullptr;
    std::vector<const For *> loops = parallelNest(*outer);
    auto st = as<Store>(loops.back()->body);
    if (!st || st->buffer->scope != Scope::Shared || st->indices.size() != loops.size()) return nullptr;
    auto loaded = loadedValue(st->value);
    if (!loaded) return nullptr;
    const Load &ld = *loaded->load;
    const Buffer &src = ld.buffer, &dst = st->buffer;
    if (src->scope != Scope::Global || src->dtype != dst->dtype || ld.indices.size() != src->shape.size()) return nullptr;
    if (loaded->cond && !testsBoundsOnly(loaded->cond, ld)) return nullptr;
    // dst[i0, ..., in]: the whole buffer, each variable its own dimension, in order.
    for (size_t d = 0; d < loops.size(); ++d) {
        auto v = as<VarNode>(st->indices[d]);
        if (constInt(loops[d]->min) != std::optional<int64_t>(0) || !v || v != loops[d]->var.get() ||
            !provablyEqual(loops[d]->extent, dst->shape[d]))
            return nullptr;
    }
    // src: each variable in one dimension of its own, with coefficient 1, in the nest's order; the last one in
    // the tensor's last dimension.
    Region from{src, {}, s->loc};
    size_t next = 0; // the next nest variable to find
    for (size_t d = 0; d < ld.indices.size(); ++d) {
        const Expr &e = ld.indices[d];
        Expr origin = e, extent = intImm(1);
        if (next < loops.size() && uses(e, loops[next]->var.get())) {
            auto lin = linearIn(e, loops[next]->var.get());
            if (!lin || lin->second != 1) return nullptr;
            origin = lin->first ? lin->first : intImm(0);
            extent = loops[next]->extent;
            ++next;
        }
        for (auto *l : loops)
            if (uses(origin, l->var.get())) return nullptr;
        from.ranges.push_back({origin, extent});
    }
    if (next != loops.size() || !uses(ld.indices.back(), loops.back()->var.get())) return nullptr;
    return Copy::make(from, Region::whole(dst, st->loc), s->loc);
}

} // namespace tilec::passes
