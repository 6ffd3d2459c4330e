/// \file
/// Tests that the branches around them already decide, folded: bounds checks inside an author's interior branch.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// Every comparison in the test of an `if` or a select that follows from the tests of the branches around it
/// (and from the ranges of the variables in scope) is replaced by `true`; an `if` whose test became true is its
/// then-branch. TileKernels' per_block_cast branches on `pid_x < ceildiv(num_tokens, 128) - 1` to give its
/// interior tiles code without bounds tests; predicateBounds still guards every row there
/// (`pid_x * 128 + r < num_tokens`), which follows: `pid_x * 128 + 127 <= 128 * ceildiv(n, 128) - 129 < n`.
///
/// A fact of a branch holds only under it, so a test it folds must stay under it: folded earlier (predicateBounds,
/// session 30's tk30 rule), a guard was dropped and hoistNestInvariants / vectorizeAccesses then moved the load
/// ahead of the branch, unguarded (an out-of-bounds read: tests/fuzz/index_width_gather_dynamic.tile). This pass
/// therefore runs after every pass that moves a load or a test across a branch (hoistNestInvariants,
/// vectorizeAccesses, unswitchLoops, unrollSerialLoops, sinkTransferWaits: src/lower/Lower.cpp); a load they
/// took out of its branch is no longer under the branch's test and keeps its guard.
///
/// What a fact may be: a comparison of integers that reads no memory (a variable never changes in its scope; a
/// value in memory may), from the conjuncts of a then-branch's test or the negated disjuncts of an else-branch's.
/// What follows is proved in exact integer arithmetic (the lowering's premise; widenIndices makes the emitted
/// arithmetic exact): a variable bounded by a fact substituted at its bound where that lowers the difference,
/// then floor divisions, minima and maxima bounded by their operands (`d * (x // d) <= x`). A test no fact
/// shares a variable with is folded where the ranges alone decide it, wherever it stands: what other facts are in
/// scope never decides its fate.
///
/// Warp roles (a producer and consumers handing a ring's stages over through mbarriers) must agree on every
/// test that decides whether a tile or an iteration runs, or the ring hangs. A fold keeps that agreement because
/// it is sound: a test folded to true is true in every thread that evaluates it, so no thread's decision changes.
/// Two rules make it hold by construction and keep the roles' code alike:
/// - Ranges: each role is folded with its own threads' range of the thread index (WarpRoles: consumers
///   [0, consumerThreads), producers after them), not the kernel's `threads` (the first consumer warp group).
/// - Uniformity: a test that reads no thread-varying value (laneUniformity's: the thread index, a loop variable
///   whose bounds read it) is decided by the facts that read none and the ranges of the other variables. The
///   roles differ only in the thread index (its range, the elected thread's `if tx == c`, per-lane tests), and specializeWarps gives
///   both the same walk and guards (TileWalks.cpp), so a guard both roles copy folds in both or in neither.
///   gemm_tile_walk.tile's `guarded_x`: `if bx < 32` with bx = tile % 32 in tilec's persistent walk (grid
///   dimension 0 is 32) is always true, and is folded in both roles.
ir::Program foldImpliedConditions(const ir::Program &p);

} // namespace tilec::passes
