/// \file
/// Thread-range regions at a kernel's top level whose branches can run at once, each on its own threads
/// (threadRangeRegions' concurrent form; joinThreadRoles puts the lowered roles back, include/tilec/passes/JoinThreadRoles.h).
#pragma once

#include "tilec/IR.h"
#include "ThreadRanges.h"

#include <optional>
#include <string>
#include <vector>

namespace tilec::passes::concurrent {

/// A region `if` (threadRangeRegions has checked its branches) and its branches' threads.
struct RangeIf {
    const ir::IfThenElse *at;
    threadranges::ThreadRange then;
    std::optional<threadranges::ThreadRange> otherwise;
};

/// What splitRoles makes of a kernel: `outer`, in which each region it took is `Sync; WarpRoles(C, P) with empty
/// roles; Sync` (the barriers where code is on either side), and one kernel per role, named
/// roleKernelName(outer, i, consumer), whose `threads` are the role's and whose body is the branch.
struct Split {
    ir::KernelP outer;
    std::vector<ir::KernelP> roles;
};

/// The name of the kernel that holds role `consumer` of the `index`-th roles of kernel `outer` (a name no C
/// identifier has).
std::string roleKernelName(const std::string &outer, size_t index, bool consumer);

/// The regions of `k` whose branches run as concurrent roles (threads [0, C) the consumer, [C, threads) the
/// producer; a branch with no else: an empty role), or nullopt when there are none. A region is taken where
/// running its branches at once cannot change what the program computes: it is at the kernel's top level, its
/// bounds are whole warps, neither branch holds a T.gemm, a library call with effects (other than a barrier) or
/// an external call, no shared or global buffer that one branch writes is touched by the other, and no
/// register buffer is used in the branches of two regions. `why` gets, for each region not taken, its
/// location and why (for -v).
std::optional<Split> splitRoles(const ir::Kernel &k, const std::vector<RangeIf> &regions,
                                std::vector<std::pair<SourceRange, std::string>> &why);

} // namespace tilec::passes::concurrent
