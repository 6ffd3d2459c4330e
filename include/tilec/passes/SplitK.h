/// \file
/// Split-K for GEMMs whose output tiles leave most of the GPU idle (skinny and decode shapes).
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

#include <vector>

namespace tilec::passes {

/// A GEMM kernel written the usual way (T.Kernel over at most two grid dimensions of output tiles, T.clear of
/// a float32 fragment accumulator, one K loop of tile copies into shared memory and T.gemms into it, then one
/// T.copy of the accumulator to a global tile) whose tiles, a constant count, fill at most half of the largest
/// GPU among `targets` (Target::numSms), becomes a prim_func of two launches:
///  1. the same kernel over grid z = S splits, split z running K blocks [z * per, min((z + 1) * per, E)) of the
///     loop's E, its float32 partial tile written to a workspace P[S, C's shape] (T.alloc_global's workspaces:
///     the launch function allocates it stream-ordered); a split with no K blocks would write zeros;
///  2. a reduction that sums each element's S partials in split order 0, 1, ..., S - 1 and rounds once to C's
///     type. The order never depends on timing: the result is bit-reproducible from run to run.
/// S and the loop's stages are chosen from the constant tile count and the loop's constant trip count E by a
/// model of a memory-bound GEMM (src/lower/SplitK.cpp, modelTime): the operands' bytes plus the partials' round
/// trip, moved wave by wave of resident blocks (2 per SM where two blocks' rings fit its shared memory), a wave
/// running at the full rate only when its SMs keep 48 KiB of DRAM reads in flight (each block: its stages but
/// one of the loop's tiles, rows past a tensor's end not counted, the tiles of a tensor that fits in L2 and many
/// blocks re-read counted once: at M = 128 A's tiles are re-read by all 64 column blocks, half of each stage's
/// bytes come from L2). For each S the ring deepens past the written stages (stagesFor) while an SM keeps fewer
/// than 48 KiB in flight, every target's shared memory holds it and the blocks stay one wave (the seed's
/// 128x128x64 tile at M = 128: 3 -> 4 stages of 32 KiB). The fastest S among the divisors of E that leave
/// kMinKBlocks K blocks per split (else among uneven splits that leave as many, the last shorter), no larger
/// than keeps the partials' round trip under half the operands' bytes; `-v` reports the model's account
/// (blocks, per SM, waves, the ring and its DRAM bytes in flight, the times of half and twice as many splits
/// against it). A kernel whose tiles fill more than half of the SMs but at most one block per SM (M = 129..256
/// on 128x128 tiles at N = 8192) is not split; it gets the deeper ring alone (`-v` says so). The decision is
/// made at compile time from constant shapes only: a kernel whose tile count or K is a run-time value
/// (T.dynamic M, N or K) is left alone (`-v` says so for K). Runs once per program, before the per-target lowerings
/// (lowerVariants), so every target gets the same launches; --no-split-k turns it off; `-v` says what it chose.
ir::Program splitK(const ir::Program &p, const std::vector<Target> &targets, const LoweringOptions &o,
                   const SourceManager *sources = nullptr);

} // namespace tilec::passes
