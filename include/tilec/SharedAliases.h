/// \file
/// Shared aliases: a T.view of a shared buffer to another dtype (src/eval/TileLangViews.cpp) is a buffer of its own
/// (its dtype, its shape, an alloc of the kernel) over its base's bytes: its element i holds the bytes
/// [i * its size, (i + 1) * its size) of the base's row-major storage, so a value written through one is read
/// through the other. planSharedMemory places it at the base's offset, swizzleShared stores it in the base's
/// swizzle counted in its own elements, insertSyncs orders its accesses as the base's (ThreadOwners' elements
/// moved to the base's bytes), and the simulator passes the bytes between them. Passes that replace a shared
/// buffer (a pipeline ring, a shrunk GEMM tile) leave both as they are.
///
/// They are recorded in Kernel::fragmentViews beside the fragment views, as (view, base) pairs whose base is in
/// shared memory (a fragment view's base is a fragment), so that every pass that copies a kernel keeps them.
#pragma once

#include "tilec/IR.h"

#include <utility>
#include <vector>

namespace tilec::ir {

/// The kernel's shared aliases, (view, base).
inline std::vector<std::pair<Buffer, Buffer>> sharedAliases(const Kernel &k) {
    std::vector<std::pair<Buffer, Buffer>> out;
    for (auto &p : k.fragmentViews)
        if (p.second && p.second->scope == Scope::Shared) out.push_back(p);
    return out;
}

/// The buffer whose bytes `b` names: the base of a shared alias, else `b` itself.
inline const BufferNode *storageOf(const Kernel &k, const BufferNode *b) {
    for (auto &[v, base] : k.fragmentViews)
        if (v.get() == b && base->scope == Scope::Shared) return base.get();
    return b;
}

/// Whether `b` is a shared alias or the base of one.
inline bool aliased(const Kernel &k, const BufferNode *b) {
    for (auto &[v, base] : k.fragmentViews)
        if (base->scope == Scope::Shared && (v.get() == b || base.get() == b)) return true;
    return false;
}

} // namespace tilec::ir
