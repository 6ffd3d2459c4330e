/// \file
/// GEMM tiles taller than the rows anyone can observe, computed at the rows that are (src/lower/ShrinkGemmTiles.cpp).
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"

namespace tilec::passes {

/// Where boundGemmRows' analysis (liveAccumulatorRows) proves that no one observes the rows of a fragment
/// accumulator C past R, and R leaves whole 64-row panels of C out (decoding's M = 16 in the seed's 128-row
/// tile), the tile itself becomes as tall as the live panels, r = ceil(R / 64) * 64 rows:
/// - C becomes an (r, N) fragment: its T.clear / T.fill and its T.copy into the global tensor cover r rows;
/// - each shared A tile of C's T.gemms becomes r rows (the rows dimension is the second for transpose_A), its
///   T.copy from the global tensor loads r rows (the rows past R lie past the tensor's end: zeros before,
///   not loaded now; they reach only rows of C no one reads);
/// - a T.Pipelined loop loading such a tile takes as many stages more as the shared memory the author's tile
///   asked for now holds: floor(S * old stage bytes / new stage bytes) (the seed's 128x128x64 float16 tile,
///   3 stages of 32 KiB, becomes 64x128x64 in 4 stages of 24 KiB): more bytes of B in flight per SM, which is
///   what decode GEMMs are bound by (docs/PERFORMANCE.md, session 17).
/// Only where every mention of C and of its A tiles is one of those statements (whole regions), every T.gemm
/// into C reads such a tile, the A tiles agree on r, the consumer warpgroups (threads / 128) can split r rows
/// by N in 16-column steps, and the warp policy is Auto or FullCol unless every warp keeps 16 rows. Fewer accumulator registers and less shared
/// memory per block, fewer tensor-core instructions on padding: the boundGemmRows bound without the panels'
/// registers and shared memory. Runs once per program before splitK (lowerVariants), which then weighs the
/// shrunk tile; `-v` says what it did.
ir::Program shrinkGemmTiles(const ir::Program &p, const SourceManager *sources = nullptr);

} // namespace tilec::passes
