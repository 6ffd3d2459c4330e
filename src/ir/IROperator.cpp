/// \file
/// Typed expression building: type promotion, casts and constant folding (IROperator.h). The linear
/// simplifier lives in IRSimplify.cpp.
///
/// Folding never changes what the expression means: integer results that overflow their type widen int32
/// to int64 or stay unfolded, division by a constant zero stays unfolded (the checks report it).
#include "tilec/IROperator.h"

#include <cmath>
#include <limits>

namespace tilec::ir {

Expr intImm(int64_t v, DType t, SourceRange loc) { return IntImm::make(t, v, loc); }
Expr floatImm(double v, DType t, SourceRange loc) { return FloatImm::make(t, v, loc); }
Expr boolImm(bool v, SourceRange loc) { return IntImm::make(DType::Bool, v ? 1 : 0, loc); }

DType promote(DType a, DType b) {
    if (a == b) return a;
    if (a.isBool()) return b;
    if (b.isBool()) return a;
    if (a.isFloat() && b.isFloat()) {
        if (a.bits() != b.bits()) return a.bits() > b.bits() ? a : b;
        // Same width, different formats (float16 / bfloat16, e4m3 / e5m2): the next wider float holds both.
        return a.bits() == 16 ? DType(DType::Float32) : DType(DType::Float16);
    }
    if (a.isFloat()) return a;
    if (b.isFloat()) return b;
    if (a.bits() != b.bits()) return a.bits() > b.bits() ? a : b;
    return a.isSigned() ? b : a; // C: unsigned wins at equal width
}

namespace {

/// Whether v is representable in integer (or bool) type t. uint64 is limited to the int64 range because

/// The constant of type t holding v, widening int32 to int64 when v does not fit; null when it cannot be
/// represented without wrapping.
Expr intResult(int64_t v, DType t, SourceRange loc) {
    if (t.holds(v)) return intImm(v, t, loc);
    if (t == DType::Int32 || t == DType::Int16 || t == DType::Int8) return intImm(v, DType::Int64, loc);
    return nullptr;
}

/// Rounds a folded float to what its type can hold (exact for float32/float64; the 16- and 8-bit formats
/// keep the double, which is what the code generator prints and converts at run time anyway).
double roundTo(double v, DType t) { return t == DType::Float32 ? (double)(float)v : v; }

int64_t floorDivInt(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
int64_t floorModInt(int64_t a, int64_t b) {
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

/// Folds an integer operation of two constants; nullopt when the result is not representable or the
/// operation is undefined (division by zero, negative shift).
std::optional<int64_t> foldInt(BinaryOp op, int64_t a, int64_t b) {
    int64_t r = 0;
    switch (op) {
    case BinaryOp::Add: if (__builtin_add_overflow(a, b, &r)) return std::nullopt; return r;
    case BinaryOp::Sub: if (__builtin_sub_overflow(a, b, &r)) return std::nullopt; return r;
    case BinaryOp::Mul: if (__builtin_mul_overflow(a, b, &r)) return std::nullopt; return r;
    case BinaryOp::Div:
        if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
        return a / b;
    case BinaryOp::FloorDiv:
        if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
        return floorDivInt(a, b);
    case BinaryOp::FloorMod:
        if (b == 0) return std::nullopt;
        if (b == -1) return 0;
        return floorModInt(a, b);
    case BinaryOp::Min: return std::min(a, b);
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::Pow: {
        if (b < 0) return std::nullopt;
        int64_t base = a, acc = 1;
        while (b > 0) {
            if ((b & 1) && __builtin_mul_overflow(acc, base, &acc)) return std::nullopt;
            b >>= 1;
            if (b > 0 && __builtin_mul_overflow(base, base, &base)) return std::nullopt;
        }
        return acc;
    }
    case BinaryOp::And: return (a != 0) && (b != 0);
    case BinaryOp::Or: return (a != 0) || (b != 0);
    case BinaryOp::BitAnd: return a & b;
    case BinaryOp::BitOr: return a | b;
    case BinaryOp::BitXor: return a ^ b;
    case BinaryOp::Shl:
        if (b < 0 || b >= 63) return a == 0 && b >= 0 ? std::optional<int64_t>(0) : std::nullopt;
        if (a < 0 || a > (INT64_MAX >> b)) return std::nullopt;
        return a << b;
    case BinaryOp::Shr:
        if (b < 0) return std::nullopt;
        if (b >= 63) return a < 0 ? -1 : 0;
        return a >> b;
    case BinaryOp::EQ: return a == b;
    case BinaryOp::NE: return a != b;
    case BinaryOp::LT: return a < b;
    case BinaryOp::LE: return a <= b;
    case BinaryOp::GT: return a > b;
    case BinaryOp::GE: return a >= b;
    }
    return std::nullopt;
}

std::optional<double> foldFloat(BinaryOp op, double a, double b) {
    switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::FloorDiv: return b == 0 ? std::optional<double>() : std::floor(a / b);
    case BinaryOp::FloorMod: {
        if (b == 0) return std::nullopt;
        double r = std::fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    case BinaryOp::Min: return std::fmin(a, b);
    case BinaryOp::Max: return std::fmax(a, b);
    case BinaryOp::Pow: return std::pow(a, b);
    case BinaryOp::EQ: return a == b;
    case BinaryOp::NE: return a != b;
    case BinaryOp::LT: return a < b;
    case BinaryOp::LE: return a <= b;
    case BinaryOp::GT: return a > b;
    case BinaryOp::GE: return a >= b;
    default: return std::nullopt;
    }
}

bool isIntConst(const Expr &e, int64_t v) {
    auto i = as<IntImm>(e);
    return i && i->value == v && !i->dtype.isBool();
}
bool isFloatConst(const Expr &e, double v) {
    auto f = as<FloatImm>(e);
    return f && f->value == v;
}

/// Identities that hold for every value of the non-constant operand (integers have no NaN or -0).
Expr identity(BinaryOp op, const Expr &a, const Expr &b, DType t) {
    bool isInt = t.isInt();
    switch (op) {
    case BinaryOp::Add:
        if (isInt && isIntConst(b, 0)) return a;
        if (isInt && isIntConst(a, 0)) return b;
        break;
    case BinaryOp::Sub:
        if (isInt && isIntConst(b, 0)) return a;
        break;
    case BinaryOp::Mul:
        if (isIntConst(b, 1) || isFloatConst(b, 1)) return a;
        if (isIntConst(a, 1) || isFloatConst(a, 1)) return b;
        if (isInt && isIntConst(b, 0)) return b;
        if (isInt && isIntConst(a, 0)) return a;
        break;
    case BinaryOp::Div:
    case BinaryOp::FloorDiv:
        if (isIntConst(b, 1) || (op == BinaryOp::Div && isFloatConst(b, 1))) return a;
        break;
    case BinaryOp::FloorMod:
        if (isInt && isIntConst(b, 1)) return intImm(0, t);
        break;
    default: break;
    }
    return nullptr;
}

} // namespace

Expr cast(DType t, Expr v, SourceRange loc) {
    TILEC_ASSERT(v, "cast of a null expression");
    if (v->dtype == t) return v;
    if (!loc.valid()) loc = v->loc;
    if (auto i = as<IntImm>(v)) {
        if (t.isBool()) return boolImm(i->value != 0, loc);
        if (t.isFloat()) return floatImm(roundTo((double)i->value, t), t, loc);
        if (t.isInt()) {
            if (t.holds(i->value)) return intImm(i->value, t, loc);
            // A cast truncates, as in C: that is what the cast asks for.
            uint64_t u = (uint64_t)i->value;
            int bits = t.bits();
            if (bits < 64) {
                u &= (uint64_t(1) << bits) - 1;
                int64_t s = (int64_t)u;
                if (t.isSigned() && (u >> (bits - 1)) & 1) s = (int64_t)(u | ~((uint64_t(1) << bits) - 1));
                return intImm(s, t, loc);
            }
        }
    } else if (auto f = as<FloatImm>(v)) {
        if (t.isFloat()) return floatImm(roundTo(f->value, t), t, loc);
        if (t.isBool()) return boolImm(f->value != 0, loc);
        if (t.isInt() && std::isfinite(f->value)) {
            double tr = std::trunc(f->value);
            if (tr >= -9.2e18 && tr <= 9.2e18 && t.holds((int64_t)tr)) return intImm((int64_t)tr, t, loc);
        }
    }
    return Cast::make(t, std::move(v), loc);
}

Expr binary(BinaryOp op, Expr a, Expr b, SourceRange loc) {
    TILEC_ASSERT(a && b, "binary operation with a null operand");
    if (op == BinaryOp::And || op == BinaryOp::Or) {
        a = cast(DType::Bool, a);
        b = cast(DType::Bool, b);
        auto ca = constInt(a), cb = constInt(b);
        if (ca && cb) return boolImm(*foldInt(op, *ca, *cb), loc);
        // Short-circuit identities are safe: operands have no side effects.
        bool isAnd = op == BinaryOp::And;
        if (ca) return (*ca != 0) == isAnd ? b : boolImm(!isAnd, loc);
        if (cb) return (*cb != 0) == isAnd ? a : boolImm(!isAnd, loc);
        return Binary::make(op, a, b, loc);
    }
    DType t = promote(a->dtype, b->dtype);
    // Bitwise and shift operations on bool operands compute on the integer type, as C does.
    if (t.isBool() && !isComparison(op) && op != BinaryOp::BitAnd && op != BinaryOp::BitOr &&
        op != BinaryOp::BitXor && op != BinaryOp::Min && op != BinaryOp::Max)
        t = DType::Int32;
    a = cast(t, a);
    b = cast(t, b);
    if (t.isFloat()) {
        auto fa = as<FloatImm>(a), fb = as<FloatImm>(b);
        if (fa && fb) {
            if (auto r = foldFloat(op, fa->value, fb->value)) {
                if (isComparison(op)) return boolImm(*r != 0, loc);
                return floatImm(roundTo(*r, t), t, loc);
            }
        }
    } else {
        auto ca = constInt(a), cb = constInt(b);
        if (ca && cb) {
            if (auto r = foldInt(op, *ca, *cb)) {
                if (isComparison(op)) return boolImm(*r != 0, loc);
                if (t.isBool()) return boolImm(*r != 0, loc);
                if (auto e = intResult(*r, t, loc)) return e;
            }
        }
    }
    if (!isComparison(op))
        if (auto e = identity(op, a, b, t)) return e;
    return Binary::make(op, a, b, loc);
}

Expr unary(UnaryOp op, Expr a, SourceRange loc) {
    TILEC_ASSERT(a, "unary operation with a null operand");
    switch (op) {
    case UnaryOp::Not: {
        a = cast(DType::Bool, a);
        if (auto c = constInt(a)) return boolImm(*c == 0, loc);
        if (auto u = as<Unary>(a); u && u->op == UnaryOp::Not) return u->a;
        return Unary::make(op, a, loc);
    }
    case UnaryOp::Neg: {
        if (a->dtype.isBool()) a = cast(DType::Int32, a);
        if (auto f = as<FloatImm>(a)) return floatImm(-f->value, a->dtype, loc);
        if (auto c = constInt(a); c && *c != INT64_MIN)
            if (auto e = intResult(-*c, a->dtype, loc)) return e;
        return Unary::make(op, a, loc);
    }
    case UnaryOp::BitNot: {
        TILEC_ASSERT(!a->dtype.isFloat(), "bitwise not of a float");
        if (a->dtype.isBool()) a = cast(DType::Int32, a);
        if (auto c = constInt(a); c && a->dtype.isSigned()) return intImm(~*c, a->dtype, loc);
        return Unary::make(op, a, loc);
    }
    }
    return Unary::make(op, a, loc);
}

Expr select(Expr cond, Expr t, Expr f, SourceRange loc) {
    TILEC_ASSERT(cond && t && f, "select with a null operand");
    cond = cast(DType::Bool, cond);
    DType ty = promote(t->dtype, f->dtype);
    t = cast(ty, t);
    f = cast(ty, f);
    if (auto c = constInt(cond)) return *c ? t : f;
    return Select::make(cond, t, f, loc);
}

Expr reduceIdentity(ReduceKind kind, DType t) {
    bool isMax = kind == ReduceKind::Max; // absolute values start from 0
    bool isMin = kind == ReduceKind::Min;
    if (t.isFloat()) {
        double inf = std::numeric_limits<double>::infinity();
        return floatImm(isMax ? -inf : isMin ? inf : 0.0, t);
    }
    if (isMax || isMin) {
        int bits = t.bits();
        int64_t hi = t.isSigned() ? (bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1)
                                  : (bits >= 63 ? INT64_MAX : (int64_t(1) << bits) - 1);
        int64_t lo = t.isSigned() ? (bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1))) : 0;
        return intImm(isMax ? lo : hi, t);
    }
    return intImm(0, t);
}

} // namespace tilec::ir
