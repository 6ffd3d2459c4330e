/// \file
/// One block per SM as the launch bound of one-wave grids (include/tilec/passes/OneWaveLaunchBounds.h).
#include "tilec/passes/OneWaveLaunchBounds.h"

#include "EachKernel.h"

#include <optional>

namespace tilec::passes {

namespace {

/// The number of blocks of the kernel's grid where every extent is a constant; nullopt otherwise.
std::optional<int64_t> constantBlocks(const ir::Kernel &k) {
    int64_t blocks = 1;
    for (const ir::Expr &e : k.grid) {
        std::optional<int64_t> n = ir::constInt(e);
        if (!n || *n < 0) return std::nullopt;
        blocks *= *n;
    }
    return blocks;
}

} // namespace

ir::Program oneWaveLaunchBounds(const ir::Program &p, const Target &t) {
    return eachKernel(p, [&](const ir::KernelP &k) -> ir::KernelP {
        if (k->minBlocksPerSM || k->persistent) return k;
        std::optional<int64_t> blocks = constantBlocks(*k);
        if (!blocks || *blocks > t.numSms) return k;
        auto nk = std::make_shared<ir::Kernel>(*k);
        nk->minBlocksPerSM = 1;
        return nk;
    });
}

} // namespace tilec::passes
