/// \file
/// Pipeline stages each thread reads only where it copied itself (pipelineLoops): such a stage needs no block
/// barrier between its transfer and its reads, nor before its refill (the wait for a thread's own cp.async groups
/// orders its own copies), and no swizzle (its reads are by one thread each, not ldmatrix across a warp).
#pragma once

#include "tilec/IR.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"

#include <vector>

namespace tilec::passes {

/// The thread of the block's first `threads` that a tile transfer (tilec::copy_g2s of a rows x cols tile,
/// `vec` elements per access, consecutive threads taking consecutive chunks of a row) has copy element `e` (the
/// tile's row-major index).
inline int64_t transferOwner(int64_t e, int64_t vec, int64_t threads) { return e / vec % threads; }

/// Whether every access of shared tile `tile` in `body` (the statements of a pipelined loop's body, before its
/// tiles are staged) is a load in a T.Parallel nest laid out by `layouts`, by the same thread that a transfer of
/// the whole tile with `vec` elements per access over `threads` threads copies the element with (ThreadOwners'
/// enumeration over the loops around the nest, which `ranges` bounds; every access must be known).
bool readsOwnTransfer(const std::vector<ir::Stmt> &body, const ir::BufferNode *tile, int64_t vec, int64_t threads,
                      const KernelLayouts &layouts, const RangeMap &ranges);

} // namespace tilec::passes
