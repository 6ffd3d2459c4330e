/// \file
/// Tile transfers that the ranges in scope prove inside their tensor: no per-row or per-column test left for them.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// Every cp.async tile transfer (tilec::copy_g2s) whose count of valid rows (or columns) left in the tensor from
/// the tile's origin is, by the ranges in scope (block indices in their grid, loop variables in their bounds), at
/// least the tile's rows (columns) gets the tile's extent as that count: the device function then compares its
/// rows against a constant that no row reaches, and nvcc drops the test. Where the count stays an expression
/// (`256 - bx * 64`), nvcc cannot see that every row is inside, and keeps one predicate per row a thread copies,
/// live across the loop when the count is loop-invariant: block_causal_attention's forward held four of the
/// seven predicate registers for it, and ptxas chained its 32 exp2f (each a MUFU with a predicated range fix)
/// through the one left, one MUFU latency apiece (docs/PERFORMANCE.md, session 36). Semantics are unchanged: a
/// count of at least the extent and the extent itself select the same elements.
ir::Program fullTileTransfers(const ir::Program &p);

} // namespace tilec::passes
