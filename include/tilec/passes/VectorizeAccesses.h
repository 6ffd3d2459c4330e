/// \file
/// Vector memory instructions for the lanes of a thread's round.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// In every vectorized loop over lane v (made by lowerParallel), moves each global or shared load whose
/// offset is `base + v`, with base a known multiple of the lane count and any bounds check free of v,
/// into a loop of its own that fills a small register array, and likewise each such store (with its check)
/// out of the loop through a register array. Those loops are what code generation turns into 16-byte
/// (or narrower) vector loads and stores; the rest of the body becomes an unrolled loop over registers.
/// A vectorized loop that keeps no such access becomes a plain unrolled loop, so every vectorized loop
/// left afterwards is one of the two transfer patterns CodegenCUDA.cpp knows:
///   for v: tmp[v] = B[base + v]              (or select(cond, B[base + v], 0))
///   for v: B[base + v] = tmp[v]              (optionally inside `if cond`)
/// A base pointer's alignment is the launcher's to check; shared buffers are 16-byte aligned.
ir::Program vectorizeAccesses(const ir::Program &p);

} // namespace tilec::passes
