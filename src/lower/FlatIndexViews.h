/// \file
/// Fragment accesses that address, row-major, the element a T.Parallel nest's iteration addresses row-major over
/// the nest's extents (src/lower/FlatIndexViews.cpp): `f[i, j * 8 + k]` over a (M, 32) fragment in a nest over
/// (M, 4, 8), `g[j]` over a (D,) fragment in a nest over (1, D).
#pragma once

#include "tilec/IR.h"

#include <cstdint>
#include <vector>

namespace tilec::passes {

/// Whether `indices` over a fragment of constant `shape` are affine in the nest's variables, each inside its
/// dimension for every iteration, with the row-major position over `shape` equal to the iteration's row-major
/// position over `extents` (so as many elements), without being the nest's variables themselves.
bool flatEquivalent(const std::vector<ir::Expr> &indices, const std::vector<int64_t> &shape, const std::vector<ir::Var> &vars,
                    const std::vector<int64_t> &extents);

} // namespace tilec::passes
