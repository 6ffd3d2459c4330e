/// \file
/// Element-level alias analysis of per-thread shared-memory accesses for insertSyncs: which elements of a
/// shared buffer a per-thread statement (no tile statement in it) loads and stores, as index expressions, and
/// whether two sets of such accesses can touch one element from two different threads. Where they cannot, no
/// barrier is needed between them: each thread reads back (or overwrites) only its own elements, or the two
/// sides touch disjoint elements. This complements ThreadOwners (which enumerates threads and iterations over
/// constant bounds) with symbolic reasoning that works over run-time loop bounds and data-dependent indices in
/// other dimensions.
#pragma once

#include "tilec/IR.h"
#include "tilec/passes/Arith.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace tilec::passes::syncs {

/// One plain load or store of a shared buffer by per-thread code: its indices, the ranges its variables had
/// where it was recorded, and the variables that may hold other values now than when it ran (`stale`: the
/// variables of loops whose iterations have been crossed since, and of loops inside its statement).
struct Site {
    std::vector<ir::Expr> indices;
    RangeMap ranges;
    std::set<const ir::VarNode *> stale;
};
using Sites = std::shared_ptr<const std::vector<std::shared_ptr<const Site>>>;
/// Per buffer, its pending accesses when every one is known; a buffer missing was touched in unknown ways.
using SiteMap = std::map<const void *, Sites>;

/// Records the plain loads and stores of shared buffers in the per-thread statement `s` into `loads` and
/// `stores` (a buffer used any other way, through a tile region or an address, is left out: unknown). `ranges`
/// bounds the variables around `s`.
void recordSites(const ir::Stmt &s, const RangeMap &ranges, SiteMap &loads, SiteMap &stores);

/// The sites of both maps together, for `buffer`'s entry: `mine` holds `buffer` in its set when `mineHas`.
void mergeSites(bool mineHas, SiteMap &mine, const void *buffer, const SiteMap &theirs);

/// Marks `vars` stale in every site that uses one of them (a loop's next iteration, or its exit).
void forgetVars(SiteMap &sites, const std::set<const ir::VarNode *> &vars);

/// The variables of the loops in `s`, with `s`'s own when it is a loop.
std::set<const ir::VarNode *> loopVars(const ir::Stmt &s);

/// What the comparison of two sets of sites knows about the kernel.
struct ElementContext {
    const ir::VarNode *tx = nullptr;                     ///< the thread index
    const RangeMap *ranges = nullptr;                    ///< the ranges of the variables in scope now
    std::function<bool(const ir::VarNode *)> uniformVar; ///< the same in every thread
};

/// Whether no element can be touched by `earlier` in one thread and by `later` in another thread: for every
/// pair of sites, some dimension proves the two indices never equal, or equal only in one thread (indices
/// `K * tx + rest` with the same K on both sides and |rest - rest'| < |K|). Variables that are the same in every
/// thread and not stale on either side are the same value on both; any other variable is free on each side.
bool sitesThreadPrivate(const Sites &earlier, const Sites &later, const ElementContext &cx);

} // namespace tilec::passes::syncs
