/// \file
/// Gathered tile fills as asynchronous transfers (pipelineLoops): a T.Parallel nest that fills a whole shared
/// tile with elements of a global tensor at positions it computes (sparse attention's
/// `KV_shared[i, d] = KV[bos + Indices[..., k * BI + i], g, d]`, rows picked by an index tensor) is no T.copy
/// (copyOfNest takes affine sources only), so a T.Pipelined loop used to load it synchronously in every
/// iteration, through registers, its latency (an index load, then the row's load) exposed each time. TileLang
/// issues such a nest as predicated cp.async copies, ahead in the pipeline like a T.copy; so does tilec: the nest
/// becomes each thread's share of the tile's 4- to 16-byte chunks, one tilec::cp_async each, zero-filled where
/// the position lies outside the tensor (as the nest's own loads read zeros there), issued into a stage of the
/// tile's ring like a hoisted copy.
#pragma once

#include "tilec/IR.h"
#include "tilec/passes/Arith.h"

#include <optional>
#include <set>

namespace tilec::passes {

/// A nest `dst[v0, ..., vn] = src[e0, ..., em]` over the whole of shared tile `dst` (each variable its own
/// dimension, in order), `src` a global tensor argument of the kernel: `em` is `vn` plus an origin that does not
/// depend on `vn`, aligned to `vec` elements, and no other index depends on `vn`; the tile's chunks of `vec`
/// elements a multiple of the block's threads. The store may follow scalars the body sets first, a position
/// named in the program (`idx = Indices[..., i]` then `dst[i, d] = src[idx, d]`, which TileLang's value
/// semantics make a per-thread scalar): `load` is then the element's load with their values written in.
struct GatherFill {
    std::vector<const ir::For *> loops;
    const ir::Store *store = nullptr;
    const ir::Load *load = nullptr;
    ir::Expr value; ///< what `load` points into where named positions were written in (keeps it alive)
    int vec = 1; ///< elements per cp.async (4 to 16 bytes)
};

/// `s` as such a fill whose loads (the element's and those of its indices) read only `invariant` buffers and whose
/// indices use no variable of `boundInside` but the nest's own: a fill that can be issued for a later iteration
/// of the loop around it. Nothing for any other statement, or where no chunk of at least 4 bytes fits.
std::optional<GatherFill> gatherFill(const ir::Stmt &s, const ir::Kernel &k, const std::set<const ir::BufferNode *> &invariant,
                                     const std::set<const ir::VarNode *> &boundInside);

/// The fill's transfer for the iteration `iter` maps the loop variable to, into `dst` (the tile, or a ring of it
/// with `stage` its first index; null for none): thread `tx` of `threads` issues chunks tx, tx + threads, ... of
/// the tile's row-major chunks, one tilec::cp_async each (completed by a cp.async wait), valid where the
/// position lies inside the tensor (the tests that `ranges`, what is known where it is issued, prove left out).
/// Positions read from memory are read first, each chunk's into a register array added to `locals`.
ir::Stmt gatherTransfer(const GatherFill &g, const VarMap &iter, const ir::Buffer &dst, const ir::Expr &stage,
                        const ir::Var &tx, int threads, const RangeMap &ranges, std::vector<ir::Buffer> &locals);

} // namespace tilec::passes
