/// \file
/// The check that the iterations of a T.Parallel nest exchange nothing (insertSyncs runs it on every nest).
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"

namespace tilec::passes {

/// T.Parallel iterations run in no order, spread over the threads, with no barrier between them: a nest
/// whose iterations store to an element (of shared or global memory, or of a fragment) that other iterations
/// read or store is a located error. Two accesses provably touch different elements when, in some dimension,
/// neither index depends on the nest's variables and they differ.
void checkNest(const ir::For &outer, DiagnosticEngine &diag);

} // namespace tilec::passes
