/// \file
/// Pointers: `T.ptr` and `T.make_tensor(ptr, shape, dtype, strides)`, TileLang's tensors over an address.
///  - `p: T.ptr` (or `T.ptr()`, `T.ptr(dtype)`) declares a pointer parameter; `T.make_tensor(p, shape, dtype)`
///    makes it a tensor parameter of that shape and dtype (TileLang's match_buffer), the C function taking an
///    element pointer, as for `T.Tensor`. A pointer parameter no T.make_tensor shapes stays an int64 address.
///  - `T.Tensor(shape, T.ptr)` is a table of addresses, stored as int64 (TileLang's own storage for it).
///  - `T.make_tensor(addr, shape, dtype)` inside a launch, `addr` an integer run-time value (an entry of such a
///    table): a global tensor whose element 0 is at that address, which the kernel keeps in an int64
///    T.alloc_var assigned where the call is (ir::Kernel::addressedTensors). Element accesses and tile copies
///    use it like a tensor parameter; TMA, which needs the tensor on the host, does not.
#include "eval/TileLang.h"

namespace tilec::eval {

bool isPointerAnnotation(const Value &v) {
    return v.is(VK::Builtin) && v.as<BuiltinObj>().name == "T.ptr";
}

} // namespace tilec::eval

namespace tilec::eval::tl {

namespace {

Value &pointerType() {
    static Value v;
    return v;
}

/// The shape and strides arguments of T.make_tensor.
struct TensorShape {
    std::vector<ir::Expr> shape, strides;
};

TensorShape shapeArgs(Interp &in, const Arg &shapeArg, const std::optional<Arg> &stridesArg) {
    TensorShape out;
    auto dims = in.toSequence(shapeArg, "shape");
    if (dims.empty()) in.fail(shapeArg.range, "T.make_tensor needs at least one dimension");
    for (size_t i = 0; i < dims.size(); ++i) {
        ir::Expr e = intExprArg(in, dims[i], "dimension " + std::to_string(i) + " of the shape");
        if (auto c = ir::constValue(e); c && *c <= 0)
            in.fail(dims[i].range, "dimension " + std::to_string(i) + " of the shape is " + std::to_string(*c) +
                                       "; dimensions must be positive");
        out.shape.push_back(ir::simplify(e));
    }
    if (!stridesArg || stridesArg->value.is(VK::None)) return out;
    auto strides = in.toSequence(*stridesArg, "strides");
    if (strides.size() != dims.size())
        in.fail(stridesArg->range, "T.make_tensor has " + std::to_string(dims.size()) + " dimensions but " +
                                       std::to_string(strides.size()) + " strides");
    for (size_t i = 0; i < strides.size(); ++i)
        out.strides.push_back(ir::simplify(intExprArg(in, strides[i], "stride " + std::to_string(i))));
    return out;
}

/// The scalar parameter `v` is, or null.
ir::Param *pointerParam(TraceState &t, const ir::Expr &v) {
    auto var = std::dynamic_pointer_cast<const ir::VarNode>(v);
    if (!var) return nullptr;
    for (auto &p : t.kernel->params)
        if (p.kind == ir::Param::Scalar && p.var == var) return &p;
    return nullptr;
}

void recordStrides(TraceState &t, const ir::Buffer &b, const std::vector<ir::Expr> &strides, const SourceRange &at,
                   bool everyLaunch) {
    auto l = stridedPlacement(b, strides, at);
    if (!l) return;
    t.kernel->tensorLayouts.push_back(*l);
    if (everyLaunch) t.paramLayouts.push_back(*l);
}

Value makeTensor(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.make_tensor", {"ptr", "shape", "dtype?", "strides?"});
    TraceState *t = in.trace();
    if (!t) in.fail(args.call, "T.make_tensor can only be used inside a @T.prim_func");
    DType dt = a[2] && !a[2]->value.is(VK::None) ? dtypeArg(in, *a[2]) : DType(DType::Float32);
    if (dt == DType::Void) in.fail(a[2]->range, "a tensor cannot have element type void");
    TensorShape s = shapeArgs(in, *a[1], a[3]);
    const Arg &ptr = *a[0];
    if (isPointerAnnotation(ptr.value)) { // `.compile(A=T.ptr())`: a pointer argument, the tensor parameter named A
        std::string name = in.assignTargetName();
        if (t->inLaunch || name.empty())
            in.fail(ptr.range, "T.make_tensor of T.ptr itself: assign it to a name before 'with T.Kernel(...)' "
                               "(`A = T.make_tensor(A, shape, dtype)`, A given as T.ptr()) to make a tensor parameter");
        for (auto &p : t->kernel->params)
            if (p.name() == name) in.fail(args.call, "T.make_tensor: the kernel already has a parameter named '" + name + "'");
        ir::Param p;
        p.kind = ir::Param::Tensor;
        p.loc = args.call;
        p.buffer = ir::makeBuffer(name, ir::Scope::Global, dt, s.shape, args.call);
        t->kernel->params.push_back(p);
        recordStrides(*t, p.buffer, s.strides, args.call, true);
        return Value::ofBuffer(p.buffer);
    }
    if (ptr.value.is(VK::Buffer))
        in.fail(ptr.range, "T.make_tensor takes a pointer (a T.ptr parameter or an address), not the tensor '" +
                               ptr.value.buffer->name + "' itself");
    ir::Expr addr = in.toExpr(ptr, "pointer");
    if (ir::Param *p = pointerParam(*t, addr)) { // TileLang's match_buffer: the parameter is that tensor
        if (p->var->dtype != DType::Int64 && p->var->dtype != DType::UInt64)
            in.fail(ptr.range, "T.make_tensor of parameter '" + p->var->name + "', a scalar of type " +
                                   std::string(p->var->dtype.name()) + ": a pointer parameter is annotated T.ptr");
        p->kind = ir::Param::Tensor;
        p->buffer = ir::makeBuffer(p->var->name, ir::Scope::Global, dt, s.shape, args.call);
        p->var = nullptr;
        recordStrides(*t, p->buffer, s.strides, args.call, true);
        return Value::ofBuffer(p->buffer);
    }
    if (auto var = std::dynamic_pointer_cast<const ir::VarNode>(addr); var && var->dtype == DType::Int64) // a T.ptr parameter made a tensor already
        for (auto &q : t->kernel->params)
            if (q.kind == ir::Param::Tensor && q.buffer->name == var->name && q.buffer->loc.valid()) {
                in.diag().error(ptr.range, "T.make_tensor: pointer parameter '" + var->name +
                                               "' is already a tensor; tilec makes one tensor of a pointer parameter");
                in.note(q.buffer->loc, "made a tensor here");
                throw EvalAbort{};
            }
    if (!t->inLaunch)
        in.fail(args.call, "T.make_tensor of a run-time address must be inside 'with T.Kernel(...)' (before it, only a "
                           "T.ptr parameter can be made a tensor)");
    if (addr->dtype != DType::Int64 && addr->dtype != DType::UInt64)
        in.fail(ptr.range, "T.make_tensor's address '" + exprText(addr) + "' is " + std::string(addr->dtype.name()) +
                               ": an address is a 64-bit integer (an entry of a T.Tensor(shape, T.ptr) table)");
    ir::Kernel &k = *t->kernel;
    std::string name = in.assignTargetName();
    name = uniqueBufferName(k, name.empty() ? "tensor" : name);
    auto address = ir::makeBuffer(uniqueBufferName(k, name + "_addr"), ir::Scope::Var, DType::Int64, {ir::intImm(1)}, args.call);
    k.allocs.push_back(address);
    in.emit(ir::Store::make(address, {ir::intImm(0)}, ir::cast(DType::Int64, addr, ptr.range), args.call));
    auto tensor = ir::makeBuffer(name, ir::Scope::Global, dt, s.shape, args.call);
    k.addressedTensors.push_back({tensor, address});
    recordStrides(*t, tensor, s.strides, args.call, false);
    return Value::ofBuffer(tensor);
}

} // namespace

void addPointerPrimitives(Attrs &attrs) {
    // T.ptr is the annotation itself; T.ptr(), T.ptr(dtype) and T.ptr(dtype, scope) are the same annotation.
    def(attrs, "ptr", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.ptr", {"dtype?", "storage_scope?", "is_size_var?"});
        if (a[0] && !a[0]->value.is(VK::None)) dtypeArg(in, *a[0]);
        if (a[1] && in.toStr(*a[1], "storage_scope") != "global")
            in.fail(a[1]->range, "T.ptr: tilec's pointer parameters point to global memory");
        return pointerType();
    });
    pointerType() = attrs["ptr"];
    def(attrs, "make_tensor", makeTensor);
}

} // namespace tilec::eval::tl
