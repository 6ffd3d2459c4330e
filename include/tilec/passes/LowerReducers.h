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
/// variables, but one, index r in their order. Also: a one-element r[0] reduced over every variable of the nest
/// (along the last variable, then the next); an update under an `if` (a failing iteration contributes 0 for a
/// sum, r's own value for max/min); and reducers each updated once among a nest's other statements (the nest
/// stores each contribution into a "_part" fragment, reduced into the reducers after it). These three forms
/// always take the reduction per nest below, never the registers. Also: r indexed by expressions none of the
/// nest's variables appear in (`da[i, o] += b[i, h] * dx[o, h]` in a nest over h inside T.serial loops over i and
/// o, TileKernels' mhc_post_bwd), the nest reduced whole into the element they pick, alone in its nest or among
/// other statements; this form does take the registers below, its accumulator of r's shape then the nest's
/// (r_acc[i, o, h]), combined at T.finalize_reducer along those trailing dimensions.
///
/// Where T.finalize_reducer combines it (TileLang's design: each thread accumulates on its own, the threads are
/// combined once), the iterations accumulate into a fragment of the nest's shape (r's name + "_acc", set to the
/// operation's identity where T.alloc_reducer is and again after each combine): every iteration its own
/// element, so no thread meets another's inside the loop. T.finalize_reducer becomes the one T.reduce of that
/// fragment along the missing variable's dimension into r, combined with r's value (clear=False). This holds
/// when, in program order (loop bodies taken twice, for the way back), every nest of r has the same extents and
/// missing variable, nothing else touches r between a nest and the next T.finalize_reducer, one follows the last
/// nest, and the accumulator takes at most 128 registers per thread.
///
/// Otherwise each nest becomes the nest storing `e` into a fragment of the nest's shape (r's name + "_part")
/// and that T.reduce right after it: every thread holding an element of r holds its total after every nest,
/// so T.finalize_reducer has nothing left to do. Any other store to a reducer stays as written, and the checks
/// of T.Parallel report what they cannot take (several iterations storing one element).
ir::Program lowerReducers(const ir::Program &p, DiagnosticEngine &diag);

} // namespace tilec::passes
