/// \file
/// __syncthreads where threads exchange data through shared memory.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"

#include <vector>

namespace tilec::passes {

/// Inserts a block barrier (`tilec.sync`) before each statement that reads shared memory (or a global tensor)
/// written since the last barrier, or writes shared memory (a global tensor) read or written since then, unless
/// no element can be touched by two different threads (ThreadOwners enumerates the threads of constant-bound
/// code; SyncElements compares the indices of per-thread code symbolically); global atomics commute and are not
/// counted, nor is a global tensor across the iterations of a persistent tile loop (they stand for separate
/// blocks). A kernel with TileLang's "tl.disable_thread_storage_sync" (Kernel::noThreadSync) gets barriers only
/// for the shared scratch of its reductions: its author orders the rest with T.sync_threads. Runs on tile statements (after layout inference,
/// before lowering to threads): a T.Parallel nest, whose iterations never exchange data, is one statement;
/// a reduction counts as writing and reading scratch of its own where its lowering exchanges values through
/// shared memory (reductionUsesShared, from the kernel's `layouts`). Serial loops and ifs whose bounds and
/// conditions do not depend on the thread index are entered, and a loop whose next iteration conflicts
/// with the end of the previous one gets a barrier at the top of its body. An if or loop whose condition or
/// bounds depend on the thread (the thread index, T.Parallel variables, fragments, or per-thread variables
/// holding any of these) is one statement for its neighbours, so every barrier is reached by all threads of the
/// block; inside it, a tile statement (which every thread must run) or an exchange through shared memory
/// (which would need a barrier there) is a located error through `diag`.
ir::Program insertSyncs(const ir::Program &p, const Target &t, DiagnosticEngine &diag);

} // namespace tilec::passes
