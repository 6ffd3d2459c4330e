/// \file
/// The program's own setmaxnreg (T.set_max_nreg) kept where it is sound, dropped elsewhere
/// (src/lower/KeepMaxNreg.cpp).
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/Target.h"

namespace tilec::passes {

/// Keeps the front end's tilec.setmaxnreg_inc / _dec calls (T.set_max_nreg, T.inc_max_nreg, T.dec_max_nreg) of a
/// kernel only when all of these hold, and otherwise removes every one of the kernel's (a -v remark says why):
/// - the target has setmaxnreg (sm_90a) and the kernel has explicit warp roles (a WarpRoles node) whose register
///   split tilec's own planner did not make (producerRegs and consumerRegs 0): one split per kernel;
/// - each call stands where every thread of whole warp groups reaches it together: in the statement list of a
///   role (the producer's threads, or the consumers') or of a consumer warp group's branch (`if
///   tilec.warp_group(g)`, and its else: the role's other groups), each role whole warp groups, never under a
///   loop or another condition (setmaxnreg.sync.aligned: all 128 threads of the warp group execute it);
/// - no warp group makes two of them, increases stay at or above and decreases at or below the registers each
///   thread has at launch (partitionRegisters at the launch bound's blocks per SM, 1 where the kernel had none),
///   and every warp group's final count (its call's, else the launch's) times 128 fits the register file's share
///   of one block.
/// A kernel that keeps them gets that launch bound (Kernel::minBlocksPerSM; ptxas ignores setmaxnreg without one).
ir::Program keepMaxNreg(const ir::Program &p, const Target &t, const SourceManager *sources);

} // namespace tilec::passes
