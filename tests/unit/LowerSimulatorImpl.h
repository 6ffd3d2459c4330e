/// \file
/// Expression evaluation and statement execution of the simulator (LowerSimulator.h).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>

namespace tilec::simtest {

inline double Simulator::eval(const ir::Expr &e, int t) {
    using namespace ir;
    switch (e->kind) {
    case NodeKind::IntImm: return (double)as<IntImm>(e)->value;
    case NodeKind::FloatImm: return as<FloatImm>(e)->value;
    case NodeKind::Var: {
        auto it = vars_[t].find(as<VarNode>(e));
        if (it == vars_[t].end()) throw SimError("unbound variable " + as<VarNode>(e)->name);
        return it->second;
    }
    case NodeKind::Cast: return roundTo(e->dtype, eval(as<Cast>(e)->value, t));
    case NodeKind::Select: {
        auto s = as<Select>(e);
        return eval(s->cond, t) != 0 ? eval(s->t, t) : eval(s->f, t);
    }
    case NodeKind::Unary: {
        auto u = as<Unary>(e);
        double a = eval(u->a, t);
        if (u->op == UnaryOp::Not) return a == 0;
        if (u->op == UnaryOp::BitNot) return (double)~(int64_t)a;
        return -a;
    }
    case NodeKind::Load: {
        auto l = as<Load>(e);
        size_t i = index(l->buffer.get(), l->indices, t);
        touch(l->buffer.get(), i, t, false);
        return storage(l->buffer.get(), t)[i];
    }
    case NodeKind::Call: {
        auto c = as<Call>(e);
        if (c->name == "tilec.swz")
            return (double)swizzled((int64_t)eval(c->args[0], t), (int64_t)eval(c->args[1], t), (int64_t)eval(c->args[2], t),
                                    (int64_t)eval(c->args[3], t));
        if (c->name == "tilec.shfl_xor") {
            int other = t ^ (int)eval(c->args[1], t);
            if (other / 32 != t / 32 || other >= T_) throw SimError("shuffle outside the warp");
            return eval(c->args[0], other);
        }
        double a = eval(c->args[0], t);
        const std::string &n = c->name;
        double r;
        if (n == "exp") r = std::exp(a);
        else if (n == "exp2") r = std::exp2(a);
        else if (n == "log") r = std::log(a);
        else if (n == "log2") r = std::log2(a);
        else if (n == "sqrt") r = std::sqrt(a);
        else if (n == "rsqrt") r = 1 / std::sqrt(a);
        else if (n == "abs") r = std::fabs(a);
        else if (n == "tanh") r = std::tanh(a);
        else if (n == "pow") r = std::pow(a, eval(c->args[1], t));
        else throw SimError("no simulation of " + n);
        return roundTo(e->dtype, r);
    }
    case NodeKind::Binary: {
        auto b = as<Binary>(e);
        auto r = binaryOp(b->op, eval(b->a, t), eval(b->b, t), b->a->dtype);
        if (!r) throw SimError("integer division or modulo by zero");
        return isComparison(b->op) || b->op == BinaryOp::And || b->op == BinaryOp::Or ? *r : roundTo(e->dtype, *r);
    }
    default: break;
    }
    throw SimError("cannot evaluate a statement");
}

inline void Simulator::exec(const ir::Stmt &s, const std::vector<char> &mask) {
    using namespace ir;
    if (!s) return;
    bool any = std::any_of(mask.begin(), mask.end(), [](char c) { return c; });
    if (!any) return;
    auto first = (int)(std::find(mask.begin(), mask.end(), 1) - mask.begin());
    switch (s->kind) {
    case NodeKind::Seq:
        for (auto &c : as<Seq>(s)->stmts) exec(c, mask);
        return;
    case NodeKind::For: {
        auto f = as<For>(s);
        double lo = eval(f->min, first), n = eval(f->extent, first);
        for (int t = 0; t < T_; ++t)
            if (mask[t] && (eval(f->min, t) != lo || eval(f->extent, t) != n))
                throw SimError("loop bounds differ between threads (" + f->var->name + ")");
        for (int64_t i = 0; i < (int64_t)n; ++i) {
            for (int t = 0; t < T_; ++t)
                if (mask[t]) vars_[t][f->var.get()] = lo + (double)i;
            exec(f->body, mask);
        }
        return;
    }
    case NodeKind::IfThenElse: {
        auto i = as<IfThenElse>(s);
        std::vector<char> yes(T_, 0), no(T_, 0);
        for (int t = 0; t < T_; ++t)
            if (mask[t]) (eval(i->cond, t) != 0 ? yes : no)[t] = 1;
        exec(i->then, yes);
        exec(i->otherwise, no);
        return;
    }
    case NodeKind::Store: {
        auto st = as<Store>(s);
        // Lockstep: every active thread computes before any stores.
        std::vector<std::pair<size_t, double>> w(T_);
        for (int t = 0; t < T_; ++t)
            if (mask[t]) w[t] = {index(st->buffer.get(), st->indices, t), roundTo(st->buffer->dtype, eval(st->value, t))};
        for (int t = 0; t < T_; ++t)
            if (mask[t]) {
                touch(st->buffer.get(), w[t].first, t, true);
                storage(st->buffer.get(), t)[w[t].first] = w[t].second;
            }
        return;
    }
    case NodeKind::AtomicAdd: {
        auto a = as<AtomicAdd>(s);
        for (int t = 0; t < T_; ++t) {
            if (!mask[t]) continue;
            size_t i = index(a->dst.buffer.get(), {a->dst.ranges[0].min}, t);
            auto &v = storage(a->dst.buffer.get(), t)[i];
            v = roundTo(a->dst.buffer->dtype, v + eval(a->value, t));
        }
        return;
    }
    case NodeKind::Evaluate: {
        auto c = as<Call>(as<Evaluate>(s)->value);
        if (c && c->name == "tilec.sync") {
            if (std::count(mask.begin(), mask.end(), 1) != T_) throw SimError("a barrier reached by only some threads");
            ++epoch_;
            return;
        }
        if (c && c->name.rfind("tilec.", 0) == 0 && c->dtype.kind == DType::Void) return library(*c, mask);
        for (int t = 0; t < T_; ++t)
            if (mask[t]) eval(as<Evaluate>(s)->value, t);
        return;
    }
    default: throw SimError("statement kind not lowered");
    }
}

} // namespace tilec::simtest
