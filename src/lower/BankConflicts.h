/// \file
/// Shared-memory bank conflicts of one warp's element accesses, counted statically: SwizzleShared.cpp asks
/// whether the row swizzle would take fewer wavefronts than a tile's plain row-major storage.
#pragma once

#include "tilec/IR.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace tilec::passes::banks {

/// One load or store of a shared buffer as the block's first warp runs it: the element offset of each of the
/// 32 lanes and the bytes each lane moves from there (a vector access: several elements, at most 16 bytes).
struct WarpAccess {
    std::vector<int64_t> offsets;
    int bytes = 0;
};

/// The lanes' offsets of `offset` with the thread index `tx` set to 0..31 and the other variables to
/// `values`; nullopt where an offset does not evaluate (it reads memory or a variable without a value).
std::optional<WarpAccess> firstWarp(const ir::Expr &offset, const ir::VarNode *tx, std::map<const ir::VarNode *, int64_t> values,
                                    int bytes);

/// The wavefronts the access takes when element offset o is stored at element map(o) (4-byte banks, 32 of
/// them): the most distinct 4-byte words one bank serves. A conflict-free access of 4 bytes or less takes 1;
/// one of 16 bytes per lane takes 4 whatever the layout.
int64_t wavefronts(const WarpAccess &a, int elemBytes, const std::function<int64_t(int64_t)> &map);

} // namespace tilec::passes::banks
