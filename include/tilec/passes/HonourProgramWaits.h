/// \file
/// The program's own wgmma waits (TileLang's T.wgmma_gemm / T.wait_wgmma) honoured.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// The mark the front end puts right after the product of a `T.wgmma_gemm`: `tilec.wgmma_wait(-1)`, "no wait of
/// tilec's own here: the program places it" (a count no wait can have). placeWgmmaWaits leaves the wgmma call it
/// follows without a wait after its run; honourProgramWaits removes the marks. Where a pass separates a mark
/// from its call, the call is waited for as a T.gemm's is (at once), which is always correct.
ir::Stmt programWaitsMark(const SourceRange &loc);
bool isProgramWaitsMark(const ir::Stmt &s);

/// A wgmma group issued by a `T.wgmma_gemm` stays in flight until the program's `T.wait_wgmma(n)` retires it
/// (`tilec.wgmma_wait(n)`: all but the n youngest groups of the warpgroup), across mbarrier and named-barrier
/// operations, as on TileLang. Other threads' writes of its shared operands are ordered by the program's own
/// waits and barriers (as on TileLang; the simulator reports a missing one as a race). The issuing threads'
/// own statements are not: before one that reads or writes a group's accumulators or register operand, or
/// writes one of its shared operands, the group is retired by a wait this pass inserts (the fewest groups
/// retired that the analysis can prove enough; wgmma_wait<0> where paths disagree). After each wait the
/// registers of the groups it retires, and no group still in flight writes, are pinned
/// (tilec.wgmma_fence_operands: no read of them is scheduled above the wait). A program wait where no group
/// can be in flight (a product lowered to mma.sync) is dropped.
ir::Program honourProgramWaits(const ir::Program &p);

} // namespace tilec::passes
