/// \file
/// TVM's cross-thread reduction as TileLang's gemv example spells it:
///
///     with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, "float32")]), "reduce_scope",
///                 T.reinterpret(T.uint64(0), dtype="handle")):
///         T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], tk, dtype="handle"))
///
/// Every thread's value is combined over the threads that differ only in the thread coordinates named at the
/// end (`tk = T.get_thread_binding(1)`), and every one of them gets the result in `red[0]` (a per-thread
/// element). tilec lowers it here into what the rest of the pipeline knows. Where a group is a run of 2 to 32
/// neighbouring lanes of one warp (the reduced coordinates are the lowest ones: the gemv's threads=(32, 4)
/// reducing coordinate 0), warp shuffles combine the values in registers (shuffleAllreduce). Otherwise each
/// thread stores its value into a shared scratch of one element per thread, a barrier, then each thread folds
/// its group's elements with the combiner, from the identity, in the order of the coordinates (insertSyncs adds
/// the barrier before the scratch is written again, in a loop).
///
/// T.attr takes "reduce_scope" (and "async_scope", whose body runs as written); T.reinterpret(..., dtype="handle") (TileLangThreads.cpp) makes the nothing
/// T.attr ignores; T.evaluate has
/// nothing left to do (primitives emit their statements when called, and a value alone has no effect).
#include "eval/TileLang.h"

#include "tilec/LibraryCalls.h"

#include <algorithm>

namespace tilec::eval::tl {

namespace {

const char *const kAllreduce = "T.tvm_thread_allreduce";

Value commReducer(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.comm_reducer", {"combiner", "identity_element"});
    const Value &f = a[0]->value;
    if (!f.is(VK::Function) && !f.is(VK::Builtin))
        in.fail(a[0]->range, "T.comm_reducer's combiner must be a function of two values (a lambda), got " +
                                 std::string(typeName(f.kind)));
    std::vector<Arg> ids = in.toSequence(*a[1], "identity");
    if (ids.size() != 1)
        in.fail(a[1]->range, "T.comm_reducer of " + std::to_string(ids.size()) +
                                 " values is not supported; tilec reduces one value (one identity element)");
    if (!isNumber(ids[0].value) && !isScalarOperand(ids[0].value))
        in.fail(ids[0].range, "T.comm_reducer's identity must be a number, got " + std::string(typeName(ids[0].value.kind)));
    auto r = std::make_shared<CommReducerObj>();
    r->combiner = f;
    r->identity = ids[0].value;
    r->range = args.call;
    return Value::object(VK::Reducer, std::shared_ptr<CommReducerObj>(r));
}

Value attr(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.attr", {"node", "attr_key", "value"});
    requireLaunch(in, args, "T.attr");
    std::string key = in.toStr(*a[1], "attribute key");
    auto f = std::make_shared<FrameObj>();
    f->kind = FrameObj::Attr;
    f->range = args.call;
    // TVM's "async_scope" lets its stores from global to shared memory become cp.async copies. The body runs as
    // written: its stores complete when issued, which every wait for them (T.cp_async_barrier_noinc, a wait
    // group) then finds done.
    if (key == "async_scope") return Value::object(VK::Frame, f);
    if (key != "reduce_scope")
        in.fail(a[1]->range, "T.attr(..., \"" + key.substr(0, 40) +
                                 "\", ...) is not supported; tilec knows TVM's \"reduce_scope\" around "
                                 "T.tvm_thread_allreduce and \"async_scope\" only");
    if (!a[0]->value.is(VK::Reducer))
        in.fail(a[0]->range, "the node of T.attr's \"reduce_scope\" must be a T.comm_reducer(...), got " +
                                 std::string(typeName(a[0]->value.kind)));
    f->reducer = std::static_pointer_cast<const CommReducerObj>(a[0]->value.obj);
    return Value::object(VK::Frame, f);
}

Value evaluate(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.evaluate", {"value"});
    requireLaunch(in, args, "T.evaluate");
    const Value &v = a[0]->value;
    if (!v.is(VK::None) && !isNumber(v) && !isScalarOperand(v))
        in.fail(a[0]->range, "T.evaluate takes a value or the result of a primitive such as T.tvm_thread_allreduce, "
                             "got " + std::string(typeName(v.kind)));
    return Value::none();
}

/// The thread-block dimension whose coordinate `a` is (T.get_thread_binding(d)), or a located error.
int threadDim(Interp &in, TraceState &t, const Arg &a) {
    if (isScalarOperand(a.value)) {
        ir::Expr e = in.toExpr(a, "thread coordinate");
        for (int d = 0; d < (int)std::max<size_t>(t.threadDims.size(), 1); ++d)
            if (ir::structurallyEqual(e, threadCoordinate(t, d, a.range))) return d;
    }
    in.fail(a.range, std::string(kAllreduce) + " reduces over thread coordinates: each must be a value of "
                                                "T.get_thread_binding(d), and this one is not");
}

/// The per-thread element the result goes to: `buf[i]` of a local buffer, or a T.alloc_var.
std::pair<ir::Buffer, std::vector<ir::Expr>> destination(Interp &in, const Arg &a) {
    const Value &v = a.value;
    if (v.is(VK::Buffer) && v.buffer->scope == ir::Scope::Var) return {v.buffer, {ir::intImm(0)}};
    if (v.is(VK::Access) && v.as<AccessObj>().isPoint()) {
        auto &acc = v.as<AccessObj>();
        if (acc.buffer->scope == ir::Scope::Local || acc.buffer->scope == ir::Scope::Var) {
            std::vector<ir::Expr> idx;
            for (auto &i : acc.indices) idx.push_back(i.min);
            return {acc.buffer, idx};
        }
        in.fail(a.range, std::string(kAllreduce) + " writes every thread's result to a per-thread element "
                                                    "(T.alloc_local or T.alloc_var), not to " +
                             ir::toString(acc.buffer->scope) + " buffer '" + acc.buffer->name + "'");
    }
    in.fail(a.range, std::string(kAllreduce) + "'s destination must be an element of a T.alloc_local buffer, got " +
                         std::string(typeName(v.kind)));
}

/// A scalar (number or run-time value) as an expression of type t.
ir::Expr scalarAs(Interp &in, const Arg &a, DType t, const char *what) {
    if (!isNumber(a.value) && !isScalarOperand(a.value))
        in.fail(a.range, std::string(what) + " must be a number, got " + typeName(a.value.kind));
    return ir::cast(t, in.toExpr(a, what), a.range);
}

/// The lanes of one group when the reduced coordinates are the lowest ones (0, 1, ..., in any order), so that a
/// group is a run of neighbouring threads, of 2 to 32 threads in all, a power of two (a run inside one warp),
/// in a block of whole warps, and the call is reached by every thread (no condition or loop of data around it,
/// only loops of constant bounds); else 0.
template <class Extent>
int64_t warpGroupLanes(const TraceState &t, std::vector<int> reduced, const Extent &extent) {
    std::sort(reduced.begin(), reduced.end());
    int64_t lanes = 1;
    for (size_t i = 0; i < reduced.size(); ++i) {
        if (reduced[i] != (int)i) return 0;
        lanes *= extent(reduced[i]);
    }
    if (lanes > 32 || (lanes & (lanes - 1)) != 0 || t.kernel->threads % 32 != 0) return 0;
    // Every open statement list but the launch's is a loop's body (an `if` opens one of its own).
    if (t.blocks.size() != t.loops.size() + 1) return 0;
    for (ir::ForKind k : t.loops)
        if (k == ir::ForKind::Parallel) return 0;
    return lanes;
}

/// The group's values combined by a butterfly of warp shuffles (__shfl_xor_sync over lane distances lanes/2,
/// ..., 1) in the destination itself: every thread of the group ends with the same value, with no shared
/// memory and no barrier (TileLang's own lowering of a reduction within a warp). The combination order is a
/// tree, not the coordinates' order: sums round differently from the scratch's fold, as TileLang's do.
Value shuffleAllreduce(Interp &in, const CommReducerObj &reducer, const ir::Buffer &dest,
                       const std::vector<ir::Expr> &destIdx, const ir::Expr &value, int64_t lanes, const SourceRange &at) {
    TraceState &t = *in.trace();
    in.emit(ir::Store::make(dest, destIdx, value, at));
    for (int64_t delta = lanes / 2; delta >= 1; delta /= 2) {
        size_t emitted = t.blocks.back().size();
        CallArgs call;
        call.call = at;
        call.callee = reducer.range;
        ir::Expr mine = ir::Load::make(dest, destIdx, at);
        call.pos.push_back({Value::ofExpr(mine), at});
        call.pos.push_back({Value::ofExpr(passes::lib::call(passes::lib::Fn::ShflXor, {mine, ir::intImm(delta)}, at, dest->dtype)), at});
        Value combined = in.callValue(reducer.combiner, call);
        if (combined.is(VK::Poison)) return combined;
        if (t.blocks.back().size() != emitted)
            in.fail(reducer.range, "T.comm_reducer's combiner must compute a value, not run kernel statements");
        in.emit(ir::Store::make(dest, destIdx, ir::cast(dest->dtype, in.toExpr(Arg{combined, reducer.range}, "the combiner's result"), at), at));
    }
    return Value::none();
}

Value threadAllreduce(Interp &in, CallArgs &args) {
    TraceState &t = requireLaunch(in, args, kAllreduce);
    auto kw = keywords(in, args, kAllreduce, {"dtype"});
    if (kw.count("dtype") && in.toStr(kw.at("dtype"), "dtype") != "handle")
        in.fail(kw.at("dtype").range, std::string(kAllreduce) + " is a statement: its dtype is \"handle\"");
    if (t.reduceScopes.empty())
        in.fail(args.call, std::string(kAllreduce) + " must be inside 'with T.attr(T.comm_reducer(...), "
                                                     "\"reduce_scope\", ...)', which gives its combiner");
    const CommReducerObj &reducer = *t.reduceScopes.back();
    auto &pos = args.pos;
    if (pos.empty() || constIntArg(in, pos[0], std::string(kAllreduce) + " size") != 1)
        in.fail(pos.empty() ? args.call : pos[0].range,
                std::string(kAllreduce) + " of more than one value is not supported (the size must be 1)");
    if (pos.size() < 5)
        in.fail(args.call, std::string(kAllreduce) + " takes (1, value, condition, destination, thread coordinates...)");
    if (!pos[2].value.is(VK::Bool) && !pos[2].value.is(VK::Int) && !pos[2].value.is(VK::Expr))
        in.fail(pos[2].range, std::string(kAllreduce) + "'s condition must be True");
    if (constOf(pos[2].value) != std::optional<int64_t>(1))
        in.fail(pos[2].range, std::string(kAllreduce) + " with a condition other than True is not supported; "
                                                        "every thread of the group takes part");
    auto [dest, destIdx] = destination(in, pos[3]);
    DType type = dest->dtype;
    ir::Expr value = scalarAs(in, pos[1], type, "the reduced value");
    if (!isNumber(pos[1].value) && in.toExpr(pos[1], "the reduced value")->dtype != type)
        in.fail(pos[1].range, std::string(kAllreduce) + " reduces a " +
                                  std::string(in.toExpr(pos[1], "the reduced value")->dtype.name()) + " value into a " +
                                  std::string(type.name()) + " destination; their types must be the same");
    // The group: the threads that differ from this one in the named coordinates only.
    int dims = (int)std::max<size_t>(t.threadDims.size(), 1);
    std::vector<int> reduced;
    for (size_t i = 4; i < pos.size(); ++i) {
        int d = threadDim(in, t, pos[i]);
        if (std::find(reduced.begin(), reduced.end(), d) != reduced.end())
            in.fail(pos[i].range, "thread coordinate " + std::to_string(d) + " is named twice");
        reduced.push_back(d);
    }
    ir::Kernel &k = *t.kernel;
    TILEC_ASSERT(k.threadIdx, "thread coordinates without the thread index");
    auto below = [&](int d) {
        int64_t n = 1;
        for (int i = 0; i < d; ++i) n *= t.threadDims[(size_t)i];
        return n;
    };
    auto extent = [&](int d) { return dims == 1 ? (int64_t)k.threads : (int64_t)t.threadDims[(size_t)d]; };
    SourceRange at = args.call;
    if (int64_t lanes = warpGroupLanes(t, reduced, extent); lanes > 1)
        return shuffleAllreduce(in, reducer, dest, destIdx, value, lanes, at);
    auto scratch = ir::makeBuffer(uniqueBufferName(k, "red_buf"), ir::Scope::Shared, type,
                                  {ir::intImm(k.threads)}, at);
    k.allocs.push_back(scratch);
    ir::Expr member = k.threadIdx;
    for (int d : reduced)
        member = ir::binary(ir::BinaryOp::Sub, member,
                            ir::binary(ir::BinaryOp::Mul, threadCoordinate(t, d, at), ir::intImm(below(d))));
    std::vector<ir::Var> vars;
    for (int d : reduced) {
        vars.push_back(ir::makeVar("red_k" + std::to_string(d), DType::Int32, at));
        member = ir::binary(ir::BinaryOp::Add, member, ir::binary(ir::BinaryOp::Mul, vars.back(), ir::intImm(below(d))));
    }
    in.emit(ir::Store::make(scratch, {k.threadIdx}, value, at));
    in.emit(passes::syncThreads(at));
    in.emit(ir::Store::make(dest, destIdx, scalarAs(in, Arg{reducer.identity, reducer.range}, type, "the identity"), at));
    // dest = combiner(dest, scratch[member]), traced once: it must compute a value and emit nothing.
    size_t emitted = t.blocks.back().size();
    CallArgs call;
    call.call = at;
    call.callee = reducer.range;
    call.pos.push_back({Value::ofExpr(ir::Load::make(dest, destIdx, at)), at});
    call.pos.push_back({Value::ofExpr(ir::Load::make(scratch, {ir::simplify(member)}, at)), at});
    Value combined = in.callValue(reducer.combiner, call);
    if (combined.is(VK::Poison)) return combined;
    if (t.blocks.back().size() != emitted)
        in.fail(reducer.range, "T.comm_reducer's combiner must compute a value, not run kernel statements");
    ir::Stmt body = ir::Store::make(dest, destIdx, scalarAs(in, Arg{combined, reducer.range}, type, "the combiner's result"), at);
    for (size_t i = reduced.size(); i-- > 0;)
        body = ir::For::make(vars[i], ir::intImm(0), ir::intImm(extent(reduced[i])), ir::ForKind::Unrolled, 0, body, at);
    in.emit(body);
    return Value::none();
}

} // namespace

void addAllreducePrimitives(Attrs &attrs) {
    def(attrs, "comm_reducer", commReducer);
    def(attrs, "attr", attr);
    def(attrs, "evaluate", evaluate);
    def(attrs, "tvm_thread_allreduce", threadAllreduce);
}

} // namespace tilec::eval::tl
