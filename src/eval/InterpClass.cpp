/// \file
/// Classes as Python has them, for the configuration objects kernel factories take: the `class` statement
/// (bases in C3 order, the body run into the class's namespace), instances and their __init__, attribute
/// lookup (bound methods, @property, @staticmethod, @classmethod, super()), attribute assignment, enums'
/// members, and the builtins that go with classes (object, property, super, getattr, hasattr, setattr, type,
/// issubclass, callable). Dataclasses and the enum and dataclasses modules are in Dataclasses.cpp.
#include "eval/InterpImpl.h"

#include <algorithm>

namespace tilec::eval {

namespace {

using Fn = std::function<Value(InterpImpl &, CallArgs &)>;
using CB = ClassObj::Builtin;

Value builtinFn(const std::string &name, Fn fn) { return builtinFunction(name, std::move(fn)); }

bool isBuiltinInstance(const Value &v, CB which) {
    return v.is(VK::Instance) && v.as<InstanceObj>().cls->builtin == which;
}

/// The value `name` has in the first class of `mro` (from position `from`) whose namespace binds it.
const Value *findInMro(const ClassObj &c, const std::string &name, size_t from = 0) {
    for (size_t i = from; i < c.mro.size(); ++i)
        if (auto it = c.mro[i]->ns->vars.find(name); it != c.mro[i]->ns->vars.end()) return &it->second;
    return nullptr;
}

/// C3 linearization of a class with bases `bases`; empty when there is no consistent order.
std::vector<std::shared_ptr<ClassObj>> c3(const std::shared_ptr<ClassObj> &c) {
    std::vector<std::vector<std::shared_ptr<ClassObj>>> seqs;
    for (auto &b : c->bases) seqs.push_back(b->mro);
    seqs.push_back(c->bases);
    std::vector<std::shared_ptr<ClassObj>> out{c};
    while (true) {
        std::erase_if(seqs, [](auto &s) { return s.empty(); });
        if (seqs.empty()) return out;
        std::shared_ptr<ClassObj> head;
        for (auto &s : seqs) {
            bool inTail = std::any_of(seqs.begin(), seqs.end(), [&](auto &t) {
                return std::find(t.begin() + 1, t.end(), s[0]) != t.end();
            });
            if (!inTail) {
                head = s[0];
                break;
            }
        }
        if (!head) return {};
        out.push_back(head);
        for (auto &s : seqs)
            if (s[0] == head) s.erase(s.begin());
    }
}

Value newInstance(const std::shared_ptr<ClassObj> &cls) {
    auto o = std::make_shared<InstanceObj>();
    o->cls = cls;
    o->attrs = newEnv(nullptr);
    return Value::object(VK::Instance, o);
}

} // namespace

bool ClassObj::isEnum() const {
    return std::any_of(mro.begin(), mro.end(), [](auto &c) { return c->builtin == Builtin::Enum; });
}

std::string typeNameOf(const Value &v) {
    if (v.is(VK::Instance)) return v.as<InstanceObj>().cls->name;
    if (v.is(VK::Class)) return "type";
    return typeName(v.kind);
}

Value plainValue(const Value &v) {
    if (!v.is(VK::Instance)) return v;
    auto &o = v.as<InstanceObj>();
    if (o.cls->mixin.empty() || !o.cls->isEnum()) return v;
    auto it = o.attrs->vars.find("_value_");
    return it == o.attrs->vars.end() ? v : it->second;
}

std::shared_ptr<ClassObj> InterpImpl::builtinClass(ClassObj::Builtin which) {
    auto &c = builtinClasses_[(int)which];
    if (c) return c;
    static const char *names[] = {"", "object", "property", "staticmethod", "classmethod", "super", "Enum", "auto", "Field", "BaseException"};
    c = std::make_shared<ClassObj>();
    c->name = names[(int)which];
    c->builtin = which;
    c->ns = newEnv(nullptr);
    if (which == CB::Object) {
        c->ns->set("__init__", builtinFn("object.__init__", [](InterpImpl &in, CallArgs &a) {
            if (a.pos.size() > 1 || !a.kw.empty())
                in.fail(a.call, (a.pos.empty() ? std::string("object") : typeNameOf(a.pos[0].value)) + "() takes no arguments");
            return Value::none();
        }));
        // object.__setattr__(self, name, value): what a frozen dataclass's __post_init__ sets fields with.
        c->ns->set("__setattr__", builtinFn("object.__setattr__", [](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, "object.__setattr__", {"self", "name", "value"});
            if (!x[0]->value.is(VK::Instance)) in.fail(x[0]->range, "object.__setattr__() needs an instance");
            x[0]->value.as<InstanceObj>().attrs->set(in.toStr(*x[1], "attribute name"), x[2]->value);
            return Value::none();
        }));
        c->mro = {c};
    } else if (which == CB::BaseException) {
        c->ns->set("__init__", builtinFn("BaseException.__init__", [](InterpImpl &in, CallArgs &a) {
            std::vector<Value> args;
            for (size_t i = 1; i < a.pos.size(); ++i) args.push_back(a.pos[i].value);
            a.pos[0].value.as<InstanceObj>().attrs->set("args", Value::tuple(std::move(args)));
            return Value::none();
        }));
        c->bases = {builtinClass(CB::Object)};
        c->mro = {c, c->bases[0]};
    } else {
        c->bases = {builtinClass(CB::Object)};
        c->mro = {c, c->bases[0]};
    }
    return c;
}

void InterpImpl::execClass(const ast::StmtP &sp) {
    const ast::Stmt &s = *sp;
    std::vector<std::pair<Value, SourceRange>> decorators;
    for (auto &d : s.decorators) decorators.push_back({eval(*d), d->range});
    auto c = std::make_shared<ClassObj>();
    c->name = s.name;
    c->range = s.range;
    for (auto &k : s.value->keywords)
        failUnevaluable(k.range, "class keyword '" + (k.name.empty() ? "**" : k.name) + "' is not supported at compile time");
    for (auto &b : s.value->elts) {
        std::vector<Value> vs = b->kind == ast::ExprKind::Starred ? iterate(eval(*b->a), b->range) : std::vector<Value>{eval(*b)};
        for (auto &v : vs) {
            if (v.is(VK::Poison)) throw EvalAbort{};
            // A class derived from what tilec does not evaluate (torch.nn.Module) is opaque as well.
            if (v.is(VK::Opaque) || (v.is(VK::Module) && v.as<ModuleObj>().opaque)) {
                Value o = v.is(VK::Opaque) ? deriveOpaque(v, s.name) : makeOpaque(s.name, v.as<ModuleObj>().name);
                if (v.is(VK::Module)) o.as<OpaqueObj>().importedAt = v.as<ModuleObj>().importedAt;
                bindName(s.name, o, s.targets[0]->range, false);
                return;
            }
            if (v.is(VK::Builtin) && (v.as<BuiltinObj>().name == "int" || v.as<BuiltinObj>().name == "str" ||
                                      v.as<BuiltinObj>().name == "float")) {
                c->mixin = v.as<BuiltinObj>().name;
                continue;
            }
            if (v.is(VK::Builtin)) // `class M(type)`, `class D(dict)`: builtin types tilec has no classes for
                failUnevaluable(b->range, "deriving from '" + v.as<BuiltinObj>().name + "' is not supported at compile time");
            if (!v.is(VK::Class)) fail(b->range, "a base class must be a class, not a " + typeNameOf(v));
            if (std::find(c->bases.begin(), c->bases.end(), v.as<ClassObj>().shared()) != c->bases.end())
                fail(b->range, "duplicate base class " + v.as<ClassObj>().name);
            c->bases.push_back(v.as<ClassObj>().shared());
            if (c->mixin.empty()) c->mixin = v.as<ClassObj>().mixin;
        }
    }
    if (c->bases.empty()) c->bases.push_back(builtinClass(CB::Object));
    c->mro = c3(c);
    if (c->mro.empty()) fail(s.value->range, "cannot create a consistent method resolution order (MRO) for bases of '" + s.name + "'");
    for (auto &b : c->bases)
        if (b->isEnum() && !b->members.empty())
            fail(s.value->range, "enum '" + b->name + "' has members and cannot be extended");
    c->ns = newEnv(env_); // the body reads the enclosing scope; its methods do not see the class's (makeFunction)
    c->ns->set("__qualname__", Value::str(s.name));
    {
        Restore<std::shared_ptr<ClassObj>> building(classBuild_, c);
        Restore<std::shared_ptr<Env>> scope(env_, c->ns);
        Restore<const ast::Stmt *> loop(curLoop_, nullptr);
        frames_.emplace_back();
        struct Pop {
            std::deque<CallFrame> &f;
            ~Pop() { f.pop_back(); }
        } pop{frames_};
        int errors = diag_.errorCount();
        execBody(s.body);
        if (diag_.errorCount() > errors) throw EvalAbort{}; // a statement of the body failed: the class did
    }
    c->ns->parent = nullptr;
    if (c->isEnum()) makeEnumMembers(*c, s.range);
    Value v = Value::object(VK::Class, c);
    // Python's type() then calls __set_name__(owner, name) on each attribute whose class defines it (descriptors
    // that learn their name: `FLAG = EnvBool(False)` sets FLAG.name), in the order the body bound them.
    for (auto &name : c->order) {
        Value attr = c->ns->vars[name];
        if (!attr.is(VK::Instance)) continue;
        if (const Value *setName = findInMro(*attr.as<InstanceObj>().cls, "__set_name__")) {
            CallArgs a;
            a.call = a.callee = s.range;
            a.pos = {Arg{attr, s.range}, Arg{v, s.range}, Arg{Value::str(name), s.range}};
            callValue(*setName, a);
        }
    }
    for (auto it = decorators.rbegin(); it != decorators.rend(); ++it) v = applyDecorator(it->first, it->second, v, s.range);
    bindName(s.name, v, s.targets[0]->range, false);
}

void InterpImpl::makeEnumMembers(ClassObj &c, const SourceRange &at) {
    auto self = c.shared();
    int64_t last = 0;
    for (auto &name : c.order) {
        if (name.size() > 1 && name.front() == '_' && name.back() == '_') continue; // __dunder__ and _sunder_
        Value v = c.ns->vars[name];
        if (v.is(VK::Function) || v.is(VK::Builtin) || v.is(VK::Class) || isBuiltinInstance(v, CB::Property) ||
            isBuiltinInstance(v, CB::StaticMethod) || isBuiltinInstance(v, CB::ClassMethod))
            continue;
        if (isBuiltinInstance(v, CB::Auto)) v = Value::integer(last + 1);
        if (c.mixin == "int" && !v.is(VK::Int) && !v.is(VK::Bool))
            fail(at, "member '" + name + "' of int enum '" + c.name + "' is a " + typeNameOf(v) + ", not an int");
        if (v.is(VK::Int)) last = v.i;
        // A second name for an existing value is an alias of that member.
        auto same = std::find_if(c.members.begin(), c.members.end(), [&](const Value &m) {
            return equal(m.as<InstanceObj>().attrs->vars["_value_"], v);
        });
        if (same != c.members.end()) {
            c.ns->set(name, *same);
            continue;
        }
        Value m = newInstance(self);
        auto &attrs = *m.as<InstanceObj>().attrs;
        attrs.set("_name_", Value::str(name));
        attrs.set("name", Value::str(name));
        attrs.set("_value_", v);
        attrs.set("value", v);
        c.members.push_back(m);
        c.ns->set(name, m);
    }
}

Value InterpImpl::callClass(const Value &clsv, CallArgs &args) {
    auto &c = clsv.as<ClassObj>();
    auto first = [&](const char *what) -> const Arg & {
        if (args.pos.size() != 1 || !args.kw.empty()) fail(args.call, std::string(what) + "() takes exactly one argument");
        return args.pos[0];
    };
    switch (c.builtin) {
    case CB::Property: {
        auto x = bindArgs(*this, args, "property", {"fget?", "fset?", "fdel?", "doc?"});
        Value p = newInstance(c.shared());
        p.as<InstanceObj>().attrs->set("fget", x[0] ? x[0]->value : Value::none());
        p.as<InstanceObj>().attrs->set("fset", x[1] ? x[1]->value : Value::none());
        return p;
    }
    case CB::StaticMethod:
    case CB::ClassMethod: {
        Value p = newInstance(c.shared());
        p.as<InstanceObj>().attrs->set("__func__", first(c.name.c_str()).value);
        return p;
    }
    case CB::Super: {
        if (!args.pos.empty() && args.pos.size() != 2) fail(args.call, "super() takes no arguments or two (the class and the object)");
        Value p = newInstance(c.shared());
        auto &o = p.as<InstanceObj>();
        if (args.pos.empty()) {
            const CallFrame &f = frames_.back();
            if (!f.methodClass) fail(args.call, "super(): no arguments outside a method defined in a class body");
            o.superAfter = f.methodClass;
            o.superSelf = f.methodSelf;
        } else {
            if (!args.pos[0].value.is(VK::Class)) fail(args.pos[0].range, "super() argument 1 must be a class");
            o.superAfter = args.pos[0].value.as<ClassObj>().shared();
            o.superSelf = args.pos[1].value;
        }
        return p;
    }
    case CB::Auto: return newInstance(c.shared());
    case CB::Enum: fail(args.call, "'" + c.name + "' has no members to look up; derive an enum class from it");
    default: break;
    }
    if (c.isEnum()) {
        const Arg &v = first(c.name.c_str());
        // A value tilec does not evaluate (`Mode(os.environ.get(...))`) matches no member and raises no ValueError
        // that an `except` could take: the lookup itself cannot be evaluated.
        if (v.value.is(VK::Opaque)) failOpaque(v.value, v.range);
        for (auto &m : c.members)
            if (pyIs(m, v.value) || equal(m.as<InstanceObj>().attrs->vars["_value_"], v.value)) return m;
        failPython("ValueError", v.range, repr(v.value) + " is not a valid " + c.name);
    }
    Value self = newInstance(c.shared());
    const Value *init = findInMro(c, "__init__");
    CallArgs a = args;
    a.pos.insert(a.pos.begin(), Arg{self, args.callee});
    callValue(*init, a);
    return self;
}

namespace {

/// What a class attribute is when read through an instance (`self` set) or the class: functions become
/// bound methods, class methods bind the class, static methods are their function, properties run.
Value bindAttribute(InterpImpl &in, const Value &attr, const Value &self, const std::shared_ptr<ClassObj> &cls,
                    const std::string &name, const SourceRange &at) {
    auto bind = [&](const Value &fn, const Value &to) {
        return builtinFn(cls->name + "." + name, [fn, to](InterpImpl &in, CallArgs &a) {
            CallArgs b = a;
            b.pos.insert(b.pos.begin(), Arg{to, a.callee});
            return in.callValue(fn, b);
        });
    };
    if (isBuiltinInstance(attr, CB::StaticMethod)) return attr.as<InstanceObj>().attrs->vars["__func__"];
    if (isBuiltinInstance(attr, CB::ClassMethod)) return bind(attr.as<InstanceObj>().attrs->vars["__func__"], Value::object(VK::Class, cls));
    if (self.is(VK::None)) return attr;
    if (isBuiltinInstance(attr, CB::Property)) {
        Value get = attr.as<InstanceObj>().attrs->vars["fget"];
        if (get.is(VK::None)) in.fail(at, "property '" + name + "' of '" + cls->name + "' object has no getter");
        CallArgs a;
        a.call = a.callee = at;
        a.pos.push_back({self, at});
        return in.callValue(get, a);
    }
    if (attr.is(VK::Function) || (attr.is(VK::Builtin) && name.starts_with("__") && name.ends_with("__")))
        return bind(attr, self);
    return attr;
}

} // namespace

Value InterpImpl::classAttribute(const Value &base, const std::string &name, const SourceRange &at) {
    if (base.is(VK::Class)) {
        auto c = base.as<ClassObj>().shared();
        if (name == "__name__" || name == "__qualname__") return Value::str(c->name);
        if (name == "__mro__") {
            std::vector<Value> m;
            for (auto &k : c->mro) m.push_back(Value::object(VK::Class, k));
            return Value::tuple(std::move(m));
        }
        if (name == "__members__" && c->isEnum()) {
            auto d = newDict();
            for (auto &m : c->members) d->items.push_back({m.as<InstanceObj>().attrs->vars["name"], m});
            return Value::object(VK::Dict, d);
        }
        if (const Value *v = findInMro(*c, name)) return bindAttribute(*this, *v, Value::none(), c, name, at);
        std::vector<std::string> names;
        for (auto &k : c->mro)
            for (auto &kv : k->ns->vars) names.push_back(kv.first);
        std::string msg = "type object '" + c->name + "' has no attribute '" + name + "'";
        std::string close = closestName(name, names);
        if (!close.empty()) failWithNote(at, msg, at, "did you mean '" + close + "'?");
        failPython("AttributeError", at, msg);
    }
    auto &o = base.as<InstanceObj>();
    if (o.cls->builtin == CB::Super) {
        const Value &self = o.superSelf;
        auto cls = self.is(VK::Class) ? self.as<ClassObj>().shared() : self.is(VK::Instance) ? self.as<InstanceObj>().cls : nullptr;
        if (!cls) fail(at, "super(): the object is not an instance of a class");
        auto pos = std::find(cls->mro.begin(), cls->mro.end(), o.superAfter);
        if (pos == cls->mro.end()) fail(at, "super(type, obj): obj must be an instance or subtype of type");
        if (const Value *v = findInMro(*cls, name, (size_t)(pos - cls->mro.begin()) + 1))
            return bindAttribute(*this, *v, self.is(VK::Class) ? Value::none() : self, cls, name, at);
        failPython("AttributeError", at, "'super' object has no attribute '" + name + "'");
    }
    if (o.cls->builtin == CB::Property && (name == "setter" || name == "getter")) {
        Value prop = base;
        return builtinFn("property." + name, [prop, name](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, "property." + name, {"function"});
            Value p = newInstance(prop.as<InstanceObj>().cls);
            *p.as<InstanceObj>().attrs = *prop.as<InstanceObj>().attrs;
            p.as<InstanceObj>().attrs->set(name == "setter" ? "fset" : "fget", x[0]->value);
            return p;
        });
    }
    if (name == "__class__") return Value::object(VK::Class, o.cls);
    const Value *cattr = findInMro(*o.cls, name);
    if (cattr && isBuiltinInstance(*cattr, CB::Property)) return bindAttribute(*this, *cattr, base, o.cls, name, at);
    if (auto it = o.attrs->vars.find(name); it != o.attrs->vars.end()) return it->second;
    if (cattr) return bindAttribute(*this, *cattr, base, o.cls, name, at);
    std::vector<std::string> names;
    for (auto &kv : o.attrs->vars) names.push_back(kv.first);
    for (auto &k : o.cls->mro)
        for (auto &kv : k->ns->vars) names.push_back(kv.first);
    std::string msg = "'" + o.cls->name + "' object has no attribute '" + name + "'";
    std::string close = closestName(name, names);
    if (!close.empty()) failWithNote(at, msg, at, "did you mean '" + close + "'?");
    failPython("AttributeError", at, msg);
}

void InterpImpl::setAttribute(const Value &base, const std::string &name, const Value &v, const SourceRange &at) {
    if (base.is(VK::Module) && base.as<ModuleObj>().env) {
        base.as<ModuleObj>().env->set(name, v);
        return;
    }
    if (base.is(VK::Class)) {
        auto &c = base.as<ClassObj>();
        if (c.isEnum()) fail(at, "cannot reassign the attributes of enum '" + c.name + "'");
        if (c.builtin != CB::None) fail(at, "cannot set attributes of the built-in type '" + c.name + "'");
        c.ns->set(name, v);
        return;
    }
    if (base.is(VK::Opaque)) failOpaque(base, at); // `setattr(logging.getLogger(n), ...)`: tilec cannot evaluate it
    if (base.is(VK::Function)) { // a function's __dict__
        base.as<FunctionObj>().attrs[name] = v;
        return;
    }
    if (base.is(VK::Module)) {
        // `mod.X = v`: a user module's global; a module tilec does not evaluate (`builtins.X = v`) keeps its own
        // meaning, so the assignment cannot be evaluated (a module-level one is skipped).
        auto &m = base.as<ModuleObj>();
        if (m.env && !m.opaque) {
            m.env->set(name, v);
            return;
        }
        failUnevaluable(at, "setting attribute '" + name + "' of module '" + m.name + "', which tilec does not evaluate");
    }
    if (!base.is(VK::Instance)) fail(at, "cannot set attribute '" + name + "' of a " + typeNameOf(base));
    auto &o = base.as<InstanceObj>();
    if (o.cls->builtin != CB::None || o.cls->isEnum())
        fail(at, "cannot set attribute '" + name + "' of a " + typeNameOf(base));
    if (const Value *cattr = findInMro(*o.cls, name); cattr && isBuiltinInstance(*cattr, CB::Property)) {
        Value set = cattr->as<InstanceObj>().attrs->vars["fset"];
        if (set.is(VK::None)) fail(at, "property '" + name + "' of '" + o.cls->name + "' object has no setter");
        CallArgs a;
        a.call = a.callee = at;
        a.pos = {{base, at}, {v, at}};
        callValue(set, a);
        return;
    }
    if (std::any_of(o.cls->mro.begin(), o.cls->mro.end(), [](auto &k) { return k->frozen; }))
        fail(at, "cannot assign to field '" + name + "': dataclass '" + o.cls->name + "' is frozen "
                 "(dataclasses.replace(obj, " + name + "=...) makes a changed copy)");
    o.attrs->set(name, v);
}

Value attributeOr(InterpImpl &in, const Value &base, const std::string &name, const SourceRange &at, const Value &otherwise) {
    in.diag_.hold();
    Value v;
    bool missing = false;
    try {
        v = in.attributeOf(base, name, at);
    } catch (EvalAbort &) {
        missing = in.pyErrorType_ == "AttributeError";
        if (!missing) {
            for (auto &d : in.diag_.endHold()) in.diag_.report(d.severity, d.range, d.message);
            throw;
        }
    }
    for (auto &d : in.diag_.endHold()) {
        if (missing && d.severity != Severity::Warning) in.reported_.erase({d.range.file, d.range.line, d.range.col, d.message});
        else in.diag_.report(d.severity, d.range, d.message);
    }
    in.pyErrorType_.clear();
    return missing ? otherwise : v;
}


void addClassBuiltins(InterpImpl &in, Env &env) {
    for (CB b : {CB::Object, CB::Property, CB::StaticMethod, CB::ClassMethod, CB::Super})
        env.set(in.builtinClass(b)->name, Value::object(VK::Class, in.builtinClass(b)));
    env.set("getattr", builtinFn("getattr", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "getattr", {"object", "name", "default?"});
        std::string name = in.toStr(*x[1], "attribute name");
        if (!x[2]) return in.attributeOf(x[0]->value, name, a.call);
        return attributeOr(in, x[0]->value, name, a.call, x[2]->value);
    }));
    env.set("hasattr", builtinFn("hasattr", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "hasattr", {"object", "name"});
        std::string name = in.toStr(*x[1], "attribute name");
        return Value::boolean(!attributeOr(in, x[0]->value, name, a.call, Value::poison()).is(VK::Poison));
    }));
    env.set("repr", builtinFn("repr", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "repr", {"object"});
        return in.strOf(x[0]->value, 'r', x[0]->range);
    }));
    env.set("setattr", builtinFn("setattr", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "setattr", {"object", "name", "value"});
        in.setAttribute(x[0]->value, in.toStr(*x[1], "attribute name"), x[2]->value, a.call);
        return Value::none();
    }));
    env.set("type", builtinFn("type", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "type", {"object"});
        const Value &v = x[0]->value;
        if (v.is(VK::Instance)) return Value::object(VK::Class, v.as<InstanceObj>().cls);
        if (v.is(VK::Opaque)) return deriveOpaque(v, "type(" + v.s + ")");
        if (Value *b = in.builtins_->lookup(typeName(v.kind)); b && !v.is(VK::Class)) return *b;
        in.fail(x[0]->range, "type() of a " + typeNameOf(v) + " is not supported at compile time");
    }));
    env.set("issubclass", builtinFn("issubclass", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "issubclass", {"cls", "class_or_tuple"});
        if (!x[0]->value.is(VK::Class)) in.fail(x[0]->range, "issubclass() arg 1 must be a class");
        auto &mro = x[0]->value.as<ClassObj>().mro;
        std::vector<Value> of = x[1]->value.is(VK::Tuple) ? x[1]->value.elements() : std::vector<Value>{x[1]->value};
        for (auto &c : of) {
            if (!c.is(VK::Class)) in.fail(x[1]->range, "issubclass() arg 2 must be a class or a tuple of classes");
            if (std::find(mro.begin(), mro.end(), c.as<ClassObj>().shared()) != mro.end()) return Value::boolean(true);
        }
        return Value::boolean(false);
    }));
    env.set("callable", builtinFn("callable", [](InterpImpl &in, CallArgs &a) {
        auto x = bindArgs(in, a, "callable", {"object"});
        const Value &v = x[0]->value;
        bool call = v.is(VK::Function) || v.is(VK::Builtin) || v.is(VK::Class) || v.is(VK::DType) ||
                    (v.is(VK::Instance) && findInMro(*v.as<InstanceObj>().cls, "__call__"));
        return Value::boolean(call);
    }));
}

} // namespace tilec::eval
