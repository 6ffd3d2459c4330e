/// \file
/// Tensor-core fragments copied into 16-bit shared tiles with stmatrix, as TileLang lowers such a T.copy.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

namespace tilec::passes {

/// On targets with stmatrix (sm_90 and later; LoweringOptions::stmatrixCopies, --no-stmatrix-copies turns it
/// off): a T.Parallel nest over (i, j) of an mma layout (Layout.h: mma.sync's accumulator order or wgmma's, an
/// RS operand's) whose body is one store `dst[...] = F[i, j]`, F a fragment of that layout, the value perhaps
/// converted, dst a shared tile of 16-bit elements (`T.copy(C_local, C_shared)`, a cast included), becomes per
/// warp stmatrix.m8n8 of its 8x8 tiles (four at a time, two where a warp's tile has an odd number of 8-column
/// tiles; `tilec.stmatrix`, stdlib/tilec/sm90_store.cuh), where every 8-element piece of a tile row is 16
/// contiguous, aligned bytes of dst: the columns j along dst's innermost dimension (or, with stmatrix's .trans,
/// the rows i), at an origin and a row length that are multiples of 8 elements, the other variable not in that
/// dimension. The values are converted as the per-thread stores would convert them (a register array of dst's
/// type between), each warp holding copies of a fragment stores through its first copy only. Every lane of a warp
/// reaches the nest together, as stmatrix (.sync.aligned) needs: a T.Parallel nest runs on every thread of its
/// block or warp role (the front end refuses one under a condition on the thread index). How dst is laid
/// out stays swizzleShared's choice: it maps each lane's 16-byte row address like an ldmatrix lane's and counts
/// those rows' bank wavefronts with the tile's other accesses (src/lower/SwizzleShared.cpp). Other nests are
/// left to lowerParallel; with -v a nest this almost takes says why not. Runs after insertSyncs (stmatrix orders
/// nothing a barrier did not) and before lowerParallel, on the fragments' layouts (Kernel::layouts).
ir::Program storeMatrices(const ir::Program &p, const Variant &v, const SourceManager *sources);

} // namespace tilec::passes
