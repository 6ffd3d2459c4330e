/// \file
/// The match statement (PEP 634) at compile time: the subject is evaluated, each case's pattern is matched
/// against it in order, the first that matches (and whose guard holds) binds its names and runs its block.
/// Patterns match Python's values as in CPython: literals by == (None, True, False by `is`), sequences
/// (tuple, list, range; never str) by length with one starred rest, dicts by key with a `**rest`, classes by
/// isinstance with `__match_args__` (a dataclass's fields) for positional sub-patterns. A subject or a pattern
/// tilec cannot evaluate (a run-time value, a class of a module it does not evaluate) is a located error.
#include "eval/InterpImpl.h"

namespace tilec::eval {

using Binds = std::vector<std::pair<std::string, Value>>;

namespace {

/// Python's types whose class pattern takes the subject itself as its one positional sub-pattern.
bool selfMatchingType(const Value &cls) {
    if (!cls.is(VK::Builtin)) return false;
    const std::string &n = cls.as<BuiltinObj>().name;
    return n == "int" || n == "bool" || n == "float" || n == "str" || n == "tuple" || n == "list" || n == "dict";
}

} // namespace

InterpImpl::Flow InterpImpl::execMatch(const ast::Stmt &s) {
    Value subject = constantOf(eval(*s.value));
    if (subject.is(VK::Poison)) throw EvalAbort{};
    if (isRuntime(subject))
        fail(s.value->range, "a match statement's subject must be known at compile time, and this one is a run-time "
                             "value (test it with if/elif inside the kernel)");
    for (auto &c : s.handlers) {
        Binds binds;
        if (!matchPattern(*c->pattern, subject, binds, 0)) continue;
        for (auto &[name, v] : binds) bindName(name, v, c->pattern->range, false);
        if (c->value) {
            Value guard = constantOf(eval(*c->value));
            if (guard.is(VK::Poison)) throw EvalAbort{};
            if (isRuntime(guard))
                fail(c->value->range, "a case guard must be known at compile time, and this one is a run-time value");
            if (!truthy(guard, c->value->range, "case guard")) continue;
        }
        return execBody(c->body);
    }
    return Flow::Normal;
}

bool InterpImpl::matchPattern(const ast::Pattern &p, const Value &v, Binds &binds, int depth) {
    step(p.range);
    if (depth > 100) fail(p.range, "pattern nests too deeply");
    if (v.is(VK::Opaque) && p.kind != ast::PatternKind::Capture && p.kind != ast::PatternKind::Wildcard &&
        p.kind != ast::PatternKind::As && p.kind != ast::PatternKind::Or)
        failOpaque(v, p.range);
    switch (p.kind) {
    case ast::PatternKind::Wildcard: return true;
    case ast::PatternKind::Capture: binds.emplace_back(p.name, v); return true;
    case ast::PatternKind::As:
        if (!matchPattern(*p.elts[0], v, binds, depth + 1)) return false;
        binds.emplace_back(p.name, v);
        return true;
    case ast::PatternKind::Or:
        for (auto &alt : p.elts) {
            size_t before = binds.size();
            if (matchPattern(*alt, v, binds, depth + 1)) return true;
            binds.resize(before);
        }
        return false;
    case ast::PatternKind::Value: {
        Value lit = constantOf(eval(*p.value));
        if (lit.is(VK::Poison)) throw EvalAbort{};
        if (lit.is(VK::Opaque)) failOpaque(lit, p.value->range);
        if (lit.is(VK::None) || lit.is(VK::Bool)) return pyIs(v, lit);
        return equal(v, lit);
    }
    case ast::PatternKind::Sequence: {
        if (!v.is(VK::Tuple) && !v.is(VK::List) && !v.is(VK::Range)) return false;
        std::vector<Value> items = v.is(VK::Range) ? iterate(v, p.range) : v.elements();
        size_t star = p.elts.size();
        for (size_t i = 0; i < p.elts.size(); ++i)
            if (p.elts[i]->kind == ast::PatternKind::Star) star = i;
        size_t fixed = p.elts.size() - (star < p.elts.size() ? 1 : 0);
        if (star == p.elts.size() ? items.size() != fixed : items.size() < fixed) return false;
        size_t rest = items.size() - fixed;
        for (size_t i = 0, at = 0; i < p.elts.size(); ++i) {
            if (i == star) {
                if (!p.elts[i]->name.empty())
                    binds.emplace_back(p.elts[i]->name, Value::list({items.begin() + at, items.begin() + at + rest}));
                at += rest;
                continue;
            }
            if (!matchPattern(*p.elts[i], items[at++], binds, depth + 1)) return false;
        }
        return true;
    }
    case ast::PatternKind::Mapping: {
        if (!v.is(VK::Dict)) return false;
        auto &items = v.as<DictObj>().items;
        std::vector<bool> used(items.size(), false);
        for (size_t k = 0; k < p.keys.size(); ++k) {
            Value key = constantOf(eval(*p.keys[k]));
            if (key.is(VK::Poison)) throw EvalAbort{};
            size_t at = 0;
            while (at < items.size() && !equal(items[at].first, key)) ++at;
            if (at == items.size() || !matchPattern(*p.elts[k], items[at].second, binds, depth + 1)) return false;
            used[at] = true;
        }
        if (!p.name.empty()) {
            auto rest = newDict();
            for (size_t i = 0; i < items.size(); ++i)
                if (!used[i]) rest->items.push_back(items[i]);
            binds.emplace_back(p.name, Value::object(VK::Dict, rest));
        }
        return true;
    }
    case ast::PatternKind::Class: return matchClass(p, v, binds, depth);
    case ast::PatternKind::Star: break; // only inside a Sequence (the builder refuses it elsewhere)
    }
    return false;
}

/// `C(p, ..., name=q, ...)`: isinstance(v, C), then the positional sub-patterns against the attributes that
/// C.__match_args__ names (for int, str, ... the subject itself), then the keyword ones against attributes.
bool InterpImpl::matchClass(const ast::Pattern &p, const Value &v, Binds &binds, int depth) {
    Value cls = eval(*p.value);
    if (cls.is(VK::Poison)) throw EvalAbort{};
    if (cls.is(VK::Opaque)) failOpaque(cls, p.value->range);
    if (!cls.is(VK::Class) && !cls.is(VK::Builtin))
        failPython("TypeError", p.value->range, "called match pattern must be a class");
    if (!isInstance(*this, v, {cls, p.value->range})) return false;
    std::vector<std::pair<std::string, const ast::Pattern *>> attrs;
    if (!p.elts.empty()) {
        if (selfMatchingType(cls)) {
            if (p.elts.size() > 1)
                failPython("TypeError", p.range, repr(cls) + "() accepts 1 positional sub-pattern (" +
                                                     std::to_string(p.elts.size()) + " given)");
            if (!matchPattern(*p.elts[0], v, binds, depth + 1)) return false;
        } else {
            std::vector<std::string> names;
            Value ma = cls.is(VK::Class) ? attributeOr(*this, cls, "__match_args__", p.value->range, Value::poison())
                                         : Value::poison();
            if (ma.is(VK::Tuple))
                for (auto &n : ma.elements()) names.push_back(toStr({n, p.value->range}, "__match_args__ item"));
            else if (ma.is(VK::Poison) && cls.is(VK::Class) && cls.as<ClassObj>().dataclass)
                for (auto &f : cls.as<ClassObj>().fields)
                    if (f.init && !f.kwOnly) names.push_back(f.name);
            if (p.elts.size() > names.size())
                failPython("TypeError", p.range, repr(cls) + "() accepts " + std::to_string(names.size()) +
                                                     " positional sub-pattern" + (names.size() == 1 ? "" : "s") + " (" +
                                                     std::to_string(p.elts.size()) + " given)");
            for (size_t i = 0; i < p.elts.size(); ++i) attrs.emplace_back(names[i], p.elts[i].get());
        }
    }
    for (size_t i = 0; i < p.kwdNames.size(); ++i) attrs.emplace_back(p.kwdNames[i], p.kwdPatterns[i].get());
    for (auto &[name, sub] : attrs) {
        Value a = attributeOr(*this, v, name, sub->range, Value::poison());
        if (a.is(VK::Poison) || !matchPattern(*sub, a, binds, depth + 1)) return false;
    }
    return true;
}

} // namespace tilec::eval
