/// \file
/// Dispatch and the default (rebuild-on-change) visits of IRMutator.
#include "tilec/IRMutator.h"
#include "tilec/IRSubstitute.h"

#include "tilec/IRVisitor.h" // kMaxIRDepth

namespace tilec::ir {

namespace {
template <class T, class H> std::shared_ptr<const T> cast(const H &h) { return std::static_pointer_cast<const T>(h); }

/// Mutates each element; `changed` is set when any came back as a different pointer.
std::vector<Expr> mutateAll(IRMutator &m, const std::vector<Expr> &v, bool &changed) {
    std::vector<Expr> out;
    out.reserve(v.size());
    for (auto &e : v) {
        out.push_back(m.mutate(e));
        if (out.back() != e) changed = true;
    }
    return out;
}

/// A removed body becomes an empty block, so loops and ifs keep their (non-null) shape.
Stmt orEmpty(Stmt s) { return s ? std::move(s) : Seq::make({}); }
} // namespace

Expr IRMutator::mutate(const Expr &e) {
    if (!e) return e;
    IRDepthGuard guard(depth_);
    switch (e->kind) {
    case NodeKind::IntImm: return visit(cast<IntImm>(e));
    case NodeKind::FloatImm: return visit(cast<FloatImm>(e));
    case NodeKind::Var: return visit(cast<VarNode>(e));
    case NodeKind::Binary: return visit(cast<Binary>(e));
    case NodeKind::Unary: return visit(cast<Unary>(e));
    case NodeKind::Select: return visit(cast<Select>(e));
    case NodeKind::Cast: return visit(cast<Cast>(e));
    case NodeKind::Call: return visit(cast<Call>(e));
    case NodeKind::Load: return visit(cast<Load>(e));
    default: break;
    }
    TILEC_ASSERT(false, "a statement node held as an expression");
}

Stmt IRMutator::mutate(const Stmt &s) {
    if (!s) return s;
    IRDepthGuard guard(depth_);
    switch (s->kind) {
    case NodeKind::Seq: return visit(cast<Seq>(s));
    case NodeKind::For: return visit(cast<For>(s));
    case NodeKind::Store: return visit(cast<Store>(s));
    case NodeKind::IfThenElse: return visit(cast<IfThenElse>(s));
    case NodeKind::WarpRoles: return visit(cast<WarpRoles>(s));
    case NodeKind::While: return visit(cast<While>(s));
    case NodeKind::Evaluate: return visit(cast<Evaluate>(s));
    case NodeKind::Copy: return visit(cast<Copy>(s));
    case NodeKind::Fill: return visit(cast<Fill>(s));
    case NodeKind::Gemm: return visit(cast<Gemm>(s));
    case NodeKind::Reduce: return visit(cast<Reduce>(s));
    case NodeKind::AtomicAdd: return visit(cast<AtomicAdd>(s));
    default: break;
    }
    TILEC_ASSERT(false, "an expression node held as a statement");
}

KernelP IRMutator::mutate(const KernelP &k) {
    if (!k) return k;
    std::array<Expr, 3> grid;
    bool changed = false;
    for (size_t i = 0; i < grid.size(); ++i) {
        grid[i] = mutate(k->grid[i]);
        changed |= grid[i] != k->grid[i];
    }
    Stmt body = mutate(k->body);
    if (!changed && body == k->body) return k;
    auto out = std::make_shared<Kernel>(*k);
    out->grid = grid;
    out->body = orEmpty(std::move(body));
    return out;
}

bool IRMutator::sameRegion(const Region &a, const Region &b) {
    if (a.buffer != b.buffer || a.ranges.size() != b.ranges.size()) return false;
    for (size_t i = 0; i < a.ranges.size(); ++i)
        if (a.ranges[i].min != b.ranges[i].min || a.ranges[i].extent != b.ranges[i].extent) return false;
    return true;
}

Region IRMutator::mutateRegion(const Region &r) {
    Region out{mutateBuffer(r.buffer), {}, r.loc};
    out.ranges.reserve(r.ranges.size());
    for (auto &range : r.ranges) out.ranges.push_back({mutate(range.min), mutate(range.extent)});
    return out;
}

// ---- expressions ----

Expr IRMutator::visit(const std::shared_ptr<const Binary> &op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a == op->a && b == op->b) return op;
    return Binary::make(op->op, std::move(a), std::move(b), op->loc);
}

Expr IRMutator::visit(const std::shared_ptr<const Unary> &op) {
    Expr a = mutate(op->a);
    if (a == op->a) return op;
    return Unary::make(op->op, std::move(a), op->loc);
}

Expr IRMutator::visit(const std::shared_ptr<const Select> &op) {
    Expr c = mutate(op->cond), t = mutate(op->t), f = mutate(op->f);
    if (c == op->cond && t == op->t && f == op->f) return op;
    return Select::make(std::move(c), std::move(t), std::move(f), op->loc);
}

Expr IRMutator::visit(const std::shared_ptr<const Cast> &op) {
    Expr v = mutate(op->value);
    if (v == op->value) return op;
    return Cast::make(op->dtype, std::move(v), op->loc);
}

Expr IRMutator::visit(const std::shared_ptr<const Call> &op) {
    bool changed = false;
    auto args = mutateAll(*this, op->args, changed);
    if (!changed) return op;
    return Call::make(op->dtype, op->name, std::move(args), op->loc);
}

Expr IRMutator::visit(const std::shared_ptr<const Load> &op) {
    bool changed = false;
    auto indices = mutateAll(*this, op->indices, changed);
    Buffer b = mutateBuffer(op->buffer);
    if (!changed && b == op->buffer) return op;
    return Load::make(std::move(b), std::move(indices), op->loc);
}

// ---- statements ----

std::vector<Stmt> IRMutator::mutateEach(const std::vector<Stmt> &stmts, bool &changed) {
    std::vector<Stmt> out;
    out.reserve(stmts.size());
    for (auto &s : stmts) {
        out.push_back(mutate(s));
        changed |= out.back() != s;
    }
    return out;
}

Stmt IRMutator::visit(const std::shared_ptr<const Seq> &op) {
    bool changed = false;
    std::vector<Stmt> stmts = mutateEach(op->stmts, changed);
    if (!changed) return op;
    return Seq::make(std::move(stmts), op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const For> &op) {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    Stmt body = mutate(op->body);
    if (min == op->min && extent == op->extent && body == op->body) return op;
    return For::make(op->var, std::move(min), std::move(extent), op->forKind, op->numStages,
                     orEmpty(std::move(body)), op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const Store> &op) {
    bool changed = false;
    auto indices = mutateAll(*this, op->indices, changed);
    Expr value = mutate(op->value);
    Buffer b = mutateBuffer(op->buffer);
    if (!changed && value == op->value && b == op->buffer) return op;
    return Store::make(std::move(b), std::move(indices), std::move(value), op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const IfThenElse> &op) {
    Expr cond = mutate(op->cond);
    Stmt then = mutate(op->then), otherwise = mutate(op->otherwise);
    if (cond == op->cond && then == op->then && otherwise == op->otherwise) return op;
    return IfThenElse::make(std::move(cond), orEmpty(std::move(then)), std::move(otherwise), op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const While> &op) {
    Expr cond = mutate(op->cond);
    Stmt body = mutate(op->body);
    if (cond == op->cond && body == op->body) return op;
    return While::make(std::move(cond), orEmpty(std::move(body)), op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const WarpRoles> &op) {
    Stmt p = mutate(op->producer), c = mutate(op->consumer);
    if (p == op->producer && c == op->consumer) return op;
    return WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs,
                           orEmpty(std::move(p)), orEmpty(std::move(c)), op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const Evaluate> &op) {
    Expr v = mutate(op->value);
    if (v == op->value) return op;
    return Evaluate::make(std::move(v), op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const Copy> &op) {
    Region src = mutateRegion(op->src), dst = mutateRegion(op->dst);
    if (sameRegion(src, op->src) && sameRegion(dst, op->dst)) return op;
    return Copy::make(std::move(src), std::move(dst), op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const Fill> &op) {
    Region dst = mutateRegion(op->dst);
    Expr value = mutate(op->value);
    if (sameRegion(dst, op->dst) && value == op->value) return op;
    return Fill::make(std::move(dst), std::move(value), op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const Gemm> &op) {
    Region a = mutateRegion(op->a), b = mutateRegion(op->b), c = mutateRegion(op->c);
    Region e = op->sparse() ? mutateRegion(op->e) : op->e;
    Expr live = op->liveRowsAt ? mutate(op->liveRowsAt) : nullptr;
    if (sameRegion(a, op->a) && sameRegion(b, op->b) && sameRegion(c, op->c) && (!op->sparse() || sameRegion(e, op->e)) &&
        live == op->liveRowsAt)
        return op;
    Stmt g = op->withRegions(std::move(a), std::move(b), std::move(c));
    if (live != op->liveRowsAt) g = as<Gemm>(g)->withLiveRowsAt(std::move(live));
    return op->sparse() ? as<Gemm>(g)->withMetadata(std::move(e)) : g;
}

Stmt IRMutator::visit(const std::shared_ptr<const Reduce> &op) {
    Buffer src = mutateBuffer(op->src), dst = mutateBuffer(op->dst);
    if (src == op->src && dst == op->dst) return op;
    return Reduce::make(op->reduceKind, std::move(src), std::move(dst), op->dim, op->clear, op->loc);
}

Stmt IRMutator::visit(const std::shared_ptr<const AtomicAdd> &op) {
    Region dst = mutateRegion(op->dst);
    std::optional<Region> src;
    if (op->src) src = mutateRegion(*op->src);
    Expr value = mutate(op->value);
    bool same = sameRegion(dst, op->dst) && (!src || sameRegion(*src, *op->src)) && value == op->value;
    if (same) return op;
    return AtomicAdd::make(std::move(dst), std::move(src), std::move(value), op->loc);
}

Expr replaceLoads(const Expr &e, const std::map<const BufferNode *, Expr> &values) {
    struct Replace : IRMutator {
        using IRMutator::visit;
        const std::map<const BufferNode *, Expr> *values = nullptr;
        Expr visit(const std::shared_ptr<const Load> &op) override {
            auto it = values->find(op->buffer.get());
            return it != values->end() ? it->second : IRMutator::visit(op);
        }
    } r;
    r.values = &values;
    return values.empty() ? e : r.mutate(e);
}

} // namespace tilec::ir
