/// \file
/// The first lowering pass: tile statements that are element-wise at heart become T.Parallel nests.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"

namespace tilec::passes {

/// Rewrites T.copy, T.fill / T.clear and the region form of T.atomic_add into T.Parallel nests over the
/// region's non-unit extents, with one element statement inside (casting to the destination's dtype), so
/// that layout inference and the lowering of parallel loops treat them exactly like the user's loops.
/// T.vectorized loops become unrolled loops (only lowerParallel proves the alignment a vector access
/// needs), and T.Pipelined loops without a T.gemm become serial loops (there is nothing to overlap yet).
/// A reduction from or into shared memory goes through a fragment copy of it. T.gemm stays a tile
/// statement (clear_accum becomes a fill before it), and so does a T.copy of a 2-D global tile into a whole
/// shared T.gemm operand or a whole aligned tile that a T.Pipelined loop fills: pipelineLoops turns it into an
/// asynchronous tile transfer. A T.Parallel nest that performs such a copy (copyOfNest) becomes that T.copy.
ir::Program lowerTileOps(const ir::Program &p, DiagnosticEngine &diag);

} // namespace tilec::passes
