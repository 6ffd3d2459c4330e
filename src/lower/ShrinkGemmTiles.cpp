/// \file
/// GEMM tiles shrunk to the rows anyone can observe (include/tilec/passes/ShrinkGemmTiles.h).
#include "tilec/passes/ShrinkGemmTiles.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LiveRows.h"
#include "tilec/SharedAliases.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// The rows of one tensor-core instruction (wgmma's m64): a shrunk tile keeps whole panels.
constexpr int64_t kPanelRows = 64;

/// Every mention of the candidate accumulators and of the shared tiles their T.gemms read as A, sorted into
/// the forms the shrink rewrites (whole regions: fills and T.gemms of C, copies of C into a global tensor, copies
/// of a global tensor into A, T.gemms reading A) and the rest (`bad`).
struct Mentions : IRVisitor {
    using IRVisitor::visit;
    std::map<const BufferNode *, int64_t> tileRows;         ///< candidate -> its rows (C: dim 0; A: rowDim)
    std::map<const BufferNode *, size_t> rowDim;            ///< A tile -> the dimension of its rows (1: transpose_A)
    std::map<const BufferNode *, std::set<const BufferNode *>> accsOfA, tilesOfC; ///< A -> its Cs; C -> its As
    std::set<const BufferNode *> bad;
    const Region *allowed = nullptr;

    bool candidate(const BufferNode *b) const { return b && tileRows.count(b); }
    void visitRegion(const Region &r) override {
        if (candidate(r.buffer.get()) && &r != allowed) bad.insert(r.buffer.get());
        IRVisitor::visitRegion(r);
    }
    void visit(const Load &op) override {
        if (candidate(op.buffer.get())) bad.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        if (candidate(op.buffer.get())) bad.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Reduce &op) override {
        for (auto *b : {op.src.get(), op.dst.get()})
            if (candidate(b)) bad.insert(b);
    }
    /// `r`, a whole candidate tile whose other side `g` is a global region with its rows (tile dimension `d`)
    /// along one dimension of the same constant extent: allowed (else seen as any region).
    void tileCopy(const Region &r, const Region &g, size_t d) {
        auto dims = tileDims(g);
        const bool fits = wholeTile(r) && g.buffer && g.buffer->scope == Scope::Global && dims.size() == r.ranges.size() &&
                          d < dims.size() && constValue(g.ranges[dims[d]].extent) == std::optional<int64_t>(tileRows[r.buffer.get()]);
        if (fits) allowed = &r;
    }
    void visit(const Copy &op) override {
        if (candidate(op.dst.buffer.get()) && op.dst.buffer->scope == Scope::Shared && rowDim.count(op.dst.buffer.get()))
            tileCopy(op.dst, op.src, rowDim[op.dst.buffer.get()]);
        if (candidate(op.src.buffer.get()) && op.src.buffer->scope == Scope::Fragment) tileCopy(op.src, op.dst, 0);
        visitRegion(op.src);
        visitRegion(op.dst);
        allowed = nullptr;
    }
    void visit(const Fill &op) override {
        if (candidate(op.dst.buffer.get()) && op.dst.buffer->scope == Scope::Fragment && wholeTile(op.dst)) allowed = &op.dst;
        IRVisitor::visit(op);
        allowed = nullptr;
    }
    void visit(const Gemm &op) override {
        const BufferNode *a = op.a.buffer.get(), *c = op.c.buffer.get();
        const bool cOk = candidate(c) && wholeTile(op.c);
        const bool aOk = candidate(a) && wholeTile(op.a) && rowDim.count(a) && rowDim[a] == (op.transA ? 1u : 0u);
        if (cOk && !aOk) bad.insert(c);
        if (aOk && !cOk) bad.insert(a);
        if (cOk && aOk) accsOfA[a].insert(c), tilesOfC[c].insert(a);
        allowed = aOk ? &op.a : nullptr;
        visitRegion(op.a);
        allowed = cOk ? &op.c : nullptr;
        visitRegion(op.c);
        allowed = nullptr;
        visitRegion(op.b);
    }
};

/// What shrinks: each buffer's new row count, and the dimension of its rows (1 for a transposed A tile).
struct Plan {
    std::map<const BufferNode *, int64_t> rows;
    std::map<const BufferNode *, size_t> rowDim;
};

/// The accumulators of `k` whose tile can shrink, each with its new rows, and their A tiles with theirs.
Plan plan(const Kernel &k) {
    Mentions m;
    std::map<const BufferNode *, int64_t> rows; // candidate -> new rows
    struct Gemms : IRVisitor {
        using IRVisitor::visit;
        std::vector<const Gemm *> all;
        void visit(const Gemm &g) override { all.push_back(&g); }
    } gemms;
    gemms.visit(k.body);
    for (auto &[c, live] : liveAccumulatorRows(k)) {
        const int64_t r = (live + kPanelRows - 1) / kPanelRows * kPanelRows, cRows = *constValue(c->shape[0]);
        auto n = constValue(c->shape[1]);
        // The consumer warpgroups (threads / 128) split r rows by whole 64-row panels, then N in 16-column steps.
        const int64_t groups = std::max<int64_t>(1, k.threads / 128), panels = r / kPanelRows;
        if (!n || (groups > panels && (groups % panels || *n % (16 * (groups / panels))))) continue;
        m.tileRows[c] = cRows;
        rows[c] = r;
    }
    for (const Gemm *g : gemms.all) {
        const BufferNode *a = g->a.buffer.get(), *c = g->c.buffer.get();
        if (!rows.count(c)) continue;
        if (g->sparse()) { // T.gemm_sp's metadata tile would shrink with A: not done
            m.bad.insert(c);
            continue;
        }
        // Any warp policy where every warp can keep 16 rows of the shrunk tile; else only those that may split N.
        const bool policyOk = k.threads / 32 * 16 <= rows[c] || g->policy == GemmPolicy::Auto || g->policy == GemmPolicy::FullCol;
        if (!policyOk || !a || a->scope != Scope::Shared || a->shape.size() != 2) {
            m.bad.insert(c);
            continue;
        }
        const size_t d = g->transA ? 1 : 0;
        auto aRows = constValue(a->shape[d]);
        if (!aRows || *aRows != m.tileRows[c] || (m.rowDim.count(a) && m.rowDim[a] != d)) {
            m.bad.insert(c);
            continue;
        }
        m.rowDim[a] = d;
        m.tileRows[a] = *aRows;
    }
    m.visit(k.body);
    for (auto &[view, base] : k.fragmentViews) m.bad.insert(base.get()), m.bad.insert(view.get());
    for (auto &[view, base] : ir::sharedAliases(k)) m.bad.insert(base.get()), m.bad.insert(view.get());
    // Drop what is used otherwise, then every tile tied to something dropped or asked to shrink otherwise.
    for (bool changed = true; changed;) {
        changed = false;
        for (auto &[a, cs] : m.accsOfA) {
            // An A tile shrinks with every accumulator its T.gemms write, to the rows they all shrink to.
            int64_t want = rows.count(*cs.begin()) ? rows[*cs.begin()] : -1;
            bool ok = !m.bad.count(a) && want > 0;
            for (auto *c : cs) ok = ok && !m.bad.count(c) && rows.count(c) && rows[c] == want;
            if (ok) {
                rows[a] = want;
                continue;
            }
            for (auto *b : cs)
                if (m.bad.insert(b).second) changed = true;
            if (m.bad.insert(a).second) changed = true;
        }
        // An accumulator shrinks only with every A tile its T.gemms read.
        for (auto &[c, as] : m.tilesOfC)
            for (auto *a : as)
                if (m.bad.count(a) && m.bad.insert(c).second) changed = true;
    }
    Plan out;
    for (auto &[b, r] : rows)
        if (!m.bad.count(b) && m.tileRows.count(b) && (b->scope == Scope::Shared ? m.accsOfA.count(b) : m.tilesOfC.count(b))) {
            out.rows[b] = r;
            out.rowDim[b] = b->scope == Scope::Shared ? m.rowDim[b] : 0;
        }
    return out;
}

/// The rewrite: each shrunk buffer replaced by its shorter self, the global side of its copies cut to the
/// same rows, and T.Pipelined loops loading shrunk tiles deepened within their old shared memory.
struct Shrink : IRMutator {
    using IRMutator::visit;
    std::map<const BufferNode *, Buffer> to;    ///< old buffer -> shrunk one
    std::map<const BufferNode *, size_t> rowDim; ///< shrunk buffer (old) -> its rows dimension
    std::vector<std::pair<int, int>> deepened;   ///< (old stages, new stages) of each loop deepened

    Region whole(const Region &r) const { return Region::whole(to.at(r.buffer.get()), r.loc); }
    /// The global side `g` of a copy of a shrunk tile, its rows (tile dimension `d`) cut to `rows`.
    Region cut(const Region &g, size_t d, int64_t rows) {
        Region out = mutateRegion(g);
        out.ranges[tileDims(g)[d]].extent = intImm(rows, g.ranges[tileDims(g)[d]].extent->dtype);
        return out;
    }
    int64_t rowsOf(const Buffer &b) const { return *constValue(to.at(b.get())->shape[rowDim.at(b.get())]); }

    Stmt visit(const std::shared_ptr<const Copy> &op) override {
        if (to.count(op->dst.buffer.get()))
            return Copy::make(cut(op->src, rowDim[op->dst.buffer.get()], rowsOf(op->dst.buffer)), whole(op->dst), op->loc);
        if (to.count(op->src.buffer.get())) return Copy::make(whole(op->src), cut(op->dst, 0, rowsOf(op->src.buffer)), op->loc);
        return IRMutator::visit(op);
    }
    Stmt visit(const std::shared_ptr<const Fill> &op) override {
        if (!to.count(op->dst.buffer.get())) return IRMutator::visit(op);
        return Fill::make(whole(op->dst), op->value, op->loc);
    }
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        if (!to.count(op->c.buffer.get())) return IRMutator::visit(op);
        return op->withRegions(whole(op->a), op->b, whole(op->c));
    }
    /// Bytes of one stage of `loop`: the shared tiles its body copies into (as `sized` says they are).
    static int64_t stageBytes(const For &loop, const std::function<const BufferNode *(const BufferNode *)> &sized) {
        struct Dst : IRVisitor {
            using IRVisitor::visit;
            std::set<const BufferNode *> found;
            void visit(const Copy &c) override {
                if (c.dst.buffer && c.dst.buffer->scope == Scope::Shared) found.insert(c.dst.buffer.get());
            }
        } dst;
        dst.visit(loop.body);
        int64_t bytes = 0;
        for (auto *b : dst.found) bytes += smem::sharedBytes(sized(b));
        return bytes;
    }
    Stmt visit(const std::shared_ptr<const For> &op) override {
        Stmt s = IRMutator::visit(op);
        auto f = as<For>(s);
        if (!f || f->forKind != ForKind::Pipelined || f->numStages < 1) return s;
        const int64_t before = stageBytes(*op, [](const BufferNode *b) { return b; });
        const int64_t after = stageBytes(*op, [&](const BufferNode *b) { return to.count(b) ? to.at(b).get() : b; });
        const int64_t stages = after > 0 ? f->numStages * before / after : f->numStages;
        if (stages <= f->numStages) return s;
        deepened.push_back({f->numStages, (int)stages});
        return For::make(f->var, f->min, f->extent, f->forKind, (int)stages, f->body, f->loc);
    }
};

std::string shapeText(const Buffer &b) {
    std::string s;
    for (auto &e : b->shape) s += (s.empty() ? "" : "x") + std::to_string(constValue(e).value_or(-1));
    return s;
}

} // namespace

Program shrinkGemmTiles(const Program &p, const SourceManager *sources) {
    Program out;
    for (const KernelP &k : p.kernels) {
        const Plan pl = plan(*k);
        if (pl.rows.empty()) {
            out.kernels.push_back(k);
            continue;
        }
        Shrink s;
        s.rowDim = pl.rowDim;
        auto nk = std::make_shared<Kernel>(*k);
        std::string what;
        for (auto &b : nk->allocs) {
            auto it = pl.rows.find(b.get());
            if (it == pl.rows.end()) continue;
            std::vector<Expr> shape = b->shape;
            const size_t d = pl.rowDim.at(b.get());
            shape[d] = intImm(it->second, shape[d]->dtype);
            Buffer shrunk = makeBuffer(b->name, b->scope, b->dtype, shape, b->loc);
            what += std::string(what.empty() ? "" : ", ") + b->name + " " + shapeText(b) + " -> " + shapeText(shrunk);
            s.to[b.get()] = shrunk;
            b = shrunk;
        }
        nk->body = s.mutate(k->body);
        std::string deeper;
        for (auto &[from, to] : s.deepened)
            deeper += "; a T.Pipelined loop " + std::to_string(to) + " stages deep instead of " + std::to_string(from) +
                      " in the shared memory the author's tiles asked for";
        remark(sources, k->launchLoc,
               "kernel '" + k->name + "' computes its GEMM tile at the rows anyone observes (rows past them lie past A's "
               "end and are stored only out of C's bounds): " + what + deeper);
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
