/// \file
/// CUDA C++ text of expressions, names and types (src/codegen/CodegenImpl.h).
#include "codegen/CodegenImpl.h"

#include "tilec/IROperator.h"
#include "tilec/IeeeMath.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace tilec::codegen {

using namespace ir;

namespace {

/// Words a generated identifier must avoid: C and C++ keywords, CUDA built-ins and the names the
/// generated code itself declares.
const std::set<std::string> &reservedWords() {
    static const std::set<std::string> words = {
        "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
        "constexpr", "const_cast", "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast",
        "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline",
        "int", "long", "mutable", "namespace", "new", "noexcept", "not", "nullptr", "operator", "or", "private",
        "protected", "public", "register", "reinterpret_cast", "restrict", "return", "short", "signed", "sizeof",
        "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
        "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void",
        "volatile", "wchar_t", "while", "xor", "_Bool", "char8_t", "char16_t", "char32_t", "concept", "requires",
        "co_await", "co_return", "co_yield", "consteval", "constinit", "bitand", "bitor", "compl", "not_eq",
        "or_eq", "xor_eq", "and_eq", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3",
        "half", "tilec", "std", "uint4", "uint2", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t",
        "uint16_t", "uint32_t", "uint64_t", "size_t", "uintptr_t", "stream", "main", "max", "min", "abs",
        "NULL", "tilec_smem", "args", "status", "err", "dev",
    };
    return words;
}

bool reserved(const std::string &s) {
    if (reservedWords().count(s)) return true;
    // Identifiers with a double underscore, or an underscore and a capital, belong to the implementation.
    if (s.find("__") != std::string::npos) return true;
    if (s.size() >= 2 && s[0] == '_' && std::isupper((unsigned char)s[1])) return true;
    return s.rfind("tilec_", 0) == 0 || s.rfind("TILEC_", 0) == 0;
}

std::string sanitize(const std::string &hint) {
    std::string s;
    for (char c : hint) s += std::isalnum((unsigned char)c) || c == '_' ? c : '_';
    if (s.empty() || std::isdigit((unsigned char)s[0])) s = "v" + s;
    return s;
}

/// A math function of the language as CUDA spells it: `precise` without the float32 suffix (nullptr: printed
/// by ExprPrinter::call itself), `fast` the float32 form under --use_fast_math, as nvcc -use_fast_math maps
/// them (CUDA Programming Guide, "Intrinsic Functions"; exp2f there is ex2.approx.ftz, which has no CUDA
/// intrinsic: tilec::fast_exp2f), nullptr where fast math keeps the precise form.
struct MathFn {
    const char *precise;
    const char *fast;
};

const MathFn *mathFn(const std::string &name) {
    static const std::map<std::string, MathFn> fns = {
        {"exp", {"exp", "__expf"}},      {"exp2", {"exp2", "tilec::fast_exp2f"}}, {"exp10", {"exp10", "__exp10f"}},
        {"log", {"log", "__logf"}},      {"log2", {"log2", "__log2f"}},           {"log10", {"log10", "__log10f"}},
        {"sqrt", {"sqrt", nullptr}},     {"rsqrt", {"rsqrt", nullptr}},           {"sin", {"sin", "__sinf"}},
        {"cos", {"cos", "__cosf"}},      {"tan", {"tan", "__tanf"}},              {"tanh", {"tanh", nullptr}},
        {"erf", {"erf", nullptr}},       {"floor", {"floor", nullptr}},           {"ceil", {"ceil", nullptr}},
        {"trunc", {"trunc", nullptr}},   {"round", {"rint", nullptr}},            {"pow", {"pow", "__powf"}},
        {"abs", {"fabs", nullptr}},      {"sigmoid", {nullptr, "tilec::fast_sigmoid"}},
        {"log1p", {"log1p", nullptr}},   {"copysign", {"copysign", nullptr}},     {"fmod", {"fmod", nullptr}},
    };
    auto it = fns.find(name);
    return it == fns.end() ? nullptr : &it->second;
}

} // namespace

const std::string &NameTable::of(const void *key, const std::string &hint) {
    auto it = names_.find(key);
    if (it != names_.end()) return it->second;
    std::string base = sanitize(hint), name = base;
    if (reserved(name)) name = base = base + "_";
    for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    return names_[key] = name;
}

bool isNarrowFloat(DType t) {
    return t.kind == DType::Float16 || t.kind == DType::BFloat16 || t.isFloat8();
}

std::string deviceType(DType t) {
    switch (t.kind) {
    case DType::Bool: return "bool";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int32_t";
    case DType::Int64: return "int64_t";
    case DType::UInt8: return "uint8_t";
    case DType::UInt16: return "uint16_t";
    case DType::UInt32: return "uint32_t";
    case DType::UInt64: return "uint64_t";
    case DType::Float16: return "__half";
    case DType::BFloat16: return "__nv_bfloat16";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Float8E4M3: return "__nv_fp8_e4m3";
    case DType::Float8E5M2: return "__nv_fp8_e5m2";
    case DType::Void: return "void";
    }
    return "void";
}

std::string headerType(DType t) { return isNarrowFloat(t) ? "void" : deviceType(t); }

std::string quoted(const std::string &s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\%03o", c);
            out += buf;
        } else {
            out += (char)c;
        }
    }
    return out + "\"";
}

std::string ExprPrinter::print(const Expr &e) { return expr(e).s; }

bool ExprPrinter::nonNegative(const Expr &e) { return passes::boundsOf(e, ranges).nonNegative(); }

std::string ExprPrinter::asFloat(const Expr &e, int need) {
    Text t = expr(e);
    if (isNarrowFloat(e->dtype)) return "tilec::to_float(" + t.s + ")";
    return wrap(t, need);
}

ExprPrinter::Text ExprPrinter::expr(const Expr &e) {
    TILEC_ASSERT(e, "null expression in code generation");
    if (++depth_ > kMaxIRDepth) TILEC_ASSERT(false, "expression nesting too deep for code generation");
    struct Guard {
        int &d;
        ~Guard() { --d; }
    } guard{depth_};
    switch (e->kind) {
    case NodeKind::IntImm: {
        auto &i = *as<IntImm>(e);
        DType t = host_ && i.dtype.isInt() ? DType(DType::Int64) : i.dtype;
        if (t.isBool()) return {i.value ? "true" : "false", 16};
        if (t.kind == DType::Int64) {
            if (i.value == std::numeric_limits<int64_t>::min()) return {"(-9223372036854775807LL - 1)", 16};
            return {std::to_string(i.value) + "LL", i.value < 0 ? 15 : 16};
        }
        if (t.kind == DType::UInt64) return {std::to_string((uint64_t)i.value) + "ull", 16};
        if (t.kind == DType::UInt32) return {std::to_string((uint32_t)i.value) + "u", 16};
        if (t.kind == DType::Int32) {
            if (i.value == std::numeric_limits<int32_t>::min()) return {"(-2147483647 - 1)", 16};
            return {std::to_string(i.value), i.value < 0 ? 15 : 16};
        }
        return {"((" + deviceType(t) + ")" + std::to_string(i.value) + ")", 16};
    }
    case NodeKind::FloatImm: {
        auto &f = *as<FloatImm>(e);
        bool single = f.dtype.kind != DType::Float64;
        std::string lit;
        if (std::isnan(f.value)) {
            lit = single ? "__int_as_float(0x7fffffff)" : "__longlong_as_double(0x7ff8000000000000LL)";
        } else if (std::isinf(f.value) || (single && std::fabs(f.value) > std::numeric_limits<float>::max())) {
            bool neg = f.value < 0;
            lit = single ? (neg ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)")
                         : (neg ? "__longlong_as_double(0xfff0000000000000LL)" : "__longlong_as_double(0x7ff0000000000000LL)");
        } else {
            char buf[64];
            auto r = single ? std::to_chars(buf, buf + sizeof buf, (float)f.value)
                            : std::to_chars(buf, buf + sizeof buf, f.value);
            std::string s(buf, r.ptr);
            if (s.find_first_of(".e") == std::string::npos) s += ".0";
            else if (s.find('.') == std::string::npos) s.insert(s.find('e'), ".0");
            lit = single ? s + "f" : s;
        }
        if (host_ || !isNarrowFloat(f.dtype)) return {lit, lit[0] == '-' ? 15 : 16};
        return {"tilec::from_float<" + deviceType(f.dtype) + ">(" + lit + ")", 16};
    }
    case NodeKind::Var: {
        auto v = as<VarNode>(e);
        return {names_.of(v, v->name), 16};
    }
    case NodeKind::Binary: return binary(*as<Binary>(e));
    case NodeKind::Unary: {
        auto &u = *as<Unary>(e);
        if (u.op == UnaryOp::Not) return {"!" + wrap(expr(u.a), 15), 15};
        if (u.op == UnaryOp::BitNot) return {"~" + wrap(expr(u.a), 15), 15};
        if (isNarrowFloat(u.dtype))
            return {"tilec::from_float<" + deviceType(u.dtype) + ">(-" + asFloat(u.a, 15) + ")", 16};
        Text a = expr(u.a);
        // `- -x` must not print as `--x`.
        std::string s = wrap(a, 15);
        return {"-" + (s[0] == '-' ? "(" + s + ")" : s), 15};
    }
    case NodeKind::Select: {
        auto &s = *as<Select>(e);
        return {wrap(expr(s.cond), 4) + " ? " + wrap(expr(s.t), 4) + " : " + wrap(expr(s.f), 3), 3};
    }
    case NodeKind::Cast: {
        auto &c = *as<Cast>(e);
        return castTo(c.dtype, c.value);
    }
    case NodeKind::Call: return call(*as<Call>(e));
    case NodeKind::Load: {
        auto &l = *as<Load>(e);
        TILEC_ASSERT(l.indices.size() == 1, "load of '" + l.buffer->name + "' was not flattened");
        return {names_.of(l.buffer.get(), l.buffer->name) + "[" + index(*l.buffer, l.indices[0]) + "]", 16};
    }
    default: break;
    }
    TILEC_ASSERT(false, "a statement held as an expression");
}

std::string ExprPrinter::index(const BufferNode &b, const Expr &i) {
    const bool saved = registerIndex_;
    registerIndex_ = !host_ && b.scope == Scope::Local && !constInt(i);
    std::string s = expr(i).s;
    registerIndex_ = saved;
    return s;
}

ExprPrinter::Text ExprPrinter::castTo(DType to, const Expr &v) {
    if (v->dtype == to) return expr(v);
    if (host_) return {"(int64_t)" + wrap(expr(v), 15), 15};
    DType from = v->dtype;
    bool plain = !isNarrowFloat(to) && !isNarrowFloat(from) && !to.isBool() && !(from.isFloat() && to.isInt());
    if (plain) return {"(" + deviceType(to) + ")" + wrap(expr(v), 15), 15};
    return {"tilec::cast<" + deviceType(to) + ">(" + narrowed(to, v).s + ")", 16};
}

/// A float32 exp2 converted to float16 or float8 as ex2.approx.ftz (tilec::fast_exp2f, one MUFU.EX2) instead of
/// exp2f (ex2.approx.f32: the same MUFU.EX2 for arguments >= -126, and for smaller ones a halved argument and
/// the result squared, three more instructions, so that results below 2^-126 come out subnormal rather than
/// zero). The conversion rounds every float below 2^-25 to zero in float16 (smallest subnormal 2^-24), and
/// below 2^-10 and 2^-17 in e4m3 and e5m2, so both forms convert to the same value for every argument (NaN and
/// infinities included). Not bfloat16, whose subnormals reach 2^-133. The seed's `probs = exp2(...)` in
/// float16: 3 of its softmax's 11 instructions an element.
ExprPrinter::Text ExprPrinter::narrowed(DType to, const Expr &v) {
    auto c = as<Call>(v);
    const bool flushes = to.kind == DType::Float16 || to.isFloat8();
    if (!flushNarrowExp2 || fastMath || host_ || !flushes || !c || c->name != "exp2" || c->dtype.kind != DType::Float32 ||
        c->args.size() != 1)
        return expr(v);
    ++flushedExp2;
    return {"tilec::fast_exp2f(" + expr(c->args[0]).s + ")", 16};
}

ExprPrinter::Text ExprPrinter::binary(const Binary &b) {
    DType t = b.a->dtype;
    bool narrow = isNarrowFloat(t) && !host_;
    auto op2 = [&](const char *op, int prec) -> Text {
        // float16 / bfloat16 +, -, *: the native instruction (HADD2, HMUL2; nvcc contracts a product and a sum
        // into HFMA2 as it does float's into FFMA), not a round trip through float. Same value: float holds the
        // exact result of these operations on 11-bit (8-bit) significands closely enough (24 >= 2p + 2 bits)
        // that rounding it to the narrow type is the correctly rounded narrow result.
        if (narrow && !isComparison(b.op) && (t.kind == DType::Float16 || t.kind == DType::BFloat16) &&
            (b.op == BinaryOp::Add || b.op == BinaryOp::Sub || b.op == BinaryOp::Mul)) {
            const char *f = b.op == BinaryOp::Add ? "__hadd(" : b.op == BinaryOp::Sub ? "__hsub(" : "__hmul(";
            return {std::string(f) + expr(b.a).s + ", " + expr(b.b).s + ")", 16};
        }
        if (narrow) {
            std::string s = asFloat(b.a, prec) + " " + op + " " + asFloat(b.b, prec + 1);
            if (isComparison(b.op)) return {s, prec};
            return {"tilec::from_float<" + deviceType(t) + ">(" + s + ")", 16};
        }
        return {wrap(expr(b.a), prec) + " " + op + " " + wrap(expr(b.b), prec + 1), prec};
    };
    auto fn2 = [&](const std::string &f) -> Text {
        if (narrow) return {"tilec::from_float<" + deviceType(t) + ">(" + f + "f(" + asFloat(b.a, 2) + ", " + asFloat(b.b, 2) + "))", 16};
        return {f + (t.kind == DType::Float32 ? "f" : "") + "(" + expr(b.a).s + ", " + expr(b.b).s + ")", 16};
    };
    std::string ty = host_ ? "int64_t" : deviceType(t);
    switch (b.op) {
    case BinaryOp::Add: return op2("+", 12);
    case BinaryOp::Sub: return op2("-", 12);
    case BinaryOp::Mul: return op2("*", 13);
    case BinaryOp::Div:
        // --use_fast_math: float division as nvcc's -prec-div=false makes it
        if (fastMath && !host_ && (t.kind == DType::Float32 || narrow))
            return fn2("__fdivide");
        return op2("/", 13);
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod: {
        bool div = b.op == BinaryOp::FloorDiv;
        if (t.isFloat()) {
            std::string f = t.kind == DType::Float64 ? "floor" : "floorf";
            std::string x = asFloat(b.a, 2), y = asFloat(b.b, 2);
            std::string q = f + "(" + x + " / " + y + ")";
            std::string r = div ? q : "(" + x + " - " + q + " * " + y + ")";
            if (narrow) return {"tilec::from_float<" + deviceType(t) + ">(" + r + ")", 16};
            return {r, 16};
        }
        if (!host_ && nonNegative(b.a) && nonNegative(b.b)) {
            auto d = constInt(b.b);
            if (registerIndex_ && !div && d && *d > 0 && (*d & (*d - 1)) == 0)
                return {wrap(expr(b.a), 16) + " & " + std::to_string(*d - 1), 8};
            return op2(div ? "/" : "%", 13);
        }
        // By a power of two, Python's floor division and modulo of a two's-complement integer are its arithmetic
        // shift and its low bits, whatever its sign (-3 // 2 == -3 >> 1 == -2, -3 % 2 == -3 & 1 == 1): one
        // instruction where the generic helpers' sign tests cost several (a ring's slot and phase, k % 2 and
        // k // 2, each key block of attention's warp-specialized loops).
        if (auto d = constInt(b.b); !host_ && d && *d > 1 && (*d & (*d - 1)) == 0 &&
                                    (t.kind == DType::Int32 || t.kind == DType::Int64)) {
            if (!div) return {wrap(expr(b.a), 16) + " & " + std::to_string(*d - 1), 8};
            int k = 0;
            while ((int64_t(1) << k) < *d) ++k;
            return {wrap(expr(b.a), 16) + " >> " + std::to_string(k), 11};
        }
        std::string fn = host_ ? (div ? "tilec_floordiv64" : "tilec_floormod64")
                               : std::string(div ? "tilec::floordiv<" : "tilec::floormod<") + ty + ">";
        return {fn + "(" + expr(b.a).s + ", " + expr(b.b).s + ")", 16};
    }
    case BinaryOp::Min:
    case BinaryOp::Max: {
        const char *m = b.op == BinaryOp::Min ? "min" : "max";
        // float16 / bfloat16: the native HMNMX2 (__hmin / __hmax: a NaN operand gives the other, as fminf /
        // fmaxf do), not a round trip through float whose F2F back to the narrow type nvcc cannot drop (the
        // result is one of the operands, exactly representable). TileKernels' amax reductions chain one per
        // element: per_block_cast's 64-element chain was 6 dependent instructions an element, 2 of them F2F.
        if (narrow && (t.kind == DType::Float16 || t.kind == DType::BFloat16))
            return {std::string("__h") + m + "(" + expr(b.a).s + ", " + expr(b.b).s + ")", 16};
        if (t.isFloat()) return fn2(std::string("f") + m);
        if (host_) return {std::string("(") + wrap(expr(b.a), 10) + (b.op == BinaryOp::Min ? " < " : " > ") +
                               wrap(expr(b.b), 10) + " ? " + wrap(expr(b.a), 4) + " : " + wrap(expr(b.b), 3) + ")", 16};
        if (t.bits() < 32) return {"(" + ty + ")" + std::string(m) + "((int)" + wrap(expr(b.a), 15) + ", (int)" + wrap(expr(b.b), 15) + ")", 15};
        // int64_t is long, a literal long long: CUDA's min(long, long long) would be ambiguous.
        if (t.bits() == 64) return {std::string(m) + "((" + ty + ")" + wrap(expr(b.a), 15) + ", (" + ty + ")" + wrap(expr(b.b), 15) + ")", 16};
        return {std::string(m) + "(" + expr(b.a).s + ", " + expr(b.b).s + ")", 16};
    }
    case BinaryOp::Pow:
        if (t.isFloat()) return fn2("pow");
        return {"(" + ty + ")pow((double)" + wrap(expr(b.a), 15) + ", (double)" + wrap(expr(b.b), 15) + ")", 15};
    case BinaryOp::And: return op2("&&", 5);
    case BinaryOp::Or: return op2("||", 4);
    case BinaryOp::BitAnd: return op2("&", 8);
    case BinaryOp::BitOr: return op2("|", 6);
    case BinaryOp::BitXor: return op2("^", 7);
    case BinaryOp::Shl: return op2("<<", 11);
    case BinaryOp::Shr: return op2(">>", 11);
    case BinaryOp::EQ: return op2("==", 9);
    case BinaryOp::NE: return op2("!=", 9);
    case BinaryOp::LT: return op2("<", 10);
    case BinaryOp::LE: return op2("<=", 10);
    case BinaryOp::GT: return op2(">", 10);
    case BinaryOp::GE: return op2(">=", 10);
    }
    TILEC_ASSERT(false, "unknown binary operator");
}

ExprPrinter::Text ExprPrinter::call(const Call &c) {
    if (passes::lib::find(c.name)) return libraryCall(c);
    DType t = c.dtype;
    if (c.name.rfind("extern:", 0) == 0) { // T.call_extern: the function T.import_source (or the toolkit) defines
        std::string s = c.name.substr(7) + "(";
        for (size_t i = 0; i < c.args.size(); ++i) s += (i ? ", " : "") + expr(c.args[i]).s;
        return {s + ")", 16};
    }
    if (auto ieee = ieeeCall(c.name)) { // T.ieee_add(x, y, "rz"): __fadd_rz(x, y)
        std::string s = std::string(t.kind == DType::Float64 ? ieee->first->f64 : ieee->first->f32) + "_" + ieee->second + "(";
        for (size_t i = 0; i < c.args.size(); ++i) s += (i ? ", " : "") + expr(c.args[i]).s;
        return {s + ")", 16};
    }
    if (c.name == "reinterpret") // the operand as its own type (C promotes a uint16_t shift to int)
        return {"tilec::bit_cast<" + deviceType(t) + ">((" + deviceType(c.args[0]->dtype) + ")(" + expr(c.args[0]).s + "))", 16};
    if (c.name == "isfinite" || c.name == "isnan" || c.name == "isinf") {
        const Expr &x = c.args[0];
        return {"(bool)" + c.name + "(" + (isNarrowFloat(x->dtype) ? asFloat(x, 2) : expr(x).s) + ")", 15};
    }
    if (c.name == "popcount") {
        const Expr &x = c.args[0];
        bool wide = x->dtype.bits() == 64;
        return {std::string(wide ? "__popcll((unsigned long long)" : "__popc((unsigned)") + wrap(expr(x), 15) + ")", 16};
    }
    // |x| of float16 / bfloat16: the sign bit cleared (__habs), exact, where the round trip through float ends in
    // an F2F nvcc cannot drop.
    if (c.name == "abs" && !host_ && (t.kind == DType::Float16 || t.kind == DType::BFloat16) && c.args.size() == 1 &&
        c.args[0]->dtype == t)
        return {"__habs(" + expr(c.args[0]).s + ")", 16};
    std::string args;
    bool narrow = isNarrowFloat(t);
    for (size_t i = 0; i < c.args.size(); ++i) args += (i ? ", " : "") + (narrow ? asFloat(c.args[i], 2) : expr(c.args[i]).s);
    std::string fn;
    const MathFn *m = mathFn(c.name);
    if (m && m->fast && fastMath && (t.kind == DType::Float32 || narrow)) {
        fn = m->fast;
    } else if (c.name == "exp2" && flushNarrowExp2 && (t.kind == DType::Float16 || t.isFloat8())) {
        fn = "tilec::fast_exp2f"; // computed in float, rounded to t: as narrowed() says
        ++flushedExp2;
    } else if (c.name == "abs" && t.isInt()) {
        if (t.bits() == 64) fn = "llabs";
        else if (t.bits() == 32) fn = "abs";
        else return {"(" + deviceType(t) + ")abs((int)" + wrap(expr(c.args[0]), 15) + ")", 15};
    } else if (c.name == "sigmoid") {
        fn = "tilec::sigmoid";
    } else if (m && m->precise) {
        TILEC_ASSERT(t.isFloat(), "math function '" + c.name + "' of a non-float type");
        fn = std::string(m->precise) + (t.kind == DType::Float64 ? "" : "f");
    } else {
        TILEC_ASSERT(false, "no CUDA function for T." + c.name);
    }
    std::string s = fn + "(" + args + ")";
    if (narrow) return {"tilec::from_float<" + deviceType(t) + ">(" + s + ")", 16};
    return {s, 16};
}

} // namespace tilec::codegen

namespace tilec::codegen {

/// Calls of the device library (stdlib/tilec): leading integer arguments are template arguments.
ExprPrinter::Text ExprPrinter::libraryCall(const Call &c) {
    namespace lib = passes::lib;
    const lib::Info &f = *lib::find(c.name);
    TILEC_ASSERT(c.args.size() <= f.args.size() && c.args.size() + f.optionalArgs >= f.args.size(),
                 c.name + " has " + std::to_string(c.args.size()) + " arguments, not " + std::to_string(f.args.size()));
    auto constArg = [&](size_t i) {
        auto v = constInt(c.args[i]);
        TILEC_ASSERT(v, c.name + " needs a constant argument '" + f.args[i] + "'");
        return std::to_string(*v);
    };
    auto arg = [&](const char *name) { return expr(lib::arg(c, f.fn, name)).s; };
    switch (f.fn) {
    case lib::Fn::AddressOf: return {"(&" + wrap(expr(c.args[0]), 15) + ")", 16};
    case lib::Fn::ShflXor: return {"__shfl_xor_sync(0xffffffffu, " + arg("value") + ", " + arg("mask") + ")", 16};
    case lib::Fn::WarpAny: return {"(__any_sync(0xffffffffu, " + arg("pred") + ") != 0)", 16};
    case lib::Fn::Shfl:
        return {"__shfl_sync((unsigned)(" + arg("mask") + "), " + arg("value") + ", " + arg("lane") + ", " + arg("width") + ")", 16};
    case lib::Fn::ShflXorSync:
    case lib::Fn::ShflDownSync:
    case lib::Fn::ShflUpSync:
        return {std::string(f.cxx) + "((unsigned)(" + arg("mask") + "), " + arg("value") + ", " + arg("delta") + ", " + arg("width") + ")", 16};
    case lib::Fn::SyncWarp: return {"__syncwarp((unsigned)(" + arg("mask") + "))", 16};
    case lib::Fn::ThreadReturn: return {"return", 16};
    case lib::Fn::RoleThread: return {"(int)threadIdx.x", 15};
    case lib::Fn::Swz: {
        auto tileElems = constInt(c.args[2]), cols = constInt(c.args[0]);
        std::string fn = "tilec::swz<" + constArg(0) + ", " + constArg(1) + ">";
        std::string off = arg("offset");
        // Rows of a tile in multiples of 8 keep every swizzle pattern aligned to the tile, whatever the stage.
        if (cols && tileElems && (*tileElems / *cols) % 8 == 0) return {fn + "(" + off + ")", 16};
        std::string t = constArg(2);
        return {"((" + off + ") / " + t + " * " + t + " + " + fn + "((" + off + ") % " + t + "))", 16};
    }
    case lib::Fn::TmaLoadTile:
    case lib::Fn::TmaLoadTileRows:
    case lib::Fn::TmaLoadTileMulticast: {
        // The map argument is the index of the kernel's tensor map, a __grid_constant__ parameter.
        std::string s = std::string(f.cxx) + "<";
        for (int i = 0; i < f.templateArgs; ++i) s += (i ? ", " : "") + constArg((size_t)i);
        s += ">(" + arg("dst") + ", &" + tensorMapParam(std::stoi(constArg(lib::argIndex(f.fn, "map")))) + ", " + arg("bar");
        if (f.fn == lib::Fn::TmaLoadTileMulticast) s += ", " + arg("ctaMask") + ", " + arg("part");
        if (f.fn == lib::Fn::TmaLoadTileRows) s += ", " + arg("live");
        for (const char *co : {"c0", "c1", "c2", "c3", "c4"}) s += ", " + arg(co);
        return {s + ")", 16};
    }
    case lib::Fn::TmaStoreTile: {
        std::string s = std::string(f.cxx) + "<";
        for (int i = 0; i < f.templateArgs; ++i) s += (i ? ", " : "") + constArg((size_t)i);
        s += ">(" + arg("src") + ", &" + tensorMapParam(std::stoi(constArg(lib::argIndex(f.fn, "map"))));
        // one coordinate per dimension of the map (the function's rank is their count)
        const int rank = std::stoi(constArg(lib::argIndex(f.fn, "rank")));
        const char *coords[5] = {"c0", "c1", "c2", "c3", "c4"};
        for (int d = 0; d < rank && d < 5; ++d) s += ", " + arg(coords[d]);
        return {s + ")", 16};
    }
    case lib::Fn::WarpGroup:
    case lib::Fn::TmaCopyOn:
    case lib::Fn::Reducer:
    case lib::Fn::FinalizeReducer: TILEC_ASSERT(false, c.name + " reached code generation (lowerWarpRoles / lowerReducers remove it)"); break;
    default: break;
    }
    // Everything else: template arguments, then the rest, as the registry describes. A panel layout's span is
    // left out where it is the row's widest (swizzle.cuh's default for it).
    std::string s = f.cxx;
    int templateArgs = f.templateArgs;
    if (f.fn == lib::Fn::SwzPanels || f.fn == lib::Fn::SwzPanelsSplit) {
        auto cols = constInt(lib::arg(c, f.fn, "cols")), eb = constInt(lib::arg(c, f.fn, "elemBytes"));
        TILEC_ASSERT(cols && eb && (size_t)templateArgs == lib::argIndex(f.fn, "span") + 1, c.name + " without its constant row");
        if (constInt(lib::arg(c, f.fn, "span")) == std::optional<int64_t>(lib::widestPanelSpan(*cols * *eb))) --templateArgs;
    }
    if (templateArgs > 0) {
        s += "<";
        for (int i = 0; i < templateArgs; ++i) {
            bool b = std::find(f.boolArgs.begin(), f.boolArgs.end(), i) != f.boolArgs.end();
            std::string v = constArg((size_t)i);
            s += (i ? ", " : "") + (b ? std::string(v == "0" ? "false" : "true") : v);
        }
        s += ">";
    }
    s += "(";
    for (size_t i = (size_t)f.templateArgs; i < c.args.size(); ++i) s += (i > (size_t)f.templateArgs ? ", " : "") + expr(c.args[i]).s;
    if (auto h = hoistedA.find(&c); h != hoistedA.end()) s += ", " + h->second;
    return {s + ")", 16};
}

std::string tensorMapParam(int index) { return "tilec_map_" + std::to_string(index); }

// The vectorized loops that device code prints as vector accesses (CodegenKernel.cpp's transfers).

namespace {

bool isZero(const Expr &e) {
    if (auto f = as<FloatImm>(e)) return f->value == 0.0;
    if (auto i = as<IntImm>(e)) return i->value == 0;
    return false;
}

} // namespace

std::optional<Transfer> matchTransfer(const For &f) {
    auto lanes = constInt(f.extent);
    if (f.forKind != ForKind::Vectorized || !lanes || *lanes < 1 || (*lanes & (*lanes - 1))) return std::nullopt;
    const VarNode *v = f.var.get();
    Transfer t;
    // The register of lane 0: 0, or a constant multiple of the lanes (one run of a gather's registers).
    auto laneIndex = [&](const std::vector<Expr> &idx) {
        if (idx.size() != 1) return false;
        if (idx[0].get() == v) return true;
        auto lin = passes::linearIn(idx[0], v);
        auto c = lin && lin->second == 1 && lin->first ? constInt(lin->first) : std::nullopt;
        return c && *c > 0 && *c % *lanes == 0 && (t.regBase = *c, true);
    };
    auto baseOf = [&](const std::vector<Expr> &idx) -> Expr {
        if (idx.size() != 1) return nullptr;
        auto lin = passes::linearIn(idx[0], v);
        if (!lin || lin->second != 1) return nullptr;
        return lin->first ? lin->first : intImm(0, idx[0]->dtype);
    };
    auto memory = [](const Buffer &b) { return b->scope == Scope::Global || b->scope == Scope::Shared; };
    t.lanes = *lanes;
    Stmt body = f.body;
    if (auto i = as<IfThenElse>(body); i && !i->otherwise) {
        t.cond = i->cond;
        body = i->then;
    }
    auto st = as<Store>(body);
    if (!st) return std::nullopt;
    t.dtype = st->buffer->dtype;
    if (st->buffer->scope == Scope::Local && laneIndex(st->indices) && !t.cond) {
        Expr value = st->value;
        if (auto s = as<Select>(value); s && isZero(s->f)) {
            t.cond = s->cond;
            value = s->t;
        }
        auto l = as<Load>(value);
        if (!l || !memory(l->buffer) || l->buffer->dtype != t.dtype) return std::nullopt;
        t.base = baseOf(l->indices);
        t.memory = l->buffer.get();
        t.regs = st->buffer.get();
    } else if (memory(st->buffer)) {
        auto l = as<Load>(st->value);
        if (!l || l->buffer->scope != Scope::Local || !laneIndex(l->indices) || l->buffer->dtype != t.dtype)
            return std::nullopt;
        t.load = false;
        t.base = baseOf(st->indices);
        t.memory = st->buffer.get();
        t.regs = l->buffer.get();
    } else {
        return std::nullopt;
    }
    if (!t.base || uses(t.base, v) || (t.cond && uses(t.cond, v))) return std::nullopt;
    return t;
}

} // namespace tilec::codegen
