/// \file
/// wgmma on the cp.async path (include/tilec/passes/CpAsyncWgmma.h).
#include "tilec/passes/CpAsyncWgmma.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/SpecializeWarps.h"
#include "tilec/passes/Staging.h"

#include <map>
#include <memory>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

struct Gemms : IRVisitor {
    using IRVisitor::visit;
    std::vector<const Gemm *> found;
    void visit(const Gemm &g) override { found.push_back(&g); }
};

struct MarkAll : IRMutator {
    using IRMutator::visit;
    Stmt visit(const std::shared_ptr<const Gemm> &op) override { return op->withInstr(GemmInstr::Wgmma); }
};

/// The tile a shared operand is, when its rows can be stored in the panel layout (wgmma's swizzle modes: rows
/// of a multiple of 32 bytes, in whole 8-row periods) and the product reads it whole; why not otherwise.
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

/// Why the kernel's products cannot all run on wgmma; empty when they can.
std::string whyNot(const Kernel &k, const std::vector<const Gemm *> &gemms) {
    if (k.threads % 128) return "its threads are not whole warpgroups";
    if (k.producerThreads) return "it has warp roles";
    std::map<const BufferNode *, TmaTile> tiles;
    bool rs = false;
    for (const Gemm *g : gemms) {
        if (g->instr != GemmInstr::Auto) return "its products are already planned";
        rs |= aInRegisters(*g);
        for (const Region *r : {&g->a, &g->b}) {
            if (r == &g->a && aInRegisters(*g)) continue;
            TmaTile t;
            if (std::string why = operandTile(*r, t); !why.empty()) return why;
            tiles[r->buffer.get()] = t;
        }
    }
    std::map<const BufferNode *, const TmaTile *> view;
    for (auto &[b, t] : tiles) view[b] = &t;
    for (const Gemm *g : gemms)
        if (!wgmmaCan(*g, view, k.threads / 128, rs))
            return "a product's shapes, types, majors or split over " + std::to_string(k.threads / 128) +
                   " warpgroups are not wgmma's";
    return "";
}

} // namespace

Program cpAsyncWgmma(const Program &p, const Variant &v, const SourceManager *sources) {
    if (!v.target.hasWgmma()) return p;
    Program out;
    bool changed = false;
    for (auto &k : p.kernels) {
        Gemms g;
        g.visit(k->body);
        if (g.found.empty()) {
            out.kernels.push_back(k);
            continue;
        }
        if (std::string why = whyNot(*k, g.found); !why.empty()) {
            remark(sources, k->launchLoc, "kernel '" + k->name + "' (" + v.target.name + ") keeps mma.sync for its T.gemms on the cp.async path: " + why);
            out.kernels.push_back(k);
            continue;
        }
        remark(sources, k->launchLoc, "kernel '" + k->name + "' (" + v.target.name + ") runs its " + std::to_string(g.found.size()) + " T.gemm(s) on wgmma over cp.async tiles");
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = MarkAll().mutate(k->body);
        out.kernels.push_back(nk);
        changed = true;
    }
    return changed ? out : p;
}

} // namespace tilec::passes
