/// \file
/// TileLang's per-thread and warp-level API: the launch's coordinates (T.get_block_binding, T.thread_binding,
/// T.get_lane_idx, T.get_warp_idx), barriers (T.sync_threads, T.sync_warp), warp shuffles and reductions
/// (T.shfl_xor / shfl_down / shfl_up / shfl_sync, T.warp_reduce_*), T.thread_return, reinterpreting a value's
/// bits (T.reinterpret), TVM's T.Cast spelling, T.index_to_coordinates, and the hints that do not change what a
/// kernel computes (T.assume, T.disable_warp_group_reg_alloc, T.device_assert).
#include "eval/TileLang.h"
#include "eval/TileLangRandom.h"

#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"

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
    return Value::ofExpr(t.blockCoords[d] ? t.blockCoords[d] : t.kernel->blockIdx[(size_t)d]);
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
/// stays nothing (TileLangAllreduce.cpp). TileLang still takes the old order, T.reinterpret(dtype, value) (sglang's
/// DeepSeek-V4 FP8 attention): a dtype first and a value second are swapped, as it swaps them.
Value reinterpretBits(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.reinterpret", {"value", "dtype"});
    auto isDType = [](const Value &v) { return v.is(VK::DType) || (v.is(VK::Str) && DType::parse(v.s)); };
    if (isDType(a[0]->value) && !isDType(a[1]->value)) std::swap(a[0], a[1]);
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

/// The thread's index in the block, all dimensions together (x fastest).
ir::Expr linearThread(TraceState &t, const SourceRange &at) {
    (void)threadCoordinate(t, 0, at); // makes the kernel's thread index
    return t.kernel->threadIdx;
}

int64_t warpSizeArg(Interp &in, const std::optional<Arg> &a) {
    if (!a || a->value.is(VK::None)) return 32;
    int64_t w = constIntArg(in, *a, "warp_size");
    if (w != 32) in.fail(a->range, "warp_size must be 32 on CUDA, got " + std::to_string(w));
    return w;
}

/// T.get_lane_idx() / T.get_warp_idx() (and _sync) / T.get_warp_group_idx(): the lane in the warp, the warp and
/// the warp group (of `warps_per_group`, 4 by default) of the thread.
Value warpCoordinate(Interp &in, CallArgs &args, const std::string &fname, int which) {
    auto a = which == 2 ? bindArgs(in, args, fname, {"warp_size?", "warps_per_group?"}) : bindArgs(in, args, fname, {"warp_size?"});
    TraceState &t = requireLaunch(in, args, fname);
    int64_t w = warpSizeArg(in, a[0]);
    if (which == 2 && a[1] && !a[1]->value.is(VK::None)) w *= std::max<int64_t>(1, constIntArg(in, *a[1], "warps_per_group"));
    else if (which == 2) w *= 4;
    ir::Expr tx = linearThread(t, args.call);
    return Value::ofExpr(ir::binary(which == 0 ? ir::BinaryOp::FloorMod : ir::BinaryOp::FloorDiv, tx, constIndex(w), args.call));
}

/// A value a warp shuffle can move: 32- and 64-bit numbers, float16 and bfloat16.
ir::Expr shuffled(Interp &in, const Arg &a, const std::string &fname) {
    if (!isNumber(a.value) && !isScalarOperand(a.value))
        in.fail(a.range, fname + " shuffles a number, got " + std::string(typeName(a.value.kind)));
    ir::Expr v = in.toExpr(a, "value");
    DType t = v->dtype;
    if (t.isBool() || t.isFloat8() || (t.isInt() && t.bits() < 32))
        in.fail(a.range, fname + " cannot shuffle a " + std::string(t.name()) + " value (32- and 64-bit numbers, float16 and bfloat16 only)");
    return v;
}

ir::Expr laneMask(Interp &in, const std::optional<Arg> &a) {
    if (!a || a->value.is(VK::None)) return ir::intImm(0xFFFFFFFFll, DType::Int64);
    int64_t m = constIntArg(in, *a, "mask");
    if (m < 0 || m > 0xFFFFFFFFll) in.fail(a->range, "the mask must be a 32-bit lane mask");
    return ir::intImm(m, DType::Int64);
}

ir::Expr shuffleWidth(Interp &in, const std::optional<Arg> &a) {
    if (!a || a->value.is(VK::None)) return ir::intImm(32);
    int64_t w = constIntArg(in, *a, "width");
    if (w < 1 || w > 32 || (w & (w - 1))) in.fail(a->range, "width must be a power of two from 1 to 32, got " + std::to_string(w));
    return ir::intImm(w);
}

/// T.shfl_xor / shfl_down / shfl_up(value, delta, width=32, mask=all lanes), T.shfl_sync(value, src_lane, ...):
/// CUDA's __shfl_*_sync; every lane of mask must execute it.
Value shuffle(Interp &in, CallArgs &args, const std::string &fname, lib::Fn f) {
    auto a = bindArgs(in, args, fname, {"value", f == lib::Fn::Shfl ? "srcLane" : "delta", "width?", "mask?"});
    requireLaunch(in, args, fname);
    ir::Expr v = shuffled(in, *a[0], fname), d = intExprArg(in, *a[1], f == lib::Fn::Shfl ? "source lane" : "delta");
    ir::Expr width = shuffleWidth(in, a[2]), mask = laneMask(in, a[3]);
    return Value::ofExpr(lib::call(f, {mask, v, d, width}, args.call, v->dtype));
}

/// T.warp_reduce_sum / max / min / bitand / bitor(value): the warp's 32 values combined, in every lane (a
/// butterfly of __shfl_xor_sync into a kernel variable of its own).
Value warpReduce(Interp &in, CallArgs &args, const std::string &fname, ir::BinaryOp op) {
    auto a = bindArgs(in, args, fname, {"value"});
    TraceState &t = requireLaunch(in, args, fname);
    ir::Expr v = shuffled(in, *a[0], fname);
    if ((op == ir::BinaryOp::BitAnd || op == ir::BinaryOp::BitOr) && !v->dtype.isInt())
        in.fail(a[0]->range, fname + " takes an integer, got a " + std::string(v->dtype.name()));
    ir::Buffer acc = ir::makeBuffer(uniqueBufferName(*t.kernel, "warp_red"), ir::Scope::Var, v->dtype, {ir::intImm(1)}, args.call);
    t.kernel->allocs.push_back(acc);
    const SourceRange &at = args.call;
    auto cur = [&] { return ir::Load::make(acc, {ir::intImm(0)}, at); };
    in.emit(ir::Store::make(acc, {ir::intImm(0)}, v, at));
    for (int delta = 16; delta >= 1; delta /= 2) {
        ir::Expr other = lib::call(lib::Fn::ShflXorSync, {ir::intImm(0xFFFFFFFFll, DType::Int64), cur(), ir::intImm(delta), ir::intImm(32)}, at, v->dtype);
        in.emit(ir::Store::make(acc, {ir::intImm(0)}, ir::binary(op, cur(), other, at), at));
    }
    return Value::ofExpr(cur());
}

/// T.import_source(source): C++ source (device functions) the kernel's T.call_extern calls; tilec emits it
/// verbatim, once, before the kernels. None imports nothing.
Value importSource(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.import_source", {"source?"});
    TraceState &t = requireLaunch(in, args, "T.import_source");
    if (!a[0] || a[0]->value.is(VK::None)) return Value::none();
    std::string src = in.toStr(*a[0], "source");
    auto &v = t.kernel->importedSources;
    if (std::find(v.begin(), v.end(), src) == v.end()) v.push_back(src);
    return Value::none();
}

/// T.call_extern(dtype, func_name, *args) (or dtype=... after them): a call of a C++ function, by name, with
/// run-time arguments (numbers, T.access_ptr pointers); a statement when its value is not used.
Value callExtern(Interp &in, CallArgs &args) {
    auto kw = keywords(in, args, "T.call_extern", {"dtype", "span"});
    requireLaunch(in, args, "T.call_extern");
    std::vector<Arg> pos = args.pos;
    std::optional<Arg> dt;
    if (auto it = kw.find("dtype"); it != kw.end()) dt = it->second;
    else if (!pos.empty()) dt = pos.front(), pos.erase(pos.begin());
    if (!dt || pos.empty()) in.fail(args.call, "T.call_extern takes a dtype and a function name, then the arguments");
    DType type = dt->value.is(VK::Str) && dt->value.s == "handle" ? DType(DType::Void) : dtypeArg(in, *dt);
    std::string name = in.toStr(pos[0], "function name");
    bool ident = !name.empty() && !isdigit((unsigned char)name[0]);
    for (char c : name) ident = ident && (isalnum((unsigned char)c) || c == '_' || c == ':');
    if (!ident) in.fail(pos[0].range, "T.call_extern needs a C++ function name, not '" + name.substr(0, 40) + "'");
    std::vector<ir::Expr> xs;
    for (size_t i = 1; i < pos.size(); ++i) {
        const Value &v = pos[i].value;
        if (!isNumber(v) && !isScalarOperand(v))
            in.fail(pos[i].range, "T.call_extern passes numbers and T.access_ptr pointers, not a " + std::string(typeName(v.kind)));
        xs.push_back(in.toExpr(pos[i], "argument"));
    }
    ir::Expr call = ir::Call::make(type, "extern:" + name, std::move(xs), args.call);
    if (type == DType::Void) {
        in.emit(ir::Evaluate::make(call, args.call));
        return Value::none();
    }
    return Value::ofExpr(call); // a statement of its own when discarded (InterpStmt), a variable when bound
}

/// T.access_ptr(base, access_type="r"): the address of a buffer's first element, or of an element / a region's
/// first element (for T.call_extern).
Value accessPtr(Interp &in, CallArgs &args) {
    auto kw = keywords(in, args, "T.access_ptr", {"offset", "extent", "ignore_last_ndim"});
    requireLaunch(in, args, "T.access_ptr");
    if (args.pos.empty()) in.fail(args.call, "T.access_ptr needs a buffer");
    if (auto it = kw.find("offset"); it != kw.end() && constOf(it->second.value) != std::optional<int64_t>(0))
        in.fail(it->second.range, "T.access_ptr with an offset is not supported; index the buffer instead (T.access_ptr(B[i]))");
    Operand op = operandArg(in, args.pos[0], "T.access_ptr base");
    std::vector<ir::Expr> idx = op.whole ? std::vector<ir::Expr>(op.buffer->shape.size(), ir::intImm(0)) : op.mins;
    return Value::ofExpr(passes::addressOf(op.buffer, idx));
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
    def(attrs, "import_source", importSource);
    def(attrs, "call_extern", callExtern);
    addRandomPrimitives(attrs); // TileLangRandom.cpp: rng_init, rng_rand, rng_rand_float
    def(attrs, "access_ptr", accessPtr);
    def(attrs, "get_lane_idx", [](Interp &in, CallArgs &args) { return warpCoordinate(in, args, "T.get_lane_idx", 0); });
    for (const char *n : {"get_warp_idx", "get_warp_idx_sync"})
        def(attrs, n, [n](Interp &in, CallArgs &args) { return warpCoordinate(in, args, std::string("T.") + n, 1); });
    def(attrs, "get_warp_group_idx", [](Interp &in, CallArgs &args) { return warpCoordinate(in, args, "T.get_warp_group_idx", 2); });
    for (auto [n, f] : {std::pair{"shfl_xor", lib::Fn::ShflXorSync}, std::pair{"shfl_down", lib::Fn::ShflDownSync},
                        std::pair{"shfl_up", lib::Fn::ShflUpSync}, std::pair{"shfl_sync", lib::Fn::Shfl}}) {
        std::string full = std::string("T.") + n;
        lib::Fn fn = f;
        def(attrs, n, [full, fn](Interp &in, CallArgs &args) { return shuffle(in, args, full, fn); });
    }
    for (auto [n, op] : {std::pair{"warp_reduce_sum", ir::BinaryOp::Add}, std::pair{"warp_reduce_max", ir::BinaryOp::Max},
                         std::pair{"warp_reduce_min", ir::BinaryOp::Min}, std::pair{"warp_reduce_bitand", ir::BinaryOp::BitAnd},
                         std::pair{"warp_reduce_bitor", ir::BinaryOp::BitOr}}) {
        std::string full = std::string("T.") + n;
        ir::BinaryOp o = op;
        def(attrs, n, [full, o](Interp &in, CallArgs &args) { return warpReduce(in, args, full, o); });
    }
    def(attrs, "sync_warp", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.sync_warp", {"mask?"});
        requireLaunch(in, args, "T.sync_warp");
        in.emit(lib::stmt(lib::Fn::SyncWarp, {laneMask(in, a[0])}, args.call));
        return Value::none();
    });
    // T.sync_grid(): every thread of every block waits for all the others (their memory operations before it are
    // visible after it). The launcher starts such a kernel cooperatively (all blocks resident at once, else the
    // launch fails with TILEC_ERROR_GRID_TOO_LARGE), so it must be reached by every thread: only at the top
    // level of the T.Kernel body, outside any loop or run-time if.
    def(attrs, "sync_grid", [](Interp &in, CallArgs &args) {
        bindArgs(in, args, "T.sync_grid", {});
        TraceState &t = requireLaunch(in, args, "T.sync_grid");
        if (t.blocks.size() != 1 || !t.loops.empty())
            in.fail(args.call, "T.sync_grid must be reached by every thread of every block: write it at the top level of "
                               "the T.Kernel body, outside loops and 'if's on run-time values");
        for (const ir::Stmt &before : t.blocks.front())
            if (ir::callsAny(before, {lib::Fn::ThreadReturn}))
                in.fail(args.call, "T.sync_grid after a T.thread_return: the threads that returned never reach the grid "
                                   "barrier, and the grid would wait for them forever");
        in.emit(lib::stmt(lib::Fn::GridSync, {}, args.call));
        return Value::none();
    });
    // T.thread_return(): the thread leaves the kernel; barriers after it are not reached by it (as in CUDA).
    def(attrs, "thread_return", [](Interp &in, CallArgs &args) {
        bindArgs(in, args, "T.thread_return", {});
        requireLaunch(in, args, "T.thread_return");
        in.emit(lib::stmt(lib::Fn::ThreadReturn, {}, args.call));
        return Value::none();
    });
    // TileLang's hint against warp-specialized register reallocation (setmaxnreg), which tilec does not do; and
    // programmatic dependent launch (griddepcontrol): T.pdl_sync waits for the grids this one depends on, and
    // T.pdl_trigger lets the next one start early. tilec's launchers never let a launch overlap the one before it
    // on the stream, so the wait has always happened and there is nothing to trigger.
    for (const char *n : {"disable_warp_group_reg_alloc", "no_set_max_nreg", "pdl_sync", "pdl_trigger"})
        def(attrs, n, [n](Interp &in, CallArgs &args) {
            bindArgs(in, args, std::string("T.") + n, {});
            requireLaunch(in, args, std::string("T.") + n);
            return Value::none();
        });
}

} // namespace tilec::eval::tl
