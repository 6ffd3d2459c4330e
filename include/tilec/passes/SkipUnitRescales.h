/// \file
/// In-place rescales of a thread's fragment elements skipped, by a vote of the warp, where every factor is 1.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"

namespace tilec::passes {

/// A per-thread nest (the unrolled and vectorized loops lowerParallel makes of a T.Parallel nest) whose one
/// statement multiplies a register array's element in place by a factor that depends on only some of the
/// nest's loop variables (`acc[i, j] *= scale[i]`: FlashAttention's output rescale by exp2(m_old - m_new))
/// becomes `if __any_sync(all lanes, f_1 != 1 || ... || f_n != 1): nest`, f_1 .. f_n the factor at each value
/// of those variables. Exact: x * 1 is x for every float (nvcc does not flush subnormal products: tilec's fast
/// math changes math functions and division only), NaN included (an FMUL would return the canonical NaN where the
/// skip keeps the payload: NaN either way). The vote makes the branch uniform over the warp, so that it is one
/// branch and not a predicate on every multiply. Where it applies:
///  - the array is float32 or float64 (16-bit products go through library calls whose handling of subnormals
///    this does not vouch for);
///  - the factor reads registers (local arrays and variables) and nothing else, not the multiplied array, and
///    calls nothing (a factor of constants and indices alone is no running value that could turn 1);
///  - at most 8 factor values a thread, each shared by at least 4 elements (the test pays for itself);
///  - the kernel's threads are whole warps and the nest runs under no test or loop that can differ between the
///    lanes of a warp (laneUniformity, include/tilec/passes/LaneUniformity.h: the vote needs all 32 lanes).
/// Placed after the attention schedule (overlapScores, pingPongConsumers, honourProgramWaits) moved the rescale:
/// the branch sits where the multiplies sat (no wgmma reading or writing those registers is in flight there).
/// LoweringOptions::skipUnitRescales (--no-skip-unit-rescales); -v remarks each kernel's count.
ir::Program skipUnitRescales(const ir::Program &p, const SourceManager *sources);

} // namespace tilec::passes
