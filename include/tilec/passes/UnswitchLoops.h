/// \file
/// Tests that a loop's whole body sits under and that do not change while it runs, taken out of the loop.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// `for i: if c: S` becomes `if c: for i: S` where c does not depend on i and reads only what the loop
/// cannot change (no calls; loads of registers the loop does not write, or of tensors the kernel does not
/// write): a layout spread over fewer threads than the block (`if tx * 4 < 256`, TileKernels' column
/// kernels), or a row range, tested once rather than at every iteration. In a serial loop the test was a
/// branch at each iteration, across which nvcc does not move the next iterations' loads: unswitched, the loop's
/// unrolled iterations issue their loads together. Repeated outwards through nested loops.
ir::Program unswitchLoops(const ir::Program &p);

} // namespace tilec::passes
