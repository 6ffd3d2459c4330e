/// \file
/// The `tilelang.language` module (`import tilelang.language as T`): its fixed attribute table, the
/// dtypes, the decorator, tensor annotations (`T.Tensor`) and run-time shape symbols (`T.dynamic`).
///
/// The attribute table is closed on purpose: any other `T.x` is "unknown primitive T.x" (reported by the
/// interpreter's attribute lookup), so a typo never silently becomes an opaque value.
#include "eval/TileLang.h"

namespace tilec::eval {

using namespace tl;

Value makeTileLanguageModule() {
    auto m = std::make_shared<ModuleObj>();
    m->name = "tilelang.language";
    addTypePrimitives(m->attrs);
    addLoopPrimitives(m->attrs);
    addAllocPrimitives(m->attrs);
    addCopyPrimitives(m->attrs);
    addWarpRolePrimitives(m->attrs);
    addGemmPrimitives(m->attrs);
    addReducePrimitives(m->attrs);
    addMathPrimitives(m->attrs);
    addAllreducePrimitives(m->attrs);
    addThreadPrimitives(m->attrs);
    addBitPrimitives(m->attrs);
    addViewPrimitives(m->attrs);
    addScanPrimitives(m->attrs);
    addPointerPrimitives(m->attrs);
    addLayoutPrimitives(m->attrs);
    addIntrinsicPrimitives(m->attrs);
    return Value::object(VK::Module, m);
}

std::string otherGpuPrimitive(const std::string &name) {
    // TileLang v0.1.13's primitives for Blackwell's tensor memory and its tcgen05 instructions (sm_100), its
    // cluster launch control (sm_100) and the block-scaled mma.sync of sm_120: no Hopper or Ampere GPU has them.
    static const std::pair<const char *, const char *> prefixes[] = {
        {"tcgen05_", "a Blackwell (sm_100) tcgen05 tensor-core primitive"},
        {"alloc_tmem", "a Blackwell (sm_100) tensor-memory allocation"},
        {"clc_", "a Blackwell (sm_100) cluster-launch-control primitive"},
        {"mma_gemm_blockscaled", "the block-scaled mma.sync of sm_120"},
    };
    for (auto &[prefix, what] : prefixes)
        if (name.rfind(prefix, 0) == 0) return what;
    return {};
}

Value callDType(Interp &in, DType t, CallArgs &args) {
    auto a = bindArgs(in, args, "T." + std::string(t.name()), {"x"});
    const Value &v = a[0]->value;
    if (v.is(VK::Poison))
        return v;
    if (v.is(VK::Str) || v.is(VK::None))
        in.fail(a[0]->range,
                "cannot convert " + std::string(typeName(v.kind)) + " to " + std::string(t.name()));
    return Value::ofExpr(ir::cast(t, in.toExpr(*a[0], "value"), args.call));
}

namespace tl {

namespace {

bool isIdentifier(const std::string &s) {
    if (s.empty() || s.size() > 200)
        return false;
    for (size_t i = 0; i < s.size(); ++i) {
        unsigned char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

/// One dimension of a T.Tensor / T.Buffer shape: a positive constant or a run-time integer expression.
ir::Expr shapeDim(Interp &in, const Arg &a, size_t index) {
    const Value &v = a.value;
    std::string what = "dimension " + std::to_string(index) + " of the shape";
    if (v.is(VK::Opaque)) in.toInt(a, what.c_str()); // says which module (and import) it comes from
    if (!(v.is(VK::Int) || v.is(VK::Expr)))
        in.fail(a.range, what + " must be an integer, got " + typeName(v.kind));
    ir::Expr e = intExprArg(in, a, what);
    if (auto c = ir::constValue(e)) {
        if (*c <= 0)
            in.fail(a.range, what + " is " + std::to_string(*c) + "; dimensions must be positive");
        return constIndex(*c, a.range);
    }
    return e;
}

/// T.Tensor(shape, dtype, X.data) inside a prim_func: X's memory with another shape, as a parameter the launch
/// function passes X's pointer for (ir::Param::viewOf).
Value tensorView(Interp &in, CallArgs &args, const Arg &data, const TensorTypeObj &ty, const std::string &fname) {
    TraceState *t = in.trace();
    if (!t) in.fail(data.range, fname + "(shape, dtype, data): a view of a tensor's data can only be made inside a @T.prim_func");
    if (!data.value.is(VK::Buffer) || data.value.s != "data")
        in.fail(data.range, fname + "(shape, dtype, data): the data must be a tensor parameter's '.data', not a " +
                                std::string(typeName(data.value.kind)));
    ir::Buffer base = data.value.buffer;
    const ir::Param *bp = nullptr;
    for (auto &p : t->kernel->params)
        if (p.kind == ir::Param::Tensor && p.buffer == base) bp = &p;
    if (bp && bp->viewOf) base = bp->viewOf; // a view of a view views the same tensor
    else if (!bp || bp->workspace)
        in.fail(data.range, "'" + base->name + ".data': only a tensor parameter's data can be viewed" +
                                std::string(bp ? " (not a T.alloc_global workspace's)" : ""));
    if (ty.dtype != base->dtype)
        in.fail(args.call, fname + " views '" + base->name + "' (" + std::string(base->dtype.name()) + ") as " + std::string(ty.dtype.name()) +
                               ": reinterpreting a tensor's data as another dtype is not supported");
    int64_t n = 1; // the view's elements, -1 when not constant (or beyond any GPU's memory)
    for (auto &d : ty.shape) {
        auto c = ir::constInt(d);
        if (!c || n < 0 || *c > (int64_t(1) << 48) / n) n = -1;
        else n *= *c;
    }
    int64_t m = base->constElements();
    if (n < 0 || m < 0)
        in.fail(args.call, fname + ": views of a tensor's data need constant shapes (the view or '" + base->name +
                               "' has a run-time size)");
    if (n != m)
        in.fail(args.call, fname + ": the view has " + std::to_string(n) + " elements but '" + base->name + "' has " +
                               std::to_string(m));
    std::string name = in.assignTargetName();
    ir::Param p;
    p.kind = ir::Param::Tensor;
    p.loc = args.call;
    p.viewOf = base;
    p.buffer = ir::makeBuffer(uniqueBufferName(*t->kernel, name.empty() ? base->name + "_view" : name), ir::Scope::Global,
                              ty.dtype, ty.shape, args.call);
    t->kernel->params.push_back(p);
    return Value::ofBuffer(p.buffer);
}

Value tensorType(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"shape", "dtype?", "data?"});
    auto ty = std::make_shared<TensorTypeObj>();
    ty->range = args.call;
    ty->sub = a[1] ? subByteArg(*a[1]) : SubByte::None;
    ty->dtype = ty->sub != SubByte::None ? subByteStorage(ty->sub) : a[1] ? dtypeArg(in, *a[1]) : DType(DType::Float32);
    if (ty->dtype == DType::Void)
        in.fail(a[1]->range, "a tensor cannot have element type void");
    if (ty->sub != SubByte::None && a[2] && !a[2]->value.is(VK::None))
        in.fail(a[1]->range, std::string("a view of a tensor's data as ") + subByteName(ty->sub) + " elements is not supported");
    auto dims = in.toSequence(*a[0], "shape");
    if (dims.empty())
        in.fail(a[0]->range, "a tensor needs at least one dimension");
    for (size_t i = 0; i < dims.size(); ++i)
        ty->shape.push_back(shapeDim(in, dims[i], i));
    if (a[2] && !a[2]->value.is(VK::None)) return tensorView(in, args, *a[2], *ty, fname);
    return Value::object(VK::TensorType, ty);
}

/// `T.StridedTensor(shape, strides, dtype)` (also `T.StridedTensor[shape, strides, dtype]`): a tensor parameter
/// whose element idx lives at offset sum(idx[d] * strides[d]) elements from its pointer (a torch tensor's
/// strides; a T.dynamic stride is a run-time size of the C function). InterpTrace's declareParam records the
/// placement (ir::TensorLayout).
Value stridedTensorType(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.StridedTensor", {"shape", "strides", "dtype?"});
    auto ty = std::make_shared<TensorTypeObj>();
    ty->range = args.call;
    ty->sub = a[2] ? subByteArg(*a[2]) : SubByte::None;
    ty->dtype = ty->sub != SubByte::None ? subByteStorage(ty->sub) : a[2] ? dtypeArg(in, *a[2]) : DType(DType::Float32);
    if (ty->dtype == DType::Void) in.fail(a[2]->range, "a tensor cannot have element type void");
    auto dims = in.toSequence(*a[0], "shape");
    if (dims.empty()) in.fail(a[0]->range, "a tensor needs at least one dimension");
    for (size_t i = 0; i < dims.size(); ++i) ty->shape.push_back(shapeDim(in, dims[i], i));
    auto strides = in.toSequence(*a[1], "strides");
    if (strides.size() != dims.size())
        in.fail(a[1]->range, "T.StridedTensor has " + std::to_string(dims.size()) + " dimensions but " +
                                 std::to_string(strides.size()) + " strides");
    for (size_t i = 0; i < strides.size(); ++i) {
        // a stride is 0 or more: 0 repeats one element along its dimension (a torch tensor's expand)
        const std::string what = "stride " + std::to_string(i);
        if (strides[i].value.is(VK::Opaque)) in.toInt(strides[i], what.c_str()); // says which module it comes from
        if (!(strides[i].value.is(VK::Int) || strides[i].value.is(VK::Expr)))
            in.fail(strides[i].range, what + " must be an integer, got " + typeName(strides[i].value.kind));
        ir::Expr e = intExprArg(in, strides[i], what);
        if (auto c = ir::constValue(e)) {
            if (*c < 0) in.fail(strides[i].range, what + " is " + std::to_string(*c) + "; strides cannot be negative");
            e = constIndex(*c, strides[i].range);
        }
        ty->strides.push_back(e);
    }
    return Value::object(VK::TensorType, ty);
}

/// T.alloc_global(shape, dtype): a workspace in global memory for the prim_func's launches (split-KV decoding's
/// partial results, which a second T.Kernel combines). It is made before the launches; the launch function
/// allocates it, so it is a parameter of every launch but not of the C function (ir::Param::workspace).
Value allocGlobal(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.alloc_global", {"shape", "dtype", "scope?"});
    TraceState *t = in.trace();
    if (!t) in.fail(args.call, "T.alloc_global can only be used inside a @T.prim_func");
    if (t->inLaunch)
        in.fail(args.call, "T.alloc_global makes a workspace for the prim_func's launches: it must come before "
                           "'with T.Kernel(...)', not inside it (use T.alloc_shared or T.alloc_fragment there)");
    if (a[2] && in.toStr(*a[2], "scope") != "global")
        in.fail(a[2]->range, "scope '" + in.toStr(*a[2], "scope").substr(0, 40) + "' is not valid for T.alloc_global (use 'global')");
    DType dtype = dtypeArg(in, *a[1]);
    if (dtype == DType::Void) in.fail(a[1]->range, "a buffer cannot have element type void");
    auto dims = in.toSequence(*a[0], "shape");
    if (dims.empty()) in.fail(a[0]->range, "T.alloc_global needs at least one dimension");
    std::vector<ir::Expr> shape;
    for (size_t i = 0; i < dims.size(); ++i) shape.push_back(shapeDim(in, dims[i], i));
    std::string base = in.assignTargetName();
    ir::Param p;
    p.kind = ir::Param::Tensor;
    p.loc = args.call;
    p.workspace = true;
    p.buffer = ir::makeBuffer(uniqueBufferName(*t->kernel, base.empty() ? "workspace" : base), ir::Scope::Global, dtype,
                              std::move(shape), args.call);
    t->kernel->params.push_back(p);
    return Value::ofBuffer(p.buffer);
}

/// T.dynamic("n") is one symbol; T.dynamic("m, n") (or "m n") a tuple of them, as TileLang splits the names.
Value dynamic(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"name", "dtype?"});
    std::string text = in.toStr(*a[0], "name");
    DType t = a[1] ? dtypeArg(in, *a[1]) : DType(DType::Int32);
    if (!t.isInt())
        in.fail(a[1]->range, fname + " symbols are integers; got dtype '" + std::string(t.name()) + "'");
    bool several = text.find_first_of(", \t") != std::string::npos;
    std::vector<Value> vars;
    std::string cur;
    for (char c : text + ",") {
        if (c != ',' && c != ' ' && c != '\t') { cur += c; continue; }
        if (cur.empty()) continue;
        if (!isIdentifier(cur))
            in.fail(a[0]->range, fname + " name '" + cur.substr(0, 40) + "' is not a valid identifier");
        vars.push_back(Value::ofExpr(ir::makeVar(cur, t, args.call)));
        cur.clear();
    }
    if (vars.empty() || (!several && text.empty()))
        in.fail(a[0]->range, fname + " name '" + text.substr(0, 40) + "' is not a valid identifier");
    return several ? Value::tuple(std::move(vars)) : vars[0];
}

/// `M, N = T.const("M, N")` in an eager kernel: the values .compile(M=..., N=...) gives, or run-time sizes
/// (int32 unless `dtype=` says otherwise) for the names it leaves out.
Value constSizes(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.const", {"name", "dtype?"});
    TraceState *t = in.trace();
    if (!t || !t->eager)
        in.fail(args.call, "T.const is only used in the body of an eager kernel (a @tilelang.jit function whose body "
                           "is the kernel); elsewhere use a factory's argument or T.dynamic");
    std::string text = in.toStr(*a[0], "name");
    DType dt = a[1] ? dtypeArg(in, *a[1]) : DType(DType::Int32);
    if (!dt.isInt()) in.fail(a[1]->range, "T.const sizes are integers; got dtype '" + std::string(dt.name()) + "'");
    std::vector<std::string> names;
    std::string cur;
    for (char c : text + ",") {
        if (c == ',' || c == ' ' || c == '\t') {
            if (!cur.empty()) names.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (names.empty()) in.fail(a[0]->range, "T.const needs at least one name");
    std::vector<Value> out;
    for (auto &n : names) {
        if (!isIdentifier(n)) in.fail(a[0]->range, "T.const name '" + n.substr(0, 40) + "' is not a valid identifier");
        if (auto it = t->eager->consts.find(n); it != t->eager->consts.end()) {
            t->eager->constsUsed.insert(n);
            const Arg &v = it->second;
            if (!v.value.is(VK::Int) && !(v.value.is(VK::Expr) && v.value.expr->dtype.isInt()))
                in.fail(v.range, "T.const '" + n + "' must be given an integer, not a " + typeName(v.value.kind));
            out.push_back(v.value);
            continue;
        }
        auto var = ir::makeVar(n, dt, args.call);
        t->eager->runtimeConsts.push_back({var, args.call});
        out.push_back(Value::ofExpr(var));
    }
    return out.size() == 1 ? out[0] : Value::tuple(std::move(out));
}

/// `C = T.empty(shape, dtype)` (or `T.empty(*shape, dtype=...)`) before the launch: an output tensor, the
/// kernel's parameter named after the variable, placed after the other parameters.
Value emptyOutput(Interp &in, CallArgs &args) {
    TraceState *t = in.trace();
    if (!t) in.fail(args.call, "T.empty can only be used inside a @T.prim_func or an eager kernel");
    if (t->inLaunch)
        in.fail(args.call, "T.empty makes an output tensor of the kernel: it must come before 'with T.Kernel(...)'");
    std::string name = in.assignTargetName();
    if (name.empty())
        in.fail(args.call, "T.empty must be assigned to a name ('C = T.empty(...)'): the name is the output parameter's");
    auto kw = keywords(in, args, "T.empty", {"shape", "dtype"});
    std::vector<Arg> dims;
    if (auto it = kw.find("shape"); it != kw.end()) {
        if (!args.pos.empty()) in.fail(args.pos[0].range, "T.empty got its shape twice");
        dims = in.toSequence(it->second, "shape");
    } else if (args.pos.size() >= 1 && (args.pos[0].value.is(VK::Tuple) || args.pos[0].value.is(VK::List))) {
        dims = in.toSequence(args.pos[0], "shape");
        if (args.pos.size() == 2 && !kw.count("dtype")) kw["dtype"] = args.pos[1];
        else if (args.pos.size() > 1) in.fail(args.pos[1].range, "T.empty takes a shape and a dtype");
    } else {
        dims = args.pos;
    }
    if (dims.empty()) in.fail(args.call, "T.empty needs a shape");
    SubByte sub = kw.count("dtype") ? subByteArg(kw["dtype"]) : SubByte::None;
    DType dt = sub != SubByte::None ? subByteStorage(sub) : kw.count("dtype") ? dtypeArg(in, kw["dtype"]) : DType(DType::Float32);
    if (dt == DType::Void) in.fail(kw["dtype"].range, "a tensor cannot have element type void");
    std::vector<ir::Expr> shape;
    for (size_t i = 0; i < dims.size(); ++i) shape.push_back(shapeDim(in, dims[i], i));
    ir::Kernel &k = *t->kernel;
    for (auto &p : k.params)
        if (p.name() == name) in.fail(args.call, "T.empty: the kernel already has a parameter named '" + name + "'");
    ir::Param param;
    param.kind = ir::Param::Tensor;
    param.loc = args.call;
    std::vector<ir::Expr> bytes = sub != SubByte::None ? subByteStorageShape(in, ir::Scope::Global, shape, name, sub, args.call) : shape;
    param.buffer = ir::makeBuffer(name, ir::Scope::Global, dt, std::move(bytes), args.call);
    k.params.push_back(param);
    t->outputs.push_back(param.buffer);
    if (sub != SubByte::None) return Value::ofBuffer(subByteView(*t, param.buffer, sub, std::move(shape)));
    return Value::ofBuffer(param.buffer);
}

} // namespace

void addTypePrimitives(Attrs &attrs) {
    for (int k = DType::Bool; k < DType::Void; ++k) {
        DType t((DType::Kind)k);
        attrs[std::string(t.name())] = Value::ofDType(t);
    }
    // TileLang's other spellings of the same dtypes (tilelang/language/dtypes.py).
    static const std::pair<const char *, DType::Kind> aliases[] = {
        {"float", DType::Float32},  {"half", DType::Float16},  {"double", DType::Float64},
        {"int", DType::Int32},      {"short", DType::Int16},   {"long", DType::Int64},
        {"uint", DType::UInt32},    {"ulong", DType::UInt64},  {"float8_e4m3fn", DType::Float8E4M3}, {"float8_e4m3fnuz", DType::Float8E4M3},
        {"float8_e5m2fnuz", DType::Float8E5M2}, {"tfloat32", DType::Float32},
    };
    for (auto &[name, k] : aliases) attrs[name] = Value::ofDType(k);
    for (const char *name : {"float4_e2m1fn", "int4", "uint4"}) attrs[name] = Value::str(name);
    // T.dtype("float16") / T.dtype(T.float16): the dtype object (its .bits, .bytes); a packed name stays itself.
    def(attrs, "dtype", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.dtype", {"value"});
        if (a[0]->value.is(VK::Str) && isPackedDTypeName(a[0]->value.s)) return a[0]->value;
        return Value::ofDType(dtypeArg(in, *a[0]));
    });

    // The interpreter recognises the decorator by its name and traces the def; a direct call is identity.
    def(attrs, "prim_func", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.prim_func", {"func"});
        return a[0]->value;
    });
    // @T.macro: a helper inlined into the kernel. Tracing runs Python functions in place, so it is one.
    def(attrs, "macro", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.macro", {"func"});
        return a[0]->value;
    });
    def(attrs, "const", constSizes);
    def(attrs, "empty", emptyOutput);
    def(attrs, "Tensor", [](Interp &in, CallArgs &args) { return tensorType(in, args, "T.Tensor"); });
    def(attrs, "alloc_global", allocGlobal);
    def(attrs, "Buffer", [](Interp &in, CallArgs &args) { return tensorType(in, args, "T.Buffer"); });
    def(attrs, "StridedTensor", stridedTensorType);
    def(attrs, "dynamic", [](Interp &in, CallArgs &args) { return dynamic(in, args, "T.dynamic"); });
    def(attrs, "symbolic", [](Interp &in, CallArgs &args) { return dynamic(in, args, "T.symbolic"); });
}

} // namespace tl
} // namespace tilec::eval
