/// \file
/// Shared-memory bank conflicts of one warp's element accesses, counted statically: SwizzleShared.cpp asks
/// whether the row swizzle would take fewer wavefronts than a tile's plain row-major storage, VectorizeAccesses.cpp
/// whether a lane's elements read one by one conflict where one vector read of them would not, and
/// describeBankConflicts (SwizzleShared.h) lists what every shared access of a lowered kernel takes.
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
/// `values` (tilec.swz and tilec.swz_split evaluated: rowSwizzled); nullopt where an offset does not evaluate (it
/// reads memory, a variable without a value, or another call: tilec.swz_panels).
std::optional<WarpAccess> firstWarp(const ir::Expr &offset, const ir::VarNode *tx, std::map<const ir::VarNode *, int64_t> values,
                                    int bytes);

/// The wavefronts the access takes when element offset o is stored at element map(o) (4-byte banks, 32 of
/// them): the most distinct 4-byte words one bank serves. A conflict-free access of 4 bytes or less takes 1;
/// one of 16 bytes per lane takes 4 whatever the layout.
int64_t wavefronts(const WarpAccess &a, int elemBytes, const std::function<int64_t(int64_t)> &map);

/// The wavefronts the access takes at the least: one per 128 bytes the warp moves (a 16-byte access: 4).
int64_t idealWavefronts(const WarpAccess &a);

/// Whether tilec::swz<cols, eb> moves anything (swizzle.cuh's swz_active): rows of whole 16-byte chunks, of a
/// multiple of 128 bytes or of 64 or 32.
bool rowSwizzleActive(int64_t cols, int64_t eb);

/// The element offset `off` of a tile stored in the row swizzle over rows of `cols` `eb`-byte elements, the pattern
/// restarting every `tileElems` elements (tilec::swz_in_tiles, what lib::Fn::Swz computes in code generation).
int64_t rowSwizzled(int64_t cols, int64_t eb, int64_t tileElems, int64_t off);

/// Whether code generation issues the memory accesses of vectorized loop `f` as one vector a thread (a loop that
/// only loads memory into registers or stores registers to memory, or a vector atomic addition: the patterns
/// VectorizeAccesses.h leaves), not as the element accesses each lane writes (a pair conversion).
bool issuesVectors(const ir::For &f);

/// One shared-memory load or store of a lowered kernel as the block's first warp runs it, loops at their first
/// iteration (offsets through tilec.swz evaluated: the layout swizzleShared chose).
struct AccessCost {
    const ir::BufferNode *buffer = nullptr;
    bool store = false;
    ir::Expr index;
    int bytes = 0; ///< a lane's
    int64_t wavefronts = 0, ideal = 0;
};
/// Every such access of `k` whose offsets evaluate, in program order, each distinct one once.
std::vector<AccessCost> sharedAccessCosts(const ir::Kernel &k);

} // namespace tilec::passes::banks
