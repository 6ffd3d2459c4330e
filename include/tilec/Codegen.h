/// \file
/// Code generation: the lowered program as one CUDA C++ file (device kernels and host launch functions)
/// and the C header of CONTRACT.md's "generated C interface".
///
/// The input is what lower() returns: per-thread code where every buffer access has one flat index,
/// fragments are register arrays (Local buffers), every vectorized loop is one of the transfer patterns of
/// passes/VectorizeAccesses.h, barriers are `tilec.sync` calls and warp shuffles `tilec.shfl_xor` calls.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/Target.h"

#include <string>
#include <vector>

namespace tilec {

struct CodegenOptions {
    std::string sourceName; ///< the .tile file as named on the command line (#line, symbol hashes)
    std::string cudaName;   ///< the .cu file's name as given (the #line directive after the kernels)
    std::string headerName; ///< the header's name as given (its include guard, the .cu's comment)
    std::string prefix;     ///< --prefix: prepended to every C symbol
    std::vector<Target> targets;
};

struct GeneratedCode {
    std::string cuda;   ///< self-contained: the header's declarations and the device runtime are embedded
    std::string header; ///< C11 and C++; includes only CUDA and standard C headers
};

/// Generates both files. Reports user errors that only show now (shared memory beyond a target's limit,
/// an atomic_add dtype the hardware lacks) through `diag`; the result is then incomplete.
GeneratedCode generateCode(const ir::Program &lowered, const CodegenOptions &opts, DiagnosticEngine &diag);

} // namespace tilec
