/// \file
/// TileLang's single-instruction helpers that tilec expresses in its own IR: T.dp4a (a four-way int8 dot
/// product accumulated into int32) and the register-count hints T.set_max_nreg / T.inc_max_nreg /
/// T.dec_max_nreg (setmaxnreg), which tilec checks and does not emit.
#include "eval/TileLang.h"

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
/// warp-specialized kernel. It changes how many registers a warp may use, never what it computes, and tilec
/// does not reallocate registers, so it checks the operands as PTX constrains them (24 to 256, a multiple of 8;
/// is_inc 0 or 1) and emits nothing.
void maxNreg(Interp &in, CallArgs &args, const Arg &count, std::optional<int64_t> inc, const Arg *incArg,
             const std::string &fname) {
    requireLaunch(in, args, fname);
    int64_t n = constIntArg(in, count, "reg_count");
    if (n < 24 || n > 256 || n % 8)
        in.fail(count.range, fname + "'s register count must be a multiple of 8 from 24 to 256, got " + std::to_string(n));
    if (incArg) inc = constIntArg(in, *incArg, "is_inc");
    if (*inc != 0 && *inc != 1)
        in.fail(incArg->range, fname + "'s is_inc is 1 (increase) or 0 (decrease), got " + std::to_string(*inc));
}

} // namespace

void addIntrinsicPrimitives(Attrs &attrs) {
    def(attrs, "dp4a", dp4a);
    def(attrs, "set_max_nreg", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.set_max_nreg", {"reg_count", "is_inc"});
        maxNreg(in, args, *a[0], std::nullopt, &*a[1], "T.set_max_nreg");
        return Value::none();
    });
    for (auto [name, inc] : {std::pair{"inc_max_nreg", 1}, std::pair{"dec_max_nreg", 0}}) {
        std::string full = std::string("T.") + name;
        int64_t i = inc;
        def(attrs, name, [full, i](Interp &in, CallArgs &args) {
            auto a = bindArgs(in, args, full, {"reg_count"});
            maxNreg(in, args, *a[0], i, nullptr, full);
            return Value::none();
        });
    }
}

} // namespace tilec::eval::tl
