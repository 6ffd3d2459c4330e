/// \file
/// The launch bound of kernels whose unrolled loops issue many global loads together: registers for them.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/Target.h"

namespace tilec::passes {

/// Gives a kernel without a launch bound of its own (warp roles, persistent kernels and one-wave grids keep
/// theirs) and without tensor-core products (their accumulators decide its registers) the bound of one block per SM, as TileLang gives every kernel, where its largest batch of global loads
/// (the loads of one outermost unrolled loop without a barrier or an asynchronous transfer, in 4-byte registers:
/// a vectorized access at its full width, times the trips of the unrolled loops around it) and 32 other registers
/// pass 64 (more than 128 bytes of loads a thread). Without a bound ptxas interleaved such a batch with its uses:
/// sparse_mla_bwd_preprocess's 32 unrolled 16-byte loads (O and dO of 16 column steps) at 64 registers with 12
/// bytes of spill, waited for in 11 rounds; with (128, 1) 107 registers, 3 rounds, as TileLang's kernel. The
/// bound is 1 and never N > 1: a cap of registersPerSM / (N x threads) fell below what ptxas takes on its own in
/// kernels whose batch is not their register need (chunk_bwd_dqkwg 255 -> 80 registers and 3644 bytes of spill
/// at (32, 21)), and a bound of 1 caps nothing. A smaller batch keeps ptxas's own choice (layernorm's 16-byte row
/// copies, all in flight at 63 registers already). Tensor-core kernels: wy_fast_bwd_split's loads are a batch of
/// 64 registers, but the bound took ptxas from 128 to 132 registers (4 -> 3 blocks per SM) for no load.
/// `c.everyKernel` (--one-block-bounds, the default): every kernel without a bound of its own gets one, its loads
/// and products aside, as TileLang gives (threads, 1). The blocks per SM of the bound: `c.blocks` where given
/// (--bound-blocks, an occupancy A/B); else, for a kernel without tensor-core products and with `c.occupancy`
/// (--no-occupancy-bounds turns it off), occupancyBlocks' choice from its shared memory and an estimate of its
/// registers (the cap that chunk_bwd_dqkwg's batch figure could not give), said by -v; else 1.
struct LaunchBoundChoice {
    bool everyKernel = false;
    int blocks = 0;       ///< 0: not given
    bool occupancy = false;
};
ir::Program loadBatchLaunchBounds(const ir::Program &p, const Target &t, const LaunchBoundChoice &c,
                                  const SourceManager *sources = nullptr);

/// The registers (4-byte words) of the largest batch of global loads `body` issues in one outermost unrolled
/// loop without a barrier or an asynchronous transfer (0 when none).
int64_t loadBatchRegisters(const ir::Stmt &body);

} // namespace tilec::passes
