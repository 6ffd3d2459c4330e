/// \file
/// Assignment: names (with -D overrides at module level and kernel variables of scope var), nested tuple
/// unpacking with a starred target, item assignment to lists and dicts, buffer stores, and augmented
/// assignment.
#include "eval/InterpImpl.h"
#include "eval/TileLang.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"

#include <algorithm>

namespace tilec::eval {

namespace {

bool isVarBuffer(const Value &v) { return v.is(VK::Buffer) && v.buffer->scope == ir::Scope::Var; }

} // namespace

void InterpImpl::bindName(const std::string &name, const Value &v0, const SourceRange &at, bool assignStmt) {
    Value v = v0;
    bool module = env_ == module_;
    if (module) reportIfFailed(v); // a failed prim_func bound at module level is an exported kernel's errors
    if (module && assignStmt)
        if (auto it = defines_.find(name); it != defines_.end()) v = it->second;
    // A name bound to an alloc_var buffer is a kernel variable: `x = 5` stores into it, as in TileLang; a
    // value that reads a buffer is kept in a new one (InterpBindings.cpp).
    if (trace() && bindRuntime(name, v, at)) return;
    // `global x` / `nonlocal x` in the function: the name lives in the module's / an enclosing scope.
    if (!env_->globals.empty() && env_->globals.count(name)) {
        Env &g = moduleScope();
        if (&g == module_.get()) { // the main module keeps its order of names (exports)
            Restore<std::shared_ptr<Env>> scope(env_, module_);
            bindName(name, v, at, false);
        } else {
            g.set(name, std::move(v));
        }
        return;
    }
    if (!env_->nonlocals.empty() && env_->nonlocals.count(name)) {
        for (Env *e = env_->parent.get(); e; e = e->parent.get())
            if (e->vars.count(name)) {
                e->set(name, std::move(v));
                return;
            }
    }
    if (classBuild_ && env_ == classBuild_->ns && !env_->vars.count(name)) classBuild_->order.push_back(name);
    env_->set(name, std::move(v));
    if (module) {
        if (!moduleAssignLoc_.count(name)) moduleOrder_.push_back(name);
        moduleAssignLoc_[name] = at;
    }
}

void InterpImpl::execAssign(const ast::Stmt &s) {
    // A -D override replaces the right-hand side: it is not evaluated when it covers every target.
    if (env_ == module_ && !defines_.empty() && !s.targets.empty()) {
        bool all = true;
        for (auto &t : s.targets)
            if (!t || t->kind != ast::ExprKind::Name || !defines_.count(t->str)) all = false;
        if (all) {
            for (auto &t : s.targets) bindName(t->str, defines_[t->str], t->range, true);
            return;
        }
    }
    // `name: type` in a class body: a field of a dataclass, in order (ClassVar annotations are not fields).
    if (s.annotation && classBuild_ && env_ == classBuild_->ns && !s.targets.empty() && s.targets[0] &&
        s.targets[0]->kind == ast::ExprKind::Name) {
        const ast::Expr *a = s.annotation.get();
        if (a->kind == ast::ExprKind::Subscript && a->a) a = a->a.get();
        bool classVar = (a->kind == ast::ExprKind::Name || a->kind == ast::ExprKind::Attribute) && a->str == "ClassVar";
        auto &ann = classBuild_->annotated;
        bool seen = std::any_of(ann.begin(), ann.end(), [&](auto &x) { return x.first == s.targets[0]->str; });
        if (!classVar && !seen) ann.push_back({s.targets[0]->str, s.targets[0]->range});
    }
    if (!s.value) { // `x: int` declares nothing at compile time; `A: T.Tensor(...)` an eager kernel's parameter
        if (s.annotation && !s.targets.empty() && s.targets[0] && trace() && trace()->eager) declareEagerParam(s);
        return;
    }
    std::string target =
        s.targets.size() == 1 && s.targets[0] && s.targets[0]->kind == ast::ExprKind::Name ? s.targets[0]->str : "";
    Value v;
    {
        Restore<std::string> name(assignName_, target);
        v = eval(*s.value);
    }
    // `a = b` of two T.alloc_var variables copies b's value into a, as in TileLang, where Python would make `a`
    // another name for b (TileKernels' top-2 selection: `top2 = top1; top1 = x` read as an alias gave wrong
    // results). A T.alloc_var call on the right is a new variable bound to the name.
    if (!target.empty() && s.targets.size() == 1 && trace() && s.value->kind != ast::ExprKind::Call &&
        isVarBuffer(v))
        if (auto it = env_->vars.find(target);
            it != env_->vars.end() && isVarBuffer(it->second) && it->second.buffer != v.buffer) {
            storeToVar(it->second.buffer, v, s.targets[0]->range);
            return;
        }
    for (auto &t : s.targets)
        if (t) assign(*t, v, true);
}

void InterpImpl::assign(const ast::Expr &t, const Value &v, bool assignStmt) {
    switch (t.kind) {
    case ast::ExprKind::Name: bindName(t.str, v, t.range, assignStmt); return;
    case ast::ExprKind::Tuple:
    case ast::ExprKind::List: {
        if (v.is(VK::Poison)) {
            for (auto &e : t.elts) assign(*e, v, assignStmt);
            return;
        }
        Value c = constantOf(v);
        if (isRuntime(c)) fail(t.range, "cannot unpack a run-time value");
        std::vector<Value> items = iterate(c, t.range);
        int star = -1;
        for (size_t i = 0; i < t.elts.size(); ++i) {
            if (t.elts[i]->kind != ast::ExprKind::Starred) continue;
            if (star >= 0) fail(t.elts[i]->range, "multiple starred expressions in assignment");
            star = (int)i;
        }
        size_t n = t.elts.size();
        if (star < 0 && items.size() != n) {
            if (items.size() > n) fail(t.range, "too many values to unpack (expected " + std::to_string(n) + ")");
            fail(t.range, "not enough values to unpack (expected " + std::to_string(n) + ", got " +
                              std::to_string(items.size()) + ")");
        }
        if (star >= 0 && items.size() < n - 1)
            fail(t.range, "not enough values to unpack (expected at least " + std::to_string(n - 1) + ", got " +
                              std::to_string(items.size()) + ")");
        if (trace() && star < 0 && n > 1) takeUnpackedValues(t, items, t.range);
        size_t rest = items.size() - (n - 1); // elements the starred target takes
        size_t k = 0;
        for (size_t i = 0; i < n; ++i) {
            if ((int)i == star) {
                std::vector<Value> taken(items.begin() + (long)k, items.begin() + (long)(k + rest));
                k += rest;
                assign(*t.elts[i]->a, Value::list(std::move(taken)), assignStmt);
            } else {
                assign(*t.elts[i], items[k++], assignStmt);
            }
        }
        return;
    }
    case ast::ExprKind::Subscript: {
        Value base = eval(*t.a);
        if (base.is(VK::Poison) || base.is(VK::Opaque)) return;
        if (base.is(VK::Buffer)) {
            storeToBuffer(base.buffer, *t.b, v, t.range, std::nullopt);
            return;
        }
        if (t.b->kind == ast::ExprKind::Slice) fail(t.b->range, "slice assignment is not supported at compile time");
        Value key = eval(*t.b);
        setItem(base, key, v, t.range);
        return;
    }
    case ast::ExprKind::Attribute: {
        Value base = eval(*t.a);
        if (base.is(VK::Poison) || base.is(VK::Opaque)) return;
        setAttribute(base, t.str, v, t.range);
        return;
    }
    case ast::ExprKind::Starred: fail(t.range, "a starred assignment target must be in a tuple or list");
    default: fail(t.range, "cannot assign to this expression");
    }
}

void InterpImpl::execAugAssign(const ast::Stmt &s) {
    if (s.targets.empty() || !s.targets[0] || !s.value) fail(s.range, "malformed augmented assignment");
    const ast::Expr &t = *s.targets[0];
    switch (t.kind) {
    case ast::ExprKind::Name: {
        Value cur = lookupName(t);
        Value rhs = eval(*s.value);
        if (isVarBuffer(cur) && trace()) {
            storeToVar(cur.buffer, binaryOp(*this, s.augOp, cur, rhs, s.range), t.range);
            return;
        }
        // `lst += iterable` extends the list in place (aliases see it), as in Python.
        if (cur.is(VK::List) && s.augOp == ast::BinOpKind::Add && !rhs.is(VK::Poison)) {
            auto more = iterate(rhs, s.value->range);
            auto &elts = cur.as<ListObj>().elts;
            if (elts.size() + more.size() > (size_t(1) << 20))
                fail(s.range, "this list is too large for compile-time evaluation");
            elts.insert(elts.end(), more.begin(), more.end());
            return;
        }
        bindName(t.str, binaryOp(*this, s.augOp, cur, rhs, s.range), t.range, false);
        return;
    }
    case ast::ExprKind::Subscript: {
        Value base = eval(*t.a);
        if (base.is(VK::Poison) || base.is(VK::Opaque)) return;
        if (base.is(VK::Buffer)) {
            Value rhs = eval(*s.value);
            storeToBuffer(base.buffer, *t.b, rhs, t.range, s.augOp);
            return;
        }
        if (t.b->kind == ast::ExprKind::Slice) fail(t.b->range, "slice assignment is not supported at compile time");
        Value key = eval(*t.b);
        Value cur = getItem(base, key, t.range);
        Value rhs = eval(*s.value);
        setItem(base, key, binaryOp(*this, s.augOp, cur, rhs, s.range), t.range);
        return;
    }
    case ast::ExprKind::Attribute: {
        Value base = eval(*t.a);
        if (base.is(VK::Poison) || base.is(VK::Opaque)) return;
        Value cur = attribute(base, t.str, t);
        Value rhs = eval(*s.value);
        setAttribute(base, t.str, binaryOp(*this, s.augOp, cur, rhs, s.range), t.range);
        return;
    }
    default: fail(t.range, "cannot assign to this expression");
    }
}

namespace {

/// The run-time value `val` that a store into `b` writes (a Python float as b's float type), or a located error
/// for what is no number.
ir::Expr storedValue(InterpImpl &in, const Value &val, const ir::BufferNode &b, const SourceRange &at) {
    if (val.is(VK::Poison)) throw EvalAbort{};
    if (val.is(VK::Opaque)) in.failOpaque(val, at);
    if (!isNumber(val) && !val.is(VK::Expr) && !val.is(VK::Access) && !val.is(VK::Buffer))
        in.fail(at, std::string("cannot store a ") + typeName(val.kind) + " into buffer '" + b.name + "'");
    ir::Expr like = b.dtype.isFloat() ? ir::floatImm(0, b.dtype) : nullptr;
    return in.runtimeExpr(val, at, like);
}

} // namespace

void InterpImpl::storeToBuffer(const ir::Buffer &written, const ast::Expr &index, const Value &v, const SourceRange &at,
                               std::optional<ast::BinOpKind> augOp) {
    if (TraceState *t = trace())
        if (ir::Buffer base = tl::reinterpretedBase(*t, written)) return storeReinterpreted(base, written, index, v, at, augOp);
    Value acc = bufferAccess(written, index, at);
    const ir::Buffer b = acc.as<AccessObj>().buffer; // the buffer a T.reshape / T.view `written` indexes
    forgetVarDef(b);
    std::vector<ir::Expr> idx;
    for (auto &i : acc.as<AccessObj>().indices) {
        if (i.extent)
            fail(at, "assigning to a slice of buffer '" + b->name + "' is not supported; use T.copy or T.fill");
        idx.push_back(i.min);
    }
    Value val = plainValue(augOp ? binaryOp(*this, *augOp, acc, v, curStmt_ ? curStmt_->range : at) : v);
    ir::Expr e = storedValue(*this, val, *b, at);
    SourceRange loc = curStmt_ ? curStmt_->range : at;
    if (TraceState *t = trace(); t && t->subByte.count(b.get())) return emit(tl::subByteStore(*this, *t, b, idx, e, loc));
    emit(ir::Store::make(b, std::move(idx), ir::cast(b->dtype, e, e->loc), loc));
}

/// `view[i] = v` (or `view[i] op= v`) through a T.view of `base` to another dtype: the value, computed once (a
/// kernel variable when it reads `base`, whose elements the stores rewrite one by one), stored as its bits.
void InterpImpl::storeReinterpreted(const ir::Buffer &base, const ir::Buffer &view, const ast::Expr &index, const Value &v,
                                    const SourceRange &at, std::optional<ast::BinOpKind> augOp) {
    Value acc = bufferAccess(view, index, at, /*throughViews=*/false);
    std::vector<ir::Expr> idx;
    for (auto &i : acc.as<AccessObj>().indices) {
        if (i.extent) fail(at, "assigning to a slice of buffer '" + view->name + "' is not supported; use T.copy or T.fill");
        idx.push_back(i.min);
    }
    SourceRange loc = curStmt_ ? curStmt_->range : at;
    Value cur = augOp ? bufferAccess(view, index, at) : Value();
    Value val = plainValue(augOp ? binaryOp(*this, *augOp, cur, v, loc) : v);
    ir::Expr e = ir::cast(view->dtype, storedValue(*this, val, *view, at), at);
    if (ir::uses(e, base.get())) {
        ir::Buffer tmp = newKernelVar("tilec_view_value", view->dtype, at);
        emit(ir::Store::make(tmp, {ir::intImm(0)}, e, loc));
        e = ir::Load::make(tmp, {ir::intImm(0)}, at);
    }
    forgetVarDef(base);
    emit(tl::reinterpretedStore(*this, base, view, idx, e, loc));
}

void InterpImpl::storeToVar(const ir::Buffer &b, const Value &v0, const SourceRange &at) {
    Value v = plainValue(v0); // an IntEnum member stores its value
    if (v.is(VK::Poison)) throw EvalAbort{};
    forgetVarDef(b); // stored again: its first value no longer stands for it
    if (v.is(VK::Opaque)) failOpaque(v, at);
    if (!isNumber(v) && !v.is(VK::Expr) && !v.is(VK::Access) && !v.is(VK::Buffer))
        fail(at, std::string("cannot store a ") + typeName(v.kind) + " into kernel variable '" + b->name + "'");
    ir::Expr like = b->dtype.isFloat() ? ir::floatImm(0, b->dtype) : nullptr;
    ir::Expr e = runtimeExpr(v, at, like);
    std::vector<ir::Expr> idx(b->shape.size(), ir::intImm(0));
    SourceRange loc = curStmt_ ? curStmt_->range : at;
    emit(ir::Store::make(b, std::move(idx), ir::cast(b->dtype, e, e->loc), loc));
}

} // namespace tilec::eval
