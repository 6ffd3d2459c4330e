/// \file
/// A pass's rewrite of one kernel applied to every kernel of a program (the passes whose work is per kernel).
#pragma once

#include "tilec/IR.h"

namespace tilec::passes {

/// `p` with each kernel through `f` (KernelP -> KernelP), in order.
template <class F> ir::Program eachKernel(const ir::Program &p, F &&f) {
    ir::Program out;
    for (auto &k : p.kernels) out.kernels.push_back(f(k));
    return out;
}

} // namespace tilec::passes
