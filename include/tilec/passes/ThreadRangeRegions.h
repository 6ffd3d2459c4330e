/// \file
/// Tile statements under a condition that gives a range of the block's threads (`if T.get_thread_binding() < 32:`,
/// TileKernels' mhc_pre_big_fuse) run by the whole block.
#pragma once

#include "tilec/IR.h"

namespace tilec {
class DiagnosticEngine;
}

namespace tilec::passes {

/// TileLang runs the tile statements of a branch whose condition bounds the thread index to a range [lo, hi)
/// (`tx < c`, `tx >= c`, `lo <= tx < hi` with constant bounds; an `else` for the other threads when they are a
/// range too) with the fragments laid out over those threads only. Nothing that a program computes depends on
/// which threads run a region whose code does not read the thread index: its fragments and T.alloc_var values,
/// touched in no other range, hand their results on only through shared and global memory, which the whole block
/// writes as the range would. Such an `if` (with its `else`) becomes its branches one after the other, each run
/// by every thread, their T.Parallel nests, copies, reductions and barriers then lowered as anywhere else.
///
/// Unless its branches can run at once, as TileLang runs them (src/lower/ConcurrentRoles.h): an `if` with an
/// `else` at the kernel's top level, its bounds whole warps, its branches sharing nothing one of them writes,
/// holding no T.gemm and no library call with effects other than a barrier, their register buffers used nowhere
/// else. Such an `if` becomes an empty WarpRoles(C, P) between block barriers, and each branch a kernel of its
/// own threads named `KERNEL.roleI.consumer` (threads 0 .. C - 1) / `.producer` (C .. threads - 1), lowered as
/// any kernel until joinThreadRoles puts it back. -v says which branches run as roles, and why the others do not.
///
/// Located errors, never another program, in a branch that holds a tile statement: a read of the thread index
/// inside it (each thread's own work), a fragment or T.alloc_var / T.alloc_local buffer also touched outside the
/// branch's range, an atomic update outside a T.Parallel nest (it would be done by more threads), a `while` loop
/// (a wait for the other branch would never end once the branches run one after the other), T.thread_return,
/// and mbarrier operations (their arrival counts are the range's threads). A condition on the thread index that
/// is not such a range (`tx % 2 == 0`) keeps the `if` and the error insertSyncs reports for it.
///
/// TileLang's `with T.ws(g):` is the range [128 g, 128 (g + 1)): in a kernel without mbarriers or T.tma_copy
/// (whose T.ws blocks lowerWarpRoles makes producer and consumer roles) each T.ws block is such a region, held
/// to the same rules, and code outside the blocks is what every warp group runs.
ir::Program threadRangeRegions(const ir::Program &p, DiagnosticEngine &diag);

} // namespace tilec::passes
