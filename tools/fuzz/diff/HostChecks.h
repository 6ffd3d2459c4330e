/// \file
/// The launch-function oracle: the generated C function checks its arguments before it launches (docs/INTERFACE.md):
/// null pointers and alignment (a tensor of no elements may be null or anywhere), every run-time size's range
/// (0 to 2^31 - 1, strides too), and overlap, since the device code declares tensor
/// pointers __restrict__: two tensors whose byte ranges share a byte, one of them written, return
/// TILEC_ERROR_OVERLAP. The simulator runs the lowered kernel, never this host code, so a check that measures a
/// tensor wrongly (session 36: a T.StridedTensor's bytes taken as its element count, not its strides' span)
/// is wrong code it cannot see. Here the checks are read from the generated CUDA and evaluated for the
/// program's sizes (LoopHeaders.h: evaluateC), and compared with the fuzzer's own model of each tensor: its
/// storage's bytes, its emptiness, which pairs must be checked (one written) and which must not (both inputs).
#pragma once

#include "tilec/IR.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tilec::difffuzz {

/// "" when the launch function of `cuda` checks `typed`'s tensors as the model says for sizes `dyn`; else
/// the first difference. `strides`: the T.StridedTensor parameters' strides (Check.h: stridesOf); `inputs`:
/// tensors the program never writes; `written`: tensors the reference stored into.
std::string checkLaunchArguments(const std::string &cuda, const ir::Kernel &typed, const std::map<std::string, double> &dyn,
                                 const std::map<std::string, std::vector<int64_t>> &strides,
                                 const std::set<std::string> &inputs, const std::set<std::string> &written);

/// "" when the `NAME_workspace_bytes(...)` query of `cuda` gives each of `typed`'s T.alloc_global workspaces its
/// elements times its element size, in a slot of its own rounded up to 256 bytes, for sizes `dyn`; else the first
/// difference (HostWorkspace.cpp).
std::string checkWorkspaceBytes(const std::string &cuda, const ir::Kernel &typed, const std::map<std::string, double> &dyn);

} // namespace tilec::difffuzz
