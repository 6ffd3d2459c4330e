/// \file
/// Per-column values of tensor-core fragments (src/lower/ColumnLayouts.cpp), for inferLayouts: which fragment
/// groups take an mmaCols layout (include/tilec/passes/Layout.h).
#pragma once

#include "LayoutUses.h"
#include "tilec/passes/Layout.h"

#include <functional>
#include <map>
#include <optional>

namespace tilec::passes {

/// The mmaCols layout of each fragment group (by its inferLayouts group id) that holds per-column values of an mma
/// group: read at the column variables of nests over a T.gemm's accumulator or operand A (`d[j]` in a nest over
/// (i, j), `w[a, b]` in one over a view (i, a, b)), and otherwise used only by nests over its own shape. A group
/// with any other use (a store by column, a constant index, a reduction into or from it, reads in mma nests split
/// differently) is left out: it stays whole in every thread. `groupOf` gives -1 for a buffer that is no fragment; `mmaOf` a group's mma layout so far.
std::map<int, Layout> columnLayouts(const LayoutUses &c, const std::function<int(const ir::BufferNode *)> &groupOf,
                                    const std::function<int(int)> &nestGroup,
                                    const std::function<std::optional<Layout>(int)> &mmaOf);

} // namespace tilec::passes
