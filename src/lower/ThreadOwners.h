/// \file
/// Which thread touches each element of a shared buffer in a T.Parallel nest, so that insertSyncs can leave
/// out a barrier between two nests whose every common element is touched by one and the same thread (a
/// tile staged through shared memory and read back in the layout it was written in).
#pragma once

#include "tilec/IR.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace tilec::passes {

/// Per element of a buffer (row-major): the thread that touches it, kUntouched, or kSeveral.
using Owners = std::shared_ptr<const std::vector<int32_t>>;
constexpr int32_t kUntouched = -1, kSeveral = -2;
using OwnerMap = std::map<const void *, Owners>;

/// Owners already worked out, by statement and the ranges of the variables around it that they depend on (a
/// loop's body is rewritten several times by insertSyncs).
struct OwnerCache {
    using Key = std::pair<const void *, std::vector<std::pair<const ir::VarNode *, Interval>>>;
    struct Less {
        bool operator()(const Key &a, const Key &b) const;
    };
    std::map<Key, std::pair<OwnerMap, OwnerMap>, Less> entries;
};

/// The owners of the shared buffers that the T.Parallel nest `outer` (laid out by `layouts`) loads and stores,
/// for each buffer where every access is known: constant shape, indices that depend only on the nest's
/// variables and on variables `ranges` bounds to a few values (the loops around the nest: the owners then
/// cover all their iterations at once), a distributed or mma layout. A buffer missing from the maps is
/// touched in ways not known.
void nestOwners(const ir::For &outer, const KernelLayouts &layouts, const RangeMap &ranges, OwnerCache &cache,
                OwnerMap &loads, OwnerMap &stores);

/// The same for per-thread code `s` (no tile statement in it) run by `threads` threads of thread index `tx`:
/// indices of the thread index, of the loops in `s` and of those `ranges` bounds, over all their iterations
/// (each thread's stores of its own registers to its own piece of a shared tile).
void threadOwners(const ir::Stmt &s, const ir::VarNode *tx, int64_t threads, const RangeMap &ranges,
                  OwnerCache &cache, OwnerMap &loads, OwnerMap &stores);

/// Whether `op` hands addresses over (tilec.address_of, a T.call_extern); then the shared buffers whose
/// elements it addresses are added to `out` (their accesses are not known).
bool addressesShared(const ir::Call &op, std::set<const ir::BufferNode *> &out);

/// The row-major element of `indices` at the iteration `values`, or -1 outside the buffer or unknown.
int64_t elementAt(const std::vector<ir::Expr> &indices, const std::vector<int64_t> &shape,
                  const std::map<const ir::VarNode *, int64_t> &values);

/// The owners of two sets of accesses together.
Owners combineOwners(const Owners &a, const Owners &b);

/// Whether every element both touch is touched by one thread, the same on both sides.
bool samePrivateOwners(const Owners &a, const Owners &b);

/// How many of the block's `threads` threads satisfy `cond` (or !cond when `negate`), when it depends on the
/// thread index `tx` and constants only and they make whole warps of 32; 0 otherwise (none or every thread, a
/// part of a warp, or a condition on anything else).
int64_t wholeWarpsSatisfying(const ir::Expr &cond, bool negate, const ir::VarNode *tx, int64_t threads);

} // namespace tilec::passes
