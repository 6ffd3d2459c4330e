/// \file
/// Values of compile-time evaluation: the Python subset a .tile file's factories run in, plus the values
/// the `T.*` primitives produce (symbolic scalars, buffers, regions, dtypes, frames, prim_funcs).
#pragma once

#include "tilec/AST.h"
#include "tilec/IR.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tilec::eval {

class Interp;
struct Value;
struct Env;

enum class VK {
    Poison,   ///< the result of an expression that already reported an error: propagates silently
    None, Bool, Int, Float, Str,
    Tuple, List, Dict, Range,
    Function, Builtin, Module, Opaque,
    Expr,       ///< a run-time scalar (ir::Expr): block/thread/loop variables and arithmetic on them
    Buffer,     ///< a tensor parameter or an alloc_* result
    Access,     ///< `buf[...]`: a point (a load in arithmetic) or a region (in tile primitives)
    DType,      ///< T.float16, T.bfloat16, ... (strings are accepted wherever a dtype is expected)
    TensorType, ///< T.Tensor(shape, dtype), used as a parameter annotation
    PrimFunc,   ///< a traced @T.prim_func: a kernel waiting for an export name
    Frame,      ///< what `with` / `for` take from T.Kernel, T.Parallel, T.Pipelined, T.serial, ...
    Reducer,    ///< T.comm_reducer(combiner, identity): what `with T.attr(..., "reduce_scope", ...)` takes
    Class,      ///< a class (ClassObj): made by a `class` statement, or one of Python's (object, Enum, property)
    Instance,   ///< an instance of a class (InstanceObj); enum members, properties and super() objects too
    Layout,     ///< T.Layout(shape, forward_fn): an index map (LayoutObj)
};
const char *typeName(VK k); ///< Python-like name for messages: "int", "tuple", "buffer", ...

/// One index of a subscript: a point (`i`) or a slice (`a:b`; extent = b - a).
struct AccessIndex {
    ir::Expr min;
    ir::Expr extent; ///< null for a point
    SourceRange range;
};

struct TupleObj;
struct ListObj;
struct DictObj;
struct FunctionObj;
struct BuiltinObj;
struct ModuleObj;
struct AccessObj;
struct TensorTypeObj;
struct FrameObj;
struct ClassObj;
struct InstanceObj;

/// A Python value. Cheap to copy (scalars inline, everything else shared).
struct Value {
    VK kind = VK::None;
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::string s;                 ///< Str; Opaque: what it stands for ("torch.float16")
    ir::Expr expr;                 ///< Expr
    ir::Buffer buffer;             ///< Buffer
    DType dtype;                   ///< DType
    std::shared_ptr<void> obj;     ///< the *Obj of composite kinds (see the accessors)
    ir::KernelP kernel;            ///< PrimFunc

    static Value none() { return {}; }
    static Value poison() { Value v; v.kind = VK::Poison; return v; }
    static Value boolean(bool x) { Value v; v.kind = VK::Bool; v.b = x; return v; }
    static Value integer(int64_t x) { Value v; v.kind = VK::Int; v.i = x; return v; }
    static Value real(double x) { Value v; v.kind = VK::Float; v.f = x; return v; }
    static Value str(std::string x) { Value v; v.kind = VK::Str; v.s = std::move(x); return v; }
    static Value opaque(std::string what) { Value v; v.kind = VK::Opaque; v.s = std::move(what); return v; }
    static Value ofExpr(ir::Expr e) { Value v; v.kind = VK::Expr; v.expr = std::move(e); return v; }
    static Value ofBuffer(ir::Buffer b) { Value v; v.kind = VK::Buffer; v.buffer = std::move(b); return v; }
    static Value ofDType(DType t) { Value v; v.kind = VK::DType; v.dtype = t; return v; }
    static Value tuple(std::vector<Value> elts);
    static Value list(std::vector<Value> elts);
    static Value primFunc(ir::KernelP k) { Value v; v.kind = VK::PrimFunc; v.kernel = std::move(k); return v; }
    template <class T> static Value object(VK k, std::shared_ptr<T> o) { Value v; v.kind = k; v.obj = std::move(o); return v; }

    bool is(VK k) const { return kind == k; }
    template <class T> T &as() const { return *static_cast<T *>(obj.get()); }
    /// Tuple and List elements (asserts on other kinds).
    const std::vector<Value> &elements() const;
};

struct TupleObj { std::vector<Value> elts; };
struct ListObj { std::vector<Value> elts; };
struct DictObj { std::vector<std::pair<Value, Value>> items; };
struct RangeObj { int64_t start = 0, stop = 0, step = 1; };

/// A `def` with its closure. Default values are evaluated when the def runs, as in Python.
struct FunctionObj {
    ast::StmtP def;
    std::shared_ptr<Env> closure;
    std::vector<Value> defaults; ///< one per parameter; Poison-free; kind None with `hasDefault` false
    std::vector<bool> hasDefault;
    bool isPrimFunc = false;     ///< decorated with @T.prim_func (traced when the decorator applies)
    bool isFactory = false;      ///< decorated with @jit/@autotune or defines a @T.prim_func: it makes kernels
    bool isJit = false;          ///< decorated with @tilelang.jit (it has .compile(...))
    bool isEager = false;        ///< a jit function whose body is the kernel (InterpEager.cpp)
    /// `@tilelang.jit(pass_configs={"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True})`:
    /// the kernels it makes get ir::Kernel::noTma / noWarpSpecialize.
    bool noTma = false, noWarpSpecialize = false;
    bool fastMath = false; ///< "tl.enable_fast_math": the kernels get ir::Kernel::fastMath
    bool noThreadSync = false; ///< "tl.disable_thread_storage_sync": the kernels get ir::Kernel::noThreadSync
    /// `@tilelang.jit(out_idx=...)`: the parameter positions (negative: from the end) the kernels it makes return
    /// (ir::Kernel::outputs); `hasOutIdx` false when not given. `outIdxLoc` is the argument.
    std::vector<int64_t> outIdx;
    bool hasOutIdx = false;
    SourceRange outIdxLoc;
    /// The class whose body defined the function (a method): what a zero-argument super() starts after.
    std::shared_ptr<ClassObj> ownerClass;
    /// Attributes set on the function (`wrapper.__wrapped__ = f`, a decorator's marker): Python's __dict__.
    std::map<std::string, Value> attrs;
};

/// A call's arguments, each with the source range of its expression.
struct Arg {
    Value value;
    SourceRange range;
};
struct CallArgs {
    std::vector<Arg> pos;
    std::vector<std::pair<std::string, Arg>> kw;
    SourceRange call;   ///< the whole call expression
    SourceRange callee; ///< the callee expression (`T.copy`)
};

/// A primitive implemented in C++ (T.*, range, len, min, ...). `self` is set for bound methods.
struct BuiltinObj {
    std::string name; ///< as the user spells it, for messages: "T.copy", "range"
    std::function<Value(Interp &, CallArgs &)> fn;
};

/// A module: `tilelang.language` and friends have attributes; a module of the user's (a file tilec found,
/// src/eval/ModuleLoader.cpp) has its global scope `env`; anything else imported is opaque (every attribute
/// and call of it is again opaque, and using one where a real value is needed is an error).
struct ModuleObj {
    std::string name;
    std::map<std::string, Value> attrs;
    bool opaque = false;
    std::shared_ptr<Env> env; ///< a user module's globals (null for the others)
    std::string path;         ///< a user module's file (a package's __init__.py, or its folder when it has none)
    bool package = false;     ///< a user package: its submodules are files in the folder of `path`
    SourceRange importedAt;   ///< an opaque module: the import that bound it (for messages)
    std::string dir() const;  ///< a user package's folder (InterpModule.cpp)
};

/// A field of a @dataclass, in the order of __init__'s parameters.
struct DataField {
    std::string name;
    Value defaultValue;  ///< `= value` or field(default=value)
    Value factory;       ///< field(default_factory=f): called for each instance
    bool hasDefault = false, hasFactory = false, init = true, kwOnly = false;
    SourceRange range;
};

/// A class. Its namespace `ns` holds what its body bound; attribute lookup follows `mro` (the class first).
struct ClassObj : std::enable_shared_from_this<ClassObj> {
    std::string name;
    std::vector<std::shared_ptr<ClassObj>> bases, mro;
    std::shared_ptr<Env> ns;
    std::vector<std::string> order; ///< names the body bound, in order (enum members)
    std::vector<std::pair<std::string, SourceRange>> annotated; ///< `name: type` in the body, in order (fields)
    /// Python's own classes the interpreter gives meaning to; None for a user's class.
    enum class Builtin { None, Object, Property, StaticMethod, ClassMethod, Super, Enum, Auto, Field, BaseException } builtin = Builtin::None;
    std::string mixin; ///< "int", "str" or "float" when a base is that builtin type (IntEnum: "int")
    bool dataclass = false, frozen = false, dataEq = true;
    std::vector<DataField> fields; ///< a dataclass's fields, inherited ones first
    std::vector<Value> members;    ///< an enum's members, in definition order
    SourceRange range;
    bool isEnum() const; ///< derives from enum.Enum (src/eval/InterpClass.cpp)
    std::shared_ptr<ClassObj> shared() { return shared_from_this(); }
};

/// An instance. `attrs` is its __dict__. A super() object (builtin Super) also has the class it starts
/// after and the object it binds.
struct InstanceObj {
    std::shared_ptr<ClassObj> cls;
    std::shared_ptr<Env> attrs;
    std::shared_ptr<ClassObj> superAfter;
    Value superSelf;
};

/// `buf[...]` before it is known whether it is a load (arithmetic) or a region (tile primitives).
struct AccessObj {
    ir::Buffer buffer;
    std::vector<AccessIndex> indices;
    SourceRange range;
    ir::Buffer view; ///< the T.reshape / T.view the access was written through (`indices` are already `buffer`'s)
    bool isPoint() const; ///< no index is a slice
};

/// T.comm_reducer(lambda x, y: ..., [identity]): TVM's commutative reducer of one value, which
/// T.tvm_thread_allreduce applies across threads (src/eval/TileLangAllreduce.cpp).
struct CommReducerObj {
    Value combiner;  ///< a callable of two values
    Value identity;  ///< the combiner's neutral element (a number or a run-time scalar)
    SourceRange range;
};

/// T.Layout(shape, lambda i, j, ...: [e0, e1, ...]): where element (i, j, ...) of a buffer of `shape` lives,
/// traced once with fresh variables (what T.annotate_layout applies, src/eval/TileLangLayout.cpp). T.Fragment
/// (shape, forward_fn=...): which thread holds which element of a fragment, kept as its shape only (a hint).
struct LayoutObj {
    bool fragment = false;          ///< a T.Fragment (vars and forward are empty)
    std::vector<ir::Expr> shape;    ///< the input shape
    std::vector<ir::Var> vars;      ///< one per input dimension
    std::vector<ir::Expr> forward;  ///< the output indices, integer expressions of `vars`
    SourceRange range;              ///< the T.Layout call
    Value forwardFn;                ///< a T.Fragment's forward_fn (traced by T.async_copy's loop_layout), else none
};

/// TileLang's sub-byte element types, two to a byte (src/eval/TileLangSubByte.cpp): a buffer of one is a view of
/// its bytes (TraceState::subByte), whose element accesses unpack or pack a nibble.
enum class SubByte : unsigned char { None, Int4, UInt4, Float4E2M1 };

struct TensorTypeObj {
    std::vector<ir::Expr> shape;
    std::vector<ir::Expr> strides; ///< T.StridedTensor's, in elements (empty: row-major)
    DType dtype;                   ///< with `sub`: the byte that holds two elements (int8, uint8)
    SubByte sub = SubByte::None;   ///< T.int4 / T.uint4 / T.float4_e2m1fn elements
    SourceRange range;
};

/// What T.Kernel / T.Parallel / T.Pipelined / T.serial / T.unroll / T.vectorized return; the interpreter's
/// `with` and `for` turn it into the kernel launch or a loop nest.
struct FrameObj {
    enum Kind { Kernel, Loop, WarpGroup, Attr } kind = Loop;
    SourceRange range;
    // Kernel
    std::vector<ir::Expr> grid; ///< 1 to 3 extents
    int threads = 128;
    std::vector<int> threadDims; ///< `threads=(x, y[, z])`: the extents, x fastest (threads is their product)
    std::array<int, 3> clusterDims{1, 1, 1}; ///< T.ClusterKernel's cluster_dims, padded with 1s
    SourceRange clusterLoc;                  ///< ... its argument
    // Loop: one loop per extent, outermost first (T.Parallel(a, b) is two loops)
    ir::ForKind forKind = ir::ForKind::Serial;
    std::vector<ir::Expr> mins, extents;
    int numStages = 0;
    /// T.Persistent: one serial loop of `loopVar` over extents[0] (the waves); the loop's targets are bound to
    /// `coords` (the tile coordinates, expressions of loopVar) and its body runs under `guard`.
    ir::Var loopVar;
    std::vector<ir::Expr> coords;
    ir::Expr guard;
    int warpGroup = 0; ///< WarpGroup: `with T.ws(g)`, threads [128 g, 128 g + 128)
    /// Attr: `with T.attr(reducer, "reduce_scope", ...)`, the scope of a T.tvm_thread_allreduce
    std::shared_ptr<const CommReducerObj> reducer;
};

/// A lexical scope: names to values, with the enclosing function's scope as parent.
struct Env {
    std::shared_ptr<Env> parent;
    std::map<std::string, Value> vars;
    std::set<std::string> globals, nonlocals; ///< a function's `global` / `nonlocal` names
    Value *lookup(const std::string &name);
    void set(const std::string &name, Value v) { vars[name] = std::move(v); }
};

} // namespace tilec::eval
