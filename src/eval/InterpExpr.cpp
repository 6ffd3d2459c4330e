/// \file
/// Expression evaluation: names, literals and displays, subscripts (Python sequences and buffer accesses),
/// boolean operators, comparison chains and conditional expressions (which become IR when a run-time
/// value decides them), truthiness and iteration.
#include "eval/InterpImpl.h"
#include "eval/TileLang.h"

#include "tilec/IROperator.h"

#include <algorithm>
#include <set>

namespace tilec::eval {

namespace {
constexpr size_t kMaxElements = size_t(1) << 20; ///< the largest sequence iteration may materialise

/// Python's normalisation of a slice over a sequence of length n.
} // namespace

uint64_t iterateLength(const RangeObj &r) {
    __int128 lo = r.start, hi = r.stop, st = r.step, n = 0;
    if (st > 0 && hi > lo) n = (hi - lo + st - 1) / st;
    if (st < 0 && lo > hi) n = (lo - hi - st - 1) / -st;
    return (uint64_t)n;
}

namespace {

struct SliceBounds {
    int64_t start, stop, step;
};
SliceBounds sliceBounds(std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t step, int64_t n) {
    auto clampIdx = [&](int64_t v, bool neg) {
        if (v < 0) {
            v += n;
            if (v < 0) v = neg ? -1 : 0;
        } else if (v >= n) {
            v = neg ? n - 1 : n;
        }
        return v;
    };
    bool neg = step < 0;
    int64_t start = lo ? clampIdx(*lo, neg) : (neg ? n - 1 : 0);
    int64_t stop = hi ? clampIdx(*hi, neg) : (neg ? -1 : n);
    return {start, stop, step};
}
} // namespace

InterpImpl::Nest::Nest(InterpImpl &in, const SourceRange &r) : in(in) {
    ++in.nesting_;
    char here;
    size_t used = in.stackBase_ > &here ? (size_t)(in.stackBase_ - &here) : 0;
    if (in.nesting_ > 20000 || used > in.stackLimit_) {
        --in.nesting_;
        in.fail(r, "this nests too deeply for compile-time evaluation");
    }
}

Value InterpImpl::eval(const ast::Expr &e) {
    step(e.range);
    Nest nest(*this, e.range);
    switch (e.kind) {
    case ast::ExprKind::Name: return lookupName(e);
    case ast::ExprKind::Int: return Value::integer(e.intValue);
    case ast::ExprKind::Float: return Value::real(e.floatValue);
    case ast::ExprKind::Str: return Value::str(e.str);
    case ast::ExprKind::JoinedStr: return evalJoinedStr(e);
    case ast::ExprKind::FormattedValue: fail(e.range, "internal error: a replacement field outside its f-string");
    case ast::ExprKind::Bool: return Value::boolean(e.boolValue);
    case ast::ExprKind::None: return Value::none();
    // Python's Ellipsis singleton: what type hints take (`tuple[int, ...]`, `Callable[..., T]`), which tilec
    // only carries; a kernel that uses it reports it as a value it cannot evaluate.
    case ast::ExprKind::Ellipsis: return makeOpaque("Ellipsis", "builtins");
    case ast::ExprKind::ListComp:
    case ast::ExprKind::SetComp:
    case ast::ExprKind::DictComp:
    case ast::ExprKind::GeneratorExp: return evalComprehension(e);
    case ast::ExprKind::Lambda: return makeFunction(e.def);
    case ast::ExprKind::Set:
    case ast::ExprKind::Tuple:
    case ast::ExprKind::List: {
        std::vector<Value> elts;
        for (auto &x : e.elts) {
            if (x->kind == ast::ExprKind::Starred) {
                auto more = iterate(eval(*x->a), x->range);
                elts.insert(elts.end(), more.begin(), more.end());
            } else {
                elts.push_back(eval(*x));
            }
            if (elts.size() > kMaxElements) fail(e.range, "this display is too large for compile-time evaluation");
        }
        if (e.kind == ast::ExprKind::Set) return makeSet(std::move(elts), e.range);
        return e.kind == ast::ExprKind::Tuple ? Value::tuple(std::move(elts)) : Value::list(std::move(elts));
    }
    case ast::ExprKind::Dict: {
        auto d = newDict();
        auto put = [&](const Value &k, const Value &v) {
            for (auto &kv : d->items)
                if (equal(kv.first, k)) {
                    kv.second = v;
                    return;
                }
            d->items.push_back({k, v});
        };
        for (size_t i = 0; i < e.elts.size() && i < e.values.size(); ++i) {
            if (!e.elts[i]) {
                Value m = eval(*e.values[i]);
                if (m.is(VK::Poison)) return m;
                if (!m.is(VK::Dict)) fail(e.values[i]->range, std::string("'**' needs a dict, not a ") + typeName(m.kind));
                for (auto &kv : m.as<DictObj>().items) put(kv.first, kv.second);
                continue;
            }
            Value k = constantOf(eval(*e.elts[i]));
            if (isRuntime(k)) fail(e.elts[i]->range, "a dict key must be known at compile time");
            put(k, eval(*e.values[i]));
        }
        return Value::object(VK::Dict, d);
    }
    case ast::ExprKind::Attribute: return attribute(eval(*e.a), e.str, e);
    case ast::ExprKind::Subscript: return subscript(eval(*e.a), e);
    case ast::ExprKind::Slice: fail(e.range, "a slice is only allowed inside a subscript");
    case ast::ExprKind::Call: return evalCall(e);
    case ast::ExprKind::Starred: fail(e.range, "a starred expression is only allowed in calls, displays and assignments");
    case ast::ExprKind::BinOp: {
        Value a = eval(*e.a);
        Value b = eval(*e.b);
        return binaryOp(*this, e.binOp, a, b, e.range);
    }
    case ast::ExprKind::UnaryOp: return unaryOp(*this, e.unaryOp, eval(*e.a), e.range);
    case ast::ExprKind::BoolOp: {
        // Python returns the deciding operand; once a run-time operand is involved the rest is And/Or IR.
        Value acc;
        ir::Expr rt;
        for (size_t i = 0; i < e.elts.size(); ++i) {
            Value v = constantOf(eval(*e.elts[i]));
            if (v.is(VK::Poison) || v.is(VK::Opaque)) return v;
            if (rt) {
                ir::Expr x = isRuntime(v) ? runtimeExpr(v, e.elts[i]->range)
                                          : ir::boolImm(truthy(v, e.elts[i]->range, "operand"), e.elts[i]->range);
                rt = ir::binary(e.isAnd ? ir::BinaryOp::And : ir::BinaryOp::Or, rt, x, e.range);
                continue;
            }
            if (isRuntime(v)) {
                rt = ir::cast(DType::Bool, runtimeExpr(v, e.elts[i]->range));
                continue;
            }
            acc = v;
            bool t = truthy(v, e.elts[i]->range, "operand");
            if (t != e.isAnd) return v; // `and` stops at a false operand, `or` at a true one
        }
        return rt ? Value::ofExpr(rt) : acc;
    }
    case ast::ExprKind::Compare: {
        if (e.elts.size() != e.cmpOps.size() + 1 || e.cmpOps.empty()) fail(e.range, "malformed comparison");
        Value left = eval(*e.elts[0]);
        ir::Expr rt;
        Value last;
        for (size_t i = 0; i < e.cmpOps.size(); ++i) {
            Value right = eval(*e.elts[i + 1]);
            Value r = constantOf(compareOp(*this, e.cmpOps[i], left, right, e.range));
            if (r.is(VK::Poison) || r.is(VK::Opaque)) return r;
            if (isRuntime(r)) {
                rt = rt ? ir::binary(ir::BinaryOp::And, rt, r.expr, e.range) : r.expr;
            } else {
                if (!truthy(r, e.range)) return r; // a false link ends the chain
                last = r;
            }
            left = right;
        }
        return rt ? Value::ofExpr(rt) : last;
    }
    case ast::ExprKind::IfExp: {
        Value c = constantOf(eval(*e.b));
        if (c.is(VK::Poison)) return c;
        if (c.is(VK::Opaque)) failOpaque(c, e.b->range);
        if (isRuntime(c)) {
            Value t = eval(*e.a), f = eval(*e.c);
            if (t.is(VK::Poison) || f.is(VK::Poison)) return Value::poison();
            ir::Expr et = (isRuntime(t) || t.is(VK::Expr)) ? runtimeExpr(t, e.a->range) : nullptr;
            ir::Expr ef = (isRuntime(f) || f.is(VK::Expr)) ? runtimeExpr(f, e.c->range) : nullptr;
            if (!et) et = operandExpr(t, e.a->range, ef);
            if (!ef) ef = operandExpr(f, e.c->range, et);
            return Value::ofExpr(ir::select(runtimeExpr(c, e.b->range), et, ef, e.range));
        }
        return truthy(c, e.b->range) ? eval(*e.a) : eval(*e.c);
    }
    case ast::ExprKind::Unsupported: failUnevaluable(e.range, e.str + " is not supported at compile time");
    }
    fail(e.range, "this expression is not supported at compile time");
}

namespace {

/// Whether `name` is one of Python's builtins or a module attribute Python's import system sets.
bool isPythonBuiltinName(const std::string &name) {
    static const std::set<std::string> names = {
        "__build_class__", "__debug__", "__doc__", "__import__", "__loader__", "__path__", "__spec__", "__cached__",
        "__builtins__", "abs", "aiter", "all", "anext", "any", "ascii", "bin", "bool", "breakpoint", "bytearray", "bytes",
        "callable", "chr", "classmethod", "compile", "complex", "copyright", "credits", "delattr", "dict", "dir",
        "divmod", "enumerate", "eval", "exec", "exit", "filter", "float", "format", "frozenset", "getattr", "globals",
        "hasattr", "hash", "help", "hex", "id", "input", "int", "isinstance", "issubclass", "iter", "len", "license",
        "list", "locals", "map", "max", "memoryview", "min", "next", "object", "oct", "open", "ord", "pow", "print",
        "property", "quit", "range", "repr", "reversed", "round", "set", "setattr", "slice", "sorted", "staticmethod",
        "str", "sum", "super", "tuple", "type", "vars", "zip", "NotImplemented", "Ellipsis"};
    return names.count(name) > 0;
}

} // namespace

Value InterpImpl::lookupName(const ast::Expr &e) {
    if (Value *v = env_->lookup(e.str)) {
        if (v->is(VK::Poison) && !v->s.empty()) { // see poisonWithMessage
            // The statement's first such use: its first error (a function body goes on past an abandoned
            // statement, so later uses may follow) is what makes a module-level statement dependent.
            if (v->obj && !lastPoisonCause_) {
                lastPoisonCause_ = std::static_pointer_cast<SkippedStatement>(v->obj);
                lastPoisonUse_ = e.range;
            }
            fail(e.range, v->s);
        }
        return *v;
    }
    if (auto v = opaqueStarName(e.str)) return *v; // a name `from OPAQUE import *` may have bound
    // A name Python defines that tilec does not model (`globals()`, a package's `__path__`) is not the user's
    // typo: a module-level statement using it is skipped, a kernel using it is refused, each with this reason.
    if (isPythonBuiltinName(e.str))
        failUnevaluable(e.range, "'" + e.str + "' is Python's, which tilec does not evaluate");
    std::string msg = "undefined name '" + e.str + "'";
    if (reported_.count({e.range.file, e.range.line, e.range.col, msg})) throw EvalAbort{};
    std::vector<std::string> names;
    for (Env *s = env_.get(); s; s = s->parent.get())
        for (auto &kv : s->vars) names.push_back(kv.first);
    std::string close = closestName(e.str, names);
    if (!close.empty()) failWithNote(e.range, msg, e.range, "did you mean '" + close + "'?");
    failPython("NameError", e.range, msg);
}

int InterpImpl::heightOf(const ir::Expr &e, int depth) {
    if (!e) return 0;
    if (auto it = heights_.find(e.get()); it != heights_.end()) return it->second.second;
    if (depth > kMaxExprHeight) return kMaxExprHeight + 1; // tall enough to refuse; stop recursing
    int h = 0;
    switch (e->kind) {
    case ir::NodeKind::Binary:
        h = std::max(heightOf(ir::as<ir::Binary>(e)->a, depth + 1), heightOf(ir::as<ir::Binary>(e)->b, depth + 1));
        break;
    case ir::NodeKind::Unary: h = heightOf(ir::as<ir::Unary>(e)->a, depth + 1); break;
    case ir::NodeKind::Cast: h = heightOf(ir::as<ir::Cast>(e)->value, depth + 1); break;
    case ir::NodeKind::Select: {
        auto s = ir::as<ir::Select>(e);
        h = std::max({heightOf(s->cond, depth + 1), heightOf(s->t, depth + 1), heightOf(s->f, depth + 1)});
        break;
    }
    case ir::NodeKind::Call:
        for (auto &a : ir::as<ir::Call>(e)->args) h = std::max(h, heightOf(a, depth + 1));
        break;
    case ir::NodeKind::Load:
        for (auto &a : ir::as<ir::Load>(e)->indices) h = std::max(h, heightOf(a, depth + 1));
        break;
    default: return 1; // leaves are not worth remembering
    }
    ++h;
    if (heightOrder_.size() >= 8192) {
        heights_.erase(heightOrder_.front());
        heightOrder_.pop_front();
    }
    heights_[e.get()] = {e, h};
    heightOrder_.push_back(e.get());
    return h;
}

const ir::Expr &InterpImpl::checkedHeight(const ir::Expr &e, const SourceRange &r) {
    if (heightOf(e, 0) > kMaxExprHeight)
        fail(r, "this run-time expression nests more than " + std::to_string(kMaxExprHeight) +
                    " operations deep; store partial results in a buffer");
    return e;
}

ir::Expr InterpImpl::runtimeExpr(const Value &v, const SourceRange &r, const ir::Expr &like) {
    switch (v.kind) {
    case VK::Expr: return checkedHeight(v.expr, r);
    case VK::Int:
        return ir::intImm(v.i, v.i >= INT32_MIN && v.i <= INT32_MAX ? DType::Int32 : DType::Int64, r);
    case VK::Bool: return ir::boolImm(v.b, r);
    case VK::Float: return ir::floatImm(v.f, like && like->dtype.isFloat() ? like->dtype : DType(DType::Float32), r);
    case VK::Access: {
        auto &a = v.as<AccessObj>();
        std::vector<ir::Expr> idx;
        for (auto &i : a.indices) {
            if (i.extent)
                fail(a.range, "a slice of buffer '" + a.buffer->name +
                                  "' names a region, not a value; index it with plain indices to read one element");
            idx.push_back(i.min);
        }
        if (TraceState *t = trace(); t && t->subByte.count(a.buffer.get())) return tl::subByteLoad(*t, a.buffer, idx, a.range);
        return ir::Load::make(a.buffer, std::move(idx), a.range);
    }
    case VK::Buffer:
        if (v.buffer->scope == ir::Scope::Var) {
            std::vector<ir::Expr> idx(v.buffer->shape.size(), ir::intImm(0));
            return ir::Load::make(v.buffer, std::move(idx), r);
        }
        fail(r, "buffer '" + v.buffer->name + "' is used as a scalar value; index it to read an element");
    case VK::Poison: throw EvalAbort{};
    case VK::Opaque: failOpaque(v, r);
    default: break;
    }
    fail(r, std::string("a ") + typeName(v.kind) + " cannot be used as a run-time value");
}

ir::Expr InterpImpl::operandExpr(const Value &v, const SourceRange &r, const ir::Expr &other) {
    bool narrow = other && other->dtype.isFloat() && other->dtype.bits() < 32;
    // Next to a 16- or 8-bit float a Python float is a float32 constant: its value is the float32 one, so that
    // folding it at trace time gives what the kernel computes (the generator's model: difffuzz seed 512).
    if (v.is(VK::Float) && narrow) return ir::floatImm((double)(float)v.f, DType(DType::Float32), r);
    return runtimeExpr(v, r, other);
}

Value InterpImpl::bufferAccess(const ir::Buffer &b, const ast::Expr &index, const SourceRange &at, bool throughViews) {
    if (b->constElements() == 0) // T.alloc_local((0,), ...), which TileLang allows: nothing to index
        fail(at, "buffer '" + b->name + "' has no elements (a dimension of 0); it cannot be indexed");
    std::vector<const ast::Expr *> parts;
    if (index.kind == ast::ExprKind::Tuple)
        for (auto &x : index.elts) parts.push_back(x.get());
    else
        parts.push_back(&index);
    if (parts.size() != b->shape.size())
        fail(at, "buffer '" + b->name + "' has " + plural((int64_t)b->shape.size(), "dimension") +
                     " but is indexed with " + plural((int64_t)parts.size(), "index", "indices"));
    auto acc = std::make_shared<AccessObj>();
    acc->buffer = b;
    acc->range = at;
    for (size_t d = 0; d < parts.size(); ++d) {
        const ast::Expr &p = *parts[d];
        auto intExpr = [&](const ast::Expr &x) {
            Value v = eval(x);
            if (v.is(VK::Poison)) throw EvalAbort{};
            if (v.is(VK::Float) || (v.is(VK::Expr) && v.expr->dtype.isFloat()))
                fail(x.range, "buffer index must be an integer, not a " +
                                  (v.is(VK::Float) ? std::string("float") : std::string(v.expr->dtype.name())));
            ir::Expr e = toExpr({v, x.range}, "buffer index");
            if (e->dtype.isBool()) e = ir::cast(DType::Int32, e);
            return e;
        };
        if (p.kind == ast::ExprKind::Slice) {
            if (p.c) {
                Value st = constantOf(eval(*p.c));
                if (!st.is(VK::None) && !(st.is(VK::Int) && st.i == 1))
                    fail(p.c->range, "a buffer slice cannot have a step");
            }
            ir::Expr lo = p.a ? intExpr(*p.a) : ir::intImm(0, DType::Int32, p.range);
            ir::Expr hi = p.b ? intExpr(*p.b) : b->shape[d];
            acc->indices.push_back({lo, sliceExtent(lo, hi, p.range), p.range});
        } else if (p.kind == ast::ExprKind::Starred) {
            fail(p.range, "a starred expression cannot index a buffer");
        } else {
            acc->indices.push_back({intExpr(p), nullptr, p.range});
        }
    }
    if (TraceState *t = trace(); t && throughViews && !t->subByte.count(b.get())) // sub-byte: subByteLoad, subByteCopy
        if (auto v = t->views.find(b.get()); v != t->views.end()) return tl::viewAccess(*this, v->second, *acc);
    return Value::object(VK::Access, acc);
}

Value InterpImpl::subscript(const Value &base, const ast::Expr &e) {
    if (base.is(VK::Poison)) return base;
    if (base.is(VK::Buffer)) return bufferAccess(base.buffer, *e.b, e.range);
    if (base.is(VK::Opaque)) return base;
    const ast::Expr &ix = *e.b;
    // `T.Tensor[(M, K), dtype]` / `T.Buffer[...]` / `T.StridedTensor[shape, strides, dtype]`: the annotation T.Tensor((M, K), dtype) spelled as a subscript.
    if (base.is(VK::Builtin) && (base.as<BuiltinObj>().name == "T.Tensor" || base.as<BuiltinObj>().name == "T.Buffer" ||
                                 base.as<BuiltinObj>().name == "T.StridedTensor")) {
        CallArgs args;
        args.call = e.range;
        args.callee = e.a->range;
        if (ix.kind == ast::ExprKind::Tuple && !ix.parenthesized)
            for (auto &x : ix.elts) args.pos.push_back({eval(*x), x->range});
        else
            args.pos.push_back({eval(ix), ix.range});
        return callValue(base, args);
    }
    auto length = [&]() -> int64_t {
        if (base.is(VK::Str)) return (int64_t)base.s.size();
        if (base.is(VK::Range)) return (int64_t)iterateLength(base.as<RangeObj>());
        return (int64_t)base.elements().size();
    };
    auto itemAt = [&](int64_t i) -> Value {
        if (base.is(VK::Str)) return Value::str(std::string(1, base.s[(size_t)i]));
        if (base.is(VK::Range))
            return Value::integer((int64_t)(base.as<RangeObj>().start + (__int128)i * base.as<RangeObj>().step));
        return base.elements()[(size_t)i];
    };
    bool sequence = base.is(VK::Tuple) || base.is(VK::List) || base.is(VK::Str) || base.is(VK::Range);
    if (sequence && ix.kind == ast::ExprKind::Slice) {
        auto bound = [&](const ast::ExprP &x, const char *what) -> std::optional<int64_t> {
            if (!x) return std::nullopt;
            Value v = constantOf(eval(*x));
            if (v.is(VK::None)) return std::nullopt;
            return toInt({v, x->range}, what);
        };
        auto lo = bound(ix.a, "slice start"), hi = bound(ix.b, "slice stop"), st = bound(ix.c, "slice step");
        int64_t step = st.value_or(1);
        if (step == 0) fail(ix.c->range, "slice step cannot be zero");
        if (step == INT64_MIN) step = -INT64_MAX;
        int64_t n = length();
        auto sb = sliceBounds(lo, hi, step, n);
        std::vector<Value> out;
        std::string s;
        for (int64_t i = sb.start; step > 0 ? i < sb.stop : i > sb.stop;) {
            if (base.is(VK::Str)) s += base.s[(size_t)i];
            else out.push_back(itemAt(i));
            if (out.size() + s.size() > kMaxElements) fail(e.range, "this slice is too large for compile-time evaluation");
            if (__builtin_add_overflow(i, step, &i)) break;
        }
        charge((int64_t)(out.size() + s.size()));
        if (base.is(VK::Str)) return Value::str(std::move(s));
        if (base.is(VK::List)) return Value::list(std::move(out));
        return Value::tuple(std::move(out));
    }
    Value key = eval(ix);
    if (key.is(VK::Poison)) return key;
    return getItem(base, key, ix.range);
}

Value InterpImpl::getItem(const Value &base, const Value &key0, const SourceRange &at) {
    Value key = constantOf(key0);
    if (key.is(VK::Poison) || base.is(VK::Poison)) return Value::poison();
    if (base.is(VK::Opaque)) return base;
    if (base.is(VK::Class) && base.as<ClassObj>().isEnum()) { // Color['RED']
        for (auto &m : base.as<ClassObj>().members)
            if (key.is(VK::Str) && m.as<InstanceObj>().attrs->vars["_name_"].s == key.s) return m;
        if (key.is(VK::Str))
            for (auto &kv : base.as<ClassObj>().ns->vars)
                if (kv.first == key.s && kv.second.is(VK::Instance) && kv.second.as<InstanceObj>().cls.get() == &base.as<ClassObj>())
                    return kv.second;
        failPython("KeyError", at, "enum '" + base.as<ClassObj>().name + "' has no member " + repr(key));
    }
    // `tuple[int, int]`, `list[str]`: a type annotation, which tilec does not evaluate.
    if (base.is(VK::Class) || (base.is(VK::Builtin) && (base.as<BuiltinObj>().name == "tuple" || base.as<BuiltinObj>().name == "list" ||
                                                        base.as<BuiltinObj>().name == "dict" || base.as<BuiltinObj>().name == "set" ||
                                                        base.as<BuiltinObj>().name == "type")))
        return makeOpaque(str(base) + "[...]", "typing");
    bool sequence = base.is(VK::Tuple) || base.is(VK::List) || base.is(VK::Str) || base.is(VK::Range);
    if (sequence) {
        if (isRuntime(key))
            fail(at, std::string("a ") + typeName(base.kind) + " cannot be indexed with a run-time value");
        if (!key.is(VK::Int) && !key.is(VK::Bool))
            fail(at, std::string(typeName(base.kind)) + " indices must be integers, not " + typeName(key.kind));
        int64_t n = 0;
        if (base.is(VK::Str)) n = (int64_t)base.s.size();
        else if (base.is(VK::Range)) n = (int64_t)iterateLength(base.as<RangeObj>());
        else n = (int64_t)base.elements().size();
        int64_t i = intOf(key);
        if (i < 0) i += n;
        if (i < 0 || i >= n) failPython("IndexError", at, std::string(typeName(base.kind)) + " index out of range");
        if (base.is(VK::Str)) return Value::str(std::string(1, base.s[(size_t)i]));
        if (base.is(VK::Range))
            return Value::integer((int64_t)(base.as<RangeObj>().start + (__int128)i * base.as<RangeObj>().step));
        return base.elements()[(size_t)i];
    }
    if (base.is(VK::Dict)) {
        for (auto &kv : base.as<DictObj>().items)
            if (equal(kv.first, key)) return kv.second;
        failPython("KeyError", at, "key " + repr(key) + " is not in the dict");
    }
    fail(at, std::string("'") + typeName(base.kind) + "' object is not subscriptable");
}

void InterpImpl::setItem(const Value &base, const Value &key0, const Value &v, const SourceRange &at) {
    Value key = constantOf(key0);
    if (key.is(VK::Poison) || base.is(VK::Poison) || base.is(VK::Opaque)) return;
    if (base.is(VK::List)) {
        if (isRuntime(key)) fail(at, "a list cannot be indexed with a run-time value");
        if (!key.is(VK::Int) && !key.is(VK::Bool))
            fail(at, std::string("list indices must be integers, not ") + typeName(key.kind));
        auto &elts = base.as<ListObj>().elts;
        int64_t n = (int64_t)elts.size(), i = intOf(key);
        if (i < 0) i += n;
        if (i < 0 || i >= n) fail(at, "list assignment index out of range");
        elts[(size_t)i] = v;
        return;
    }
    if (base.is(VK::Dict)) {
        if (isRuntime(key)) fail(at, "a dict key must be known at compile time");
        auto &items = base.as<DictObj>().items;
        for (auto &kv : items)
            if (equal(kv.first, key)) {
                kv.second = v;
                return;
            }
        items.push_back({key, v});
        return;
    }
    fail(at, std::string("'") + typeName(base.kind) + "' object does not support item assignment");
}

bool InterpImpl::truthy(const Value &v0, const SourceRange &r, const char *what) {
    Value v = constantOf(v0);
    switch (v.kind) {
    case VK::Poison: throw EvalAbort{};
    case VK::None: return false;
    case VK::Bool: return v.b;
    case VK::Int: return v.i != 0;
    case VK::Float: return v.f != 0;
    case VK::Str: return !v.s.empty();
    case VK::Tuple:
    case VK::List: return !v.elements().empty();
    case VK::Dict: return !v.as<DictObj>().items.empty();
    case VK::Range: {
        auto &rg = v.as<RangeObj>();
        return rg.step > 0 ? rg.start < rg.stop : rg.start > rg.stop;
    }
    case VK::Opaque: failOpaque(v, r);
    case VK::Expr:
    case VK::Access: failRuntime(r, std::string("the ") + what);
    case VK::Buffer:
        if (v.buffer->scope == ir::Scope::Var) failRuntime(r, std::string("the ") + what);
        return true;
    default: return true;
    }
}

std::vector<Value> InterpImpl::iterate(const Value &v0, const SourceRange &r) {
    Value v = constantOf(v0);
    switch (v.kind) {
    case VK::Poison: throw EvalAbort{};
    case VK::Tuple:
    case VK::List: charge((int64_t)v.elements().size()); return v.elements();
    case VK::DType: return iterate(Value::str(std::string(v.dtype.name())), r); // a dtype is its name, as TileLang's str subclass
    case VK::Str: {
        std::vector<Value> out;
        for (size_t i = 0; i < v.s.size();) {
            // One element per UTF-8 code point.
            size_t n = 1;
            unsigned char c = (unsigned char)v.s[i];
            if (c >= 0xF0) n = 4;
            else if (c >= 0xE0) n = 3;
            else if (c >= 0xC0) n = 2;
            out.push_back(Value::str(v.s.substr(i, n)));
            i += n;
        }
        charge((int64_t)out.size());
        return out;
    }
    case VK::Dict: {
        std::vector<Value> out;
        for (auto &kv : v.as<DictObj>().items) out.push_back(kv.first);
        charge((int64_t)out.size());
        return out;
    }
    case VK::Class:
        if (!v.as<ClassObj>().isEnum()) break;
        charge((int64_t)v.as<ClassObj>().members.size());
        return v.as<ClassObj>().members;
    case VK::Range: {
        auto &rg = v.as<RangeObj>();
        std::vector<Value> out;
        for (int64_t i = rg.start; rg.step > 0 ? i < rg.stop : i > rg.stop;) {
            if (out.size() >= kMaxElements) fail(r, "this range is too large to expand at compile time");
            out.push_back(Value::integer(i));
            if (__builtin_add_overflow(i, rg.step, &i)) break;
        }
        charge((int64_t)out.size());
        return out;
    }
    case VK::Opaque: failOpaque(v, r);
    case VK::Frame: fail(r, "a loop frame can only be iterated by a 'for' statement");
    case VK::Expr:
    case VK::Access: fail(r, "cannot iterate over a run-time value");
    default: break;
    }
    fail(r, std::string("'") + typeName(v.kind) + "' object is not iterable");
}

} // namespace tilec::eval
