/// \file
/// Fragments read transposed that are plain copies of a shared tile: their reads read the tile.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// A T.Parallel nest that reads a fragment transposed (its indices are the nest's variables in another order:
/// `x[j, i]` in a nest over (i, j), as TileLang's Mamba chunk-state example does) cannot spread the fragment
/// over the threads the way it spreads its iterations, so every thread would hold the whole fragment. When
/// the fragment is only a copy of a shared tile (its one writer is `T.copy(S, F)` of the whole of a shared S of
/// F's shape, it is read by loads only, and every statement that reads it follows that copy in the same
/// statement list with nothing from the copy to the last of them writing S), its loads read S instead (cast
/// to F's type) and the copy goes, F with it. Every other fragment, and every kernel without such a read, is
/// returned as it was.
ir::Program forwardCopies(const ir::Program &p);

} // namespace tilec::passes
