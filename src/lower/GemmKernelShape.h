/// \file
/// The parts of a GEMM kernel written the usual way (a clear, one K loop of tile copies and T.gemms, a copy
/// out), as splitK and widenGemmTiles rewrite it.
#pragma once

#include "tilec/IR.h"

#include <cstddef>
#include <string>

namespace tilec::passes {

/// The parts of a GEMM kernel written the usual way, or why the kernel is not one. The pointers point into the
/// kernel's body.
struct GemmShape {
    size_t loopAt = 0;                ///< index of the K loop in the body's statements
    const ir::For *loop = nullptr;
    const ir::Copy *store = nullptr;  ///< the accumulator's T.copy to C, the body's last statement
    std::string why;                  ///< empty when the kernel matched
};

/// Kernel `k` as T.Kernel's body of fragment clears (the float32 accumulator's among them), one serial or
/// T.Pipelined K loop from 0 whose body only copies tiles into shared memory and accumulates T.gemms (dense)
/// into that accumulator, and one T.copy of the whole accumulator to a 2-D tensor parameter; no clusters,
/// tensor layouts, workspaces or views.
GemmShape matchGemmKernel(const ir::Kernel &k);

} // namespace tilec::passes
