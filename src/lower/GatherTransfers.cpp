/// \file
/// Gathered tile fills as asynchronous transfers (GatherTransfers.h).
#include "GatherTransfers.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LoopInvariants.h"
#include "tilec/passes/ParallelNest.h"

#include <algorithm>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// Whether `b` is a tensor argument of `k` (not a view or a workspace, whose elements may lie elsewhere).
bool isArgument(const Kernel &k, const BufferNode *b) {
    return std::any_of(k.params.begin(), k.params.end(), [&](const Param &p) { return p.buffer.get() == b && p.argument(); });
}

/// A number that divides each element stride of tensor `b`'s dimensions, the innermost's exactly: row-major,
/// its constant row length for every outer dimension (1 for the innermost); a T.StridedTensor's strides (its
/// placement linear in each index with a constant coefficient: a run-time stride is none). nullopt where
/// nothing is known.
std::optional<std::vector<int64_t>> strideMultiples(const Kernel &k, const Buffer &b) {
    std::vector<int64_t> s(b->shape.size());
    if (const TensorLayout *l = k.layoutOf(b.get())) {
        if (l->forward.size() != 1 || l->vars.size() != s.size()) return std::nullopt;
        for (size_t d = 0; d < s.size(); ++d) {
            auto lin = linearIn(l->forward[0], l->vars[d].get());
            if (!lin) return std::nullopt;
            s[d] = lin->second;
        }
        return s;
    }
    auto row = constInt(b->shape.back());
    if (!row) return std::nullopt;
    std::fill(s.begin(), s.end(), *row);
    s.back() = 1;
    return s;
}

} // namespace

std::optional<GatherFill> gatherFill(const Stmt &s, const Kernel &k, const std::set<const BufferNode *> &invariant,
                                     const std::set<const VarNode *> &boundInside) {
    auto outer = as<For>(s);
    if (!outer || outer->forKind != ForKind::Parallel || !k.threadIdx) return std::nullopt;
    GatherFill g;
    g.loops = parallelNest(*outer);
    g.store = as<Store>(g.loops.back()->body);
    g.load = g.store ? as<Load>(g.store->value) : nullptr;
    if (!g.load) return std::nullopt;
    const Buffer &dst = g.store->buffer, &src = g.load->buffer;
    if (dst->scope != Scope::Shared || src->scope != Scope::Global || src->dtype != dst->dtype || !isArgument(k, src.get()) ||
        dst->shape.size() != g.loops.size() || g.store->indices.size() != g.loops.size() ||
        g.load->indices.size() != src->shape.size() || !readsOnly(g.store->value, invariant))
        return std::nullopt;
    // dst[v0, ..., vn]: the whole tile, each variable its own dimension, in order.
    for (size_t d = 0; d < g.loops.size(); ++d) {
        auto v = as<VarNode>(g.store->indices[d]);
        if (v != g.loops[d]->var.get() || constInt(g.loops[d]->min) != std::optional<int64_t>(0) || !constInt(dst->shape[d]) ||
            constInt(g.loops[d]->extent) != constInt(dst->shape[d]))
            return std::nullopt;
    }
    auto own = [&](const VarNode *v) { return std::any_of(g.loops.begin(), g.loops.end(), [&](const For *f) { return f->var.get() == v; }); };
    for (auto &e : g.load->indices)
        for (auto *v : boundInside)
            if (!own(v) && uses(e, v)) return std::nullopt;
    // The last index runs along the tile's rows: vn plus an origin free of vn; no other index depends on vn.
    const VarNode *col = g.loops.back()->var.get();
    for (size_t d = 0; d + 1 < g.load->indices.size(); ++d)
        if (uses(g.load->indices[d], col)) return std::nullopt;
    auto lin = linearIn(g.load->indices.back(), col);
    if (!lin || lin->second != 1) return std::nullopt;
    const Expr origin = lin->first ? lin->first : i32(0);
    const int64_t cols = *constInt(dst->shape.back());
    int64_t elems = 1;
    for (auto &e : dst->shape) elems *= *constInt(e);
    const std::optional<std::vector<int64_t>> strides = strideMultiples(k, src);
    if (!strides || strides->back() != 1) return std::nullopt; // a chunk is a run of consecutive elements
    auto inner = constInt(src->shape.back()); // a chunk is whole inside its row or outside it
    const int eb = dst->dtype.bytes();
    // Every thread issues as many chunks (a cp.async under a test of the thread index would be a transfer that
    // not every thread runs): the widest chunk whose count the threads divide.
    for (int bytes : {16, 8, 4}) {
        if (bytes % eb) continue;
        const int ve = bytes / eb;
        bool rows = true; // every row starts a whole number of chunks from the pointer
        for (size_t d = 0; d + 1 < strides->size(); ++d) rows = rows && (*strides)[d] % ve == 0;
        if (cols % ve == 0 && inner && *inner % ve == 0 && rows && knownMultiple(origin) % ve == 0 &&
            (elems / ve) % k.threads == 0) {
            g.vec = ve;
            return g;
        }
    }
    return std::nullopt;
}

Stmt gatherTransfer(const GatherFill &g, const VarMap &iter, const Buffer &dst, const Expr &stage, const Var &tx, int threads,
                    const RangeMap &ranges, std::vector<Buffer> &locals) {
    const Buffer &tile = g.store->buffer, &src = g.load->buffer;
    const SourceRange &loc = g.loops[0]->loc;
    int64_t elems = 1;
    for (auto &e : tile->shape) elems *= *constInt(e);
    const int64_t per = elems / g.vec / threads; // (gatherFill: the threads divide the chunks)
    Var k = makeVar("gk", DType::Int32, loc);
    RangeMap known = ranges;
    known[k.get()] = Interval::of(0, per - 1);
    Expr chunk = binary(BinaryOp::Add, binary(BinaryOp::Mul, k, i32(threads)), tx);
    Expr flat = binary(BinaryOp::Mul, chunk, i32(g.vec));
    // The chunk's first element: its position in the tile (row-major), the nest's variables there.
    VarMap at = iter;
    std::vector<Expr> dstIdx;
    if (stage) dstIdx.push_back(stage);
    int64_t stride = elems;
    for (size_t d = 0; d < g.loops.size(); ++d) {
        const int64_t extent = *constInt(tile->shape[d]);
        stride /= extent;
        Expr i = binary(BinaryOp::FloorDiv, flat, i32(stride)); // (below the first extent)
        i = simplify(d == 0 ? i : binary(BinaryOp::FloorMod, i, i32(extent)));
        at[g.loops[d]->var.get()] = i;
        dstIdx.push_back(i);
    }
    std::vector<Expr> srcIdx;
    Expr valid;
    // A position read from memory (the gathered row) is read once per chunk into registers, every chunk's before
    // the first cp.async: the loads in flight together, and not again for the test (each cp.async's asm orders
    // memory, so loads between them would be made one after another).
    Var ka = makeVar("gp", DType::Int32, loc);
    std::vector<Stmt> positions;
    for (size_t d = 0; d < g.load->indices.size(); ++d) {
        Expr e = simplify(substitute(g.load->indices[d], at));
        if (readsMemory(e)) {
            Buffer pos = makeBuffer("gather_pos", Scope::Local, e->dtype, {i32(per)}, loc);
            locals.push_back(pos);
            positions.push_back(Store::make(pos, {ka}, substitute(e, VarMap{{k.get(), ka}}), loc));
            e = Load::make(pos, {k}, loc);
        }
        srcIdx.push_back(e);
        // Outside the tensor the nest's load reads zeros (predicateBounds): cp.async then reads nothing and
        // zero-fills. A chunk lies inside or outside whole (its origin and the rows are multiples of it).
        // A test the ranges prove (the tile's columns inside the row, a block index inside its grid) is left out.
        const Interval b = boundsOf(e, known);
        auto extent = constInt(src->shape[d]);
        for (Expr in : {b.nonNegative() ? nullptr : binary(BinaryOp::LE, cast(e->dtype, i32(0)), e),
                        extent && b.hi && *b.hi < *extent ? nullptr : binary(BinaryOp::LT, e, cast(e->dtype, src->shape[d]))})
            if (in) valid = valid ? binary(BinaryOp::And, valid, in) : in;
    }
    Stmt call = lib::stmt(lib::Fn::CpAsyncChunk, {i32(g.vec * tile->dtype.bytes()), addressOf(dst, dstIdx), addressOf(src, srcIdx),
                                                           valid ? simplify(valid) : boolImm(true)}, loc);
    Stmt issue = For::make(k, i32(0), i32(per), ForKind::Unrolled, 0, call, loc);
    if (positions.empty()) return issue;
    return Seq::make({For::make(ka, i32(0), i32(per), ForKind::Unrolled, 0, Seq::make(std::move(positions), loc), loc), issue}, loc);
}

} // namespace tilec::passes
