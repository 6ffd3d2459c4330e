/// \file
/// Compile-time stand-ins for the Python modules TileLang programs import besides `tilelang.language`:
/// `math`, `itertools`, the `tilelang` package's helpers (`cdiv`, `next_power_of_2`, `autotune`, `jit`, the
/// carver's SM count; the target queries are TargetModules.cpp's), tvm's `DataType` (also `tilelang.tvm`, and
/// `tvm.tl.language`, TileLang's old name for the tile language),
/// torch's dtypes and `torch.cuda`'s device queries. Build-time GPU
/// queries are answered from the target (-arch, --num-sms), as if the program ran on that GPU.
///
/// Each of these modules knows some attributes; every other attribute is opaque, as for a module tilec
/// does not know at all (an error only where a kernel needs its value).
#include "eval/InterpImpl.h"
#include "eval/TargetModules.h"

#include "tilec/IROperator.h"

#include <cmath>
#include <numeric>

namespace tilec::eval {

namespace {

using Fn = std::function<Value(InterpImpl &, CallArgs &)>;
using Attrs = std::map<std::string, Value>;

void def(Attrs &attrs, const std::string &module, const std::string &name, Fn fn) {
    auto b = std::make_shared<BuiltinObj>();
    b->name = module + "." + name;
    b->fn = [fn = std::move(fn)](Interp &in, CallArgs &a) { return fn(static_cast<InterpImpl &>(in), a); };
    attrs[name] = Value::object(VK::Builtin, b);
}

Value module(const std::string &name, Attrs attrs) {
    auto m = std::make_shared<ModuleObj>();
    m->name = name;
    m->attrs = std::move(attrs);
    m->opaque = true; // attributes not listed are opaque
    return Value::object(VK::Module, m);
}

/// A number argument of a math function: run-time values are an error pointing at the T.* spelling.
double number(InterpImpl &in, const Arg &a, const std::string &fname) {
    Value v = constantOf(a.value);
    if (v.is(VK::Poison)) throw EvalAbort{};
    if (isRuntime(v) || v.is(VK::Expr))
        in.fail(a.range, fname + "() needs a number known at compile time; for a value known only at run time use T." +
                             fname.substr(fname.find('.') + 1) + " if the tile language has it");
    if (!isNumber(v)) in.fail(a.range, fname + "() needs a number, got " + typeName(v.kind));
    return numberAsDouble(v);
}

int64_t integer(InterpImpl &in, const Arg &a, const std::string &fname) {
    Value v = constantOf(a.value);
    if (v.is(VK::Float)) in.fail(a.range, fname + "() needs an integer, got float");
    return in.toInt({v, a.range}, (fname + "() argument").c_str());
}

/// math.ceil / math.floor / math.trunc: an integer, as in Python.
Value rounding(InterpImpl &in, const Arg &a, const std::string &fname, double (*f)(double)) {
    Value v = constantOf(a.value);
    if (v.is(VK::Int) || v.is(VK::Bool)) return Value::integer(intOf(v));
    double d = f(number(in, a, fname));
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) in.fail(a.range, "cannot convert " + floatRepr(d) + " to an integer");
    return Value::integer((int64_t)d);
}

Value real(InterpImpl &in, const SourceRange &r, const std::string &fname, double d) {
    if (std::isnan(d)) in.fail(r, fname + "(): math domain error");
    return Value::real(d);
}

Value mathModule() {
    Attrs m;
    const std::string M = "math";
    auto unary = [&](const char *name, double (*f)(double), bool positive) {
        std::string fname = M + "." + name;
        def(m, M, name, [fname, f, positive](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, fname, {"x"});
            double d = number(in, *x[0], fname);
            if (positive && d <= 0) in.fail(x[0]->range, fname + "(): math domain error");
            return real(in, a.call, fname, f(d));
        });
    };
    unary("sqrt", [](double d) { return std::sqrt(d); }, false);
    unary("exp", [](double d) { return std::exp(d); }, false);
    unary("exp2", [](double d) { return std::exp2(d); }, false);
    unary("log2", [](double d) { return std::log2(d); }, true);
    unary("log10", [](double d) { return std::log10(d); }, true);
    unary("fabs", [](double d) { return std::fabs(d); }, false);
    unary("sin", [](double d) { return std::sin(d); }, false);
    unary("cos", [](double d) { return std::cos(d); }, false);
    unary("tanh", [](double d) { return std::tanh(d); }, false);
    def(m, M, "log", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "math.log", {"x", "base?"});
        double d = number(in, *x[0], "math.log");
        if (d <= 0) in.fail(x[0]->range, "math.log(): math domain error");
        if (!x[1]) return Value::real(std::log(d));
        double b = number(in, *x[1], "math.log");
        if (b <= 0 || b == 1) in.fail(x[1]->range, "math.log(): math domain error");
        return Value::real(std::log(d) / std::log(b));
    });
    def(m, M, "pow", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "math.pow", {"x", "y"});
        return real(in, a.call, "math.pow", std::pow(number(in, *x[0], "math.pow"), number(in, *x[1], "math.pow")));
    });
    def(m, M, "ceil", [](InterpImpl &in, CallArgs &a) {
        return rounding(in, *bindArgs(in, a, "math.ceil", {"x"})[0], "math.ceil", [](double d) { return std::ceil(d); });
    });
    def(m, M, "floor", [](InterpImpl &in, CallArgs &a) {
        return rounding(in, *bindArgs(in, a, "math.floor", {"x"})[0], "math.floor", [](double d) { return std::floor(d); });
    });
    def(m, M, "trunc", [](InterpImpl &in, CallArgs &a) {
        return rounding(in, *bindArgs(in, a, "math.trunc", {"x"})[0], "math.trunc", [](double d) { return std::trunc(d); });
    });
    def(m, M, "isqrt", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "math.isqrt", {"n"});
        int64_t n = integer(in, *x[0], "math.isqrt");
        if (n < 0) in.fail(x[0]->range, "isqrt() argument must be nonnegative");
        int64_t r = (int64_t)std::sqrt((double)n);
        while (r > 0 && (__int128)r * r > n) --r;
        while ((__int128)(r + 1) * (r + 1) <= n) ++r;
        return Value::integer(r);
    });
    auto gcdLcm = [&](const char *name, bool lcm) {
        std::string fname = M + "." + name;
        def(m, M, name, [fname, lcm](InterpImpl &in, CallArgs &a) {
            int64_t acc = lcm ? 1 : 0;
            for (auto &arg : a.pos) {
                int64_t v = integer(in, arg, fname);
                if (v == INT64_MIN) in.fail(arg.range, fname + "() overflows int64");
                v = std::abs(v);
                if (!lcm) acc = std::gcd(acc, v);
                else if (v == 0 || acc == 0) acc = 0;
                else if (__builtin_mul_overflow(acc / std::gcd(acc, v), v, &acc)) in.fail(a.call, fname + "() overflows int64");
            }
            return Value::integer(acc);
        });
    };
    gcdLcm("gcd", false);
    gcdLcm("lcm", true);
    def(m, M, "prod", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "math.prod", {"iterable", "start?"});
        Value acc = x[1] ? x[1]->value : Value::integer(1);
        for (auto &v : in.iterate(x[0]->value, x[0]->range)) acc = binaryOp(in, ast::BinOpKind::Mul, acc, v, a.call);
        return acc;
    });
    m["pi"] = Value::real(M_PI);
    m["e"] = Value::real(M_E);
    m["tau"] = Value::real(2 * M_PI);
    m["inf"] = Value::real(INFINITY);
    return module("math", std::move(m));
}

Value itertoolsModule() {
    Attrs m;
    def(m, "itertools", "product", [](InterpImpl &in, CallArgs &a) {
        int64_t repeat = 1;
        for (auto &[k, v] : a.kw) {
            if (k != "repeat") in.fail(v.range, "itertools.product() got an unexpected keyword argument '" + k + "'");
            repeat = in.toInt(v, "repeat");
            if (repeat < 0) in.fail(v.range, "repeat argument cannot be negative");
            if (repeat > 64) in.fail(v.range, "itertools.product() with repeat=" + std::to_string(repeat) +
                                                  " is too large for compile-time evaluation");
        }
        std::vector<std::vector<Value>> pools;
        for (int64_t r = 0; r < repeat; ++r)
            for (auto &p : a.pos) pools.push_back(in.iterate(p.value, p.range));
        std::vector<std::vector<Value>> out{{}};
        for (auto &pool : pools) {
            std::vector<std::vector<Value>> next;
            for (auto &prefix : out)
                for (auto &v : pool) {
                    if (next.size() >= (size_t(1) << 20)) in.fail(a.call, "this product is too large for compile-time evaluation");
                    next.push_back(prefix);
                    next.back().push_back(v);
                }
            in.charge((int64_t)next.size());
            out = std::move(next);
        }
        std::vector<Value> tuples;
        for (auto &t : out) tuples.push_back(Value::tuple(std::move(t)));
        return Value::list(std::move(tuples));
    });
    def(m, "itertools", "chain", [](InterpImpl &in, CallArgs &a) {
        if (!a.kw.empty()) in.fail(a.kw[0].second.range, "itertools.chain() takes no keyword arguments");
        std::vector<Value> out;
        for (auto &p : a.pos) {
            auto more = in.iterate(p.value, p.range);
            out.insert(out.end(), more.begin(), more.end());
        }
        return Value::list(std::move(out));
    });
    return module("itertools", std::move(m));
}

/// `functools.partial(func, *args, **keywords)`: a callable that calls func with the bound arguments first and
/// its own after (a keyword given again replaces the bound one), as TileKernels' engram passes
/// `T.Fragment(..., forward_fn=partial(smem_layout, vs=8))`.
Value functoolsModule() {
    Attrs m;
    def(m, "functools", "partial", [](InterpImpl &in, CallArgs &a) {
        if (a.pos.empty()) in.fail(a.call, "functools.partial() needs the function to call");
        auto b = std::make_shared<BuiltinObj>();
        b->name = "functools.partial";
        CallArgs bound = a;
        b->fn = [bound](Interp &in2, CallArgs &c) {
            CallArgs all;
            all.call = c.call, all.callee = c.callee;
            all.pos.assign(bound.pos.begin() + 1, bound.pos.end());
            all.pos.insert(all.pos.end(), c.pos.begin(), c.pos.end());
            for (auto &kw : bound.kw)
                if (std::none_of(c.kw.begin(), c.kw.end(), [&](auto &x) { return x.first == kw.first; })) all.kw.push_back(kw);
            all.kw.insert(all.kw.end(), c.kw.begin(), c.kw.end());
            return in2.callValue(bound.pos[0].value, all);
        };
        return Value::object(VK::Builtin, b);
    });
    return module("functools", std::move(m));
}

/// `tilelang.cdiv(a, b)` (= (a + b - 1) // b, on run-time values too) and `next_power_of_2(x)`.
void addTileLangMath(Attrs &m, const std::string &mod) {
    def(m, mod, "cdiv", [mod](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, mod + ".cdiv", {"a", "b"});
        Value sum = binaryOp(in, ast::BinOpKind::Add, x[0]->value, x[1]->value, a.call);
        sum = binaryOp(in, ast::BinOpKind::Sub, sum, Value::integer(1), a.call);
        return binaryOp(in, ast::BinOpKind::FloorDiv, sum, x[1]->value, a.call);
    });
    def(m, mod, "next_power_of_2", [mod](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, mod + ".next_power_of_2", {"x"});
        int64_t v = integer(in, *x[0], mod + ".next_power_of_2");
        // 1 << (v - 1).bit_length(), as TileLang computes it
        __int128 w = (__int128)v - 1;
        unsigned __int128 u = w < 0 ? (unsigned __int128)-w : (unsigned __int128)w;
        int bits = 0;
        while (u) ++bits, u >>= 1;
        if (bits > 62) in.fail(x[0]->range, "next_power_of_2(" + std::to_string(v) + ") overflows int64");
        return Value::integer(int64_t(1) << bits);
    });
}

/// `@autotune(configs=..., ...)` / `@tilelang.autotune(...)`: tilec compiles the configuration the export
/// call passes; the decorator returns the function unchanged. Its arguments are not evaluated
/// (InterpCall.cpp's execDef recognises it by name), so a configuration generator that needs torch or a GPU
/// does not fail the file.
Value autotuneDecorator(const std::string &name) {
    auto b = std::make_shared<BuiltinObj>();
    b->name = name;
    b->fn = [name](Interp &, CallArgs &a) -> Value {
        if (a.pos.size() == 1 && a.kw.empty() && a.pos[0].value.is(VK::Function)) return a.pos[0].value;
        auto inner = std::make_shared<BuiltinObj>();
        inner->name = name + "(...)";
        inner->fn = [](Interp &, CallArgs &b) { return b.pos.size() == 1 ? b.pos[0].value : Value::none(); };
        return Value::object(VK::Builtin, inner);
    };
    return Value::object(VK::Builtin, b);
}

Value carverDriverModule() {
    Attrs m;
    def(m, "tilelang.carver.arch.driver", "get_num_sms", [](InterpImpl &in, CallArgs &a) {
        bindArgs(in, a, "get_num_sms", {"device_id?"});
        return Value::integer(in.opts_.target.numSms);
    });
    return module("tilelang.carver.arch.driver", std::move(m));
}

Value tvmModule() {
    Attrs m;
    def(m, "tvm", "DataType", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "tvm.DataType", {"dtype"});
        return Value::ofDType(in.toDType(*x[0], "dtype"));
    });
    return module("tvm", std::move(m));
}

/// torch's dtypes (so `dtype=torch.float16` works in a factory) and `torch.cuda`'s device queries.
Value torchModule(InterpImpl &in) {
    Attrs m;
    static const std::pair<const char *, DType::Kind> dtypes[] = {
        {"float16", DType::Float16},  {"half", DType::Float16},   {"bfloat16", DType::BFloat16},
        {"float32", DType::Float32},  {"float", DType::Float32},  {"float64", DType::Float64},
        {"double", DType::Float64},   {"int8", DType::Int8},      {"int16", DType::Int16},
        {"int32", DType::Int32},      {"int", DType::Int32},      {"int64", DType::Int64},
        {"long", DType::Int64},       {"uint8", DType::UInt8},    {"bool", DType::Bool},
        {"short", DType::Int16},      {"uint16", DType::UInt16},  {"uint32", DType::UInt32},
        {"uint64", DType::UInt64}, // torch 2.3 on (TileKernels' e5m6 cast packs into torch.uint32)
        {"float8_e4m3fn", DType::Float8E4M3}, {"float8_e5m2", DType::Float8E5M2},
    };
    for (auto &[n, k] : dtypes) m[n] = Value::ofDType(k);
    Attrs cuda;
    const std::string C = "torch.cuda";
    def(cuda, C, "is_available", [](InterpImpl &in, CallArgs &a) { bindArgs(in, a, "torch.cuda.is_available", {}); return Value::boolean(true); });
    def(cuda, C, "current_device", [](InterpImpl &in, CallArgs &a) { bindArgs(in, a, "torch.cuda.current_device", {}); return Value::integer(0); });
    def(cuda, C, "device_count", [](InterpImpl &in, CallArgs &a) { bindArgs(in, a, "torch.cuda.device_count", {}); return Value::integer(1); });
    def(cuda, C, "get_device_capability", [](InterpImpl &in, CallArgs &a) {
        bindArgs(in, a, "torch.cuda.get_device_capability", {"device?"});
        int sm = in.opts_.target.sm;
        return Value::tuple({Value::integer(sm / 10), Value::integer(sm % 10)});
    });
    def(cuda, C, "get_device_name", [](InterpImpl &in, CallArgs &a) {
        bindArgs(in, a, "torch.cuda.get_device_name", {"device?"});
        return Value::str(in.opts_.target.gpuName);
    });
    def(cuda, C, "get_device_properties", [](InterpImpl &in, CallArgs &a) {
        bindArgs(in, a, "torch.cuda.get_device_properties", {"device?"});
        const Target &t = in.opts_.target;
        Attrs p;
        p["name"] = Value::str(t.gpuName);
        p["major"] = Value::integer(t.sm / 10);
        p["minor"] = Value::integer(t.sm % 10);
        p["multi_processor_count"] = Value::integer(t.numSms);
        p["shared_memory_per_multiprocessor"] = Value::integer(t.sharedPerSM);
        p["shared_memory_per_block_optin"] = Value::integer(t.maxSharedPerBlock);
        return module("torch.cuda.get_device_properties(...)", std::move(p));
    });
    m["cuda"] = module("torch.cuda", std::move(cuda));
    // tilec compiles for CUDA, so the torch the kernels run with is a CUDA build: `torch.version.hip is None`, which
    // packages test at import to choose ROCm's code paths (sglang's is_hip(), FP8 fnuz types).
    m["version"] = module("torch.version", {{"hip", Value::none()}});
    // Tensors made from sizes (`torch.randn(m, k, device="cuda")`, `torch.empty((m, n))`): their shape is known.
    for (const char *make : {"rand", "randn", "empty", "zeros", "ones"})
        def(m, "torch", make, [make](InterpImpl &, CallArgs &a) {
            std::vector<Value> dims;
            if (a.pos.size() == 1 && (a.pos[0].value.is(VK::Tuple) || a.pos[0].value.is(VK::List))) dims = a.pos[0].value.elements();
            else for (auto &p : a.pos) dims.push_back(p.value);
            std::vector<int64_t> shape;
            for (auto &d : dims) {
                if (!d.is(VK::Int) || d.i < 0 || shape.size() >= 16)
                    return makeOpaque("torch." + std::string(make) + "(...)", "torch");
                shape.push_back(d.i);
            }
            return torchTensor("torch." + std::string(make) + "(...)", shape);
        });
    (void)in;
    return module("torch", std::move(m));
}

} // namespace

Value builtinFunction(const std::string &name, std::function<Value(InterpImpl &, CallArgs &)> fn) {
    auto b = std::make_shared<BuiltinObj>();
    b->name = name;
    b->fn = [fn = std::move(fn)](Interp &in, CallArgs &a) { return fn(static_cast<InterpImpl &>(in), a); };
    return Value::object(VK::Builtin, b);
}

Value partlyKnownModule(const std::string &name, std::map<std::string, Value> attrs) { return module(name, std::move(attrs)); }

Value torchTensor(std::string what, std::vector<int64_t> shape, bool callKeepsShape) {
    Value v = makeOpaque(std::move(what), "torch");
    v.as<OpaqueObj>().shape = std::move(shape);
    v.as<OpaqueObj>().callKeepsShape = callKeepsShape;
    return v;
}

const std::vector<int64_t> *torchShape(const Value &v) {
    if (!v.is(VK::Opaque) || !v.obj || v.as<OpaqueObj>().callKeepsShape || !v.as<OpaqueObj>().shape) return nullptr;
    return &*v.as<OpaqueObj>().shape;
}

Value opaqueAttribute(const Value &base, const std::string &name) {
    std::string what = base.s + "." + name;
    const std::vector<int64_t> *shape = torchShape(base);
    if (!shape) return deriveOpaque(base, what);
    std::vector<Value> dims;
    for (int64_t d : *shape) dims.push_back(Value::integer(d));
    if (name == "shape") return Value::tuple(dims);
    if (name == "ndim") return Value::integer((int64_t)shape->size());
    if (name == "size" || name == "dim") {
        auto b = std::make_shared<BuiltinObj>();
        b->name = what;
        b->fn = [dims, name](Interp &in, CallArgs &a) -> Value {
            if (name == "dim") {
                bindArgs(in, a, "Tensor.dim", {});
                return Value::integer((int64_t)dims.size());
            }
            auto x = bindArgs(in, a, "Tensor.size", {"dim?"});
            if (!x[0]) return Value::tuple(dims);
            int64_t d = in.toInt(*x[0], "dim"), n = (int64_t)dims.size();
            if (d < -n || d >= n) in.fail(x[0]->range, "dimension out of range (the tensor has " + plural(n, "dimension") + ")");
            return dims[(size_t)(d < 0 ? d + n : d)];
        };
        return Value::object(VK::Builtin, b);
    }
    // Methods that give a tensor of the same shape (device, dtype, layout, in-place fills).
    static const char *keep[] = {"cuda", "cpu", "half", "float", "double", "bfloat16", "int", "long", "bool", "to",
                                 "contiguous", "clone", "detach", "requires_grad_", "uniform_", "normal_", "zero_",
                                 "fill_", "abs", "exp", "sqrt", "sigmoid", "relu", "tanh", "neg"};
    for (const char *k : keep)
        if (name == k) return torchTensor(what, *shape, true);
    return makeOpaque(what, "torch");
}

Value opaqueOperation(const Value &a, const Value &b, bool elementwise) {
    const Value &o = a.is(VK::Opaque) ? a : b;
    const Value &other = a.is(VK::Opaque) ? b : a;
    const std::vector<int64_t> *shape = torchShape(o);
    if (!shape) return o.obj ? deriveOpaque(o, o.s) : o;
    const std::vector<int64_t> *otherShape = torchShape(other);
    bool keeps = elementwise && (isNumber(other) || (otherShape && *otherShape == *shape));
    return keeps ? torchTensor(o.s, *shape) : makeOpaque(o.s, "torch");
}

std::optional<Value> InterpImpl::knownModule(const std::string &dotted) {
    if (auto it = knownModules_.find(dotted); it != knownModules_.end()) return it->second;
    Value v;
    if (dotted == "math") v = mathModule();
    else if (dotted == "itertools") v = itertoolsModule();
    else if (dotted == "functools") v = functoolsModule();
    // typing.TYPE_CHECKING is False when a program runs (only type checkers take its imports): the rest of typing
    // stays opaque, as hints are only carried.
    else if (dotted == "typing") v = module(dotted, {{"TYPE_CHECKING", Value::boolean(false)}});
    else if (dotted == "tvm") v = tvmModule();
    else if (dotted == "tvm.tir" || dotted == "tvm.tirx") v = makeTvmTirModule(dotted);
    else if (dotted == "torch") v = torchModule(*this);
    else if (dotted == "dataclasses") v = *dataclassesModule(*this);
    else if (dotted == "enum") v = *enumModule(*this);
    else if (dotted == "tilelang.carver.arch.driver") v = carverDriverModule();
    else if (auto target = targetModule(*this, dotted)) v = *target; // nvcc, tvm.target, tilelang.*.target
    else if (dotted == "tilelang.tvm") v = *knownModule("tvm"); // `from tilelang import tvm`
    else if (dotted == "tvm.tl") v = module(dotted, {{"language", importModule("tilelang.language")}}); // TileLang's old name
    else if (dotted == "tvm.tl.language") v = importModule("tilelang.language");
    else if (dotted == "tilelang.contrib") v = module(dotted, {{"nvcc", *knownModule(dotted + ".nvcc")}});
    else if (dotted == "tilelang.utils") v = module(dotted, {{"target", *knownModule(dotted + ".target")}});
    else if (dotted == "tilelang.carver.arch") v = module(dotted, {{"driver", *knownModule(dotted + ".driver")}});
    else if (dotted == "tilelang.carver") v = module(dotted, {{"arch", *knownModule(dotted + ".arch")}});
    else if (dotted == "tilelang.autotuner") {
        v = module(dotted, {{"autotune", autotuneDecorator("tilelang.autotuner.autotune")}});
    } else if (dotted == "tilelang.transform") {
        v = module(dotted, {{"PassConfigKey", passConfigKeyEnum()}});
    } else if (dotted == "tilelang.math") {
        Attrs m;
        addTileLangMath(m, dotted);
        v = module(dotted, std::move(m));
    } else if (dotted == "tilelang") {
        Attrs m;
        addTileLangMath(m, "tilelang");
        m["autotune"] = autotuneDecorator("tilelang.autotune");
        m["language"] = importModule("tilelang.language");
        m["jit"] = jitDecorator();
        m["compile"] = tilelangCompile();
        m["PassConfigKey"] = passConfigKeyEnum();
        m["DataType"] = knownModule("tvm")->as<ModuleObj>().attrs.at("DataType"); // `from tilelang import DataType`
        for (const char *sub : {"autotuner", "carver", "contrib", "math", "tileop", "transform", "utils"})
            m[sub] = *knownModule("tilelang." + std::string(sub));
        v = module(dotted, std::move(m));
    } else if (auto helpers = tileLangHelperModule(*this, dotted)) {
        v = *helpers;
    } else {
        return std::nullopt;
    }
    knownModules_[dotted] = v;
    return v;
}

bool isAutotuneDecorator(const Value &v) {
    if (!v.is(VK::Builtin)) return false;
    const std::string &n = v.as<BuiltinObj>().name;
    return n == "tilelang.autotune" || n == "tilelang.autotuner.autotune";
}

} // namespace tilec::eval
