/// \file
/// T.Parallel nests that are tile copies at heart, given their T.copy form (src/lower/ParallelCopies.cpp).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// `s` as the Copy it performs when it is a T.Parallel nest `for i0, ..., in in T.Parallel(E0, ..., En):
/// dst[i0, ..., in] = src[e0, ..., r0 + i0, ..., c + in]` that fills a whole shared buffer from a global tensor
/// of the same dtype: every nest variable indexes its own dimension of dst (in order, from 0 over the whole
/// extent) and, with coefficient 1, its own dimension of src (in the same order, the innermost one in src's
/// last dimension, so that the tile's rows are contiguous runs), and src's other indices are free of the nest.
/// A value the nest stores as `T.if_then_else(in bounds, src[...], 0)` is the same copy (a tile copy reads
/// zeros past the tensor's end), where the condition tests only `index < extent` of the tensor. Null otherwise.
ir::Stmt copyOfNest(const ir::Stmt &s);

} // namespace tilec::passes
