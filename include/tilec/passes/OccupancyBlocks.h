/// \file
/// The blocks per SM a bandwidth-bound kernel's launch bound names: as many as its shared memory allows, up to
/// what an estimate of its registers supports.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"

#include <string>

namespace tilec::passes {

/// For a kernel without tensor-core products (its time is its memory traffic, and more resident blocks keep more
/// of it in flight), the blocks per SM of `__launch_bounds__(threads, N)`: the fewest of what `t` allows by
/// threads and blocks, by shared memory (smem::estimatedBytes) and by registers, for which the registers a thread
/// needs are estimated from the kernel's own values: the peak, over the body's statements in order, of the
/// register words of the local buffers (fragments, scalars, vector temporaries) live there — a buffer from the
/// first statement that reads or writes it to the last, where a statement is a loop whose body holds several
/// statements that use a buffer, that buffer counts through the whole loop, and an unrolled loop takes at least
/// the registers of the global loads it issues together (loadBatchRegisters) — plus kAddressRegisters for what
/// no buffer names (index and address arithmetic, loop state), and at least 64 (what ptxas takes on its own for
/// row kernels: the rule caps no thread below it). An element of fewer than 4 bytes takes a register of its own.
/// N caps ptxas at 65536 / (N x threads) registers:
/// without a cap above 1 ptxas spends registers on loads in flight that the occupancy would hide as well
/// (layernorm_fwd: 94 registers, 2 blocks per SM of the 4 its shared memory allows, against TileLang's 72 and 3;
/// its estimate is 79, 3 blocks). `why`, when given, gets the figures for -v. `sharedBytes` >= 0: a block's shared
/// memory as a plan gives it (planSharedMemory), in place of smem::estimatedBytes.
int occupancyBlocks(const ir::Kernel &k, const Target &t, std::string *why = nullptr, int64_t sharedBytes = -1);

} // namespace tilec::passes
