/// \file
/// Serial loops split where the element-wise conditions of their body are the same over the whole tile.
#pragma once

#include "tilec/IR.h"

namespace tilec {
class SourceManager;
}

namespace tilec::passes {

/// A serial loop `for k in [lo, hi)` whose body compares, element by element, integer expressions affine in k
/// and in the tile's variables (the loops inside the body, each of known range, and the thread index), as
/// causal attention's `bx * M + i >= k * N + j` or a bounds check `k * N + j < seq_len`, is split into up to
/// three loops with the same iterations in the same order: [lo, s1) where each such comparison whose value is
/// the same for every element at small k is replaced by that value, [s1, s2) keeping every comparison, and
/// [s2, hi) where those constant at large k are replaced. The split points are computed at run time by
/// interval arithmetic over the tile's variables (exact integer floor divisions, clamped to [lo, hi], so that
/// empty, negative and ragged ranges run exactly the iterations they ran), from loop-invariant values only (no
/// call; loads only of what the loop cannot change). Only comparisons that vary over the tile's elements count
/// (a scalar test of k costs one branch per iteration already); a side that is provably empty is left out. The
/// replaced comparisons are folded away (selects and ifs on constants become their branch). Runs after the
/// warp-role, intra-overlap and ping-pong schedules, on per-thread code, so it splits the loop those passes
/// left (a persistent consumer's key loop). -v says which loops were split and where (remarks in `sources`).
ir::Program splitUniformConditions(const ir::Program &p, const SourceManager *sources = nullptr);

} // namespace tilec::passes
