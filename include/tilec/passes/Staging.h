/// \file
/// What the two ways of pipelining a T.Pipelined loop share (pipelineLoops' cp.async software pipeline and
/// specializeWarps' TMA ring): which transfers of a loop body can be issued ahead, and the ring of copies of
/// their destination buffers that iteration `ko` reads as copy `stage`.
#pragma once

#include "tilec/IR.h"

#include <map>
#include <set>
#include <vector>

namespace tilec::passes {

/// A T.Pipelined loop's body split into the transfers that can be issued ahead (top-level Copies whose
/// regions read only what the loop does not change, loopInvariantBuffers, and depend on no variable bound
/// inside the body) and the rest, in order. A copy whose position reads scalars the body sets ahead of it from
/// the loop variable and such loop-invariant values (paged attention's `kv_start = block_table[...] * size`, once
/// per iteration) is hoisted with those definitions written into its region; the scalars' stores stay in the rest.
struct LoopSplit {
    std::vector<const ir::Copy *> hoisted;
    std::vector<size_t> at; ///< where each hoisted copy stands in `top`
    /// Parallel to `hoisted`: the condition under which the body issues the copy (its region's scalars'
    /// definitions written in, over the loop variable), null for a top-level copy. Only with `guarded`.
    std::vector<ir::Expr> guards;
    std::vector<ir::Stmt> rest;
    std::vector<ir::Stmt> top; ///< keeps the hoisted statements alive
    std::vector<ir::Stmt> rewritten; ///< ... and the copies rewritten over the scalars' definitions
};
/// With `guarded` (pipelineLoops' cp.async pipeline), a copy at the top of the then-branch of a top-level `if`
/// without nesting is hoisted too, issued ahead under the condition, when the condition reads only what the
/// loop does not change (over such scalars) and nothing but that branch, from the copy on, mentions the copy's
/// tile: every read of the tile then happens in an iteration whose condition held, so a stage left unfilled
/// where it failed is never read (sparse attention's `if i_s >= 0: T.copy(K[..., i_s * N ...], K_shared)`).
LoopSplit splitPipelinedBody(const ir::For &loop, const ir::Stmt &kernelBody, bool guarded = false);

/// The variables of the loops inside `s`.
std::set<const ir::VarNode *> loopVariablesIn(const ir::Stmt &s);

/// Buffers `s` mentions (accesses and tile-statement regions), not counting the loop `skip` (may be null).
std::set<const ir::BufferNode *> mentionedBuffers(const ir::Stmt &s, const ir::StmtNode *skip);

/// Destinations of the Copies in `stmts`.
std::set<const ir::BufferNode *> copyTargets(const std::vector<ir::Stmt> &stmts);

/// The TMA swizzle span (bytes) of a shared tile whose rows are `rowBytes` long: the widest of 128, 64 and 32
/// that divides the row, 0 when none does. TMA stores the tile in that swizzle's panel layout and wgmma
/// reads it with the same mode (stdlib/tilec/sm90_tma.cuh).
int panelSwizzleBytes(int64_t rowBytes);

/// A ring of `stages` copies of `b` (shape (stages, ...b's shape)).
ir::Buffer ringOf(const ir::Buffer &b, int stages);

/// Replaces each buffer of `ring` by its ring, indexed by `stage` (loads, stores, T.copy, T.fill and T.gemm regions).
ir::Stmt stageBuffers(const ir::Stmt &s, const std::map<const ir::BufferNode *, ir::Buffer> &ring, const ir::Expr &stage);

} // namespace tilec::passes
