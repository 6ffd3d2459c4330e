/// \file
/// wgmma on the cp.async path (include/tilec/passes/CpAsyncWgmma.h).
#include "tilec/passes/CpAsyncWgmma.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/HopperOperands.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/Staging.h"
#include "tilec/passes/WgmmaGroups.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

/// (include/tilec/passes/SpecializeWarps.h)
std::string operandTile(const Region &r, TmaTile &out) {
    const Buffer &b = r.buffer;
    if (!b || b->scope != Scope::Shared) return "an operand is not in shared memory";
    if (b->shape.size() != 2) return "'" + b->name + "' is not a 2-D tile";
    auto rows = constInt(b->shape[0]), cols = constInt(b->shape[1]);
    if (!rows || !cols) return "'" + b->name + "' has a shape that is not constant";
    for (size_t d = 0; d < r.ranges.size() && d < 2; ++d) {
        auto lo = constInt(r.ranges[d].min), n = constInt(r.ranges[d].extent);
        if (!lo || !n || *lo != 0 || *n != (d == 0 ? *rows : *cols)) return "a product reads part of '" + b->name + "'";
    }
    const int64_t rowBytes = *cols * b->dtype.bytes();
    const int span = panelSwizzleBytes(rowBytes);
    if (*rows % 8 || !span)
        return "'" + b->name + "' has " + std::to_string(*rows) + " rows of " + std::to_string(rowBytes) +
               " bytes (wgmma reads cp.async tiles whose rows are a multiple of 32 bytes, in whole 8-row periods)";
    out.rows = *rows, out.cols = *cols, out.elemBytes = b->dtype.bytes(), out.swizzle = span;
    return "";
}

namespace {

struct Gemms : IRVisitor {
    using IRVisitor::visit;
    std::vector<const Gemm *> found;
    void visit(const Gemm &g) override { found.push_back(&g); }
};

/// Gives each product the instruction the plan chose (the products in the order Gemms visits them).
struct Mark : IRMutator {
    using IRMutator::visit;
    const std::vector<const Gemm *> *gemms = nullptr;
    const std::vector<GemmInstr> *instr = nullptr;
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        for (size_t i = 0; i < gemms->size(); ++i)
            if ((*gemms)[i] == op.get()) return (*instr)[i] == GemmInstr::Auto ? Stmt(op) : op->withInstr((*instr)[i]);
        return op;
    }
};

/// The instruction of each product of kernel `k` (Auto: mma.sync), or why none runs on wgmma.
struct Plan {
    std::vector<GemmInstr> instr;
    std::string why; ///< why no product, or why not every product, runs on wgmma
    std::map<const BufferNode *, int> spans; ///< the tiles given a narrower panel span (narrowSplitPanels)
};

/// Whether rows of `t` are other than one panel (the cp.async row swizzle and the panel layout then differ).
bool multiPanel(const TmaTile &t) { return t.cols * t.elemBytes != t.swizzle; }

/// Tiles in the panel layout (those the products `wgmma` marks read, with rows wider than one panel) are read as
/// panels by every reader: an mma.sync product reading one reads both its tiles as panels (`instr` becomes
/// MmaPanels; mmaPanelsCan), which may put further tiles in that layout. False where one cannot.
bool readPanelsAsPanels(const std::vector<const Gemm *> &gemms, const std::vector<bool> &wgmma, const std::vector<std::string> &tileWhy,
                        std::map<const BufferNode *, const TmaTile *> &view, std::vector<GemmInstr> &instr) {
    std::set<const BufferNode *> panels;
    for (size_t i = 0; i < gemms.size(); ++i)
        for (const Region *r : {&gemms[i]->a, &gemms[i]->b})
            if (wgmma[i] && view.count(r->buffer.get()) && multiPanel(*view[r->buffer.get()])) panels.insert(r->buffer.get());
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < gemms.size(); ++i) {
            const Gemm *g = gemms[i];
            if (wgmma[i] || instr[i] == GemmInstr::MmaPanels || !(panels.count(g->a.buffer.get()) || panels.count(g->b.buffer.get())))
                continue;
            if (!tileWhy[i].empty() || !mmaPanelsCan(*g, view)) return false;
            instr[i] = GemmInstr::MmaPanels, changed = true;
            for (const Region *r : {&g->a, &g->b})
                if (multiPanel(*view[r->buffer.get()])) panels.insert(r->buffer.get());
        }
    }
    return true;
}

/// Narrows the panel span of the N-major B tiles of products that wgmma cannot compute only because their
/// warpgroups split N inside a panel (a 64-column accumulator over 2 warpgroups, B's 128-byte rows one 128-byte
/// panel): the widest span (64 or 32 bytes) dividing one warpgroup's columns, where the product then runs on wgmma
/// (TileLang stores such a B in 64-byte panels too). A narrower span only eases the other products' rules but a
/// T.gemm_sp's K-major B (whole instructions in a panel), so every product is judged again after. The spans it
/// chose, by buffer.
std::map<const BufferNode *, int> narrowSplitPanels(const std::vector<const Gemm *> &gemms, const std::vector<std::string> &tileWhy,
                                                    std::map<const BufferNode *, TmaTile> &tiles, int wgs, bool rowsOnly) {
    std::map<const BufferNode *, int> chosen;
    std::map<const BufferNode *, const TmaTile *> view;
    for (auto &[b, t] : tiles) view[b] = &t;
    for (size_t i = 0; i < gemms.size(); ++i) {
        const Gemm &g = *gemms[i];
        auto tb = tiles.find(g.b.buffer.get());
        if (!tileWhy[i].empty() || g.sparse() || g.transB || tb == tiles.end() || wgmmaCan(g, view, wgs, rowsOnly)) continue;
        auto M = g.c.buffer && g.c.buffer->shape.size() == 2 ? constInt(g.c.buffer->shape[0]) : std::nullopt;
        auto N = M ? constInt(g.c.buffer->shape[1]) : std::nullopt;
        if (!N) continue;
        const int step = g.a.buffer->dtype.kind == DType::Int8 || g.a.buffer->dtype.kind == DType::UInt8 ? 16 : 8;
        const int wgN = wgmmaWarpgroups(*M, *N, wgs, step, g.policy).second;
        const int span = wgN > 1 ? panelSwizzleBytes(*N / wgN * tb->second.elemBytes) : 0;
        const int was = tb->second.swizzle;
        if (!span || span >= was) continue;
        tb->second.swizzle = span;
        if (wgmmaCan(g, view, wgs, rowsOnly)) chosen[tb->first] = span;
        else tb->second.swizzle = was;
    }
    return chosen;
}

/// Products tied by an accumulator, an A fragment or element-wise work between their fragments take one
/// instruction; a kernel whose products cannot all run on wgmma runs those of whole groups that can on it, the
/// rest on mma.sync, when the rest read A from shared memory (no fragment meets both layouts) and every tile in
/// the panel layout is read as panels by all its readers (gemm_ss_panels, where mma.sync reads one).
Plan plan(const Kernel &k, const std::vector<const Gemm *> &gemms, bool sparseWgmma, bool narrow) {
    Plan p;
    if (k.threads % 128) return p.why = "its threads are not whole warpgroups", p;
    if (k.producerThreads) return p.why = "it has warp roles", p;
    std::map<const BufferNode *, TmaTile> tiles;
    std::vector<std::string> tileWhy(gemms.size());
    bool rs = false;
    for (size_t i = 0; i < gemms.size(); ++i) {
        const Gemm *g = gemms[i];
        if (g->instr != GemmInstr::Auto) return p.why = "its products are already planned", p;
        for (const Region *r : {&g->a, &g->b}) {
            if (r == &g->a && aInRegisters(*g)) continue;
            TmaTile t;
            if (std::string why = operandTile(*r, t); !why.empty()) tileWhy[i] = why;
            else tiles[r->buffer.get()] = t;
        }
        rs |= tileWhy[i].empty() && aInRegisters(*g);
    }
    const int wgs = k.threads / 128;
    const bool rowsOnly = rs && registerOperandTied(k.body);
    if (narrow) p.spans = narrowSplitPanels(gemms, tileWhy, tiles, wgs, rowsOnly);
    std::map<const BufferNode *, const TmaTile *> view;
    for (auto &[b, t] : tiles) view[b] = &t;
    std::vector<bool> ok(gemms.size());
    for (size_t i = 0; i < gemms.size(); ++i) {
        const bool off = gemms[i]->sparse() && !sparseWgmma;
        ok[i] = !off && tileWhy[i].empty() && wgmmaCan(*gemms[i], view, wgs, rowsOnly);
        if (!ok[i] && p.why.empty())
            p.why = off ? "--no-sparse-wgmma keeps T.gemm_sp on mma.sp"
                        : !tileWhy[i].empty() ? tileWhy[i]
                                              : "a product's shapes, types, majors or split over " + std::to_string(wgs) +
                                                    " warpgroups are not wgmma's" +
                                                    (gemms[i]->sparse() ? " (T.gemm_sp on wgmma.mma_async.sp: float16 or bfloat16 "
                                                                          "into float32, K a multiple of 32, 64 rows per warpgroup)"
                                                                        : "");
    }
    p.instr.assign(gemms.size(), GemmInstr::Auto);
    // Groups: a product's accumulator with its A fragment and the fragments element-wise work ties to them.
    FragmentGroups groups;
    groups.visit(k.body);
    for (const Gemm *g : gemms)
        if (aInRegisters(*g)) groups.unite(g->a.buffer.get(), g->c.buffer.get());
    std::map<const BufferNode *, bool> groupOk;
    for (size_t i = 0; i < gemms.size(); ++i) {
        auto [it, fresh] = groupOk.emplace(groups.find(gemms[i]->c.buffer.get()), ok[i]);
        if (!fresh) it->second = it->second && ok[i];
    }
    std::vector<bool> wgmma(gemms.size());
    bool any = false, all = true;
    for (size_t i = 0; i < gemms.size(); ++i) {
        wgmma[i] = groupOk[groups.find(gemms[i]->c.buffer.get())];
        any |= wgmma[i], all &= wgmma[i];
    }
    if (!any) return p;
    for (size_t i = 0; i < gemms.size(); ++i)
        if (!wgmma[i] && aInRegisters(*gemms[i]))
            return p.why += "; and a product left on mma.sync reads A from registers", p;
    if (!readPanelsAsPanels(gemms, wgmma, tileWhy, view, p.instr))
        return p.why += "; and a product left on mma.sync cannot read the panel layout of a tile a wgmma reads", p;
    for (size_t i = 0; i < gemms.size(); ++i)
        if (wgmma[i]) p.instr[i] = GemmInstr::Wgmma;
    if (all) p.why.clear();
    return p;
}

} // namespace

bool registerOperandTied(const Stmt &s) {
    FragmentGroups groups;
    groups.visit(s);
    Gemms gemms;
    gemms.visit(s);
    std::set<const BufferNode *> accumulators;
    for (const Gemm *g : gemms.found) accumulators.insert(groups.find(g->c.buffer.get()));
    for (const Gemm *g : gemms.found)
        if (aInRegisters(*g) && accumulators.count(groups.find(g->a.buffer.get()))) return true;
    return false;
}

Program cpAsyncWgmma(const Program &p, const Variant &v, const SourceManager *sources) {
    if (!v.target.hasWgmma()) return p;
    Program out;
    bool changed = false;
    for (auto &k : p.kernels) {
        Gemms g;
        g.visit(k->body);
        const bool planned = std::any_of(g.found.begin(), g.found.end(), [](const Gemm *x) { return x->instr == GemmInstr::Wgmma; });
        if (g.found.empty() || planned) { // nothing to plan, or lowerWarpRoles put the products on wgmma
            out.kernels.push_back(k);
            continue;
        }
        // Narrower panels only where they put every product on wgmma: in a kernel that keeps some on mma.sync,
        // one more wgmma accumulator in flight beside them is registers the kernel may not have (dsa
        // sparse_mla_bwd's 64x64 dq_tail: 0 -> 268 B of spill at 255 registers), a trade not yet measured.
        Plan pl = plan(*k, g.found, v.options.sparseWgmma, true);
        if (!pl.spans.empty() && !pl.why.empty()) pl = plan(*k, g.found, v.options.sparseWgmma, false);
        const auto wg = std::count(pl.instr.begin(), pl.instr.end(), GemmInstr::Wgmma);
        int64_t sparse = 0; // of those on wgmma, the T.gemm_sp (wgmma.mma_async.sp)
        for (size_t i = 0; i < pl.instr.size(); ++i) sparse += g.found[i]->sparse() && pl.instr[i] == GemmInstr::Wgmma;
        const std::string sp = sparse ? " (" + std::to_string(sparse) + " T.gemm_sp on wgmma.mma_async.sp)" : "";
        const std::string name = "kernel '" + k->name + "' (" + v.target.name + ")";
        if (!wg) {
            remark(sources, k->launchLoc, name + " keeps mma.sync for its T.gemms on the cp.async path: " + pl.why);
            out.kernels.push_back(k);
            continue;
        }
        if (pl.why.empty())
            remark(sources, k->launchLoc, name + " runs its " + std::to_string(g.found.size()) + " T.gemm(s) on wgmma over cp.async tiles" + sp);
        else
            remark(sources, k->launchLoc, name + " runs " + std::to_string(wg) + " of its " + std::to_string(g.found.size()) +
                                              " T.gemm(s) on wgmma over cp.async tiles" + sp + ", the rest on mma.sync: " + pl.why);
        auto nk = std::make_shared<Kernel>(*k);
        Mark mark;
        mark.gemms = &g.found, mark.instr = &pl.instr;
        nk->body = mark.mutate(k->body);
        recordPanelOperands(*nk, pl.spans);
        out.kernels.push_back(nk);
        changed = true;
    }
    return changed ? out : p;
}

} // namespace tilec::passes
