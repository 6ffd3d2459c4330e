/// \file
/// Comprehensions (`[f(x) for x in xs if p(x)]`, set and dict comprehensions, generator expressions) and
/// sets. A comprehension runs eagerly in a scope of its own, as in Python 3: its targets do not leak into
/// the enclosing scope, the first iterable is evaluated outside it. A generator expression becomes the
/// list it would yield (compile-time code only consumes them whole: sum, any, tuple, ...). A set is the
/// tuple of its distinct elements in order of first appearance.
#include "eval/InterpImpl.h"

namespace tilec::eval {

namespace {
constexpr size_t kMaxElements = size_t(1) << 20; ///< as for displays (InterpExpr.cpp)
} // namespace

Value InterpImpl::makeSet(std::vector<Value> elts, const SourceRange &r) {
    std::vector<Value> out;
    for (auto &v0 : elts) {
        Value v = constantOf(v0);
        if (v.is(VK::Poison)) return v;
        if (isRuntime(v)) fail(r, "a set element must be known at compile time");
        if (v.is(VK::List) || v.is(VK::Dict)) fail(r, std::string("unhashable type: '") + typeName(v.kind) + "'");
        bool seen = false;
        for (auto &o : out)
            if ((seen = equal(o, v))) break;
        charge((int64_t)out.size());
        if (!seen) out.push_back(v);
    }
    return Value::tuple(std::move(out));
}

Value InterpImpl::evalComprehension(const ast::Expr &e) {
    const bool isDict = e.kind == ast::ExprKind::DictComp;
    std::vector<Value> elts;
    auto dict = isDict ? newDict() : nullptr;
    // The first iterable belongs to the enclosing scope; everything else to the comprehension's own.
    Value first = eval(*e.generators.at(0).iter);
    if (first.is(VK::Poison)) throw EvalAbort{};
    Restore<std::shared_ptr<Env>> scope(env_, newEnv(env_));
    auto produce = [&]() {
        if (isDict) {
            Value k = constantOf(eval(*e.a));
            if (k.is(VK::Poison)) throw EvalAbort{};
            if (isRuntime(k)) fail(e.a->range, "a dict key must be known at compile time");
            Value v = eval(*e.b);
            for (auto &kv : dict->items)
                if (equal(kv.first, k)) {
                    kv.second = v;
                    return;
                }
            dict->items.push_back({k, v});
        } else {
            elts.push_back(eval(*e.a));
        }
        if (elts.size() + (dict ? dict->items.size() : 0) > kMaxElements)
            fail(e.range, "this comprehension is too large for compile-time evaluation");
    };
    // Runs generator `i` (and the ones inside it) over each element of `iterable`.
    std::function<void(size_t, const Value &)> run = [&](size_t i, const Value &iterable) {
        const ast::Comprehension &g = e.generators[i];
        for (auto &v : iterate(iterable, g.iter->range)) {
            step(g.range);
            assign(*g.target, v, false);
            bool keep = true;
            for (auto &c : g.ifs) {
                Value cv = constantOf(eval(*c));
                if (cv.is(VK::Poison)) throw EvalAbort{};
                if (isRuntime(cv)) fail(c->range, "a comprehension's condition must be known at compile time");
                if (!(keep = truthy(cv, c->range))) break;
            }
            if (!keep) continue;
            if (i + 1 == e.generators.size()) {
                produce();
                continue;
            }
            Value inner = eval(*e.generators[i + 1].iter);
            if (inner.is(VK::Poison)) throw EvalAbort{};
            run(i + 1, inner);
        }
    };
    run(0, first);
    if (isDict) return Value::object(VK::Dict, dict);
    if (e.kind == ast::ExprKind::SetComp) return makeSet(std::move(elts), e.range);
    return Value::list(std::move(elts));
}

} // namespace tilec::eval
