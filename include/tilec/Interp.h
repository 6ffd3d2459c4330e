/// \file
/// The compile-time interpreter: what the `T.*` primitives (src/eval/TileLang*.cpp) see of it.
///
/// The interpreter (src/eval/Interp*.cpp) runs the module like Python. When `@T.prim_func` decorates a
/// def, the def's body is traced: statements run, but run-time values (block indices, loop variables,
/// loads) are ir::Expr, and the tile primitives emit IR statements into the innermost open block.
#pragma once

#include "tilec/Value.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilec::eval {

/// Thrown after a user error was reported, to abandon the current statement. The interpreter catches it
/// per statement, binds the statement's targets to Poison and goes on, so one run reports several errors.
struct EvalAbort {};

/// Thrown once evaluation must stop for good, after its error was reported (the step budget spent, a runaway
/// loop of allocations): not per statement.
struct BudgetExhausted {};

/// What tracing an eager kernel adds (TileLang 0.1.10's `@tilelang.jit` function whose body is the kernel,
/// compiled with `f.compile(...)`; InterpEager.cpp).
struct EagerTrace {
    std::vector<std::string> params;       ///< the def's parameters, in order
    std::set<std::string> tensorParams;    ///< those an annotation declares (not given to .compile(...))
    std::map<std::string, Arg> consts;     ///< the .compile(...) keywords that are not parameters: T.const values
    std::set<std::string> constsUsed;      ///< those a T.const named
    /// T.const names .compile(...) gave no value: run-time sizes, which must appear in a tensor's shape.
    std::vector<std::pair<ir::Var, SourceRange>> runtimeConsts;
};

/// State of the prim_func being traced.
struct TraceState {
    std::shared_ptr<ir::Kernel> kernel;           ///< under construction: the current (or next) launch
    std::vector<std::shared_ptr<ir::Kernel>> launches; ///< the prim_func's earlier T.Kernel launches, in order
    std::vector<std::vector<ir::Stmt>> blocks;    ///< open statement lists; back() receives emit()
    bool inLaunch = false;                        ///< inside `with T.Kernel(...)`
    std::vector<int> threadDims;                  ///< `threads=(x, y, ...)` (T.get_thread_binding(d))
    /// The launch's block coordinates (bx, by, bz) as the program sees them: the kernel's blockIdx variables,
    /// or, where a grid dimension past CUDA's limit was folded into x (tl::foldGrid), expressions of x.
    ir::Expr blockCoords[3];
    std::vector<ir::ForKind> loops;               ///< kinds of the enclosing loops, outermost first
    std::vector<ir::Buffer> outputs;              ///< `C = T.empty(...)` tensors (parameters after the others)
    /// The element placement of T.StridedTensor parameters: every launch of the prim_func has them.
    std::vector<ir::TensorLayout> paramLayouts;
    std::shared_ptr<EagerTrace> eager;            ///< set while an eager kernel is traced
    /// The open `with T.attr(T.comm_reducer(...), "reduce_scope", ...)` blocks, innermost last.
    std::vector<std::shared_ptr<const CommReducerObj>> reduceScopes;
    /// T.reshape / T.view buffers (never allocated) -> the buffer whose memory they index (src/eval/TileLangViews.cpp).
    std::map<const ir::BufferNode *, ir::Buffer> views;
    /// Buffers of sub-byte elements (views of the bytes that hold them, in `views`) -> the element type
    /// (src/eval/TileLangSubByte.cpp).
    std::map<const ir::BufferNode *, SubByte> subByte;
};

class Interp {
  public:
    virtual ~Interp() = default;
    virtual DiagnosticEngine &diag() = 0;

    /// Reports a user error at `r` and abandons the current statement.
    [[noreturn]] void fail(const SourceRange &r, const std::string &msg);
    void warn(const SourceRange &r, const std::string &msg) { diag().warning(r, msg); }
    void note(const SourceRange &r, const std::string &msg) { diag().note(r, msg); }

    /// The prim_func being traced, or nullptr outside a prim_func body.
    virtual TraceState *trace() = 0;
    /// Appends a statement to the innermost open block. Fails (user error at s->loc) outside T.Kernel.
    virtual void emit(ir::Stmt s) = 0;
    /// Counts one evaluation step against the budget; fails when it is exhausted.
    virtual void step(const SourceRange &r) = 0;
    /// The target's compute capability (80, 86, 89, 90) for target-dependent checks.
    virtual int smVersion() const = 0;
    /// While the right-hand side of `name = ...` (a single plain name) is evaluated: that name, else "".
    /// alloc_* use it to name buffers after the variable they are assigned to.
    virtual std::string assignTargetName() const = 0;
    /// Calls a compile-time callable (a def, a lambda, a primitive) as Python would: T.comm_reducer's
    /// combiner. The interpreter overrides it; an interpreter that cannot run Python says so.
    virtual Value callValue(const Value &callee, CallArgs &args) {
        fail(args.call, "internal error (Interp::callValue): this interpreter cannot call functions");
    }

    // ---- conversions: each fails with a located message naming `what` ("grid extent", "dtype", ...) ----
    /// Int/Bool/Float/Expr/point Access to an IR expression (Python ints become int32 IntImm, floats
    /// float32 FloatImm, bools bool IntImm).
    ir::Expr toExpr(const Arg &a, const char *what);
    /// A compile-time integer (Int, Bool, or an IR expression that folds to a constant).
    int64_t toInt(const Arg &a, const char *what);
    double toFloat(const Arg &a, const char *what);
    bool toBool(const Arg &a, const char *what);
    std::string toStr(const Arg &a, const char *what);
    /// A DType value or a string naming one ("float16", "float"); unknown names are errors.
    DType toDType(const Arg &a, const char *what);
    /// A tuple/list of values (a single non-sequence value becomes a one-element list).
    std::vector<Arg> toSequence(const Arg &a, const char *what);
};

/// Binds a call's arguments to a primitive's parameters and reports arity errors and unknown keywords.
/// `params` lists parameter names; a name ending in '?' is optional. Example:
///   auto a = bindArgs(in, args, "T.copy", {"src", "dst", "coalesced_width?", "disable_tma?"});
///   a[0]->value ...; if (a[2]) ...
std::vector<std::optional<Arg>> bindArgs(Interp &in, const CallArgs &args, const std::string &fname,
                                         const std::vector<std::string> &params);

/// `base`, or `base_1`, `base_2`, ... : a buffer name no allocation or parameter of `k` has yet (a Python
/// loop may run the same `x = T.alloc_...` several times; the generated code needs distinct names).
std::string uniqueBufferName(const ir::Kernel &k, const std::string &base);

/// The `tilelang.language` module (what `import tilelang.language as T` binds). src/eval/TileLang*.cpp.
Value makeTileLanguageModule();
/// TVM's scalar-expression module as `tvm.tir` / `tvm.tirx` (src/eval/TileLangBits.cpp): const, reinterpret, Select, ...
Value makeTvmTirModule(const std::string &name);

/// Calling a dtype value (`T.float32(x)`, `T.int32(7)`): a cast. src/eval/TileLang*.cpp.
Value callDType(Interp &in, DType t, CallArgs &args);

} // namespace tilec::eval
