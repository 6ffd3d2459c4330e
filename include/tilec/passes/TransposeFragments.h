/// \file
/// T.Parallel nests that reach a fragment across threads: through a permutation of their variables, or by indices
/// their layout cannot place in the reading thread (src/lower/TransposeFragments.cpp).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// Before layout inference, for each T.Parallel nest whose fragment accesses include one by a permutation of the
/// nest's variables over the fragment's whole shape (`logits[n, h]` in a nest over (h, n), `ft[j, i] = f[i, j]`):
/// - when no fragment is indexed by exactly the nest's variables, the nest's loops are reordered so that the
///   first such store (else load) is: a T.Parallel's iterations are unordered, so any order of its loops is
///   the same nest, and its layout can then follow that fragment's (a T.gemm accumulator's);
/// - a fragment the nest still reaches across threads, through a permutation or by a read its layout cannot place
///   in the reading thread (`acc[i + 16, d]`, `acc[i, 0]`: any index but the forms inferLayouts spreads), and
///   that could not be held whole in every thread (more than kMaxReplicatedElements elements, or a T.gemm
///   operand or accumulator) is accessed by the nest in a shared buffer of its shape (`NAME_staged`), copied
///   from it by a nest over its own shape before (unless the nest stores every element) and back after it
///   (where the nest stores to it): shared memory is where threads exchange elements (insertSyncs places the
///   barriers). A copy in made inside loops that change neither the fragment nor the copy is made once, before
///   the outermost of them (hoistStagedCopies: a nest reading x[i, jj * 4 + j] in `for jj in T.serial(64)`
///   stages x once, not 64 times).
ir::Program transposeFragments(const ir::Program &p);

} // namespace tilec::passes
