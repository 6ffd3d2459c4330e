/// \file
/// Private to src/codegen/: an exported kernel's C parameters sorted into a framework operator's arguments
/// and results, shared by `--emit=torch` (CodegenTorch.cpp) and `--emit=xla-ffi` (CodegenXlaFfi.cpp), so that
/// both bind the same tensors, sizes and scalars to the same C function.
#pragma once

#include "codegen/CodegenHostParts.h"

#include <string>
#include <utility>
#include <vector>

namespace tilec::codegen {

/// One operator: the kernel's C parameters (signature()) sorted into the operator's arguments and results.
struct TorchOp {
    const KernelInfo *info = nullptr;
    std::string op;              ///< `ns::name` (messages)
    std::string name;            ///< the schema's name (the kernel's name without the prefix)
    std::string cFunction;       ///< the C function it calls (the kernel's, or a --tuned dispatcher's)
    Signature sig;               ///< the exported C function's parameters
    std::vector<size_t> tensors; ///< C parameter positions of the tensor arguments (not outputs), in order
    std::vector<size_t> outputs; ///< of the outputs (out_idx)
    /// Per T.dynamic symbol: the tensor argument and dimension that gives it, or none (then an int argument).
    std::vector<std::pair<size_t, size_t>> dynamicFrom;
    std::vector<bool> dynamicArg;
    /// Whether the C function needs T.alloc_global workspaces: the operator then takes them from the
    /// framework's allocator and calls `cFunction`_with_workspace (CodegenLaunches.cpp; a --tuned dispatcher's
    /// forwards to its configuration's, tune/TuneDispatch.cpp).
    bool workspace = false;
};

/// An exported function an operator calls: its first kernel (a --tuned dispatcher's first configuration), the
/// operator's name, and whether the function has T.alloc_global workspaces (any of a dispatcher's kernels).
struct ExportedOp {
    const KernelInfo *info = nullptr;
    std::string name;
    bool workspace = false;
};

/// Sorts the C parameters; reports what an operator cannot express (an error at the parameter).
TorchOp makeOp(const ExportedOp &e, const CodegenOptions &o, NameTable &names, DiagnosticEngine &diag);

inline const ir::Param &paramAt(const TorchOp &t, size_t i) {
    return t.info->kernel->params[i];
}
/// The kernel parameter of C parameter `i`, null for a T.dynamic size (which follows the arguments, while the
/// kernel's workspaces and views follow them in Kernel::params).
const ir::Param *cParam(const TorchOp &t, size_t i);
/// Whether C parameter `i` is one of the outputs TileLang's out_idx names.
bool isOutput(const ir::Kernel &k, size_t i);
/// The C parameter position of T.dynamic symbol j.
inline size_t dynamicPos(const TorchOp &t, size_t j) {
    return t.sig.names.size() - t.dynamicArg.size() + j;
}
/// Whether dimension `r` of tensor argument `i` is where a T.dynamic size is read (so it needs no check).
bool bindsDynamic(const TorchOp &t, size_t i, size_t r);
/// `float16[m, 128]`: a tensor's dtype and shape, for messages.
std::string shapeText(const ir::BufferNode &b);

/// One operator per exported function: a --tuned dispatcher's takes the parameters of its first kernel, and
/// the kernels it chooses among get none.
std::vector<ExportedOp> exportedOps(const std::vector<KernelInfo> &kernels, const CodegenOptions &o);
/// `const char *const VAR[] = {...};`: the names of the C function's parameters, by the position
/// tilec_last_error_argument() reports (NAME_with_workspace's two more where the operator calls it).
std::string printNames(const TorchOp &t, const std::string &var);
/// The names an operator's code uses besides its parameters (a parameter named like one is renamed).
NameTable opNames();
/// The header's file name the generated file includes.
std::string includedHeader(const CodegenOptions &o);
/// The file-local message of a failed launch, `failure`(status, names, argument, cuda error): the status, the
/// argument it names, the CUDA error behind it; then the floor division the size expressions may use.
std::string printFailurePreamble(const CodegenOptions &o, const std::string &failure);

} // namespace tilec::codegen
