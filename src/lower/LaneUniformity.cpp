/// \file
/// Which values of a lowered kernel can differ between lanes or threads (include/tilec/passes/LaneUniformity.h).
#include "tilec/passes/LaneUniformity.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/LoopInvariants.h"

#include <optional>

namespace tilec::passes {

using namespace ir;

namespace {

constexpr int64_t kWarp = 32;

/// `e` as the thread index plus a constant multiple of 32 (the lanes of a warp are then 32 consecutive values
/// from a multiple of 32): that constant.
std::optional<int64_t> warpAligned(const Expr &e, const VarNode *tx) {
    if (!e) return std::nullopt;
    if (e.get() == tx || lib::is(e, lib::Fn::RoleThread)) return 0;
    if (auto c = as<Cast>(e); c && c->dtype.isInt()) return warpAligned(c->value, tx);
    auto b = as<Binary>(e);
    if (!b || (b->op != BinaryOp::Add && b->op != BinaryOp::Sub)) return std::nullopt;
    auto k = constInt(b->b);
    auto x = k ? warpAligned(b->a, tx) : std::nullopt;
    if (!k && b->op == BinaryOp::Add) k = constInt(b->a), x = k ? warpAligned(b->b, tx) : std::nullopt;
    if (!x || *k % kWarp) return std::nullopt;
    return b->op == BinaryOp::Add ? *x + *k : *x - *k;
}

/// Whether `b` reads the thread index only through its warp: `t // 32k`, `t >> s` (s >= 5), `t < 32k` and the
/// other comparisons with a warp boundary, t the thread index plus a multiple of 32.
bool onlyWarpShows(const Binary &b, const VarNode *tx) {
    auto k = constInt(b.b);
    if (auto t = k ? warpAligned(b.a, tx) : std::nullopt) {
        switch (b.op) {
        case BinaryOp::FloorDiv: return *k > 0 && *k % kWarp == 0;
        case BinaryOp::Div: return *k > 0 && *k % kWarp == 0 && *t >= 0; // truncation rounds negatives up
        case BinaryOp::Shr: return *k >= 5;
        case BinaryOp::LT: case BinaryOp::GE: return *k % kWarp == 0;
        case BinaryOp::LE: case BinaryOp::GT: return (*k + 1) % kWarp == 0;
        default: return false;
        }
    }
    k = constInt(b.a);
    if (!k || !warpAligned(b.b, tx)) return false;
    switch (b.op) { // c < t is t > c, and so on
    case BinaryOp::LT: case BinaryOp::GE: return (*k + 1) % kWarp == 0;
    case BinaryOp::LE: case BinaryOp::GT: return *k % kWarp == 0;
    default: return false;
    }
}

bool perThread(const BufferNode &b) { return b.scope == Scope::Local || b.scope == Scope::Var; }

} // namespace

Spread callSpread(const Call &c, const std::function<Spread(const Expr &)> &of) {
    Spread args = Spread::Block;
    for (auto &a : c.args) args = widest(args, of(a));
    const lib::Info *f = lib::find(c.name);
    if (!f) return c.name.rfind("extern:", 0) == 0 ? Spread::Lane : args; // T.call_extern; a math function
    switch (f->fn) {
    case lib::Fn::RoleThread: return Spread::Lane;
    case lib::Fn::WarpAny: return args == Spread::Block ? Spread::Block : Spread::Warp;
    case lib::Fn::Shfl: {
        const Spread value = of(lib::arg(c, lib::Fn::Shfl, "value"));
        auto width = constInt(lib::arg(c, lib::Fn::Shfl, "width"));
        if (value == Spread::Block) return Spread::Block;
        return width && *width >= kWarp && of(lib::arg(c, lib::Fn::Shfl, "lane")) != Spread::Lane ? Spread::Warp
                                                                                                   : Spread::Lane;
    }
    default: return (f->effects & lib::kPure) ? args : Spread::Lane;
    }
}

Spread LaneUniformity::of(const Expr &e) const {
    if (!e) return Spread::Block;
    switch (e->kind) {
    case NodeKind::Var: {
        if (e.get() == tx_) return Spread::Lane;
        auto it = loops_.find(static_cast<const VarNode *>(e.get()));
        return it == loops_.end() ? Spread::Block : it->second;
    }
    case NodeKind::Binary: {
        auto b = as<Binary>(e);
        return tx_ && onlyWarpShows(*b, tx_) ? Spread::Warp : widest(of(b->a), of(b->b));
    }
    case NodeKind::Unary: return of(as<Unary>(e)->a);
    case NodeKind::Cast: return of(as<Cast>(e)->value);
    case NodeKind::Select: {
        auto s = as<Select>(e);
        return widest(of(s->cond), widest(of(s->t), of(s->f)));
    }
    case NodeKind::Call: return callSpread(*as<Call>(e), [this](const Expr &a) { return of(a); });
    case NodeKind::Load: {
        auto l = as<Load>(e);
        if (l->buffer->scope == Scope::Fragment) return Spread::Lane;
        auto it = buffers_.find(l->buffer.get());
        Spread s = it == buffers_.end() ? Spread::Block : it->second;
        for (auto &i : l->indices) s = widest(s, of(i));
        return s;
    }
    default: return Spread::Block; // constants
    }
}

Spread LaneUniformity::around(const StmtNode &s) const {
    switch (s.kind) {
    case NodeKind::For: {
        auto &f = static_cast<const For &>(s);
        return f.forKind == ForKind::Parallel ? Spread::Lane : widest(of(f.min), of(f.extent));
    }
    case NodeKind::IfThenElse: return of(static_cast<const IfThenElse &>(s).cond);
    case NodeKind::While: return of(static_cast<const While &>(s).cond);
    case NodeKind::WarpRoles: return Spread::Warp; // each role is whole warps
    default: return Spread::Block;
    }
}

/// One walk of the kernel widening the spreads of loop variables and per-thread buffers; `changed` says
/// whether it widened any (the fixed point is reached when a walk widens none).
struct SpreadWalk : IRVisitor {
    using IRVisitor::visit;
    LaneUniformity &u;
    Spread control = Spread::Block; ///< the control the statement walked runs under
    bool changed = false;
    explicit SpreadWalk(LaneUniformity &u) : u(u) {}

    template <class K> void widen(std::map<K, Spread> &m, K key, Spread s) {
        if (s == Spread::Block) return;
        auto [it, added] = m.emplace(key, s);
        if (!added && widest(it->second, s) == it->second) return;
        it->second = widest(it->second, s);
        changed = true;
    }
    template <class F> void under(Spread s, F f) {
        const Spread saved = control;
        control = widest(control, s);
        f();
        control = saved;
    }
    /// Buffers a statement other than a plain store writes (a call handed their address, a tile statement).
    void opaqueWrites(const Stmt &s, const BufferNode *stored) {
        for (const BufferNode *b : writtenBuffers(s))
            if (b != stored && (perThread(*b) || b->scope == Scope::Fragment)) widen(u.buffers_, b, Spread::Lane);
    }

    void visit(const For &op) override {
        const Spread s = u.around(op);
        widen(u.loops_, op.var.get(), s);
        under(s, [&] { visit(op.body); });
    }
    void visit(const IfThenElse &op) override {
        under(u.of(op.cond), [&] {
            visit(op.then);
            if (op.otherwise) visit(op.otherwise);
        });
    }
    void visit(const While &op) override { under(u.of(op.cond), [&] { visit(op.body); }); }
    void visit(const WarpRoles &op) override { under(Spread::Warp, [&] { IRVisitor::visit(op); }); }
    void visit(const Store &op) override {
        Spread s = widest(control, u.of(op.value));
        for (auto &i : op.indices) s = widest(s, u.of(i));
        if (perThread(*op.buffer)) widen(u.buffers_, op.buffer.get(), s);
        opaqueWrites(std::make_shared<Store>(op), op.buffer.get());
    }
    void visit(const Evaluate &op) override { opaqueWrites(std::make_shared<Evaluate>(op), nullptr); }
    void visit(const Copy &op) override { opaqueWrites(std::make_shared<Copy>(op), nullptr); }
    void visit(const Fill &op) override { opaqueWrites(std::make_shared<Fill>(op), nullptr); }
    void visit(const Gemm &op) override { opaqueWrites(std::make_shared<Gemm>(op), nullptr); }
    void visit(const Reduce &op) override { opaqueWrites(std::make_shared<Reduce>(op), nullptr); }
    void visit(const AtomicAdd &op) override { opaqueWrites(std::make_shared<AtomicAdd>(op), nullptr); }
};

LaneUniformity laneUniformity(const Kernel &k) {
    LaneUniformity u;
    u.tx_ = k.threadIdx.get();
    // A global tensor the kernel writes may change between two threads' loads (another block's store, an atomic).
    for (const BufferNode *b : writtenBuffers(k.body))
        if (b->scope == Scope::Global) u.buffers_[b] = Spread::Lane;
    for (bool changed = true; changed;) {
        SpreadWalk w(u);
        if (k.body) w.visit(k.body);
        changed = w.changed;
    }
    return u;
}

} // namespace tilec::passes
