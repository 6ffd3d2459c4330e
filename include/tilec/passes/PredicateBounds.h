/// \file
/// Bounds checks on tensor accesses, so that tiles running past a tensor's edge are correct.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// Guards every access of a global tensor whose indices are not provably inside its shape (tiles that do
/// not divide the tensor, T.dynamic sizes): a load outside reads 0, a store or atomic update outside does
/// nothing. Runs on per-thread code (after lowerParallel), where the ranges of the loop, block and thread
/// variables are known. Inside a vectorized loop over lane v, an innermost index `base + v` with base a
/// multiple of V against an extent that is also a multiple of V is checked as `base < extent`, which holds
/// for all lanes at once, so the access can still be one vector access. An index `a * b + rest` (b a block
/// index, rest below a) is inside an extent whose whole tiles of a the grid launches (`extent // a` blocks):
/// unchecked. So is an index at most a loop variable (or the left side of an enclosing `if a < b`) whose end
/// (b) is the extent or a min() with the extent among its terms: `for i in T.serial(start, T.min(.., n))`
/// touches rows below n only.
ir::Program predicateBounds(const ir::Program &p);

} // namespace tilec::passes
