/// \file
/// Semantic checks of a typed kernel that need the whole kernel or the target (src/check/).
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"

namespace tilec {

/// Checks declared shared memory against the target's per-block limit (pipelined buffers count once per
/// stage; the message names the buffers), fragments whose per-thread share cannot fit in registers, and the
/// other whole-kernel rules of docs/LANGUAGE.md. Reports through `diag`; returns false on any error.
bool checkKernel(const ir::Kernel &k, const Target &t, DiagnosticEngine &diag);

} // namespace tilec
