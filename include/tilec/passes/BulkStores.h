/// \file
/// A kernel's closing copies of shared tiles to global memory as bulk copies of the TMA unit.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

namespace tilec::passes {

/// On sm_90 and later (LoweringOptions::bulkStores; not in a kernel with "tl.disable_tma_lower"): the T.Parallel
/// copy nests `dst[...] = src[...]` from a shared tile to a global tensor that end a kernel (its last top-level
/// statements, outside warp roles) become cp.async.bulk copies, as TileLang 0.1.15 stores such a tile
/// (tl::tma_store): every thread fence.proxy.async.shared::cta, a barrier, then the tile's contiguous runs issued as
/// bulk copies (one run: by thread 0; rows at a stride, only with LoweringOptions::bulkStoreRows: row r by thread
/// r % threads), each issuing thread committing and waiting for its own (cp.async.bulk.wait_group.read 0) before
/// the block exits. A nest qualifies where
///  - the destination's elements form runs contiguous in both buffers, each a multiple of 16 bytes and starting at
///    an offset provably a multiple of 16 bytes in each, every index provably inside the tensor (a partial tile
///    keeps its per-thread stores and their bounds tests);
///  - its threads' own copy would store 16 bytes a thread (a distributed layout's vector), so the launcher's
///    16-byte check of the tensor's pointer asks the caller nothing new;
///  - the tensor is a row-major argument no other statement writes;
///  - the threads reach the tile only element by element, in distributed nests stepping through consecutive
///    elements (no library call, T.gemm, alias or GEMM accumulator's mma layout), so that its row-major storage,
///    which the bulk copy reads, costs their accesses no bank conflict that swizzleShared would have removed.
/// Runs after insertSyncs, whose barriers it adds its own to.
ir::Program bulkStores(const ir::Program &p, const Variant &v, const SourceManager *sources);

} // namespace tilec::passes
