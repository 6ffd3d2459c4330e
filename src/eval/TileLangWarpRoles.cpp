/// \file
/// TileLang's explicit warp specialization: `with T.ws(group)` blocks (the code one warp group of 128 threads
/// runs) and the mbarrier operations between them (T.barrier_wait / T.mbarrier_wait_parity, T.barrier_arrive /
/// T.mbarrier_arrive). T.alloc_barrier is in TileLangAlloc.cpp, T.tma_copy in TileLangCopy.cpp; the lowering
/// of all of them is lowerWarpRoles (include/tilec/passes/LowerWarpRoles.h).
#include "eval/TileLang.h"

#include "tilec/LibraryCalls.h"

namespace tilec::eval::tl {

namespace lib = passes::lib;

ir::Expr barrierAddress(Interp &in, const Arg &a, const std::string &fname) {
    Operand op = operandArg(in, a, fname + " barrier");
    const ir::Buffer &b = op.buffer;
    if (b->scope != ir::Scope::Shared || b->dtype != DType::UInt64)
        in.fail(a.range, fname + " needs an mbarrier made by T.alloc_barrier; '" + b->name + "' is a " +
                             ir::toString(b->scope) + " " + std::string(b->dtype.name()) + " buffer");
    std::vector<ir::Expr> idx = op.mins;
    if (!op.origin && !op.whole)
        in.fail(a.range, fname + " takes one mbarrier (mbars[i]), not a slice of them");
    if (op.whole) {
        if (constInt(b->shape[0]) != std::optional<int64_t>(1))
            in.fail(a.range, "'" + b->name + "' holds " + exprText(b->shape[0]) + " mbarriers: name one, like " + b->name + "[0]");
        idx = {ir::intImm(0)};
    }
    for (auto &i : idx) i = ir::cast(DType::Int32, i, a.range);
    return passes::addressOf(b, idx);
}

namespace {

using ir::constInt;

Value warpGroupFrame(Interp &in, CallArgs &args) {
    keywords(in, args, "T.ws", {});
    TraceState *t = in.trace();
    if (!t || !t->inLaunch) in.fail(args.call, "T.ws is used inside 'with T.Kernel(...)'");
    if (args.pos.empty()) in.fail(args.call, "T.ws needs a warp group index");
    if (args.pos.size() > 1)
        in.fail(args.call, "T.ws with several warp groups (code that " + std::to_string(args.pos.size()) +
                               " warp groups run together) is not supported; write one T.ws block per warp group");
    int64_t g = constIntArg(in, args.pos[0], "warp group index");
    if (g < 0 || 128 * (g + 1) > t->kernel->threads)
        in.fail(args.pos[0].range, "warp group " + std::to_string(g) + " does not exist: the kernel's " +
                                       std::to_string(t->kernel->threads) + " threads make " +
                                       std::to_string(t->kernel->threads / 128) + " warp groups of 128");
    auto f = std::make_shared<FrameObj>();
    f->kind = FrameObj::WarpGroup;
    f->range = args.call;
    f->warpGroup = (int)g;
    return Value::object(VK::Frame, f);
}

Value barrierWait(Interp &in, CallArgs &args, const std::string &fname, const std::vector<std::string> &params) {
    auto a = bindArgs(in, args, fname, params);
    requireLaunch(in, args, fname);
    ir::Expr bar = barrierAddress(in, *a[0], fname);
    ir::Expr parity = ir::cast(DType::Int32, intExprArg(in, *a[1], "parity"), a[1]->range);
    in.emit(lib::stmt(lib::Fn::MbarrierWait, {bar, parity}, args.call));
    return Value::none();
}

Value barrierArrive(Interp &in, CallArgs &args, const std::string &fname, const std::vector<std::string> &params,
                    bool noinc = false) {
    auto a = bindArgs(in, args, fname, params);
    requireLaunch(in, args, fname);
    if (a.size() > 1 && a[1] && !a[1]->value.is(VK::None))
        in.fail(a[1]->range, fname + "(cta_id=...): arrivals on another CTA's barrier (clusters) are not supported");
    std::vector<ir::Expr> call{barrierAddress(in, *a[0], fname)};
    if (noinc) call.push_back(ir::intImm(1));
    in.emit(lib::stmt(lib::Fn::MbarrierArriveEach, std::move(call), args.call));
    return Value::none();
}

} // namespace

void addWarpRolePrimitives(Attrs &attrs) {
    def(attrs, "ws", warpGroupFrame);
    def(attrs, "barrier_wait", [](Interp &in, CallArgs &args) {
        return barrierWait(in, args, "T.barrier_wait", {"mbarrier", "parity"});
    });
    def(attrs, "mbarrier_wait_parity", [](Interp &in, CallArgs &args) {
        return barrierWait(in, args, "T.mbarrier_wait_parity", {"mbarrier", "parity"});
    });
    def(attrs, "barrier_arrive", [](Interp &in, CallArgs &args) {
        return barrierArrive(in, args, "T.barrier_arrive", {"mbarrier"});
    });
    // cp.async.mbarrier.arrive.noinc: each thread arrives once its earlier cp.async copies (T.ptx_cp_async,
    // T.async_copy) have landed, the arrival counted among those the barrier expects. The thread's arrival,
    // marked as this one: where asyncPtxCopies proves the thread's T.ptx_cp_async copies may stay in flight
    // until it, they complete there; elsewhere they completed when issued.
    def(attrs, "cp_async_barrier_noinc", [](Interp &in, CallArgs &args) {
        return barrierArrive(in, args, "T.cp_async_barrier_noinc", {"barrier"}, true);
    });
    def(attrs, "mbarrier_arrive", [](Interp &in, CallArgs &args) {
        return barrierArrive(in, args, "T.mbarrier_arrive", {"mbarrier", "cta_id?"});
    });
}

} // namespace tilec::eval::tl
