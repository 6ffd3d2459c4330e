/// \file
/// Gathered tile fills as asynchronous transfers (GatherTransfers.h).
#include "GatherTransfers.h"

#include "tilec/IROperator.h"
#include "tilec/IRSubstitute.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LoopInvariants.h"
#include "tilec/passes/ParallelNest.h"

#include <algorithm>
#include <map>

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

/// Whether a read of `v` can see a value set before the statement list it is in (setBeforeEveryRead).
struct ReadsBeforeSet : IRVisitor {
    using IRVisitor::visit;
    const BufferNode *v = nullptr;
    bool set = false, seen = false;
    void visit(const Load &op) override { seen = seen || (op.buffer.get() == v && !set), IRVisitor::visit(op); }
    void visit(const Store &op) override { IRVisitor::visit(op), set = set || op.buffer.get() == v; }
    void visit(const For &op) override { scoped([&] { IRVisitor::visit(op); }); }
    void visit(const While &op) override { scoped([&] { IRVisitor::visit(op); }); }
    void visit(const WarpRoles &op) override { scoped([&] { IRVisitor::visit(op); }); }
    void visit(const IfThenElse &op) override {
        visit(op.cond);
        const bool before = set;
        bool both = true;
        for (const Stmt &b : {op.then, op.otherwise}) {
            set = before;
            if (b) visit(b);
            both = both && set;
        }
        set = before || (both && op.otherwise);
    }
    void visit(const Copy &op) override { named(op); }
    void visit(const Fill &op) override { named(op); }
    void visit(const Gemm &op) override { named(op); }
    void visit(const AtomicAdd &op) override { named(op); }
    void visit(const Reduce &op) override { seen = seen || op.src.get() == v || op.dst.get() == v; }
    /// A loop body (or a role) starts from whatever the iteration before or the code before left.
    template <class F> void scoped(F f) {
        const bool before = set;
        set = false, f(), set = before;
    }
    /// A tile statement that names `v` at all counts as a read.
    template <class N> void named(const N &op) {
        Names n;
        n.v = v;
        n.IRVisitor::visit(op);
        seen = seen || n.found;
    }
    struct Names : IRVisitor {
        using IRVisitor::visit;
        const BufferNode *v = nullptr;
        bool found = false;
        void visit(const Load &l) override { found = found || l.buffer.get() == v, IRVisitor::visit(l); }
        void visit(const Store &s) override { found = found || s.buffer.get() == v, IRVisitor::visit(s); }
        void visitRegion(const Region &r) override { found = found || r.buffer.get() == v, IRVisitor::visitRegion(r); }
    };
};

/// Whether the value a store leaves in one-element register scalar `v` is never read: every read of `v` in the
/// kernel follows, in the same statement list, a store that sets it (inside a loop, a store of the same
/// iteration; a store in one branch of an `if`, or inside a loop, sets it for nothing after). Tile statements
/// that name `v` count as reads.
bool setBeforeEveryRead(const Stmt &body, const BufferNode *v) {
    ReadsBeforeSet w;
    w.v = v;
    w.visit(body);
    return !w.seen;
}

/// The value the last statement of a nest's body `items` stores, with the scalars the statements before it set
/// written in: each of those a store to element 0 of a one-element register scalar whose value, once set, no
/// read in the kernel can see but the nest's own (setBeforeEveryRead), so the transfer replacing the nest need
/// not set it. Null where any statement before the last is something else, or the last is no store.
Expr withNamedPositions(const std::vector<Stmt> &items, const Kernel &k) {
    std::map<const BufferNode *, Expr> defs;
    for (size_t i = 0; i + 1 < items.size(); ++i) {
        auto st = as<Store>(items[i]);
        const BufferNode *b = st ? st->buffer.get() : nullptr;
        if (!b || (b->scope != Scope::Local && b->scope != Scope::Var) || b->constElements() != 1 || st->indices.size() != 1 ||
            constInt(st->indices[0]) != std::optional<int64_t>(0) || defs.count(b) || !setBeforeEveryRead(k.body, b))
            return nullptr;
        Expr value = replaceLoads(st->value, defs);
        defs[b] = value->dtype == b->dtype ? value : cast(b->dtype, value);
    }
    auto last = as<Store>(items.back());
    return last ? replaceLoads(last->value, defs) : nullptr;
}

} // namespace

std::optional<GatherFill> gatherFill(const Stmt &s, const Kernel &k, const std::set<const BufferNode *> &invariant,
                                     const std::set<const VarNode *> &boundInside) {
    auto outer = as<For>(s);
    if (!outer || outer->forKind != ForKind::Parallel || !k.threadIdx) return std::nullopt;
    GatherFill g;
    g.loops = parallelNest(*outer);
    const std::vector<Stmt> items = Seq::items(g.loops.back()->body);
    if (items.empty()) return std::nullopt;
    g.store = as<Store>(items.back());
    if (items.size() > 1 && g.store) {
        g.value = withNamedPositions(items, k);
        g.load = g.value ? as<Load>(g.value) : nullptr;
    } else {
        g.load = g.store ? as<Load>(g.store->value) : nullptr;
    }
    if (!g.load) return std::nullopt;
    const Buffer &dst = g.store->buffer, &src = g.load->buffer;
    if (dst->scope != Scope::Shared || src->scope != Scope::Global || src->dtype != dst->dtype || !isArgument(k, src.get()) ||
        dst->shape.size() != g.loops.size() || g.store->indices.size() != g.loops.size() ||
        g.load->indices.size() != src->shape.size() || !readsOnly(g.value ? g.value : g.store->value, invariant))
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
