/// \file
/// Swizzled shared-memory offsets split so that the accesses of an unrolled loop cost an addition of constants.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// swizzleShared maps the flat offset of every access of a swizzled shared tile as a whole:
/// `tilec.swz(cols, eb, tileElems, offset)` (or tilec.swz_panels). Inside unrolled loops that recomputes, for
/// every element, the row, its XOR value and the address (mHC's 128 bfloat16 loads of a 512-byte-row tile: ~4
/// instructions each), although most of the offset is a constant once unrolled. With the row length a power of
/// two the map is bitwise (swizzle.cuh), so each offset is split into its terms (sums, differences and
/// products by constants) and regrouped:
///   - terms that are multiples of the swizzle's period (8 rows, or the tile where its rows are fewer or not a
///     multiple of 8) leave the map: they add to its result unchanged;
///   - the rest splits into `fixed`, the terms that unrolled (or vectorized) loops of constant trip count and
///     constants fix, and `runtime`, everything else (the thread's part, computed once per thread and loop);
/// and becomes `period terms + tilec.swz_split(cols, eb, tileElems, runtime, fixed)` (tilec.swz_panels_split),
/// which the device library computes as map(runtime) with its chunk bits XORed by those of map(fixed), plus the
/// rest of map(fixed): one of at most 8 registers per thread plus an immediate. That equals map(runtime + fixed)
/// when both are non-negative and share no bit below the period (each term's possible bits come from its known
/// divisor and range; terms whose bits overlap count as their sum's range); a constant's whole periods leave the
/// map, and a fixed sum that may be negative is split at the period likewise (constants once unrolled). A period
/// that is not a power of two (a tile of 33 rows) also needs runtime + fixed below it. Where the parts cannot be split (their
/// bits overlap: a warp-role producer's `tx * 8` and an unrolled `u * 64` of a 128-byte row), the period terms
/// still leave the map if the rest is non-negative (`tilec.swz(.., rest) + period terms`); an offset with nothing
/// to move out keeps its call.
ir::Program splitSwizzles(const ir::Program &p);

} // namespace tilec::passes
