/// \file
/// T.Parallel nests that reach a fragment at a constant offset from one of their variables, under a guard that
/// keeps the offset in range, re-indexed so that the fragment is indexed by the variable itself
/// (src/lower/ShiftFragmentOffsets.cpp).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// Before transposeFragments, a T.Parallel nest variable `v` over [0, E) whose every fragment use is `v + c`
/// (the same constant c > 0, on a fragment dimension of extent E) and whose body is `if ...v < n...: S` with
/// n + c <= E (`acc[i + 16, d]` under `if i < 16`: the second half of a T.gemm accumulator's rows, as sparse
/// MLA's backward stores it in halves) is rewritten over u = v + c: `for u: if u >= c and (...)[v := u - c]:
/// S[v := u - c]`. A T.Parallel's iterations are unordered and the guard leaves the same ones live, so the nest is
/// the same; but the fragment is now indexed exactly, so the nest takes the fragment's own layout and each thread
/// reads the elements it holds, where before it read them across threads from a shared copy of the whole
/// fragment (TransposeFragments' `NAME_staged`, shared memory the kernel may not have).
/// Offsets that differ between fragments or uses, negative ones, and nests without such a guard are left as
/// they are (transposeFragments stages them).
ir::Program shiftFragmentOffsets(const ir::Program &p);

} // namespace tilec::passes
