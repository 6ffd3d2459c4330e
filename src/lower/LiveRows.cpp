/// \file
/// Rows of a T.gemm accumulator that no one can observe: the analysis boundGemmRows and shrinkGemmTiles share
/// (include/tilec/passes/LiveRows.h).
#include "tilec/passes/LiveRows.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// The rows of a tensor-core instruction: panels past the live rows are what the bound saves.
constexpr int64_t kPanelRows = 64;

/// What the kernel does with each shared A tile and fragment accumulator of its T.gemms.
struct Facts : IRVisitor {
    using IRVisitor::visit;
    explicit Facts(const Kernel &k) : ranges(kernelRanges(k)) {
        if (k.threadIdx) local.insert(k.threadIdx.get());
    }

    RangeMap ranges;
    std::map<const BufferNode *, int64_t> aRows;   ///< A tile -> rows of its sources (largest); -1: unbounded
    std::map<const BufferNode *, int64_t> aRowsT;  ///< the same with the tile's rows in dimension 1 (transpose_A)
    std::map<const BufferNode *, int64_t> cRows;   ///< accumulator -> rows of its A tiles; -1: unbounded
    std::map<const BufferNode *, int64_t> cStores; ///< accumulator -> rows of its destinations; -1: other use
    /// The same at run time: each A tile's (accumulator's) rows past which its sources (destinations) end, as
    /// expressions of launch values (a tensor's rows less the region's start); a null entry: not known so.
    std::map<const BufferNode *, std::vector<Expr>> aLeft, aLeftT, cLeft;
    std::set<const VarNode *> local; ///< loop variables and the thread index: not launch values
    std::set<const BufferNode *> cOther; ///< accumulators used otherwise than stored whole into a global tensor

    static void mergeAt(std::map<const BufferNode *, std::vector<Expr>> &m, const BufferNode *b, Expr left) {
        m[b].push_back(std::move(left));
    }

    /// Whether `e` is the same in every thread and at every point of the block: of constants, block indices
    /// and launch sizes only.
    bool launchValue(const Expr &e) const {
        struct Check : IRVisitor {
            using IRVisitor::visit;
            const std::set<const VarNode *> *local;
            bool ok = true;
            void visit(const VarNode &v) override { ok &= !local->count(&v); }
            void visit(const Load &) override { ok = false; }
            void visit(const Call &) override { ok = false; }
        } c;
        c.local = &local;
        c.visit(e);
        return c.ok;
    }

    /// Rows of global region `g` in dimension `d` from its start to its tensor's end, as an expression of
    /// launch values; null where the start or the extent is not one.
    Expr leftRows(const Region &g, size_t d) const {
        if (!g.buffer || g.buffer->scope != Scope::Global || d >= g.buffer->shape.size()) return nullptr;
        const Expr &rows = g.buffer->shape[d], &start = g.ranges[d].min;
        if (!launchValue(rows) || !launchValue(start)) return nullptr;
        return simplify(binary(BinaryOp::Sub, rows, start));
    }
    Expr mappedLeft(const Region &g, size_t tileDim, size_t tileRank) const {
        auto dims = tileDims(g);
        if (dims.size() != tileRank || tileDim >= dims.size()) return nullptr;
        return leftRows(g, dims[tileDim]);
    }

    static void merge(std::map<const BufferNode *, int64_t> &m, const BufferNode *b, int64_t rows) {
        auto [it, fresh] = m.emplace(b, rows);
        if (!fresh) it->second = it->second < 0 || rows < 0 ? -1 : std::max(it->second, rows);
    }

    /// The constant row count of global region `g` in dimension `d`, when its start there is never negative.
    std::optional<int64_t> globalRows(const Region &g, size_t d) const {
        if (!g.buffer || g.buffer->scope != Scope::Global || d >= g.buffer->shape.size()) return std::nullopt;
        auto rows = constValue(g.buffer->shape[d]);
        if (!rows || !boundsOf(g.ranges[d].min, ranges).nonNegative()) return std::nullopt;
        return rows;
    }

    /// The rows of global region `g` that tile dimension `tileDim` of a whole `tileRank`-dimensional tile maps to.
    std::optional<int64_t> mappedRows(const Region &g, size_t tileDim, size_t tileRank) const {
        auto dims = tileDims(g);
        if (dims.size() != tileRank || tileDim >= dims.size()) return std::nullopt;
        return globalRows(g, dims[tileDim]);
    }

    void visit(const For &op) override {
        if (op.var) local.insert(op.var.get());
        RangeMap saved = ranges;
        addLoopRange(ranges, op);
        IRVisitor::visit(op);
        ranges = std::move(saved);
    }

    void visit(const Copy &op) override {
        const BufferNode *src = op.src.buffer.get(), *dst = op.dst.buffer.get();
        if (dst && dst->scope == Scope::Shared) {
            // A candidate A tile: rows of a whole 2-D tile from a global tensor (dimension 0 here; a transposed A
            // is looked at with its rows in dimension 1 when the gemm is seen).
            auto r0 = wholeTile(op.dst) ? mappedRows(op.src, 0, dst->shape.size()) : std::nullopt;
            auto r1 = wholeTile(op.dst) ? mappedRows(op.src, 1, dst->shape.size()) : std::nullopt;
            merge(aRows, dst, r0 ? *r0 : -1);
            merge(aRowsT, dst, r1 ? *r1 : -1);
            mergeAt(aLeft, dst, wholeTile(op.dst) ? mappedLeft(op.src, 0, dst->shape.size()) : nullptr);
            mergeAt(aLeftT, dst, wholeTile(op.dst) ? mappedLeft(op.src, 1, dst->shape.size()) : nullptr);
        }
        if (dst && dst->scope == Scope::Fragment) merge(cStores, dst, -1), cOther.insert(dst);
        if (src && src->scope == Scope::Fragment) {
            auto rows = wholeTile(op.src) ? mappedRows(op.dst, 0, src->shape.size()) : std::nullopt;
            merge(cStores, src, rows ? *rows : -1);
            mergeAt(cLeft, src, wholeTile(op.src) ? mappedLeft(op.dst, 0, src->shape.size()) : nullptr);
        }
        IRVisitor::visit(op);
    }

    void visit(const Gemm &op) override {
        if (op.b.buffer) otherUse(op.b.buffer.get());
        if (op.a.buffer && op.a.buffer->scope == Scope::Fragment) otherUse(op.a.buffer.get());
    }

    void visit(const Fill &op) override {
        if (op.dst.buffer && op.dst.buffer->scope == Scope::Shared) otherUse(op.dst.buffer.get());
        IRVisitor::visit(op);
    }

    /// Any other statement or expression that names `b`: an A tile written otherwise, an accumulator read.
    void otherUse(const BufferNode *b) {
        if (b->scope == Scope::Shared) merge(aRows, b, -1), merge(aRowsT, b, -1);
        if (b->scope == Scope::Fragment) merge(cStores, b, -1), cOther.insert(b);
    }
    void visit(const Store &op) override {
        if (op.buffer) otherUse(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Load &op) override {
        if (op.buffer && op.buffer->scope == Scope::Fragment) merge(cStores, op.buffer.get(), -1), cOther.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Reduce &op) override {
        if (op.src) otherUse(op.src.get());
        if (op.dst) otherUse(op.dst.get());
    }
    void visit(const AtomicAdd &op) override {
        if (op.dst.buffer) otherUse(op.dst.buffer.get());
        if (op.src && op.src->buffer) otherUse(op.src->buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Evaluate &op) override {
        // A call may take any buffer's address (T.address_of, T.call_extern): each one it names is used otherwise.
        struct Named : IRVisitor {
            using IRVisitor::visit;
            std::vector<const BufferNode *> found;
            void visit(const Load &l) override {
                if (l.buffer) found.push_back(l.buffer.get());
                IRVisitor::visit(l);
            }
        } named;
        named.visit(op.value);
        for (auto *b : named.found) otherUse(b);
        IRVisitor::visit(op);
    }

};

/// The accumulator's live rows, 0 when nothing is saved.
int64_t liveRowsOf(const Facts &f, const BufferNode *c, int64_t cRows, const std::vector<const Gemm *> &writers) {
    auto st = f.cStores.find(c);
    if (st == f.cStores.end() || st->second < 0) return 0;
    int64_t rows = 0;
    for (const Gemm *g : writers) {
        const BufferNode *a = g->a.buffer.get();
        if (!a || a->scope != Scope::Shared) return 0;
        auto &m = g->transA ? f.aRowsT : f.aRows;
        auto it = m.find(a);
        if (it == m.end() || it->second < 0) return 0;
        rows = std::max(rows, it->second);
    }
    rows = std::max(rows, st->second);
    const int64_t panels = (rows + kPanelRows - 1) / kPanelRows;
    return panels * kPanelRows < cRows ? rows : 0;
}

/// The largest of `left`, null where one is.
Expr largest(const std::vector<Expr> &left) {
    Expr out;
    for (auto &e : left) {
        if (!e) return nullptr;
        out = out ? binary(BinaryOp::Max, out, e) : e;
    }
    return out ? simplify(out) : nullptr;
}

/// The accumulator's live rows at run time, null where they are not known or never leave a panel out.
Expr liveRowsAtOf(const Facts &f, const BufferNode *c, int64_t cRows, const std::vector<const Gemm *> &writers) {
    auto left = f.cLeft.find(c);
    if (left == f.cLeft.end() || f.cOther.count(c)) return nullptr;
    std::vector<Expr> all = left->second;
    for (const Gemm *g : writers) {
        const BufferNode *a = g->a.buffer.get();
        if (!a || a->scope != Scope::Shared) return nullptr;
        auto &m = g->transA ? f.aLeftT : f.aLeft;
        auto it = m.find(a);
        if (it == m.end()) return nullptr;
        all.insert(all.end(), it->second.begin(), it->second.end());
    }
    Expr rows = largest(all);
    if (!rows) return nullptr;
    // Never fewer than the tile's panels: nothing to save (the multiples of the tile's height, M = 256 of 128).
    Interval b = boundsOf(rows, f.ranges);
    if (b.lo && (*b.lo + kPanelRows - 1) / kPanelRows * kPanelRows >= cRows) return nullptr;
    return rows;
}

struct Collect : IRVisitor {
    using IRVisitor::visit;
    std::map<const BufferNode *, std::vector<const Gemm *>> byC;
    void visit(const Gemm &op) override { byC[op.c.buffer.get()].push_back(&op); }
};

} // namespace

std::vector<size_t> tileDims(const Region &r) {
    std::vector<size_t> out;
    for (size_t d = 0; d < r.ranges.size(); ++d)
        if (constValue(r.ranges[d].extent) != std::optional<int64_t>(1)) out.push_back(d);
    return out;
}

bool wholeTile(const Region &r) {
    if (!r.buffer || r.ranges.size() != r.buffer->shape.size()) return false;
    for (size_t d = 0; d < r.ranges.size(); ++d)
        if (constValue(r.ranges[d].min) != std::optional<int64_t>(0) || !provablyEqual(r.ranges[d].extent, r.buffer->shape[d]))
            return false;
    return true;
}

namespace {

/// Calls fn(facts, c, rows, writers) for each 2-D fragment accumulator `c` of constant row count `rows` that a
/// T.gemm writes, with the kernel's facts and the products that write it (one walk for both queries below).
template <class Fn> void eachAccumulator(const Kernel &k, Fn fn) {
    Facts f(k);
    f.visit(k.body);
    Collect col;
    col.visit(k.body);
    for (auto &[c, writers] : col.byC) {
        if (!c || c->scope != Scope::Fragment || c->shape.size() != 2) continue;
        if (auto cRows = constValue(c->shape[0])) fn(f, c, *cRows, writers);
    }
}

} // namespace

std::map<const BufferNode *, Expr> liveAccumulatorRowsAt(const Kernel &k) {
    std::map<const BufferNode *, Expr> live;
    eachAccumulator(k, [&](const Facts &f, const BufferNode *c, int64_t cRows, const std::vector<const Gemm *> &writers) {
        if (liveRowsOf(f, c, cRows, writers)) return; // a constant bound holds already
        if (Expr rows = liveRowsAtOf(f, c, cRows, writers)) live[c] = rows;
    });
    return live;
}

std::map<const BufferNode *, int64_t> liveAccumulatorRows(const Kernel &k) {
    std::map<const BufferNode *, int64_t> live;
    eachAccumulator(k, [&](const Facts &f, const BufferNode *c, int64_t cRows, const std::vector<const Gemm *> &writers) {
        if (int64_t rows = liveRowsOf(f, c, cRows, writers)) live[c] = rows;
    });
    return live;
}

} // namespace tilec::passes
