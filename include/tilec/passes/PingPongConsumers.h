/// \file
/// Ping-pong of two consumer warpgroups at an attention loop's tensor cores (FlashAttention-3's schedule); the
/// turns themselves are in PingPongTurns.h.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// In a warp-specialized kernel with two consumer warpgroups, the consumer loop that issues both a
/// `tilec.wgmma_ss` and a `tilec.wgmma_rs` (attention: QK^T, then P.V on the softmax's probabilities) gets
/// turns: warpgroup g waits on named barrier kPingPongBarrier + g (bar.sync, 256 threads) before issuing each
/// wgmma and hands the turn to the other warpgroup (bar.arrive on its barrier) right after issuing it. The
/// tensor cores then run the warpgroups' GEMMs alternately (QK^T of 0, QK^T of 1, P.V of 0, P.V of 1, ...),
/// each warpgroup's softmax under the other's GEMM. Warpgroup 1 hands warpgroup 0 the first turn before the
/// loop, and warpgroup 0 takes the last one after it, so every barrier generation is complete at the end.
/// Both warpgroups run the loop the same number of times (its bounds are the block's, not the thread's).
/// Runs after overlapScores when the options ask for it (LoweringOptions::pingPong, --pingpong); a loop that
/// already takes turns (overlapScores gave them), and any other kernel, is returned unchanged.
ir::Program pingPongConsumers(const ir::Program &p);

} // namespace tilec::passes
