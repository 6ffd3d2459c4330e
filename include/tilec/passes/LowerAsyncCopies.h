/// \file
/// TileLang's explicitly asynchronous copies (T.async_copy, T.ptx_commit_group, T.ptx_wait_group) as per-thread
/// cp.async (src/lower/LowerAsyncCopies.cpp).
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"

namespace tilec::passes {

/// Before lowerTileOps. The front end emits each T.async_copy as its Copy under an AsyncCopyOn condition, then
/// the commit of its group; T.ptx_commit_group and T.ptx_wait_group(n) as CpAsyncCommit and CpAsyncWait(n).
///
/// A kernel's copies become asynchronous when the groups in flight along the program (counted through branches
/// and loops, back edges included; the first iteration of a loop apart where an `if` tests for it; a loop of at most
/// 16 iterations known where the walk meets it walked iteration by iteration) prove that no
/// statement touches an element of a copy's destination, nor writes its source, between the copy's issue and the
/// wait that retires its group. Each copy is then a nest of CpAsyncCopy calls of the widest chunk (16, 8 or 4
/// bytes) its alignment allows, chunk c of the region (row-major) issued by thread c % threads, every thread the
/// same count where a width allows it, else the last round under `if` on the thread (a row of a few elements:
/// `if tx < 1` for 16 bytes), outside the tensor zero-filled; insertSyncs orders its destination's earlier readers
/// before the issue and its later readers after the wait. A copy no chunk width is aligned for stays the
/// synchronous copy, its group empty. Where the proof fails (a use of a destination the waits do not cover, a
/// copy under thread-dependent control or in warp roles), every copy of the kernel is synchronous and the
/// commits and waits are dropped, as before: the program is then correct whether or not it waits enough.
/// `-v` says which.
ir::Program lowerAsyncCopies(const ir::Program &p, const SourceManager *sources);

} // namespace tilec::passes
