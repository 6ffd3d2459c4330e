/// \file
/// Distributed layouts whose elements are held by several threads (Layout::copies): how inferLayouts chooses
/// them (src/lower/CopiedLayouts.cpp) and how lowerParallel finds an element of one in a nest of another layout.
///
/// Two kinds of fragment group take copies instead of being held whole by every thread or by a few threads:
/// - a fragment read by a nest of another layout at an index that is not the nest's own (`col_sum[i, k]` in a
///   nest over (i, j, k)), or that receives a reduction: it takes the layout in which every thread holds
///   exactly what the nests read there and what the reduction leaves in it (the source's thread mapping with
///   the reduced dimension's thread bits as copies), found by evaluating those uses for every thread; likewise
///   a fragment stored by such a nest at an index that is not the nest's own (`amax[(i % 16 * 128 + j) // 8]`,
///   TileKernels' per_block_cast), when every element stored is stored from one thread only: that thread alone
///   holds it (no copies, which the store would leave stale);
/// - a group smaller than the block (16 elements over 128 threads): spread over as many virtual threads as it
///   has vectors, the other thread bits copies, so that every warp holds it and reductions stay in a warp.
#pragma once

#include "LayoutUses.h"
#include "tilec/passes/Layout.h"

#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace tilec::passes {

/// One group of inferLayouts' union-find, as the choice of copies sees it.
struct CopyGroup {
    Layout layout;        ///< its layout so far (distributed or replicated; mma groups are not given)
    bool fixed = false;   ///< must keep it (a view of one of its fragments, a tensor-core layout)
    int maxVec = 1;       ///< the widest vector width its fragments allow
};

/// New layouts (with copies) for groups of `groups` (by group id) where one serves every use; the others keep
/// theirs. `groupOf(b)` is a fragment's group, `nestGroup(n)` a nest's.
std::map<int, Layout> chooseCopiedLayouts(const LayoutUses &c, int threads, const std::map<int, CopyGroup> &groups,
                                          const std::function<int(const ir::BufferNode *)> &groupOf,
                                          const std::function<int(int)> &nestGroup);

/// The slot of thread `t` that holds element `q` of a distributed or replicated layout, or -1.
int64_t slotOf(const Layout &l, int64_t t, int64_t q);

/// For each slot of a nest of layout `nest` (round * V + lane), the slot of fragment layout `frag` holding the
/// element `indices` (over the nest's variables `vars`) names in every thread that meets that slot (-1: none
/// does; -2: threads differ); nullopt when some thread does not hold what it reads.
std::optional<std::vector<int64_t>> projectedSlots(const Layout &frag, const Layout &nest, const std::vector<ir::Expr> &indices,
                                                   const std::vector<ir::Var> &vars);

/// The register slot of `frag`'s element `indices` in a distributed nest of layout `nest` (its round and lane
/// variables `round`, `lane`), when the fragment or the nest has copies: `a*round + b*lane + c` where the
/// slots the nest meets are affine so, else the element's slot computed from its index (correct in every
/// holder); nullopt when some thread of the nest does not hold what it reads.
std::optional<ir::Expr> copiedSlot(const Layout &frag, const Layout &nest, const std::vector<ir::Expr> &indices,
                                   const std::vector<ir::Var> &vars, const ir::Var &round, const ir::Var &lane);

} // namespace tilec::passes
