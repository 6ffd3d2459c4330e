/// \file
/// Fragments a T.Parallel nest indexes past their extent, grown to the nest's extent
/// (src/lower/GrowIndexedFragments.cpp).
#pragma once

#include "tilec/IR.h"

namespace tilec {
class DiagnosticEngine;
}

namespace tilec::passes {

/// TileLang lays a fragment out over the T.Parallel nest that indexes it, so a fragment declared with fewer
/// elements than the nest's extent along a dimension the nest indexes by one of its variables still holds an
/// element for every iteration (attention_sink's forward kernels: `sinks = T.alloc_fragment([heads])`, written
/// and read as `sinks[i]` in `for i in T.Parallel(block_M)`, heads < block_M). A fragment whose every mention is
/// an element load or store takes, along each such dimension, the largest extent of a nest variable that indexes
/// it there, with a warning at the first such access; its accesses are unchanged. A fragment that is also a
/// tile operand (a region of a copy, fill or atomic add, a T.gemm or reduction operand, a view, a library or
/// extern call's operand) keeps its shape, and layout inference reports the access past its extent as before.
ir::Program growIndexedFragments(const ir::Program &p, DiagnosticEngine &diag);

} // namespace tilec::passes
