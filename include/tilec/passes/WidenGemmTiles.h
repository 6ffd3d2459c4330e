/// \file
/// Two of a GEMM's one-warpgroup 128-row output tiles side by side in one block of two consumer warpgroups
/// (the seed's gemm.tile as written: 128x128 tiles on 128 threads become 128x256 tiles on 256).
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

#include <vector>

namespace tilec::passes {

/// A GEMM kernel written the usual way (matchGemmKernel) on one warpgroup (threads = 128) whose float32
/// accumulator is 128 rows (two of wgmma's 64-row panels) by N columns, 2N being wgmma's widest N (256), and
/// whose only use of the grid index b along the output's columns is the column offset b * N of its B tile's copy
/// and of its copy out, becomes the kernel of half as many blocks along that dimension (a constant, even extent),
/// each computing the two tiles b = 2i and 2i + 1 as one 128 x 2N tile: the B tile and the accumulator twice as
/// wide, 256 threads (two consumer warpgroups of 64 x 2N each on sm_90a: A's tile read once for both halves, the
/// L2-to-SM bytes of a K block per output element down by a quarter, one wgmma of N = 256 per panel and K step),
/// the T.Pipelined loop deepened to at least the shared memory of the two blocks an SM held of the narrow tile
/// (rounded up to a whole wide stage) where one block's shared memory holds it. Each output element is the same sum in the same order: only which block
/// and thread compute it changes. Applied only where every target has wgmma (Target::hasWgmma), the widened
/// tiles still number at least the largest target's SMs (--num-sms) and a block of the written ring fits every
/// target's shared memory. On with LoweringOptions::widenGemmTiles (--widen-gemm-tiles; off by default until
/// timed); `-v` says which kernels it widened and why it left a kernel of that class alone. Runs once per
/// program after splitK (lowerVariants), so every target gets the same launch.
ir::Program widenGemmTiles(const ir::Program &p, const std::vector<Target> &targets, const LoweringOptions &o,
                           const SourceManager *sources = nullptr);

} // namespace tilec::passes
