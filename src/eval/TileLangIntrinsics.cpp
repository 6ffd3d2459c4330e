/// \file
/// TileLang's single-instruction helpers that tilec expresses in its own IR: T.dp4a (a four-way int8 dot
/// product accumulated into int32) and the register-count hints T.set_max_nreg / T.inc_max_nreg /
/// T.dec_max_nreg (setmaxnreg), emitted where the program makes them (keepMaxNreg decides which stay), and
/// T.annotate_producer_reg_dealloc / T.annotate_consumer_reg_alloc, which tilec checks and does not emit;
/// T.wait_wgmma and T.fence_proxy_async, which order TileLang's asynchronous wgmma (T.wgmma_gemm,
/// TileLangGemm.cpp) and which tilec's schedule of it has nothing left to order; and one thread's T.ptx_cp_async.
#include "eval/TileLang.h"

#include "lower/ProgramVectorized.h"
#include "tilec/LibraryCalls.h"

namespace tilec::eval::tl {

namespace {

/// One operand of T.dp4a: an element (its first of four) or a whole buffer (its first element), of `want`.
Operand dp4aOperand(Interp &in, const Arg &a, const char *what, DType want) {
    Operand op = operandArg(in, a, std::string("T.dp4a ") + what);
    if (!op.whole && !op.origin)
        in.fail(a.range, std::string("T.dp4a's ") + what + " is an element (its first of four), not a region");
    if (op.buffer->dtype != want)
        in.fail(a.range, std::string("T.dp4a's ") + what + " must be " + std::string(want.name()) + ", got '" + op.buffer->name +
                             "' of " + std::string(op.buffer->dtype.name()));
    return op;
}

/// Element `j` after an operand's first (along its last dimension, where TileLang's 32-bit load finds it).
ir::Expr lane(const Operand &op, int j, const SourceRange &at) {
    std::vector<ir::Expr> idx = op.mins;
    idx.back() = ir::binary(ir::BinaryOp::Add, idx.back(), ir::intImm(j), at);
    return ir::cast(DType::Int32, ir::Load::make(op.buffer, idx, at), at);
}

/// T.dp4a(A, B, C): C[0] += A[0]*B[0] + ... + A[3]*B[3], the int8 elements from A's and B's given element on
/// (TileLang's DP4A reads each as one 32-bit word, __dp4a), C an int32 element. The four elements must lie in
/// the operand's last dimension (a located error when its extent is known and they do not).
Value dp4a(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.dp4a", {"A", "B", "C"});
    requireLaunch(in, args, "T.dp4a");
    Operand x = dp4aOperand(in, *a[0], "A", DType::Int8), y = dp4aOperand(in, *a[1], "B", DType::Int8);
    Operand c = dp4aOperand(in, *a[2], "C", DType::Int32);
    for (const Operand *op : {&x, &y}) {
        auto last = ir::constInt(op->buffer->shape.back()), at = ir::constInt(op->mins.back());
        if (last && at && *at + 4 > *last)
            in.fail(op->range, "T.dp4a reads four elements of '" + op->buffer->name + "' from index " + std::to_string(*at) +
                                   " of its last dimension, which has " + std::to_string(*last));
    }
    ir::Expr sum = ir::Load::make(c.buffer, c.mins, args.call);
    for (int j = 0; j < 4; ++j)
        sum = ir::binary(ir::BinaryOp::Add, sum,
                         ir::binary(ir::BinaryOp::Mul, lane(x, j, args.call), lane(y, j, args.call), args.call), args.call);
    in.emit(ir::Store::make(c.buffer, c.mins, sum, args.call));
    return Value::none();
}

/// T.set_max_nreg(reg_count, is_inc): setmaxnreg, which moves registers between the warp groups of a
/// warp-specialized kernel. It changes how many registers a warp may use, never what it computes. The operands
/// are checked as PTX constrains them (24 to 256, a multiple of 8; is_inc 0 or 1); with `emit` the call becomes a
/// statement where the program makes it (tilec.setmaxnreg_inc / _dec), which keepMaxNreg keeps where every
/// thread of each warp group reaching it executes it and the counts fit the register file (else drops, -v says why).
void maxNreg(Interp &in, CallArgs &args, const Arg &count, std::optional<int64_t> inc, const Arg *incArg,
             const std::string &fname, bool emit) {
    requireLaunch(in, args, fname);
    int64_t n = constIntArg(in, count, "reg_count");
    if (n < 24 || n > 256 || n % 8)
        in.fail(count.range, fname + "'s register count must be a multiple of 8 from 24 to 256, got " + std::to_string(n));
    if (incArg) inc = constIntArg(in, *incArg, "is_inc");
    if (*inc != 0 && *inc != 1)
        in.fail(incArg->range, fname + "'s is_inc is 1 (increase) or 0 (decrease), got " + std::to_string(*inc));
    using passes::lib::Fn;
    if (emit) in.emit(passes::lib::stmt(*inc ? Fn::MaxNregInc : Fn::MaxNregDec, {ir::intImm(n)}, args.call));
}

/// T.wait_wgmma(n): wait until at most n of the warp group's T.wgmma_gemm products are in flight: wgmma.wait_group
/// n, which honourProgramWaits keeps (or drops where no product can be in flight).
Value waitWgmma(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.wait_wgmma", {"id"});
    requireLaunch(in, args, "T.wait_wgmma");
    int64_t n = constIntArg(in, *a[0], "id");
    if (n < 0 || n > 7)
        in.fail(a[0]->range, "T.wait_wgmma takes the number of wgmma groups left in flight, 0 to 7 (wgmma.wait_group); got " +
                                 std::to_string(n));
    in.emit(passes::lib::stmt(passes::lib::Fn::WgmmaWait, {ir::intImm(n)}, args.call));
    return Value::none();
}

/// T.fence_proxy_async(): orders the thread's generic-proxy writes of shared memory before later async-proxy
/// reads (wgmma, TMA). tilec places that fence itself before every wgmma or TMA store that reads shared memory
/// written by the threads (placeWgmmaWaits, stageEpilogue), so the program's own adds no order: nothing is emitted.
Value fenceProxyAsync(Interp &in, CallArgs &args) {
    bindArgs(in, args, "T.fence_proxy_async", {});
    requireLaunch(in, args, "T.fence_proxy_async");
    return Value::none();
}

/// The element a T.access_ptr argument points at (its AddressOf), in `scope`.
const ir::Load &pointee(Interp &in, const Arg &a, const char *what, ir::Scope scope) {
    ir::Expr e = in.toExpr(a, what);
    auto c = ir::as<ir::Call>(e);
    auto l = c && passes::lib::is(e, passes::lib::Fn::AddressOf) ? ir::as<ir::Load>(c->args[0]) : nullptr;
    if (!l) in.fail(a.range, std::string("T.ptx_cp_async's ") + what + " is a T.access_ptr of a buffer element");
    if (l->buffer->scope != scope)
        in.fail(a.range, std::string("T.ptx_cp_async's ") + what + " must be in " + ir::toString(scope) + " memory; '" +
                             l->buffer->name + "' is " + ir::toString(l->buffer->scope));
    return *l;
}

/// T.ptx_cp_async(dst, src, num_elems, predicate=None): one thread's cp.async of num_elems contiguous elements
/// (4, 8 or 16 bytes) from a global element to a shared one, both T.access_ptr; with a predicate that is false
/// the destination is zero-filled and the source not read. Like T.async_copy it is lowered as the copy it makes,
/// complete when the next statement starts (the schedule in which its group finished at once): one unrolled
/// loop of element stores along the last dimension, which must hold them, marked kPtxCpAsync (ProgramVectorized.h;
/// not a tile statement, so it may run in a branch of some threads): asyncPtxCopies makes it one cp.async where
/// the thread's program proves that safe, else vectorizeAccesses one vector load and one vector store where the
/// addresses allow.
Value ptxCpAsync(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.ptx_cp_async", {"dst_access_ptr", "src_access_ptr", "num_elems", "predicate?"});
    requireLaunch(in, args, "T.ptx_cp_async");
    const ir::Load &d = pointee(in, *a[0], "destination", ir::Scope::Shared);
    const ir::Load &s = pointee(in, *a[1], "source", ir::Scope::Global);
    if (d.buffer->dtype != s.buffer->dtype)
        in.fail(args.call, "T.ptx_cp_async copies '" + s.buffer->name + "' of " + std::string(s.buffer->dtype.name()) + " into '" +
                               d.buffer->name + "' of " + std::string(d.buffer->dtype.name()) + ": the types must agree");
    int64_t n = constIntArg(in, *a[2], "num_elems"), bytes = n * (int64_t)d.buffer->dtype.bytes();
    if (n <= 0 || (bytes != 4 && bytes != 8 && bytes != 16))
        in.fail(a[2]->range, "T.ptx_cp_async copies 4, 8 or 16 bytes (cp.async); " + std::to_string(n) + " elements of " +
                                 std::string(d.buffer->dtype.name()) + " are " + std::to_string(bytes));
    for (const ir::Load *l : {&d, &s}) {
        auto last = ir::constInt(l->buffer->shape.back()), at = ir::constInt(l->indices.back());
        if (last && at && *at + n > *last)
            in.fail(args.call, "T.ptx_cp_async copies " + std::to_string(n) + " elements of '" + l->buffer->name + "' from index " +
                                   std::to_string(*at) + " of its last dimension, which has " + std::to_string(*last));
    }
    ir::Var e = ir::makeVar("e", DType::Int32, args.call);
    auto at = [&](const ir::Load &l) {
        std::vector<ir::Expr> idx = l.indices;
        idx.back() = ir::simplify(ir::binary(ir::BinaryOp::Add, idx.back(), e, args.call));
        return idx;
    };
    auto lanes = [&](ir::Expr value) {
        ir::Stmt st = ir::Store::make(d.buffer, at(d), std::move(value), args.call);
        return ir::For::make(e, ir::intImm(0), ir::intImm(n), ir::ForKind::Unrolled, passes::kPtxCpAsync, st, args.call);
    };
    ir::Stmt body = lanes(ir::Load::make(s.buffer, at(s), args.call));
    if (a[3] && !a[3]->value.is(VK::None))
        body = ir::IfThenElse::make(in.toExpr(*a[3], "predicate"), body, lanes(ir::cast(d.buffer->dtype, ir::intImm(0), args.call)),
                                    args.call);
    in.emit(body);
    return Value::none();
}

} // namespace

void addIntrinsicPrimitives(Attrs &attrs) {
    def(attrs, "ptx_cp_async", ptxCpAsync);
    def(attrs, "wait_wgmma", waitWgmma);
    def(attrs, "fence_proxy_async", fenceProxyAsync);
    // TileLang's hints for the register counts its automatic warp specialization gives the producer (decrease,
    // default 24) and the consumers (increase, default 240): setmaxnreg operands, checked as T.set_max_nreg's.
    for (auto [name, inc] : {std::pair{"annotate_producer_reg_dealloc", 0}, std::pair{"annotate_consumer_reg_alloc", 1}}) {
        std::string full = std::string("T.") + name;
        int64_t i = inc;
        def(attrs, name, [full, i](Interp &in, CallArgs &args) {
            auto a = bindArgs(in, args, full, {"reg_count?"});
            if (a[0]) maxNreg(in, args, *a[0], i, nullptr, full, false);
            else requireLaunch(in, args, full);
            return Value::none();
        });
    }
    def(attrs, "dp4a", dp4a);
    def(attrs, "set_max_nreg", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.set_max_nreg", {"reg_count", "is_inc"});
        maxNreg(in, args, *a[0], std::nullopt, &*a[1], "T.set_max_nreg", true);
        return Value::none();
    });
    for (auto [name, inc] : {std::pair{"inc_max_nreg", 1}, std::pair{"dec_max_nreg", 0}}) {
        std::string full = std::string("T.") + name;
        int64_t i = inc;
        def(attrs, name, [full, i](Interp &in, CallArgs &args) {
            auto a = bindArgs(in, args, full, {"reg_count"});
            maxNreg(in, args, *a[0], i, nullptr, full, true);
            return Value::none();
        });
    }
}

} // namespace tilec::eval::tl
