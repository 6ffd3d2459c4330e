/// \file
/// Values that an unrolled per-thread loop nest (a T.Parallel over a fragment, after lowerParallel) computes at
/// every iteration but that depend on only some of its loops, computed once per value before the nest.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// In a perfect nest of unrolled or vectorized loops (constant extents from 0, no loop below), an expression
/// of a statement the nest's body runs unconditionally (not in a select's arm, not right of `and` / `or`) that
/// loads a global tensor under a guard (in a select's arm: predicateBounds' `select(row < m_total, X[...], 0)`),
/// reads only global tensors the kernel never writes and what the nest leaves unchanged, calls nothing, is the
/// same in every lane of the vectorized loop, and takes at most 16 values over the other loops' variables it uses
/// (at most half their iterations), is stored per value into a local array by a nest over those variables just
/// before, and read from it. DeepSeek-V3's block-scaled promotion over run-time rows (a grouped GEMM),
/// `acc[i, j] += part[i, j] * (A_scale[m + i, k] * sb)`, then reads A_scale once per row a thread holds (2 loads)
/// instead of once per element (64): nvcc merges identical unguarded loads itself, but not guarded ones, each
/// under its own branch. The same expression is evaluated at the same points, in the same thread, so results
/// are bit-identical. Runs after predicateBounds.
ir::Program hoistNestInvariants(const ir::Program &p);

} // namespace tilec::passes
