/// \file
/// The launch bound of kernels whose grid is one wave: no register budget kept for blocks that never come.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"

namespace tilec::passes {

/// Gives a kernel whose grid is a constant of at most `t.numSms` blocks (every SM runs at most one of its blocks,
/// --num-sms names another GPU) a launch bound of one block per SM (Kernel::minBlocksPerSM = 1, printed as
/// `__launch_bounds__(threads, 1)`), as TileLang gives every kernel. Without it ptxas sizes the registers for as
/// many resident blocks as the hardware allows (32 registers at 256 threads), which keeps few independent loads in
/// flight: get_fused_mapping's 132 loads of one column waited for in about twenty rounds instead of one. The bound
/// lowers no register cap (one block of `threads` may use what the SM has for it), so it cannot cause spills.
/// Kernels that already have a bound (warp roles) and persistent kernels keep theirs.
ir::Program oneWaveLaunchBounds(const ir::Program &p, const Target &t);

} // namespace tilec::passes
