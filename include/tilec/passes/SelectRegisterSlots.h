/// \file
/// Reads of a fragment held whole by every thread at an index that depends on the thread, turned into a choice
/// among the few slots the thread index can name, each at an index the CUDA compiler resolves at compile time.
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// The most slots one read chooses among.
constexpr int64_t kMaxSelectedSlots = 8;

/// A replicated fragment (every thread holds every element: inferLayouts found no layout that gives each thread only
/// what it reads) read at `a + b(tx)` (`row_max[tx / 4]`, TileKernels' pre_big_fuse over 96 threads, where layouts
/// with copies need a power-of-two block) is an array nvcc must put in local memory: no register can be named at a
/// run-time index. Where b(tx), the terms of the index that use the thread index, takes at most kMaxSelectedSlots
/// values that keep the index inside the array, the read becomes `b == c0 ? f[a + c0] : b == c1 ? f[a + c1] : ...`,
/// whose indices are constants once the loops over a are unrolled: the array stays in registers.
ir::Program selectRegisterSlots(const ir::Program &p);

} // namespace tilec::passes
