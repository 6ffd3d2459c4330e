/// \file
/// Serial loops split where the element-wise conditions of their body are the same over the whole tile.
#pragma once

#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

namespace tilec {
class SourceManager;
}

namespace tilec::passes {

/// A serial loop `for k in [lo, hi)` whose body compares, element by element, integer expressions affine in k
/// and in the tile's variables (the loops inside the body, each of known range, and the thread index), as
/// causal attention's `bx * M + i >= k * N + j`, a sliding window's `k * N + j > bx * M + i - W` or a bounds
/// check `k * N + j < seq_len`, is split into up to three loops running the same iterations in the same
/// order: [lo, s1) and [s2, hi) keep the body, the interior [s1, s2) runs a copy in which every such comparison
/// is replaced by its value there. Each comparison is the same over the whole tile below one point of k and
/// from another on (interval arithmetic over the tile's variables; exact integer floor divisions); the
/// interior takes, of each, the side where it is true (a mask's visible keys, a bounds check's inside), or the
/// other where that side provably holds no iteration of the loop, and is the intersection of those sides,
/// clamped to [lo, hi) at run time (empty, negative and ragged ranges run exactly the iterations they ran). The
/// points depend on loop-invariant values only (no call; loads only of what the loop cannot change). Only
/// comparisons that vary over the tile's elements count (a scalar test of k is one branch per iteration
/// already); a loop provably without interior iterations is left alone, a side loop provably empty left out.
/// With `options.perElementSplits`, a loop is copied only where a replaced comparison varies with a loop inside
/// the body (a thread makes it more than once an iteration) or every copy keeps a constant trip count (the split
/// points constants): comparisons each thread makes once an iteration at run-time points leave the loop whole.
/// The replaced comparisons are folded away (selects and ifs on constants become their branch). Runs after the
/// warp-role, intra-overlap and ping-pong schedules, on per-thread code, so it splits the loops those passes
/// left (a persistent consumer's key loop after its peeled first block). -v says which loops were split and
/// where (remarks located in `sources`).
ir::Program splitUniformConditions(const ir::Program &p, const LoweringOptions &options = {},
                                   const SourceManager *sources = nullptr);

} // namespace tilec::passes
