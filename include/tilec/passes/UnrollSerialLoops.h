/// \file
/// Short serial loops of independent memory rounds unrolled, so that every round's global loads are in flight
/// together (or the next tensor-core round's fragment loads under this one's mma.sync).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// A `T.serial` loop with a constant trip count of at most 32 whose body reads global memory, holds no barrier,
/// no asynchronous transfer and no loop that is not itself unrolled, and stays small once unrolled (at most 512
/// statements and 128 global loads in all), becomes an unrolled loop (`_Pragma("unroll")`): TileKernels'
/// `for i_m in T.serial(m)` over the rows of a gradient accumulation issued its 24 rounds' loads four at a
/// time where nvcc unrolled it by 4 on its own, each group a memory round trip; unrolled, the rounds' loads
/// all leave before the first store waits (the tensors are `__restrict__`). Innermost loops first, so an outer
/// loop qualifies with its unrolled inner loops counted at their full size. A body without global loads that
/// issues mma.sync (TileLang's intrinsics-level emitter: ldmatrix, then mma per k-step) is unrolled as well, so
/// that the next k-step's ldmatrix overlaps this one's mma.sync (gemm_intrinsics' `for ki in T.serial(2)`).
ir::Program unrollSerialLoops(const ir::Program &p);

/// Whether `trips` rounds of `body` stay within the sizes above once unrolled (at most 512 statements and 128
/// global loads; a vectorized loop counts once) and the body holds nothing that keeps a loop rolled (a barrier,
/// an asynchronous transfer, a tile statement, a loop that is neither unrolled nor vectorized). lowerParallel
/// asks it of the round loops it makes for T.Parallel nests and copies, which TileLang unrolls whole.
bool unrolledFits(const ir::Stmt &body, int64_t trips);

} // namespace tilec::passes
