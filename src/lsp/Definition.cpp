/// \file
/// Go to definition for the language server (LspImpl.h). A name resolves as Python resolves it: the
/// bindings of the functions around it, innermost first (a class body only for code directly in it), then
/// the module's. A binding made by an import is followed into the user's module, found with the compiler's
/// own module search (src/eval/ModuleLoader: the file's folder or package root, -I, TILEC_PATH), and on
/// through the imports there; `a.b.c` walks attributes through modules and submodules the same way.
#include "lsp/LspImpl.h"

#include "eval/ModuleLoader.h"

#include "tilec/Parser.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace tilec::lsp {

namespace {

using ast::Stmt;
using ast::StmtKind;

bool isScope(const Stmt &s) { return s.kind == StmtKind::FunctionDef || s.kind == StmtKind::ClassDef; }

/// The statements directly inside `s` (bodies, else branches, handlers, finally).
std::vector<const ast::Body *> bodiesOf(const Stmt &s) {
    std::vector<const ast::Body *> out{&s.body, &s.orelse, &s.finalbody};
    for (auto &h : s.handlers) out.push_back(&h->body);
    return out;
}

/// The last line of a statement (the end of its last nested statement: a block's own range may stop at the
/// token that ends it).
int lastLine(const Stmt &s) {
    int last = std::max(s.range.line, s.range.endLine);
    for (auto *b : bodiesOf(s))
        if (!b->empty()) last = std::max(last, lastLine(*b->back()));
    for (auto &h : s.handlers) last = std::max(last, lastLine(*h));
    return last;
}

/// The compound statements around line `line`, outermost first, down to the innermost statement there.
void enclosing(const ast::Body &body, int line, std::vector<const Stmt *> &chain) {
    for (auto &s : body) {
        if (line < s->range.line || line > lastLine(*s)) continue;
        chain.push_back(s.get());
        for (auto *b : bodiesOf(*s)) enclosing(*b, line, chain);
        return;
    }
}

/// A name bound in a scope: where, and the import that binds it (if one does).
struct Binding {
    std::string name;
    SourceRange at;
    const Stmt *import = nullptr;
    const ast::Alias *alias = nullptr;
};

/// The bindings of one scope: `body`'s statements and the compound statements in it, not nested scopes.
class Binder {
  public:
    Binder(const SourceManager &sm, int file) : sm_(sm), file_(file) {}
    std::vector<Binding> out;

    void params(const Stmt &def) {
        for (auto &p : def.params) add(p.name, word(p.range, p.name));
    }
    void body(const ast::Body &b) {
        for (auto &s : b) stmt(*s);
    }

  private:
    void add(const std::string &name, SourceRange at, const Stmt *import = nullptr, const ast::Alias *alias = nullptr) {
        if (!name.empty()) out.push_back({name, at, import, alias});
    }
    SourceRange word(const SourceRange &from, const std::string &name) const {
        SourceRange r = findWord(sm_, file_, from.line, from.col, name, std::max(from.line, from.endLine));
        return r.valid() ? r : from;
    }
    void target(const ast::Expr &e) {
        switch (e.kind) {
        case ast::ExprKind::Name: add(e.str, e.range); break;
        case ast::ExprKind::Tuple:
        case ast::ExprKind::List:
            for (auto &x : e.elts) target(*x);
            break;
        case ast::ExprKind::Starred: target(*e.a); break;
        default: break;
        }
    }
    void stmt(const Stmt &s) {
        switch (s.kind) {
        case StmtKind::Assign:
        case StmtKind::AugAssign:
        case StmtKind::AnnAssign:
        case StmtKind::For:
            for (auto &t : s.targets) target(*t);
            break;
        case StmtKind::With:
            for (auto &w : s.items)
                if (w.target) target(*w.target);
            break;
        case StmtKind::FunctionDef: add(s.name, word(s.range, s.name)); return;
        case StmtKind::ClassDef: add(s.name, s.targets.empty() ? word(s.range, s.name) : s.targets[0]->range); return;
        case StmtKind::ExceptHandler: add(s.name, word(s.range, s.name)); break;
        case StmtKind::Import:
            for (auto &a : s.names) {
                std::string bound = a.asName.empty() ? a.name.substr(0, a.name.find('.')) : a.asName;
                add(bound, a.asName.empty() ? word(a.range, bound) : lastWord(a.range, bound), &s, &a);
            }
            return;
        case StmtKind::ImportFrom:
            for (auto &a : s.names)
                if (a.name != "*") add(a.asName.empty() ? a.name : a.asName, lastWord(a.range, a.asName.empty() ? a.name : a.asName), &s, &a);
            return;
        default: break;
        }
        for (auto *b : bodiesOf(s)) body(*b);
        for (auto &h : s.handlers) stmt(*h);
    }
    /// `x` in `a as x` (the alias, not a module of the same name before it).
    SourceRange lastWord(const SourceRange &r, const std::string &name) const {
        SourceRange found = word(r, name);
        for (SourceRange next = found; next.valid() && next.line == r.line && (r.endLine != r.line || next.col < r.endCol);) {
            found = next;
            next = findWord(sm_, file_, next.line, next.endCol, name, next.line);
        }
        return found;
    }

    const SourceManager &sm_;
    int file_;
};

/// A module of the user's, parsed: its own sources (file 0) and tree.
struct ParsedModule {
    std::string path, dir; ///< the file (a package's __init__.py, or "" for a namespace package); a package's folder
    bool package = false;
    std::shared_ptr<SourceManager> sm;
    std::shared_ptr<const ast::Module> tree;
};

/// Resolves names and follows imports for one request.
class Resolver {
  public:
    Resolver(const Settings &s, std::string docPath) : settings_(s), docPath_(std::move(docPath)) {}

    /// The place (and its file's text) of the definition of the binding `b` made in file `path`, with the
    /// attributes `rest` after it; `b.at` itself when it is not an import.
    std::optional<std::pair<SourceRange, const ParsedModule *>> follow(const Binding &b, const std::string &path,
                                                                        std::vector<std::string> rest, int depth) {
        if (!b.import) return rest.empty() ? std::make_optional(std::make_pair(b.at, nullptr)) : std::nullopt;
        const ParsedModule *m = nullptr;
        if (b.import->kind == StmtKind::Import) {
            // `import a.b.c` binds `a`; `import a.b.c as x` binds a.b.c.
            std::string dotted = b.alias->asName.empty() ? b.alias->name.substr(0, b.alias->name.find('.')) : b.alias->name;
            m = module(dotted, path);
        } else {
            m = module(absoluteName(*b.import, path), path);
            rest.insert(rest.begin(), b.alias->name);
        }
        return attribute(m, rest, depth);
    }

    /// `rest` looked up attribute by attribute from module `m`.
    std::optional<std::pair<SourceRange, const ParsedModule *>> attribute(const ParsedModule *m, std::vector<std::string> rest,
                                                                           int depth) {
        if (!m || depth > 16) return std::nullopt;
        if (rest.empty()) {
            if (m->path.empty()) return std::nullopt; // a namespace package: a folder, not a place in a file
            return std::make_pair(SourceRange{}, m);  // the module itself: the start of its file
        }
        std::string name = rest.front();
        rest.erase(rest.begin());
        if (m->tree) {
            Binder binder(*m->sm, 0);
            binder.body(m->tree->body);
            const Binding *found = nullptr;
            for (auto &b : binder.out)
                if (b.name == name) found = &b; // the last binding at module level is the one importers see
            if (found) {
                auto r = follow(*found, m->path, rest, depth + 1);
                if (r && !r->second) r->second = m;
                return r;
            }
        }
        if (m->package) {
            auto sub = eval::findSubmodule(m->dir, name);
            if (sub) return attribute(load(*sub), rest, depth + 1);
        }
        return std::nullopt;
    }

    /// The absolute module name of `from <dots>mod import ...` in file `path`.
    std::string absoluteName(const Stmt &from, const std::string &path) {
        size_t dots = from.name.find_first_not_of('.');
        if (dots == std::string::npos) dots = from.name.size();
        if (dots == 0) return from.name;
        std::string error;
        auto abs = eval::resolveRelative(packageOf(path), (int)dots, from.name.substr(dots), error);
        return abs ? *abs : "";
    }

    /// Module `dotted` as an import in file `path` finds it.
    const ParsedModule *module(const std::string &dotted, const std::string &path) {
        if (dotted.empty()) return nullptr;
        std::vector<std::string> roots;
        if (!path.empty() && packageOf(path).empty()) roots.push_back(eval::dirName(path));
        if (!docPath_.empty()) roots.push_back(eval::packageOf(docPath_).root);
        for (auto &d : settings_.importDirs) roots.push_back(d);
        if (const char *env = std::getenv("TILEC_PATH"))
            for (auto &d : eval::splitSearchPath(env)) roots.push_back(d);
        auto mf = eval::findModule(dotted, roots);
        return mf ? load(*mf) : nullptr;
    }

  private:
    std::string packageOf(const std::string &path) {
        if (path.empty()) return "";
        std::string pkg = eval::packageOf(path).package;
        // An __init__.py is its package itself (relative imports start there).
        return pkg;
    }

    const ParsedModule *load(const eval::ModuleFile &mf) {
        std::string key = eval::canonicalPath(mf.path.empty() ? mf.dir : mf.path);
        auto it = cache_.find(key);
        if (it != cache_.end()) return &it->second;
        ParsedModule &m = cache_[key];
        m.path = mf.path;
        m.dir = mf.dir;
        m.package = mf.package;
        m.sm = std::make_shared<SourceManager>();
        if (!mf.path.empty()) {
            std::ifstream f(mf.path, std::ios::binary);
            std::ostringstream text;
            text << f.rdbuf();
            int file = m.sm->add(mf.path, text.str());
            std::ostringstream unused;
            DiagnosticEngine diag(*m.sm, unused);
            diag.setConsumer([](Severity, const SourceRange &, const std::string &) {});
            diag.setErrorLimit(0);
            if (auto tree = parseModule(file, diag)) m.tree = std::make_shared<const ast::Module>(std::move(*tree));
        }
        return &m;
    }

    const Settings &settings_;
    std::string docPath_;
    std::map<std::string, ParsedModule> cache_;
};

/// The best binding of `name` among `bindings` for a use at `line`: the last one above it, else the first.
const Binding *best(const std::vector<Binding> &bindings, const std::string &name, int line) {
    const Binding *first = nullptr, *above = nullptr;
    for (auto &b : bindings) {
        if (b.name != name) continue;
        if (!first) first = &b;
        if (b.at.line <= line) above = &b;
    }
    return above ? above : first;
}

Value location(const std::string &uri, std::string_view text, const SourceRange &r) {
    return Value::object().set("uri", Value::string(uri)).set("range", rangeJson(text, r));
}

} // namespace

std::optional<std::pair<int, int>> enclosingFunction(const ast::Module &module, int line) {
    std::vector<const Stmt *> chain;
    enclosing(module.body, line, chain);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
        if ((*it)->kind == StmtKind::FunctionDef) return std::make_pair((*it)->range.line, lastLine(**it));
    return std::nullopt;
}

Value definition(const ast::Module &module, const SourceManager &sm, const std::string &uri, const std::string &path,
                 std::string_view text, Position pos, const Settings &s) {
    std::string_view lineText = lineAt(text, pos.line);
    size_t col = byteOffset(lineText, pos.character);
    auto parts = dottedNameAt(lineText, col);
    if (parts.empty()) return Value();
    const int line = pos.line + 1;
    std::vector<const Stmt *> chain;
    enclosing(module.body, line, chain);
    Resolver resolver(s, path);
    auto answer = [&](const std::optional<std::pair<SourceRange, const ParsedModule *>> &r) {
        if (!r) return Value();
        if (!r->second) return location(uri, sm.text(module.file), r->first);
        return location(uriFromPath(r->second->path.empty() ? r->second->dir : r->second->path),
                        r->second->tree ? std::string_view(r->second->sm->text(0)) : std::string_view(), r->first);
    };

    // In an import statement: the module named up to the word under the cursor.
    if (!chain.empty() && (chain.back()->kind == StmtKind::Import || chain.back()->kind == StmtKind::ImportFrom)) {
        const Stmt &imp = *chain.back();
        std::string prefix;
        for (auto &p : parts) prefix += (prefix.empty() ? "" : ".") + p;
        if (imp.kind == StmtKind::ImportFrom) {
            // Before the `import` keyword: (part of) the module's name; after it: a name in that module.
            SourceRange keyword = findWord(sm, module.file, imp.range.line, imp.range.col + 4, "import", lastLine(imp));
            if (keyword.valid() && (line < keyword.line || (line == keyword.line && (int)col + 1 < keyword.col))) {
                Stmt partial = imp;
                partial.name = imp.name.substr(0, imp.name.find_first_not_of('.')) + prefix;
                if (imp.name.find_first_not_of('.') == std::string::npos) partial.name = imp.name;
                return answer(resolver.attribute(resolver.module(resolver.absoluteName(partial, path), path), {}, 0));
            }
        } else {
            return answer(resolver.attribute(resolver.module(prefix, path), {}, 0));
        }
    }

    // The scopes that see the name, innermost first: enclosing functions, the class body the cursor is
    // directly in, the module.
    std::vector<std::vector<Binding>> scopes;
    bool innermost = true;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        if (!isScope(**it)) continue;
        if ((*it)->kind == StmtKind::FunctionDef || innermost) {
            Binder b(sm, module.file);
            if ((*it)->kind == StmtKind::FunctionDef) b.params(**it);
            b.body((*it)->body);
            scopes.push_back(std::move(b.out));
        }
        innermost = false;
    }
    Binder top(sm, module.file);
    top.body(module.body);
    scopes.push_back(std::move(top.out));
    for (auto &scope : scopes)
        if (const Binding *b = best(scope, parts[0], line))
            return answer(resolver.follow(*b, path, std::vector<std::string>(parts.begin() + 1, parts.end()), 0));
    return Value();
}

} // namespace tilec::lsp
