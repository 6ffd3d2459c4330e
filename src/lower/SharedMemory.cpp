/// \file
/// The shared-memory budget's estimates (include/tilec/SharedMemory.h).
#include "tilec/SharedMemory.h"
#include "tilec/SharedAliases.h"

#include <algorithm>

namespace tilec::smem {

int64_t sharedBytes(const ir::BufferNode *b) {
    if (!b || b->scope != ir::Scope::Shared) return 0;
    return std::max<int64_t>(0, b->constElements()) * b->dtype.bytes();
}

int64_t bufferAlignment(const ir::BufferNode &b, bool tmaTile) {
    return tmaTile ? kTmaTileAlignment : b.dtype.bytes() == 8 && b.dtype.isInt() ? 8 : kBufferAlignment;
}

int64_t estimatedBytes(const ir::Kernel &k) {
    int64_t shared = kTmaTileAlignment;
    for (auto &b : k.allocs)
        if (ir::storageOf(k, b.get()) == b.get()) shared += roundUp(sharedBytes(b.get()), kTmaTileAlignment); // (an alias: its base's bytes)
    return shared;
}

} // namespace tilec::smem
