/// \file
/// TileLang's reducers (T.alloc_reducer, T.finalize_reducer) as tilec's reductions.
#pragma once

#include "tilec/IR.h"

namespace tilec {
class DiagnosticEngine;
}

namespace tilec::passes {

/// A reducer is a fragment that T.Parallel iterations accumulate into: `r[i] += e` (op "sum"),
/// `r[i] = T.max(r[i], e)` ("max"), `r[i] = T.min(r[i], e)` ("min") in a nest of T.Parallel loops whose
/// variables, but one, index r in their order. Each such nest becomes the nest storing `e` into a fragment of
/// the nest's shape (r's name + "_part") and a T.reduce of that fragment along the missing variable's
/// dimension into r, combined with r's value (clear=False): what the iterations add up to, in tilec's own
/// reduction (every thread holding an element of r holds its total, so T.finalize_reducer has nothing left to
/// do). Any other store to a reducer stays as written, and the checks of T.Parallel report what they cannot
/// take (several iterations storing one element).
ir::Program lowerReducers(const ir::Program &p, DiagnosticEngine &diag);

} // namespace tilec::passes
