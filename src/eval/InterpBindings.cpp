/// \file
/// Plain names bound to run-time values inside a prim_func, with TileLang's value semantics where plain
/// inlining would change the program's meaning: a value that reads a buffer is materialized into a
/// per-thread kernel variable when it is assigned (so a later store cannot change it); names a run-time
/// `if` assigns are merged after it (a select, or stores in both branches); names a run-time loop assigns
/// from its variables cannot be used after it. Pure index arithmetic stays an inlined expression, because
/// layout inference and bounds analysis need affine expressions, not variables.
#include "eval/InterpImpl.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"

#include <algorithm>
#include <set>

namespace tilec::eval {

namespace {

constexpr size_t kMaxWalk = 100000; ///< nodes one scan visits; expressions are bounded far below this

bool isVarBuffer(const Value &v) {
    return v.is(VK::Buffer) && v.buffer->scope == ir::Scope::Var;
}

/// Calls fn on every node of e (Load indices included), iteratively; stops when fn returns true.
template <class F> bool anyNode(const ir::Expr &root, F fn) {
    std::vector<const ir::ExprNode *> stack;
    if (root)
        stack.push_back(root.get());
    size_t seen = 0;
    auto push = [&](const ir::Expr &e) {
        if (e)
            stack.push_back(e.get());
    };
    while (!stack.empty() && ++seen < kMaxWalk) {
        const ir::ExprNode *n = stack.back();
        stack.pop_back();
        if (fn(*n))
            return true;
        switch (n->kind) {
        case ir::NodeKind::Binary: {
            auto *b = static_cast<const ir::Binary *>(n);
            push(b->a);
            push(b->b);
            break;
        }
        case ir::NodeKind::Unary:
            push(static_cast<const ir::Unary *>(n)->a);
            break;
        case ir::NodeKind::Cast:
            push(static_cast<const ir::Cast *>(n)->value);
            break;
        case ir::NodeKind::Select: {
            auto *s = static_cast<const ir::Select *>(n);
            push(s->cond);
            push(s->t);
            push(s->f);
            break;
        }
        case ir::NodeKind::Call:
            for (auto &a : static_cast<const ir::Call *>(n)->args)
                push(a);
            break;
        case ir::NodeKind::Load:
            for (auto &a : static_cast<const ir::Load *>(n)->indices)
                push(a);
            break;
        default:
            break;
        }
    }
    return false;
}

bool exprHasLoad(const ir::Expr &e) {
    return anyNode(e, [](const ir::ExprNode &n) { return n.kind == ir::NodeKind::Load; });
}

/// A value that can live in a scalar kernel variable.
bool isScalar(const Value &v) {
    return isNumber(v) || v.is(VK::Expr) || isVarBuffer(v) ||
           (v.is(VK::Access) && v.as<AccessObj>().isPoint());
}

/// A scalar that reads no buffer: safe to re-evaluate wherever the name is used.
bool isPure(const Value &v) {
    return isNumber(v) || (v.is(VK::Expr) && !exprHasLoad(v.expr));
}

/// Whether two bindings are the same object (a name an `if` or a loop left alone).
bool sameBinding(const Value &a, const Value &b) {
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case VK::None:
        return true;
    case VK::Poison:
        return a.s == b.s;
    case VK::Bool:
        return a.b == b.b;
    case VK::Int:
        return a.i == b.i;
    case VK::Float:
        return a.f == b.f;
    case VK::Str:
        return a.s == b.s;
    case VK::Expr:
        return a.expr == b.expr;
    case VK::Buffer:
        return a.buffer == b.buffer;
    case VK::DType:
        return a.dtype == b.dtype;
    case VK::PrimFunc:
        return a.kernel == b.kernel;
    case VK::Opaque:
        return a.s == b.s && a.obj == b.obj;
    default:
        return a.obj == b.obj;
    }
}

/// The first of `vars` that v mentions (in expressions, buffer indices, tuple elements), or null.
ir::Var mentionedVar(const Value &v, const std::vector<ir::Var> &vars, int depth = 0) {
    if (vars.empty() || depth > 4)
        return nullptr;
    ir::Var found;
    auto scan = [&](const ir::Expr &e) {
        anyNode(e, [&](const ir::ExprNode &n) {
            if (n.kind != ir::NodeKind::Var)
                return false;
            for (auto &x : vars)
                if (x.get() == &n) {
                    found = x;
                    return true;
                }
            return false;
        });
        return found != nullptr;
    };
    if (v.is(VK::Expr))
        scan(v.expr);
    if (v.is(VK::Access))
        for (auto &i : v.as<AccessObj>().indices)
            if (scan(i.min) || scan(i.extent))
                break;
    if (v.is(VK::Tuple) || v.is(VK::List)) {
        size_t n = 0;
        for (auto &e : v.elements()) {
            if (++n > 64)
                break;
            if ((found = mentionedVar(e, vars, depth + 1)))
                break;
        }
    }
    return found;
}

} // namespace

Value InterpImpl::poisonWithMessage(std::string msg) {
    Value v = Value::poison();
    v.s = std::move(msg);
    return v;
}

ir::Buffer InterpImpl::newKernelVar(const std::string &name, DType t, const SourceRange &at) {
    ir::Kernel &k = *trace()->kernel;
    std::string unique = uniqueBufferName(k, name);
    auto b = ir::makeBuffer(unique, ir::Scope::Var, t, {ir::intImm(1)}, at);
    k.allocs.push_back(b);
    materialized_.insert(b);
    return b;
}

bool InterpImpl::bindRuntime(const std::string &name, const Value &v, const SourceRange &at) {
    TraceState *t = trace();
    if (!t)
        return false;
    bool copy = v.is(VK::Buffer) && materialized_.count(v.buffer);
    auto it = env_->vars.find(name);
    // A variable the compiler made for a plain name in an earlier launch of the prim_func is not this launch's:
    // assigning the name again here binds it afresh, as a Python name (issue 24: MoE routing reassigns scalars
    // in a second T.Kernel). A T.alloc_var of another launch stays one, and its use is an error.
    auto earlierLaunch = [&](const ir::Buffer &b) {
        auto &allocs = t->kernel->allocs;
        return materialized_.count(b) && std::find(allocs.begin(), allocs.end(), b) == allocs.end();
    };
    if (it != env_->vars.end() && isVarBuffer(it->second) && (!v.is(VK::Buffer) || copy) && !earlierLaunch(it->second.buffer)) {
        // A kernel variable takes the value (T.alloc_var semantics). One the compiler made keeps its type:
        // a run-time value of another type gets a new variable, as a fresh Python binding would.
        const ir::Buffer &cur = it->second.buffer;
        bool keep = !materialized_.count(cur) || !isScalar(v) || isNumber(v) ||
                    runtimeExpr(v, at)->dtype == cur->dtype;
        if (keep) {
            storeToVar(cur, v, at);
            return true;
        }
    }
    if (!t->inLaunch || t->blocks.empty())
        return false;
    // A T.call_extern value is computed once, where it is bound, like a value read from memory.
    auto callsExtern = [](const ir::Expr &e) {
        return anyNode(e, [](const ir::ExprNode &n) {
            return n.kind == ir::NodeKind::Call && static_cast<const ir::Call &>(n).name.rfind("extern:", 0) == 0;
        });
    };
    bool reads = copy || (v.is(VK::Access) && v.as<AccessObj>().isPoint()) ||
                 (v.is(VK::Expr) && (exprHasLoad(v.expr) || callsExtern(v.expr)));
    if (!reads)
        return false;
    ir::Expr e = runtimeExpr(v, at);
    ir::Buffer b = newKernelVar(name, e->dtype, at);
    SourceRange loc = curStmt_ ? curStmt_->range : at;
    emit(ir::Store::make(b, {ir::intImm(0)}, e, loc));
    env_->set(name, Value::ofBuffer(b));
    varDefs_[b] = e;
    return true;
}

void InterpImpl::forgetVarDef(const ir::Buffer &b) {
    if (varDefs_.empty()) return;
    varDefs_.erase(b);
    for (auto it = varDefs_.begin(); it != varDefs_.end();) {
        bool reads = anyNode(it->second, [&](const ir::ExprNode &n) {
            return n.kind == ir::NodeKind::Load && static_cast<const ir::Load &>(n).buffer == b;
        });
        it = reads ? varDefs_.erase(it) : std::next(it);
    }
}

ir::Expr InterpImpl::sliceExtent(const ir::Expr &lo, const ir::Expr &hi, const SourceRange &at) {
    ir::Expr ext = ir::simplify(ir::binary(ir::BinaryOp::Sub, hi, lo, at));
    if (ir::constValue(ext) || varDefs_.empty()) return ext;
    // Each such variable holds its value from its one store on, and a variable made from another was stored
    // after it: both sides may be replaced (a few levels deep) without changing the difference.
    struct Defs : ir::IRMutator {
        using ir::IRMutator::visit;
        const std::map<ir::Buffer, ir::Expr> *defs;
        int depth = 0;
        ir::Expr visit(const std::shared_ptr<const ir::Load> &l) override {
            auto it = defs->find(l->buffer);
            if (it == defs->end() || depth > 8) return ir::IRMutator::visit(l);
            ++depth;
            ir::Expr r = mutate(it->second);
            --depth;
            return r;
        }
    } d;
    d.defs = &varDefs_;
    ir::Expr resolved = ir::simplify(ir::binary(ir::BinaryOp::Sub, d.mutate(hi), d.mutate(lo), at));
    if (auto c = ir::constValue(resolved)) return ir::intImm(*c, ext->dtype, at);
    return ext;
}

void InterpImpl::mergeIfBindings(const std::map<std::string, Value> &thenVars,
                                 std::vector<ir::Stmt> &thenStmts, std::vector<ir::Stmt> &elseStmts,
                                 const ir::Expr &cond, const SourceRange &at) {
    std::map<std::string, Value> &elseVars = env_->vars;
    std::vector<std::string> names;
    for (auto &kv : thenVars)
        names.push_back(kv.first);
    for (auto &kv : elseVars)
        if (!thenVars.count(kv.first))
            names.push_back(kv.first);
    charge((int64_t)names.size());
    for (auto &name : names) {
        auto ti = thenVars.find(name);
        auto ei = elseVars.find(name);
        if (ti != thenVars.end() && ei != elseVars.end() && sameBinding(ti->second, ei->second))
            continue;
        if (ti == thenVars.end() || ei == elseVars.end()) {
            // Both copies start from the bindings before the if, so a name missing in one is new in the
            // other.
            elseVars[name] =
                poisonWithMessage("'" + name + "' is assigned in only one branch of a run-time if");
            continue;
        }
        const Value &tv = ti->second, &ev = ei->second;
        if (tv.is(VK::Poison) || ev.is(VK::Poison)) {
            elseVars[name] = tv.is(VK::Poison) ? tv : ev;
            continue;
        }
        if (!isScalar(tv) || !isScalar(ev)) {
            elseVars[name] =
                poisonWithMessage("'" + name +
                                  "' is assigned different compile-time values in the branches of a "
                                  "run-time if");
            continue;
        }
        if (isPure(tv) && isPure(ev) && !exprHasLoad(cond)) {
            ir::Expr a = runtimeExpr(tv, at), b = runtimeExpr(ev, at);
            elseVars[name] =
                Value::ofExpr(ir::provablyEqual(a, b) ? a : checkedHeight(ir::select(cond, a, b, at), at));
            continue;
        }
        // A select would read buffers (or the condition) after the if; store in each branch instead.
        ir::Buffer target = isVarBuffer(tv) ? tv.buffer : isVarBuffer(ev) ? ev.buffer : nullptr;
        if (!target)
            target =
                newKernelVar(name, ir::promote(runtimeExpr(tv, at)->dtype, runtimeExpr(ev, at)->dtype), at);
        ir::Expr like = target->dtype.isFloat() ? ir::floatImm(0, target->dtype) : nullptr;
        auto fill = [&](const Value &v, std::vector<ir::Stmt> &stmts) {
            if (v.is(VK::Buffer) && v.buffer == target)
                return;
            ir::Expr e = runtimeExpr(v, at, like);
            stmts.push_back(ir::Store::make(target, {ir::intImm(0)}, ir::cast(target->dtype, e, e->loc), at));
        };
        fill(tv, thenStmts);
        fill(ev, elseStmts);
        forgetVarDef(target); // a branch stored into it
        elseVars[name] = Value::ofBuffer(target);
    }
}

namespace {
/// Simple names a body assigns (`x = ...`, `x += ...`, `for x in`, `with ... as x`), nested blocks included,
/// nested defs excluded. Recursion depth is bounded by the parser's indentation limit.
void assignedNames(const ast::Body &body, std::vector<std::string> &out) {
    auto target = [&](const ast::ExprP &e, auto &self) -> void {
        if (!e) return;
        if (e->kind == ast::ExprKind::Name) out.push_back(e->str);
        else if (e->kind == ast::ExprKind::Tuple || e->kind == ast::ExprKind::List)
            for (auto &x : e->elts) self(x, self);
        else if (e->kind == ast::ExprKind::Starred) self(e->a, self);
    };
    for (auto &s : body) {
        if (!s || s->kind == ast::StmtKind::FunctionDef) continue;
        for (auto &t : s->targets) target(t, target);
        for (auto &w : s->items) target(w.target, target);
        assignedNames(s->body, out);
        assignedNames(s->orelse, out);
    }
}
} // namespace

void InterpImpl::takeUnpackedValues(const ast::Expr &t, std::vector<Value> &items, const SourceRange &at) {
    std::set<const ir::BufferNode *> stored; // kernel variables the targets store into
    for (auto &e : t.elts)
        if (e && e->kind == ast::ExprKind::Name)
            if (auto it = env_->vars.find(e->str); it != env_->vars.end() && isVarBuffer(it->second))
                stored.insert(it->second.buffer.get());
    if (stored.empty()) return;
    auto readsStored = [&](const ir::ExprNode &n) {
        return n.kind == ir::NodeKind::Load && stored.count(static_cast<const ir::Load &>(n).buffer.get()) > 0;
    };
    for (auto &v : items) {
        const bool reads = isVarBuffer(v) ? stored.count(v.buffer.get()) > 0 : v.is(VK::Expr) && anyNode(v.expr, readsStored);
        if (!reads) continue;
        // A plain store, not storeToVar: the new variable must not stand for the expression it copies.
        ir::Expr e = isVarBuffer(v) ? ir::Load::make(v.buffer, {ir::intImm(0)}, at) : v.expr;
        ir::Buffer b = newKernelVar("tilec_unpacked", e->dtype, at);
        emit(ir::Store::make(b, {ir::intImm(0)}, e, at));
        v = Value::ofExpr(ir::Load::make(b, {ir::intImm(0)}, at));
    }
}

void InterpImpl::materializeLoopCarried(const ast::Body &body, const std::vector<std::string> &loopNames,
                                        const SourceRange &at) {
    std::vector<std::string> names;
    assignedNames(body, names);
    charge((int64_t)names.size());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (auto &name : names) {
        if (std::find(loopNames.begin(), loopNames.end(), name) != loopNames.end()) continue;
        auto it = env_->vars.find(name);
        if (it == env_->vars.end()) continue;
        const Value &v = it->second;
        if (isVarBuffer(v) || !isScalar(v) || v.is(VK::Bool)) continue;
        ir::Expr e = runtimeExpr(v, at);
        ir::Buffer b = newKernelVar(name, e->dtype, at);
        emit(ir::Store::make(b, {ir::intImm(0)}, e, at));
        env_->set(name, Value::ofBuffer(b));
    }
}

void InterpImpl::checkWhileBindings(const std::map<std::string, Value> &before) {
    charge((int64_t)env_->vars.size());
    for (auto &[name, v] : env_->vars) {
        auto b = before.find(name);
        if ((b != before.end() && sameBinding(b->second, v)) || !isRuntime(v)) continue;
        v = poisonWithMessage("'" + name + "' was assigned inside a while loop on a run-time condition; store it in a "
                              "T.alloc_var to keep it after the loop");
    }
}

void InterpImpl::checkLoopBindings(const std::map<std::string, Value> &before, size_t firstLoopVar,
                                   const std::vector<std::string> &loopNames) {
    std::vector<ir::Var> vars(loopVars_.begin() + (long)firstLoopVar, loopVars_.end());
    charge((int64_t)env_->vars.size());
    for (auto &[name, v] : env_->vars) {
        auto b = before.find(name);
        if (b != before.end() && sameBinding(b->second, v))
            continue;
        if (std::find(loopNames.begin(), loopNames.end(), name) != loopNames.end()) {
            v = poisonWithMessage("run-time loop variable '" + name + "' cannot be used after its loop");
            continue;
        }
        if (ir::Var x = mentionedVar(v, vars))
            v = poisonWithMessage("'" + name +
                                  "' was assigned inside a run-time loop and its value depends on the "
                                  "loop variable '" +
                                  x->name + "'; store it in a T.alloc_var to keep it");
    }
}

} // namespace tilec::eval
