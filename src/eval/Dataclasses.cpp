/// \file
/// `@dataclass` (fields from the class's annotations in order, inherited fields first, defaults and
/// field(default=..., default_factory=...), frozen, the generated __init__ with __post_init__) and the
/// stand-ins for the `dataclasses` module (dataclass, field, replace, fields, asdict, astuple,
/// is_dataclass) and the `enum` module (Enum, IntEnum, StrEnum, auto, unique).
#include "eval/InterpImpl.h"

#include <algorithm>

namespace tilec::eval {

namespace {

using CB = ClassObj::Builtin;
using Attrs = std::map<std::string, Value>;

Value builtinFn(const std::string &name, std::function<Value(InterpImpl &, CallArgs &)> fn) {
    return builtinFunction(name, std::move(fn));
}

bool isMutableDefault(const Value &v) { return v.is(VK::List) || v.is(VK::Dict); }

/// The dataclass an argument is (or is an instance of); fails otherwise.
ClassObj &dataclassOf(InterpImpl &in, const Arg &a, const char *fname) {
    const Value &v = a.value;
    ClassObj *c = v.is(VK::Class) ? &v.as<ClassObj>() : v.is(VK::Instance) ? v.as<InstanceObj>().cls.get() : nullptr;
    if (!c || !c->dataclass) in.fail(a.range, std::string(fname) + "() should be called on dataclass instances");
    return *c;
}

/// The generated __init__: the init fields as parameters (keyword-only ones after), defaults and factories
/// for the missing ones, then __post_init__.
Value dataclassInit(std::shared_ptr<ClassObj> cls) {
    return builtinFn(cls->name + ".__init__", [cls](InterpImpl &in, CallArgs &a) {
        const std::string fname = cls->name + ".__init__()";
        auto failHere = [&](const SourceRange &r, const std::string &msg) {
            in.failWithNote(r, msg, cls->range, "'" + cls->name + "' is defined here");
        };
        Value self = a.pos[0].value;
        auto &attrs = *self.as<InstanceObj>().attrs;
        std::vector<const DataField *> positional;
        for (auto &f : cls->fields)
            if (f.init && !f.kwOnly) positional.push_back(&f);
        if (a.pos.size() - 1 > positional.size())
            failHere(a.call, fname + " takes " + plural((int64_t)positional.size() + 1, "positional argument") + " but " +
                                 std::to_string(a.pos.size()) + " were given");
        std::map<std::string, Value> given;
        for (size_t i = 1; i < a.pos.size(); ++i) given[positional[i - 1]->name] = a.pos[i].value;
        for (auto &[name, arg] : a.kw) {
            auto f = std::find_if(cls->fields.begin(), cls->fields.end(), [&](auto &x) { return x.name == name && x.init; });
            if (f == cls->fields.end()) {
                std::vector<std::string> names;
                for (auto &x : cls->fields) names.push_back(x.name);
                std::string msg = fname + " got an unexpected keyword argument '" + name + "'";
                std::string close = closestName(name, names);
                if (!close.empty()) in.failWithNote(arg.range, msg, arg.range, "did you mean '" + close + "'?");
                failHere(arg.range, msg);
            }
            if (given.count(name)) failHere(arg.range, fname + " got multiple values for argument '" + name + "'");
            given[name] = arg.value;
        }
        std::vector<std::string> missing;
        for (auto &f : cls->fields) {
            if (auto it = given.find(f.name); it != given.end()) attrs.set(f.name, it->second);
            else if (f.hasFactory) {
                CallArgs none;
                none.call = none.callee = a.call;
                attrs.set(f.name, in.callValue(f.factory, none));
            } else if (f.hasDefault) attrs.set(f.name, f.defaultValue);
            else if (f.init) missing.push_back("'" + f.name + "'");
        }
        if (!missing.empty()) {
            std::string list;
            for (size_t i = 0; i < missing.size(); ++i)
                list += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
            failHere(a.call, fname + " missing " + plural((int64_t)missing.size(), "required argument") + ": " + list);
        }
        for (auto &k : cls->mro)
            if (auto it = k->ns->vars.find("__post_init__"); it != k->ns->vars.end()) {
                CallArgs p;
                p.call = p.callee = a.call;
                p.pos.push_back({self, a.call});
                in.callValue(it->second, p);
                break;
            }
        return Value::none();
    });
}

} // namespace

Value InterpImpl::makeDataclass(const Value &clsv, CallArgs &options, const SourceRange &at) {
    if (!clsv.is(VK::Class)) fail(at, "@dataclass applies to a class, not a " + typeNameOf(clsv));
    auto c = clsv.as<ClassObj>().shared();
    bool kwOnly = false, init = true;
    for (auto &[k, v] : options.kw) {
        if (k == "frozen") c->frozen = toBool(v, "frozen");
        else if (k == "eq") c->dataEq = toBool(v, "eq");
        else if (k == "init") init = toBool(v, "init");
        else if (k == "kw_only") kwOnly = toBool(v, "kw_only");
        else if (k != "repr" && k != "order" && k != "unsafe_hash" && k != "match_args" && k != "slots" && k != "weakref_slot")
            fail(v.range, "dataclass() got an unexpected keyword argument '" + k + "'");
    }
    for (auto &b : c->bases)
        if (b->dataclass && b->frozen != c->frozen)
            fail(at, std::string("cannot inherit ") + (c->frozen ? "frozen dataclass from a non-frozen one" : "non-frozen dataclass from a frozen one"));
    // Inherited fields first (the most basic class's first), a redefined field keeping its place.
    std::vector<DataField> fields;
    auto add = [&](const DataField &f) {
        auto same = std::find_if(fields.begin(), fields.end(), [&](auto &x) { return x.name == f.name; });
        if (same != fields.end()) *same = f;
        else fields.push_back(f);
    };
    for (size_t i = c->mro.size(); i-- > 1;)
        if (c->mro[i]->dataclass)
            for (auto &f : c->mro[i]->fields) add(f);
    for (auto &[name, range] : c->annotated) {
        DataField f;
        f.name = name;
        f.range = range;
        f.kwOnly = kwOnly;
        if (auto it = c->ns->vars.find(name); it != c->ns->vars.end()) {
            Value v = it->second;
            if (v.is(VK::Instance) && v.as<InstanceObj>().cls->builtin == CB::Field) {
                auto &fa = v.as<InstanceObj>().attrs->vars;
                f.hasDefault = fa.count("default");
                f.hasFactory = fa.count("default_factory");
                if (f.hasDefault) f.defaultValue = fa["default"];
                if (f.hasFactory) f.factory = fa["default_factory"];
                if (fa.count("init")) f.init = toBool({fa["init"], range}, "init");
                if (fa.count("kw_only")) f.kwOnly = toBool({fa["kw_only"], range}, "kw_only");
                if (f.hasDefault) c->ns->set(name, f.defaultValue);
                else c->ns->vars.erase(name);
            } else {
                if (isMutableDefault(v))
                    fail(range, "mutable default " + std::string(typeName(v.kind)) + " for field '" + name +
                                    "' is not allowed: use default_factory");
                f.hasDefault = true;
                f.defaultValue = v;
            }
        }
        add(f);
    }
    const DataField *defaulted = nullptr;
    for (auto &f : fields) {
        if (!f.init || f.kwOnly) continue;
        if (f.hasDefault || f.hasFactory) defaulted = &f;
        else if (defaulted)
            failWithNote(f.range, "non-default argument '" + f.name + "' follows default argument '" + defaulted->name + "'",
                         defaulted->range, "'" + defaulted->name + "' is declared here");
    }
    c->fields = std::move(fields);
    c->dataclass = true;
    if (init && !c->ns->vars.count("__init__")) c->ns->set("__init__", dataclassInit(c));
    return clsv;
}

std::optional<Value> dataclassesModule(InterpImpl &in) {
    Attrs m;
    m["dataclass"] = builtinFn("dataclasses.dataclass", [](InterpImpl &in, CallArgs &a) -> Value {
        if (a.pos.size() == 1) return in.makeDataclass(a.pos[0].value, a, a.call);
        if (!a.pos.empty()) in.fail(a.call, "dataclass() takes the class or keyword arguments only");
        CallArgs options = a;
        return builtinFn("dataclasses.dataclass(...)", [options](InterpImpl &in, CallArgs &b) mutable {
            auto x = bindArgs(in, b, "dataclass", {"cls"});
            return in.makeDataclass(x[0]->value, options, b.call);
        });
    });
    m["field"] = builtinFn("dataclasses.field", [](InterpImpl &in, CallArgs &a) {
        if (!a.pos.empty()) in.fail(a.pos[0].range, "field() takes keyword arguments only");
        Value f = Value::object(VK::Instance, std::make_shared<InstanceObj>());
        auto &o = f.as<InstanceObj>();
        o.cls = in.builtinClass(CB::Field);
        o.attrs = newEnv(nullptr);
        for (auto &[k, v] : a.kw) {
            if (k != "default" && k != "default_factory" && k != "init" && k != "repr" && k != "hash" && k != "compare" &&
                k != "metadata" && k != "kw_only")
                in.fail(v.range, "field() got an unexpected keyword argument '" + k + "'");
            o.attrs->set(k, v.value);
        }
        if (o.attrs->vars.count("default") && o.attrs->vars.count("default_factory"))
            in.fail(a.call, "cannot specify both default and default_factory");
        return f;
    });
    m["replace"] = builtinFn("dataclasses.replace", [](InterpImpl &in, CallArgs &a) {
        if (a.pos.size() != 1) in.fail(a.call, "replace() takes the object and the changes as keywords");
        ClassObj &c = dataclassOf(in, a.pos[0], "replace");
        if (!a.pos[0].value.is(VK::Instance)) in.fail(a.pos[0].range, "replace() should be called on dataclass instances");
        auto &attrs = a.pos[0].value.as<InstanceObj>().attrs->vars;
        CallArgs b;
        b.call = a.call;
        b.callee = a.callee;
        for (auto &[k, v] : a.kw) {
            auto f = std::find_if(c.fields.begin(), c.fields.end(), [&](auto &x) { return x.name == k; });
            if (f == c.fields.end()) in.fail(v.range, c.name + ".__init__() got an unexpected keyword argument '" + k + "'");
            if (!f->init) in.fail(v.range, "field '" + k + "' is declared with init=False, it cannot be specified with replace()");
        }
        for (auto &f : c.fields) {
            if (!f.init) continue;
            auto given = std::find_if(a.kw.begin(), a.kw.end(), [&](auto &kv) { return kv.first == f.name; });
            b.kw.push_back({f.name, given != a.kw.end() ? given->second : Arg{attrs[f.name], a.pos[0].range}});
        }
        return in.callValue(Value::object(VK::Class, c.shared()), b);
    });
    m["fields"] = builtinFn("dataclasses.fields", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "fields", {"class_or_instance"});
        ClassObj &c = dataclassOf(in, *x[0], "fields");
        std::vector<Value> out;
        for (auto &f : c.fields) {
            Value v = Value::object(VK::Instance, std::make_shared<InstanceObj>());
            v.as<InstanceObj>().cls = in.builtinClass(CB::Field);
            v.as<InstanceObj>().attrs = newEnv(nullptr);
            v.as<InstanceObj>().attrs->set("name", Value::str(f.name));
            if (f.hasDefault) v.as<InstanceObj>().attrs->set("default", f.defaultValue);
            out.push_back(v);
        }
        return Value::tuple(std::move(out));
    });
    for (const char *kind : {"asdict", "astuple"}) {
        std::string name = kind;
        m[name] = builtinFn("dataclasses." + name, [name](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, name, {"obj"});
            dataclassOf(in, *x[0], name.c_str());
            std::function<Value(const Value &, int)> conv = [&](const Value &v, int depth) -> Value {
                if (depth > 50 || !v.is(VK::Instance) || !v.as<InstanceObj>().cls->dataclass) return v;
                auto &o = v.as<InstanceObj>();
                auto d = newDict();
                std::vector<Value> t;
                for (auto &f : o.cls->fields) {
                    Value fv = conv(o.attrs->vars[f.name], depth + 1);
                    d->items.push_back({Value::str(f.name), fv});
                    t.push_back(fv);
                }
                return name == "asdict" ? Value::object(VK::Dict, d) : Value::tuple(std::move(t));
            };
            return conv(x[0]->value, 0);
        });
    }
    m["is_dataclass"] = builtinFn("dataclasses.is_dataclass", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "is_dataclass", {"obj"});
        const Value &v = x[0]->value;
        ClassObj *c = v.is(VK::Class) ? &v.as<ClassObj>() : v.is(VK::Instance) ? v.as<InstanceObj>().cls.get() : nullptr;
        return Value::boolean(c && c->dataclass);
    });
    (void)in;
    return partlyKnownModule("dataclasses", std::move(m));
}

std::optional<Value> enumModule(InterpImpl &in) {
    Attrs m;
    auto base = in.builtinClass(CB::Enum);
    m["Enum"] = Value::object(VK::Class, base);
    for (auto [name, mixin] : {std::pair{"IntEnum", "int"}, {"StrEnum", "str"}}) {
        auto c = std::make_shared<ClassObj>();
        c->name = name;
        c->mixin = mixin;
        c->bases = {base};
        c->ns = newEnv(nullptr);
        c->mro = {c, base, base->bases[0]};
        m[name] = Value::object(VK::Class, c);
    }
    m["auto"] = Value::object(VK::Class, in.builtinClass(CB::Auto));
    m["unique"] = builtinFn("enum.unique", [](InterpImpl &in, CallArgs &a) {
        return bindArgs(in, a, "enum.unique", {"enumeration"})[0]->value;
    });
    return partlyKnownModule("enum", std::move(m));
}

} // namespace tilec::eval
