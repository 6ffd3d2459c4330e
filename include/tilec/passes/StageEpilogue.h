/// \file
/// The Hopper GEMM epilogue: wgmma accumulators to global memory through shared memory and TMA stores.
#pragma once

#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

#include <vector>

namespace tilec {
class SourceManager;
}

namespace tilec::passes {

/// In the consumer role of a warp-specialized kernel (specializeWarps), rewrites the T.Parallel nest of a
/// `T.copy(acc, C[r0, c0])` that stores a whole wgmma accumulator (a 2-D fragment in wgmma's layout,
/// float32 or float16) into a float16 / bfloat16 tile of a global tensor of 2 to 5 dimensions written by
/// nothing else (the fragment's columns along its innermost dimension, its rows along one other, every other
/// index fixed: attention's `T.copy(acc, O[b, rows, h, :])` of a (B, S, H, D) tensor), into
/// the staged epilogue of stdlib/tilec/sm90_store.cuh: per consumer warpgroup, pieces of 64 rows x 64 (or
/// 32, 16) columns go through `v.options.epilogueBuffers` shared staging buffers (`tilec_epi`, planned by
/// planSharedMemory, 1024-byte aligned) with stmatrix, and the warpgroup's first thread stores each piece
/// with a TMA store through a tensor map of C (Kernel::tensorMaps, its box {piece columns, 1.., 64 rows,
/// 1..}; TMA clips partial tiles, rows past a sequence's end included). Before a
/// buffer is written again its previous store has finished reading it (tma_store_wait in the storing
/// thread, then the warpgroup's named barrier); the consumer role ends with a wait for all its stores.
/// Fewer buffers are used when the staging would not fit the blocks per SM the kernel was planned for, and
/// none (the nest stays: direct stores from registers) when even one does not fit or the copy is not such
/// a copy. Under -v it says, per such T.copy, which epilogue it took and why.
ir::Program stageEpilogue(const ir::Program &p, const Variant &v, const SourceManager *sources = nullptr);

} // namespace tilec::passes
