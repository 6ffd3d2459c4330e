/// \file
/// Calls (user functions with Python's argument binding, builtins, dtype casts, opaque values), `def`
/// with its decorators, and attribute lookup including the methods of lists, dicts and strings.
#include "eval/InterpImpl.h"
#include "eval/TileLang.h"

#include "tilec/IROperator.h"

#include <algorithm>

namespace tilec::eval {

namespace {

Value method(const std::string &name, std::function<Value(Interp &, CallArgs &)> fn) {
    auto b = std::make_shared<BuiltinObj>();
    b->name = name;
    b->fn = std::move(fn);
    return Value::object(VK::Builtin, b);
}

std::string quoteList(const std::vector<std::string> &names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i)
        s += (i == 0 ? "" : i + 1 == names.size() ? (names.size() > 2 ? ", and " : " and ") : ", ") +
             ("'" + names[i] + "'");
    return s;
}

/// The methods of a list (those it shares with a tuple are sequenceMethod's); none where `name` is not one.
std::optional<Value> listMethod(const Value &base, const std::string &name) {
    auto obj = std::static_pointer_cast<ListObj>(base.obj);
    if (name == "append")
        return method("list.append", [obj](Interp &in, CallArgs &a) {
            auto x = bindArgs(in, a, "list.append", {"object"});
            if (obj->elts.size() >= (size_t(1) << 20)) in.fail(a.call, "this list is too large for compile-time evaluation");
            obj->elts.push_back(x[0]->value);
            return Value::none();
        });
    if (name == "extend")
        return method("list.extend", [obj](Interp &in, CallArgs &a) {
            auto x = bindArgs(in, a, "list.extend", {"iterable"});
            auto more = static_cast<InterpImpl &>(in).iterate(x[0]->value, x[0]->range);
            if (obj->elts.size() + more.size() > (size_t(1) << 20))
                in.fail(a.call, "this list is too large for compile-time evaluation");
            obj->elts.insert(obj->elts.end(), more.begin(), more.end());
            return Value::none();
        });
    if (name == "pop")
        return method("list.pop", [obj](Interp &in, CallArgs &a) {
            auto x = bindArgs(in, a, "list.pop", {"index?"});
            int64_t n = (int64_t)obj->elts.size(), i = x[0] ? in.toInt(*x[0], "index") : -1;
            if (n == 0) in.fail(a.call, "pop from an empty list");
            if (i < 0) i += n;
            if (i < 0 || i >= n) in.fail(a.call, "pop index out of range");
            static_cast<InterpImpl &>(in).charge(n - i);
            Value v = obj->elts[(size_t)i];
            obj->elts.erase(obj->elts.begin() + i);
            return v;
        });
    if (name == "insert")
        return method("list.insert", [obj](Interp &in, CallArgs &a) {
            auto x = bindArgs(in, a, "list.insert", {"index", "object"});
            int64_t n = (int64_t)obj->elts.size(), i = in.toInt(*x[0], "index");
            if (i < 0) i = std::max<int64_t>(0, i + n);
            if (n >= (int64_t(1) << 20)) in.fail(a.call, "this list is too large for compile-time evaluation");
            static_cast<InterpImpl &>(in).charge(n);
            obj->elts.insert(obj->elts.begin() + std::min(i, n), x[1]->value);
            return Value::none();
        });
    if (name == "reverse")
        return method("list.reverse", [obj](Interp &in, CallArgs &a) {
            bindArgs(in, a, "list.reverse", {});
            static_cast<InterpImpl &>(in).charge((int64_t)obj->elts.size());
            std::reverse(obj->elts.begin(), obj->elts.end());
            return Value::none();
        });
    if (name == "copy")
        return method("list.copy", [obj](Interp &in, CallArgs &a) {
            bindArgs(in, a, "list.copy", {});
            static_cast<InterpImpl &>(in).charge((int64_t)obj->elts.size());
            return Value::list(obj->elts);
        });
    return std::nullopt;
}

/// The methods of a tuple or list that read it (index, count); none where `name` is not one.
std::optional<Value> sequenceMethod(const Value &base, const std::string &name) {
    Value seq = base;
    const char *tn = typeName(base.kind);
    if (name == "index" || name == "count")
        return method(std::string(tn) + "." + name, [seq, name, tn](Interp &in, CallArgs &a) {
            auto x = bindArgs(in, a, std::string(tn) + "." + name, {"value"});
            int64_t count = 0;
            auto &elts = seq.elements();
            for (size_t i = 0; i < elts.size(); ++i) {
                if (static_cast<InterpImpl &>(in).equal(elts[i], x[0]->value)) {
                    if (name == "index") return Value::integer((int64_t)i);
                    ++count;
                }
            }
            if (name == "index") in.fail(a.call, repr(x[0]->value) + " is not in the " + tn);
            return Value::integer(count);
        });
    return std::nullopt;
}

/// The methods of a dict; none where `name` is not one.
std::optional<Value> dictMethod(const Value &base, const std::string &name) {
    auto obj = std::static_pointer_cast<DictObj>(base.obj);
    if (name == "get")
        return method("dict.get", [obj](Interp &in, CallArgs &a) {
            auto x = bindArgs(in, a, "dict.get", {"key", "default?"});
            for (auto &kv : obj->items)
                if (static_cast<InterpImpl &>(in).equal(kv.first, x[0]->value)) return kv.second;
            return x[1] ? x[1]->value : Value::none();
        });
    if (name == "keys" || name == "values" || name == "items")
        return method("dict." + name, [obj, name](Interp &in, CallArgs &a) {
            bindArgs(in, a, "dict." + name, {});
            static_cast<InterpImpl &>(in).charge((int64_t)obj->items.size());
            std::vector<Value> out;
            for (auto &kv : obj->items)
                out.push_back(name == "keys"     ? kv.first
                              : name == "values" ? kv.second
                                                 : Value::tuple({kv.first, kv.second}));
            return Value::list(std::move(out));
        });
    return std::nullopt;
}

} // namespace

Value InterpImpl::evalCall(const ast::Expr &e) {
    Value callee = eval(*e.a);
    CallArgs args;
    args.call = e.range;
    args.callee = e.a->range;
    for (auto &x : e.elts) {
        if (x->kind == ast::ExprKind::Starred) {
            for (auto &v : iterate(eval(*x->a), x->range)) args.pos.push_back({v, x->range});
        } else {
            args.pos.push_back({eval(*x), x->range});
        }
    }
    for (auto &k : e.keywords) {
        if (!k.name.empty()) {
            args.kw.push_back({k.name, {eval(*k.value), k.value->range}});
            continue;
        }
        Value m = eval(*k.value);
        if (m.is(VK::Poison)) return m;
        if (!m.is(VK::Dict)) fail(k.value->range, std::string("'**' needs a dict, not a ") + typeName(m.kind));
        charge((int64_t)m.as<DictObj>().items.size());
        for (auto &[key, v] : m.as<DictObj>().items) {
            if (!key.is(VK::Str)) fail(k.value->range, "keywords must be strings");
            args.kw.push_back({key.s, {v, k.value->range}});
        }
    }
    return callValue(callee, args);
}

Value InterpImpl::callValue(const Value &callee, CallArgs &args) {
    switch (callee.kind) {
    case VK::Poison: return callee;
    case VK::Function: return callFunction(callee, args);
    case VK::Builtin: {
        auto &b = callee.as<BuiltinObj>();
        // Tracing happens here and not in the primitive: only the interpreter can run the def's body.
        if (b.name == "T.prim_func" && args.pos.size() == 1 && args.kw.empty() && args.pos[0].value.is(VK::Function))
            return tracePrimFunc(args.pos[0].value, args.call);
        for (auto &a : args.pos)
            if (a.value.is(VK::Poison)) return a.value;
        for (auto &a : args.kw)
            if (a.second.value.is(VK::Poison)) return a.second.value;
        return b.fn(*this, args);
    }
    case VK::DType: return callDType(*this, callee.dtype, args);
    case VK::Opaque:
        if (callee.obj && callee.as<OpaqueObj>().callKeepsShape && callee.as<OpaqueObj>().shape)
            return torchTensor(callee.s + "(...)", *callee.as<OpaqueObj>().shape);
        return deriveOpaque(callee, callee.s + "(...)");
    case VK::Module:
        if (auto &m = callee.as<ModuleObj>(); m.opaque) {
            Value o = makeOpaque(m.name + "(...)", m.name.substr(0, m.name.find('.')));
            o.as<OpaqueObj>().importedAt = m.importedAt;
            return o;
        }
        break;
    case VK::Class:
        for (auto &a : args.pos)
            if (a.value.is(VK::Poison)) return a.value;
        for (auto &a : args.kw)
            if (a.second.value.is(VK::Poison)) return a.second.value;
        return callClass(callee, args);
    case VK::Instance:
        if (auto &o = callee.as<InstanceObj>(); o.cls->builtin == ClassObj::Builtin::None)
            for (auto &k : o.cls->mro)
                if (k->ns->vars.count("__call__")) return callValue(classAttribute(callee, "__call__", args.callee), args);
        break;
    case VK::PrimFunc: failUnevaluable(args.callee, "a prim_func cannot be called at compile time; export it instead");
    default: break;
    }
    fail(args.callee, std::string("'") + typeName(callee.kind) + "' object is not callable");
}

std::shared_ptr<Env> InterpImpl::bindParams(const FunctionObj &f, CallArgs &args) {
    const ast::Stmt &def = *f.def;
    const std::string fname = def.name + "()";
    auto env = newEnv(f.closure);
    auto failHere = [&](const SourceRange &r, const std::string &msg) {
        failWithNote(r, msg, def.range, "'" + def.name + "' is defined here");
    };
    std::vector<bool> bound(def.params.size(), false);
    int varArgs = -1, varKw = -1;
    std::vector<size_t> positional;
    for (size_t i = 0; i < def.params.size(); ++i) {
        switch (def.params[i].kind) {
        case ast::Param::Normal: positional.push_back(i); break;
        case ast::Param::VarArgs: varArgs = (int)i; break;
        case ast::Param::VarKw: varKw = (int)i; break;
        case ast::Param::KwOnly: break;
        }
    }
    // Positional arguments fill the positional parameters, the rest goes to *args.
    std::vector<Value> extra;
    for (size_t i = 0; i < args.pos.size(); ++i) {
        if (i < positional.size()) {
            env->set(def.params[positional[i]].name, args.pos[i].value);
            bound[positional[i]] = true;
        } else if (varArgs >= 0) {
            extra.push_back(args.pos[i].value);
        } else {
            size_t required = 0;
            for (size_t p : positional)
                if (!f.hasDefault[p]) ++required;
            std::string takes = required == positional.size()
                                    ? plural((int64_t)positional.size(), "positional argument")
                                    : "from " + std::to_string(required) + " to " +
                                          plural((int64_t)positional.size(), "positional argument");
            failHere(args.call, fname + " takes " + takes + " but " + std::to_string(args.pos.size()) +
                                    (args.pos.size() == 1 ? " was" : " were") + " given");
        }
    }
    if (varArgs >= 0) {
        env->set(def.params[varArgs].name, Value::tuple(std::move(extra)));
        bound[varArgs] = true;
    }
    auto kwDict = newDict();
    for (auto &[name, arg] : args.kw) {
        size_t i = 0;
        for (; i < def.params.size(); ++i) {
            auto k = def.params[i].kind;
            if (def.params[i].name == name && (k == ast::Param::Normal || k == ast::Param::KwOnly)) break;
        }
        if (i == def.params.size()) {
            if (varKw >= 0) {
                charge((int64_t)kwDict->items.size());
                for (auto &kv : kwDict->items)
                    if (kv.first.s == name) failHere(arg.range, fname + " got multiple values for argument '" + name + "'");
                kwDict->items.push_back({Value::str(name), arg.value});
                continue;
            }
            std::vector<std::string> names;
            for (auto &p : def.params)
                if (p.kind == ast::Param::Normal || p.kind == ast::Param::KwOnly) names.push_back(p.name);
            std::string msg = fname + " got an unexpected keyword argument '" + name + "'";
            std::string close = closestName(name, names);
            if (!close.empty()) failWithNote(arg.range, msg, arg.range, "did you mean '" + close + "'?");
            failHere(arg.range, msg);
        }
        if (bound[i]) failHere(arg.range, fname + " got multiple values for argument '" + name + "'");
        env->set(name, arg.value);
        bound[i] = true;
    }
    if (varKw >= 0) {
        env->set(def.params[varKw].name, Value::object(VK::Dict, kwDict));
        bound[varKw] = true;
    }
    std::vector<std::string> missingPos, missingKw;
    for (size_t i = 0; i < def.params.size(); ++i) {
        if (bound[i]) continue;
        if (f.hasDefault[i]) {
            env->set(def.params[i].name, f.defaults[i]);
            continue;
        }
        (def.params[i].kind == ast::Param::KwOnly ? missingKw : missingPos).push_back(def.params[i].name);
    }
    if (!missingPos.empty())
        failHere(args.call, fname + " missing " + plural((int64_t)missingPos.size(), "required positional argument") +
                                ": " + quoteList(missingPos));
    if (!missingKw.empty())
        failHere(args.call, fname + " missing " + plural((int64_t)missingKw.size(), "required keyword-only argument") +
                                ": " + quoteList(missingKw));
    return env;
}

Value InterpImpl::callFunction(const Value &fn, CallArgs &args) {
    auto &f = fn.as<FunctionObj>();
    if ((int)frames_.size() > opts_.recursionLimit)
        fail(args.call, "recursion is too deep (more than " + std::to_string(opts_.recursionLimit) + " nested calls)");
    // Poison arguments: the mistake is reported; running the body would only report its consequences.
    for (auto &a : args.pos)
        if (a.value.is(VK::Poison)) return a.value;
    for (auto &a : args.kw)
        if (a.second.value.is(VK::Poison)) return a.second.value;
    if (f.isEager)
        failUnevaluable(args.call, "calling the eager kernel '" + f.def->name + "' runs it; tilec compiles it from '" +
                                       f.def->name + ".compile(...)' with its sizes as keywords (M=1024, ...)");
    auto env = bindParams(f, args);
    if (f.isFactory) ranFactory_ = true;
    Value self;
    if (f.ownerClass && !f.def->params.empty())
        if (Value *p = env->lookup(f.def->params[0].name)) self = *p;
    int errors = diag_.errorCount();
    Restore<std::shared_ptr<Env>> scope(env_, env);
    Restore<const ast::Stmt *> loop(curLoop_, nullptr);
    frames_.emplace_back();
    frames_.back().methodClass = f.ownerClass;
    frames_.back().methodSelf = self;
    struct Pop {
        std::deque<CallFrame> &f;
        ~Pop() { f.pop_back(); }
    } pop{frames_};
    Flow flow = execBody(f.def->body);
    // A statement of the body failed: like a Python exception, the call has no meaningful result.
    if (diag_.errorCount() > errors) return Value::poison();
    Value result = flow == Flow::Return ? withPassConfigs(*this, f, frames_.back().ret) : Value::none();
    // A kernel factory that forgot `return kernel`: said at its def when the file then exports nothing.
    if (f.isFactory && !f.isPrimFunc && result.is(VK::None) &&
        std::find(factoriesReturningNone_.begin(), factoriesReturningNone_.end(), f.def.get()) == factoriesReturningNone_.end())
        factoriesReturningNone_.push_back(f.def.get());
    return result;
}

namespace {

/// Whether a decorator expression names jit, autotune or prim_func (`@tilelang.jit(out_idx=...)`, `@T.prim_func`).
bool kernelDecorator(const ast::Expr &d) {
    const ast::Expr *e = d.kind == ast::ExprKind::Call && d.a ? d.a.get() : &d;
    if (e->kind != ast::ExprKind::Name && e->kind != ast::ExprKind::Attribute) return false;
    return e->str == "jit" || e->str == "autotune" || e->str == "prim_func";
}

/// Whether a def makes kernels: decorated like a TileLang factory, or defining a @T.prim_func inside.
bool makesKernels(const ast::Stmt &def, int depth = 0) {
    if (depth > 50) return false;
    for (auto &d : def.decorators)
        if (d && kernelDecorator(*d)) return true;
    std::function<bool(const ast::Body &)> scan = [&](const ast::Body &body) {
        for (auto &s : body) {
            if (s->kind == ast::StmtKind::FunctionDef && makesKernels(*s, depth + 1)) return true;
            if (scan(s->body) || scan(s->orelse)) return true;
        }
        return false;
    };
    return scan(def.body);
}

} // namespace

Value InterpImpl::makeFunction(const ast::StmtP &sp) {
    const ast::Stmt &s = *sp;
    auto f = std::make_shared<FunctionObj>();
    f->isFactory = makesKernels(s);
    f->def = sp;
    f->closure = env_;
    // A method does not see its class's namespace (Python's rule); it knows its class for super().
    if (classBuild_ && env_ == classBuild_->ns) {
        f->closure = env_->parent;
        f->ownerClass = classBuild_;
    }
    for (auto &p : s.params) {
        if (p.defaultValue) {
            Value d = eval(*p.defaultValue);
            if (d.is(VK::Poison)) throw EvalAbort{};
            f->defaults.push_back(d);
            f->hasDefault.push_back(true);
        } else {
            f->defaults.push_back(Value::none());
            f->hasDefault.push_back(false);
        }
    }
    return Value::object(VK::Function, f);
}

void InterpImpl::execDef(const ast::StmtP &sp) {
    const ast::Stmt &s = *sp;
    Value v = makeFunction(sp);
    std::vector<std::pair<Value, SourceRange>> decorators;
    for (auto &d : s.decorators) {
        // @autotune(configs=...): tilec compiles the configuration an export passes, so the autotuner's
        // arguments (often generated with torch or a GPU query) are not evaluated.
        if (d->kind == ast::ExprKind::Call) {
            Value callee = eval(*d->a);
            if (isAutotuneDecorator(callee)) continue;
        }
        decorators.push_back({eval(*d), d->range});
    }
    // Decorators apply bottom-up, as in Python.
    for (auto it = decorators.rbegin(); it != decorators.rend(); ++it) {
        const Value &dec = it->first;
        if (dec.is(VK::Poison)) throw EvalAbort{};
        if (dec.is(VK::Builtin) && dec.as<BuiltinObj>().name == "T.prim_func" && v.is(VK::Function)) {
            // v, not the function made above: a decorator below this one may have replaced (and freed) it
            // (`@T.prim_func` over `@tilelang.jit`: a use after free the crash fuzzer found, session 9)
            v.as<FunctionObj>().isPrimFunc = true;
            v = tracePrimFunc(v, it->second);
            continue;
        }
        v = applyDecorator(dec, it->second, v, s.range);
    }
    bindName(s.name, v, s.range, false);
}

Value InterpImpl::applyDecorator(const Value &dec, const SourceRange &decAt, const Value &v, const SourceRange &at) {
    if (dec.is(VK::Poison)) throw EvalAbort{};
    // Decorators of modules tilec does not evaluate (functools.lru_cache, torch.no_grad, ...) do not change
    // what the function computes at compile time.
    if (dec.is(VK::Opaque) || (dec.is(VK::Module) && dec.as<ModuleObj>().opaque)) return v;
    CallArgs args;
    args.call = decAt;
    args.callee = decAt;
    args.pos.push_back({v, at});
    return callValue(dec, args);
}

Value InterpImpl::attribute(const Value &base, const std::string &name, const ast::Expr &e) {
    const SourceRange &r = e.range;
    // `x.astype(T.float32)` on a run-time scalar (a load, an expression, a kernel variable): a cast.
    if (name == "astype" && (isRuntime(base) || base.is(VK::Expr))) {
        Value self = base;
        return method("astype", [self](Interp &in, CallArgs &a) {
            auto x = bindArgs(in, a, "astype", {"dtype"});
            DType t = in.toDType(*x[0], "dtype");
            if (t == DType::Void) in.fail(x[0]->range, "cannot cast to void");
            return Value::ofExpr(ir::cast(t, in.toExpr({self, a.callee}, "value"), a.call));
        });
    }
    // `X.data`: the tensor's memory, which T.Tensor(shape, dtype, X.data) views with another shape; elsewhere it
    // stands for X itself (the same memory and shape).
    if (name == "data" && base.is(VK::Buffer) && base.buffer->scope == ir::Scope::Global) {
        Value v = base;
        v.s = "data";
        return v;
    }
    switch (base.kind) {
    case VK::Poison: return base;
    case VK::Opaque: return opaqueAttribute(base, name);
    case VK::Function:
        if (auto it = base.as<FunctionObj>().attrs.find(name); it != base.as<FunctionObj>().attrs.end()) return it->second;
        if (name == "__name__" || name == "__qualname__") return Value::str(base.as<FunctionObj>().def->name);
        if (name == "compile" && base.as<FunctionObj>().isJit) {
            Value self = base;
            return method(base.as<FunctionObj>().def->name + ".compile", [self](Interp &in, CallArgs &a) {
                return static_cast<InterpImpl &>(in).compileJit(self, a);
            });
        }
        if (name == "par_compile" && base.as<FunctionObj>().isJit)
            fail(r, "par_compile compiles a list of configurations at once; export each one with '" +
                        base.as<FunctionObj>().def->name + ".compile(...)' instead");
        // A @tilelang.jit function's other methods (get_kernel_source, get_tir, ...) run TileLang itself: opaque,
        // so a module-level statement using one is skipped with a warning, as a PrimFunc's are.
        if (base.as<FunctionObj>().isJit && name.rfind("__", 0) != 0)
            return makeOpaque(base.as<FunctionObj>().def->name + "." + name, "tilelang");
        break;
    case VK::PrimFunc:
        // The JIT kernel's methods (get_profiler, get_kernel_source, ...) run TileLang itself: opaque.
        return makeOpaque("kernel." + name, "tilelang");
    case VK::Class:
    case VK::Instance: return classAttribute(base, name, r);
    case VK::Module: {
        auto &m = base.as<ModuleObj>();
        if (m.env) {
            if (auto v = userModuleName(base, name, r)) return *v;
            failMissingName(m, name, r, false);
        }
        if (auto it = m.attrs.find(name); it != m.attrs.end()) return it->second;
        std::string full = m.name + "." + name;
        if (auto sub = knownModule(full)) return *sub;
        if (m.opaque || m.name != "tilelang.language") {
            std::string root = m.name.substr(0, m.name.find('.'));
            if (m.opaque || root == "tilelang") {
                Value o = makeOpaque(full, root);
                o.as<OpaqueObj>().importedAt = m.importedAt;
                return o;
            }
        }
        std::string shown = (e.a && e.a->kind == ast::ExprKind::Name ? e.a->str : m.name) + "." + name;
        std::vector<std::string> names;
        for (auto &kv : m.attrs) names.push_back(kv.first);
        std::string close = closestName(name, names);
        std::string msg = "unknown primitive '" + shown + "'";
        if (std::string why = otherGpuPrimitive(name); !why.empty())
            fail(r, "'" + shown + "' is " + why + ": tilec generates code for sm_80 and sm_90a (Ampere and Hopper) only");
        if (!close.empty())
            failWithNote(r, msg, r, "did you mean '" + shown.substr(0, shown.size() - name.size()) + close + "'?");
        fail(r, msg);
    }
    case VK::Buffer: {
        const ir::Buffer &b = base.buffer;
        if (name == "dtype") {
            if (TraceState *t = trace(); t && t->subByte.count(b.get())) // T.float4_e2m1fn is its name
                return Value::str(tl::subByteName(t->subByte.at(b.get())));
            return Value::ofDType(b->dtype);
        }
        if (name == "name") return Value::str(b->name);
        if (name == "ndim") return Value::integer((int64_t)b->shape.size());
        if (name == "shape") {
            std::vector<Value> dims;
            for (auto &d : b->shape) {
                if (auto c = ir::constInt(d)) dims.push_back(Value::integer(*c));
                else dims.push_back(Value::ofExpr(d));
            }
            return Value::tuple(std::move(dims));
        }
        if (name == "scope") return Value::str(ir::toString(b->scope));
        break;
    }
    case VK::Expr:
        if (name == "dtype") return Value::ofDType(base.expr->dtype);
        break;
    case VK::Access: // `A[i].dtype`: the element's
        if (name == "dtype") return Value::ofDType(base.as<AccessObj>().buffer->dtype);
        break;
    case VK::DType:
        if (name == "bits") return Value::integer(base.dtype.bits());
        if (name == "bytes" || name == "itemsize") return Value::integer(base.dtype.bytes());
        if (name == "as_torch") return makeOpaque("torch." + std::string(base.dtype.name()), "torch");
        break;
    case VK::Int:
    case VK::Bool:
        if (name == "bit_length") {
            int64_t v = intOf(base);
            return method("int.bit_length", [v](Interp &in, CallArgs &a) {
                bindArgs(in, a, "int.bit_length", {});
                uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
                return Value::integer(u == 0 ? 0 : 64 - __builtin_clzll(u));
            });
        }
        break;
    case VK::List:
        if (auto m = listMethod(base, name)) return *m;
        [[fallthrough]];
    case VK::Tuple:
        if (auto m = sequenceMethod(base, name)) return *m;
        break;
    case VK::Dict:
        if (auto m = dictMethod(base, name)) return *m;
        break;
    case VK::Str:
        if (auto m = strMethod(base.s, name)) return *m;
        if (tl::subByteArg(Arg{base, r}) != SubByte::None) { // T.float4_e2m1fn.bits: 4; a byte holds two
            if (name == "bits") return Value::integer(4);
            if (name == "bytes" || name == "itemsize") return Value::integer(1);
        }
        break;
    default: break;
    }
    failPython("AttributeError", r, std::string("'") + typeName(base.kind) + "' object has no attribute '" + name + "'");
}

Value InterpImpl::attributeOf(const Value &base, const std::string &name, const SourceRange &at) {
    ast::Expr e;
    e.kind = ast::ExprKind::Attribute;
    e.range = at;
    e.str = name;
    return attribute(base, name, e);
}

} // namespace tilec::eval
