/// \file
/// Per-element choices that one block-uniform test decides for a whole unrolled nest, made once around the nest.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// An unrolled loop nest (a T.Parallel nest's per-thread elements) holding a select whose test is the same for
/// every element and every thread of the block (it reads no memory, calls nothing, divides by no variable,
/// mentions none of the nest's loop variables and is block-uniform by laneUniformity) and whose choices differ
/// between elements or threads
/// becomes `if test: nest[choice 1] else: nest[choice 2]`, at most twice per nest (four copies). The
/// block-causal masks of TileLang's block_causal_attention pick per element between three comparisons by
/// `is_noisy_diag == 1` and `bx < 2`: as selects nvcc took the loop-invariant comparisons out of the key loop and
/// kept them in predicate registers (P1-P4 of seven) across it, and ptxas chained the softmax's 32 exp2f
/// (MUFU.EX2 with a predicated range fix each) through the one predicate left, one MUFU latency apiece
/// (docs/PERFORMANCE.md, session 36). As branches each copy tests only its own comparisons, as TileLang's
/// `if`-shaped code does. Semantics are unchanged: the test has one value throughout the nest.
ir::Program unswitchUniformSelects(const ir::Program &p);

} // namespace tilec::passes
