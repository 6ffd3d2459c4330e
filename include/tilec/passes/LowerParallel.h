/// \file
/// T.Parallel nests and fragments to per-thread code over register arrays.
#pragma once

#include "tilec/IR.h"

#include <vector>

namespace tilec::passes {

/// Rewrites every T.Parallel nest by its layout (inferLayouts' on its kernel):
/// - distributed: the thread walks its rounds (an unrolled loop, a serial one when long and free of
///   fragments), and in each round a vectorized loop over its V consecutive elements; the nest's variables
///   become the element's coordinates (Layout.h: elementCoords); a partial last round runs under
///   `tid * V < remaining elements`.
/// - replicated: every thread runs every iteration (unrolled); stores to global or shared memory and
///   atomic updates are made by one thread per element only.
/// Fragment accesses become accesses of the fragment's register array: slot `round * V + lane` where the
/// nest indexes the fragment exactly, the row-major position for replicated fragments. Fragments in the
/// kernel's allocations are replaced by their register arrays, and the kernel gets a thread index variable
/// when it had none.
ir::Program lowerParallel(const ir::Program &p);

} // namespace tilec::passes
