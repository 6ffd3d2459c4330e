/// \file
/// Value helpers: type names for messages, tuple/list construction, scope lookup, Python equality and
/// ordering, and the text of values in messages.
#include "eval/InterpImpl.h"

#include "tilec/IROperator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tilec::eval {

const char *typeName(VK k) {
    switch (k) {
    case VK::Poison: return "error";
    case VK::None: return "NoneType";
    case VK::Bool: return "bool";
    case VK::Int: return "int";
    case VK::Float: return "float";
    case VK::Str: return "str";
    case VK::Tuple: return "tuple";
    case VK::List: return "list";
    case VK::Dict: return "dict";
    case VK::Range: return "range";
    case VK::Function: return "function";
    case VK::Builtin: return "builtin function";
    case VK::Module: return "module";
    case VK::Opaque: return "opaque value";
    case VK::Expr: return "run-time value";
    case VK::Buffer: return "buffer";
    case VK::Access: return "buffer access";
    case VK::DType: return "dtype";
    case VK::TensorType: return "tensor type";
    case VK::PrimFunc: return "prim_func";
    case VK::Frame: return "frame";
    case VK::Reducer: return "T.comm_reducer";
    case VK::Layout: return "T.Layout";
    case VK::Class: return "type";
    case VK::Instance: return "object";
    }
    return "value";
}

// ---------------------------------------------------------------------------------------------------------
// The object registry

namespace {
thread_local ObjectRegistry *g_registry = nullptr;
void track(std::shared_ptr<void> obj, VK kind) {
    if (g_registry) g_registry->add(std::move(obj), kind);
}
} // namespace

ObjectRegistry::ObjectRegistry() : previous_(g_registry) { g_registry = this; }

ObjectRegistry::~ObjectRegistry() {
    teardown();
    g_registry = previous_;
}

void ObjectRegistry::add(std::shared_ptr<void> obj, VK kind) {
    objs_.push_back({std::move(obj), kind});
    if (objs_.size() >= nextSweep_) {
        sweep();
        nextSweep_ = std::max<size_t>(4096, objs_.size() * 2);
    }
}

void ObjectRegistry::drain(Entry &e, std::vector<Value> &values, std::vector<std::shared_ptr<Env>> &envs) {
    auto take = [&](std::vector<Value> &v) {
        for (auto &x : v) values.push_back(std::move(x));
        v.clear();
    };
    switch (e.kind) {
    case VK::Tuple: take(static_cast<TupleObj *>(e.obj.get())->elts); break;
    case VK::List: take(static_cast<ListObj *>(e.obj.get())->elts); break;
    case VK::Dict: {
        auto &items = static_cast<DictObj *>(e.obj.get())->items;
        for (auto &kv : items) {
            values.push_back(std::move(kv.first));
            values.push_back(std::move(kv.second));
        }
        items.clear();
        break;
    }
    default: {
        auto *env = static_cast<Env *>(e.obj.get());
        for (auto &kv : env->vars) values.push_back(std::move(kv.second));
        env->vars.clear();
        if (env->parent) envs.push_back(std::move(env->parent));
        break;
    }
    }
}

void ObjectRegistry::sweep() {
    // Newest first: an unreferenced outer object releases its elements, which may leave the next (older)
    // objects unreferenced in the same sweep. Every object freed here is already empty.
    std::vector<Value> values;
    std::vector<std::shared_ptr<Env>> envs;
    for (size_t i = objs_.size(); i-- > 0;) {
        Entry &e = objs_[i];
        if (e.obj.use_count() != 1) continue;
        drain(e, values, envs);
        values.clear();
        envs.clear();
        e.obj.reset();
    }
    objs_.erase(std::remove_if(objs_.begin(), objs_.end(), [](const Entry &e) { return !e.obj; }), objs_.end());
}

void ObjectRegistry::teardown() {
    std::vector<Value> values;
    std::vector<std::shared_ptr<Env>> envs;
    for (auto &e : objs_) drain(e, values, envs);
    values.clear();
    envs.clear();
    objs_.clear();
}

std::shared_ptr<DictObj> newDict() {
    auto d = std::make_shared<DictObj>();
    track(d, VK::Dict);
    return d;
}

std::shared_ptr<Env> newEnv(std::shared_ptr<Env> parent) {
    auto e = std::make_shared<Env>();
    e->parent = std::move(parent);
    track(e, VK::Module);
    return e;
}

// ---------------------------------------------------------------------------------------------------------
// Values

Value Value::tuple(std::vector<Value> elts) {
    auto t = std::make_shared<TupleObj>();
    t->elts = std::move(elts);
    track(t, VK::Tuple);
    return object(VK::Tuple, t);
}

Value Value::list(std::vector<Value> elts) {
    auto l = std::make_shared<ListObj>();
    l->elts = std::move(elts);
    track(l, VK::List);
    return object(VK::List, l);
}

const std::vector<Value> &Value::elements() const {
    TILEC_ASSERT(kind == VK::Tuple || kind == VK::List, "elements() of a non-sequence");
    return kind == VK::Tuple ? as<TupleObj>().elts : as<ListObj>().elts;
}

bool AccessObj::isPoint() const {
    for (auto &i : indices)
        if (i.extent) return false;
    return true;
}

Value *Env::lookup(const std::string &name) {
    // Iterative: closures nest as deep as the program's defs, which the recursion limit bounds anyway.
    for (Env *e = this; e; e = e->parent.get()) {
        auto it = e->vars.find(name);
        if (it != e->vars.end()) return &it->second;
    }
    return nullptr;
}

std::string opaqueModule(const Value &v) {
    if (v.obj) return v.as<OpaqueObj>().module;
    auto dot = v.s.find('.');
    return dot == std::string::npos ? v.s : v.s.substr(0, dot);
}

Value makeOpaque(std::string what, std::string module) {
    Value v = Value::opaque(std::move(what));
    auto o = std::make_shared<OpaqueObj>();
    o->module = std::move(module);
    v.obj = o;
    return v;
}

Value deriveOpaque(const Value &from, std::string what) {
    Value v = makeOpaque(std::move(what), opaqueModule(from));
    if (from.obj) {
        v.as<OpaqueObj>().importedAt = from.as<OpaqueObj>().importedAt;
        v.as<OpaqueObj>().importedName = from.as<OpaqueObj>().importedName;
    }
    return v;
}

bool isNumber(const Value &v) { return v.is(VK::Int) || v.is(VK::Bool) || v.is(VK::Float); }

double numberAsDouble(const Value &v) {
    if (v.is(VK::Float)) return v.f;
    if (v.is(VK::Bool)) return v.b ? 1 : 0;
    return (double)v.i;
}

int64_t intOf(const Value &v) { return v.is(VK::Bool) ? (v.b ? 1 : 0) : v.i; }

std::optional<bool> pyEquals(const Value &a, const Value &b, int depth, int64_t *work) {
    if (depth > 100) return std::nullopt;
    if (work) ++*work;
    if (isNumber(a) && isNumber(b)) {
        if (a.is(VK::Float) || b.is(VK::Float)) return numberAsDouble(a) == numberAsDouble(b);
        return intOf(a) == intOf(b);
    }
    // TileLang's dtypes compare equal to their names ("float16" == T.float16).
    if (a.is(VK::DType) && b.is(VK::Str)) {
        auto t = DType::parse(b.s);
        return t && *t == a.dtype;
    }
    if (a.is(VK::Str) && b.is(VK::DType)) return pyEquals(b, a, depth, work);
    // An IntEnum member is its value; a dataclass instance equals one of its class with equal fields.
    if (plainValue(a).kind != a.kind || plainValue(b).kind != b.kind) return pyEquals(plainValue(a), plainValue(b), depth + 1, work);
    if (a.is(VK::Instance) && b.is(VK::Instance) && a.obj != b.obj) {
        auto &x = a.as<InstanceObj>(), &y = b.as<InstanceObj>();
        if (x.cls != y.cls || !x.cls->dataclass || !x.cls->dataEq) return false;
        for (auto &f : x.cls->fields) {
            auto i = x.attrs->vars.find(f.name), j = y.attrs->vars.find(f.name);
            if (i == x.attrs->vars.end() || j == y.attrs->vars.end()) return i == j;
            auto e = pyEquals(i->second, j->second, depth + 1, work);
            if (!e || !*e) return e;
        }
        return true;
    }
    if (a.kind != b.kind) return false; // (1,) != [1], as in Python
    switch (a.kind) {
    case VK::None: return true;
    case VK::Str:
        if (work) *work += (int64_t)std::min(a.s.size(), b.s.size()) / 8;
        return a.s == b.s;
    case VK::Tuple:
    case VK::List: {
        auto &x = a.elements(), &y = b.elements();
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i) {
            auto e = pyEquals(x[i], y[i], depth + 1, work);
            if (!e || !*e) return e;
        }
        return true;
    }
    case VK::Dict: {
        auto &x = a.as<DictObj>().items, &y = b.as<DictObj>().items;
        if (x.size() != y.size()) return false;
        for (auto &[k, v] : x) {
            bool found = false;
            for (auto &[k2, v2] : y) {
                auto ke = pyEquals(k, k2, depth + 1, work);
                if (ke && *ke) {
                    auto ve = pyEquals(v, v2, depth + 1, work);
                    if (!ve || !*ve) return ve;
                    found = true;
                    break;
                }
            }
            if (!found) return false;
        }
        return true;
    }
    case VK::Range: {
        auto &x = a.as<RangeObj>(), &y = b.as<RangeObj>();
        return x.start == y.start && x.stop == y.stop && x.step == y.step;
    }
    case VK::DType: return a.dtype == b.dtype;
    case VK::Buffer: return a.buffer == b.buffer;
    case VK::PrimFunc: return a.kernel == b.kernel;
    default: return a.obj == b.obj;
    }
}

bool pyIs(const Value &a, const Value &b) {
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case VK::None: return true;
    case VK::Bool: return a.b == b.b;
    case VK::Int: return a.i == b.i; // CPython caches small ints; tilec treats equal ints as identical
    case VK::Float: return a.f == b.f;
    case VK::Str: return a.s == b.s;
    case VK::DType: return a.dtype == b.dtype;
    case VK::Buffer: return a.buffer == b.buffer;
    case VK::Expr: return a.expr == b.expr;
    case VK::PrimFunc: return a.kernel == b.kernel;
    default: return a.obj == b.obj;
    }
}

std::string floatRepr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, d);
    std::string s(buf, r.ptr);
    // Python's repr: shortest round-trip digits, exponent form below 1e-4 and from 1e16 on.
    double a = std::fabs(d);
    if (a != 0 && (a < 1e-4 || a >= 1e16)) {
        auto e = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
        s.assign(buf, e.ptr);
        auto p = s.find('e');
        if (p != std::string::npos) {
            std::string mant = s.substr(0, p), ex = s.substr(p + 1);
            char sign = ex[0] == '-' ? '-' : '+';
            if (ex[0] == '-' || ex[0] == '+') ex = ex.substr(1);
            while (ex.size() > 1 && ex[0] == '0') ex.erase(0, 1);
            if (ex.size() < 2) ex = "0" + ex;
            s = mant + "e" + sign + ex;
        }
        return s;
    }
    auto f = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed);
    s.assign(buf, f.ptr);
    if (s.find('.') == std::string::npos) s += ".0";
    return s;
}

namespace {
/// Python's quoting of a str: single quotes unless the text has some and no double quotes.
std::string quoteStr(const std::string &s) {
    char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, q);
    for (char c : s) {
        unsigned char u = (unsigned char)c;
        if (c == q || c == '\\') out += '\\', out += c;
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (u < 0x20 || u == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else out += c;
    }
    return out + q;
}

/// `budget` bounds the elements shown over the whole value: nested containers cannot make it explode.
/// `exact`: Python's repr in full (the budget is then kMaxElements, past which "..." still shows).
/// `up`: the containers being shown around this value; one of them again is a cycle, shown as Python does.
struct Shown {
    const void *obj;
    const Shown *up;
    static bool has(const Shown *s, const void *o) {
        for (; s; s = s->up)
            if (s->obj == o) return true;
        return false;
    }
};

std::string reprImpl(const Value &v, int depth, int64_t &budget, bool exact, const Shown *up = nullptr) {
    if (depth > 20 || --budget < 0) return "...";
    bool container = v.is(VK::List) || v.is(VK::Tuple) || v.is(VK::Dict);
    if (container && Shown::has(up, v.obj.get())) return v.is(VK::Dict) ? "{...}" : v.is(VK::List) ? "[...]" : "(...)";
    Shown here{v.obj.get(), up};
    switch (v.kind) {
    case VK::None: return "None";
    case VK::Bool: return v.b ? "True" : "False";
    case VK::Int: return std::to_string(v.i);
    case VK::Float: return floatRepr(v.f);
    case VK::Str: {
        if (exact || v.s.size() <= 200) return quoteStr(v.s);
        std::string s = quoteStr(v.s.substr(0, 200));
        return s.insert(s.size() - 1, "...");
    }
    case VK::Tuple:
    case VK::List: {
        std::string s = v.is(VK::Tuple) ? "(" : "[";
        auto &e = v.elements();
        for (size_t i = 0; i < e.size(); ++i) {
            if ((i == 16 && !exact) || budget <= 0) {
                s += ", ...";
                break;
            }
            s += (i ? ", " : "") + reprImpl(e[i], depth + 1, budget, exact, &here);
        }
        if (v.is(VK::Tuple) && e.size() == 1) s += ",";
        return s + (v.is(VK::Tuple) ? ")" : "]");
    }
    case VK::Dict: {
        if (!exact) return "{...}";
        std::string s = "{";
        for (auto &kv : v.as<DictObj>().items) {
            if (budget <= 0) return s + "...}";
            s += (s.size() > 1 ? ", " : "") + reprImpl(kv.first, depth + 1, budget, exact, &here) + ": " +
                 reprImpl(kv.second, depth + 1, budget, exact, &here);
        }
        return s + "}";
    }
    case VK::Range: {
        auto &r = v.as<RangeObj>();
        return "range(" + std::to_string(r.start) + ", " + std::to_string(r.stop) +
               (r.step != 1 ? ", " + std::to_string(r.step) : "") + ")";
    }
    case VK::Function: return "<function " + v.as<FunctionObj>().def->name + ">";
    case VK::Builtin: return "<built-in function " + v.as<BuiltinObj>().name + ">";
    case VK::Module: return "<module '" + v.as<ModuleObj>().name + "'>";
    case VK::Opaque: return v.s;
    case VK::DType: return "T." + std::string(v.dtype.name());
    case VK::Buffer: return v.buffer->name;
    case VK::PrimFunc: return "<prim_func>";
    case VK::Class: return "<class '" + v.as<ClassObj>().name + "'>";
    case VK::Instance: {
        auto &o = v.as<InstanceObj>();
        auto &attrs = o.attrs->vars;
        if (o.cls->isEnum() && attrs.count("_name_"))
            return "<" + o.cls->name + "." + attrs["_name_"].s + ": " + reprImpl(attrs["_value_"], depth + 1, budget, exact, &here) + ">";
        if (!o.cls->dataclass) return "<" + o.cls->name + " object>";
        std::string s = o.cls->name + "(";
        for (size_t i = 0; i < o.cls->fields.size(); ++i) {
            auto &f = o.cls->fields[i];
            s += (i ? ", " : "") + f.name + "=" + (attrs.count(f.name) ? reprImpl(attrs[f.name], depth + 1, budget, exact, &here) : "?");
        }
        return s + ")";
    }
    default: return std::string("<") + typeName(v.kind) + ">";
    }
}
} // namespace

std::string repr(const Value &v) {
    int64_t budget = 64;
    return reprImpl(v, 0, budget, false);
}

std::string exactRepr(const Value &v) {
    int64_t budget = int64_t(1) << 20; // as many elements as a list may have
    return reprImpl(v, 0, budget, true);
}

std::string str(const Value &v) {
    if (v.is(VK::Str)) return v.s;
    if (v.is(VK::Instance) && v.as<InstanceObj>().attrs->vars.count("args")) { // an exception: its message
        const Value &args = v.as<InstanceObj>().attrs->vars.at("args");
        if (args.is(VK::Tuple) && args.elements().size() <= 1) return args.elements().empty() ? "" : str(args.elements()[0]);
        return repr(args);
    }
    if (v.is(VK::Instance) && v.as<InstanceObj>().cls->isEnum()) {
        auto &attrs = v.as<InstanceObj>().attrs->vars;
        if (plainValue(v).kind != VK::Instance) return str(plainValue(v)); // IntEnum / StrEnum: the value's text
        if (attrs.count("_name_")) return v.as<InstanceObj>().cls->name + "." + attrs["_name_"].s;
    }
    if (v.is(VK::DType)) return std::string(v.dtype.name());
    return exactRepr(v);
}

} // namespace tilec::eval
