/// \file
/// Floor divisions and remainders in global-memory offsets and comparisons split over the terms of their dividend.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// A global tensor reached through a T.Layout (attention's dQ accumulator: `[l // 8, d // 8, d % 2,
/// l % 8 * 4 + d % 8 // 2]`) or a flat view has offsets such as `(bx * 64 + r * 4 + tx / 32) / 8 * 1024 + ...
/// % 8 * 4`: nvcc cannot tell that tx / 32 < 4, so every unrolled r recomputes the division, the remainder and a
/// 64-bit address (the flash-attention postprocess: 472 SASS instructions where 224 do). Each `x // c` and `x % c`
/// (c > 1 a constant) in the index of a global load, store or atomic is split over x's terms (sums, differences
/// and products by constants):
///   - multiples of c (by coefficient or known divisor) leave it: `(c * k * y + rest) // c == k * y + rest // c`,
///     and they vanish from the remainder;
///   - the rest splits into `fixed`, the terms that constants and unrolled (or vectorized) loops of constant trip
///     count fix, and `runtime`, everything else (the thread's part); with both non-negative and the largest
///     remainders they can leave below c together (a part below c leaves itself, one of known divisor g at most
///     c - g), `x // c == fixed // c + runtime // c` and `x % c == fixed % c + runtime % c`, so each unrolled
///     iteration adds constants to a part computed once;
///   - where the two parts cannot be split, the multiples still leave: `x // c == multiples / c + (fixed + runtime)
///     // c` for any integers (floor division), `x % c == (fixed + runtime) % c`.
/// Global offsets are rewritten, and so are the operands of comparisons outside other indices (a mask that
/// compares `(warp * 16 + h * 8 + lane / 4) / 16` with `(ni * 8 + lane % 4 * 2) / 16` becomes `warp` against a
/// constant per unrolled iteration); shared offsets keep the forms swizzleShared maps, register indices are
/// constants once unrolled.
ir::Program splitIndexDivisions(const ir::Program &p);

} // namespace tilec::passes
