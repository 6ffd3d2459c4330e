/// \file
/// The interpreter's scopes and imports: `tilelang.language` is the T.* module, the modules of
/// KnownModules.cpp (math, itertools, the tilelang package, tvm, torch, dataclasses, enum) are partly known,
/// the user's own modules (files found as ModuleLoader.h says) are run once each, every other module is opaque.
///
/// A package's __init__.py runs when the package itself is imported or one of its names is read, not when
/// only a submodule is reached through it (`from pkg.sub import f`): a package that imports all its
/// submodules at its top would otherwise make every compilation run the whole package.
#include "eval/InterpImpl.h"

#include "eval/ModuleLoader.h"
#include "tilec/Parser.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <sys/resource.h>

namespace tilec::eval {

namespace {

Value opaqueModuleValue(const std::string &name, const SourceRange &at = {}) {
    auto m = std::make_shared<ModuleObj>();
    m->name = name;
    m->opaque = true;
    m->importedAt = at;
    return Value::object(VK::Module, m);
}

std::string rootOf(const std::string &dotted) { return dotted.substr(0, dotted.find('.')); }

} // namespace

InterpImpl::InterpImpl(const FrontendOptions &opts, DiagnosticEngine &diag) : opts_(opts), diag_(diag) {
    builtins_ = newEnv(nullptr);
    addPyBuiltins(*builtins_);
    addClassBuiltins(*this, *builtins_);
    addExceptionClasses(*this, *builtins_);
    module_ = newEnv(builtins_);
    module_->set("__name__", Value::str("__tilec__"));
    env_ = module_;
    // The main file is a module of its package (as `python -m pkg.mod` run from the package's root would
    // make it): absolute imports start at that root, relative ones from the package.
    PackageOf home = packageOf(opts.mainPath);
    module_->set("__package__", Value::str(home.package));
    if (!opts.mainPath.empty()) module_->set("__file__", Value::str(opts.mainPath));
    roots_.push_back(home.root);
    for (auto &d : opts.importDirs)
        if (std::find(roots_.begin(), roots_.end(), d) == roots_.end()) roots_.push_back(d);
    // Half the stack the process may grow to, within [1 MiB, 64 MiB]: deep nesting becomes an error.
    rlimit rl{};
    size_t limit = 8u << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) limit = (size_t)rl.rlim_cur;
    else if (rl.rlim_cur == RLIM_INFINITY) limit = 128u << 20;
    stackLimit_ = std::clamp<size_t>(limit / 2, 1u << 20, 64u << 20);
}

InterpImpl::~InterpImpl() {
    // Empty every scope and container before the members go: no destructor chain recurses through them.
    registry_.teardown();
}

Env &InterpImpl::moduleScope() {
    Env *e = env_.get();
    while (e->parent && e->parent != builtins_) e = e->parent.get();
    return *e;
}

std::string InterpImpl::moduleVar(const char *name) {
    Value *v = moduleScope().vars.count(name) ? &moduleScope().vars[name] : nullptr;
    return v && v->is(VK::Str) ? v->s : "";
}

std::optional<Value> InterpImpl::userModule(const std::string &dotted, const SourceRange &at, bool runPackage) {
    if (!opts_.sources) return std::nullopt;
    // A module outside a package finds its neighbours (Python's script folder); one inside a package does
    // not (`import torch` in a package with a `torch` subpackage is the real torch).
    std::vector<std::string> roots;
    std::string file = moduleVar("__file__");
    if (!file.empty() && moduleVar("__package__").empty()) roots.push_back(dirName(file));
    for (auto &r : roots_)
        if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
    std::string name;
    Value parent;
    size_t start = 0;
    while (true) {
        size_t dot = dotted.find('.', start);
        name = dotted.substr(0, dot);
        std::string last = dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        auto mf = parent.is(VK::None) ? findModule(name, roots) : findSubmodule(parent.as<ModuleObj>().dir(), last);
        if (!mf) return std::nullopt;
        bool leaf = dot == std::string::npos;
        Value m = loadModule(name, *mf, at, leaf && runPackage);
        if (!parent.is(VK::None)) parent.as<ModuleObj>().env->set(last, m);
        if (leaf) return m;
        parent = m;
        start = dot + 1;
    }
}

Value InterpImpl::loadModule(const std::string &name, const ModuleFile &mf, const SourceRange &at, bool runPackage) {
    std::string key = canonicalPath(mf.path.empty() ? mf.dir : mf.path);
    auto it = userModules_.find(key);
    if (it == userModules_.end()) {
        auto m = std::make_shared<ModuleObj>();
        m->name = name;
        m->path = mf.path.empty() ? mf.dir : mf.path;
        m->package = mf.package;
        m->env = newEnv(builtins_);
        m->env->set("__name__", Value::str(name));
        size_t dot = name.rfind('.');
        m->env->set("__package__", Value::str(mf.package ? name : dot == std::string::npos ? "" : name.substr(0, dot)));
        if (!mf.path.empty()) m->env->set("__file__", Value::str(mf.path));
        it = userModules_.emplace(key, LoadedModule{Value::object(VK::Module, m)}).first;
    }
    LoadedModule &lm = it->second;
    if (lm.state == LoadedModule::Created && (!mf.package || runPackage)) runModule(lm, at);
    return lm.module;
}

void InterpImpl::runModule(LoadedModule &lm, const SourceRange &at) {
    auto &m = lm.module.as<ModuleObj>();
    lm.state = LoadedModule::Running;
    lm.importedAt = at;
    if (!m.package || m.path.size() >= 11 && m.path.compare(m.path.size() - 11, 11, "__init__.py") == 0) {
        std::ifstream f(m.path, std::ios::binary);
        std::ostringstream text;
        text << f.rdbuf();
        if (!f) {
            lm.state = LoadedModule::Done;
            failUnevaluable(at, "cannot read module '" + m.name + "' (" + m.path + ")");
        }
        int file = opts_.sources->add(m.path, text.str());
        if (opts_.importedFiles) opts_.importedFiles->push_back(m.path);
        auto parsed = parseModule(file, diag_);
        if (!parsed) {
            lm.state = LoadedModule::Done;
            throw EvalAbort{}; // its syntax errors are reported
        }
        moduleAsts_.push_back(std::make_shared<ast::Module>(std::move(*parsed)));
        const ast::Body &body = moduleAsts_.back()->body;
        // The module runs in a frame of its own: its statements are module-level ones (a failing one is
        // skipped with a warning), outside any kernel being traced.
        Restore<std::shared_ptr<Env>> scope(env_, m.env);
        Restore<const ast::Stmt *> stmt(curStmt_, nullptr), loop(curLoop_, nullptr);
        Restore<std::shared_ptr<SkippedStatement>> cause(lastPoisonCause_);
        std::vector<std::unique_ptr<TraceState>> traces;
        std::swap(traces, traces_);
        importChain_.push_back({m.name, at});
        frames_.emplace_back();
        frames_.back().isModule = true;
        frames_.back().moduleBody = &body;
        struct Pop {
            InterpImpl &in;
            std::vector<std::unique_ptr<TraceState>> &traces;
            ~Pop() {
                in.frames_.pop_back();
                in.importChain_.pop_back();
                std::swap(traces, in.traces_);
            }
        } pop{*this, traces};
        execBody(body);
    }
    lm.state = LoadedModule::Done;
}

void InterpImpl::runPackage(const Value &pkg, const SourceRange &at) {
    auto &m = pkg.as<ModuleObj>();
    if (!m.env || !m.package) return;
    auto it = userModules_.find(canonicalPath(m.path));
    if (it != userModules_.end() && it->second.state == LoadedModule::Created) runModule(it->second, at);
}

bool InterpImpl::isRunning(const ModuleObj &m) {
    auto it = userModules_.find(canonicalPath(m.path));
    return it != userModules_.end() && it->second.state == LoadedModule::Running;
}

std::optional<Value> InterpImpl::userModuleName(const Value &mod, const std::string &name, const SourceRange &at) {
    auto &m = mod.as<ModuleObj>();
    if (auto it = m.env->vars.find(name); it != m.env->vars.end()) return it->second;
    // A name the package's __init__.py defines, else a submodule (Python's `from pkg import name` order).
    runPackage(mod, at);
    if (auto it = m.env->vars.find(name); it != m.env->vars.end()) return it->second;
    if (m.package)
        if (auto mf = findSubmodule(m.dir(), name)) {
            Value sub = loadModule(m.name + "." + name, *mf, at, true);
            m.env->set(name, sub);
            return sub;
        }
    // PEP 562: a module's own __getattr__(name) answers for the names it does not bind (a lazily made singleton).
    if (auto it = m.env->vars.find("__getattr__"); it != m.env->vars.end() && it->second.is(VK::Function)) {
        CallArgs a;
        a.call = a.callee = at;
        a.pos = {Arg{Value::str(name), at}};
        return callValue(it->second, a);
    }
    return std::nullopt;
}

[[noreturn]] void InterpImpl::failMissingName(const ModuleObj &m, const std::string &name, const SourceRange &at,
                                              bool fromImport) {
    std::string msg = fromImport ? "cannot import name '" + name + "' from " +
                                       (isRunning(m) ? "partially initialized module '" : "'") + m.name + "' (" + m.path + ")"
                                 : "module '" + m.name + "' has no attribute '" + name + "'";
    std::vector<std::string> names;
    for (auto &kv : m.env->vars) names.push_back(kv.first);
    std::string close = closestName(name, names);
    if (isRunning(m)) {
        // An import cycle: the module is still running the import that led here. Each step is noted.
        if (alreadyReported(at, msg)) throw EvalAbort{};
        diag_.error(at, msg + ": an import cycle");
        auto first = std::find_if(importChain_.begin(), importChain_.end(), [&](auto &c) { return c.first == m.name; });
        for (auto c = first; c != importChain_.end(); ++c) {
            auto next = c + 1;
            diag_.note(next == importChain_.end() ? at : next->second,
                       "'" + c->first + "' imports '" + (next == importChain_.end() ? m.name : next->first) + "' here");
        }
        throw EvalAbort{};
    }
    if (!close.empty()) failWithNote(at, msg, at, "did you mean '" + close + "'?");
    failPython(fromImport ? "ImportError" : "AttributeError", at, msg);
}

Value InterpImpl::importModule(const std::string &dotted, const SourceRange &at, bool runPackage) {
    if (dotted == "tilelang.language") {
        if (tlModule_.is(VK::None)) tlModule_ = makeTileLanguageModule();
        return tlModule_;
    }
    if (auto known = knownModule(dotted)) return *known;
    // A module under a package tilec stands in for (tilelang.contrib, torch.nn) is that package's.
    if (!knownModule(rootOf(dotted)))
        if (auto user = userModule(dotted, at, runPackage)) return *user;
    return opaqueModuleValue(dotted, at);
}

void InterpImpl::execImport(const ast::Stmt &s) {
    if (s.kind == ast::StmtKind::Import) {
        for (auto &a : s.names) {
            if (!a.asName.empty()) {
                bindName(a.asName, importModule(a.name, a.range, true), a.range, false);
            } else {
                // `import a.b.c` binds `a`; the submodules are reached through its attributes.
                Value leaf = importModule(a.name, a.range, true);
                std::string root = rootOf(a.name);
                bindName(root, root == a.name ? leaf : importModule(root, a.range, false), a.range, false);
            }
        }
        return;
    }
    std::string mod = s.name;
    if (!mod.empty() && mod[0] == '.') {
        int dots = (int)(std::find_if(mod.begin(), mod.end(), [](char c) { return c != '.'; }) - mod.begin());
        std::string error;
        auto abs = resolveRelative(moduleVar("__package__"), dots, mod.substr((size_t)dots), error);
        if (!abs) failUnevaluable(s.range, "'from " + mod + " import ...': " + error);
        mod = *abs;
    }
    Value m = importModule(mod, s.range, false);
    if (s.name[0] == '.' && m.as<ModuleObj>().opaque)
        failUnevaluable(s.range, "'from " + s.name + " import ...': no module named '" + mod + "'");
    auto &mo = m.as<ModuleObj>();
    for (auto &a : s.names) {
        if (a.name == "*") {
            importStar(m, a.range);
            continue;
        }
        Value v;
        if (mo.env) {
            auto found = userModuleName(m, a.name, a.range);
            if (!found) failMissingName(mo, a.name, a.range, true);
            v = *found;
        } else if (auto it = mo.attrs.find(a.name); it != mo.attrs.end()) {
            v = it->second;
        } else if (auto sub = knownModule(mo.name + "." + a.name)) {
            v = *sub;
        } else if (mo.opaque) {
            v = makeOpaque(mo.name + "." + a.name, rootOf(mo.name));
            v.as<OpaqueObj>().importedAt = a.range;
            v.as<OpaqueObj>().importedName = a.asName.empty() ? a.name : a.asName;
        } else {
            std::vector<std::string> names;
            for (auto &kv : mo.attrs) names.push_back(kv.first);
            std::string msg = "cannot import name '" + a.name + "' from '" + mo.name + "'";
            std::string close = closestName(a.name, names);
            if (!close.empty()) failWithNote(a.range, msg, a.range, "did you mean '" + close + "'?");
            fail(a.range, msg);
        }
        bindName(a.asName.empty() ? a.name : a.asName, v, a.range, false);
    }
}

void InterpImpl::importStar(const Value &m, const SourceRange &at) {
    auto &mo = m.as<ModuleObj>();
    if (!mo.env) {
        // What tilec knows of the module; the other names of an opaque one are opaque where used (lookupName).
        for (auto &[k, v] : mo.attrs) bindName(k, v, at, false);
        if (mo.opaque) opaqueStars_[&moduleScope()].push_back({mo.name, at});
        return;
    }
    runPackage(m, at);
    // `__all__` when the module defines it, else every name not starting with an underscore.
    std::vector<std::string> names;
    if (auto it = mo.env->vars.find("__all__"); it != mo.env->vars.end()) {
        const Value &all = it->second;
        if (!all.is(VK::List) && !all.is(VK::Tuple))
            fail(at, "'__all__' of module '" + mo.name + "' must be a list or tuple of names, not a " + typeName(all.kind));
        for (auto &n : all.elements()) {
            if (!n.is(VK::Str)) fail(at, "'__all__' of module '" + mo.name + "' holds a " + typeName(n.kind) + ", not a name");
            names.push_back(n.s);
        }
    } else {
        for (auto &kv : mo.env->vars)
            if (kv.first.empty() || kv.first[0] != '_') names.push_back(kv.first);
    }
    for (auto &n : names) {
        auto v = userModuleName(m, n, at);
        if (!v) failMissingName(mo, n, at, false);
        bindName(n, *v, at, false);
    }
}

std::optional<Value> InterpImpl::opaqueStarName(const std::string &name) {
    auto it = opaqueStars_.find(&moduleScope());
    if (it == opaqueStars_.end()) return std::nullopt;
    auto &[mod, at] = it->second.back();
    Value v = makeOpaque(mod + "." + name, rootOf(mod));
    v.as<OpaqueObj>().importedAt = at;
    v.as<OpaqueObj>().importedName = name;
    return v;
}

std::string ModuleObj::dir() const {
    if (!package || !path.ends_with("__init__.py")) return path;
    return dirName(path);
}

} // namespace tilec::eval
