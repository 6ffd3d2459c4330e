/// \file
/// Multi-dimensional buffer accesses to one-dimensional offsets, 64-bit where needed.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// Rewrites every load, store and atomic update to index its buffer with one row-major offset (tensors
/// are contiguous). The offset is computed in 32 bits when its range, from the ranges of the loop, block
/// and thread variables, provably fits; otherwise every term is widened to 64 bits first (large tensors,
/// T.dynamic sizes), so no index arithmetic can overflow.
ir::Program flattenBuffers(const ir::Program &p);

} // namespace tilec::passes
