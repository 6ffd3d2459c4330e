/// \file
/// T.gemm operands read from a shared copy of their fragment (src/lower/StagedOperands.cpp), for inferLayouts.
#pragma once

#include "tilec/IR.h"

#include <memory>
#include <set>

namespace tilec::passes {

/// Kernel `k` with operand A of each T.gemm in `gemms` (a whole fragment) read from a shared copy made just before
/// the product (`A_operand[i, k] = A[i, k]` in a T.Parallel over A's shape: the fragment's own layout, whichever
/// its group takes), one shared copy per fragment. inferLayouts' re-layout where a fragment cannot take operand A's
/// layout (whole rows in each warp) because another T.gemm's accumulator split fixes it otherwise; the barriers
/// around the copy are insertSyncs'.
std::shared_ptr<const ir::Kernel> stageGemmOperands(const std::shared_ptr<const ir::Kernel> &k,
                                                    const std::set<const ir::Gemm *> &gemms);

} // namespace tilec::passes
