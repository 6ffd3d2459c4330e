/// \file
/// TileLang's IKET profiling tool, `from tilelang.tools.cuda import iket` (TileLang 0.1.13's
/// tilelang/tools/cuda/iket): `iket.mark(name, payload=None)`, `iket.range(name, payload=None)` (a context
/// manager around a region), `iket.range_push` / `range_start`, `iket.range_pop` / `range_end`, and
/// `iket.payload(expr, dtype=None)`. IKET is instrumentation for an external profiler (TileLang's docs: "a CUDA
/// tool, not part of the TileLang language namespace"): the events record timestamps for that profiler and
/// change nothing the kernel computes. tilec emits no IKET instrumentation: each event inside a kernel is
/// dropped with a warning at its call, and the kernel computes what TileLang's instrumented one does. What
/// TileLang's frontend rejects when the kernel is built is rejected here too, at the call: an event name that
/// is not a non-empty string of at most 32 UTF-8 bytes, a payload dtype other than int32 / uint32 / float32
/// (aliases int, uint, float), a payload whose dtype cannot be inferred, one name used with two payload types,
/// and a range_pop without its range_push or naming another range. The module's other attributes (session,
/// event_table, ...) stay opaque: they run on the host, around TileLang's compile.
#include "eval/InterpImpl.h"

#include <algorithm>

namespace tilec::eval {

namespace {

const std::string kModule = "tilelang.tools.cuda.iket";
const std::string kPayloadTag = kModule + ".payload:"; ///< an iket.payload(...) value: the tag, then its dtype

/// The frontend's registry while tilec runs (TileLang's is the process's): each (kind, name)'s payload type,
/// and the open ranges of range_push, innermost last.
struct Registry {
    std::map<std::pair<std::string, std::string>, std::string> payloadOf;
    std::vector<std::string> ranges;
};

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char)std::tolower(c); });
    return s;
}

/// The payload dtype named `d` (TileLang's _normalize_payload_dtype), or a located error.
std::string normalizeDType(InterpImpl &in, const std::string &d, const SourceRange &at) {
    std::string n = lower(d);
    if (n == "int") n = "int32";
    if (n == "uint") n = "uint32";
    if (n == "float") n = "float32";
    if (n != "int32" && n != "uint32" && n != "float32")
        in.fail(at, "unsupported IKET payload dtype '" + d + "': iket payloads are int32, uint32 or float32");
    return n;
}

/// The dtype of a payload value given without one (TileLang's _infer_payload_dtype).
std::string inferDType(InterpImpl &in, const Arg &a) {
    const Value &v = a.value;
    if (v.is(VK::Bool)) return "uint32";
    if (v.is(VK::Int)) return "int32";
    if (v.is(VK::Float)) return "float32";
    if (v.is(VK::Expr) || v.is(VK::Access)) return normalizeDType(in, std::string(in.toExpr(a, "payload")->dtype.name()), a.range);
    in.fail(a.range, std::string("cannot infer the IKET payload dtype of a ") + typeName(v.kind) +
                         ": use iket.payload(expr, dtype='int32') with int32, uint32 or float32");
}

/// The payload type an event call names: "NoPayload", or the dtype of its iket.payload / scalar.
std::string payloadType(InterpImpl &in, const std::optional<Arg> &p) {
    if (!p || p->value.is(VK::None)) return "NoPayload";
    if (p->value.is(VK::Opaque) && p->value.s.rfind(kPayloadTag, 0) == 0) return p->value.s.substr(kPayloadTag.size());
    return inferDType(in, *p);
}

/// Checks an event's name and payload against the registry, then drops the event with a warning when it is
/// inside a kernel (outside one, TileLang's call makes an expression nothing emits).
Value event(InterpImpl &in, Registry &reg, CallArgs &args, const std::string &fname, const std::string &kind) {
    auto a = bindArgs(in, args, kModule + "." + fname, {"name", "payload?"});
    if (!a[0]->value.is(VK::Str) || a[0]->value.s.empty())
        in.fail(a[0]->range, "an IKET event name must be a non-empty string");
    const std::string &name = a[0]->value.s;
    if (name.size() > 32)
        in.fail(a[0]->range, "the IKET event name '" + name + "' has " + std::to_string(name.size()) +
                                 " UTF-8 bytes; names have at most 32");
    std::string type = payloadType(in, a[1]);
    auto key = std::make_pair(kind, name);
    auto [it, added] = reg.payloadOf.emplace(key, type);
    if (!added && it->second != type)
        in.fail(args.call, "IKET event '" + name + "' was first registered with payload type '" + it->second +
                               "', but is now used with '" + type + "'");
    if (kind == "range") reg.ranges.push_back(name);
    TraceState *t = in.trace();
    if (t && t->inLaunch)
        in.warn(args.call, "iket." + fname + ": tilec emits no IKET profiling events (instrumentation for IKET's "
                           "external profiler); the event is dropped, the kernel computes the same");
    return Value::none();
}

Value rangePop(InterpImpl &in, Registry &reg, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, kModule + "." + fname, {"name?"});
    if (reg.ranges.empty()) in.fail(args.call, "iket." + fname + "() without a matching iket.range_push()");
    std::string started = reg.ranges.back();
    reg.ranges.pop_back();
    if (a[0] && !a[0]->value.is(VK::None)) {
        std::string name = in.toStr(*a[0], "range name");
        if (name != started)
            in.fail(a[0]->range, "iket." + fname + "('" + name + "') does not match the open range '" + started + "'");
    }
    TraceState *t = in.trace();
    if (t && t->inLaunch) in.warn(args.call, "iket." + fname + ": tilec emits no IKET profiling events; the event is dropped");
    return Value::none();
}

} // namespace

Value iketModule() {
    auto reg = std::make_shared<Registry>();
    std::map<std::string, Value> m;
    m["payload"] = builtinFunction(kModule + ".payload", [](InterpImpl &in, CallArgs &args) {
        auto a = bindArgs(in, args, kModule + ".payload", {"expr", "dtype?"});
        std::string d = a[1] && !a[1]->value.is(VK::None) ? normalizeDType(in, in.toStr(*a[1], "dtype"), a[1]->range)
                                                          : inferDType(in, *a[0]);
        if (!a[0]->value.is(VK::Int) && !a[0]->value.is(VK::Float) && !a[0]->value.is(VK::Bool))
            (void)in.toExpr(*a[0], "payload"); // a run-time scalar, as TileLang's expression
        return makeOpaque(kPayloadTag + d, "tilelang");
    });
    for (const char *f : {"mark"})
        m[f] = builtinFunction(kModule + "." + f, [reg, f](InterpImpl &in, CallArgs &args) { return event(in, *reg, args, f, "mark"); });
    for (const char *f : {"range_push", "range_start"})
        m[f] = builtinFunction(kModule + "." + f, [reg, f](InterpImpl &in, CallArgs &args) { return event(in, *reg, args, f, "range"); });
    for (const char *f : {"range_pop", "range_end"})
        m[f] = builtinFunction(kModule + "." + f, [reg, f](InterpImpl &in, CallArgs &args) { return rangePop(in, *reg, args, f); });
    // `with iket.range(name):` pushes the range around its body; `with` runs an opaque context's body, and
    // the body's end closes the range (the registry's stack is only the frontend's check).
    m["range"] = builtinFunction(kModule + ".range", [reg](InterpImpl &in, CallArgs &args) {
        event(in, *reg, args, "range", "range");
        reg->ranges.pop_back();
        return makeOpaque(kModule + ".range(...)", "tilelang");
    });
    return partlyKnownModule(kModule, std::move(m));
}

} // namespace tilec::eval
