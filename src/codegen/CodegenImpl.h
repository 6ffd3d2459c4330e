/// \file
/// Private to src/codegen/: names, types, the per-kernel facts every part of the output needs, and the
/// expression printer shared by device and host code.
#pragma once

#include "tilec/Codegen.h"
#include "tilec/passes/Arith.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilec::codegen {

/// A vectorized loop in one of the two transfer shapes of VectorizeAccesses.h.
struct Transfer {
    bool load = true;        ///< memory -> registers, else registers -> memory
    const ir::BufferNode *memory = nullptr, *regs = nullptr;
    ir::Expr base;           ///< the memory offset of lane 0
    ir::Expr cond;           ///< load: zero-fill unless; store: only if (may be null)
    int64_t lanes = 0;
    int64_t regBase = 0;     ///< the register of lane 0 (a multiple of the lanes: a gather's run, VectorizeAccesses)
    DType dtype;
    int chunkBytes() const { return (int)std::min<int64_t>(16, lanes * dtype.bytes()); }
};

/// The transfer `f` is (a vectorized loop of a register array from or to global or shared memory), or nothing.
std::optional<Transfer> matchTransfer(const ir::For &f);

/// C identifiers for IR variables and buffers: the source name when it is free and not reserved in C,
/// C++ or CUDA, else the name with a numeric suffix. Keys are node identities, so two buffers named alike
/// get two names, and the names depend only on the order of first use (deterministic output).
class NameTable {
  public:
    /// Reserves a name (the launcher's `stream`, runtime identifiers) so no IR name takes it.
    void reserve(const std::string &name) { used_.insert(name); }
    const std::string &of(const void *key, const std::string &hint);
    /// Makes `key` print as `text`, an expression rather than a name (a T.make_tensor tensor's typed address).
    void alias(const void *key, std::string text) { names_[key] = std::move(text); }

  private:
    std::map<const void *, std::string> names_;
    std::set<std::string> used_;
};

/// The CUDA type of an element: float, __half, __nv_bfloat16, __nv_fp8_e4m3, int32_t, bool, ...
std::string deviceType(DType t);
/// The type in the C header (void for float16/bfloat16/float8, which C lacks).
std::string headerType(DType t);
/// float16, bfloat16, float8_e4m3, float8_e5m2: computed in float.
bool isNarrowFloat(DType t);

/// The name of a runtime function: `tilec_` symbols carry the prefix too, so every C symbol a file defines
/// starts with it.
inline std::string rt(const CodegenOptions &o, const char *name) { return o.prefix + "tilec_" + name; }

/// `"examples/a.tile"` as a C string literal.
std::string quoted(const std::string &s);

/// What the kernel, its launcher and its declaration need to agree on.
struct KernelInfo {
    const ir::Kernel *kernel = nullptr;
    std::string cName;  ///< the launch function: prefix + name (a file-local one per part of several launches)
    std::string exportName; ///< the exported C function: prefix + name
    std::string symbol; ///< the __global__ function
    std::vector<bool> written;   ///< per parameter: a tensor the kernel stores to
    std::vector<int> alignment;  ///< per parameter: bytes a tensor's base pointer must be aligned to (0: none)
    /// Per parameter, over all variants of the kernel (launchAlignments): the least alignment of a tensor's
    /// base pointer that a launch accepts on every device the file has code for, and the alignment the
    /// preferred variant of some device wants (larger where a better-aligned pointer runs faster code).
    std::vector<int> acceptedAlignment, fastestAlignment;
    std::vector<bool> storedMaps; ///< per tensor map: a TMA store writes through it (else it is only read)
    std::map<const ir::BufferNode *, int64_t> sharedOffset;
    int64_t sharedBytes = 0;
    bool usesFp8 = false;
    /// Per-target lowering: the targets this variant of the exported kernel was lowered for, its position
    /// among the kernel's variants (the preferred first) and how many there are.
    std::vector<Target> targets;
    int variant = 0, variants = 1;
    int index = 0; ///< position among all kernels of the file (binary mode's function table)
};

/// Sets acceptedAlignment and fastestAlignment of the variants infos[first, end) of one kernel
/// (CodegenAlignment.cpp).
void launchAlignments(std::vector<KernelInfo> &infos, size_t first, size_t end);
/// Collects the facts above.
KernelInfo analyzeKernel(const ir::Kernel &k, const CodegenOptions &o, DiagnosticEngine &diag);
/// Every kernel of the lowered program, with its variant numbering and targets (a kernel's variants are
/// consecutive; symbols get a `_vN` suffix when there are several).
std::vector<KernelInfo> analyzeKernels(const ir::Program &lowered, const CodegenOptions &opts, DiagnosticEngine &diag);

/// Prints expressions as CUDA C++. Device mode: narrow floats compute through float, integer floor
/// division of provably non-negative operands is plain `/`. Host mode (the launcher's grid sizes):
/// integers are int64_t and variables are the launcher's T.dynamic arguments.
class ExprPrinter {
  public:
    ExprPrinter(NameTable &names, bool host) : names_(names), host_(host) {}
    /// Variable ranges in scope, for the non-negativity of division operands.
    passes::RangeMap ranges;
    /// --use_fast_math / "tl.enable_fast_math": float32 math functions and divisions print as CUDA's fast
    /// intrinsics (what nvcc -use_fast_math would make of the precise ones).
    bool fastMath = false;
    /// A float32 exp2 whose value is rounded to float16 or float8 prints as one MUFU.EX2 (fast_exp2f; see
    /// narrowed()) also without fast math (--no-narrow-exp2-flush: off).
    bool flushNarrowExp2 = true;
    int flushedExp2 = 0; ///< how many it printed so (for -v)
    /// wgmma products whose A descriptor a consumer role made before its loops (HoistedWgmmaA): the name passed
    /// after their arguments.
    std::map<const ir::Call *, std::string> hoistedA;
    std::string print(const ir::Expr &e);
    /// `v` as the operand of its conversion to `to` (narrowed()).
    std::string printNarrowed(DType to, const ir::Expr &v) { return narrowed(to, v).s; }
    /// The expression as an operand of an operator of C precedence `need` (16 primary ... 3 conditional): in
    /// parentheses where it binds less tightly (a conditional extent after `i < ` must not become `(i < c) ? ...`).
    std::string print(const ir::Expr &e, int need) { return wrap(expr(e), need); }
    /// The index of an element of buffer `b`. A register array indexed at run time stays in registers only
    /// where nvcc can bound the index: a remainder by a power of two of a non-negative value prints there as
    /// a mask (`& 3`), whose range nvcc knows, where C's signed `%` would leave it a negative range (and the
    /// array in local memory: TileKernels' batched transpose, `tmp[(j + tx / 4) % 4 * 4 + k]`).
    std::string index(const ir::BufferNode &b, const ir::Expr &i);

  private:
    NameTable &names_;
    bool host_;
    int depth_ = 0;
    bool registerIndex_ = false; ///< printing a run-time index of a register array (index())

    struct Text {
        std::string s;
        int prec; ///< C precedence: 16 primary ... 3 conditional
    };
    Text expr(const ir::Expr &e);
    Text binary(const ir::Binary &b);
    Text call(const ir::Call &c);
    Text libraryCall(const ir::Call &c);
    Text castTo(DType to, const ir::Expr &v);
    Text narrowed(DType to, const ir::Expr &v);
    std::string wrap(const Text &t, int need) { return t.prec >= need ? t.s : "(" + t.s + ")"; }
    /// The operand as a float (narrow floats converted).
    std::string asFloat(const ir::Expr &e, int need);
    bool nonNegative(const ir::Expr &e);
};

/// The wgmma SS products of a consumer role whose A operand the role makes once, at its start: products in loops
/// that read the same shared tile at a fixed address (`&tile[constant]`, attention's Q) with the same shape, their
/// descriptors together at most kHoistedWgmmaDescriptors. Returns the role's declarations
/// (`const tilec::wgmma_a_operand NAME = tilec::wgmma_a_descriptor<M, N, K, wgM, wgN, transA, transB, swzA,
/// swzB>(a);`) and enters each product in `ep.hoistedA`, which passes NAME after its accumulators. ptxas then keeps
/// each instruction's A descriptor in uniform registers across the loop, as FlashAttention-3 keeps Q's, instead
/// of rebuilding it every iteration (at a product the address goes through an empty asm, which a kernel of many
/// products on fixed tiles needs: FlashMLA spilled such descriptors held across its loops).
constexpr int64_t kHoistedWgmmaDescriptors = 8;
std::vector<std::string> hoistWgmmaA(const ir::Stmt &consumer, NameTable &names, ExprPrinter &ep);


/// The name of tensor map `index` as a kernel parameter (and in the launcher).
std::string tensorMapParam(int index);

/// One parameter of a kernel's launch. launchParams() orders them once for every printer: Kernel::params
/// (tensors and scalars in declaration order; workspaces and views, which follow the arguments, among them),
/// then the T.dynamic sizes, then the tensor maps. The __global__ function takes all of them in that order
/// (CodegenKernel), the launchers pass them in that order (printLaunchArguments), the C function takes those
/// its caller gives (signature(): no tensor maps; exported, no workspaces or views), the .ptx/.cubin sidecars
/// list them, and --emit=torch / xla-ffi read them through signature().
struct LaunchParam {
    enum Kind { Tensor, Scalar, DynamicSize, TensorMap } kind = Tensor;
    size_t index = 0;    ///< into Kernel::params (Tensor, Scalar), Kernel::dynamicSymbols or Kernel::tensorMaps
    size_t position = 0; ///< among the __global__ function's parameters
    std::string type;    ///< as the __global__ signature spells it, without the name
    const void *key = nullptr; ///< the BufferNode or VarNode (its name in a NameTable); null for a tensor map
    std::string name;    ///< the IR's name (a tensor map: its parameter name, tensorMapParam)
    /// Whether the exported C function takes it (a tensor or scalar that is Param::argument(), a dynamic size).
    bool argument = true;
};
std::vector<LaunchParam> launchParams(const KernelInfo &info);

/// The launch function's C parameters (shared by the header's declaration and the .cu's definition): the
/// launch parameters without the tensor maps (exported: without workspaces and views either), then `stream`.
struct Signature {
    std::vector<LaunchParam> params; ///< in order (tensors, scalars, dynamic sizes)
    std::vector<std::string> names;  ///< their C names, one per entry of `params`
    std::string text;                ///< `tilec_status NAME(...)`
    size_t dynamicBase = 0;          ///< the position of Kernel::dynamicSymbols[0] among them
};
/// `exported`: the exported function's parameters (a part's workspaces left out) and name, else the launcher's.
Signature signature(const KernelInfo &info, NameTable &names, bool exported = false);

/// A prim_func with T.alloc_global workspaces: the C functions that let a caller supply them (CodegenLaunches.cpp).
struct WorkspaceSignatures {
    std::string bytes;         ///< `size_t NAME_workspace_bytes(<NAME's scalars>, <T.dynamic sizes>)`
    std::string sizeArgs;      ///< its parameters' names, comma-separated: its arguments in NAME's scope
    std::string withWorkspace; ///< `tilec_status NAME_with_workspace(<NAME's parameters>, void *workspace,
                               ///< size_t workspace_bytes, cudaStream_t stream)`
};
/// `sig`: NAME's exported signature, from a NameTable where `workspace` and `workspace_bytes` are reserved.
WorkspaceSignatures workspaceSignatures(const KernelInfo &info, const Signature &sig);
/// Whether the exported function of `k` allocates T.alloc_global workspaces.
bool hasWorkspaces(const ir::Kernel &k);

/// A launcher's arguments for variant `v` (whose C parameters are `sig`, a launcher's, not exported): one
/// variable per launch parameter (`aN` for Kernel::params[N], `dN` for a dynamic size, the tensor maps' `mN`
/// already declared), each line indented by `in`, then the `args` array cudaLaunchKernel / cuLaunchKernelEx
/// take. `cxx`: the .cu (device types, static_cast), else C (void pointers, header types).
std::string printLaunchArguments(const KernelInfo &v, const Signature &sig, bool cxx, const std::string &in);

/// The header comment's lines on a prim_func of several launches (`part` 0 of them): the launches and the
/// workspaces the function allocates.
std::string describeLaunches(const KernelInfo &part);

/// The device function of one kernel.
std::string printKernel(const KernelInfo &info, const CodegenOptions &o, DiagnosticEngine &diag);

/// The header text (also embedded at the top of the .cu).
std::string printHeader(const std::vector<KernelInfo> &kernels, const CodegenOptions &o);

/// The host side of the .cu: the runtime functions and every kernel's launch function and queries.
std::string printHost(const std::vector<KernelInfo> &kernels, const CodegenOptions &o);

/// --emit=torch: the PyTorch operators of the exported kernels (CodegenTorch.cpp); reports through `diag` what
/// an operator cannot express.
std::string printTorch(const std::vector<KernelInfo> &kernels, const CodegenOptions &o, DiagnosticEngine &diag);

/// --emit=xla-ffi: an XLA FFI handler per exported kernel (CodegenTorch.cpp).
std::string printXlaFfi(const std::vector<KernelInfo> &kernels, const CodegenOptions &o, DiagnosticEngine &diag);

/// The variants of each exported kernel, in order (KernelInfo::variant 0 starts a group).
std::vector<std::vector<const KernelInfo *>> variantGroups(const std::vector<KernelInfo> &kernels);

/// Where a variant's code runs, described once: sm_XYa code on compute capability X.Y alone; sm_XY code (its
/// cubin, or its PTX through the driver's JIT) on X.Y and every later device. One term per target (`sm == X.Y`
/// or `sm >= X.Y`, sm being compute capability times ten), less the sm_XYa targets that an sm_XY target as old
/// or older covers; the variant runs on a device where any term holds, on none without terms. The launchers
/// and queries print the terms (runsOn) and the header's alignment documentation evaluates them
/// (runsOnDevice, CodegenAlignment.cpp), so the two cannot name different devices.
struct DeviceTerm {
    int sm = 0;
    bool exact = false; ///< `sm == this->sm` (an arch-specific target); else `sm >= this->sm`
};
std::vector<DeviceTerm> deviceTerms(const KernelInfo &v);
/// Whether variant `v` runs on a device of compute capability `sm` (times ten): deviceTerms evaluated.
bool runsOnDevice(const KernelInfo &v, int sm);
/// The same as a C condition on the int variable `sm` ("0" where it runs nowhere): deviceTerms printed.
std::string runsOn(const KernelInfo &v, const std::string &sm);

} // namespace tilec::codegen
