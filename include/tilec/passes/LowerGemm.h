/// \file
/// T.gemm to calls of the device library's tensor-core GEMMs (stdlib/tilec/mma.cuh).
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/Target.h"

#include <vector>

namespace tilec::passes {

/// Replaces each T.gemm by `tilec.gemm_ss` (both operands in shared memory) or `tilec.gemm_rs` (operand A
/// in registers), whose arguments are the GEMM's shape, the warp split of the accumulator's mma layout, the
/// transposes, and the addresses of the operands (shared tiles, stored swizzled) and of the accumulator's
/// register array. Operand types the tensor cores lack (or that the target lacks: float8 before sm_89), a K
/// that is not a multiple of the instruction's, and operands that are not whole shared tiles are located
/// errors.
ir::Program lowerGemm(const ir::Program &p, const Target &t, DiagnosticEngine &diag);

} // namespace tilec::passes
