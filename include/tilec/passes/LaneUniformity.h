/// \file
/// Which values of a lowered kernel can differ between the lanes of a warp or the threads of a block.
///
/// Two levels ask this question, and this header is the lowered one. On lowered IR (after lowerParallel: each
/// thread runs its own per-thread code, fragments are its registers) the answer follows from the code alone: the
/// thread index, what is computed from it, and what is stored under tests and loops that depend on it. On
/// tile-level IR (insertSyncs, before lowerParallel) a T.Parallel loop's variable and a fragment's element are
/// spread over the threads or not by the fragment layouts inferLayouts chose (a replicated fragment is held whole
/// by every thread), which the code does not show: syncs::Uniformity (src/lower/SyncHazards.h) answers there, with
/// this header's vocabulary (Spread, the spread of a call) for what the two levels share.
#pragma once

#include "tilec/IR.h"

#include <functional>
#include <map>

namespace tilec::passes {

/// How far apart the threads' values of an expression can be, narrowest first: the same in every thread of the
/// block; the same in the 32 lanes of each warp (the warp index `tx // 32`, a shuffle from one lane, a vote), but
/// not between warps; or different in the lanes of one warp.
enum class Spread { Block, Warp, Lane };
inline Spread widest(Spread a, Spread b) { return a < b ? b : a; }

/// The spread of a call's value, given the spread of each argument (`of`): the thread's own index
/// (tilec.role_thread) and calls that may return each thread something of its own (T.call_extern, a library call
/// with effects) vary between lanes; a vote (__any_sync) and a shuffle from one lane the whole warp names are the
/// same in a warp; a shuffle of a block-uniform value stays uniform; pure library calls and math functions spread
/// as far as their arguments.
Spread callSpread(const ir::Call &c, const std::function<Spread(const ir::Expr &)> &of);

/// The answer for one lowered kernel (laneUniformity). Thread-varying are: the thread index (and
/// tilec.role_thread) except where only its warp shows (`tx // 32k`, `tx >> 5`, `tx < 32k` for whole warps of
/// it); fragment elements; a local or var buffer (T.alloc_local / alloc_var, a thread's registers) once some
/// store to it stores a varying value, at a varying index or under control that varies (a test, a loop's bounds,
/// the roles of WarpRoles, which are whole warps), and always when a call is handed its address or a tile
/// statement writes it; the variable of a loop whose bounds vary. Block-uniform are constants, the block
/// indices, the scalar parameters and T.dynamic sizes, and loads at a uniform index of shared memory (the barriers
/// insertSyncs placed order its writers) or of a global tensor the kernel does not write (one it writes may
/// change between two threads' loads: another block's store, an atomic).
class LaneUniformity {
  public:
    /// How far apart `e`'s values can be.
    Spread of(const ir::Expr &e) const;
    /// The control `s` puts around its body: a loop's bounds (a T.Parallel loop's spreads over lanes), a test,
    /// WarpRoles' roles (whole warps); Block for a statement without a body.
    Spread around(const ir::StmtNode &s) const;
    bool sameInWarp(const ir::Expr &e) const { return of(e) != Spread::Lane; }
    bool sameInBlock(const ir::Expr &e) const { return of(e) == Spread::Block; }

  private:
    friend LaneUniformity laneUniformity(const ir::Kernel &k);
    friend struct SpreadWalk;
    const ir::VarNode *tx_ = nullptr;
    std::map<const ir::VarNode *, Spread> loops_;      ///< loop variables whose bounds vary
    std::map<const ir::BufferNode *, Spread> buffers_; ///< per-thread buffers whose elements vary
};

/// The lane uniformity of lowered kernel `k`, to a fixed point over its stores (a variable feeds another).
LaneUniformity laneUniformity(const ir::Kernel &k);

} // namespace tilec::passes
