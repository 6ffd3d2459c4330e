/// \file
/// Intra-warpgroup overlap of an attention loop: the next key block's QK^T under this block's softmax
/// (FlashAttention-3's intra-warpgroup pipelining).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// In a warp-specialized kernel, the consumer loop of attention as placeWgmmaWaits leaves it (clear of the
/// scores, wait for K's stage, QK^T by wgmma SS into the scores, wait, release of K's stage, the softmax, wait
/// for V's stage, P.V by wgmma RS, wait, release of V's stage) is rotated so that QK^T of block ko + 1 runs on
/// the tensor cores while block ko's softmax runs. QK^T writes a second score accumulator (`<scores>_next`,
/// added to the kernel's allocations); each iteration waits for the QK^T issued in the one before (leaving
/// P.V of ko - 1 in flight), copies its scores into the softmax's accumulator, releases K's stage, issues the
/// next QK^T, and waits for P.V of ko - 1 (leaving that QK^T in flight) before the softmax touches the
/// probabilities and the output accumulator, releasing V's stage of ko - 1 there; the prologue issues QK^T of
/// the first block, the epilogue retires the last P.V and releases its stage. Runs after placeWgmmaWaits when
/// the options ask for it (LoweringOptions::intraOverlap, --intra-overlap); a loop of any other shape, and every other
/// kernel, is returned unchanged.
ir::Program overlapScores(const ir::Program &p);

} // namespace tilec::passes
