/// \file
/// The reference interpreter of tile programs (Reference.h).
#include "Reference.h"

#include "sim/ScalarSemantics.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace tilec::difffuzz {

using namespace ir;

double Reference::roundTo(DType t, double v) { return simtest::roundToDType(t, v); }

void Reference::run() {
    int64_t g[3];
    T_ = k_.threads;
    env_.assign(1, {});
    for (auto &s : k_.dynamicSymbols) env_[0][s.get()] = scalars_.at(s->name);
    for (int d = 0; d < 3; ++d) g[d] = (int64_t)eval(k_.grid[d], 0);
    for (int64_t z = 0; z < g[2]; ++z)
        for (int64_t y = 0; y < g[1]; ++y)
            for (int64_t x = 0; x < g[0]; ++x) block(x, y, z);
}

void Reference::block(int64_t x, int64_t y, int64_t z) {
    env_.assign(T_, {});
    private_.assign(T_, {});
    block_.clear();
    int64_t idx[3] = {x, y, z};
    for (int t = 0; t < T_; ++t) {
        auto &e = env_[t];
        for (int d = 0; d < 3; ++d)
            if (k_.blockIdx[d]) e[k_.blockIdx[d].get()] = (double)idx[d];
        if (k_.threadIdx) e[k_.threadIdx.get()] = t;
        for (auto &p : k_.params)
            if (p.kind == Param::Scalar) e[p.var.get()] = scalars_.at(p.var->name);
        for (auto &s : k_.dynamicSymbols) e[s.get()] = scalars_.at(s->name);
    }
    Mask all(T_);
    for (int t = 0; t < T_; ++t) all[t] = t;
    exec(k_.body, all);
}

const std::vector<int64_t> &Reference::shapeOf(const BufferNode &b) {
    auto it = shapes_.find(&b);
    if (it != shapes_.end()) return it->second;
    std::vector<int64_t> s;
    for (auto &e : b.shape) s.push_back((int64_t)eval(e, 0));
    return shapes_.emplace(&b, std::move(s)).first->second;
}

std::vector<double> &Reference::storage(const BufferNode &b, int lane) {
    if (b.scope == Scope::Global) {
        auto it = tensors_.find(b.name);
        if (it == tensors_.end()) throw RefError("no data for tensor " + b.name);
        return *it->second;
    }
    auto &m = b.scope == Scope::Shared || b.scope == Scope::Fragment ? block_ : private_.at(lane);
    auto it = m.find(&b);
    if (it == m.end()) {
        int64_t n = std::max<int64_t>(1, b.constElements());
        it = m.emplace(&b, std::vector<double>((size_t)n, std::nan(""))).first;
    }
    return it->second;
}

int64_t Reference::offset(const BufferNode &b, const std::vector<int64_t> &idx) {
    const auto &shape = shapeOf(b);
    if (idx.size() != shape.size()) throw RefError("access of " + b.name + " with the wrong number of indices");
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
        if (idx[d] < 0 || idx[d] >= shape[d]) {
            if (b.scope == Scope::Global) return -1;
            throw RefError("access of " + b.name + " outside its shape (dim " + std::to_string(d) + ": " +
                           std::to_string(idx[d]) + ")");
        }
        off = off * shape[d] + idx[d];
    }
    return off;
}

void Reference::touch(const double *element, bool store, const SourceRange &loc) {
    auto &[writer, reader] = touched_.try_emplace(element, -1, -1).first->second;
    bool clash = (writer >= 0 && writer != iteration_) || (store && reader != -1 && reader != iteration_);
    if (clash) throw Undefined("T.Parallel iterations that exchange data", loc);
    if (store) writer = iteration_;
    else reader = reader == -1 || reader == iteration_ ? iteration_ : -2;
}

double Reference::load(const BufferNode &b, const std::vector<int64_t> &idx, int lane) {
    int64_t off = offset(b, idx);
    if (off < 0) return 0.0;
    const double &x = storage(b, lane)[(size_t)off];
    if (iteration_ >= 0 && b.scope != Scope::Local && b.scope != Scope::Var) touch(&x, false, b.loc);
    return x;
}

void Reference::store(const BufferNode &b, const std::vector<int64_t> &idx, double v, int lane, bool add) {
    if (b.scope == Scope::Global) written_.insert(b.name);
    int64_t off = offset(b, idx);
    if (off < 0) return;
    double &x = storage(b, lane)[(size_t)off];
    if (iteration_ >= 0 && !add && b.scope != Scope::Local && b.scope != Scope::Var) touch(&x, true, b.loc);
    x = roundTo(b.dtype, add ? x + v : v);
}

double Reference::eval(const Expr &e, int lane) {
    switch (e->kind) {
    case NodeKind::IntImm: return (double)as<IntImm>(e)->value;
    // a float32 constant is the float32 the generated code spells (`1 / 448.0` in a float32 product is
    // 0.002232143f, not the double), so products with it round as on the GPU
    case NodeKind::FloatImm: return roundTo(e->dtype, as<FloatImm>(e)->value);
    case NodeKind::Var: {
        auto &env = env_.at(tile_ ? 0 : lane);
        auto it = env.find(as<VarNode>(e));
        if (it == env.end()) throw RefError("unbound variable " + as<VarNode>(e)->name);
        return it->second;
    }
    case NodeKind::Cast: return simtest::convertToDType(e->dtype, as<Cast>(e)->value->dtype, eval(as<Cast>(e)->value, lane));
    case NodeKind::Select: {
        auto s = as<Select>(e);
        return eval(s->cond, lane) != 0 ? eval(s->t, lane) : eval(s->f, lane);
    }
    case NodeKind::Unary: {
        auto u = as<Unary>(e);
        double a = eval(u->a, lane);
        if (u->op == UnaryOp::Not) return a == 0;
        if (u->op == UnaryOp::BitNot) return (double)~(int64_t)a;
        return -a;
    }
    case NodeKind::Load: {
        auto l = as<Load>(e);
        std::vector<int64_t> idx;
        for (auto &i : l->indices) idx.push_back((int64_t)eval(i, lane));
        return load(*l->buffer, idx, lane);
    }
    case NodeKind::Call: {
        auto c = as<Call>(e);
        // T.async_copy is its synchronous copy (the schedule in which every group lands at issue), so its
        // marker holds and the groups' commits and waits, like T.wait_wgmma's, change nothing here.
        namespace lib = passes::lib;
        if (lib::is(*c, lib::Fn::AsyncCopyOn)) return 1;
        if (lib::is(*c, lib::Fn::CpAsyncCommit) || lib::is(*c, lib::Fn::CpAsyncWait) || lib::is(*c, lib::Fn::WgmmaWait))
            return 0;
        std::vector<double> a;
        for (auto &x : c->args) a.push_back(eval(x, lane));
        static const std::map<std::string, double (*)(double)> unary = {
            {"exp", [](double x) { return std::exp(x); }},     {"exp2", [](double x) { return std::exp2(x); }},
            {"exp10", [](double x) { return std::pow(10.0, x); }}, {"log", [](double x) { return std::log(x); }},
            {"log2", [](double x) { return std::log2(x); }},   {"log10", [](double x) { return std::log10(x); }},
            {"sqrt", [](double x) { return std::sqrt(x); }},   {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
            {"abs", [](double x) { return std::fabs(x); }},    {"tanh", [](double x) { return std::tanh(x); }},
            {"sin", [](double x) { return std::sin(x); }},     {"cos", [](double x) { return std::cos(x); }},
            {"floor", [](double x) { return std::floor(x); }}, {"ceil", [](double x) { return std::ceil(x); }},
            {"trunc", [](double x) { return std::trunc(x); }}, {"round", [](double x) { return std::nearbyint(x); }},
            {"sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
        };
        // Each call's result rounds to its dtype, as the device's math functions return it (see Binary below).
        if (auto it = unary.find(c->name); it != unary.end() && a.size() == 1) return roundTo(e->dtype, it->second(a[0]));
        if (c->name == "pow" && a.size() == 2) return roundTo(e->dtype, std::pow(a[0], a[1]));
        throw RefError("no reference for the call " + c->name);
    }
    case NodeKind::Binary: {
        // Every result rounds to its dtype, one operation at a time as the language defines it: integers wrap,
        // float32 rounds each operation (CUDA's float arithmetic). A float64 intermediate would be exact where
        // the program's own arithmetic is not: `x + (a - x)` cancels to `a` only in float64, and a one-ulp
        // residual that a later narrow cast keeps (a float16 subnormal) then exceeds any relative tolerance
        // (tilec-difffuzz seed 41051977; tests/fuzz/reference_rounds_each_operation.tile).
        auto b = as<Binary>(e);
        auto r = simtest::binaryOp(b->op, eval(b->a, lane), eval(b->b, lane), b->a->dtype);
        if (!r) throw RefError("integer division or modulo by zero");
        return roundTo(e->dtype, *r);
    }
    default: break;
    }
    throw RefError("cannot evaluate this expression");
}

namespace {

/// A T.Parallel nest of a thread's own registers: it stores only into T.alloc_local buffers (atomic updates and
/// addresses handed to calls count as stores) and touches no fragment. TileLang gives each thread the whole loop, so it is
/// per-thread code, not a tile statement.
bool ownRegisters(const Stmt &body) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        bool own = true;
        void see(const Buffer &b, bool store) {
            if (b && (b->scope == Scope::Fragment || (store && b->scope != Scope::Local))) own = false;
        }
        void visit(const Load &op) override { see(op.buffer, false), IRVisitor::visit(op); }
        void visit(const Store &op) override { see(op.buffer, true), IRVisitor::visit(op); }
        void visit(const AtomicAdd &op) override { see(op.dst.buffer, true), IRVisitor::visit(op); }
        void visit(const Call &op) override { // an address handed to a call may be stored through
            if (passes::lib::is(op, passes::lib::Fn::AddressOf) && !op.args.empty())
                if (auto l = as<Load>(op.args[0])) see(l->buffer, true);
            IRVisitor::visit(op);
        }
    } v;
    v.visit(body);
    return v.own;
}

bool isTileStatement(const Stmt &s) {
    if (auto f = as<For>(s)) return f->forKind == ForKind::Vectorized || (f->forKind == ForKind::Parallel && !ownRegisters(s));
    if (auto a = as<AtomicAdd>(s)) return a->src.has_value();
    return s->kind == NodeKind::Copy || s->kind == NodeKind::Fill || s->kind == NodeKind::Gemm ||
           s->kind == NodeKind::Reduce;
}

} // namespace

void Reference::exec(const Stmt &s, const Mask &m) {
    if (!s || m.empty()) return;
    if (!tile_ && isTileStatement(s)) return tileStatement(s, m);
    switch (s->kind) {
    case NodeKind::Seq:
        for (auto &c : as<Seq>(s)->stmts) exec(c, m);
        return;
    case NodeKind::For: {
        auto f = as<For>(s);
        // Threads with equal bounds run the loop together.
        std::map<std::pair<double, double>, Mask> groups;
        for (int t : m) groups[{eval(f->min, t), eval(f->extent, t)}].push_back(t);
        for (auto &[bounds, g] : groups)
            for (int64_t i = 0; i < (int64_t)bounds.second; ++i) {
                if (iteration_ >= 0 && f->forKind == ForKind::Parallel) iteration_ = ++iterations_;
                for (int t : g) env_[t][f->var.get()] = bounds.first + (double)i;
                exec(f->body, g);
            }
        return;
    }
    case NodeKind::IfThenElse: {
        auto i = as<IfThenElse>(s);
        Mask yes, no;
        for (int t : m) (eval(i->cond, t) != 0 ? yes : no).push_back(t);
        exec(i->then, yes);
        exec(i->otherwise, no);
        return;
    }
    case NodeKind::Store: {
        auto st = as<Store>(s);
        struct W {
            std::vector<int64_t> idx;
            double v;
        };
        std::vector<W> w; // every active thread computes before any stores (lockstep)
        for (int t : m) {
            W x;
            for (auto &i : st->indices) x.idx.push_back((int64_t)eval(i, t));
            x.v = simtest::convertToDType(st->buffer->dtype, st->value->dtype, eval(st->value, t));
            w.push_back(std::move(x));
        }
        for (size_t n = 0; n < w.size(); ++n) store(*st->buffer, w[n].idx, w[n].v, m[n]);
        return;
    }
    case NodeKind::AtomicAdd: {
        auto a = as<AtomicAdd>(s);
        for (int t : m) {
            std::vector<int64_t> idx;
            for (auto &r : a->dst.ranges) idx.push_back((int64_t)eval(r.min, t));
            store(*a->dst.buffer, idx, eval(a->value, t), t, true);
        }
        return;
    }
    case NodeKind::Evaluate:
        for (int t : m) eval(as<Evaluate>(s)->value, t);
        return;
    default: throw RefError("statement kind without a reference");
    }
}

void Reference::tileStatement(const Stmt &s, const Mask &m) {
    // A nonempty range of the threads (`if tx < 20:`) runs the statement as the whole block does (LANGUAGE.md,
    // thread-range regions): tilec either lowers it so, or rejects the branch with a located error.
    bool range = !m.empty();
    for (size_t i = 1; i < m.size() && range; ++i) range = m[i] == m[i - 1] + 1;
    if ((int)m.size() != T_ && !range)
        throw Undefined("a tile statement reached by " + std::to_string(m.size()) + " of " + std::to_string(T_) +
                                " threads",
                            s->loc);
    tile_ = true;
    Mask lane0{0};
    switch (s->kind) {
    case NodeKind::Copy: copyRegions(as<Copy>(s)->src, as<Copy>(s)->dst, false); break;
    case NodeKind::AtomicAdd: copyRegions(*as<AtomicAdd>(s)->src, as<AtomicAdd>(s)->dst, true); break;
    case NodeKind::Fill: {
        auto f = as<Fill>(s);
        double v = eval(f->value, 0);
        std::vector<int64_t> lo, ext;
        for (auto &r : f->dst.ranges) lo.push_back((int64_t)eval(r.min, 0)), ext.push_back((int64_t)eval(r.extent, 0));
        std::vector<int64_t> idx = lo;
        std::function<void(size_t)> walk = [&](size_t d) {
            if (d == lo.size()) return store(*f->dst.buffer, idx, v, 0);
            for (int64_t i = 0; i < ext[d]; ++i) idx[d] = lo[d] + i, walk(d + 1);
        };
        walk(0);
        break;
    }
    case NodeKind::Gemm: gemm(*as<Gemm>(s)); break;
    case NodeKind::Reduce: reduce(*as<Reduce>(s)); break;
    default: // a T.Parallel nest: its iterations in order, as one logical thread, exchanging nothing
        touched_.clear();
        iteration_ = iterations_ = 0;
        exec(s, lane0);
        iteration_ = -1;
        break;
    }
    tile_ = false;
}

} // namespace tilec::difffuzz
