/// \file
/// Ping-pong of two consumer warpgroups at an attention loop's tensor cores (FlashAttention-3's schedule).
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

/// A loop whose body issues wgmmas of both kinds at its top level: attention's QK^T (SS) and P.V (RS).
bool isAttentionLoop(const ir::For &f);

/// The threads of each turn's named barrier: both consumer warpgroups.
constexpr int kPingPongThreads = 256;

/// The statements of the turns, for passes that place them themselves (overlapScores with --pingpong, whose
/// rotated loop issues QK^T of one block and P.V of the one before in a single turn).
class PingPongTurns {
  public:
    explicit PingPongTurns(const ir::Var &tx); ///< the consumer thread index
    ir::Stmt take(const SourceRange &loc) const;     ///< wait for this warpgroup's turn (bar.sync)
    ir::Stmt handOver(const SourceRange &loc) const; ///< give the other warpgroup its turn (bar.arrive)
    ir::Stmt open(const SourceRange &loc) const;     ///< before the loop: warpgroup 1 gives 0 the first turn
    ir::Stmt close(const SourceRange &loc) const;    ///< after it: warpgroup 0 takes the last hand-over

  private:
    ir::Expr wg_; ///< the consumer warpgroup, 0 or 1
    /// ... broadcast from lane 0 (__shfl_sync), as the condition of open and close: ptxas then knows the
    /// branch is uniform over each warp; under a condition on the thread index itself it kept the key-block
    /// loop's wgmma descriptors in vector registers (two R2UR per HGMMA in causal kernels, which keep more
    /// values live across the loop).
    ir::Expr warpWg_;
};

} // namespace tilec::passes
