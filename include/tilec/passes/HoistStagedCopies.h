/// \file
/// Shared copies of fragments, staged for a nest that reads them in another thread layout, made once where their
/// source last changes instead of at every iteration of the loops around them (src/lower/HoistStagedCopies.cpp).
#pragma once

#include "tilec/IR.h"

#include <utility>
#include <vector>

namespace tilec::passes {

/// A shared copy of a fragment that a pass stages (transposeFragments): the statement that fills it (a nest
/// storing `staged[t...] = source[t...]`, every element), its source fragment and its shared buffer, which only
/// that statement writes and only the nest it was made for reads.
struct StagedCopy {
    ir::Stmt copy;
    ir::Buffer source, staged;
};

/// `body` with each of `copies` moved before every loop (serial, unrolled, pipelined) that holds it among the
/// statements of its body and changes nothing the copy depends on: no statement of the loop may write the
/// source, a view of it or a fragment it is a view of (`views`: (view, base) pairs, Kernel::fragmentViews), a
/// store, a tile statement's destination, a T.gemm accumulator, an atomic, or any buffer a library or extern
/// call names; no other statement of the loop may write the staged buffer; the copy may not read the loop's
/// variable. The copy then runs once where it ran at every iteration: same contents (the source is the same at
/// every iteration), and the barriers insertSyncs puts around it move out with it. A loop that runs no
/// iteration now copies once for nothing (the staged buffer is the copy's own).
ir::Stmt hoistStagedCopies(const ir::Stmt &body, const std::vector<StagedCopy> &copies,
                           const std::vector<std::pair<ir::Buffer, ir::Buffer>> &views);

} // namespace tilec::passes
