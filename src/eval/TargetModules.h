/// \file
/// The stand-ins for TileLang's and TVM's target modules (TargetModules.cpp): `tvm.target.Target`, the
/// target queries of `tilelang.cuda.target`, `tilelang.rocm.target`, `tilelang.metal.target`,
/// `tilelang.backend.target` and (before 0.1.13) `tilelang.utils.target`, and `tilelang.contrib.nvcc`'s.
#pragma once

#include "eval/InterpImpl.h"

namespace tilec::eval {

/// The module `dotted` when it is one of the target modules (or a package above one that tilec knows no
/// other way: tilelang.rocm, tilelang.metal, tilelang.backend, tvm.target); nullopt for any other name.
std::optional<Value> targetModule(InterpImpl &in, const std::string &dotted);

} // namespace tilec::eval
