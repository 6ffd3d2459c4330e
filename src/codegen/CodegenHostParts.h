/// \file
/// Private to src/codegen/: the pieces of host code that the .cu's launchers (CUDA runtime, C++) and binary
/// mode's launchers (driver API, C) share, so that both modes check arguments, report errors and answer
/// queries with the same text.
///
/// Every piece is valid C11 and C++. Text that differs by language takes `cxx` (true: the .cu).
#pragma once

#include "codegen/CodegenImpl.h"

#include <string>

namespace tilec::codegen {

/// `extern "C" ` in the .cu (whose host code is C++); nothing in C, where the header's declarations and the
/// file's `extern "C"` block give the linkage.
inline std::string cLinkage(bool cxx) { return cxx ? "extern \"C\" " : ""; }

/// The runtime's state (the calling thread's last CUDA error and argument position) as weak, thread-local
/// C symbols with the prefix, so every file with that prefix, in either mode, shares one copy; and the
/// three runtime functions of the header (status_string, last_cuda_error, last_error_argument).
std::string printRuntimeFunctions(const CodegenOptions &o, bool cxx);

/// `tilec_argument_error` (records the argument, returns the status) and the floor division and modulo the
/// launchers' grid formulas may use, as file-local functions.
std::string printLauncherHelpers(const CodegenOptions &o, bool cxx);

/// A launcher's name table: the names its body uses are reserved so no parameter takes them.
NameTable launcherNames();

/// The start of a launch function: the signature line, the checks of pointers, alignment and dynamic sizes
/// in parameter order, and the grid (`grid_x`, `grid_y`, `grid_z`, checked against CUDA's limits).
std::string printLaunchPrologue(const KernelInfo &info, const Signature &sig, NameTable &names, bool cxx);

/// `NAME_threads(int sm)` and `NAME_shared_bytes(int sm)`.
std::string printQueries(const KernelInfo &info, const CodegenOptions &o, bool cxx);

/// The lowest compute capability of the targets (80 for sm_80), the first the kernels run on.
int lowestSm(const CodegenOptions &o);

} // namespace tilec::codegen
