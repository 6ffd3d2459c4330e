/// \file
/// Private to src/eval/TileLang*.cpp: the pieces the `T.*` primitives share (registration, argument
/// conversion with precise messages, region resolution, expression text for diagnostics).
#pragma once

#include "tilec/IROperator.h"
#include "tilec/Interp.h"

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tilec::eval {
bool isNumber(const Value &v); ///< Int, Bool or Float (Value.cpp)
/// `T.ptr` (or what `T.ptr(...)` returns): a pointer parameter's annotation. TileLangPointers.cpp.
bool isPointerAnnotation(const Value &v);
/// T.StridedTensor's placement of tensor `b`: element idx at sum(idx[d] * strides[d]); none where the strides
/// are the row-major ones. InterpTrace.cpp.
std::optional<ir::TensorLayout> stridedPlacement(const ir::Buffer &b, const std::vector<ir::Expr> &strides, const SourceRange &at);
/// Why TileLang's primitive `T.<name>`, which tilec's table lacks, cannot run on the GPUs tilec generates code for
/// (sm_80, sm_90a): a phrase for the "unknown primitive" error, empty for every other name. TileLangModule.cpp.
std::string otherGpuPrimitive(const std::string &name);
} // namespace tilec::eval

namespace tilec::eval::tl {

using Attrs = std::map<std::string, Value>;
using PrimFn = std::function<Value(Interp &, CallArgs &)>;

/// Registers `T.<name>`. The wrapper returns Poison without calling `fn` when an argument already is
/// Poison, so one mistake is reported once.
void def(Attrs &attrs, const std::string &name, PrimFn fn);

// Each TileLang*.cpp adds its primitives to the module's attribute table.
void addTypePrimitives(Attrs &attrs);   // TileLangModule.cpp: dtypes, Tensor, Buffer, dynamic, prim_func
void addLoopPrimitives(Attrs &attrs);   // TileLangLoops.cpp: Kernel, Parallel, Pipelined, serial, ...
void addAllocPrimitives(Attrs &attrs);  // TileLangAlloc.cpp: alloc_*, fill, clear
void addCopyPrimitives(Attrs &attrs);   // TileLangCopy.cpp: copy, atomic_add
void addGemmPrimitives(Attrs &attrs);   // TileLangGemm.cpp: gemm, GemmWarpPolicy
void addReducePrimitives(Attrs &attrs); // TileLangGemm.cpp: reduce_*
void addMathPrimitives(Attrs &attrs);   // TileLangMath.cpp: exp, max, ceildiv, cast, ...
void addWarpRolePrimitives(Attrs &attrs); // TileLangWarpRoles.cpp: ws, barrier_wait, barrier_arrive, ...
void addAllreducePrimitives(Attrs &attrs); // TileLangAllreduce.cpp: attr, comm_reducer, tvm_thread_allreduce, ...
void addThreadPrimitives(Attrs &attrs);  // TileLangThreads.cpp: get_block_binding, sync_threads, reinterpret, ...
void addLayoutPrimitives(Attrs &attrs);  // TileLangLayout.cpp: Layout, annotate_layout
void addBitPrimitives(Attrs &attrs);     // TileLangBits.cpp: shift_left, bitwise_*, Select, truncmod, popcount, ...
void addViewPrimitives(Attrs &attrs);    // TileLangViews.cpp: reshape, view
void addScanPrimitives(Attrs &attrs);     // TileLangScan.cpp: cumsum
void addIntrinsicPrimitives(Attrs &attrs); // TileLangIntrinsics.cpp: dp4a, set_max_nreg
void addPointerPrimitives(Attrs &attrs);   // TileLangPointers.cpp: ptr, make_tensor

// ---- sub-byte elements (int4, uint4, float4_e2m1fn), two to a byte: TileLangSubByte.cpp ----
/// The sub-byte type a dtype argument names (T.int4, "uint4", T.float4_e2m1fn), or SubByte::None.
SubByte subByteArg(const Arg &a);
/// TileLang's name of a sub-byte type ("int4", "uint4", "float4_e2m1fn").
const char *subByteName(SubByte k);
/// The byte type that holds a sub-byte type's elements: int8 (int4, float4_e2m1fn, as torch passes them) or uint8.
DType subByteStorage(SubByte k);
/// The shape of the bytes that hold a `scope` buffer of `shape` sub-byte elements: in global memory two to a byte
/// (the last dimension halved: it must be provably even, else a located error at `at`); on chip one.
std::vector<ir::Expr> subByteStorageShape(Interp &in, ir::Scope scope, const std::vector<ir::Expr> &shape,
                                          const std::string &name, SubByte k, const SourceRange &at);
/// The buffer a program indexes for `storage`, the bytes of `shape` elements of type `k`: a view of them
/// (TraceState::views and ::subByte), which no IR statement may name (noteViews).
ir::Buffer subByteView(TraceState &t, const ir::Buffer &storage, SubByte k, std::vector<ir::Expr> shape);
/// The value of element `idx` of sub-byte view `view`: int8 (int4), uint8 (uint4) or float32 (float4_e2m1fn).
ir::Expr subByteLoad(TraceState &t, const ir::Buffer &view, const std::vector<ir::Expr> &idx, const SourceRange &at);
/// `view[idx] = value`: on chip, the element's byte; into a packed (global) tensor a located error, since the
/// other element of its byte may be another thread's (T.copy packs pairs).
ir::Stmt subByteStore(Interp &in, TraceState &t, const ir::Buffer &view, const std::vector<ir::Expr> &idx,
                      const ir::Expr &value, const SourceRange &at);
/// T.copy between regions of which one (or both) hold sub-byte elements: the bytes where both sides are packed
/// alike, else an element-wise T.Parallel nest (pairs of elements into packed memory). Emits it.
void subByteCopy(Interp &in, TraceState &t, const ir::Region &src, const ir::Region &dst, const SourceRange &at);

/// `v[i, ...]` of a T.reshape / T.view `v` (acc.buffer) of `base`: the same element as an access of `base`, with
/// AccessObj::view set (through a view to another dtype, the element's value); a slice is a located error.
/// TileLangViews.cpp.
Value viewAccess(Interp &in, const ir::Buffer &base, const AccessObj &acc);
/// A tile primitive's operand in `s` that is a view: of a fragment, recorded in Kernel::fragmentViews; of
/// anything else, a located error. TileLangViews.cpp.
void noteViews(Interp &in, TraceState &t, const ir::Stmt &s);
/// The buffer `view` reads as another dtype (a T.view that changes the dtype), or null. TileLangViews.cpp.
ir::Buffer reinterpretedBase(const TraceState &t, const ir::Buffer &view);
/// `view[idx] = value` through a T.view of `base` to a wider dtype: the value's bits into the elements of `base`
/// that hold them, lowest first; into a narrower one, a located error. `value` is read once per element of
/// `base`, so the caller passes one that does not read `base`. TileLangViews.cpp.
ir::Stmt reinterpretedStore(Interp &in, const ir::Buffer &base, const ir::Buffer &view, const std::vector<ir::Expr> &idx,
                            const ir::Expr &value, const SourceRange &at);

/// T.reinterpret(value, dtype): the value's bits as another dtype of the same width. TileLangThreads.cpp.
Value reinterpretBits(Interp &in, CallArgs &args);

/// The thread's coordinate in dimension d of its block (`threads=(x, y, z)`, x fastest): what
/// T.get_thread_binding(d) is. TileLangLoops.cpp.
ir::Expr threadCoordinate(TraceState &t, int64_t d, const SourceRange &at);
/// A launch whose grid has a constant y or z extent past the 65535 blocks CUDA allows there: those dimensions
/// are folded into x (one block per coordinate, x fastest, as if launched as given) and the program's block
/// coordinates become expressions of the launched block's x. Returns the coordinates (the blockIdx variables
/// where nothing is folded); a grid of more blocks than x can hold is a located error at `at`.
std::array<ir::Expr, 3> foldGrid(Interp &in, ir::Kernel &k, const SourceRange &at);

/// The address of the one mbarrier an argument names (`bar` of a single T.alloc_barrier, `mbars[i]`), as
/// library calls take it; a located error for anything else. TileLangWarpRoles.cpp.
ir::Expr barrierAddress(Interp &in, const Arg &a, const std::string &fname);

// ---- argument helpers (TileLangArgs.cpp) ----

/// Checks the keywords of a primitive that takes `*args` (bindArgs cannot express those): reports the
/// first keyword not in `allowed` like bindArgs does; returns the given ones by name.
std::map<std::string, Arg> keywords(Interp &in, const CallArgs &args, const std::string &fname,
                                    const std::vector<std::string> &allowed);

/// The trace of the enclosing prim_func inside its `with T.Kernel(...)`; a located error otherwise.
TraceState &requireLaunch(Interp &in, const CallArgs &args, const std::string &fname);

/// A dtype argument: DType values and strings naming one; an unknown name is "unknown dtype 'x'" at the
/// argument with a note listing the valid names.
DType dtypeArg(Interp &in, const Arg &a);
/// TileLang's packed sub-byte dtypes (float4_e2m1fn, int4, uint4): T.<name> is the name as a string, which
/// compares and hashes like one (`dtype == T.float4_e2m1fn`); buffers of them are views of their bytes
/// (subByteView), and elsewhere (a scalar's dtype, a cast) they are a located error.
bool isPackedDTypeName(const std::string &s);

/// The compile-time integer value of Int/Bool values and of IR expressions that fold to a constant.
std::optional<int64_t> constOf(const Value &v);

/// A compile-time integer argument, or an error "<what> must be a compile-time constant; 'n' is only
/// known at run time" (or "... must be an integer, got str") at the argument.
int64_t constIntArg(Interp &in, const Arg &a, const std::string &what);

/// An integer constant typed int32 when it fits, int64 otherwise (like the interpreter's Python ints).
ir::Expr constIndex(int64_t v, SourceRange r = {});

/// A flag argument with Python truthiness for the plain values (bool, int, None); other values go
/// through Interp::toBool.
bool boolArg(Interp &in, const Arg &a, const char *what);

/// A run-time scalar operand: an IR expression, a point access, or a kernel variable (`x = A[i]` inside a
/// kernel binds x to one: it stands for its element, as in `T.ceildiv(x, 64)`).
bool isScalarOperand(const Value &v);

/// An integer expression argument (Python ints, integer IR expressions); floats and others are errors.
ir::Expr intExprArg(Interp &in, const Arg &a, const std::string &what);

/// Python-ish source text of an expression for messages: `bx * 64 + 1`, `T.exp2(x)`, `A[i, j]`.
std::string exprText(const ir::Expr &e);
/// `(128, 64)`: a tuple of expressions.
std::string tupleText(const std::vector<ir::Expr> &es);
/// `bool, int8, ..., float8_e5m2`: the canonical dtype names.
std::string validDTypeNames();

// ---- regions (TileLangCopy.cpp) ----

/// What a tile primitive's buffer operand named: a whole buffer, a slice subscript (explicit region) or a
/// subscript of plain indices (a region origin whose extents come from elsewhere).
struct Operand {
    ir::Buffer buffer;
    std::vector<ir::Expr> mins, extents; ///< extents are null for an origin
    bool origin = false;                 ///< only plain indices
    bool whole = false;                  ///< the buffer itself
    SourceRange range;
    std::vector<SourceRange> indexRanges; ///< per index (empty for a whole buffer)
};

/// Classifies a Buffer or Access argument; other values are an error naming `what` at the argument.
/// Checks that the number of indices equals the buffer's number of dimensions.
Operand operandArg(Interp &in, const Arg &a, const std::string &what);

/// The region an operand names; an origin gets `extents` (the other operand's) right-aligned, or the
/// unique in-bounds placement of their non-unit extents with a warning (see TileLangCopy.cpp).
/// `writes`: the operand is written (for the wording of messages).
ir::Region resolveRegion(Interp &in, const Operand &op, const std::vector<ir::Expr> &extents, bool writes);

/// The explicit region of a non-origin operand.
ir::Region explicitRegion(const Operand &op);

/// Errors when a region provably lies outside a buffer with constant shape (non-global buffers only).
void checkInBounds(Interp &in, const ir::Region &r, const SourceRange &at);

/// The region as the user would write it with slices: `Q[bz, bx * 64:bx * 64 + 64, by, 0:64]`.
std::string regionText(const ir::Region &r);
/// The extents of a region: `(128, 64)`.
std::vector<ir::Expr> extentsOf(const ir::Region &r);

/// Whether an extent is the constant 1.
bool isUnit(const ir::Expr &e);

} // namespace tilec::eval::tl
