/// \file
/// T.Parallel nests that reach a fragment through a permutation of their variables (src/lower/TransposeFragments.cpp).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// Before layout inference, for each T.Parallel nest whose fragment accesses include one by a permutation of the
/// nest's variables over the fragment's whole shape (`logits[n, h]` in a nest over (h, n), `ft[j, i] = f[i, j]`):
/// - when no fragment is indexed by exactly the nest's variables, the nest's loops are reordered so that the
///   first such store (else load) is: a T.Parallel's iterations are unordered, so any order of its loops is
///   the same nest, and its layout can then follow that fragment's (a T.gemm accumulator's);
/// - a fragment still reached through a permutation that could not be held whole in every thread (more than
///   kMaxReplicatedElements elements, or a T.gemm operand or accumulator) is accessed by the nest in a shared
///   buffer of its shape (`NAME_transposed`), copied from it by a nest over its own shape before (unless the
///   nest stores every element) and back after it (where the nest stores to it): a transpose moves elements
///   between threads, and shared memory is where threads exchange them (insertSyncs places the barriers).
ir::Program transposeFragments(const ir::Program &p);

} // namespace tilec::passes
