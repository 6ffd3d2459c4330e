/// \file
/// The index-width oracle of the differential fuzzer: programs whose tensors pass 2^31 elements are too large
/// to simulate, so their lowered kernels are checked symbolically instead. Every global-memory access of the
/// lowered kernel (what code generation prints) has its index evaluated twice at many points of its domain:
/// exactly (128-bit integers, no type), and as the emitted C types compute it (each operation wrapped to its
/// IR type: 32-bit arithmetic wraps at 2^31). The points are the corners of the domain (every block index,
/// the thread index and every enclosing loop variable at its min and its max, inner loop bounds evaluated at
/// the outer values; sampled when there are too many corners) and random interior points; a value read from
/// memory inside an index (a gather) takes its type's extreme values and random ones. A difference is a
/// failure; so is an exact index outside the tensor where the access surely runs (every enclosing condition
/// true, no value read from memory). The oracle knows nothing of the compiler's range analysis (Arith,
/// widenIndices): it only evaluates what the lowered IR says.
#pragma once

#include "tilec/IR.h"

#include <cstdint>
#include <map>
#include <string>

namespace tilec::difffuzz {

struct IndexVerdict {
    bool ok = true;
    std::string detail;     ///< the first failure: the access, both values and the point
    int64_t accesses = 0;   ///< global accesses checked
    int64_t points = 0;     ///< (access, point) evaluations
};

/// Checks `k` (lowered) for the T.dynamic sizes `dyn`; `seed` draws the sampled and interior points.
IndexVerdict checkIndexWidth(const ir::Kernel &k, const std::map<std::string, int64_t> &dyn, uint64_t seed);

} // namespace tilec::difffuzz
