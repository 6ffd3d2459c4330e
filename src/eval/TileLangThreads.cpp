/// \file
/// TileLang's per-thread API: the launch's coordinates (T.get_block_binding, T.thread_binding), barriers
/// between the block's threads (T.sync_threads), reinterpreting a value's bits (T.reinterpret), TVM's
/// T.Cast spelling, T.index_to_coordinates, and the hints that do not change what a kernel computes
/// (T.assume, T.disable_warp_group_reg_alloc, T.device_assert).
#include "eval/TileLang.h"

#include "tilec/passes/LibraryCalls.h"

namespace tilec::eval::tl {

namespace {

namespace lib = passes::lib;

/// T.get_block_binding(dim=0): the block's index in grid dimension `dim` (bx, by, bz of the T.Kernel).
Value blockBinding(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.get_block_binding", {"dim?"});
    TraceState &t = requireLaunch(in, args, "T.get_block_binding");
    int64_t d = a[0] ? constIntArg(in, *a[0], "dim") : 0;
    if (d < 0 || d > 2)
        in.fail(a[0]->range, "dim=" + std::to_string(d) + " does not exist: a grid has dimensions 0, 1 and 2");
    return Value::ofExpr(t.kernel->blockIdx[(size_t)d]);
}

/// `tx = T.thread_binding(start, stop, thread="threadIdx.x")`: the thread's coordinate in that dimension of
/// its block, plus `start`. The block must have exactly `stop - start` threads in that dimension (threads=N
/// is one dimension; threads=(x, y, z) three), as TileLang binds the launch's thread variable.
Value threadBindingVar(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.thread_binding", {"start", "stop?", "thread?", "annotations?"});
    TraceState &t = requireLaunch(in, args, "T.thread_binding");
    int64_t start = 0, stop = 0;
    if (a[1] && !a[1]->value.is(VK::None)) {
        start = constIntArg(in, *a[0], "T.thread_binding start");
        stop = constIntArg(in, *a[1], "T.thread_binding stop");
    } else {
        stop = constIntArg(in, *a[0], "T.thread_binding extent");
    }
    if (!a[2]) in.fail(args.call, "T.thread_binding needs thread=\"threadIdx.x\" (or .y, .z)");
    std::string tag = in.toStr(*a[2], "thread");
    static const char *tags[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
    int d = -1;
    for (int i = 0; i < 3; ++i)
        if (tag == tags[i]) d = i;
    if (d < 0)
        in.fail(a[2]->range, "T.thread_binding binds a thread index (\"threadIdx.x\", \"threadIdx.y\" or "
                             "\"threadIdx.z\"), not '" + tag.substr(0, 40) + "'");
    std::vector<int> dims = t.threadDims;
    if (dims.empty()) dims = {t.kernel->threads};
    int64_t have = (size_t)d < dims.size() ? dims[(size_t)d] : 1;
    if (stop - start != have)
        in.fail(args.call, "T.thread_binding(" + std::to_string(start) + ", " + std::to_string(stop) + ", \"" + tag +
                               "\") needs " + std::to_string(stop - start) + " threads in that dimension, but the "
                               "block has " + std::to_string(have) + " (T.Kernel's threads=)");
    ir::Expr e = have == 1 ? ir::intImm(0) : threadCoordinate(t, d, args.call);
    if (start != 0) e = ir::binary(ir::BinaryOp::Add, e, constIndex(start), args.call);
    return Value::ofExpr(e);
}

/// T.sync_threads(): __syncthreads. T.sync_threads(id, count): the named barrier `id` (1 to 15) for `count`
/// threads, a multiple of the warp size (bar.sync id, count); every one of those threads must reach it.
Value syncThreads(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.sync_threads", {"barrier_id?", "arrive_count?"});
    TraceState &t = requireLaunch(in, args, "T.sync_threads");
    bool named = a[0] && !a[0]->value.is(VK::None);
    if (!named) {
        if (a[1] && !a[1]->value.is(VK::None))
            in.fail(a[1]->range, "T.sync_threads(arrive_count=...) needs a barrier_id");
        in.emit(lib::stmt(lib::Fn::Sync, {}, args.call));
        return Value::none();
    }
    int64_t id = constIntArg(in, *a[0], "barrier_id");
    if (id < 0 || id > 15) in.fail(a[0]->range, "barrier_id must be 0 to 15 (the hardware's named barriers), got " + std::to_string(id));
    int64_t count = a[1] && !a[1]->value.is(VK::None) ? constIntArg(in, *a[1], "arrive_count") : t.kernel->threads;
    if (count < 32 || count % 32 != 0 || count > t.kernel->threads)
        in.fail(a[1] ? a[1]->range : args.call, "arrive_count must be a multiple of 32 up to the block's " +
                                                    std::to_string(t.kernel->threads) + " threads, got " + std::to_string(count));
    if (id == 0 && count != t.kernel->threads)
        in.fail(a[0]->range, "barrier 0 is __syncthreads' (every thread of the block); a barrier of " +
                                 std::to_string(count) + " threads needs another id (1 to 15)");
    if (id == 0) in.emit(lib::stmt(lib::Fn::Sync, {}, args.call));
    else in.emit(lib::stmt(lib::Fn::NamedSync, {ir::intImm(id), ir::intImm(count)}, args.call));
    return Value::none();
}

} // namespace

/// T.reinterpret(value, dtype): the same bits read as another type of the same width (`T.reinterpret(x,
/// T.uint32)` of a float32 is its IEEE bits). dtype="handle" is the value T.attr's "reduce_scope" takes and
/// stays nothing (TileLangAllreduce.cpp).
Value reinterpretBits(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.reinterpret", {"value", "dtype"});
    if (a[1]->value.is(VK::Str) && a[1]->value.s == "handle") return Value::none();
    DType to = dtypeArg(in, *a[1]);
    const Value &v = a[0]->value;
    if (!isNumber(v) && !isScalarOperand(v))
        in.fail(a[0]->range, "T.reinterpret takes a number, got " + std::string(typeName(v.kind)));
    ir::Expr x = in.toExpr(*a[0], "value");
    if (isNumber(v) && !v.is(VK::Float)) x = ir::cast(to.isInt() ? to : DType(DType::Int32), x, a[0]->range);
    if (x->dtype.bits() != to.bits() || to.isBool() || x->dtype.isBool())
        in.fail(args.call, "T.reinterpret keeps the bits, so both types need the same width: " + std::string(x->dtype.name()) +
                               " has " + std::to_string(x->dtype.bits()) + ", " + std::string(to.name()) + " " +
                               std::to_string(to.bits()));
    if (x->dtype == to) return Value::ofExpr(x);
    return Value::ofExpr(ir::Call::make(to, "reinterpret", {x}, args.call));
}

namespace {

/// T.Cast(dtype, value): T.cast with TVM's argument order.
Value castTvm(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.Cast", {"dtype", "value"});
    DType t = dtypeArg(in, *a[0]);
    if (t == DType::Void) in.fail(a[0]->range, "cannot cast to void");
    const Value &v = a[1]->value;
    if (!isNumber(v) && !isScalarOperand(v))
        in.fail(a[1]->range, "T.Cast takes a number, got " + std::string(typeName(v.kind)));
    return Value::ofExpr(ir::cast(t, in.toExpr(*a[1], "value"), args.call));
}

/// T.index_to_coordinates(index, shape): the row-major coordinates of a flat index (last dimension fastest).
Value indexToCoordinates(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.index_to_coordinates", {"index", "shape"});
    auto dims = in.toSequence(*a[1], "shape");
    if (dims.empty()) in.fail(a[1]->range, "T.index_to_coordinates needs a shape of at least one dimension");
    ir::Expr rest = intExprArg(in, *a[0], "index");
    std::vector<Value> out(dims.size());
    for (size_t i = dims.size(); i-- > 0;) {
        ir::Expr d = intExprArg(in, dims[i], "shape dimension");
        out[i] = Value::ofExpr(i == 0 ? rest : ir::simplify(ir::binary(ir::BinaryOp::FloorMod, rest, d, args.call)));
        if (i > 0) rest = ir::simplify(ir::binary(ir::BinaryOp::FloorDiv, rest, d, args.call));
    }
    return Value::list(std::move(out));
}

/// T.assume(cond): a fact for TVM's analysis; nothing to run.
Value assume(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.assume", {"cond?"});
    if (a[0] && !isNumber(a[0]->value) && !isScalarOperand(a[0]->value))
        in.fail(a[0]->range, "T.assume takes a condition, got " + std::string(typeName(a[0]->value.kind)));
    return Value::none();
}

/// T.device_assert(cond, msg): TileLang prints and traps; tilec's kernels never print or exit, so the check is
/// not made at run time (a warning says so). A condition false at compile time is an error here.
Value deviceAssert(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.device_assert", {"condition", "msg?", "no_stack_info?"});
    requireLaunch(in, args, "T.device_assert");
    const Value &c = a[0]->value;
    if (!isNumber(c) && !isScalarOperand(c))
        in.fail(a[0]->range, "T.device_assert takes a condition, got " + std::string(typeName(c.kind)));
    if (auto k = ir::constInt(in.toExpr(*a[0], "condition")); k && *k == 0)
        in.fail(a[0]->range, "T.device_assert's condition is false" +
                                 (a[1] && a[1]->value.is(VK::Str) ? ": " + a[1]->value.s.substr(0, 120) : std::string()));
    in.warn(args.call, "T.device_assert is not checked at run time: tilec's kernels never print or trap");
    return Value::none();
}

} // namespace

void addThreadPrimitives(Attrs &attrs) {
    def(attrs, "get_block_binding", blockBinding);
    def(attrs, "thread_binding", threadBindingVar);
    def(attrs, "sync_threads", syncThreads);
    def(attrs, "reinterpret", reinterpretBits);
    def(attrs, "Cast", castTvm);
    def(attrs, "index_to_coordinates", indexToCoordinates);
    def(attrs, "assume", assume);
    def(attrs, "device_assert", deviceAssert);
    // TileLang's hint against warp-specialized register reallocation (setmaxnreg), which tilec does not do.
    for (const char *n : {"disable_warp_group_reg_alloc", "no_set_max_nreg"})
        def(attrs, n, [n](Interp &in, CallArgs &args) {
            bindArgs(in, args, std::string("T.") + n, {});
            requireLaunch(in, args, std::string("T.") + n);
            return Value::none();
        });
}

} // namespace tilec::eval::tl
