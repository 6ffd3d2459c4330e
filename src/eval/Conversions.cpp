/// \file
/// What the `T.*` primitives use to read their arguments (Interp.h): errors, conversions of values to IR
/// expressions, integers, strings and dtypes, and argument binding; plus name suggestions.
#include "eval/InterpImpl.h"

#include "tilec/IROperator.h"

#include <algorithm>

namespace tilec::eval {

// ---------------------------------------------------------------------------------------------------------
// Names

namespace {
int editDistance(const std::string &a, const std::string &b, int cap) {
    if (std::abs((int)a.size() - (int)b.size()) > cap) return cap + 1;
    std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = (int)j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}
} // namespace

std::string closestName(const std::string &name, const std::vector<std::string> &candidates) {
    if (name.size() > 100) return "";
    std::string best;
    int bestD = 3;
    for (auto &c : candidates) {
        if (c == name || c.size() > 100 || (c.size() > 1 && c[0] == '_' && c[1] == '_')) continue;
        int d = editDistance(name, c, 2);
        if (d < bestD && d < (int)name.size() && d < (int)c.size()) {
            bestD = d;
            best = c;
        } else if (d == bestD && !best.empty() && c < best) {
            best = c;
        }
    }
    return best;
}

std::string plural(int64_t n, const std::string &word, const std::string &pluralWord) {
    return std::to_string(n) + " " + (n == 1 ? word : pluralWord.empty() ? word + "s" : pluralWord);
}

// ---------------------------------------------------------------------------------------------------------
// Errors

void Interp::fail(const SourceRange &r, const std::string &msg) {
    if (auto *impl = dynamic_cast<InterpImpl *>(this)) impl->pyErrorType_.clear();
    if (auto *impl = dynamic_cast<InterpImpl *>(this); impl && impl->alreadyReported(r, msg)) throw EvalAbort{};
    diag().error(r, msg);
    throw EvalAbort{};
}

bool InterpImpl::alreadyReported(const SourceRange &r, const std::string &msg) {
    return !reported_.insert({r.file, r.line, r.col, msg}).second;
}

void InterpImpl::failWithNote(const SourceRange &r, const std::string &msg, const SourceRange &noteAt,
                              const std::string &note) {
    pyErrorType_.clear();
    if (alreadyReported(r, msg)) throw EvalAbort{};
    diag().error(r, msg);
    diag().note(noteAt, note);
    throw EvalAbort{};
}

namespace {
[[noreturn]] void silentAbort() { throw EvalAbort{}; }

/// The failures below need only Interp::fail, so the T.* primitives can be unit-tested with a small fake
/// interpreter; only the conversion of buffers and accesses needs the real one's rules.
[[noreturn]] void failRuntimeValue(Interp &in, const SourceRange &r, const std::string &what) {
    in.fail(r, what + " must be known at compile time, but this value is only known at run time");
}
[[noreturn]] void failOpaqueValue(Interp &in, const Value &v, const SourceRange &r) {
    std::string msg = "'" + v.s + "' comes from module '" + opaqueModule(v) + "', which tilec does not evaluate";
    auto *impl = dynamic_cast<InterpImpl *>(&in);
    if (!impl) in.fail(r, msg);
    // Where the name it derives from was imported: the line that says which module the user meant.
    const OpaqueObj *o = v.obj ? &v.as<OpaqueObj>() : nullptr;
    if (o && o->importedAt.valid()) {
        impl->unevaluable_.insert({r.file, r.line, r.col, msg});
        impl->failWithNote(r, msg, o->importedAt,
                           o->importedName.empty() ? "module '" + opaqueModule(v) + "' is imported here"
                                                   : "'" + o->importedName + "' is imported here");
    }
    impl->failUnevaluable(r, msg);
}

ir::Expr bufferValueExpr(Interp &in, const Value &v, const SourceRange &r) {
    if (auto *p = dynamic_cast<InterpImpl *>(&in)) return p->runtimeExpr(v, r);
    // A fake interpreter: expressions stay, a point access is a load, anything else is not a scalar.
    if (v.is(VK::Expr)) return v.expr;
    if (v.is(VK::Access) && v.as<AccessObj>().isPoint()) {
        std::vector<ir::Expr> idx;
        for (auto &i : v.as<AccessObj>().indices) idx.push_back(i.min);
        return ir::Load::make(v.as<AccessObj>().buffer, std::move(idx), r);
    }
    in.fail(r, std::string("a ") + typeName(v.kind) + " is not a scalar value");
}
} // namespace

void InterpImpl::failOpaque(const Value &v, const SourceRange &r) { failOpaqueValue(*this, v, r); }
void InterpImpl::failUnevaluable(const SourceRange &r, const std::string &msg) {
    unevaluable_.insert({r.file, r.line, r.col, msg});
    fail(r, msg);
}

void InterpImpl::failRuntime(const SourceRange &r, const std::string &what) { failRuntimeValue(*this, r, what); }

// ---------------------------------------------------------------------------------------------------------
// Conversions



ir::Expr Interp::toExpr(const Arg &a, const char *what) {
    if (a.value.is(VK::Instance) && plainValue(a.value).kind != VK::Instance) return toExpr({plainValue(a.value), a.range}, what);
    const Value &v = a.value;
    switch (v.kind) {
    case VK::Poison: silentAbort();
    case VK::Int: return ir::intImm(v.i, v.i >= INT32_MIN && v.i <= INT32_MAX ? DType::Int32 : DType::Int64, a.range);
    case VK::Bool: return ir::boolImm(v.b, a.range);
    case VK::Float: return ir::floatImm(v.f, DType::Float32, a.range);
    case VK::Expr:
    case VK::Access:
    case VK::Buffer: return bufferValueExpr(*this, v, a.range);
    case VK::Opaque: failOpaqueValue(*this, v, a.range);
    default: break;
    }
    fail(a.range, std::string(what) + " must be a number or a run-time scalar, not a " + typeName(v.kind));
}

int64_t Interp::toInt(const Arg &a, const char *what) {
    if (a.value.is(VK::Instance) && plainValue(a.value).kind != VK::Instance) return toInt({plainValue(a.value), a.range}, what);
    const Value &v = a.value;
    switch (v.kind) {
    case VK::Poison: silentAbort();
    case VK::Int: return v.i;
    case VK::Bool: return v.b ? 1 : 0;
    case VK::Expr:
        if (auto c = ir::constValue(v.expr)) return *c;
        if (v.expr->dtype.isFloat()) break;
        failRuntimeValue(*this, a.range, what);
    case VK::Access:
    case VK::Buffer:
        if (isRuntime(v)) failRuntimeValue(*this, a.range, what);
        break;
    case VK::Opaque: failOpaqueValue(*this, v, a.range);
    default: break;
    }
    std::string tn = v.is(VK::Expr) ? "run-time " + std::string(v.expr->dtype.name()) : typeName(v.kind);
    fail(a.range, std::string(what) + " must be an integer, not a " + tn);
}

double Interp::toFloat(const Arg &a, const char *what) {
    if (a.value.is(VK::Instance) && plainValue(a.value).kind != VK::Instance) return toFloat({plainValue(a.value), a.range}, what);
    const Value &v = a.value;
    switch (v.kind) {
    case VK::Poison: silentAbort();
    case VK::Int: return (double)v.i;
    case VK::Bool: return v.b ? 1 : 0;
    case VK::Float: return v.f;
    case VK::Expr:
        if (auto f = ir::as<ir::FloatImm>(v.expr)) return f->value;
        if (auto c = ir::constValue(v.expr)) return (double)*c;
        failRuntimeValue(*this, a.range, what);
    case VK::Access:
    case VK::Buffer:
        if (isRuntime(v)) failRuntimeValue(*this, a.range, what);
        break;
    case VK::Opaque: failOpaqueValue(*this, v, a.range);
    default: break;
    }
    fail(a.range, std::string(what) + " must be a number, not a " + typeName(v.kind));
}

bool Interp::toBool(const Arg &a, const char *what) {
    if (a.value.is(VK::Instance) && plainValue(a.value).kind != VK::Instance) return toBool({plainValue(a.value), a.range}, what);
    const Value &v = a.value;
    if (v.is(VK::Poison)) silentAbort();
    if (v.is(VK::Expr)) {
        if (auto c = ir::constValue(v.expr)) return *c != 0;
        failRuntimeValue(*this, a.range, what);
    }
    if (auto *p = dynamic_cast<InterpImpl *>(this)) return p->truthy(v, a.range, what);
    switch (v.kind) { // a fake interpreter (unit tests): Python truth of the plain kinds
    case VK::Bool: return v.b;
    case VK::Int: return v.i != 0;
    case VK::Float: return v.f != 0;
    case VK::None: return false;
    case VK::Str: return !v.s.empty();
    default: fail(a.range, std::string(what) + " must be a compile-time truth value");
    }
}

std::string Interp::toStr(const Arg &a, const char *what) {
    if (a.value.is(VK::Instance) && plainValue(a.value).kind != VK::Instance) return toStr({plainValue(a.value), a.range}, what);
    const Value &v = a.value;
    if (v.is(VK::Poison)) silentAbort();
    if (v.is(VK::Str)) return v.s;
    if (v.is(VK::Opaque)) failOpaqueValue(*this, v, a.range);
    fail(a.range, std::string(what) + " must be a string, not a " + typeName(v.kind));
}

DType Interp::toDType(const Arg &a, const char *what) {
    if (a.value.is(VK::Instance) && plainValue(a.value).kind != VK::Instance) return toDType({plainValue(a.value), a.range}, what);
    const Value &v = a.value;
    if (v.is(VK::Poison)) silentAbort();
    if (v.is(VK::DType)) return v.dtype;
    if (v.is(VK::Opaque)) failOpaqueValue(*this, v, a.range);
    if (v.is(VK::Str)) {
        if (auto t = DType::parse(v.s); t && *t != DType::Void) return *t;
        std::vector<std::string> names;
        for (int k = DType::Bool; k < DType::Void; ++k) names.emplace_back(DType((DType::Kind)k).name());
        std::string msg = "unknown dtype '" + v.s.substr(0, 60) + "'";
        std::string close = closestName(v.s, names);
        if (!close.empty()) {
            diag().error(a.range, msg);
            note(a.range, "did you mean '" + close + "'?");
            throw EvalAbort{};
        }
        fail(a.range, msg);
    }
    fail(a.range, std::string(what) + " must be a dtype, not a " + typeName(v.kind));
}

std::vector<Arg> Interp::toSequence(const Arg &a, const char *what) {
    const Value &v = a.value;
    if (v.is(VK::Poison)) silentAbort();
    std::vector<Arg> out;
    if (v.is(VK::Tuple) || v.is(VK::List)) {
        for (auto &e : v.elements()) {
            if (e.is(VK::Poison)) silentAbort();
            out.push_back({e, a.range});
        }
    } else {
        out.push_back(a);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------------------
// Argument binding for primitives

std::vector<std::optional<Arg>> bindArgs(Interp &in, const CallArgs &args, const std::string &fname,
                                         const std::vector<std::string> &params) {
    std::vector<std::optional<Arg>> out(params.size());
    std::vector<std::string> names;
    size_t required = 0;
    for (auto &p : params) {
        bool opt = !p.empty() && p.back() == '?';
        names.push_back(opt ? p.substr(0, p.size() - 1) : p);
        if (!opt) required = names.size();
    }
    if (args.pos.size() > params.size()) {
        std::string takes = required == params.size()
                                ? "takes " + plural((int64_t)params.size(), "positional argument")
                                : "takes from " + std::to_string(required) + " to " +
                                      plural((int64_t)params.size(), "positional argument");
        in.fail(args.call, fname + "() " + takes + " but " + std::to_string(args.pos.size()) +
                               (args.pos.size() == 1 ? " was" : " were") + " given");
    }
    for (size_t i = 0; i < args.pos.size(); ++i) out[i] = args.pos[i];
    for (auto &[name, arg] : args.kw) {
        auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) {
            std::string msg = fname + "() got an unexpected keyword argument '" + name + "'";
            std::string close = closestName(name, names);
            auto *impl = dynamic_cast<InterpImpl *>(&in);
            if (!close.empty() && impl) impl->failWithNote(arg.range, msg, arg.range, "did you mean '" + close + "'?");
            in.fail(arg.range, msg);
        }
        size_t i = (size_t)(it - names.begin());
        if (out[i]) in.fail(arg.range, fname + "() got multiple values for argument '" + name + "'");
        out[i] = arg;
    }
    std::vector<std::string> missing;
    for (size_t i = 0; i < required; ++i)
        if (!out[i] && params[i].back() != '?') missing.push_back(names[i]);
    if (!missing.empty()) {
        std::string list;
        for (size_t i = 0; i < missing.size(); ++i)
            list += (i == 0 ? "" : i + 1 == missing.size() ? (missing.size() > 2 ? ", and " : " and ") : ", ") +
                    ("'" + missing[i] + "'");
        in.fail(args.call, fname + "() missing " + plural((int64_t)missing.size(), "required argument") + ": " + list);
    }
    return out;
}

} // namespace tilec::eval
