/// \file
/// Python's exceptions at compile time: the exception classes, `raise`, and try / except / else / finally.
/// An exception is an error reported with its Python type (failPython): a `raise`, or one of the errors
/// Python raises too (a missing key, attribute or name, a bad index or value). Inside a try its diagnostics are
/// held; a matching handler drops them. Errors about what tilec cannot evaluate are never exceptions, so a
/// program cannot catch tilec's own limits and silently take another branch than Python would.
#include "eval/InterpImpl.h"

#include <algorithm>

namespace tilec::eval {

namespace {

using CB = ClassObj::Builtin;

/// Whether `exc` (an exception instance) is an instance of `cls`.
bool instanceOf(const Value &exc, const Value &cls) {
    if (!cls.is(VK::Class) || !exc.is(VK::Instance)) return false;
    auto &mro = exc.as<InstanceObj>().cls->mro;
    return std::find(mro.begin(), mro.end(), cls.as<ClassObj>().shared()) != mro.end();
}

bool isException(const Value &v) {
    if (!v.is(VK::Instance)) return false;
    auto &mro = v.as<InstanceObj>().cls->mro;
    return std::any_of(mro.begin(), mro.end(), [](auto &c) { return c->builtin == CB::BaseException; });
}

} // namespace

void addExceptionClasses(InterpImpl &in, Env &env) {
    auto base = in.builtinClass(CB::BaseException);
    env.set("BaseException", Value::object(VK::Class, base));
    // (name, base) in an order where each base comes first: Python's hierarchy of the common ones.
    static const std::pair<const char *, const char *> classes[] = {
        {"Exception", "BaseException"},     {"ValueError", "Exception"},       {"TypeError", "Exception"},
        {"RuntimeError", "Exception"},      {"NotImplementedError", "RuntimeError"},
        {"LookupError", "Exception"},       {"KeyError", "LookupError"},       {"IndexError", "LookupError"},
        {"AttributeError", "Exception"},    {"NameError", "Exception"},        {"AssertionError", "Exception"},
        {"ArithmeticError", "Exception"},   {"ZeroDivisionError", "ArithmeticError"},
        {"OverflowError", "ArithmeticError"}, {"ImportError", "Exception"},    {"ModuleNotFoundError", "ImportError"},
    };
    for (auto &[name, parent] : classes) {
        auto c = std::make_shared<ClassObj>();
        c->name = name;
        c->bases = {env.vars.at(parent).as<ClassObj>().shared()};
        c->mro = {c};
        for (auto &k : c->bases[0]->mro) c->mro.push_back(k);
        c->ns = newEnv(nullptr);
        env.set(name, Value::object(VK::Class, c));
    }
}

void InterpImpl::failPython(const char *type, const SourceRange &r, const std::string &msg, const Value &exc) {
    if (alreadyReported(r, msg)) {
        pyErrorType_ = type;
        pyErrorValue_ = exc;
        throw EvalAbort{};
    }
    diag_.error(r, msg);
    pyErrorType_ = type;
    pyErrorValue_ = exc;
    throw EvalAbort{};
}

void InterpImpl::execRaise(const ast::Stmt &s) {
    Value v;
    if (!s.value) {
        if (handling_.is(VK::None)) failPython("RuntimeError", s.range, "RuntimeError: no active exception to re-raise");
        v = handling_;
    } else {
        v = eval(*s.value);
    }
    if (v.is(VK::Poison)) throw EvalAbort{};
    if (v.is(VK::Opaque)) failOpaque(v, s.value->range);
    if (v.is(VK::Class)) {
        CallArgs none;
        none.call = none.callee = s.value->range;
        v = callValue(v, none);
    }
    if (!isException(v)) fail(s.range, "exceptions must derive from BaseException, not " + typeNameOf(v));
    std::string type = v.as<InstanceObj>().cls->name, text = str(v);
    failPython(type.c_str(), s.range, type + (text.empty() ? "" : ": " + text), v);
}

InterpImpl::Flow InterpImpl::execTry(const ast::Stmt &s) {
    Flow flow = Flow::Normal;
    bool raised = false;
    std::string type;
    Value exc;
    // Inside a launch the body may emit kernel statements, which a handler could not take back.
    auto emitted = [&] { return trace() && trace()->inLaunch && !trace()->blocks.empty() ? trace()->blocks.back().size() : 0; };
    size_t before = emitted();
    pyErrorType_.clear(); // only what the body raises
    diag_.hold();
    try {
        struct Depth {
            int &d;
            explicit Depth(int &d) : d(++d) {}
            ~Depth() { --d; }
        } depth(tryDepth_);
        flow = execBody(s.body);
    } catch (EvalAbort &) {
        if (pyErrorType_.empty()) {
            for (auto &d : diag_.endHold()) diag_.report(d.severity, d.range, d.message);
            throw;
        }
        raised = true;
        type = pyErrorType_;
        exc = pyErrorValue_;
    } catch (...) {
        for (auto &d : diag_.endHold()) diag_.report(d.severity, d.range, d.message);
        throw;
    }
    auto held = diag_.endHold();
    if (raised && emitted() != before) {
        for (auto &d : held) diag_.report(d.severity, d.range, d.message);
        failUnevaluable(s.range, "this 'try' raised after its body emitted kernel statements, which a handler cannot "
                                 "take back; raise before the kernel's statements, or in the factory");
    }
    auto reportHeld = [&](bool errors) {
        bool dropping = false; // a note goes with the diagnostic before it
        for (auto &d : held) {
            if (d.severity != Severity::Note) dropping = !errors && d.severity == Severity::Error;
            if (dropping) {
                reported_.erase({d.range.file, d.range.line, d.range.col, d.message});
                continue;
            }
            diag_.report(d.severity, d.range, d.message);
        }
    };
    auto finally = [&] {
        if (!s.finalbody.empty()) {
            Flow f = execBody(s.finalbody);
            if (f != Flow::Normal) flow = f;
        }
    };
    if (!raised) {
        reportHeld(true);
        if (flow == Flow::Normal) flow = execBody(s.orelse);
        finally();
        return flow;
    }
    if (exc.is(VK::None)) { // an error Python raises too: its exception object, made from the message
        Value *cls = builtins_->lookup(type);
        std::string text = held.empty() ? type : held.front().message;
        CallArgs args;
        args.call = args.callee = s.range;
        args.pos.push_back({Value::str(text), s.range});
        exc = cls ? callValue(*cls, args) : Value::none();
    }
    for (auto &h : s.handlers) {
        bool match = !h->value;
        if (h->value) {
            Value t = eval(*h->value);
            if (t.is(VK::Poison)) throw EvalAbort{};
            std::vector<Value> types = t.is(VK::Tuple) ? t.elements() : std::vector<Value>{t};
            for (auto &c : types) {
                if (c.is(VK::Opaque)) continue; // `except torch.cuda.OutOfMemoryError`: never what tilec raises
                if (!c.is(VK::Class)) fail(h->value->range, "catching classes that do not inherit from BaseException is not allowed");
                match = match || instanceOf(exc, c);
            }
        }
        if (!match) continue;
        reportHeld(false);
        pyErrorType_.clear();
        if (!h->name.empty()) bindName(h->name, exc, h->range, false);
        Restore<Value> handling(handling_, exc);
        flow = execBody(h->body);
        finally();
        return flow;
    }
    // No handler matches: the exception goes on, to an enclosing try or as the error it is.
    reportHeld(true);
    finally();
    pyErrorType_ = type;
    pyErrorValue_ = exc;
    throw EvalAbort{};
}

} // namespace tilec::eval
