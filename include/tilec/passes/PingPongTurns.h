/// \file
/// The turns of two consumer warpgroups at the tensor cores (src/lower/PingPongTurns.cpp): named barriers that let
/// one warpgroup issue its wgmmas while the other runs its softmax. Shared by pingPongConsumers and overlapScores.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// A loop whose body issues wgmmas of both kinds at its top level: attention's QK^T (SS) and P.V (RS).
bool isAttentionLoop(const ir::For &f);

/// The threads of each turn's named barrier: both consumer warpgroups.
constexpr int kPingPongThreads = 256;

/// The statements of the turns: pingPongConsumers places them around each wgmma of an attention loop;
/// overlapScores with --pingpong places them itself (its rotated loop issues QK^T of one block and P.V of the one
/// before in a single turn).
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
