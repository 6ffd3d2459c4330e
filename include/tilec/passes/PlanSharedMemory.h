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
/// no thread can still touch the old one. With warp roles (which do not all reach the top-level statements),
/// where the plan does not fit: a buffer the consumers use only after a barrier of theirs (at their top level,
/// none of their asynchronous accesses of shared memory in flight, every TMA load of the producer awaited before
/// it) may share bytes with one used only before it and by the producer (the rings and once tiles).
/// Without warp roles, where the plan fits but buffers whose uses are merely apart (no barrier between) could share
/// bytes with a barrier added before the later one, so that more blocks fit an SM (occupancyBlocks with the plan's
/// bytes, in a grid of more than one wave of blocks; none of the kernel's asynchronous accesses of shared memory
/// in flight at such a barrier), that plan is
/// taken with `reuseForBlocks` (--no-shared-reuse-blocks turns it off): TileLang's planner reuses such bytes always
/// (kda chunk_fwd_o: 57 -> 41 KB a block, 3 -> 4 blocks per SM at ptxas's 64 registers; TileLang's 40 KB, 3 at 78).
/// Reports a kernel that needs more than `t` gives a block.
ir::Program planSharedMemory(const ir::Program &p, const Target &t, DiagnosticEngine &diag, bool reuseForBlocks = false);

/// The bytes planSharedMemory gives a kernel with warp roles (Kernel::body a WarpRoles statement) where it does
/// not fit `t` apart: the plan with the reuse its consumers' barrier after their loop allows. specializeWarps'
/// estimate, so that it and the plan make one decision.
int64_t warpRoleSharedBytes(const ir::Kernel &k, const Target &t);

/// The plans of the kernels of `p` (Kernel::shared), as --dump-after=planSharedMemory prints them before the IR:
/// per kernel its dynamic shared memory, the base alignment and each buffer's offset, in Kernel::allocs order.
std::string describeSharedPlans(const ir::Program &p);

} // namespace tilec::passes
