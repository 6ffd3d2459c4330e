/// \file
/// Scalar math of the tile language: float intrinsics (exp, exp2, log, sqrt, rsqrt, ...), abs, max, min,
/// clamp, if_then_else, infinity / max_value / min_value, cast, the integer helpers ceildiv, floordiv,
/// floormod, TVM's warp shuffle (T.tvm_warp_shuffle, a value of another lane) and the IEEE-rounded operations
/// (T.ieee_add, ... with a rounding mode; tilec/IeeeMath.h).
///
/// On compile-time values (Python numbers) they fold like Python would (T.ceildiv(1000, 128) is the int
/// 8, T.exp2(1.0) the float 2.0); on run-time values they build IR expressions. Float intrinsics take
/// floats: an integer operand is converted to float32 first, as TVM does.
#include "eval/TileLang.h"
#include "tilec/IeeeMath.h"
#include "tilec/LibraryCalls.h"

#include <cmath>
#include <limits>

namespace tilec::eval::tl {

namespace {

bool isPy(const Value &v) {
    return v.is(VK::Int) || v.is(VK::Bool) || v.is(VK::Float);
}
double pyFloat(const Value &v) {
    return v.is(VK::Float) ? v.f : v.is(VK::Bool) ? (v.b ? 1 : 0) : (double)v.i;
}

/// A float operand: integers and bools become float32.
ir::Expr floatOperand(Interp &in, const Arg &a, const std::string &fname) {
    if (!isPy(a.value) && !isScalarOperand(a.value))
        in.fail(a.range, fname + " takes a number, got " + typeName(a.value.kind));
    ir::Expr e = in.toExpr(a, "operand");
    return e->dtype.isFloat() ? e : ir::cast(DType::Float32, e, a.range);
}

/// The float value of a constant IR expression, if it is one.
std::optional<double> constFloat(const ir::Expr &e) {
    if (auto f = ir::as<ir::FloatImm>(e))
        return f->value;
    if (auto c = ir::constValue(e))
        return (double)*c;
    return std::nullopt;
}

struct FloatFn {
    const char *name;
    double (*f)(double);
};
const FloatFn kUnary[] = {
    {"exp", [](double x) { return std::exp(x); }},
    {"exp2", [](double x) { return std::exp2(x); }},
    {"exp10", [](double x) { return std::pow(10.0, x); }},
    {"log", [](double x) { return std::log(x); }},
    {"log2", [](double x) { return std::log2(x); }},
    {"log10", [](double x) { return std::log10(x); }},
    {"sqrt", [](double x) { return std::sqrt(x); }},
    {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }},
    {"sin", [](double x) { return std::sin(x); }},
    {"cos", [](double x) { return std::cos(x); }},
    {"tan", [](double x) { return std::tan(x); }},
    {"tanh", [](double x) { return std::tanh(x); }},
    {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
    {"erf", [](double x) { return std::erf(x); }},
    {"floor", [](double x) { return std::floor(x); }},
    {"ceil", [](double x) { return std::ceil(x); }},
    {"trunc", [](double x) { return std::trunc(x); }},
    {"round", [](double x) { return std::nearbyint(x); }}, // half to even, like Python and TVM
};

Value floatUnary(Interp &in, CallArgs &args, const FloatFn &fn) {
    std::string fname = std::string("T.") + fn.name;
    auto a = bindArgs(in, args, fname, {"x"});
    if (isPy(a[0]->value))
        return Value::real(fn.f(pyFloat(a[0]->value)));
    ir::Expr x = floatOperand(in, *a[0], fname);
    if (auto c = constFloat(x))
        return Value::ofExpr(ir::floatImm(fn.f(*c), x->dtype, args.call));
    return Value::ofExpr(ir::Call::make(x->dtype, fn.name, {x}, args.call));
}

Value pow(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.pow", {"x", "y"});
    if (isPy(a[0]->value) && isPy(a[1]->value))
        return Value::real(std::pow(pyFloat(a[0]->value), pyFloat(a[1]->value)));
    ir::Expr x = floatOperand(in, *a[0], "T.pow"), y = floatOperand(in, *a[1], "T.pow");
    DType t = ir::promote(x->dtype, y->dtype);
    x = ir::cast(t, x);
    y = ir::cast(t, y);
    auto cx = constFloat(x), cy = constFloat(y);
    if (cx && cy)
        return Value::ofExpr(ir::floatImm(std::pow(*cx, *cy), t, args.call));
    return Value::ofExpr(ir::Call::make(t, "pow", {x, y}, args.call));
}

Value abs(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.abs", {"x"});
    const Value &v = a[0]->value;
    if (v.is(VK::Float))
        return Value::real(std::fabs(v.f));
    if (v.is(VK::Int) || v.is(VK::Bool)) {
        int64_t x = *constOf(v);
        if (x == std::numeric_limits<int64_t>::min())
            in.fail(a[0]->range, "integer overflow in T.abs");
        return Value::integer(x < 0 ? -x : x);
    }
    if (!isScalarOperand(v))
        in.fail(a[0]->range, "T.abs takes a number, got " + std::string(typeName(v.kind)));
    ir::Expr x = in.toExpr(*a[0], "operand");
    if (x->dtype.isBool())
        x = ir::cast(DType::Int32, x);
    if (!x->dtype.isSigned() && !x->dtype.isFloat())
        return Value::ofExpr(x); // unsigned: already |x|
    ir::Expr zero = x->dtype.isFloat() ? ir::floatImm(0, x->dtype) : ir::intImm(0, x->dtype);
    if (ir::constValue(x) || ir::as<ir::FloatImm>(x))
        return Value::ofExpr(
            ir::select(ir::binary(ir::BinaryOp::LT, x, zero), ir::unary(ir::UnaryOp::Neg, x), x));
    return Value::ofExpr(ir::Call::make(x->dtype, "abs", {x}, args.call));
}

/// T.max / T.min: Python's max/min on compile-time numbers, a Max/Min expression otherwise.
Value minMax(Interp &in, const CallArgs &args, const Arg &x, const Arg &y, bool isMax,
             const std::string &fname) {
    for (const Arg *a : {&x, &y})
        if (!isPy(a->value) && !isScalarOperand(a->value))
            in.fail(a->range, fname + " takes numbers, got " + typeName(a->value.kind));
    if (isPy(x.value) && isPy(y.value)) {
        double a = pyFloat(x.value), b = pyFloat(y.value);
        // Python returns the first of equal arguments, keeping its type.
        return isMax ? (b > a ? y.value : x.value) : (b < a ? y.value : x.value);
    }
    return Value::ofExpr(ir::binary(isMax ? ir::BinaryOp::Max : ir::BinaryOp::Min, in.toExpr(x, "operand"),
                                    in.toExpr(y, "operand"), args.call));
}

Value clamp(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.clamp", {"x", "min_val", "max_val"});
    Value lowered = minMax(in, args, *a[0], *a[2], false, "T.clamp");
    return minMax(in, args, Arg{lowered, a[0]->range}, *a[1], true, "T.clamp");
}

Value ifThenElse(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.if_then_else", {"cond", "t", "f"});
    if (auto c = constOf(a[0]->value); c && !a[0]->value.is(VK::Expr)) {
        // The chosen operand's value: a constant stays one (folded while tracing); anything else (a T.alloc_var
        // name, a buffer element) is read here, so that `x = T.if_then_else(True, y, z)` stores y's value into
        // x rather than making x another name of y (the differential fuzzer's front-end oracle found it).
        const auto &chosen = *c ? a[1] : a[2];
        if (constOf(chosen->value) && !chosen->value.is(VK::Expr)) return chosen->value;
        return Value::ofExpr(in.toExpr(*chosen, "value"));
    }
    ir::Expr cond = in.toExpr(*a[0], "condition");
    if (!cond->dtype.isBool()) {
        if (cond->dtype.isFloat())
            in.fail(a[0]->range, "T.if_then_else condition must be a bool, got a float");
        cond = ir::binary(ir::BinaryOp::NE, cond, ir::intImm(0, cond->dtype), a[0]->range);
    }
    return Value::ofExpr(ir::select(cond, in.toExpr(*a[1], "value"), in.toExpr(*a[2], "value"), args.call));
}

/// T.infinity / T.max_value / T.min_value of a dtype.
Value limitOf(Interp &in, CallArgs &args, int which, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"dtype"});
    if (SubByte k = subByteArg(*a[0]); k != SubByte::None && which != 0) { // int4: -8 .. 7, uint4: 0 .. 15, fp4: +-6
        bool max = which == 1;
        if (k == SubByte::Float4E2M1) return Value::ofExpr(ir::floatImm(max ? 6.0 : -6.0, DType::Float32, args.call));
        return Value::ofExpr(ir::intImm(k == SubByte::Int4 ? (max ? 7 : -8) : (max ? 15 : 0), DType::Int32, args.call));
    }
    DType t = dtypeArg(in, *a[0]);
    if (which == 0) {
        if (!t.isFloat() || t.isFloat8())
            in.fail(a[0]->range,
                    fname + " needs a float dtype with an infinity, got '" + std::string(t.name()) + "'");
        return Value::ofExpr(ir::floatImm(std::numeric_limits<double>::infinity(), t, args.call));
    }
    bool max = which == 1;
    if (t.isBool())
        return Value::ofExpr(ir::boolImm(max, args.call));
    if (t.isInt()) {
        if (t == DType::UInt64 && max)
            in.fail(a[0]->range, fname + " of uint64 does not fit tilec's 64-bit signed integers");
        int bits = t.bits();
        int64_t hi = bits == 64     ? std::numeric_limits<int64_t>::max()
                     : t.isSigned() ? (int64_t(1) << (bits - 1)) - 1
                                    : (int64_t(1) << bits) - 1;
        int64_t lo = !t.isSigned() ? 0
                     : bits == 64  ? std::numeric_limits<int64_t>::min()
                                   : -(int64_t(1) << (bits - 1));
        return Value::ofExpr(ir::intImm(max ? hi : lo, t, args.call));
    }
    double hi = 0;
    switch (t.kind) {
    case DType::Float16:
        hi = 65504.0;
        break;
    case DType::BFloat16:
        hi = 3.3895313892515355e38;
        break;
    case DType::Float32:
        hi = std::numeric_limits<float>::max();
        break;
    case DType::Float64:
        hi = std::numeric_limits<double>::max();
        break;
    case DType::Float8E4M3:
        hi = 448.0;
        break;
    case DType::Float8E5M2:
        hi = 57344.0;
        break;
    default:
        in.fail(a[0]->range, fname + " of '" + std::string(t.name()) + "' is not defined");
    }
    return Value::ofExpr(ir::floatImm(max ? hi : -hi, t, args.call));
}

Value castTo(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.cast", {"value", "dtype"});
    DType t = dtypeArg(in, *a[1]);
    if (t == DType::Void)
        in.fail(a[1]->range, "cannot cast to void");
    const Value &v = a[0]->value;
    if (!isPy(v) && !isScalarOperand(v))
        in.fail(a[0]->range, "T.cast takes a number, got " + std::string(typeName(v.kind)));
    return Value::ofExpr(ir::cast(t, in.toExpr(*a[0], "value"), args.call));
}

enum class IntOp { CeilDiv, FloorDiv, FloorMod };

/// Python's floor division and modulo of int64, reporting division by zero and overflow.
int64_t pyIntOp(Interp &in, const CallArgs &args, const Arg &by, IntOp op, int64_t a, int64_t b,
                const std::string &fname) {
    if (b == 0)
        in.fail(by.range, "division by zero in " + fname);
    if (a == std::numeric_limits<int64_t>::min() && b == -1)
        in.fail(args.call, "integer overflow in " + fname);
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) {
        --q;
        r += b;
    }
    if (op == IntOp::FloorMod)
        return r;
    if (op == IntOp::FloorDiv)
        return q;
    return r != 0 ? q + 1 : q; // ceil(a / b) = floor(a / b) + (remainder != 0)
}

Value intOp(Interp &in, CallArgs &args, IntOp op, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"a", "b"});
    const Value &x = a[0]->value, &y = a[1]->value;
    bool ints = (x.is(VK::Int) || x.is(VK::Bool)) && (y.is(VK::Int) || y.is(VK::Bool));
    if (ints)
        return Value::integer(pyIntOp(in, args, *a[1], op, *constOf(x), *constOf(y), fname));
    if (isPy(x) && isPy(y)) {
        if (op == IntOp::CeilDiv)
            in.fail(args.call, fname + " takes integers");
        double p = pyFloat(x), q = pyFloat(y);
        if (q == 0)
            in.fail(a[1]->range, "division by zero in " + fname);
        double fl = std::floor(p / q);
        return Value::real(op == IntOp::FloorDiv ? fl : p - fl * q);
    }
    ir::Expr ea = intExprArg(in, *a[0], fname + " operand"), eb = intExprArg(in, *a[1], fname + " operand");
    if (ir::constValue(eb) == std::optional<int64_t>(0))
        in.fail(a[1]->range, "division by zero in " + fname);
    using ir::BinaryOp;
    if (op == IntOp::FloorDiv)
        return Value::ofExpr(ir::binary(BinaryOp::FloorDiv, ea, eb, args.call));
    if (op == IntOp::FloorMod)
        return Value::ofExpr(ir::binary(BinaryOp::FloorMod, ea, eb, args.call));
    // (a + b - 1) // b: exact for positive b, which is what tile counts divide by.
    ir::Expr num = ir::binary(BinaryOp::Add, ea, ir::binary(BinaryOp::Sub, eb, ir::intImm(1)));
    return Value::ofExpr(ir::simplify(ir::binary(BinaryOp::FloorDiv, num, eb, args.call)));
}

/// T.tvm_warp_shuffle(mask, value, lane, width, warp_size): `value` as lane `lane` of the caller's group of
/// `width` lanes holds it (CUDA's __shfl_sync). The lanes of `mask` must all execute it.
Value warpShuffle(Interp &in, CallArgs &args) {
    const std::string fname = "T.tvm_warp_shuffle";
    auto a = bindArgs(in, args, fname, {"mask", "value", "lane", "width", "warp_size"});
    requireLaunch(in, args, fname);
    int64_t mask = constIntArg(in, *a[0], fname + " mask");
    if (mask < 0 || mask > 0xFFFFFFFFll) in.fail(a[0]->range, fname + ": the mask must be a 32-bit lane mask");
    int64_t width = constIntArg(in, *a[3], fname + " width");
    int64_t warp = constIntArg(in, *a[4], fname + " warp_size");
    if (warp != 32) in.fail(a[4]->range, fname + ": warp_size must be 32 on CUDA, got " + std::to_string(warp));
    if (width < 1 || width > 32 || (width & (width - 1)))
        in.fail(a[3]->range, fname + ": width must be a power of two from 1 to 32, got " + std::to_string(width));
    if (!isPy(a[1]->value) && !isScalarOperand(a[1]->value))
        in.fail(a[1]->range, fname + " shuffles a number, got " + std::string(typeName(a[1]->value.kind)));
    ir::Expr value = in.toExpr(*a[1], "value");
    DType t = value->dtype;
    if (t.isBool() || t.isFloat8() || (t.isInt() && t.bits() < 32))
        in.fail(a[1]->range, fname + " cannot shuffle a " + std::string(t.name()) +
                                 " value (32- and 64-bit numbers, float16 and bfloat16 only)");
    ir::Expr lane = intExprArg(in, *a[2], fname + " lane");
    return Value::ofExpr(passes::lib::call(passes::lib::Fn::Shfl,
                                           {ir::intImm(mask, DType::Int64), value, lane, ir::intImm(width)},
                                           args.call, t));
}

/// T.ieee_add(x, y, rounding_mode="rn") and the others of tilec/IeeeMath.h: the operation on float32 (or float64)
/// operands, rounded in the mode's direction, never contracted nor relaxed by fast math. Python numbers are
/// float32, as TVM converts them.
Value ieeeOperation(Interp &in, CallArgs &args, const IeeeOp &op) {
    const std::string fname = std::string("T.") + op.name;
    std::vector<std::string> params = {"x", "y", "z"};
    params.resize(op.arity);
    if (!op.onlyNearest) params.push_back("rounding_mode?");
    auto a = bindArgs(in, args, fname, params);
    std::string mode = "rn";
    if (!op.onlyNearest && a.back()) {
        mode = in.toStr(*a.back(), "rounding_mode");
        if (!isIeeeRoundingMode(mode))
            in.fail(a.back()->range, fname + ": rounding_mode must be 'rn', 'rz', 'ru' or 'rd', got '" + mode + "'");
    }
    std::vector<ir::Expr> xs;
    DType t = DType::Float32;
    for (int i = 0; i < op.arity; ++i) {
        ir::Expr x = floatOperand(in, *a[i], fname);
        if (x->dtype != DType::Float32 && x->dtype != DType::Float64)
            in.fail(a[i]->range, fname + " takes float32 or float64 operands (CUDA's rounding intrinsics), got " +
                                     std::string(x->dtype.name()));
        if (i == 0) t = x->dtype;
        else if (x->dtype != t)
            in.fail(a[i]->range, fname + ": operands of one type, got " + std::string(t.name()) + " and " + std::string(x->dtype.name()));
        xs.push_back(x);
    }
    if (t == DType::Float64 && !op.f64) in.fail(args.call, fname + " has no float64 form in CUDA");
    return Value::ofExpr(ir::Call::make(t, std::string(op.name) + "." + mode, std::move(xs), args.call));
}

} // namespace

void addMathPrimitives(Attrs &attrs) {
    for (const char *name : {"ieee_add", "ieee_sub", "ieee_mul", "ieee_fmaf", "ieee_frcp", "ieee_fsqrt", "ieee_frsqrt", "ieee_fdiv"}) {
        const IeeeOp *op = ieeeOp(name);
        def(attrs, name, [op](Interp &in, CallArgs &args) { return ieeeOperation(in, args, *op); });
    }
    for (const FloatFn &fn : kUnary) {
        const FloatFn *p = &fn;
        def(attrs, fn.name, [p](Interp &in, CallArgs &args) { return floatUnary(in, args, *p); });
    }
    def(attrs, "pow", pow);
    def(attrs, "abs", abs);
    def(attrs, "max", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.max", {"a", "b"});
        return minMax(in, args, *a[0], *a[1], true, "T.max");
    });
    def(attrs, "min", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.min", {"a", "b"});
        return minMax(in, args, *a[0], *a[1], false, "T.min");
    });
    def(attrs, "clamp", clamp);
    def(attrs, "if_then_else", ifThenElse);
    def(attrs, "infinity", [](Interp &in, CallArgs &args) { return limitOf(in, args, 0, "T.infinity"); });
    def(attrs, "max_value", [](Interp &in, CallArgs &args) { return limitOf(in, args, 1, "T.max_value"); });
    def(attrs, "min_value", [](Interp &in, CallArgs &args) { return limitOf(in, args, 2, "T.min_value"); });
    def(attrs, "cast", castTo);
    def(attrs, "tvm_warp_shuffle", warpShuffle);
    def(attrs, "ceildiv",
        [](Interp &in, CallArgs &args) { return intOp(in, args, IntOp::CeilDiv, "T.ceildiv"); });
    def(attrs, "floordiv",
        [](Interp &in, CallArgs &args) { return intOp(in, args, IntOp::FloorDiv, "T.floordiv"); });
    def(attrs, "floormod",
        [](Interp &in, CallArgs &args) { return intOp(in, args, IntOp::FloorMod, "T.floormod"); });
}

} // namespace tilec::eval::tl
