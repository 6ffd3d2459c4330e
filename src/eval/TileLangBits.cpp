/// \file
/// TVM's scalar operators as TileLang programs call them: as `T.*` (T.shift_left, T.bitwise_xor, T.Select,
/// T.truncmod, T.popcount, T.isfinite, T.log1p, T.copysign, ...) and as the raw TVM module `tvm.tir` / `tvm.tirx`
/// (`from tvm import tirx`: tirx.const, tirx.reinterpret, tirx.Select, tirx.Cast, tirx.Min, ...), which
/// TileLang's dequantization helpers use. Each builds the IR expression of the operation; on compile-time
/// integers the bitwise ones fold.
#include "eval/TileLang.h"

#include <cmath>

namespace tilec::eval::tl {

namespace {

using ir::BinaryOp;

/// A run-time or compile-time number argument as an expression; `fname` names the primitive in errors.
ir::Expr operand(Interp &in, const Arg &a, const std::string &fname) {
    if (!isNumber(a.value) && !isScalarOperand(a.value))
        in.fail(a.range, fname + " takes a number, got " + std::string(typeName(a.value.kind)));
    return in.toExpr(a, "operand");
}

ir::Expr intOperand(Interp &in, const Arg &a, const std::string &fname) {
    ir::Expr e = operand(in, a, fname);
    if (!e->dtype.isInt() && !e->dtype.isBool())
        in.fail(a.range, fname + " takes integers, got a " + std::string(e->dtype.name()));
    return e;
}

Value binaryPrim(Interp &in, CallArgs &args, const std::string &fname, BinaryOp op, bool ints) {
    auto a = bindArgs(in, args, fname, {"a", "b"});
    ir::Expr x = ints ? intOperand(in, *a[0], fname) : operand(in, *a[0], fname);
    ir::Expr y = ints ? intOperand(in, *a[1], fname) : operand(in, *a[1], fname);
    return Value::ofExpr(ir::simplify(ir::binary(op, x, y, args.call)));
}

/// T.truncmod(a, b): the remainder of C's truncating division (the sign of a); fmod for floats.
Value truncmod(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"a", "b"});
    ir::Expr x = operand(in, *a[0], fname), y = operand(in, *a[1], fname);
    if (x->dtype.isFloat() || y->dtype.isFloat()) {
        DType t = x->dtype.isFloat() ? x->dtype : y->dtype;
        return Value::ofExpr(ir::Call::make(t, "fmod", {ir::cast(t, x), ir::cast(t, y)}, args.call));
    }
    ir::Expr q = ir::binary(BinaryOp::Div, x, y, args.call);
    return Value::ofExpr(ir::simplify(ir::binary(BinaryOp::Sub, x, ir::binary(BinaryOp::Mul, q, y), args.call)));
}

/// A float function of one float (an integer operand becomes float32, as TVM does).
Value floatFn(Interp &in, CallArgs &args, const std::string &fname, const char *name, bool toBool) {
    auto a = bindArgs(in, args, fname, {"x"});
    ir::Expr x = operand(in, *a[0], fname);
    if (!x->dtype.isFloat()) {
        if (toBool) return Value::ofExpr(ir::boolImm(std::string(name) == "isfinite", args.call)); // integers are finite
        x = ir::cast(DType::Float32, x, a[0]->range);
    }
    return Value::ofExpr(ir::Call::make(toBool ? DType(DType::Bool) : x->dtype, name, {x}, args.call));
}

Value copysign(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"x", "y"});
    ir::Expr x = operand(in, *a[0], fname), y = operand(in, *a[1], fname);
    DType t = x->dtype.isFloat() ? x->dtype : y->dtype.isFloat() ? y->dtype : DType(DType::Float32);
    return Value::ofExpr(ir::Call::make(t, "copysign", {ir::cast(t, x), ir::cast(t, y)}, args.call));
}

/// T.popcount(x): the number of one bits of an integer (int32 result, as CUDA's __popc).
Value popcount(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"x"});
    ir::Expr x = intOperand(in, *a[0], fname);
    if (auto c = ir::constValue(x)) {
        uint64_t u = x->dtype.bits() == 64 ? (uint64_t)*c : (uint64_t)*c & ((uint64_t(1) << x->dtype.bits()) - 1);
        return Value::ofExpr(ir::intImm(__builtin_popcountll(u), DType::Int32, args.call));
    }
    return Value::ofExpr(ir::Call::make(DType::Int32, "popcount", {x}, args.call));
}

/// Select(cond, a, b): a or b by cond (both are evaluated, unlike if_then_else's guarantee; the value is the same).
Value selectPrim(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"condition", "true_value", "false_value"});
    ir::Expr c = operand(in, *a[0], fname);
    if (!c->dtype.isBool()) {
        if (c->dtype.isFloat()) in.fail(a[0]->range, fname + " condition must be a bool, got a float");
        c = ir::binary(BinaryOp::NE, c, ir::intImm(0, c->dtype), a[0]->range);
    }
    return Value::ofExpr(ir::select(c, operand(in, *a[1], fname), operand(in, *a[2], fname), args.call));
}

/// tirx.const(value, dtype="int32"): a typed constant.
Value tirConst(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"value", "dtype?", "span?"});
    const Value &v = a[0]->value;
    DType t = a[1] && !a[1]->value.is(VK::None) ? dtypeArg(in, *a[1]) : DType(v.is(VK::Float) ? DType::Float32 : DType::Int32);
    if (v.is(VK::Float)) return Value::ofExpr(t.isFloat() ? ir::floatImm(v.f, t, args.call) : ir::cast(t, ir::floatImm(v.f, DType::Float64), args.call));
    if (v.is(VK::Int) || v.is(VK::Bool)) {
        int64_t i = v.is(VK::Bool) ? v.b : v.i;
        if (t.isFloat()) return Value::ofExpr(ir::floatImm((double)i, t, args.call));
        if (t.isBool()) return Value::ofExpr(ir::boolImm(i != 0, args.call));
        return Value::ofExpr(ir::intImm(i, t, args.call));
    }
    in.fail(a[0]->range, fname + " takes a number, got " + std::string(typeName(v.kind)));
}

/// tirx.reinterpret(dtype, value): T.reinterpret with TVM's argument order.
Value tirReinterpret(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"dtype", "value", "span?"});
    CallArgs swapped;
    swapped.call = args.call;
    swapped.callee = args.callee;
    swapped.pos = {*a[1], *a[0]};
    return reinterpretBits(in, swapped);
}

Value tirCast(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"dtype", "value", "span?"});
    DType t = dtypeArg(in, *a[0]);
    if (t == DType::Void) in.fail(a[0]->range, "cannot cast to void");
    return Value::ofExpr(ir::cast(t, operand(in, *a[1], fname), args.call));
}

/// The operators both spellings share: name -> primitive of (interpreter, call, full name).
using Op = std::function<Value(Interp &, CallArgs &, const std::string &)>;
const std::vector<std::pair<const char *, Op>> &sharedOps() {
    static const std::vector<std::pair<const char *, Op>> ops = {
        {"shift_left", [](Interp &in, CallArgs &c, const std::string &f) { return binaryPrim(in, c, f, BinaryOp::Shl, true); }},
        {"shift_right", [](Interp &in, CallArgs &c, const std::string &f) { return binaryPrim(in, c, f, BinaryOp::Shr, true); }},
        {"bitwise_and", [](Interp &in, CallArgs &c, const std::string &f) { return binaryPrim(in, c, f, BinaryOp::BitAnd, true); }},
        {"bitwise_or", [](Interp &in, CallArgs &c, const std::string &f) { return binaryPrim(in, c, f, BinaryOp::BitOr, true); }},
        {"bitwise_xor", [](Interp &in, CallArgs &c, const std::string &f) { return binaryPrim(in, c, f, BinaryOp::BitXor, true); }},
        {"bitwise_not", [](Interp &in, CallArgs &c, const std::string &f) {
             auto a = bindArgs(in, c, f, {"x"});
             return Value::ofExpr(ir::unary(ir::UnaryOp::BitNot, intOperand(in, *a[0], f), c.call));
         }},
        {"truncdiv", [](Interp &in, CallArgs &c, const std::string &f) { return binaryPrim(in, c, f, BinaryOp::Div, true); }},
        {"truncmod", truncmod},
        {"Select", selectPrim},
        {"popcount", popcount},
        {"isfinite", [](Interp &in, CallArgs &c, const std::string &f) { return floatFn(in, c, f, "isfinite", true); }},
        {"isnan", [](Interp &in, CallArgs &c, const std::string &f) { return floatFn(in, c, f, "isnan", true); }},
        {"isinf", [](Interp &in, CallArgs &c, const std::string &f) { return floatFn(in, c, f, "isinf", true); }},
        {"log1p", [](Interp &in, CallArgs &c, const std::string &f) { return floatFn(in, c, f, "log1p", false); }},
        {"copysign", copysign},
    };
    return ops;
}

} // namespace

void addBitPrimitives(Attrs &attrs) {
    for (auto &[name, op] : sharedOps()) {
        std::string full = std::string("T.") + name;
        Op fn = op;
        def(attrs, name, [fn, full](Interp &in, CallArgs &args) { return fn(in, args, full); });
    }
}

} // namespace tilec::eval::tl

namespace tilec::eval {

Value makeTvmTirModule(const std::string &name) {
    using namespace tl;
    auto m = std::make_shared<ModuleObj>();
    m->name = name;
    auto add = [&](const char *n, Op fn) {
        std::string full = name + "." + n;
        def(m->attrs, n, [fn, full](Interp &in, CallArgs &args) { return fn(in, args, full); });
    };
    for (auto &[n, op] : sharedOps()) add(n, op);
    add("const", tirConst);
    add("reinterpret", tirReinterpret);
    add("Cast", tirCast);
    for (auto [n, op] : {std::pair{"Min", BinaryOp::Min}, std::pair{"Max", BinaryOp::Max}}) {
        BinaryOp o = op;
        add(n, [o](Interp &in, CallArgs &c, const std::string &f) { return binaryPrim(in, c, f, o, false); });
    }
    // `val: tirx.PrimExpr` annotates a parameter; as a value it is only the type's name.
    m->attrs["PrimExpr"] = Value::str(name + ".PrimExpr");
    return Value::object(VK::Module, m);
}

} // namespace tilec::eval
