/// \file
/// The interpreter's scopes and imports: `tilelang.language` is the T.* module, the modules of
/// KnownModules.cpp (math, itertools, the tilelang package, tvm, torch) are partly known, every other
/// module is opaque.
#include "eval/InterpImpl.h"

#include <algorithm>
#include <sys/resource.h>

namespace tilec::eval {

namespace {

Value opaqueModuleValue(const std::string &name) {
    auto m = std::make_shared<ModuleObj>();
    m->name = name;
    m->opaque = true;
    return Value::object(VK::Module, m);
}

} // namespace

InterpImpl::InterpImpl(const FrontendOptions &opts, DiagnosticEngine &diag) : opts_(opts), diag_(diag) {
    builtins_ = newEnv(nullptr);
    addPyBuiltins(*builtins_);
    module_ = newEnv(builtins_);
    module_->set("__name__", Value::str("__tilec__"));
    env_ = module_;
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

Value InterpImpl::importModule(const std::string &dotted) {
    if (dotted == "tilelang.language") {
        if (tlModule_.is(VK::None)) tlModule_ = makeTileLanguageModule();
        return tlModule_;
    }
    if (auto known = knownModule(dotted)) return *known;
    return opaqueModuleValue(dotted);
}

void InterpImpl::execImport(const ast::Stmt &s) {
    if (s.kind == ast::StmtKind::Import) {
        for (auto &a : s.names) {
            if (!a.asName.empty()) {
                bindName(a.asName, importModule(a.name), a.range, false);
            } else {
                // `import a.b.c` binds `a`; the submodules are reached through its attributes.
                std::string root = a.name.substr(0, a.name.find('.'));
                bindName(root, importModule(root), a.range, false);
            }
        }
        return;
    }
    const std::string &mod = s.name;
    Value m = (!mod.empty() && mod[0] == '.') ? opaqueModuleValue(mod) : importModule(mod);
    auto &mo = m.as<ModuleObj>();
    for (auto &a : s.names) {
        if (a.name == "*") {
            // What tilec knows of the module; the rest of an opaque module's names stay unbound.
            for (auto &[k, v] : mo.attrs) bindName(k, v, a.range, false);
            continue;
        }
        Value v;
        if (auto it = mo.attrs.find(a.name); it != mo.attrs.end()) {
            v = it->second;
        } else if (auto sub = knownModule(mo.name + "." + a.name)) {
            v = *sub;
        } else if (mo.opaque) {
            v = makeOpaque(mo.name + "." + a.name, mo.name.substr(0, mo.name.find('.')));
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

} // namespace tilec::eval
