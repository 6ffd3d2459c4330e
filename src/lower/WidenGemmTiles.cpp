/// \file
/// Two one-warpgroup GEMM tiles side by side in one block of two consumer warpgroups
/// (include/tilec/passes/WidenGemmTiles.h).
#include "tilec/passes/WidenGemmTiles.h"

#include "GemmKernelShape.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/SharedAliases.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LiveRows.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

constexpr int64_t kPanelRows = 64;       ///< wgmma's m64: one panel per consumer warpgroup of the wide tile
constexpr int64_t kWidestN = 256;        ///< wgmma's widest n
constexpr int64_t kWarpgroupThreads = 128;

/// Whether `e` is `v * n` (either order).
bool isScaled(const Expr &e, const VarNode *v, int64_t n) {
    auto m = as<Binary>(e);
    if (!m || m->op != BinaryOp::Mul) return false;
    auto is = [&](const Expr &x, const Expr &y) {
        auto var = as<VarNode>(x);
        return var && var == v && constValue(y) == std::optional<int64_t>(n);
    };
    return is(m->a, m->b) || is(m->b, m->a);
}

/// How many times `v` occurs in `s` (regions' bounds included).
int occurrences(const Stmt &s, const VarNode *v) {
    struct Count : IRVisitor {
        using IRVisitor::visit;
        const VarNode *v = nullptr;
        int n = 0;
        void visit(const VarNode &x) override { n += &x == v; }
    } c;
    c.v = v;
    c.visit(s);
    return c.n;
}

/// What the widening of one kernel takes: the B tile and the accumulator (narrow), the dimension of each along
/// the output's columns (B's tile dimension; the accumulator's is 1), the grid dimension and the B copy.
struct Plan {
    Buffer b, acc;
    size_t bCols = 1, gridDim = 0;
    int64_t cols = 0;          ///< the narrow tile's columns N
    const Copy *bCopy = nullptr;
    std::string why;           ///< empty where the kernel can be widened
};

/// The dimension of `global`'s region that tile dimension `d` of a copy maps to, or -1.
int globalDim(const Region &global, size_t d) {
    auto dims = tileDims(global);
    return d < dims.size() ? (int)dims[d] : -1;
}

/// Kernel `k`'s plan: `why` names the first condition it misses (empty `why` and null `acc`: not of the class).
Plan plan(const Kernel &k, const GemmShape &m) {
    Plan p;
    if (!m.why.empty() || k.threads != kWarpgroupThreads || k.parts != 1 || k.gridDims > 2) return p;
    std::vector<const Gemm *> gemms;
    std::vector<const Copy *> copies;
    for (auto &s : Seq::items(m.loop->body)) {
        if (auto g = as<Gemm>(s)) gemms.push_back(g);
        if (auto c = as<Copy>(s)) copies.push_back(c);
    }
    const Buffer &acc = m.store->src.buffer;
    if (gemms.size() != 1 || acc->shape.size() != 2) return p;
    const Gemm &g = *gemms[0];
    const auto rows = constValue(acc->shape[0]), cols = constValue(acc->shape[1]);
    if (rows != std::optional<int64_t>(2 * kPanelRows) || cols != std::optional<int64_t>(kWidestN / 2)) return p;
    p.acc = acc; // of the class from here on: say why where it stays narrow
    p.cols = *cols;
    const std::string is = "kernel '" + k.name + "' keeps its " + std::to_string(*rows) + "x" + std::to_string(*cols) +
                           " tile on one warpgroup: ";
    auto no = [&](const std::string &why) {
        p.why = is + why;
        return p;
    };
    if (g.policy != GemmPolicy::Auto || !g.b.buffer || g.b.buffer->scope != Scope::Shared || g.b.buffer->shape.size() != 2 ||
        !wholeTile(g.b) || !wholeTile(g.c))
        return no("its T.gemm names a warp policy or reads B otherwise than a whole shared tile");
    p.b = g.b.buffer;
    p.bCols = g.transB ? 0 : 1;
    for (auto *c : copies)
        if (c->dst.buffer == p.b) {
            if (p.bCopy || !wholeTile(c->dst)) return no("its B tile is copied more than once");
            p.bCopy = c;
        }
    for (auto &[view, base] : ir::sharedAliases(k))
        if (view == p.b || base == p.b) return no("its B tile shares its storage");
    const int bDim = p.bCopy ? globalDim(p.bCopy->src, p.bCols) : -1, cDim = globalDim(m.store->dst, 1);
    if (bDim < 0 || cDim < 0) return no("its B tile or its output is not copied as a tile");
    const Expr &bMin = p.bCopy->src.ranges[bDim].min, &cMin = m.store->dst.ranges[cDim].min;
    // The grid index along the output's columns: C's column offset is b * N, B's the same, and b occurs nowhere else.
    for (size_t d = 0; d < 2; ++d) {
        const VarNode *v = k.blockIdx[d].get();
        if (isScaled(cMin, v, p.cols) && isScaled(bMin, v, p.cols) && occurrences(k.body, v) == 2) {
            p.gridDim = d;
            auto extent = constInt(k.grid[d]);
            if (!extent || *extent % 2) return no("its grid along the output's columns is not a constant, even count");
            return p;
        }
    }
    return no("its grid index along the output's columns does more than offset the B tile and the output");
}

/// Shared bytes of one stage of `loop`'s tiles, the B tile `b` counted `bTimes` times.
int64_t stageBytes(const For &loop, const BufferNode *b, int64_t bTimes) {
    int64_t bytes = 0;
    for (auto &s : Seq::items(loop.body))
        if (auto c = as<Copy>(s); c && c->dst.buffer->scope == Scope::Shared)
            bytes += smem::roundUp(smem::sharedBytes(c->dst.buffer.get()), smem::kTmaTileAlignment) *
                     (c->dst.buffer.get() == b ? bTimes : 1);
    return bytes;
}

/// The widened loop's stages: enough wide stages to hold the shared memory of the narrow blocks an SM held (two
/// where two fit; the bytes the SM kept in flight), at least as written, at most what one block of every target
/// holds; 0 where even the written stages do not fit.
int64_t wideStages(const For &loop, const BufferNode *b, int64_t fixed, const std::vector<Target> &targets) {
    const int64_t written = loop.forKind == ForKind::Pipelined ? std::max(1, loop.numStages) : 1;
    const int64_t narrow = stageBytes(loop, b, 1), wide = stageBytes(loop, b, 2);
    auto fitsAll = [&](int64_t bytes, int64_t blocks) {
        return std::all_of(targets.begin(), targets.end(), [&](const Target &t) { return smem::fits(t, bytes, blocks); });
    };
    auto block = [&](int64_t stageB, int64_t st) { return fixed + stageB * st + 2 * smem::kTmaTileAlignment; };
    if (!fitsAll(block(wide, written), 1)) return 0;
    if (loop.forKind != ForKind::Pipelined) return written;
    const int64_t held = fitsAll(block(narrow, written), 2) ? 2 : 1;
    int64_t st = std::max(written, (held * written * narrow + wide - 1) / wide);
    while (st > written && !fitsAll(block(wide, st), 1)) --st;
    return st;
}

/// The rewrite: B tile and accumulator replaced by their wide selves, their copies' column ranges doubled from
/// b * 2N, the K loop `stages` deep.
struct Widen : IRMutator {
    using IRMutator::visit;
    Buffer b, acc, wideB, wideAcc;
    const VarNode *v = nullptr;
    size_t bCols = 1;
    int64_t cols = 0, stages = 0;

    Region wider(const Region &global, size_t tileDim) const {
        Region out = global;
        const size_t d = tileDims(global)[tileDim];
        const Expr &from = out.ranges[d].min;
        out.ranges[d].min = binary(BinaryOp::Mul, indexIn(v, from), intImm(2 * cols, from->dtype));
        out.ranges[d].extent = intImm(2 * cols, out.ranges[d].extent->dtype);
        return out;
    }
    /// The block index `v` as it occurs in `e` (b * N: its Var operand).
    static Expr indexIn(const VarNode *v, const Expr &e) {
        auto m = as<Binary>(e);
        for (const Expr &x : {m->a, m->b})
            if (auto var = as<VarNode>(x); var && var == v) return x;
        return e;
    }
    Stmt visit(const std::shared_ptr<const Copy> &op) override {
        if (op->dst.buffer == b) return Copy::make(wider(op->src, bCols), Region::whole(wideB, op->dst.loc), op->loc);
        if (op->src.buffer == acc) return Copy::make(Region::whole(wideAcc, op->src.loc), wider(op->dst, 1), op->loc);
        return IRMutator::visit(op);
    }
    Stmt visit(const std::shared_ptr<const Fill> &op) override {
        if (op->dst.buffer != acc) return IRMutator::visit(op);
        return Fill::make(Region::whole(wideAcc, op->dst.loc), op->value, op->loc);
    }
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        if (op->c.buffer != acc) return IRMutator::visit(op);
        return op->withRegions(op->a, Region::whole(wideB, op->b.loc), Region::whole(wideAcc, op->c.loc));
    }
    Stmt visit(const std::shared_ptr<const For> &op) override {
        Stmt s = IRMutator::visit(op);
        auto f = as<For>(s);
        if (!f || f->forKind != ForKind::Pipelined) return s;
        return For::make(f->var, f->min, f->extent, f->forKind, (int)stages, f->body, f->loc);
    }
};

/// Buffer `x` with dimension `d` twice as long.
Buffer doubled(const Buffer &x, size_t d) {
    std::vector<Expr> shape = x->shape;
    shape[d] = intImm(2 * *constValue(shape[d]), shape[d]->dtype);
    return makeBuffer(x->name, x->scope, x->dtype, shape, x->loc);
}

/// Shared bytes of `k`'s allocations outside the K loop's tiles.
int64_t fixedShared(const Kernel &k, const For &loop) {
    std::vector<const BufferNode *> ring;
    for (auto &s : Seq::items(loop.body))
        if (auto c = as<Copy>(s)) ring.push_back(c->dst.buffer.get());
    int64_t bytes = 0;
    for (auto &b : k.allocs)
        if (b->scope == Scope::Shared && std::find(ring.begin(), ring.end(), b.get()) == ring.end() &&
            ir::storageOf(k, b.get()) == b.get())
            bytes += smem::sharedBytes(b.get());
    return bytes;
}

} // namespace

Program widenGemmTiles(const Program &p, const std::vector<Target> &targets, const LoweringOptions &o,
                       const SourceManager *sources) {
    if (!o.widenGemmTiles || targets.empty() ||
        !std::all_of(targets.begin(), targets.end(), [](const Target &t) { return t.hasWgmma(); }))
        return p;
    const Target &big = *std::max_element(targets.begin(), targets.end(),
                                          [](const Target &a, const Target &b) { return a.numSms < b.numSms; });
    Program out;
    for (const KernelP &k : p.kernels) {
        const GemmShape m = matchGemmKernel(*k);
        Plan pl = plan(*k, m);
        const std::string is = pl.acc ? "kernel '" + k->name + "' keeps its 128x" + std::to_string(pl.cols) +
                                            " tile on one warpgroup: " : "";
        int64_t stages = 0, tiles = 0;
        if (pl.acc && pl.why.empty()) {
            tiles = *constInt(k->grid[pl.gridDim]) / 2 * constInt(k->grid[1 - pl.gridDim]).value_or(0);
            stages = wideStages(*m.loop, pl.b.get(), fixedShared(*k, *m.loop), targets);
            if (tiles < big.numSms)
                pl.why = is + "the wide tiles would number " + std::to_string(tiles) + ", fewer than the " +
                         std::to_string(big.numSms) + " SMs (--num-sms)";
            else if (stages == 0)
                pl.why = is + "a block of the wide tile's ring does not fit one SM's shared memory";
        }
        if (!pl.acc || !pl.why.empty()) {
            if (!pl.why.empty()) remark(sources, k->launchLoc, pl.why);
            out.kernels.push_back(k);
            continue;
        }
        Widen w;
        w.b = pl.b, w.acc = pl.acc, w.bCols = pl.bCols, w.cols = pl.cols, w.stages = stages;
        w.v = k->blockIdx[pl.gridDim].get();
        w.wideB = doubled(pl.b, pl.bCols);
        w.wideAcc = doubled(pl.acc, 1);
        auto nk = std::make_shared<Kernel>(*k);
        for (auto &b : nk->allocs) b = b == pl.b ? w.wideB : b == pl.acc ? w.wideAcc : b;
        nk->body = w.mutate(k->body);
        nk->threads = 2 * kWarpgroupThreads;
        nk->grid[pl.gridDim] = intImm(*constInt(k->grid[pl.gridDim]) / 2, k->grid[pl.gridDim]->dtype);
        const int written = m.loop->forKind == ForKind::Pipelined ? m.loop->numStages : 1;
        remark(sources, k->launchLoc,
               "kernel '" + k->name + "' computes two of its 128x" + std::to_string(pl.cols) + " tiles (grid dimension " +
                   std::to_string(pl.gridDim) + ": " + std::to_string(tiles) + " blocks of 128x" + std::to_string(2 * pl.cols) +
                   ") in one block of 256 threads, two consumer warpgroups of 64x" + std::to_string(2 * pl.cols) +
                   " sharing the A tile; its K loop " + std::to_string(stages) + " stages deep" +
                   (stages != written ? " (" + std::to_string(written) + " written: the shared memory of the two blocks an SM held)" : "") +
                   " (--widen-gemm-tiles)");
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
