/// \file
/// The width of integer index arithmetic: 32 bits where the value provably fits, 64 bits where not, a located
/// error where not even 64 bits hold it.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"

namespace tilec::passes {

/// Gives every signed integer operation of 32 bits or fewer the width its value needs. The exact range of
/// each operation is computed bottom-up (src/lower/Arith.cpp: exactBoundsOf, from the grid, thread, loop and
/// T.dynamic ranges and the types of loaded values); an operation whose range passes 32 bits is computed in 64,
/// and so is everything above it that depends on it. The rule applies to the whole index of every memory access
/// (loaded index values included, as in a gather) and to every load-free computation (bounds tests, loop
/// bounds); values computed from loaded data keep C's types. A loop variable whose range passes 32 bits
/// becomes a 64-bit variable. An index whose range passes 64 bits is an error at its source range.
ir::Program widenIndices(const ir::Program &p, DiagnosticEngine &diag);

} // namespace tilec::passes
