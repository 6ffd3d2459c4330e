/// \file
/// Python's operators on values. Compile-time values follow Python 3 (int64 with overflow errors, true
/// division, floor `//` and `%`, lexicographic sequence comparison); as soon as an operand only exists at
/// run time the operation becomes an IR expression built by IROperator (promotion, folding).
#include "eval/InterpImpl.h"

#include "tilec/IROperator.h"

#include <cmath>

namespace tilec::eval {

namespace {

using ast::BinOpKind;
using ast::CmpOpKind;
using ast::UnaryOpKind;

constexpr size_t kMaxElements = size_t(1) << 20; ///< longest list/tuple/str an operator may build

/// Goes to IR: run-time values and IR constants (which keep their dtype).
bool isIR(const Value &v) {
    return v.is(VK::Expr) || v.is(VK::Access) || (v.is(VK::Buffer) && v.buffer->scope == ir::Scope::Var);
}

std::string operandType(const Value &v) {
    if (v.is(VK::Expr)) return std::string(v.expr->dtype.name());
    if ((v.is(VK::Buffer) && v.buffer->scope == ir::Scope::Var)) return std::string(v.buffer->dtype.name());
    if (v.is(VK::Access)) return std::string(v.as<AccessObj>().buffer->dtype.name());
    return typeName(v.kind);
}

[[noreturn]] void typeError(InterpImpl &in, const char *op, const Value &a, const Value &b, const SourceRange &r) {
    in.fail(r, std::string("unsupported operand types for ") + op + ": '" + operandType(a) + "' and '" +
                   operandType(b) + "'");
}

[[noreturn]] void overflow(InterpImpl &in, const SourceRange &r) {
    in.fail(r, "integer overflow in compile-time arithmetic");
}

Value intArith(InterpImpl &in, BinOpKind op, int64_t a, int64_t b, const SourceRange &r) {
    int64_t out = 0;
    switch (op) {
    case BinOpKind::Add: if (__builtin_add_overflow(a, b, &out)) overflow(in, r); return Value::integer(out);
    case BinOpKind::Sub: if (__builtin_sub_overflow(a, b, &out)) overflow(in, r); return Value::integer(out);
    case BinOpKind::Mul: if (__builtin_mul_overflow(a, b, &out)) overflow(in, r); return Value::integer(out);
    case BinOpKind::Div:
        if (b == 0) in.failPython("ZeroDivisionError", r, "division by zero");
        return Value::real((double)a / (double)b);
    case BinOpKind::FloorDiv:
    case BinOpKind::Mod: {
        if (b == 0) in.failPython("ZeroDivisionError", r, "division by zero");
        if (a == INT64_MIN && b == -1) {
            if (op == BinOpKind::Mod) return Value::integer(0);
            overflow(in, r);
        }
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
            --q;
            m += b;
        }
        return Value::integer(op == BinOpKind::FloorDiv ? q : m);
    }
    case BinOpKind::Pow: {
        if (b < 0) {
            if (a == 0) in.failPython("ZeroDivisionError", r, "division by zero (0 cannot be raised to a negative power)");
            return Value::real(std::pow((double)a, (double)b));
        }
        int64_t acc = 1, base = a;
        while (b > 0) {
            if ((b & 1) && __builtin_mul_overflow(acc, base, &acc)) overflow(in, r);
            b >>= 1;
            if (b > 0 && __builtin_mul_overflow(base, base, &base)) overflow(in, r);
        }
        return Value::integer(acc);
    }
    case BinOpKind::LShift:
        if (b < 0) in.fail(r, "negative shift count");
        if (a == 0) return Value::integer(0);
        if (b >= 63 || __builtin_mul_overflow(a, int64_t(1) << b, &out)) overflow(in, r);
        return Value::integer(out);
    case BinOpKind::RShift:
        if (b < 0) in.fail(r, "negative shift count");
        return Value::integer(b >= 63 ? (a < 0 ? -1 : 0) : a >> b);
    case BinOpKind::BitAnd: return Value::integer(a & b);
    case BinOpKind::BitOr: return Value::integer(a | b);
    case BinOpKind::BitXor: return Value::integer(a ^ b);
    case BinOpKind::MatMul: break;
    }
    typeError(in, ast::toString(op), Value::integer(a), Value::integer(b), r);
}

Value floatArith(InterpImpl &in, BinOpKind op, const Value &va, const Value &vb, const SourceRange &r) {
    double a = numberAsDouble(va), b = numberAsDouble(vb);
    switch (op) {
    case BinOpKind::Add: return Value::real(a + b);
    case BinOpKind::Sub: return Value::real(a - b);
    case BinOpKind::Mul: return Value::real(a * b);
    case BinOpKind::Div:
        if (b == 0) in.failPython("ZeroDivisionError", r, "division by zero");
        return Value::real(a / b);
    case BinOpKind::FloorDiv:
    case BinOpKind::Mod: {
        if (b == 0) in.failPython("ZeroDivisionError", r, "division by zero");
        // CPython's float_divmod: exact remainder first, the quotient from it.
        double m = std::fmod(a, b), div = (a - m) / b;
        if (m != 0 && ((m < 0) != (b < 0))) {
            m += b;
            div -= 1;
        }
        if (op == BinOpKind::Mod) return Value::real(m);
        double q = std::copysign(0.0, a / b);
        if (div != 0) {
            q = std::floor(div);
            if (div - q > 0.5) q += 1;
        }
        return Value::real(q);
    }
    case BinOpKind::Pow:
        if (a == 0 && b < 0) in.failPython("ZeroDivisionError", r, "division by zero (0.0 cannot be raised to a negative power)");
        if (a < 0 && b != std::floor(b))
            in.fail(r, "a negative number raised to a fractional power is complex, which is not supported");
        return Value::real(std::pow(a, b));
    default: break;
    }
    typeError(in, ast::toString(op), va, vb, r);
}

/// `seq * n` for str, tuple and list.
Value repeat(InterpImpl &in, const Value &seq, int64_t n, const SourceRange &r) {
    if (n < 0) n = 0;
    size_t len = seq.is(VK::Str) ? seq.s.size() : seq.elements().size();
    if (len == 0) n = 0;
    if (len != 0 && (uint64_t)n > kMaxElements / len)
        in.fail(r, "the result of this repetition is too large for compile-time evaluation");
    in.charge((int64_t)len * n);
    if (seq.is(VK::Str)) {
        std::string s;
        for (int64_t i = 0; i < n; ++i) s += seq.s;
        return Value::str(std::move(s));
    }
    std::vector<Value> out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.elements().begin(), seq.elements().end());
    return seq.is(VK::Tuple) ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

ir::BinaryOp irOp(BinOpKind op) {
    switch (op) {
    case BinOpKind::Add: return ir::BinaryOp::Add;
    case BinOpKind::Sub: return ir::BinaryOp::Sub;
    case BinOpKind::Mul: return ir::BinaryOp::Mul;
    case BinOpKind::Div: return ir::BinaryOp::Div;
    case BinOpKind::FloorDiv: return ir::BinaryOp::FloorDiv;
    case BinOpKind::Mod: return ir::BinaryOp::FloorMod;
    case BinOpKind::Pow: return ir::BinaryOp::Pow;
    case BinOpKind::LShift: return ir::BinaryOp::Shl;
    case BinOpKind::RShift: return ir::BinaryOp::Shr;
    case BinOpKind::BitAnd: return ir::BinaryOp::BitAnd;
    case BinOpKind::BitOr: return ir::BinaryOp::BitOr;
    case BinOpKind::BitXor: return ir::BinaryOp::BitXor;
    case BinOpKind::MatMul: break;
    }
    return ir::BinaryOp::Add;
}

/// An operand of a run-time operation; anything but numbers and run-time scalars is a type error.
bool irOperandOk(const Value &v) { return isNumber(v) || isIR(v); }

Value runtimeBinary(InterpImpl &in, BinOpKind op, const Value &a, const Value &b, const SourceRange &r) {
    const char *sym = ast::toString(op);
    if (op == BinOpKind::MatMul || !irOperandOk(a) || !irOperandOk(b)) typeError(in, sym, a, b, r);
    // Each side first on its own, so a Python number is typed next to the other side (operandExpr: TVM's rules).
    ir::Expr ea = isIR(a) ? in.runtimeExpr(a, r) : nullptr;
    ir::Expr eb = isIR(b) ? in.runtimeExpr(b, r) : nullptr;
    if (!ea) ea = in.operandExpr(a, r, eb);
    if (!eb) eb = in.operandExpr(b, r, ea);
    bool bitwise = op == BinOpKind::LShift || op == BinOpKind::RShift || op == BinOpKind::BitAnd ||
                   op == BinOpKind::BitOr || op == BinOpKind::BitXor;
    if (bitwise && (ea->dtype.isFloat() || eb->dtype.isFloat())) typeError(in, sym, a, b, r);
    bool divides = op == BinOpKind::Div || op == BinOpKind::FloorDiv || op == BinOpKind::Mod;
    if (divides && !ir::promote(ea->dtype, eb->dtype).isFloat())
        if (auto c = ir::constValue(eb); c && *c == 0) in.fail(r, "division by zero");
    return Value::ofExpr(ir::binary(irOp(op), ea, eb, r));
}

ir::BinaryOp irCmp(CmpOpKind op) {
    switch (op) {
    case CmpOpKind::Eq: return ir::BinaryOp::EQ;
    case CmpOpKind::NotEq: return ir::BinaryOp::NE;
    case CmpOpKind::Lt: return ir::BinaryOp::LT;
    case CmpOpKind::LtE: return ir::BinaryOp::LE;
    case CmpOpKind::Gt: return ir::BinaryOp::GT;
    case CmpOpKind::GtE: return ir::BinaryOp::GE;
    default: return ir::BinaryOp::EQ;
    }
}

/// -1, 0, 1 for Python's ordering of compile-time values; errors for unordered types.
int order(InterpImpl &in, CmpOpKind op, const Value &a, const Value &b, const SourceRange &r, int depth = 0) {
    if (depth > 100) in.fail(r, "values nest too deeply to compare");
    if (isNumber(a) && isNumber(b)) {
        if (a.is(VK::Float) || b.is(VK::Float)) {
            double x = numberAsDouble(a), y = numberAsDouble(b);
            return x < y ? -1 : x > y ? 1 : 0;
        }
        int64_t x = intOf(a), y = intOf(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is(VK::Str) && b.is(VK::Str)) return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
    if ((a.is(VK::Tuple) && b.is(VK::Tuple)) || (a.is(VK::List) && b.is(VK::List))) {
        auto &x = a.elements(), &y = b.elements();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (in.equal(x[i], y[i])) continue;
            return order(in, op, x[i], y[i], r, depth + 1);
        }
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    in.fail(r, std::string("'") + ast::toString(op) + "' is not supported between instances of '" +
                   typeName(a.kind) + "' and '" + typeName(b.kind) + "'");
}

bool contains(InterpImpl &in, const Value &item, const Value &c, const SourceRange &r) {
    switch (c.kind) {
    case VK::Tuple:
    case VK::List:
        for (auto &e : c.elements())
            if (in.equal(item, e)) return true;
        return false;
    case VK::Dict:
        for (auto &kv : c.as<DictObj>().items)
            if (in.equal(item, kv.first)) return true;
        return false;
    case VK::Str:
        if (!item.is(VK::Str))
            in.fail(r, std::string("'in <string>' requires a string as left operand, not ") + typeName(item.kind));
        in.charge((int64_t)c.s.size());
        return c.s.find(item.s) != std::string::npos;
    case VK::Range: {
        if (!item.is(VK::Int) && !item.is(VK::Bool)) return false;
        auto &rg = c.as<RangeObj>();
        int64_t v = intOf(item);
        if (rg.step > 0 ? (v < rg.start || v >= rg.stop) : (v > rg.start || v <= rg.stop)) return false;
        return ((v - rg.start) % rg.step) == 0;
    }
    default: break;
    }
    in.fail(r, std::string("argument of type '") + typeName(c.kind) + "' is not a container");
}

} // namespace

bool isRuntime(const Value &v) {
    if (v.is(VK::Expr)) return !ir::as<ir::IntImm>(v.expr) && !ir::as<ir::FloatImm>(v.expr);
    return v.is(VK::Access) || (v.is(VK::Buffer) && v.buffer->scope == ir::Scope::Var);
}

Value constantOf(const Value &v) {
    if (v.is(VK::Instance)) return plainValue(v);
    if (!v.is(VK::Expr)) return v;
    if (auto i = ir::as<ir::IntImm>(v.expr)) return v.expr->dtype.isBool() ? Value::boolean(i->value != 0) : Value::integer(i->value);
    if (auto f = ir::as<ir::FloatImm>(v.expr)) return Value::real(f->value);
    return v;
}

Value binaryOp(InterpImpl &in, BinOpKind op, const Value &a, const Value &b, const SourceRange &r) {
    if (a.is(VK::Poison) || b.is(VK::Poison)) return Value::poison();
    if (plainValue(a).kind != a.kind || plainValue(b).kind != b.kind) // IntEnum members are their values
        return binaryOp(in, op, plainValue(a), plainValue(b), r);
    if (a.is(VK::Opaque) || b.is(VK::Opaque)) return opaqueOperation(a, b, op != BinOpKind::MatMul);
    if (isIR(a) || isIR(b)) return runtimeBinary(in, op, a, b, r);
    const char *sym = ast::toString(op);
    if (isNumber(a) && isNumber(b)) {
        if (a.is(VK::Float) || b.is(VK::Float)) return floatArith(in, op, a, b, r);
        if (a.is(VK::Bool) && b.is(VK::Bool)) {
            if (op == BinOpKind::BitAnd) return Value::boolean(a.b && b.b);
            if (op == BinOpKind::BitOr) return Value::boolean(a.b || b.b);
            if (op == BinOpKind::BitXor) return Value::boolean(a.b != b.b);
        }
        return intArith(in, op, intOf(a), intOf(b), r);
    }
    if (op == BinOpKind::Add) {
        if (a.is(VK::Str) && b.is(VK::Str)) {
            if (a.s.size() + b.s.size() > kMaxElements)
                in.fail(r, "the result of this concatenation is too large for compile-time evaluation");
            in.charge((int64_t)(a.s.size() + b.s.size()));
            return Value::str(a.s + b.s);
        }
        if ((a.is(VK::Tuple) && b.is(VK::Tuple)) || (a.is(VK::List) && b.is(VK::List))) {
            if (a.elements().size() + b.elements().size() > kMaxElements)
                in.fail(r, "the result of this concatenation is too large for compile-time evaluation");
            in.charge((int64_t)(a.elements().size() + b.elements().size()));
            std::vector<Value> out = a.elements();
            out.insert(out.end(), b.elements().begin(), b.elements().end());
            return a.is(VK::Tuple) ? Value::tuple(std::move(out)) : Value::list(std::move(out));
        }
    }
    if (op == BinOpKind::Mul) {
        bool seqA = a.is(VK::Str) || a.is(VK::Tuple) || a.is(VK::List);
        bool seqB = b.is(VK::Str) || b.is(VK::Tuple) || b.is(VK::List);
        if (seqA && (b.is(VK::Int) || b.is(VK::Bool))) return repeat(in, a, intOf(b), r);
        if (seqB && (a.is(VK::Int) || a.is(VK::Bool))) return repeat(in, b, intOf(a), r);
    }
    if (op == BinOpKind::Mod && a.is(VK::Str))
        in.fail(r, "'%' string formatting is not supported at compile time");
    typeError(in, sym, a, b, r);
}

Value compareOp(InterpImpl &in, CmpOpKind op, const Value &a, const Value &b, const SourceRange &r) {
    if (a.is(VK::Poison) || b.is(VK::Poison)) return Value::poison();
    switch (op) {
    case CmpOpKind::Is: return Value::boolean(pyIs(a, b));
    case CmpOpKind::IsNot: return Value::boolean(!pyIs(a, b));
    default: break;
    }
    if (plainValue(a).kind != a.kind || plainValue(b).kind != b.kind)
        return compareOp(in, op, plainValue(a), plainValue(b), r);
    if (a.is(VK::Opaque) || b.is(VK::Opaque)) return opaqueOperation(a, b, op != CmpOpKind::In && op != CmpOpKind::NotIn);
    if (op == CmpOpKind::In || op == CmpOpKind::NotIn) {
        if (isRuntime(b)) in.fail(r, "'in' needs a compile-time container, not a run-time value");
        bool c = contains(in, a, constantOf(b), r);
        return Value::boolean(op == CmpOpKind::In ? c : !c);
    }
    if ((isIR(a) || isIR(b)) && irOperandOk(a) && irOperandOk(b)) {
        ir::Expr ea = isIR(a) ? in.runtimeExpr(a, r) : nullptr;
        ir::Expr eb = isIR(b) ? in.runtimeExpr(b, r) : nullptr;
        if (!ea) ea = in.runtimeExpr(a, r, eb);
        if (!eb) eb = in.runtimeExpr(b, r, ea);
        return Value::ofExpr(ir::binary(irCmp(op), ea, eb, r));
    }
    if (op == CmpOpKind::Eq || op == CmpOpKind::NotEq) {
        int64_t work = 0;
        auto eq = pyEquals(a, b, 0, &work);
        in.charge(work);
        if (!eq) in.fail(r, "values nest too deeply to compare");
        return Value::boolean(op == CmpOpKind::Eq ? *eq : !*eq);
    }
    if (isIR(a) || isIR(b))
        in.fail(r, std::string("'") + ast::toString(op) + "' is not supported between instances of '" +
                       operandType(a) + "' and '" + operandType(b) + "'");
    int c = order(in, op, a, b, r);
    bool res = false;
    switch (op) {
    case CmpOpKind::Lt: res = c < 0; break;
    case CmpOpKind::LtE: res = c <= 0; break;
    case CmpOpKind::Gt: res = c > 0; break;
    case CmpOpKind::GtE: res = c >= 0; break;
    default: break;
    }
    // NaN compares false every way.
    if ((a.is(VK::Float) && std::isnan(a.f)) || (b.is(VK::Float) && std::isnan(b.f))) res = false;
    return Value::boolean(res);
}

Value unaryOp(InterpImpl &in, UnaryOpKind op, const Value &a, const SourceRange &r) {
    if (a.is(VK::Poison)) return a;
    if (plainValue(a).kind != a.kind) return unaryOp(in, op, plainValue(a), r);
    if (a.is(VK::Opaque)) return a;
    if (isIR(a)) {
        ir::Expr e = in.runtimeExpr(a, r);
        switch (op) {
        case UnaryOpKind::Pos: return Value::ofExpr(e);
        case UnaryOpKind::Neg: return Value::ofExpr(ir::unary(ir::UnaryOp::Neg, e, r));
        case UnaryOpKind::Not: return Value::ofExpr(ir::unary(ir::UnaryOp::Not, e, r));
        case UnaryOpKind::Invert:
            if (e->dtype.isFloat())
                in.fail(r, "bad operand type for unary ~: '" + std::string(e->dtype.name()) + "'");
            return Value::ofExpr(ir::unary(ir::UnaryOp::BitNot, e, r));
        }
    }
    if (op == UnaryOpKind::Not) return Value::boolean(!in.truthy(a, r, "operand of 'not'"));
    if (a.is(VK::Float)) {
        if (op == UnaryOpKind::Neg) return Value::real(-a.f);
        if (op == UnaryOpKind::Pos) return a;
    } else if (a.is(VK::Int) || a.is(VK::Bool)) {
        int64_t v = intOf(a);
        if (op == UnaryOpKind::Pos) return Value::integer(v);
        if (op == UnaryOpKind::Invert) return Value::integer(~v);
        if (v == INT64_MIN) overflow(in, r);
        return Value::integer(-v);
    }
    in.fail(r, std::string("bad operand type for unary ") + ast::toString(op) + ": '" + typeName(a.kind) + "'");
}

} // namespace tilec::eval
