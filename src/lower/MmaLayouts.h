/// \file
/// Tensor-core layouts of fragment groups (src/lower/MmaLayouts.cpp), for inferLayouts: the mma layouts of each
/// T.gemm's accumulator and operand-A fragments and the mmaRows layouts of their per-row values
/// (include/tilec/passes/Layout.h).
#pragma once

#include "LayoutUses.h"
#include "tilec/Diagnostics.h"
#include "tilec/passes/Layout.h"

#include <functional>
#include <optional>
#include <set>

namespace tilec::passes {

/// What the tensor-core layouts decide for one of inferLayouts' groups (fragments and nests linked by exact
/// indexing), which holds more.
struct MmaGroup {
    bool replicated = false;        ///< held whole in every thread
    std::optional<Layout> mma;      ///< an mma or mmaRows layout the group must take
    const GemmUse *mmaBy = nullptr; ///< the T.gemm that fixed it
};

/// Tensor cores: each T.gemm's accumulator group takes an mma layout (its warp split from the policy, or
/// chosen so that a fragment later read as operand A holds whole rows per warp); an operand-A fragment
/// takes the mma layout of its (M, K); 1-D fragments of per-row values of an mma group (reduction results
/// along dim 1, `x[i]` in a nest over the group) take the mmaRows layout.
/// `groupOf`: a fragment's group; `group`: a group by id; `nestGroup`: the group of nest i of `c`. Errors where the
/// products' splits disagree or a fragment of an mma group is indexed otherwise than by a nest over all of it.
/// `stageA` (when given) collects the mma.sync products whose operand-A fragment cannot take operand A's layout
/// because another product's accumulator split fixes its group otherwise (columns split over warps, or other warp
/// rows): they are to read A from a shared copy (stageGemmOperands) instead of reporting the conflict, and the
/// layouts of this call are then not the kernel's (inferLayouts runs again on the staged kernel).
void assignMmaLayouts(const ir::Kernel &k, const LayoutUses &c, const std::function<int(const ir::BufferNode *)> &groupOf,
                      const std::function<MmaGroup &(int)> &group, const std::function<int(int)> &nestGroup,
                      DiagnosticEngine &diag, std::set<const ir::Gemm *> *stageA = nullptr);

} // namespace tilec::passes
