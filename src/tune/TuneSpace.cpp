/// \file
/// What to tune (include/tilec/Tune.h): the --space and --sizes texts, the kernel's instantiation in the
/// module, the call with a configuration applied, and the space of an `@autotune(configs=...)` decorator.
#include "tilec/Tune.h"

#include "tilec/AST.h"
#include "tilec/Diagnostics.h"
#include "tilec/OptionValues.h"

#include <cctype>
#include <stdexcept>

namespace tilec::tune {

namespace {

std::string trim(const std::string &s) {
    size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// Splits at `sep` outside brackets and quotes.
std::vector<std::string> splitTop(const std::string &s, char sep) {
    std::vector<std::string> parts;
    std::string cur;
    int depth = 0;
    char quoteChar = 0;
    for (char c : s) {
        if (quoteChar) {
            if (c == quoteChar) quoteChar = 0;
        } else if (c == '\'' || c == '"') {
            quoteChar = c;
        } else if (c == '(' || c == '[' || c == '{') {
            ++depth;
        } else if (c == ')' || c == ']' || c == '}') {
            --depth;
        } else if (c == sep && depth == 0) {
            parts.push_back(cur);
            cur.clear();
            continue;
        }
        cur += c;
    }
    if (quoteChar || depth != 0) throw std::invalid_argument("unbalanced brackets or quotes in '" + s + "'");
    parts.push_back(cur);
    return parts;
}

/// `name=v1,v2,...` entries separated by ';'.
std::vector<std::pair<std::string, std::vector<std::string>>> parseAssignments(const std::string &text,
                                                                               const char *what) {
    std::vector<std::pair<std::string, std::vector<std::string>>> dims;
    for (auto &entry : splitTop(text, ';')) {
        std::string e = trim(entry);
        if (e.empty()) continue;
        auto eq = e.find('=');
        std::string name = eq == std::string::npos ? "" : trim(e.substr(0, eq));
        if (!isIdentifier(name))
            throw std::invalid_argument(std::string(what) + ": '" + e + "' must have the form NAME=V1,V2,...");
        for (auto &d : dims)
            if (d.first == name) throw std::invalid_argument(std::string(what) + ": '" + name + "' is given twice");
        std::vector<std::string> values;
        for (auto &v : splitTop(e.substr(eq + 1), ',')) {
            std::string t = trim(v);
            if (t.empty()) throw std::invalid_argument(std::string(what) + ": '" + name + "' has an empty value");
            values.push_back(t);
        }
        dims.emplace_back(name, std::move(values));
    }
    if (dims.empty()) throw std::invalid_argument(std::string(what) + " names nothing");
    return dims;
}

/// The source text of a range (lines and byte columns, 1-based, end exclusive).
std::string rangeText(const SourceManager &sm, const SourceRange &r) {
    const std::string &text = sm.text(r.file);
    auto offset = [&](int line, int col) {
        size_t at = 0;
        for (int l = 1; l < line && at != std::string::npos; ++l) {
            at = text.find('\n', at);
            if (at != std::string::npos) ++at;
        }
        return at == std::string::npos ? text.size() : std::min(text.size(), at + (size_t)(col - 1));
    };
    size_t b = offset(r.line, r.col), e = offset(r.endLine, r.endCol);
    return e > b ? text.substr(b, e - b) : "";
}

/// An expression's text with the parentheses it was written in (a parenthesized tuple's range holds them,
/// other expressions' ranges do not).
std::string exprText(const SourceManager &sm, const ast::Expr &e) {
    std::string t = rangeText(sm, e.range);
    return e.parenthesized && e.kind != ast::ExprKind::Tuple ? "(" + t + ")" : t;
}

bool isAutotune(const ast::Expr &callee) {
    return (callee.kind == ast::ExprKind::Name || callee.kind == ast::ExprKind::Attribute) && callee.str == "autotune";
}

/// A dict literal with string keys as a configuration.
Config dictConfig(const ast::Expr &d, const SourceManager &sm) {
    if (d.kind != ast::ExprKind::Dict)
        throw std::invalid_argument("autotune configs: an element is not a dict literal ({'block_M': 128, ...})");
    Config c;
    for (size_t i = 0; i < d.elts.size(); ++i) {
        if (!d.elts[i] || d.elts[i]->kind != ast::ExprKind::Str || !isIdentifier(d.elts[i]->str))
            throw std::invalid_argument("autotune configs: a key is not a parameter name in quotes");
        c.emplace_back(d.elts[i]->str, exprText(sm, *d.values[i]));
    }
    return c;
}

} // namespace

std::vector<Config> parseSpace(const std::string &text) {
    auto dims = parseAssignments(text, "--space");
    std::vector<Config> out{Config{}};
    for (auto &[name, values] : dims) {
        std::vector<Config> next;
        for (auto &c : out)
            for (auto &v : values) {
                Config d = c;
                d.emplace_back(name, v);
                next.push_back(std::move(d));
            }
        out = std::move(next);
    }
    return out;
}

std::string Sizes::dispatchSymbol() const {
    for (auto &[name, values] : symbols)
        if (values.size() > 1) return name;
    return "";
}

std::vector<std::map<std::string, int64_t>> Sizes::points() const {
    std::map<std::string, int64_t> fixed;
    for (auto &[name, values] : symbols) fixed[name] = values.front();
    std::string d = dispatchSymbol();
    if (d.empty()) return {fixed};
    std::vector<std::map<std::string, int64_t>> pts;
    for (auto &[name, values] : symbols)
        if (name == d)
            for (int64_t v : values) {
                auto p = fixed;
                p[d] = v;
                pts.push_back(std::move(p));
            }
    return pts;
}

Sizes parseSizes(const std::string &text) {
    Sizes s;
    for (auto &[name, texts] : parseAssignments(text, "--sizes")) {
        std::vector<int64_t> values;
        for (auto &t : texts) {
            size_t used = 0;
            long long v = -1;
            try {
                v = std::stoll(t, &used);
            } catch (const std::logic_error &) {
                used = 0;
            }
            if (used != t.size() || v < 1)
                throw std::invalid_argument("--sizes: '" + t + "' (for " + name + ") is not a positive integer");
            if (!values.empty() && v <= values.back())
                throw std::invalid_argument("--sizes: the values of " + name + " must increase");
            values.push_back(v);
        }
        s.symbols.emplace_back(name, std::move(values));
    }
    int several = 0;
    for (auto &sym : s.symbols) several += sym.second.size() > 1;
    if (several > 1) throw std::invalid_argument("--sizes: only one T.dynamic symbol may have several values");
    return s;
}

std::optional<Instantiation> findInstantiation(const ast::Module &m, const SourceManager &sm, const std::string &name) {
    std::optional<Instantiation> found;
    for (auto &s : m.body) {
        if (s->kind != ast::StmtKind::Assign || !s->value || s->value->kind != ast::ExprKind::Call) continue;
        bool named = false;
        for (auto &t : s->targets) named = named || (t->kind == ast::ExprKind::Name && t->str == name);
        if (!named) continue;
        Instantiation inst;
        inst.callee = exprText(sm, *s->value->a);
        for (auto &a : s->value->elts) inst.args.push_back(exprText(sm, *a));
        for (auto &k : s->value->keywords)
            inst.keywords.emplace_back(k.name, exprText(sm, *k.value)); // name "" is **mapping
        found = std::move(inst);
    }
    return found;
}

std::string callText(const Instantiation &inst, const Config &config) {
    std::string s = inst.callee + "(";
    bool first = true;
    auto arg = [&](const std::string &t) {
        s += (first ? "" : ", ") + t;
        first = false;
    };
    for (auto &a : inst.args) arg(a);
    for (auto &[k, v] : inst.keywords) {
        bool replaced = false;
        for (auto &c : config) replaced = replaced || c.first == k;
        if (!replaced) arg(k.empty() ? "**" + v : k + "=" + v);
    }
    for (auto &[k, v] : config) arg(k + "=" + v);
    return s + ")";
}

std::optional<std::vector<Config>> decoratorSpace(const ast::Module &m, const SourceManager &sm,
                                                  const std::string &callee) {
    for (auto &s : m.body) {
        if (s->kind != ast::StmtKind::FunctionDef || s->name != callee) continue;
        for (auto &d : s->decorators) {
            if (d->kind != ast::ExprKind::Call || !isAutotune(*d->a)) continue;
            const ast::Expr *configs = nullptr;
            for (auto &k : d->keywords)
                if (k.name == "configs") configs = k.value.get();
            if (!configs) throw std::invalid_argument("@autotune on '" + callee + "' has no configs=");
            // A module-level name bound to the literal.
            if (configs->kind == ast::ExprKind::Name) {
                const ast::Expr *bound = nullptr;
                for (auto &t : m.body)
                    if (t->kind == ast::StmtKind::Assign && t->value)
                        for (auto &n : t->targets)
                            if (n->kind == ast::ExprKind::Name && n->str == configs->str) bound = t->value.get();
                if (!bound)
                    throw std::invalid_argument("@autotune configs=" + configs->str +
                                                ": tilec reads a list of dict literals, or a module-level name bound "
                                                "to one (generator functions are not evaluated); give --space instead");
                configs = bound;
            }
            if (configs->kind != ast::ExprKind::List && configs->kind != ast::ExprKind::Tuple)
                throw std::invalid_argument("@autotune configs= of '" + callee +
                                            "' is not a list of dict literals (tilec does not run generator functions "
                                            "to find the space); give --space instead");
            std::vector<Config> out;
            for (auto &e : configs->elts) out.push_back(dictConfig(*e, sm));
            if (out.empty()) throw std::invalid_argument("@autotune configs= of '" + callee + "' is empty");
            return out;
        }
    }
    return std::nullopt;
}

} // namespace tilec::tune
