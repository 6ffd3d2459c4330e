/// \file
/// Blocks whose thread count is not a multiple of 32 (TileLang's `threads=1`): what needs whole warps is an error.
#pragma once

#include "tilec/IR.h"

namespace tilec {
class DiagnosticEngine;
}

namespace tilec::passes {

/// A block of N threads where N is not a multiple of 32 ends in a partial warp (a block of 1 to 31 threads is one).
/// Per-thread code, copies, fills, T.Parallel nests, reductions whose rows each thread holds whole, atomics and
/// block barriers run there as anywhere. What the lowered kernel does across the 32 lanes of a warp cannot: a warp
/// shuffle (T.shfl_*, T.tvm_warp_shuffle, or a reduction across the threads that share a row) names every lane in
/// its mask, __syncwarp and named barriers count whole warps, and warp MMAs and warpgroup instructions need all
/// their lanes. Each such call is a located error at the statement that made it; the kernel is otherwise unchanged.
void checkWholeWarps(const ir::Program &p, DiagnosticEngine &diag);

} // namespace tilec::passes
