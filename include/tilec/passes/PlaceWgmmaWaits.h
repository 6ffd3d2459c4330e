/// \file
/// Waits for the asynchronous warpgroup GEMMs (wgmma) that lowerGemm issues.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// A `tilec.wgmma_ss` only issues its instructions; its accumulators and shared operands stay in use until a
/// `tilec.wgmma_wait`. This pass places the waits:
///
/// - a warp-specialized consumer loop whose body is exactly "wait for stage s; wgmma...; release stage s"
///   keeps one k-block in flight: each iteration issues its wgmmas, waits until only those are pending
///   (`wgmma_wait<1>`: the previous iteration's are done) and then releases the previous iteration's stage;
///   `wgmma_wait<0>` follows the loop (with a ring of one stage: `wgmma_wait<0>` and the stage's own release
///   in each iteration, since the producer cannot load the next k-block before it);
/// - anywhere else, `wgmma_wait<0>` right after each run of consecutive wgmma calls, followed by
///   `tilec.wgmma_fence_operands` over the accumulators of the run and the A registers of its
///   `tilec.wgmma_rs` calls: no read of a result moves above the wait, and A's registers stay alive and
///   unchanged until the group that reads them has retired.
ir::Program placeWgmmaWaits(const ir::Program &p);

} // namespace tilec::passes
