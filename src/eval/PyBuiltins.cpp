/// \file
/// Python's builtins that compile-time code uses: range, len, min, max, abs, int, float, str, bool, tuple,
/// list, dict, set (a tuple of distinct elements), enumerate, zip, sum, any, all, pow, divmod, round, sorted,
/// reversed, isinstance, print.
/// min/max/abs/sum also accept run-time values (they become IR).
#include "eval/InterpImpl.h"

#include "tilec/IROperator.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace tilec::eval {

namespace {

using Fn = std::function<Value(InterpImpl &, CallArgs &)>;

void def(Env &env, const std::string &name, Fn fn) {
    auto b = std::make_shared<BuiltinObj>();
    b->name = name;
    b->fn = [fn = std::move(fn)](Interp &in, CallArgs &a) { return fn(static_cast<InterpImpl &>(in), a); };
    env.set(name, Value::object(VK::Builtin, b));
}

void noKeywords(InterpImpl &in, const CallArgs &a, const std::string &fname) {
    if (!a.kw.empty()) in.fail(a.kw[0].second.range, fname + "() takes no keyword arguments");
}

/// The elements of a min()/max()/sum() style argument list: one iterable or several values.
std::vector<Arg> valuesOf(InterpImpl &in, const CallArgs &a) {
    std::vector<Arg> out;
    if (a.pos.size() == 1) {
        for (auto &v : in.iterate(a.pos[0].value, a.pos[0].range)) out.push_back({v, a.pos[0].range});
    } else {
        out = a.pos;
    }
    return out;
}

Value minMax(InterpImpl &in, CallArgs &a, bool isMax) {
    const char *fname = isMax ? "max" : "min";
    std::optional<Arg> dflt;
    for (auto &[k, v] : a.kw) {
        if (k == "default") dflt = v;
        else if (k == "key") in.fail(v.range, std::string(fname) + "() with key= is not supported at compile time");
        else in.fail(v.range, std::string(fname) + "() got an unexpected keyword argument '" + k + "'");
    }
    if (a.pos.empty()) in.fail(a.call, std::string(fname) + "() expects at least 1 argument, got 0");
    auto vals = valuesOf(in, a);
    if (vals.empty()) {
        if (dflt) return dflt->value;
        in.fail(a.call, std::string(fname) + "() arg is an empty sequence");
    }
    Value best = vals[0].value;
    for (size_t i = 1; i < vals.size(); ++i) {
        const Value &v = vals[i].value;
        if (v.is(VK::Poison) || best.is(VK::Poison)) return Value::poison();
        if (isRuntime(v) || isRuntime(best) || v.is(VK::Expr) || best.is(VK::Expr)) {
            ir::Expr x = in.runtimeExpr(best, a.call), y = in.runtimeExpr(v, vals[i].range, x);
            if (!best.is(VK::Expr) && !isRuntime(best)) x = in.runtimeExpr(best, a.call, y);
            best = Value::ofExpr(ir::binary(isMax ? ir::BinaryOp::Max : ir::BinaryOp::Min, x, y, a.call));
            continue;
        }
        Value less = compareOp(in, ast::CmpOpKind::Lt, isMax ? best : v, isMax ? v : best, a.call);
        if (in.truthy(less, a.call)) best = v;
    }
    return best;
}

int64_t pyRoundHalfEven(double x) {
    double r = std::nearbyint(x); // the default rounding mode is round-half-even, as Python's round()
    return (int64_t)r;
}

Value toIntValue(InterpImpl &in, const Arg &a) {
    Value v = constantOf(a.value);
    switch (v.kind) {
    case VK::Int: return v;
    case VK::Bool: return Value::integer(v.b ? 1 : 0);
    case VK::Float:
        if (!std::isfinite(v.f)) in.fail(a.range, "cannot convert " + floatRepr(v.f) + " to an integer");
        if (v.f >= 9.2233720368547758e18 || v.f < -9.2233720368547758e18)
            in.fail(a.range, "integer overflow in compile-time arithmetic");
        return Value::integer((int64_t)std::trunc(v.f));
    case VK::Str: {
        std::string s = v.s;
        s.erase(0, s.find_first_not_of(" \t\n"));
        s.erase(s.find_last_not_of(" \t\n") + 1);
        std::string digits;
        for (char c : s)
            if (c != '_') digits += c;
        errno = 0;
        char *end = nullptr;
        long long r = digits.empty() ? 0 : std::strtoll(digits.c_str(), &end, 10);
        if (digits.empty() || *end != '\0') in.fail(a.range, "invalid literal for int(): " + repr(v));
        if (errno == ERANGE) in.fail(a.range, "integer overflow in compile-time arithmetic");
        return Value::integer(r);
    }
    default: break;
    }
    return Value::integer(in.toInt(a, "int() argument"));
}

Value toFloatValue(InterpImpl &in, const Arg &a) {
    Value v = constantOf(a.value);
    if (v.is(VK::Str)) {
        std::string s = v.s;
        s.erase(0, s.find_first_not_of(" \t\n"));
        s.erase(s.find_last_not_of(" \t\n") + 1);
        std::string low = s;
        for (char &c : low) c = (char)tolower((unsigned char)c);
        if (low == "inf" || low == "+inf" || low == "infinity") return Value::real(INFINITY);
        if (low == "-inf" || low == "-infinity") return Value::real(-INFINITY);
        if (low == "nan" || low == "+nan" || low == "-nan") return Value::real(NAN);
        char *end = nullptr;
        double d = s.empty() ? 0 : std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0') in.fail(a.range, "could not convert string to float: " + repr(v));
        return Value::real(d);
    }
    return Value::real(in.toFloat(a, "float() argument"));
}


/// range, len, min, max, abs.
void addCounting(Env &env) {
    def(env, "range", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "range", {"start", "stop?", "step?"});
        std::vector<Arg> given;
        for (auto &o : x)
            if (o) given.push_back(*o);
        bool runtime = false;
        for (auto &g : given) runtime |= isRuntime(g.value);
        if (runtime) {
            // A range over run-time bounds is a serial loop of the traced kernel.
            if (!in.trace()) in.failRuntime(a.call, "a range() bound outside a @T.prim_func");
            if (given.size() == 3 && constantOf(given[2].value).is(VK::Int) && constantOf(given[2].value).i != 1)
                in.fail(given[2].range, "range() with a step over run-time bounds is not supported; use a step of 1");
            if (given.size() == 3 && !constantOf(given[2].value).is(VK::Int))
                in.fail(given[2].range, "the step of a run-time range() must be the constant 1");
            for (auto &g : given)
                if (g.value.is(VK::Float) || (g.value.is(VK::Expr) && g.value.expr->dtype.isFloat()))
                    in.fail(g.range, "range() bounds must be integers");
            ir::Expr lo = given.size() == 1 ? ir::intImm(0) : in.toExpr(given[0], "range() start");
            ir::Expr hi = in.toExpr(given.size() == 1 ? given[0] : given[1], "range() stop");
            auto f = std::make_shared<FrameObj>();
            f->kind = FrameObj::Loop;
            f->range = a.call;
            f->forKind = ir::ForKind::Serial;
            f->mins.push_back(lo);
            f->extents.push_back(ir::simplify(ir::binary(ir::BinaryOp::Sub, hi, lo, a.call)));
            return Value::object(VK::Frame, f);
        }
        for (auto &g : given)
            if (constantOf(g.value).is(VK::Float))
                in.fail(g.range, "'float' object cannot be interpreted as an integer");
        auto r = std::make_shared<RangeObj>();
        if (given.size() == 1) {
            r->stop = in.toInt(given[0], "range() argument");
        } else {
            r->start = in.toInt(given[0], "range() start");
            r->stop = in.toInt(given[1], "range() stop");
            if (given.size() == 3) r->step = in.toInt(given[2], "range() step");
        }
        if (r->step == 0) in.fail(given[2].range, "range() arg 3 must not be zero");
        return Value::object(VK::Range, r);
    });
    def(env, "len", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "len", {"obj"});
        const Value &v = x[0]->value;
        switch (v.kind) {
        case VK::Str: return Value::integer((int64_t)v.s.size());
        case VK::Tuple:
        case VK::List: return Value::integer((int64_t)v.elements().size());
        case VK::Dict: return Value::integer((int64_t)v.as<DictObj>().items.size());
        case VK::Class:
            if (!v.as<ClassObj>().isEnum()) break;
            return Value::integer((int64_t)v.as<ClassObj>().members.size());
        case VK::Range: {
            uint64_t n = iterateLength(v.as<RangeObj>());
            if (n > (uint64_t)INT64_MAX) in.fail(a.call, "integer overflow in compile-time arithmetic");
            return Value::integer((int64_t)n);
        }
        case VK::Buffer: {
            if (v.buffer->shape.empty()) in.fail(x[0]->range, "len() of a buffer without dimensions");
            if (auto c = ir::constInt(v.buffer->shape[0])) return Value::integer(*c);
            return Value::ofExpr(v.buffer->shape[0]);
        }
        case VK::Opaque: in.failOpaque(v, x[0]->range);
        default: break;
        }
        in.fail(x[0]->range, std::string("object of type '") + typeName(v.kind) + "' has no len()");
    });
    def(env, "min", [](InterpImpl &in, CallArgs &a) { return minMax(in, a, false); });
    def(env, "max", [](InterpImpl &in, CallArgs &a) { return minMax(in, a, true); });
    def(env, "abs", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "abs", {"x"});
        Value v = x[0]->value;
        if (isRuntime(v) || v.is(VK::Expr)) {
            ir::Expr e = in.runtimeExpr(v, x[0]->range);
            if (auto c = ir::constInt(e); c && *c != INT64_MIN) return Value::ofExpr(ir::intImm(*c < 0 ? -*c : *c, e->dtype));
            if (auto f = ir::as<ir::FloatImm>(e)) return Value::ofExpr(ir::floatImm(std::fabs(f->value), e->dtype));
            return Value::ofExpr(ir::Call::make(e->dtype, "abs", {e}, a.call));
        }
        if (v.is(VK::Float)) return Value::real(std::fabs(v.f));
        if (v.is(VK::Int) || v.is(VK::Bool)) return unaryOp(in, intOf(v) < 0 ? ast::UnaryOpKind::Neg : ast::UnaryOpKind::Pos, Value::integer(intOf(v)), a.call);
        if (v.is(VK::Opaque)) return v;
        in.fail(x[0]->range, std::string("bad operand type for abs(): '") + typeName(v.kind) + "'");
    });
}

/// The conversions: int, float, str, format, ascii, bool, tuple, list, dict.
void addConversions(Env &env) {
    def(env, "int", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "int", {"x?"});
        return x[0] ? toIntValue(in, *x[0]) : Value::integer(0);
    });
    def(env, "float", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "float", {"x?"});
        return x[0] ? toFloatValue(in, *x[0]) : Value::real(0);
    });
    def(env, "str", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "str", {"object?"});
        if (x[0] && x[0]->value.is(VK::Opaque)) return x[0]->value;
        if (x[0] && isRuntime(x[0]->value)) in.failRuntime(x[0]->range, "the argument of str()");
        Value s = x[0] ? in.strOf(x[0]->value, 's', x[0]->range) : Value::str("");
        in.charge((int64_t)s.s.size());
        return s;
    });
    def(env, "format", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "format", {"value", "format_spec?"});
        if (x[1] && x[1]->value.is(VK::Opaque)) return x[1]->value;
        return in.format(x[0]->value, x[1] ? in.toStr(*x[1], "format_spec") : "", a.call);
    });
    def(env, "ascii", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "ascii", {"object"});
        return in.strOf(x[0]->value, 'a', x[0]->range);
    });
    def(env, "bool", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "bool", {"x?"});
        return Value::boolean(x[0] && in.truthy(x[0]->value, x[0]->range, "argument of bool()"));
    });
    def(env, "tuple", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "tuple", {"iterable?"});
        return Value::tuple(x[0] ? in.iterate(x[0]->value, x[0]->range) : std::vector<Value>{});
    });
    def(env, "list", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "list", {"iterable?"});
        return Value::list(x[0] ? in.iterate(x[0]->value, x[0]->range) : std::vector<Value>{});
    });
    def(env, "dict", [](InterpImpl &in, CallArgs &a) {
        if (a.pos.size() > 1) in.fail(a.call, "dict() expects at most 1 positional argument");
        auto d = newDict();
        auto put = [&](const Value &k, const Value &v) {
            for (auto &kv : d->items)
                if (in.equal(kv.first, k)) {
                    kv.second = v;
                    return;
                }
            d->items.push_back({k, v});
        };
        if (!a.pos.empty()) {
            const Value &src = a.pos[0].value;
            if (src.is(VK::Dict)) {
                for (auto &kv : src.as<DictObj>().items) put(kv.first, kv.second);
            } else {
                for (auto &item : in.iterate(src, a.pos[0].range)) {
                    auto kv = in.iterate(item, a.pos[0].range);
                    if (kv.size() != 2) in.fail(a.pos[0].range, "dict() needs pairs of key and value");
                    put(kv[0], kv[1]);
                }
            }
        }
        for (auto &[k, v] : a.kw) put(Value::str(k), v.value);
        return Value::object(VK::Dict, d);
    });
}

/// What walks an iterable: enumerate, zip, sum, any, all.
void addIteration(Env &env) {
    def(env, "enumerate", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "enumerate", {"iterable", "start?"});
        int64_t i = x[1] ? in.toInt(*x[1], "enumerate() start") : 0;
        std::vector<Value> out;
        for (auto &v : in.iterate(x[0]->value, x[0]->range)) {
            out.push_back(Value::tuple({Value::integer(i), v}));
            if (__builtin_add_overflow(i, 1, &i)) in.fail(a.call, "integer overflow in compile-time arithmetic");
        }
        return Value::list(std::move(out));
    });
    def(env, "zip", [](InterpImpl &in, CallArgs &a) {
        noKeywords(in, a, "zip");
        std::vector<std::vector<Value>> seqs;
        for (auto &p : a.pos) seqs.push_back(in.iterate(p.value, p.range));
        std::vector<Value> out;
        size_t n = seqs.empty() ? 0 : SIZE_MAX;
        for (auto &s : seqs) n = std::min(n, s.size());
        for (size_t i = 0; i < n; ++i) {
            std::vector<Value> t;
            for (auto &s : seqs) t.push_back(s[i]);
            out.push_back(Value::tuple(std::move(t)));
        }
        return Value::list(std::move(out));
    });
    def(env, "sum", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "sum", {"iterable", "start?"});
        Value acc = x[1] ? x[1]->value : Value::integer(0);
        for (auto &v : in.iterate(x[0]->value, x[0]->range)) acc = binaryOp(in, ast::BinOpKind::Add, acc, v, a.call);
        return acc;
    });
    def(env, "any", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "any", {"iterable"});
        for (auto &v : in.iterate(x[0]->value, x[0]->range))
            if (in.truthy(v, x[0]->range, "element of any()")) return Value::boolean(true);
        return Value::boolean(false);
    });
    def(env, "all", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "all", {"iterable"});
        for (auto &v : in.iterate(x[0]->value, x[0]->range))
            if (!in.truthy(v, x[0]->range, "element of all()")) return Value::boolean(false);
        return Value::boolean(true);
    });
}

/// The numeric helpers: pow, divmod, round.
void addNumeric(Env &env) {
    def(env, "pow", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "pow", {"base", "exp", "mod?"});
        if (!x[2]) return binaryOp(in, ast::BinOpKind::Pow, x[0]->value, x[1]->value, a.call);
        int64_t b = in.toInt(*x[0], "pow() base"), e = in.toInt(*x[1], "pow() exponent"), m = in.toInt(*x[2], "pow() modulus");
        if (m == 0) in.fail(x[2]->range, "pow() 3rd argument cannot be 0");
        if (e < 0) in.fail(x[1]->range, "pow() with a modulus needs a non-negative exponent");
        __int128 r = 1, base = (((__int128)b % m) + m) % m;
        for (; e > 0; e >>= 1) {
            if (e & 1) r = (r * base) % m;
            base = (base * base) % m;
        }
        int64_t out = (int64_t)r;
        if (out != 0 && ((out < 0) != (m < 0))) out += m;
        return Value::integer(out);
    });
    def(env, "divmod", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "divmod", {"a", "b"});
        return Value::tuple({binaryOp(in, ast::BinOpKind::FloorDiv, x[0]->value, x[1]->value, a.call),
                             binaryOp(in, ast::BinOpKind::Mod, x[0]->value, x[1]->value, a.call)});
    });
    def(env, "round", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "round", {"number", "ndigits?"});
        Value v = constantOf(x[0]->value);
        if (v.is(VK::Int) || v.is(VK::Bool)) return Value::integer(intOf(v));
        double d = in.toFloat({v, x[0]->range}, "round() argument");
        if (!x[1] || x[1]->value.is(VK::None)) {
            if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) in.fail(x[0]->range, "cannot round " + floatRepr(d) + " to an integer");
            return Value::integer(pyRoundHalfEven(d));
        }
        int64_t n = std::clamp<int64_t>(in.toInt(*x[1], "round() ndigits"), -308, 308);
        double p = std::pow(10.0, (double)n);
        double r = std::nearbyint(d * p) / p;
        return Value::real(std::isfinite(r) ? r : d);
    });
}

/// sorted, reversed, isinstance, print, set.
void addOthers(Env &env) {
    def(env, "sorted", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "sorted", {"iterable", "reverse?"});
        auto v = in.iterate(x[0]->value, x[0]->range);
        bool rev = x[1] && in.toBool(*x[1], "reverse");
        std::stable_sort(v.begin(), v.end(), [&](const Value &p, const Value &q) {
            return in.truthy(compareOp(in, ast::CmpOpKind::Lt, rev ? q : p, rev ? p : q, a.call), a.call);
        });
        return Value::list(std::move(v));
    });
    def(env, "reversed", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "reversed", {"sequence"});
        auto v = in.iterate(x[0]->value, x[0]->range);
        std::reverse(v.begin(), v.end());
        return Value::list(std::move(v));
    });
    def(env, "isinstance", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "isinstance", {"obj", "class_or_tuple"});
        if (x[0]->value.is(VK::Opaque)) in.failOpaque(x[0]->value, x[0]->range);
        return Value::boolean(isInstance(in, x[0]->value, *x[1]));
    });
    def(env, "print", [](InterpImpl &, CallArgs &) { return Value::none(); });
    def(env, "set", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "set", {"iterable?"});
        return in.makeSet(x[0] ? in.iterate(x[0]->value, x[0]->range) : std::vector<Value>{}, a.call);
    });
}

} // namespace

bool isInstance(InterpImpl &in, const Value &v, const Arg &cls) {
    const Value &c = cls.value;
    if (c.is(VK::Tuple)) {
        for (auto &e : c.elements())
            if (isInstance(in, v, {e, cls.range})) return true;
        return false;
    }
    if (c.is(VK::Opaque)) in.failOpaque(c, cls.range);
    if (c.is(VK::Class)) {
        if (!v.is(VK::Instance)) return c.as<ClassObj>().builtin == ClassObj::Builtin::Object;
        auto &mro = v.as<InstanceObj>().cls->mro;
        return std::find(mro.begin(), mro.end(), c.as<ClassObj>().shared()) != mro.end();
    }
    if (v.is(VK::Instance) && c.is(VK::Builtin) && plainValue(v).kind != VK::Instance)
        return isInstance(in, plainValue(v), cls); // isinstance(an IntEnum member, int)
    if (!c.is(VK::Builtin)) in.fail(cls.range, "isinstance() arg 2 must be a type such as int, float or str");
    const std::string &n = c.as<BuiltinObj>().name;
    if (n == "int") return v.is(VK::Int) || v.is(VK::Bool);
    if (n == "bool") return v.is(VK::Bool);
    if (n == "float") return v.is(VK::Float);
    if (n == "str") return v.is(VK::Str);
    if (n == "tuple") return v.is(VK::Tuple);
    if (n == "list") return v.is(VK::List);
    if (n == "dict") return v.is(VK::Dict);
    if (n == "range") return v.is(VK::Range);
    in.fail(cls.range, "isinstance() arg 2 must be a type such as int, float or str, not '" + n + "'");
}

void addPyBuiltins(Env &env) {
    addCounting(env);
    addConversions(env);
    addIteration(env);
    addNumeric(env);
    addOthers(env);
}

} // namespace tilec::eval
