/// \file
/// Statement execution: the per-statement error recovery (an error abandons its statement, whose targets
/// become Poison), compile-time control flow (if/for/while with break/continue/else, return, assert), the
/// step budget, and the dispatch of run-time control flow to the tracer.
#include "eval/InterpImpl.h"

#include "tilec/IROperator.h"

#include <algorithm>

namespace tilec::eval {

/// A compile-time range() inside T.Kernel longer than this is a serial loop, not unrolled (issue 11: TileLang's
/// warp-specialized examples loop `for ko in range(256)` around TMA copies and GEMMs).
constexpr int64_t kUnrolledRangeLimit = 64;

namespace {

/// Binds every name an assignment target would bind to Poison (`poison`, which may carry a message). Never
/// throws (it runs after an abort).
void poisonTarget(InterpImpl &in, const ast::Expr &t, const Value &poison, int depth = 0) {
    if (depth > 100) return;
    switch (t.kind) {
    case ast::ExprKind::Name: {
        auto it = in.env_->vars.find(t.str);
        // A kernel variable (alloc_var) stays the buffer: it was not rebound by the failed statement.
        if (it != in.env_->vars.end() && it->second.is(VK::Buffer) && it->second.buffer->scope == ir::Scope::Var)
            return;
        Value named = poison;
        if (auto at = named.s.find("%s"); at != std::string::npos) named.s.replace(at, 2, t.str);
        in.env_->set(t.str, named);
        if (in.env_ == in.module_ && !in.moduleAssignLoc_.count(t.str)) {
            in.moduleOrder_.push_back(t.str);
            in.moduleAssignLoc_[t.str] = t.range;
        }
        return;
    }
    case ast::ExprKind::Tuple:
    case ast::ExprKind::List:
        for (auto &e : t.elts) poisonTarget(in, *e, poison, depth + 1);
        return;
    case ast::ExprKind::Starred:
        if (t.a) poisonTarget(in, *t.a, poison, depth + 1);
        return;
    default: return;
    }
}

/// Binds the plain name `name` (a def, an import) to Poison as poisonTarget binds an assigned one.
void poisonName(InterpImpl &in, const std::string &name, const SourceRange &at, const Value &poison) {
    ast::Expr e;
    e.kind = ast::ExprKind::Name;
    e.str = name;
    e.range = at;
    poisonTarget(in, e, poison);
}

/// Binds every name a case's pattern would capture to Poison.
void poisonCaptures(InterpImpl &in, const ast::Pattern &p, const Value &poison, int depth = 0) {
    if (depth > 100) return;
    if (!p.name.empty() && p.kind != ast::PatternKind::Value) poisonName(in, p.name, p.range, poison);
    for (auto &e : p.elts) poisonCaptures(in, *e, poison, depth + 1);
    for (auto &e : p.kwdPatterns) poisonCaptures(in, *e, poison, depth + 1);
}

/// Pushes a control-flow marker for the duration of a scope.
struct CtlScope {
    std::vector<char> &ctl;
    CtlScope(std::vector<char> &c, char k) : ctl(c) { ctl.push_back(k); }
    ~CtlScope() { ctl.pop_back(); }
};

} // namespace

InterpImpl::Flow InterpImpl::execBody(const ast::Body &body) {
    for (auto &s : body) {
        if (frames_.back().moduleBody == &body && traces_.empty()) {
            execModuleStmt(s);
            continue;
        }
        Flow f = Flow::Normal;
        try {
            f = exec(s);
        } catch (EvalAbort &) {
            if (tryDepth_ > 0 && !pyErrorType_.empty()) throw; // a Python exception: an enclosing try may catch it
            pyErrorType_.clear(); // reported: no try catches it later
            ++abandoned_;
            bindPoisonNested(*s);
            // An abandoned statement costs many steps: a loop that fails in every iteration (its errors are
            // reported once) runs out of budget quickly instead of unwinding millions of times.
            steps_ += kAbortSteps;
            step(s->range);
            continue;
        }
        if (f == Flow::Exit) return execGuardedRest(body, (size_t)(&s - body.data()) + 1, s->range);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

void InterpImpl::execModuleStmt(const ast::StmtP &s) {
    // The statement's diagnostics are held until it is known whether it failed for a reason of its own.
    diag_.hold();
    Restore<bool> kernelErrors(kernelErrorHeld_, false), factory(ranFactory_, false);
    lastPoisonCause_.reset();
    bool aborted = false;
    try {
        exec(s);
    } catch (EvalAbort &) {
        aborted = true;
    } catch (...) {
        for (auto &d : diag_.endHold()) diag_.report(d.severity, d.range, d.message);
        throw;
    }
    auto held = diag_.endHold();
    auto firstError = std::find_if(held.begin(), held.end(), [](auto &d) { return d.severity == Severity::Error; });
    bool dependent = firstError != held.end() && lastPoisonCause_ && firstError->range.line == lastPoisonUse_.line &&
                     firstError->range.col == lastPoisonUse_.col;
    bool unevaluable = firstError != held.end() &&
                       unevaluable_.count({firstError->range.file, firstError->range.line, firstError->range.col,
                                           firstError->message});
    if (firstError == held.end() || kernelErrorHeld_ || ranFactory_ || !(unevaluable || dependent)) {
        // Succeeded; or failed making a kernel (a factory's or a prim_func's errors are an exported
        // kernel's); or failed as it would in Python (an undefined name, a type error): errors are errors.
        for (auto &d : held) diag_.report(d.severity, d.range, d.message);
        if (aborted) {
            bindPoisonNested(*s);
            steps_ += kAbortSteps;
            step(s->range);
        }
        return;
    }
    // A module-level statement that fails on its own, without making a kernel (torch code run at import, a
    // class, calling a kernel) is skipped: a tile compiler is not a Python interpreter. What it would bind
    // becomes an error value, reported where a kernel (or anything else) uses it.
    auto cause = std::make_shared<SkippedStatement>();
    if (dependent) {
        // It failed only because it uses what an earlier skipped statement did not bind: that one was
        // reported; this one passes the same cause on.
        *cause = *lastPoisonCause_;
    } else {
        diag_.warning(firstError->range, firstError->message + " (the module-level statement is skipped)");
        for (auto n = firstError + 1; n != held.end() && n->severity == Severity::Note; ++n) diag_.note(n->range, n->message);
        cause->line = s->range.line;
        cause->reason = firstError->message;
    }
    Value poison = poisonWithMessage("'%s' is not available: the module-level statement at line " +
                                     std::to_string(cause->line) + (cause->line == s->range.line ? " that binds it" : ", which it depends on,") +
                                     " was skipped (" + cause->reason + ")");
    poison.obj = cause;
    bindPoisonNested(*s, poison);
}

void InterpImpl::bindPoison(const ast::Stmt &s, const Value &poison) {
    switch (s.kind) {
    case ast::StmtKind::Assign:
    case ast::StmtKind::AnnAssign:
    case ast::StmtKind::AugAssign:
    case ast::StmtKind::For:
    case ast::StmtKind::ClassDef:
    case ast::StmtKind::Unsupported:
        for (auto &t : s.targets)
            if (t) poisonTarget(*this, *t, poison);
        return;
    case ast::StmtKind::With:
        for (auto &i : s.items)
            if (i.target) poisonTarget(*this, *i.target, poison);
        return;
    case ast::StmtKind::FunctionDef: poisonName(*this, s.name, s.range, poison); return;
    case ast::StmtKind::MatchCase: poisonCaptures(*this, *s.pattern, poison); return;
    case ast::StmtKind::Import:
    case ast::StmtKind::ImportFrom:
        // Only a skipped import (poison with its cause): one that failed with an error leaves its names unbound,
        // so that a use in the importing file is its own located error (an editor shows it in that file).
        if (!poison.obj) return;
        for (auto &a : s.names)
            if (a.name != "*")
                poisonName(*this, !a.asName.empty() ? a.asName : s.kind == ast::StmtKind::Import ? a.name.substr(0, a.name.find('.')) : a.name,
                           a.range, poison);
        return;
    default: return;
    }
}

void InterpImpl::bindPoisonNested(const ast::Stmt &s, const Value &poison, int depth) {
    // A compound statement that was abandoned (its condition, iterable or context failed, or a statement inside
    // it did) binds what any of its branches would have bound: `if version_ok(): f = g` else `f = h`, then
    // `from m import f` elsewhere, reports the skipped statement instead of a missing name.
    bindPoison(s, poison);
    bool compound = s.kind == ast::StmtKind::If || s.kind == ast::StmtKind::For || s.kind == ast::StmtKind::While ||
                    s.kind == ast::StmtKind::With || s.kind == ast::StmtKind::Try || s.kind == ast::StmtKind::ExceptHandler ||
                    s.kind == ast::StmtKind::Match || s.kind == ast::StmtKind::MatchCase;
    if (!compound || depth > 50) return; // a def's or a class's body binds names of its own scope
    for (const ast::Body *b : {&s.body, &s.orelse, &s.finalbody})
        for (auto &c : *b)
            if (c) bindPoisonNested(*c, poison, depth + 1);
    for (auto &h : s.handlers)
        if (h) bindPoisonNested(*h, poison, depth + 1);
}

void InterpImpl::budgetExhausted(const SourceRange &r) {
    // The loop that ran away is what the user needs to see, not whichever statement it was executing.
    SourceRange at = curLoop_ ? curLoop_->range : curStmt_ ? curStmt_->range : r;
    diag_.error(at, "evaluation exceeds its step budget of " + std::to_string(opts_.stepBudget) +
                        " steps (an infinite loop?)");
    throw BudgetExhausted{};
}

namespace {

const char *runtimeMessage(char kind) {
    return kind == 'R' ? "inside a run-time loop (T.Parallel, T.Pipelined, T.serial, ...) is not supported"
                       : "inside an 'if' on a run-time condition is not supported";
}

} // namespace

InterpImpl::Flow InterpImpl::exec(const ast::StmtP &sp) {
    const ast::Stmt &s = *sp;
    step(s.range);
    Nest nest(*this, s.range);
    Restore<const ast::Stmt *> cur(curStmt_, &s);
    switch (s.kind) {
    case ast::StmtKind::Expr: {
        if (!s.value || s.value->kind == ast::ExprKind::Ellipsis) return Flow::Normal; // `...` as a body: nothing
        Value v = eval(*s.value);
        // Inside a kernel a statement's effect is what the kernel does: a call tilec cannot evaluate
        // (`somelib.f(A, B)`) would silently do nothing. At module level and in factories it may stay opaque.
        if (v.is(VK::Opaque) && trace())
            fail(s.value->range, "'" + v.s + "' cannot be compiled into a kernel: it comes from module '" +
                                     opaqueModule(v) + "', which tilec does not evaluate");
        // T.call_extern(dtype, f, ...) whose value is discarded: the call is the statement
        if (auto c = v.is(VK::Expr) ? ir::as<ir::Call>(v.expr) : nullptr; c && c->name.rfind("extern:", 0) == 0 && trace())
            emit(ir::Evaluate::make(v.expr, s.value->range));
        return Flow::Normal;
    }
    case ast::StmtKind::Assign:
    case ast::StmtKind::AnnAssign:
        execAssign(s);
        return Flow::Normal;
    case ast::StmtKind::AugAssign:
        execAugAssign(s);
        return Flow::Normal;
    case ast::StmtKind::If: {
        Value c = constantOf(eval(*s.value));
        if (c.is(VK::Poison)) throw EvalAbort{};
        if (isRuntime(c)) return execRuntimeIf(s, runtimeExpr(c, s.value->range));
        return truthy(c, s.value->range) ? execBody(s.body) : execBody(s.orelse);
    }
    case ast::StmtKind::For: return execFor(s);
    case ast::StmtKind::While: return execWhile(s);
    case ast::StmtKind::With: return execWith(s);
    case ast::StmtKind::FunctionDef: execDef(sp); return Flow::Normal;
    case ast::StmtKind::ClassDef: execClass(sp); return Flow::Normal;
    case ast::StmtKind::Try: return execTry(s);
    case ast::StmtKind::Match: return execMatch(s);
    case ast::StmtKind::MatchCase: break;
    case ast::StmtKind::Raise: execRaise(s); return Flow::Normal;
    case ast::StmtKind::ExceptHandler: break;
    case ast::StmtKind::Global:
    case ast::StmtKind::Nonlocal:
        for (auto &n : s.names) {
            if (s.kind == ast::StmtKind::Global) {
                env_->globals.insert(n.name);
                continue;
            }
            bool found = false;
            for (Env *e = env_->parent.get(); e && e != &moduleScope() && !found; e = e->parent.get()) found = e->vars.count(n.name);
            if (!found) fail(n.range, "no binding for nonlocal '" + n.name + "' found");
            env_->nonlocals.insert(n.name);
        }
        return Flow::Normal;
    case ast::StmtKind::Return: {
        CallFrame &fr = frames_.back();
        if (fr.isModule) fail(s.range, "'return' outside a function");
        for (char k : fr.ctl)
            if (k != 'L') fail(s.range, std::string("'return' ") + runtimeMessage(k));
        Value v = s.value ? eval(*s.value) : Value::none();
        frames_.back().ret = v;
        frames_.back().retAt = s.range;
        return Flow::Return;
    }
    case ast::StmtKind::Pass: return Flow::Normal;
    case ast::StmtKind::Break:
    case ast::StmtKind::Continue: return execLoopExit(s);
    case ast::StmtKind::Import:
    case ast::StmtKind::ImportFrom: execImport(s); return Flow::Normal;
    case ast::StmtKind::Assert: {
        Value c = constantOf(eval(*s.value));
        if (c.is(VK::Poison)) throw EvalAbort{};
        if (isRuntime(c)) fail(s.value->range, "an assert on a run-time value is not supported");
        if (!truthy(c, s.value->range)) {
            std::string msg = "assertion failed";
            if (s.message) {
                Value m = eval(*s.message);
                if (m.is(VK::Poison)) throw EvalAbort{};
                std::string text = str(m);
                if (text.size() > 300) text = text.substr(0, 300) + "...";
                msg += ": " + text;
            }
            failPython("AssertionError", s.range, msg);
        }
        return Flow::Normal;
    }
    case ast::StmtKind::Unsupported: failUnevaluable(s.range, s.name + " is not supported at compile time");
    }
    fail(s.range, "this statement is not supported at compile time");
}

InterpImpl::Flow InterpImpl::execAttr(const ast::Stmt &s, const ast::WithItem &item, const FrameObj &f) {
    TraceState *t = trace();
    TILEC_ASSERT(t && t->inLaunch, "a T.attr frame outside T.Kernel");
    if (item.target) fail(item.target->range, "T.attr binds no name ('with T.attr(...):')");
    if (!f.reducer) return execBody(s.body); // "async_scope"
    t->reduceScopes.push_back(f.reducer);
    struct Close {
        TraceState &t;
        ~Close() { t.reduceScopes.pop_back(); }
    } close{*t};
    return execBody(s.body);
}

InterpImpl::Flow InterpImpl::execFor(const ast::Stmt &s) {
    Value it = constantOf(eval(*s.value));
    if (it.is(VK::Poison)) throw EvalAbort{};
    if (it.is(VK::Frame)) {
        auto &f = it.as<FrameObj>();
        if (f.kind == FrameObj::Kernel)
            fail(s.value->range, "T.Kernel opens the launch with 'with T.Kernel(...) as ...', not with 'for'");
        if (f.kind == FrameObj::Attr) fail(s.value->range, "T.attr opens a block with 'with', not with 'for'");
        return execLoopNest(s, f);
    }
    if (it.is(VK::Opaque)) failOpaque(it, s.value->range);
    if (it.is(VK::Range) && trace() && trace()->inLaunch && it.as<RangeObj>().step == 1 &&
        it.as<RangeObj>().stop - it.as<RangeObj>().start > kUnrolledRangeLimit) {
        // TileLang reads range() in a prim_func as T.serial; tilec unrolls short compile-time ranges (their
        // bodies may index Python lists), a long one inside T.Kernel is the serial loop TileLang makes.
        auto &rg = it.as<RangeObj>();
        auto f = std::make_shared<FrameObj>();
        f->kind = FrameObj::Loop;
        f->range = s.value->range;
        f->forKind = ir::ForKind::Serial;
        f->mins.push_back(ir::intImm(rg.start));
        f->extents.push_back(ir::intImm(rg.stop - rg.start));
        return execLoopNest(s, *f);
    }
    if (s.targets.empty() || !s.targets[0]) fail(s.range, "malformed for statement");
    const ast::Expr &target = *s.targets[0];
    bool broke = false;
    {
        Restore<const ast::Stmt *> loop(curLoop_, &s);
        CtlScope ctl(frames_.back().ctl, 'L');
        // One iteration; nullopt to go on.
        auto iteration = [&](const Value &v) -> std::optional<Flow> {
            assign(target, v, false);
            Flow f = execBody(s.body);
            if (f == Flow::Break || f == Flow::Return) return f;
            return std::nullopt;
        };
        std::optional<Flow> stop;
        if (it.is(VK::Range)) {
            // Ranges are not expanded: a long compile-time loop costs steps, not memory.
            auto rg = it.as<RangeObj>();
            for (int64_t i = rg.start; rg.step > 0 ? i < rg.stop : i > rg.stop;) {
                step(s.range);
                if ((stop = iteration(Value::integer(i)))) break;
                if (__builtin_add_overflow(i, rg.step, &i)) break;
            }
        } else {
            for (auto &v : iterate(it, s.value->range)) {
                step(s.range);
                if ((stop = iteration(v))) break;
            }
        }
        if (stop && *stop == Flow::Return) return Flow::Return;
        broke = stop.has_value();
    }
    return broke ? Flow::Normal : execBody(s.orelse);
}

InterpImpl::Flow InterpImpl::execWhile(const ast::Stmt &s) {
    {
        Restore<const ast::Stmt *> loop(curLoop_, &s);
        CtlScope ctl(frames_.back().ctl, 'L');
        for (;;) {
            step(s.range); // `while True:` without a break ends at the evaluation budget, as long for-loops do
            Value c = constantOf(eval(*s.value));
            if (c.is(VK::Poison)) throw EvalAbort{};
            if (isRuntime(c)) return execRuntimeWhile(s);
            if (!truthy(c, s.value->range)) break;
            Flow f = execBody(s.body);
            if (f == Flow::Break) return Flow::Normal;
            if (f == Flow::Return) return f;
        }
    }
    return execBody(s.orelse);
}

} // namespace tilec::eval
