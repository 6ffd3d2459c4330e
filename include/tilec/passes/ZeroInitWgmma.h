/// \file
/// A wgmma product that overwrites the accumulators it follows a clear of: the clear dropped, the product's first
/// k-step issued with scale-d 0.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// In every statement list, a `tilec.wgmma_ss` that writes every accumulator of its `c` (rows == M, no run-time
/// `live`) preceded by a clear of exactly those, with only statements between that do not touch the register
/// array (the loop's barrier waits, a ping-pong turn), becomes `tilec.wgmma_ss_init` and the clear goes: wgmma's
/// scale-d is 0 in its first k-step, so D = A B there (0 + A B is the same value) and no instruction zeroes the
/// registers. The clear is `tilec.wgmma_clear` of them (the FlashAttention-3 schedule's scores, overlapScores,
/// placeWgmmaWaits), whose empty asm pins the zeros and so keeps ptxas from folding them into the product as it
/// does a plain T.clear's (HGMMA ..., RZ, !UPT); FlashAttention-3 issues its QK^T so
/// (`zero_init`): 32 CS2R fewer a 64 x 128 score tile a warpgroup and key block. Only the sign of an exact zero
/// sum may differ (-0 where 0 + -0 gives +0). A GEMM's clear before its k-loop stays (the loop touches the
/// accumulators first). Placed after the attention schedule (placeWgmmaWaits, overlapScores, honourProgramWaits,
/// skipUnitRescales); the later passes that list wgmma calls (swizzleShared through wgmmaSharedOperands,
/// loadBatchLaunchBounds, planSharedMemory) list this one too.
/// LoweringOptions::zeroInitWgmma (--no-zero-init-wgmma).
ir::Program zeroInitWgmma(const ir::Program &p);

} // namespace tilec::passes
