/// \file
/// `T.Layout(shape, forward_fn)`, `T.Fragment(shape, forward_fn=...)` and `T.annotate_layout({buffer: layout})`:
/// index maps a kernel gives its buffers. A layout on a global tensor moves where its elements live
/// (ir::TensorLayout, applied by flattenBuffers); on shared buffers and fragments layouts are hints.
#include "eval/TileLang.h"

#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"

namespace tilec::eval::tl {

namespace {

/// The variables an expression reads (a layout's outputs may read its inputs only).
struct VarsRead : ir::IRVisitor {
    using ir::IRVisitor::visit;
    std::vector<const ir::VarNode *> vars;
    bool loads = false;
    void visit(const ir::VarNode &v) override { vars.push_back(&v); }
    void visit(const ir::Load &) override { loads = true; }
};

/// `T.Layout(shape, lambda i, j, ...: [e0, e1, ...])`: the function is traced once with one fresh variable per
/// dimension; it returns the output indices (a sequence, or one index).
Value makeLayout(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.Layout", {"shape", "forward_fn"});
    auto obj = std::make_shared<LayoutObj>();
    obj->range = args.call;
    CallArgs call;
    call.call = args.call;
    call.callee = a[1]->range;
    std::vector<Arg> dims = in.toSequence(*a[0], "T.Layout's shape");
    if (dims.empty()) in.fail(a[0]->range, "T.Layout needs a shape of at least one dimension");
    for (size_t d = 0; d < dims.size(); ++d) {
        obj->shape.push_back(intExprArg(in, dims[d], "dimension " + std::to_string(d) + " of T.Layout's shape"));
        obj->vars.push_back(ir::makeVar("i" + std::to_string(d), DType::Int32, args.call));
        call.pos.push_back({Value::ofExpr(obj->vars.back()), a[0]->range});
    }
    Value out = in.callValue(a[1]->value, call);
    if (out.is(VK::Poison)) return out;
    Arg result{out, a[1]->range};
    std::vector<Arg> idx = out.is(VK::Tuple) || out.is(VK::List) ? in.toSequence(result, "T.Layout's output") : std::vector<Arg>{result};
    if (idx.empty()) in.fail(a[1]->range, "T.Layout's function returns no index");
    for (size_t d = 0; d < idx.size(); ++d) {
        ir::Expr e = intExprArg(in, idx[d], "output index " + std::to_string(d) + " of T.Layout");
        VarsRead r;
        r.visit(e);
        for (auto *v : r.vars)
            if (std::none_of(obj->vars.begin(), obj->vars.end(), [&](const ir::Var &x) { return x.get() == v; }))
                in.fail(a[1]->range, "T.Layout's output index " + std::to_string(d) + " reads '" + v->name +
                                         "': a layout's indices may depend on its inputs and constants only");
        if (r.loads) in.fail(a[1]->range, "T.Layout's output index " + std::to_string(d) + " reads memory");
        obj->forward.push_back(ir::simplify(e));
    }
    return Value::object(VK::Layout, obj);
}

/// `T.Fragment(shape, forward_fn=None, forward_thread_fn=None, replicate=1, forward_index_fn=None)`: which
/// thread holds which element of a fragment. tilec lays fragments out itself from their uses, and a fragment's
/// layout never changes what the kernel computes, so only the shape is kept (T.annotate_layout checks it).
Value makeFragment(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.Fragment", {"shape", "forward_fn?", "forward_thread_fn?", "replicate?", "forward_index_fn?"});
    if (!a[1] && !a[2])
        in.fail(args.call, "T.Fragment needs forward_fn (or forward_thread_fn): which thread holds each element");
    if (a[3]) constIntArg(in, *a[3], "T.Fragment's replicate");
    auto obj = std::make_shared<LayoutObj>();
    obj->fragment = true;
    obj->range = args.call;
    if (a[1]) obj->forwardFn = a[1]->value;
    std::vector<Arg> dims = in.toSequence(*a[0], "T.Fragment's shape");
    if (dims.empty()) in.fail(a[0]->range, "T.Fragment needs a shape of at least one dimension");
    for (size_t d = 0; d < dims.size(); ++d)
        obj->shape.push_back(intExprArg(in, dims[d], "dimension " + std::to_string(d) + " of T.Fragment's shape"));
    return Value::object(VK::Layout, obj);
}

/// A layout given for buffer `b` must be for its shape.
void checkShape(Interp &in, const ir::Buffer &b, const LayoutObj &l, const SourceRange &at) {
    if (l.shape.size() != b->shape.size() || !ir::provablyEqual(l.shape, b->shape))
        in.fail(at, "T.annotate_layout: the " + std::string(l.fragment ? "T.Fragment" : "T.Layout") + " is for shape " +
                        tupleText(l.shape) + " but '" + b->name + "' has shape " + tupleText(b->shape));
}

/// The extent of one output dimension of `l` laid over `tensor`: the input's extent where the output is one
/// input variable, else one past the largest value over constant input extents (TileLang's output shape).
ir::Expr outputExtent(Interp &in, const LayoutObj &l, const ir::Buffer &tensor, size_t d) {
    const ir::Expr &e = l.forward[d];
    for (size_t j = 0; j < l.vars.size(); ++j)
        if (ir::structurallyEqual(e, l.vars[j])) return tensor->shape[j];
    passes::RangeMap ranges;
    for (size_t j = 0; j < l.vars.size(); ++j)
        if (auto n = ir::constInt(tensor->shape[j])) ranges[l.vars[j].get()] = passes::Interval::of(0, *n - 1);
    passes::Interval b = passes::boundsOf(e, ranges);
    if (!b.lo || !b.hi)
        in.fail(l.range, "T.Layout for '" + tensor->name + "': output index " + std::to_string(d) + " (" + exprText(e) +
                             ") has no bound tilec can compute (it depends on a run-time size); only whole input "
                             "dimensions may be run-time sizes");
    if (*b.lo < 0)
        in.fail(l.range, "T.Layout for '" + tensor->name + "': output index " + std::to_string(d) + " (" + exprText(e) +
                             ") can be negative (" + std::to_string(*b.lo) + ")");
    return *b.hi < INT32_MAX ? ir::intImm(*b.hi + 1) : ir::intImm(*b.hi + 1, DType::Int64);
}

/// Whether the outputs are the inputs in another order (a transposition: safe whatever the sizes).
bool permutesDimensions(const LayoutObj &l) {
    if (l.forward.size() != l.vars.size()) return false;
    std::vector<bool> seen(l.vars.size());
    for (auto &e : l.forward) {
        auto v = ir::as<ir::VarNode>(e);
        auto it = std::find_if(l.vars.begin(), l.vars.end(), [&](const ir::Var &x) { return v && x.get() == v; });
        if (it == l.vars.end() || seen[size_t(it - l.vars.begin())]) return false;
        seen[size_t(it - l.vars.begin())] = true;
    }
    return true;
}

/// A T.Layout on global tensor `b`: recorded on the kernel (a second one for the same tensor replaces the first,
/// as in TileLang); its output must stay inside the tensor's memory.
void annotateTensor(Interp &in, TraceState &t, const ir::Buffer &b, const LayoutObj &l, const SourceRange &at) {
    checkShape(in, b, l, at);
    ir::TensorLayout tl{b, l.vars, l.forward, {}, l.range};
    for (size_t d = 0; d < l.forward.size(); ++d) tl.shape.push_back(outputExtent(in, l, b, d));
    if (!permutesDimensions(l)) {
        int64_t out = 1, have = b->constElements();
        for (auto &e : tl.shape)
            if (__builtin_mul_overflow(out, *ir::constInt(e), &out)) out = INT64_MAX;
        if (have < 0)
            in.fail(l.range, "T.Layout for '" + b->name + "': a layout over a tensor of run-time size must only reorder "
                                 "its dimensions");
        if (out > have)
            in.fail(l.range, "T.Layout for '" + b->name + "' places elements past the tensor's end: its output shape " +
                                 tupleText(tl.shape) + " holds " + std::to_string(out) + " elements, '" + b->name +
                                 "' has " + std::to_string(have));
    }
    auto &layouts = t.kernel->tensorLayouts;
    layouts.erase(std::remove_if(layouts.begin(), layouts.end(), [&](const ir::TensorLayout &x) { return x.tensor == b; }),
                  layouts.end());
    layouts.push_back(std::move(tl));
}

/// Does `v` name one of the swizzles of shared memory tilec accepts as hints?
bool isSwizzle(const Value &v) {
    for (std::string tail : {"make_swizzled_layout(...)", "make_mma_swizzle_layout(...)"})
        if (v.is(VK::Opaque) && v.s.size() >= tail.size() && v.s.compare(v.s.size() - tail.size(), tail.size(), tail) == 0)
            return true;
    return false;
}

/// `T.annotate_layout({buf: layout, ...})`. A T.Layout on a global tensor places its elements (above): the
/// tensor's memory is the kernel's interface. Inside the block a layout changes where elements live, never what
/// the kernel computes, and every access goes through tilec's own placement, so the others are hints: a
/// T.Layout or a swizzle (tilelang.layout.make_swizzled_layout, tilelang.intrinsics.make_mma_swizzle_layout) of a
/// shared buffer (tilec picks its own swizzle, SwizzleShared.cpp), a T.Fragment or T.Layout of a fragment (tilec
/// lays fragments out from their uses, InferLayouts.cpp). Anything else is an error.
Value annotateLayout(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.annotate_layout", {"layout_map"});
    TraceState &t = requireLaunch(in, args, "T.annotate_layout");
    const Value &m = a[0]->value;
    if (!m.is(VK::Dict)) in.fail(a[0]->range, "T.annotate_layout takes a dict {buffer: layout}");
    for (auto &[k, v] : m.as<DictObj>().items) {
        const ir::Scope scope = k.is(VK::Buffer) ? k.buffer->scope : ir::Scope::Var;
        const LayoutObj *l = v.is(VK::Layout) ? &v.as<LayoutObj>() : nullptr;
        if (scope == ir::Scope::Global && l && !l->fragment) {
            annotateTensor(in, t, k.buffer, *l, a[0]->range);
            continue;
        }
        if ((scope == ir::Scope::Shared && l && !l->fragment) || (scope == ir::Scope::Fragment && l)) {
            checkShape(in, k.buffer, *l, a[0]->range);
            continue;
        }
        if (scope == ir::Scope::Shared && isSwizzle(v)) continue;
        in.fail(a[0]->range, "T.annotate_layout: only a T.Layout of a global tensor or shared buffer, a T.Fragment or "
                             "T.Layout of a fragment, and tilelang.layout.make_swizzled_layout(buffer) or "
                             "tilelang.intrinsics.make_mma_swizzle_layout(buffer) of a shared buffer are supported");
    }
    return Value::none();
}

} // namespace

void addLayoutPrimitives(Attrs &attrs) {
    def(attrs, "Fragment", makeFragment);
    def(attrs, "Layout", makeLayout);
    def(attrs, "annotate_layout", annotateLayout);
}

} // namespace tilec::eval::tl
