/// \file
/// Shared-memory bank conflicts of one warp's element accesses (src/lower/BankConflicts.h).
#include "BankConflicts.h"

#include "tilec/passes/Arith.h"

#include <algorithm>
#include <set>

namespace tilec::passes::banks {

constexpr int kLanes = 32, kBanks = 32, kWordBytes = 4;

std::optional<WarpAccess> firstWarp(const ir::Expr &offset, const ir::VarNode *tx, std::map<const ir::VarNode *, int64_t> values,
                                    int bytes) {
    if (!tx || bytes <= 0) return std::nullopt;
    WarpAccess a;
    a.bytes = bytes;
    for (int lane = 0; lane < kLanes; ++lane) {
        values[tx] = lane;
        auto o = evalInt(offset, values);
        if (!o || *o < 0) return std::nullopt;
        a.offsets.push_back(*o);
    }
    return a;
}

int64_t wavefronts(const WarpAccess &a, int elemBytes, const std::function<int64_t(int64_t)> &map) {
    std::set<int64_t> words[kBanks];
    const int elems = std::max(1, a.bytes / elemBytes);
    for (int64_t o : a.offsets)
        for (int e = 0; e < elems; ++e) {
            const int64_t word = map(o + e) * elemBytes / kWordBytes;
            words[word % kBanks].insert(word);
        }
    size_t most = 0;
    for (auto &w : words) most = std::max(most, w.size());
    return (int64_t)most;
}

} // namespace tilec::passes::banks
