/// \file
/// Intra-warpgroup overlap of an attention loop: the next key block's QK^T under this block's softmax
/// (FlashAttention-3's intra-warpgroup pipelining).
#pragma once

#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

namespace tilec {
class SourceManager;
}

namespace tilec::passes {

/// In a warp-specialized kernel, the consumer loop of attention as placeWgmmaWaits leaves it (clear of the
/// scores, wait for K's stage, QK^T by wgmma SS into the scores, wait, release of K's stage, the softmax, wait
/// for V's stage, P.V by wgmma RS, wait, release of V's stage) is rotated as FlashAttention-3's mainloop does
/// it, so that the tensor cores run P.V of block ko - 1 while block ko's softmax runs: the first block's QK^T
/// and softmax are peeled; each later iteration issues QK^T of ko and then, without a wait between, P.V of
/// ko - 1 (preceded by the rescale of the output that belongs to ko - 1); waits for QK^T alone (wait_group 1,
/// P.V left in flight) and releases K's stage; runs the part of the softmax that touches neither P.V's
/// operands (the probabilities) nor its accumulator (the output) under P.V; waits for P.V (wait_group 0),
/// releases V's stage of ko - 1 and then writes the probabilities. The output's rescale (statements that touch
/// the output only and commute with the rest of the softmax) moves to the next iteration, between its QK^T and
/// P.V, where it runs under that QK^T; the epilogue issues the last P.V. A statement that shares a buffer
/// with an earlier one that runs after P.V runs after it too (a sum over P written directly by the
/// exponentials, as examples/flash_attn.tile does: less of that softmax runs under P.V). One score
/// accumulator, no copies, no accumulator defined while a wgmma that writes it is in flight. With turns and two consumer warpgroups, the issue of each iteration's two
/// wgmmas is one turn (PingPongTurns): the prologue's QK^T and the epilogue's P.V are a turn each. Runs after
/// placeWgmmaWaits unless --no-intra-overlap turns it off (LoweringOptions::intraOverlap); a loop of any
/// other shape, and every other kernel, is returned unchanged. Which loops, and whether with turns, is
/// LoweringOptions::attentionSchedule of the loop's head dimension (its QK^T's K): by default those of head
/// dimension >= 128 whose K and V rings have two stages or more, with turns where the kernel has two consumer
/// warpgroups; by default not a loop whose rotation keeps the output, the scores and P live in more than a
/// consumer thread's registers less 64 (ptxas spills there).
/// -v says, for each attention loop, which schedule it took and why (remarks located in `sources`).
ir::Program overlapScores(const ir::Program &p, const LoweringOptions &o, const SourceManager *sources = nullptr);

} // namespace tilec::passes
