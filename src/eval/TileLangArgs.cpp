/// \file
/// Argument handling shared by the `T.*` primitives: registration with Poison propagation, keyword
/// checks for `*args` primitives, dtype and constant arguments with precise messages, and the text of
/// IR expressions as a user would write them (for diagnostics that suggest code).
#include "eval/TileLang.h"

#include <charconv>
#include <cmath>

namespace tilec::eval::tl {

void def(Attrs &attrs, const std::string &name, PrimFn fn) {
    auto b = std::make_shared<BuiltinObj>();
    b->name = "T." + name;
    b->fn = [fn = std::move(fn)](Interp &in, CallArgs &args) -> Value {
        // An argument that already failed was reported where it failed; anything said here would be noise.
        for (auto &a : args.pos)
            if (a.value.is(VK::Poison))
                return Value::poison();
        for (auto &[k, a] : args.kw)
            if (a.value.is(VK::Poison))
                return Value::poison();
        return fn(in, args);
    };
    attrs[name] = Value::object(VK::Builtin, b);
}

std::map<std::string, Arg> keywords(Interp &in, const CallArgs &args, const std::string &fname,
                                    const std::vector<std::string> &allowed) {
    std::map<std::string, Arg> out;
    for (auto &[name, a] : args.kw) {
        bool ok = false;
        for (auto &n : allowed)
            ok = ok || n == name;
        if (!ok)
            in.fail(a.range, fname + "() got an unexpected keyword argument '" + name + "'");
        if (out.count(name))
            in.fail(a.range, fname + "() got multiple values for argument '" + name + "'");
        out[name] = a;
    }
    return out;
}

TraceState &requireLaunch(Interp &in, const CallArgs &args, const std::string &fname) {
    TraceState *t = in.trace();
    if (!t)
        in.fail(args.call, fname + " can only be used inside a @T.prim_func");
    if (!t->inLaunch)
        in.fail(args.call, fname + " must be used inside 'with T.Kernel(...)'");
    TILEC_ASSERT(t->kernel, "a trace without its kernel");
    return *t;
}

std::string validDTypeNames() {
    std::string s;
    for (int k = DType::Bool; k < DType::Void; ++k) {
        if (!s.empty())
            s += ", ";
        s += DType((DType::Kind)k).name();
    }
    return s;
}

bool isPackedDTypeName(const std::string &s) {
    return s == "float4_e2m1fn" || s == "int4" || s == "uint4";
}

DType dtypeArg(Interp &in, const Arg &a) {
    if (a.value.is(VK::DType))
        return a.value.dtype;
    if (isPointerAnnotation(a.value)) // T.Tensor(shape, T.ptr): a table of addresses, held as int64
        return DType::Int64;
    if (a.value.is(VK::Str)) {
        if (auto t = DType::parse(a.value.s))
            return *t;
        if (isPackedDTypeName(a.value.s))
            in.fail(a.range, "dtype '" + a.value.s + "' packs two elements in a byte: tilec takes it as the element type of "
                                 "a tensor or buffer (T.Tensor, T.empty, T.alloc_shared, T.alloc_fragment), not here");
        // Keep the name short in the message: a user who passed a long string sees its start.
        std::string shown = a.value.s.size() > 40 ? a.value.s.substr(0, 40) + "..." : a.value.s;
        in.diag().error(a.range, "unknown dtype '" + shown + "'");
        in.note(a.range, "valid dtypes are " + validDTypeNames() +
                             " (and the aliases float, half, double, "
                             "int, float8_e4m3fn)");
        throw EvalAbort{};
    }
    return in.toDType(a, "dtype"); // reports the wrong kind of value
}

std::optional<int64_t> constOf(const Value &v) {
    if (v.is(VK::Int))
        return v.i;
    if (v.is(VK::Bool))
        return v.b ? 1 : 0;
    if (v.is(VK::Expr) && v.expr && (v.expr->dtype.isInt() || v.expr->dtype.isBool()))
        return ir::constValue(v.expr);
    return std::nullopt;
}

int64_t constIntArg(Interp &in, const Arg &a, const std::string &what) {
    if (auto c = constOf(a.value))
        return *c;
    if (a.value.is(VK::Expr) && a.value.expr && a.value.expr->dtype.isInt())
        in.fail(a.range, what + " must be a compile-time constant; '" + exprText(a.value.expr) +
                             "' is only known at run time");
    if (a.value.is(VK::Access))
        in.fail(a.range,
                what + " must be a compile-time constant; a buffer element is only known at run time");
    if (a.value.is(VK::Opaque)) in.toInt(a, what.c_str()); // says which module (and import) it comes from
    in.fail(a.range, what + " must be an integer, got " + typeName(a.value.kind));
}

ir::Expr constIndex(int64_t v, SourceRange r) {
    bool fits = v >= INT32_MIN && v <= INT32_MAX;
    return ir::intImm(v, fits ? DType::Int32 : DType::Int64, r);
}

bool boolArg(Interp &in, const Arg &a, const char *what) {
    if (a.value.is(VK::Bool))
        return a.value.b;
    if (a.value.is(VK::Int))
        return a.value.i != 0;
    if (a.value.is(VK::None))
        return false;
    return in.toBool(a, what);
}

bool isScalarOperand(const Value &v) {
    return v.is(VK::Expr) || v.is(VK::Access) || (v.is(VK::Buffer) && v.buffer->scope == ir::Scope::Var);
}

ir::Expr intExprArg(Interp &in, const Arg &a, const std::string &what) {
    if (a.value.is(VK::Int) || a.value.is(VK::Bool))
        return constIndex(*constOf(a.value), a.range);
    if (isScalarOperand(a.value)) {
        ir::Expr e = in.toExpr(a, what.c_str());
        if (!e->dtype.isInt())
            in.fail(a.range, what + " must be an integer, got a " + std::string(e->dtype.name()) + " value");
        return e;
    }
    if (a.value.is(VK::Opaque)) in.toInt(a, what.c_str()); // says which module (and import) it comes from
    in.fail(a.range, what + " must be an integer, got " + typeName(a.value.kind));
}

// ---------------------------------------------------------------------------------------------------------
// Expression text

namespace {

// Python's binding strengths, loosest first; atoms (names, calls, subscripts) bind tightest.
enum Prec { POr = 1, PAnd, PNot, PCmp, PBitOr, PBitXor, PBitAnd, PShift, PAdd, PMul, PUnary, PPow, PAtom };

int precOf(ir::BinaryOp op) {
    using ir::BinaryOp;
    switch (op) {
    case BinaryOp::Or:
        return POr;
    case BinaryOp::And:
        return PAnd;
    case BinaryOp::BitOr:
        return PBitOr;
    case BinaryOp::BitXor:
        return PBitXor;
    case BinaryOp::BitAnd:
        return PBitAnd;
    case BinaryOp::Shl:
    case BinaryOp::Shr:
        return PShift;
    case BinaryOp::Add:
    case BinaryOp::Sub:
        return PAdd;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod:
        return PMul;
    case BinaryOp::Pow:
        return PPow;
    case BinaryOp::Min:
    case BinaryOp::Max:
        return PAtom; // printed as calls
    default:
        return PCmp;
    }
}

std::string floatText(double v) {
    if (std::isnan(v))
        return "nan";
    if (std::isinf(v))
        return v < 0 ? "-inf" : "inf";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, r.ptr);
    if (s.find_first_of(".en") == std::string::npos)
        s += ".0";
    return s;
}

struct Printer {
    int depth = 0;
    static constexpr int kMaxDepth = 64; // deeper expressions are elided, not walked

    std::string list(const std::vector<ir::Expr> &es) {
        std::string s;
        for (size_t i = 0; i < es.size(); ++i)
            s += (i ? ", " : "") + print(es[i], 0);
        return s;
    }

    std::string print(const ir::Expr &e, int outer) {
        if (!e)
            return "?";
        if (depth >= kMaxDepth)
            return "...";
        ++depth;
        int prec = PAtom;
        std::string s = body(e, prec);
        --depth;
        return prec < outer ? "(" + s + ")" : s;
    }

    std::string body(const ir::Expr &e, int &prec) {
        using namespace ir;
        if (auto i = as<IntImm>(e)) {
            if (i->dtype.isBool())
                return i->value ? "True" : "False";
            if (i->value < 0)
                prec = PUnary;
            return std::to_string(i->value);
        }
        if (auto f = as<FloatImm>(e)) {
            if (f->value < 0)
                prec = PUnary;
            return floatText(f->value);
        }
        if (auto v = as<VarNode>(e))
            return v->name;
        if (auto b = as<Binary>(e)) {
            if (b->op == BinaryOp::Min || b->op == BinaryOp::Max)
                return std::string("T.") + toString(b->op) + "(" + print(b->a, 0) + ", " + print(b->b, 0) +
                       ")";
            prec = precOf(b->op);
            // Left-associative except `**` (right) and comparisons (which would chain in Python).
            bool pow = b->op == BinaryOp::Pow, cmp = prec == PCmp;
            return print(b->a, pow || cmp ? prec + 1 : prec) + " " + toString(b->op) + " " +
                   print(b->b, pow ? prec : prec + 1);
        }
        if (auto u = as<Unary>(e)) {
            if (u->op == UnaryOp::Not) {
                prec = PNot;
                return "not " + print(u->a, PNot);
            }
            prec = PUnary;
            return (u->op == UnaryOp::Neg ? "-" : "~") + print(u->a, PUnary);
        }
        if (auto s = as<Select>(e))
            return "T.if_then_else(" + print(s->cond, 0) + ", " + print(s->t, 0) + ", " + print(s->f, 0) +
                   ")";
        if (auto c = as<Cast>(e))
            return "T." + std::string(c->dtype.name()) + "(" + print(c->value, 0) + ")";
        if (auto c = as<Call>(e))
            return "T." + c->name + "(" + list(c->args) + ")";
        if (auto l = as<Load>(e))
            return (l->buffer ? l->buffer->name : "?") + "[" + list(l->indices) + "]";
        return "?";
    }
};

} // namespace

std::string exprText(const ir::Expr &e) {
    return Printer{}.print(e, 0);
}

std::string tupleText(const std::vector<ir::Expr> &es) {
    std::string s = "(";
    for (size_t i = 0; i < es.size(); ++i)
        s += (i ? ", " : "") + exprText(es[i]);
    return s + (es.size() == 1 ? ",)" : ")");
}

} // namespace tilec::eval::tl
