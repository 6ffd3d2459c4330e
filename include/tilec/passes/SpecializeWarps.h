/// \file
/// Hopper's producer/consumer pipeline for T.Pipelined loops (TMA rings guarded by mbarriers, wgmma).
#pragma once

#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

namespace tilec {
class DiagnosticEngine;
}

namespace tilec::passes {

/// On targets with TMA and wgmma (sm_90a), rewrites a kernel whose top level holds a T.Pipelined loop of
/// tile loads feeding T.gemm into warp-specialized code:
///
/// - the loop's hoistable global-to-shared copies (see Staging.h) that TMA can move (a 2-D box of the source
///   tensor: rows along one dimension, whole rows of at most 256 elements per box, the row a multiple of
///   32 bytes) become `tilec.tma_load_tile` calls into a ring of `num_stages` copies of their buffers, stored
///   in the panel layout of the TMA swizzle (128, 64 or 32 bytes: the widest dividing the row), each source
///   described by a tensor map (Kernel::tensorMaps) the launcher encodes;
/// - a top-level copy before the loop whose shared destination only the loop uses (FlashAttention's Q) is
///   such a tile too, loaded once by the producer before its loop onto a barrier of its own, which the
///   consumers wait for where the copy was;
/// - every T.gemm of the loop whose shared operands are both such tiles (SS), or whose A is a 16-bit
///   fragment and B such a tile (RS: attention's P.V, the consumer warpgroups then splitting the rows of every
///   product of the loop), is marked wgmma (its accumulator, and an RS product's A, then take wgmma's layout,
///   inferLayouts); when a loop has a tile TMA cannot move, a ring buffer written in the loop or read by a
///   T.gemm wgmma cannot take, nothing changes and the loop keeps the cp.async pipeline of pipelineLoops;
/// - on sm_90a (issue 25) the consumers may also read ring tiles with their own loads (element-wise work,
///   copies into fragments: those loads take TMA's panel layout, swizzleShared), a group of tiles so read being
///   released by every consumer thread after a proxy fence (its empty barrier counts the consumer threads);
///   a copy into a whole 1-D shared buffer (a row of the source's innermost dimension, a multiple of 128 bytes,
///   rowCopies) is an unswizzled TMA box; a product may read a shared operand the consumers fill themselves
///   (operandTile), and where the loop needed any of these, the products outside it run on wgmma too, or the
///   loop keeps cp.async; and a loop that needed any of these takes warp roles only where its cost test
///   (WarpRoleCost.h: the stage loads each path keeps in flight per SM, from blocks per SM, stages, trips and
///   barrier groups) finds them ahead of the cp.async pipeline;
/// - a producer warpgroup (128 threads) is added after the kernel's own threads (Kernel::producerThreads);
///   in WarpRoles, its first thread walks the loop issuing each stage's loads after waiting for the stage's
///   `empty` mbarrier and announcing the bytes on its `full` mbarrier (expect_tx covers every tile of the
///   stage); the consumers run the rest of the kernel, each iteration waiting on `full[stage]` and arriving
///   on `empty[stage]` (phase parity = pass over the ring & 1). The tiles first used by different statements
///   of the body (attention's K by QK^T, V by P.V) have a full/empty pair each (group g at 2 g S ...): the
///   consumers wait for a group right before its first use and release it right after its last (placeWgmmaWaits
///   puts the wgmma wait between); a GEMM's tiles form one group, waited for at the top and released at the
///   end of the iteration. setmaxnreg moves registers from
///   the producer to the consumers, planned for two blocks per SM where two blocks' shared memory fits and
///   the consumers' fragments still fit their registers (Kernel::minBlocksPerSM, the launch bound), else
///   one; thread 0 initializes the mbarriers (2 * num_stages per group, one for the once-loaded tiles) before
///   a block barrier. A kernel with once-loaded tiles is not persistent.
/// On sm_90 (TMA and mbarriers, but neither wgmma nor setmaxnreg) the same roles and rings, with two changes:
/// the T.gemms reading the ring tiles are marked GemmInstr::MmaPanels (mma.sync, ldmatrix addressing TMA's
/// panel layout: gemm_ss_panels / gemm_rs_panels) and keep mma.sync's layouts; and the producer is one warp
/// (32 threads) instead of a warpgroup, since without setmaxnreg every thread keeps the registers the launch
/// bound gives it (no cluster, no register moving).
/// T.ClusterKernel's cluster_dims (Kernel::clusterDims) ask for clusters: two blocks along one grid dimension
/// are planned as above (whatever the waves), and what cannot be honoured is an error in `diag` at the
/// argument (another cluster shape, a target other than sm_90a, a kernel that gets no persistent one-group
/// warp roles, no tile to share along that dimension); the variant without TMA and --no-cluster launch
/// without clusters (a -v note).
/// Under -v (spdlog's debug level) it says, per T.Pipelined loop, which path it took and why, located in
/// `diag`'s sources when given.
ir::Program specializeWarps(const ir::Program &p, const Variant &v, DiagnosticEngine *diag = nullptr);

} // namespace tilec::passes
