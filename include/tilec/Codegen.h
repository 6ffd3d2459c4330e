/// \file
/// Code generation: the lowered program as one CUDA C++ file (device kernels and host launch functions)
/// and the C header of docs/INTERFACE.md's "generated C interface".
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
    bool fastMath = false;  ///< --use_fast_math: every kernel as if it had "tl.enable_fast_math"
    /// A float32 exp2 rounded to float16 or float8 as one MUFU.EX2 without its subnormal range fix, which
    /// cannot change the rounded value (--no-narrow-exp2-flush: exp2f as written)
    bool flushNarrowExp2 = true;
    /// The A descriptor of a consumer role's wgmma products on a fixed tile (attention's Q) made once, before the
    /// role's loops, not at each product (codegen::hoistedWgmmaA; --no-hoist-wgmma-descriptors: at each product)
    bool hoistWgmmaA = true;
    /// --opaque-vector-stores: register -> global vector stores of 8 or 16 bytes as one PTX st.global each
    /// (memory.cuh's store_vector), not only those through T.make_tensor addresses
    bool opaqueVectorStores = false;
    bool torch = false;         ///< --emit=torch: GeneratedCode::torch too
    bool xlaFfi = false;        ///< --emit=xla-ffi: GeneratedCode::xlaFfi too
    std::string torchNamespace; ///< the operators' namespace (default "tilec")
    /// --tuned: per dispatcher, its name and the kernels it chooses among (without the prefix): the operator
    /// NAME calls the dispatcher; its kernels get none of their own.
    std::vector<std::pair<std::string, std::vector<std::string>>> torchDispatchers;
};

/// A shared-memory buffer as code generation placed it in the kernel's dynamic shared memory.
struct SharedBufferLayout {
    std::string name;
    SourceRange loc;
    int64_t offset = 0, bytes = 0;
};

/// What the outputs after code generation (binary mode, --resource-usage) need to know of a kernel.
struct KernelLayout {
    std::string name;    ///< the exported kernel
    std::string cName;   ///< its launch function (with the prefix)
    std::string symbol;  ///< the __global__ function in `device`
    ir::LaunchConfig launch; ///< as lowered: launched threads (launchedThreads()), persistence, clusters
    int64_t sharedBytes = 0; ///< dynamic shared memory per block
    std::vector<std::string> targets; ///< the targets this variant of the kernel was lowered for
    int tensorMaps = 0;      ///< TMA tensor maps the launcher encodes
    std::vector<SharedBufferLayout> shared;
    int part = 0; ///< which launch of its export (ir::KernelSignature::part): the launches share `name`
};

struct GeneratedCode {
    std::string cuda;   ///< self-contained: the header's declarations and the device runtime are embedded
    std::string header; ///< C11 and C++; includes only CUDA and standard C headers
    std::string device; ///< the .cu's device part alone (device runtime and kernels), for NVRTC
    std::vector<KernelLayout> kernels; ///< in the order of the program's kernels
    /// --emit=torch: C++ registering each exported kernel as a PyTorch operator (src/codegen/CodegenTorch.cpp);
    /// it includes the header by its file name.
    std::string torch;
    std::string xlaFfi; ///< --emit=xla-ffi: an XLA FFI handler per exported kernel; includes the header too
};

/// Generates both files. Reports user errors that only show now (shared memory beyond a target's limit,
/// an atomic_add dtype the hardware lacks) through `diag`; the result is then incomplete.
GeneratedCode generateCode(const ir::Program &lowered, const CodegenOptions &opts, DiagnosticEngine &diag);

/// A compiled form of `GeneratedCode::device` to embed in binary mode.
struct DeviceImage {
    Target target;    ///< what it was compiled for
    bool ptx = false; ///< PTX (JIT-compiled by the driver), else a cubin
    std::string bytes;
};

/// Binary mode: C source (C11, and C++) that embeds `images` and launches the kernels through the CUDA driver
/// API, behind the same header as the .cu. `loweredNames` are the kernels' symbols in the images, in the
/// order of GeneratedCode::kernels.
std::string generateBinarySource(const ir::Program &lowered, const CodegenOptions &opts,
                                 const std::vector<DeviceImage> &images, const std::vector<std::string> &loweredNames,
                                 DiagnosticEngine &diag);

/// The JSON that goes beside a .ptx or .cubin output (`image`): per kernel the entry's mangled name
/// (`loweredNames`, in the order of GeneratedCode::kernels), its parameters in order with their types, the grid
/// formula, the block, the dynamic shared memory and the tensor maps to encode: what a program that loads the
/// image with its own runtime needs to launch it (docs/INTERFACE.md).
std::string generateSidecar(const ir::Program &lowered, const CodegenOptions &opts, const DeviceImage &image,
                            const std::vector<std::string> &loweredNames, DiagnosticEngine &diag);

} // namespace tilec
