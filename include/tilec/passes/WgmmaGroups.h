/// \file
/// Which T.gemms run on wgmma together: fragments of one layout family (FragmentGroups, which cpAsyncWgmma
/// plans its groups by) and, for explicit warp roles, the products that must follow one reading a T.tma_copy
/// tile onto wgmma (wgmmaNeeds). Defined in src/lower/WgmmaGroups.cpp.
#pragma once

#include "tilec/IRVisitor.h"
#include "tilec/passes/HopperOperands.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes {

/// Which fragments must take layouts of one family: those one statement of element-wise or reduction work
/// touches together (a T.Parallel nest, a T.reduce, a copy, an atomic add, a store), through which
/// inferLayouts carries a layout from one to the other. A union-find over the fragments; a product's own
/// operands are not united (the caller ties them as its plan needs).
struct FragmentGroups : ir::IRVisitor {
    using ir::IRVisitor::visit;
    std::map<const ir::BufferNode *, const ir::BufferNode *> parent;
    const ir::BufferNode *find(const ir::BufferNode *b);
    void unite(const ir::BufferNode *a, const ir::BufferNode *b) { parent[find(a)] = find(b); }

    void visit(const ir::For &op) override;
    void visit(const ir::Store &op) override;
    void visit(const ir::Load &op) override;
    void visit(const ir::Copy &op) override;
    void visit(const ir::AtomicAdd &op) override;
    void visit(const ir::Reduce &op) override;
    void visit(const ir::Gemm &op) override { ir::IRVisitor::visit(op); }

  private:
    std::vector<const ir::BufferNode *> *unit_ = nullptr; ///< the fragments of the statement being walked
    void add(const ir::Buffer &b);
    template <class F> void inUnit(bool opens, F walk);
};

/// The T.gemms of explicit warp roles' consumers that must run on wgmma, and the tiles they read that the
/// threads fill themselves.
struct WgmmaNeeds {
    /// Each product that must run on wgmma, with the one reading a T.tma_copy tile that put it there (itself
    /// when it reads one).
    std::map<const ir::Gemm *, const ir::Gemm *> gemms;
    /// Their shared operands that no T.tma_copy loads (plain stores of the threads, T.ptx_cp_async, T.copy):
    /// tiles that swizzleShared stores in wgmma's panel layout (operandTile), each write of them through the
    /// generic proxy, fenced before the wgmma reads them (placeWgmmaWaits).
    std::map<const ir::BufferNode *, TmaTile> threadTiles;
    /// Why wgmma cannot read an operand of a product as a tile the threads fill (operandTile's reason).
    std::map<const ir::Gemm *, std::string> why;
};

/// What must run on wgmma in `bodies` (each consumer warp group's code) given the T.tma_copy tiles `tma`: a
/// product reading one of them (wgmma reads TMA's swizzled layout; mma.sync does not), and, to a fixed point,
/// a product tied to such a product by a fragment family (an accumulator or an A fragment, or element-wise
/// work between them: wgmma's accumulator layout is not mma.sync's) or by a shared tile (a tile wgmma reads is
/// stored in the panel layout, which every other product must read so too). A T.wgmma_gemm's product (the
/// program asks for wgmma, as TileLang gives it) is a seed too, with what it ties to, where wgmma computes them
/// all from tiles the threads fill; else they stay on mma.sync. T.gemm_sp products are left out (mma.sp reads
/// no panel layout; the caller reports them).
WgmmaNeeds wgmmaNeeds(const std::vector<ir::Stmt> &bodies, const std::map<const ir::BufferNode *, const TmaTile *> &tma);

/// The shared buffers `bodies` access through the generic proxy: every use but as a T.gemm's operand (loads,
/// stores, copies, fills, reductions, atomic updates).
std::set<const ir::BufferNode *> genericAccesses(const std::vector<ir::Stmt> &bodies);

/// Why wgmma cannot compute `g`, one of `needs.gemms`, from the T.tma_copy tiles `tma` and the tiles the threads
/// fill (one warpgroup; wgmmaCan), worded to follow "cannot compute it"; empty when it can.
std::string whyNotWgmma(const WgmmaNeeds &needs, const ir::Gemm &g, const std::map<const ir::BufferNode *, const TmaTile *> &tma);

} // namespace tilec::passes
