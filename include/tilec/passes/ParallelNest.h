/// \file
/// The loops of a T.Parallel nest, for the passes and analyses that take a nest as one unit (layout inference,
/// fragment transposes and offsets, race checks, the per-thread lowering).
#pragma once

#include "tilec/IR.h"

#include <cstddef>
#include <limits>
#include <vector>

namespace tilec::passes {

/// The nest that starts at `outer` (whatever its kind): `outer`, then each T.Parallel loop that is the whole body
/// of the loop before it, outermost first, at most `maxDepth` loops (a layout's rank). The innermost loop's body
/// is the nest's body.
inline std::vector<const ir::For *> parallelNest(const ir::For &outer,
                                                 size_t maxDepth = std::numeric_limits<size_t>::max()) {
    std::vector<const ir::For *> loops{&outer};
    while (loops.size() < maxDepth) {
        const ir::For *inner = ir::as<ir::For>(loops.back()->body);
        if (!inner || inner->forKind != ir::ForKind::Parallel) break;
        loops.push_back(inner);
    }
    return loops;
}

} // namespace tilec::passes
