/// \file
/// Rows of a T.gemm accumulator that no one can observe (src/lower/BoundGemmRows.cpp).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// For each T.gemm over a shared A tile into a fragment C, the row count R past which C's rows are provably
/// never seen (Gemm::liveRows), when R leaves at least one whole 64-row panel of C out:
/// - every statement that writes A's tile is a T.copy of a whole tile from a global tensor of constant row
///   count R_A, at a row start that is never negative (rows of the tile past R_A lie past the tensor's end for
///   every block: T.copy pads them with zeros); A is not written otherwise;
/// - C is written only by T.gemm of such tiles (R = the largest R_A) and by fills, and read only by T.copy of
///   the whole fragment into a global tensor whose rows number at most R, at a row start never negative (its
///   rows past R are stored out of bounds, which T.copy skips); nothing else reads or addresses C.
/// Then the products of rows past R reach no memory: the skinny GEMMs of decoding (M = 16 rows in a 128-row
/// tile) need not issue the tensor-core instructions of their dead panels. The rows keep their cleared value,
/// where the instructions would have summed zeros times B (a NaN where B holds an infinity): no one reads them.
///
/// Where no constant R holds, the same facts per block (Gemm::liveRowsAt): R = the largest of the tensors' rows
/// less the regions' row starts, when every start and row count is a launch value (block indices, T.dynamic
/// sizes, constants; no loop variable, thread index, load or call) and R can leave a panel out for some block
/// (M = 192 in 128-row tiles: block row 1 has 64 live rows; M = 256 never leaves one out and is not marked).
ir::Program boundGemmRows(const ir::Program &p);

} // namespace tilec::passes
