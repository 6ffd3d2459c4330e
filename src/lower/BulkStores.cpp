/// \file
/// A kernel's closing shared-to-global tile copies as TMA bulk copies (include/tilec/passes/BulkStores.h).
#include "tilec/passes/BulkStores.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedAliases.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/ParallelNest.h"

#include "OffsetTerms.h"

#include <algorithm>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// cp.async.bulk's rule: sizes and both addresses multiples of 16 bytes.
constexpr int64_t kBulkBytes = 16;

/// One copy nest in bulk form: runs of `runElems` elements, one per value of the nest's other loops (`rows`, the
/// outermost first), whose first elements are `dst` and `src` at those loops' variables.
struct Bulk {
    Buffer dst, src;
    std::vector<Expr> dstAt, srcAt; ///< indices of a run's first element (the run's loops at 0)
    std::vector<const For *> rows;  ///< the nest's loops that are not part of a run, outermost first
    int64_t runElems = 1, runs = 1;
    SourceRange loc;
};

/// The row-major element strides of `b`'s dimensions (expressions of its shape).
std::vector<Expr> strides(const Buffer &b) {
    std::vector<Expr> s(b->shape.size());
    Expr stride = i32(1);
    for (size_t d = b->shape.size(); d-- > 0;) {
        s[d] = stride;
        stride = simplify(binary(BinaryOp::Mul, stride, b->shape[d]));
    }
    return s;
}

/// The flat element offset of `idx` in `b`, row-major.
Expr flatOffset(const Buffer &b, const std::vector<Expr> &idx) {
    std::vector<Expr> s = strides(b);
    Expr off = i32(0);
    for (size_t d = 0; d < idx.size(); ++d) off = binary(BinaryOp::Add, off, binary(BinaryOp::Mul, cast(DType::Int64, idx[d]), s[d]));
    return simplify(off);
}

/// The constant coefficient of `v` in `b`'s flat offset of `idx`, where every index is linear in v; nullopt
/// otherwise (a run-time stride, a division).
std::optional<int64_t> flatCoefficient(const Buffer &b, const std::vector<Expr> &idx, const VarNode *v) {
    std::vector<Expr> s = strides(b);
    int64_t c = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
        auto lin = linearIn(idx[d], v);
        if (!lin) return std::nullopt;
        if (!lin->second) continue;
        auto stride = constValue(s[d]);
        if (!stride) return std::nullopt;
        c += lin->second * *stride;
    }
    return c;
}

/// Whether every index of `idx` provably lies inside `b`'s shape.
bool inside(const Buffer &b, const std::vector<Expr> &idx, const RangeMap &ranges) {
    for (size_t d = 0; d < idx.size(); ++d) {
        Interval i = boundsOf(idx[d], ranges), n = boundsOf(b->shape[d], ranges);
        if (!i.lo || *i.lo < 0 || !i.hi || !n.lo || *i.hi >= *n.lo) return false;
    }
    return true;
}

/// `s` in bulk form where it is a T.Parallel copy nest from a shared tile to a global tensor that qualifies
/// (BulkStores.h), else nullopt. Runs are built from the innermost loop outwards: a loop joins the run while its
/// step is the run's length in both buffers. A tile of rows at a stride (more than one run) qualifies only with
/// `rows` (LoweringOptions::bulkStoreRows).
std::optional<Bulk> bulkForm(const Kernel &k, const Stmt &s, bool rows) {
    auto outer = as<For>(s);
    if (!outer || outer->forKind != ForKind::Parallel) return std::nullopt;
    std::vector<const For *> loops = parallelNest(*outer);
    auto st = as<Store>(loops.back()->body);
    auto ld = st ? as<Load>(st->value) : nullptr;
    if (!ld || st->buffer->scope != Scope::Global || ld->buffer->scope != Scope::Shared || ld->buffer->dtype != st->buffer->dtype ||
        ld->buffer->constElements() < 0)
        return std::nullopt;
    // The threads' own copy stores 16 bytes a thread (a distributed layout's vector), so the launcher's 16-byte check
    // of the tensor's pointer, which the bulk copy needs, asks nothing the kernel did not ask already.
    const auto &nests = layoutsOf(k).loops;
    auto layout = nests.find(outer->var.get());
    if (layout == nests.end() || layout->second.kind != Layout::Distributed ||
        layout->second.vec * st->buffer->dtype.bytes() < kBulkBytes)
        return std::nullopt;
    RangeMap ranges = kernelRanges(k);
    // Indices of the block's position, the nest and the sizes only: every thread's (one thread issues a run).
    std::set<const VarNode *> uniform;
    for (auto &v : k.blockIdx)
        if (v) uniform.insert(v.get());
    for (auto &v : k.dynamicSymbols) uniform.insert(v.get());
    for (auto &p : k.params)
        if (p.kind == Param::Scalar) uniform.insert(p.var.get());
    for (const For *f : loops) {
        if (constValue(f->min) != std::optional<int64_t>(0) || !constValue(f->extent)) return std::nullopt;
        addLoopRange(ranges, *f);
        uniform.insert(f->var.get());
    }
    for (auto *idx : {&st->indices, &ld->indices})
        for (auto &i : *idx)
            if (!offsets::readsOnly(i, uniform)) return std::nullopt;
    if (!inside(st->buffer, st->indices, ranges) || !inside(ld->buffer, ld->indices, ranges)) return std::nullopt;
    Bulk b{st->buffer, ld->buffer, {}, {}, {}, 1, 1, s->loc};
    std::set<const VarNode *> inRun;
    for (bool grew = true; grew;) {
        grew = false;
        for (const For *f : loops) {
            if (inRun.count(f->var.get())) continue;
            auto d = flatCoefficient(st->buffer, st->indices, f->var.get());
            auto r = flatCoefficient(ld->buffer, ld->indices, f->var.get());
            if (d && r && *d == b.runElems && *r == b.runElems) {
                inRun.insert(f->var.get()), b.runElems *= *constValue(f->extent), grew = true;
            }
        }
    }
    const int64_t eb = st->buffer->dtype.bytes();
    if (inRun.empty() || b.runElems * eb % kBulkBytes) return std::nullopt;
    VarMap zero;
    for (const For *f : loops) {
        if (inRun.count(f->var.get())) zero[f->var.get()] = i32(0);
        else b.rows.push_back(f), b.runs *= *constValue(f->extent);
        // a row loop's variable must move the run in the tensor by whole 16-byte steps, as must the rest
    }
    if (b.runs > 1 && !rows) return std::nullopt;
    for (auto &i : st->indices) b.dstAt.push_back(simplify(substitute(i, zero)));
    for (auto &i : ld->indices) b.srcAt.push_back(simplify(substitute(i, zero)));
    if (knownMultiple(flatOffset(b.dst, b.dstAt)) * eb % kBulkBytes || knownMultiple(flatOffset(b.src, b.srcAt)) * eb % kBulkBytes)
        return std::nullopt;
    return b;
}

/// How the kernel mentions buffers outside the closing copies: the tensors something writes (or hands a call)
/// and the shared tiles accessed otherwise than element by element.
struct Mentions : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> written, wholeTile;
    void visit(const Store &op) override {
        written.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const AtomicAdd &op) override {
        written.insert(op.dst.buffer.get());
        IRVisitor::visit(op);
    }
    void visitRegion(const Region &r) override {
        if (r.buffer) written.insert(r.buffer.get()), wholeTile.insert(r.buffer.get());
        IRVisitor::visitRegion(r);
    }
    void visit(const Reduce &op) override {
        for (auto &b : {op.src, op.dst})
            if (b) written.insert(b.get()), wholeTile.insert(b.get());
    }
    void visit(const Call &op) override {
        for (auto &a : op.args)
            if (auto l = addressedLoad(a)) written.insert(l->buffer.get()), wholeTile.insert(l->buffer.get());
        IRVisitor::visit(op);
    }
};

/// Whether the threads' own accesses of shared tile `tile` (in the statements before the closing copies) are ones
/// its row-major storage serves as well as any swizzle, so that the tile keeps the layout a bulk copy reads without
/// costing them bank conflicts: each inside a T.Parallel nest of a distributed layout (each thread a run of
/// consecutive iterations) whose innermost loop steps through consecutive elements of the tile. A GEMM
/// accumulator's nest (an mma layout: a warp's lanes four to a row over eight rows) stores eight rows at one column,
/// which swizzleShared stores swizzled for the per-thread copy, and a linear bulk copy cannot read swizzled.
struct RowMajorAccesses : IRVisitor {
    using IRVisitor::visit;
    RowMajorAccesses(const BufferNode *t, const KernelLayouts &l) : tile(t), layouts(l) {}
    const BufferNode *tile;
    const KernelLayouts &layouts;
    bool inNest = false, ok = true;
    const Layout *nest = nullptr;
    const For *innermost = nullptr;
    void visit(const For &op) override {
        if (op.forKind != ForKind::Parallel || inNest) return IRVisitor::visit(op);
        auto it = layouts.loops.find(op.var.get());
        inNest = true, nest = it == layouts.loops.end() ? nullptr : &it->second, innermost = parallelNest(op).back();
        IRVisitor::visit(op);
        inNest = false, nest = nullptr, innermost = nullptr;
    }
    void visit(const Load &op) override {
        access(op.buffer, op.indices);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        access(op.buffer, op.indices);
        IRVisitor::visit(op);
    }
    void access(const Buffer &b, const std::vector<Expr> &idx) {
        if (b.get() != tile) return;
        if (!nest || nest->kind != Layout::Distributed || flatCoefficient(b, idx, innermost->var.get()) != std::optional<int64_t>(1))
            ok = false;
    }
};

/// Whether `b` is a row-major tensor argument of `k` (no view, workspace, T.make_tensor or T.Layout placement).
bool plainArgument(const Kernel &k, const BufferNode *b) {
    if (k.layoutOf(b) || k.addressOf(b)) return false;
    bool found = false;
    for (auto &p : k.params) {
        if (p.viewOf.get() == b) return false;
        found |= p.kind == Param::Tensor && p.buffer.get() == b && p.argument();
    }
    return found;
}

/// The statements of `b`'s bulk copies: each run r = j * threads + tx of `runs` (row loops' variables decoded
/// from r, the outermost slowest) by thread tx; one run by thread 0.
void issue(const Kernel &k, const Bulk &b, std::vector<Stmt> &out) {
    const int64_t threads = k.launchedThreads(), bytes = b.runElems * b.dst->dtype.bytes();
    const Var &tx = k.threadIdx;
    auto call = [&](const VarMap &rows) {
        std::vector<Expr> d, s;
        for (auto &i : b.dstAt) d.push_back(simplify(substitute(i, rows)));
        for (auto &i : b.srcAt) s.push_back(simplify(substitute(i, rows)));
        return lib::stmt(lib::Fn::BulkStore, {i32(bytes), addressOf(b.dst, d), addressOf(b.src, s)}, b.loc);
    };
    if (b.runs == 1) {
        out.push_back(IfThenElse::make(binary(BinaryOp::EQ, tx, i32(0)), call({}), nullptr, b.loc));
        return;
    }
    const int64_t rounds = (b.runs + threads - 1) / threads;
    Var j = makeVar("bulk_round", DType::Int32, b.loc);
    Expr r = rounds == 1 ? Expr(tx) : binary(BinaryOp::Add, binary(BinaryOp::Mul, j, i32(threads)), tx);
    VarMap rows;
    int64_t inner = b.runs;
    for (const For *f : b.rows) {
        const int64_t e = *constValue(f->extent);
        inner /= e;
        // the outermost row r / inner is below its extent for every r < runs: no remainder
        Expr at = binary(BinaryOp::FloorDiv, r, i32(inner));
        rows[f->var.get()] = simplify(inner * e == b.runs ? at : binary(BinaryOp::FloorMod, at, i32(e)));
    }
    Stmt one = call(rows);
    if (b.runs % threads) one = IfThenElse::make(binary(BinaryOp::LT, r, i32(b.runs)), one, nullptr, b.loc);
    out.push_back(rounds == 1 ? one : For::make(j, i32(0), i32(rounds), ForKind::Serial, 0, one, b.loc));
}

KernelP rewrite(const KernelP &k, bool rows, const SourceManager *sources) {
    auto top = as<Seq>(k->body);
    std::vector<Stmt> stmts = top ? top->stmts : std::vector<Stmt>{k->body};
    // Role kernels of threadRangeRegions (named `outer.roleN...`) run on some of the block's threads: no barrier.
    if (!k->threadIdx || k->persistent || k->producerThreads || stmts.empty() || k->name.find('.') != std::string::npos) return k;
    // The closing copies: the longest run of qualifying nests at the end of the body.
    std::vector<Bulk> bulks;
    size_t first = stmts.size();
    while (first > 0) {
        auto b = bulkForm(*k, stmts[first - 1], rows);
        if (!b) break;
        bulks.insert(bulks.begin(), *b);
        --first;
    }
    if (bulks.empty()) return k;
    Mentions m;
    for (size_t i = 0; i < first; ++i) m.visit(stmts[i]);
    std::set<const BufferNode *> dsts;
    for (auto &b : bulks) {
        // Two copies writing one tensor, or a tensor written elsewhere, keep the per-thread stores: generic and
        // async-proxy writes of the same bytes are not ordered.
        if (!dsts.insert(b.dst.get()).second || m.written.count(b.dst.get()) || !plainArgument(*k, b.dst.get()) ||
            m.wholeTile.count(b.src.get()) || ir::aliased(*k, b.src.get()))
            return k;
        const TileLayout *t = k->tileLayoutOf(b.src.get());
        if (t && (t->swizzleBytes > 0 || t->tma)) return k;
        RowMajorAccesses rm(b.src.get(), layoutsOf(*k));
        for (size_t i = 0; i < first; ++i) rm.visit(stmts[i]);
        if (!rm.ok) return k;
    }
    std::vector<Stmt> out(stmts.begin(), stmts.begin() + (std::ptrdiff_t)first);
    const SourceRange loc = bulks.front().loc;
    out.push_back(lib::stmt(lib::Fn::FenceProxyAsync, {}, loc));
    out.push_back(syncThreads(loc));
    int64_t issuers = 1;
    for (auto &b : bulks) {
        issue(*k, b, out);
        issuers = std::max(issuers, std::min<int64_t>(b.runs, k->launchedThreads()));
        remark(sources, b.loc, "kernel '" + k->name + "': T.copy of '" + b.src->name + "' to '" + b.dst->name + "' -> " +
                                   std::to_string(b.runs) + " bulk cop" + (b.runs == 1 ? "y" : "ies") + " of " +
                                   std::to_string(b.runElems * b.dst->dtype.bytes()) + " bytes (cp.async.bulk)");
    }
    Stmt wait = lib::stmt(lib::Fn::TmaStoreWait, {i32(0)}, loc);
    Expr waits = issuers == 1 ? binary(BinaryOp::EQ, k->threadIdx, i32(0)) : binary(BinaryOp::LT, k->threadIdx, i32(issuers));
    out.push_back(IfThenElse::make(waits, wait, nullptr, loc));
    auto nk = std::make_shared<Kernel>(*k);
    nk->body = Seq::make(std::move(out), k->body->loc);
    return nk;
}

} // namespace

Program bulkStores(const Program &p, const Variant &v, const SourceManager *sources) {
    // Not tied to LoweringOptions::tma: a bulk copy needs no tensor map, so the variant lowered without TMA for
    // arguments TMA cannot take stores the same way (one lowering, not two); --no-tma turns it off in the driver.
    if (v.target.sm < 90 || !v.options.bulkStores) return p;
    Program out;
    for (auto &k : p.kernels) out.kernels.push_back(k->noTma ? k : rewrite(k, v.options.bulkStoreRows, sources));
    return out;
}

} // namespace tilec::passes
