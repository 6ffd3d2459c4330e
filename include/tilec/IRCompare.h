/// \file
/// Structural equality of lowered kernels: what makes two lowerings of one kernel the same kernel, which
/// lowerVariants merges into one naming all their targets (src/lower/LowerVariants.cpp). Node by node, never
/// through printed text; each lowering makes its own variables and buffers, so those are matched one to one as
/// the walk meets them (a variable with the same name and type, a buffer with the same name, scope, type and
/// shape), not by identity. Source locations are not compared. Defined in src/ir/IRCompare.cpp.
#pragma once

#include "tilec/IR.h"

namespace tilec::ir {

/// Whether `a` and `b` are the same kernel in everything code generation and the launcher read but the targets
/// they are for: signature, launch configuration, allocations, code, tensor maps, shared-memory plan, tile
/// layouts, whether TMA is needed and the run-time assumptions.
bool sameLowering(const Kernel &a, const Kernel &b);

} // namespace tilec::ir
