/// \file
/// Planning for specializeWarps (src/lower/WarpRolePlan.cpp): blocks per SM, registers per role, clusters, whether
/// the roles may walk several output tiles.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"
#include "tilec/passes/HopperOperands.h"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace tilec::passes {

/// Registers per thread for each role after setmaxnreg, for `blocks` blocks per SM: {producer, consumer}.
/// `registerA`: a T.gemm of the loop reads A from registers (attention's P.V), whose consumers hold two
/// accumulators and P at once: the producer keeps 24 registers even beside two consumer warpgroups (240 each).
std::pair<int, int> roleRegisters(int consumers, int producers, int blocks, const Target &t, bool registerA = false);
/// The 32-bit registers each consumer thread's fragments take.
int64_t fragmentWords(const ir::Kernel &k, int consumers);
/// Blocks per SM to plan the warp roles for: 1 or 2.
int plannedBlocks(const ir::Kernel &k, int consumers, int producers, const Target &t);
/// The registers ptxas can give each of `threads` threads at `blocks` blocks per SM without setmaxnreg.
int partitionRegisters(int threads, int blocks, const Target &t);

/// A cluster of two or four blocks that differ only in T.Kernel grid dimension `axis`: the tiles whose position
/// does not depend on that dimension (`shared`) are loaded once between them, each block loading its share of
/// the tile's boxes (of `boxRows` rows) and multicasting it to all.
struct ClusterPlan {
    int axis = -1;
    std::vector<bool> shared;       ///< per tile
    std::vector<int64_t> boxRows;   ///< per tile: its TMA box's rows
};

/// The grid dimension (a constant extent that `parts`, the blocks per cluster, divides; only `onlyAxis` where
/// given) whose shared tiles are the most bytes, or axis -1 when no tile can be shared.
ClusterPlan planCluster(const ir::Kernel &k, const std::vector<TmaTile> &tiles, const ir::VarNode *loopVar, int onlyAxis = -1,
                        int parts = 2);

/// A shared buffer the consumers' code (the kernel's statements and the pipelined loop's rest) touches other
/// than the TMA tiles (the ring's, and those loaded once, whose copies at `onceAt` the producer takes over);
/// null when none: then one output tile's consumers cannot race the next tile's over shared memory, and the
/// roles may walk several tiles without a barrier between them (the once tiles behind a full/empty barrier
/// pair of their own).
const ir::BufferNode *sharedOutsideTiles(const std::vector<ir::Stmt> &top, size_t at,
                                         const std::map<const ir::BufferNode *, const TmaTile *> &tiles,
                                         const std::vector<size_t> &onceAt);

} // namespace tilec::passes
