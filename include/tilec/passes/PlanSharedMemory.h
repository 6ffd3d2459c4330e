/// \file
/// The block's dynamic shared memory: where each shared buffer lives.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"

namespace tilec::passes {

/// Places every shared buffer of each kernel (Kernel::shared): first fit, each buffer at a multiple of its
/// alignment — 1024 bytes for the tiles TMA loads or stores and those in the panel layout, as the passes that
/// planned them recorded (Kernel::tileLayouts: the swizzle pattern repeats every 1024 bytes and wgmma's
/// descriptors assume it), 128 for the others (the row swizzle of the mma.sync
/// path repeats every 128 bytes; cp.async needs 16), 8 for mbarriers. Two buffers may share bytes when a
/// top-level barrier separates the last statement using one from the first statement using the other, so
/// no thread can still touch the old one. Reports a kernel that needs more than `t` gives a block.
ir::Program planSharedMemory(const ir::Program &p, const Target &t, DiagnosticEngine &diag);

/// The plans of the kernels of `p` (Kernel::shared), as --dump-after=planSharedMemory prints them before the IR:
/// per kernel its dynamic shared memory, the base alignment and each buffer's offset, in Kernel::allocs order.
std::string describeSharedPlans(const ir::Program &p);

} // namespace tilec::passes
