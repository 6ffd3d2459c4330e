/// \file
/// TileLang's per-thread T.ptx_cp_async as an asynchronous cp.async where the issuing thread's own program proves
/// it safe (src/lower/AsyncPtxCopies.cpp).
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"

namespace tilec::passes {

/// Before vectorizeAccesses. The front end emits each T.ptx_cp_async as the synchronous copy (an unrolled loop of
/// element stores marked kPtxCpAsync, ProgramVectorized.h; under `if predicate` with a zero-filling loop in `else`)
/// and each T.cp_async_barrier_noinc as the thread's arrival marked `noinc`.
///
/// A kernel's copies become cp.async chunks (tilec.cp_async) when a walk of the program in each thread's order
/// (branches joined, loops to a fixed point) proves, while any copy of the thread may be in flight:
///   - the thread makes no arrival other than a marked one, passes no barrier (block, named, warp, cluster), makes
///     no atomic or external call and does not return: the marked arrival is then the only way anything the thread
///     did after a copy reaches another thread, and it becomes `cp.async.mbarrier.arrive; mbarrier.arrive`, which
///     holds the phase open until the thread's copies land (every reader the synchronous copy had is ordered after
///     the landing);
///   - the thread neither touches a destination (its storage) nor writes a source of a copy in flight, uses no
///     other cp.async, and two copies into one buffer are either one copy statement whose loops (those without an
///     arrival) give distinct chunks, or are apart by an arrival: each arrival commits the copies before it as a
///     group, and the block of copies that fills a buffer again waits (cp.async.wait_group) for the group that
///     last filled it, keeping the groups committed after it in flight;
///   - each chunk is 4, 8 or 16 bytes at offsets that are multiples of its size, with a test of the lanes' common
///     validity (the predicate and the bounds test) that is free of the lane.
/// The end of each warp-role body with copies (or the kernel's) then commits and waits for every group. Where the
/// proof fails the kernel keeps every copy synchronous and every marked arrival plain. `-v` says which.
ir::Program asyncPtxCopies(const ir::Program &p, const SourceManager *sources);

} // namespace tilec::passes
