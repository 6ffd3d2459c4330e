/// \file
/// Rows of T.gemm accumulators that no one can observe: the analysis boundGemmRows (which marks the T.gemms) and
/// shrinkGemmTiles (which shrinks the tiles) share (src/lower/LiveRows.cpp).
#pragma once

#include "tilec/IR.h"

#include <map>
#include <vector>

namespace tilec::passes {

/// For one kernel, each fragment accumulator whose rows past R no one can observe, with R, where R leaves at
/// least one whole 64-row panel out (the conditions: boundGemmRows, include/tilec/passes/BoundGemmRows.h).
std::map<const ir::BufferNode *, int64_t> liveAccumulatorRows(const ir::Kernel &k);

/// For one kernel, each fragment accumulator without a constant bound (liveAccumulatorRows) whose rows past R,
/// an expression of block indices and launch sizes, no one can observe in the block: R is the largest of its
/// A tiles' source rows and its destination rows from the regions' starts to their tensors' ends (A tiles read
/// past the end are zeros, C rows stored there are dropped); only where R can leave a 64-row panel out.
std::map<const ir::BufferNode *, ir::Expr> liveAccumulatorRowsAt(const ir::Kernel &k);

/// The dimensions of `r` whose extent is not the constant 1, in order: those a tile's dimensions map to.
std::vector<size_t> tileDims(const ir::Region &r);

/// Whether `r` is its whole buffer (every range from 0 to the buffer's constant extent).
bool wholeTile(const ir::Region &r);

} // namespace tilec::passes
