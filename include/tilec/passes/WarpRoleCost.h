/// \file
/// Whether a T.Pipelined loop whose consumers do more than issue wgmma is worth warp roles, or runs faster on
/// the cp.async pipeline (src/lower/WarpRoleCost.cpp): specializeWarps' cost test.
///
/// Warp roles launch a producer warpgroup beside the kernel's threads and plan the registers for one or two
/// blocks per SM (setmaxnreg, the launch bound); the cp.async pipeline keeps the kernel's own threads and runs
/// as many blocks per SM as their shared memory and registers allow. Where the consumers only issue wgmma
/// (GEMM, attention forward), the tensor cores are what the loop waits for and two blocks keep them busy; where
/// they also load, convert or scale the staged tiles, fill an operand of their own or load rows (the loops
/// speed25f put on warp roles: chunked recurrences, convolution's im2col), what the loop waits for is memory,
/// and memory throughput is what each SM keeps in flight (Little's law). The test compares the stage loads
/// each path keeps in flight per SM: warp roles blocks x min(stages, trips) (the producer fills the whole
/// ring ahead of its consumers), cp.async blocks x max(1, min(stages - 1, trips)) (one stage is the one being
/// read); where the warp roles wait for a stage's tiles in G barrier groups (attention backward: each tile
/// where first used), the consumers start on a stage while (G - 1) / G of it is still landing, which counts
/// for warp roles; a tie keeps cp.async (no producer warps, no mbarrier round trips). Session 17 on the H200
/// (same-run ratios against TileLang, before -> after speed25f put them on warp roles), with the figures this
/// test prints: chunk_scaled_dot_kkt 1.05 -> 0.61 (4 against 5), convolution 64x128 1.00 -> 0.85 (6 against 8),
/// wy_fast recompute 1.01 -> 0.88 (6 against 8) keep cp.async; convolution 128x256 0.67 -> 0.71 (3 against 2),
/// mamba chunk_state 0.39 -> 0.46 (4.75 against 3), chunk_scan 0.34 -> 0.37 (5.5 against 2), block causal
/// backward dkv 0.68 -> 0.85 (7.5 against 4), MHA backward 0.76 -> 0.89 (2.75 against 2) keep warp roles.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilec::passes {

/// What the lowering knows about a T.Pipelined loop and its kernel when specializeWarps weighs the two paths.
struct PipelineFacts {
    int stages = 1;                   ///< num_stages
    std::optional<int64_t> trips;     ///< the loop's trip count, where constant
    int consumers = 128;              ///< the kernel's own threads (the consumers with warp roles)
    int warpRoleBlocks = 1;           ///< blocks per SM planned for the warp roles (plannedBlocks)
    int groups = 1;                   ///< the warp roles' full/empty barrier pairs per stage (tiles first used apart)
    int64_t sharedBytes = 0;          ///< shared memory per block on the cp.async path (its stages included)
    int64_t registerWords = 0;        ///< the 32-bit registers each thread's fragments and locals take at their peak
    bool consumerWork = false;        ///< the consumers do more than issue wgmma on the staged tiles
};

/// The two paths weighed: blocks per SM and stage loads in flight per SM for each (in units of 1 / groups of a
/// stage), and the one taken.
struct PipelineWeights {
    bool warpRoles = true;
    int cpAsyncBlocks = 0, warpRoleBlocks = 0;
    int cpAsyncRegisters = 0;         ///< the registers per thread estimated for the cp.async path
    int64_t cpAsyncInFlight = 0, warpRoleInFlight = 0;
    int groups = 1;                   ///< the unit of the two figures above: 1 / groups of a stage
    std::string why;                  ///< the figures, for -v
};

/// Registers per thread a kernel of `words` fragment and local registers is estimated to take (addresses, loop
/// counters and temporaries on top), rounded up to ptxas' allocation granularity of 8.
int estimatedRegisters(int64_t words);

/// Blocks per SM for `threads` threads of `registers` registers and `sharedBytes` of shared memory each.
int residentBlocks(int threads, int registers, int64_t sharedBytes, const Target &t);

/// The cost test (see the file comment).
PipelineWeights weighPipelines(const PipelineFacts &f, const Target &t);

/// The registers per thread that the fragments (split over `threads` threads) and the local arrays live at the
/// same time take at their peak, live ranges taken over the kernel's top-level statements `top`.
int64_t peakRegisterWords(const std::vector<ir::Stmt> &top, const std::vector<ir::Buffer> &allocs, int threads);

} // namespace tilec::passes
