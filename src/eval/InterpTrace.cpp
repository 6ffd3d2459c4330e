/// \file
/// Tracing a `@T.prim_func` into an ir::Kernel: parameters from their annotations (T.StridedTensor's placement
/// included), the kernel's dynamic symbols and outputs once the body has run, and the failures a trace holds
/// for its caller. Python-level code in the body still runs at compile time (unrolled loops, folded
/// arithmetic); the statements the body traces (the launch, loop nests, run-time `if` and `while`) are in
/// InterpTraceFrames.cpp.
#include "eval/InterpImpl.h"
#include "eval/TileLang.h"

#include "tilec/IROperator.h"
#include "tilec/passes/Staging.h"

#include <algorithm>

namespace tilec::eval {

void collectVars(const ir::Expr &e, std::vector<ir::Var> &out, int depth) {
    if (!e || depth > 200) return;
    switch (e->kind) {
    case ir::NodeKind::Var: {
        auto v = std::static_pointer_cast<const ir::VarNode>(e);
        if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
        return;
    }
    case ir::NodeKind::Binary:
        collectVars(ir::as<ir::Binary>(e)->a, out, depth + 1);
        collectVars(ir::as<ir::Binary>(e)->b, out, depth + 1);
        return;
    case ir::NodeKind::Unary: collectVars(ir::as<ir::Unary>(e)->a, out, depth + 1); return;
    case ir::NodeKind::Cast: collectVars(ir::as<ir::Cast>(e)->value, out, depth + 1); return;
    case ir::NodeKind::Select: {
        auto s = ir::as<ir::Select>(e);
        collectVars(s->cond, out, depth + 1);
        collectVars(s->t, out, depth + 1);
        collectVars(s->f, out, depth + 1);
        return;
    }
    case ir::NodeKind::Call:
        for (auto &a : ir::as<ir::Call>(e)->args) collectVars(a, out, depth + 1);
        return;
    default: return;
    }
}

Value InterpImpl::tracePrimFunc(const Value &fn, const SourceRange &at) {
    if (!fn.is(VK::Function)) fail(at, std::string("@T.prim_func decorates a function, not a ") + typeName(fn.kind));
    auto &f = fn.as<FunctionObj>();
    const ast::Stmt &def = *f.def;
    return traceKernel(fn, at, newEnv(f.closure), nullptr, [&](ir::Kernel &k) {
        for (auto &p : def.params) {
            try {
                // keyword-only parameters (after `*`) are parameters like the others, in the def's order
                if (p.kind == ast::Param::VarArgs || p.kind == ast::Param::VarKw)
                    fail(p.range, "prim_func parameters cannot be '*args' or '**kwargs'");
                if (!p.annotation)
                    fail(p.range, "parameter '" + p.name + "' of prim_func '" + def.name +
                                      "' needs an annotation: T.Tensor(shape, dtype) or a scalar dtype such as T.int32");
                declareParam(k, *env_, p.name, eval(*p.annotation), p.range, p.annotation->range);
            } catch (EvalAbort &) {
                env_->set(p.name, Value::poison());
            }
        }
    });
}

/// T.StridedTensor's placement: element idx at sum(idx[d] * strides[d]), one output index over one past the
/// largest offset; none where the strides are the row-major ones.
std::optional<ir::TensorLayout> stridedPlacement(const ir::Buffer &b, const std::vector<ir::Expr> &strides, const SourceRange &at) {
    if (strides.empty()) return std::nullopt;
    ir::Expr rowMajor = ir::intImm(1);
    bool dense = true;
    for (size_t d = strides.size(); d-- > 0;) {
        dense = dense && ir::provablyEqual(strides[d], rowMajor);
        rowMajor = ir::simplify(ir::binary(ir::BinaryOp::Mul, rowMajor, b->shape[d]));
    }
    if (dense) return std::nullopt;
    ir::TensorLayout l{b, {}, {}, {}, at};
    ir::Expr offset, last = ir::intImm(1);
    for (size_t d = 0; d < strides.size(); ++d) {
        l.vars.push_back(ir::makeVar("i" + std::to_string(d), DType::Int32, at));
        ir::Expr term = ir::binary(ir::BinaryOp::Mul, l.vars.back(), strides[d]);
        offset = offset ? ir::binary(ir::BinaryOp::Add, offset, term) : term;
        ir::Expr span = ir::binary(ir::BinaryOp::Mul, ir::binary(ir::BinaryOp::Sub, b->shape[d], ir::intImm(1)), strides[d]);
        last = ir::binary(ir::BinaryOp::Add, last, span);
    }
    l.forward = {ir::simplify(offset)};
    l.shape = {ir::simplify(last)};
    return l;
}

/// A tensor parameter of sub-byte elements: the C function takes their bytes (tl::subByteStorageShape; a
/// T.StridedTensor's strides, in elements, halved but the innermost, which must be 1); the body indexes the view.
void InterpImpl::declareSubByteParam(ir::Kernel &k, Env &env, const std::string &name, const TensorTypeObj &ty,
                                     const SourceRange &at, const SourceRange &annotationAt) {
    TraceState *t = trace();
    if (!t) fail(annotationAt, std::string("a tensor of ") + tl::subByteName(ty.sub) + " elements can only be a prim_func's parameter");
    ir::Param param;
    param.loc = at;
    param.kind = ir::Param::Tensor;
    auto shape = tl::subByteStorageShape(*this, ir::Scope::Global, ty.shape, name, ty.sub, annotationAt);
    param.buffer = ir::makeBuffer(name, ir::Scope::Global, ty.dtype, shape, at);
    env.set(name, Value::ofBuffer(tl::subByteView(*t, param.buffer, ty.sub, ty.shape)));
    std::vector<ir::Expr> strides = ty.strides;
    for (size_t d = 0; d < strides.size(); ++d) {
        bool last = d + 1 == strides.size();
        ir::Expr two = ir::intImm(2, strides[d]->dtype);
        ir::Expr halved = ir::simplify(ir::binary(ir::BinaryOp::FloorDiv, strides[d], two));
        if (last ? ir::constValue(strides[d]) != std::optional<int64_t>(1)
                 : !ir::provablyEqual(ir::simplify(ir::binary(ir::BinaryOp::Mul, halved, two)), strides[d]))
            fail(annotationAt, "'" + name + "' holds " + tl::subByteName(ty.sub) + " elements two to a byte: " +
                                   (last ? "its innermost stride must be 1" : "its strides must be even") + ", not '" +
                                   tl::exprText(strides[d]) + "'");
        if (!last) strides[d] = halved;
    }
    if (auto l = stridedPlacement(param.buffer, strides, annotationAt)) {
        k.tensorLayouts.push_back(*l);
        t->paramLayouts.push_back(*l);
    }
    k.params.push_back(param);
}

void InterpImpl::declareParam(ir::Kernel &k, Env &env, const std::string &name, const Value &a, const SourceRange &at,
                              const SourceRange &annotationAt) {
    if (a.is(VK::Poison)) throw EvalAbort{};
    if (a.is(VK::Opaque)) failOpaque(a, annotationAt);
    ir::Param param;
    param.loc = at;
    if (a.is(VK::TensorType)) {
        const TensorTypeObj &ty = a.as<TensorTypeObj>();
        param.kind = ir::Param::Tensor;
        if (ty.sub != SubByte::None) return declareSubByteParam(k, env, name, ty, at, annotationAt);
        param.buffer = ir::makeBuffer(name, ir::Scope::Global, ty.dtype, ty.shape, at);
        env.set(name, Value::ofBuffer(param.buffer));
        if (auto l = stridedPlacement(param.buffer, ty.strides, annotationAt)) {
            k.tensorLayouts.push_back(*l);
            if (TraceState *t = trace()) t->paramLayouts.push_back(*l);
        }
    } else if (isPointerAnnotation(a)) { // an address until T.make_tensor gives it a shape (TileLangPointers.cpp)
        param.kind = ir::Param::Scalar;
        param.var = ir::makeVar(name, DType::Int64, at);
        env.set(name, Value::ofExpr(param.var));
    } else if (a.is(VK::DType) && a.dtype != DType::Void) {
        param.kind = ir::Param::Scalar;
        param.var = ir::makeVar(name, a.dtype, at);
        env.set(name, Value::ofExpr(param.var));
    } else {
        fail(annotationAt, "the annotation of prim_func parameter '" + name +
                               "' must be T.Tensor(shape, dtype) or a scalar dtype such as T.int32, not a " + typeName(a.kind));
    }
    k.params.push_back(param);
}

Value InterpImpl::traceKernel(const Value &fn, const SourceRange &at, std::shared_ptr<Env> env,
                              std::shared_ptr<EagerTrace> eager, const std::function<void(ir::Kernel &)> &params) {
    auto &f = fn.as<FunctionObj>();
    const ast::Stmt &def = *f.def;
    if (!traces_.empty()) fail(at, "a @T.prim_func cannot be defined while another prim_func is traced");
    if ((int)frames_.size() > opts_.recursionLimit)
        fail(at, "recursion is too deep (more than " + std::to_string(opts_.recursionLimit) + " nested calls)");

    auto k = std::make_shared<ir::Kernel>();
    k->name = def.name;
    k->loc = def.range;
    k->funcLoc = def.range;
    k->threadIdx = ir::makeVar("tx", DType::Int32, def.range);
    static const char *axis[] = {"bx", "by", "bz"};
    for (int i = 0; i < 3; ++i) {
        k->grid[i] = ir::intImm(1);
        k->blockIdx[i] = ir::makeVar(axis[i], DType::Int32, def.range);
    }
    auto ts = std::make_unique<TraceState>();
    ts->kernel = k;
    ts->eager = eager;
    TraceState &t = *ts;

    int errors = diag_.errorCount();
    int64_t abandoned = abandoned_;
    Restore<std::shared_ptr<Env>> scope(env_, env);
    Restore<const ast::Stmt *> loop(curLoop_, nullptr);
    Restore<std::string> name(assignName_, "");
    frames_.emplace_back();
    traces_.push_back(std::move(ts));
    // The trace's diagnostics are held: a prim_func that fails is reported when it is exported, so that a
    // factory's other prim_func (the variant it does not return) cannot fail the file.
    struct Pop {
        InterpImpl &in;
        bool holding = true;
        ~Pop() {
            in.frames_.pop_back();
            in.traces_.pop_back();
            if (holding) // left by an exception (the step budget): nothing held may be lost
                for (auto &d : in.diag_.endHold()) in.diag_.report(d.severity, d.range, d.message);
        }
    } pop{*this};
    diag_.hold();

    params(*k);
    execBody(def.body);
    checkReturnedOutputs(t, eager != nullptr);
    finishParams(t);
    if (eager) finishEager(*t.kernel, t);
    for (size_t i = 0; i < t.kernel->params.size(); ++i) // the T.empty tensors: what TileLang's wrapper returns
        if (std::find(t.outputs.begin(), t.outputs.end(), t.kernel->params[i].buffer) != t.outputs.end())
            t.kernel->outputs.push_back(i);
    shareParams(t);
    // A statement abandoned without a new error used a value an earlier error made: the kernel is
    // incomplete, but saying it has no launch would be a misleading follow-on error.
    bool failed = diag_.errorCount() > errors || abandoned_ > abandoned;
    if (!failed && (!k->launchLoc.valid() || !k->body)) {
        diag_.error(def.range, "prim_func '" + def.name + "' has no 'with T.Kernel(...)' block, so it launches nothing");
        failed = true;
    }
    pop.holding = false;
    auto held = diag_.endHold();
    if (!failed) {
        for (auto &d : held) diag_.report(d.severity, d.range, d.message);
        if (!t.launches.empty()) { // k is the first launch
            k->laterLaunches.assign(t.launches.begin() + 1, t.launches.end());
            k->laterLaunches.push_back(t.kernel);
        }
        return Value::primFunc(k);
    }
    Value v = Value::primFunc(nullptr);
    v.obj = std::make_shared<std::vector<HeldDiagnostic>>(std::move(held));
    return v;
}

void InterpImpl::finishParams(TraceState &t) {
    ir::Kernel &k = *t.kernel; // the last launch: its parameters include every workspace
    std::stable_partition(k.params.begin(), k.params.end(), [](const ir::Param &p) { return p.argument(); });
    // The run-time sizes: the T.dynamic symbols of the tensors' shapes (a scalar parameter in a tensor's
    // shape is that parameter). A workspace's shape can only use sizes the arguments give.
    k.dynamicSymbols.clear();
    for (auto &p : k.params)
        if (p.kind == ir::Param::Tensor && p.argument()) {
            for (auto &d : p.buffer->shape) collectVars(d, k.dynamicSymbols);
            for (auto &l : t.paramLayouts) // a T.StridedTensor's run-time strides
                if (l.tensor == p.buffer) {
                    collectVars(l.shape[0], k.dynamicSymbols);
                    // a stride the span does not show (its dimension's extent is 1) still places elements
                    std::vector<ir::Var> placed;
                    for (auto &f : l.forward) collectVars(f, placed);
                    for (auto &v : placed)
                        if (std::find(l.vars.begin(), l.vars.end(), v) == l.vars.end()) collectVars(v, k.dynamicSymbols);
                }
        }
    auto isScalar = [&](const ir::Var &v) {
        for (auto &p : k.params)
            if (p.kind == ir::Param::Scalar && p.var == v) return true;
        return false;
    };
    std::erase_if(k.dynamicSymbols, isScalar);
    // an eager kernel's T.const that .compile(...) leaves out has its own error where it is declared
    auto isRuntimeConst = [&](const ir::Var &v) {
        if (!t.eager) return false;
        for (auto &c : t.eager->runtimeConsts)
            if (c.first == v) return true;
        return false;
    };
    // A grid extent reads only what the launch function has: the tensors' sizes and scalar parameters (a
    // T.dynamic used nowhere else has no value at run time; TileLang refuses it as an unbound variable).
    std::vector<ir::Kernel *> launches{&k};
    for (auto &l : t.launches) launches.push_back(l.get());
    for (ir::Kernel *l : launches) {
        std::vector<ir::Var> used;
        for (auto &g : l->grid) collectVars(g, used);
        for (auto &v : used)
            if (!isScalar(v) && !isRuntimeConst(v) &&
                std::find(k.dynamicSymbols.begin(), k.dynamicSymbols.end(), v) == k.dynamicSymbols.end()) {
                diag_.error(l->launchLoc, "the grid of T.Kernel uses '" + v->name + "', which is not a size of the prim_func's "
                                          "tensors or a scalar parameter, so the launch function has no value for it");
                break;
            }
    }
    // A T.make_tensor inside a launch: its shape and strides read the launch's own variables (block and loop
    // indices, the thread), the tensors' sizes and scalar parameters; a T.dynamic that no argument gives has
    // no value in the kernel (the C function would name an undeclared variable).
    for (ir::Kernel *l : launches) {
        std::set<const ir::VarNode *> bound = passes::loopVariablesIn(l->body);
        for (auto &b : l->blockIdx) bound.insert(b.get());
        if (l->threadIdx) bound.insert(l->threadIdx.get());
        for (auto &a : l->addressedTensors) {
            std::vector<ir::Var> used;
            for (auto &d : a.tensor->shape) collectVars(d, used);
            for (auto &layout : l->tensorLayouts) // its strides: the placement's outputs, less its own inputs
                if (layout.tensor == a.tensor) {
                    for (auto &f : layout.forward) collectVars(f, used);
                    for (auto &v : layout.vars) bound.insert(v.get());
                }
            for (auto &v : used)
                if (!bound.count(v.get()) && !isScalar(v) && !isRuntimeConst(v) &&
                    std::find(k.dynamicSymbols.begin(), k.dynamicSymbols.end(), v) == k.dynamicSymbols.end()) {
                    diag_.error(a.tensor->loc, "T.make_tensor's tensor '" + a.tensor->name + "' uses '" + v->name +
                                                   "' in its shape or strides, which is not a size of the prim_func's "
                                                   "tensors or a scalar parameter, so the kernel has no value for it");
                    break;
                }
        }
    }
    for (auto &p : k.params) {
        if (!p.workspace) continue;
        std::vector<ir::Var> used;
        for (auto &d : p.buffer->shape) collectVars(d, used);
        for (auto &v : used)
            if (!isScalar(v) && std::find(k.dynamicSymbols.begin(), k.dynamicSymbols.end(), v) == k.dynamicSymbols.end())
                diag_.error(p.loc, "the shape of workspace '" + p.buffer->name + "' uses '" + v->name +
                                       "', which is not a size of the prim_func's tensors or a scalar parameter");
    }
}

void InterpImpl::checkReturnedOutputs(const TraceState &t, bool eager) {
    const CallFrame &fr = frames_.back();
    if (t.outputs.empty() && (!eager || fr.ret.is(VK::None))) return;
    SourceRange at = fr.retAt.valid() ? fr.retAt : t.kernel->funcLoc;
    std::vector<Value> returned;
    if (fr.ret.is(VK::Tuple)) returned = fr.ret.elements();
    else if (!fr.ret.is(VK::None)) returned.push_back(fr.ret);
    std::vector<ir::Buffer> seen;
    for (auto v : returned) {
        if (v.is(VK::Poison)) return;
        if (v.is(VK::Buffer) && t.subByte.count(v.buffer.get())) v.buffer = t.views.at(v.buffer.get()); // its bytes
        if (!v.is(VK::Buffer) || std::find(t.outputs.begin(), t.outputs.end(), v.buffer) == t.outputs.end()) {
            diag_.error(at, "a kernel returns only the tensors it makes with T.empty, not a " +
                                std::string(v.is(VK::Buffer) ? "buffer '" + v.buffer->name + "'" : typeName(v.kind)));
            return;
        }
        seen.push_back(v.buffer);
    }
    for (auto &b : t.outputs)
        if (std::find(seen.begin(), seen.end(), b) == seen.end()) {
            diag_.error(at, "output tensor '" + b->name + "' (made with T.empty) must be returned: 'return " + b->name + "'");
            return;
        }
}

bool InterpImpl::reportIfFailed(Value &v) {
    if (!v.is(VK::PrimFunc) || v.kernel) return false;
    kernelErrorHeld_ = true;
    if (v.obj)
        for (auto &d : v.as<std::vector<HeldDiagnostic>>()) diag_.report(d.severity, d.range, d.message);
    v = Value::poison();
    return true;
}

} // namespace tilec::eval
