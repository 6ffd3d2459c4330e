/// \file
/// Whether an expression has the same value in every thread of a block's role that evaluates it (a grouped GEMM's
/// row count, computed by every consumer thread from the group tables): what a decision taken by one thread for
/// its warpgroup, or taken by each thread apart around a barrier they all reach, may rest on.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// True where `e`, evaluated in the consumer role of `k` (or in the kernel when it has no warp roles), provably
/// has one value in every thread: no thread index, no variable of a T.Parallel loop or of a loop whose bounds
/// differ, loads only of global tensors that nothing in the kernel writes, and of per-thread scalars (var /
/// local buffers) whose every store (in that role) stands outside any branch or loop that depends on the thread
/// and stores such a value at such an index. False where it cannot tell.
bool threadInvariant(const ir::Expr &e, const ir::Kernel &k);

} // namespace tilec::passes
