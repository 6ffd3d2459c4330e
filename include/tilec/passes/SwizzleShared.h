/// \file
/// Swizzled storage of the shared tiles that tensor-core GEMMs read.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// The shared buffers handed to the device library as T.gemm operands or tile-transfer destinations are
/// stored swizzled (tilec::swz in stdlib/tilec/swizzle.cuh: 16-byte chunks of a row XORed with the row
/// index, so that cp.async writes and ldmatrix reads of 8 rows hit distinct banks). The library addresses
/// them itself; every other access (a T.Parallel over such a buffer, a copy out of it) gets its flat
/// offset mapped the same way. A vector access `base + lane` keeps its lanes together, since the map only
/// moves whole 16-byte chunks: it becomes `swz(base) + lane`.
/// The one exception is the layout decision for wgmma's operands: a shared tile a wgmma reads whose rows are
/// not 32, 64 or 128 bytes (cpAsyncWgmma's wider cp.async tiles) is stored in the panel layout wgmma's
/// descriptors walk (tilec::swz_panels: 128-, 64- or 32-byte column panels one after another: the span the
/// pass that chose the instruction recorded, Kernel::tileLayouts, else the row's widest), recorded on the IR by
/// telling its tile transfers so (their `swizzle` argument becomes lib::kTransferPanels, or the span where it is
/// narrower than the row's widest) and mapping its other accesses with tilec.swz_panels of that span. A tile
/// whose rows are one panel of the row's widest span but that is recorded in narrower panels is in the panel
/// layout too. One tile read in both layouts is an internal error.
/// A shared tile no library call addresses (every access an element load or store) is stored in the layout its
/// accesses, writers and readers together, counted for the block's first warp (src/lower/BankConflicts.h), take
/// the fewest bank wavefronts in, where that is strictly fewer than row-major: the row swizzle over its rows, or,
/// where its rows are padded with elements no access reaches (transposeFragments' staging tiles), the shorter
/// pitch, plain or swizzled over its rows or over virtual rows of 2-16 rows or 1/2-1/8 row (the XOR of a chunk
/// by row / 2^k, or by 2 row + half), the tile then allocated unpadded: an accumulator staged through shared
/// memory, a fragment transposed through it (a warp storing 8 rows 4 apart at one column), rows each thread
/// walks along on its own.
ir::Program swizzleShared(const ir::Program &p);

/// Lines --dump-after swizzleShared prints: every element load and store of shared memory of each kernel (its
/// vectors as code generation issues them), counted for the block's first warp with loops at their first
/// iteration (src/lower/BankConflicts.h): the bank wavefronts it takes in the layout chosen, and the fewest any
/// layout could give (one per 128 bytes the warp moves), "conflicted" where more. Library calls (ldmatrix, tile
/// transfers) address their tiles themselves and are not listed.
std::string describeBankConflicts(const ir::Program &p);

} // namespace tilec::passes
