/// \file
/// Multi-dimensional buffer accesses to one-dimensional offsets, 64-bit where needed.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// Rewrites every load, store and atomic update to index its buffer with one row-major offset (tensors
/// are contiguous). The offset is computed in 32 bits when its range, from the ranges of the loop, block
/// and thread variables, provably fits; otherwise in 64 bits (large tensors, T.dynamic sizes), so no index
/// arithmetic can overflow: each term widened before it is scaled, except the innermost terms whose sum
/// provably fits 32 bits, summed in 32 and widened once, in the offset of a vector write (an 8- or 16-byte
/// store or vector atomic of a vectorized loop's lanes: NVVM keeps such stores whole) or where no summed term
/// depends on the thread (one sum per block or iteration). Where a vector write's sum steps with a loop left
/// rolled, its terms that depend on no loop and not on the thread (block indices) are widened apart: NVVM
/// cannot bound them, nor then the sum's recurrence, and split such a store (engram_gate_fwd). Loads NVVM
/// never split; for them and for scalar accesses a sum of thread terms only moved registers. Where the
/// strides are constants, a row split into (x // c, x % c) by a copy's thread mapping and flattened again
/// with row length c folds back to x (the (64, 576) tile of a (S, 576) tensor: `bx * 36864 + r * 512 + tx *
/// 4`, no division left in the address). The fold is exact in integers.
ir::Program flattenBuffers(const ir::Program &p);

} // namespace tilec::passes
