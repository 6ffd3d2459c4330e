/// \file
/// Fragments of shape (M, 1, ..., 1) made 1-D (include/tilec/passes/SqueezeUnitFragments.h).
#include "tilec/passes/SqueezeUnitFragments.h"

#include "FragmentMentions.h"
#include "tilec/passes/Arith.h"

#include <map>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// A fragment of rank 2 or more whose dimensions after the first are all the constant 1.
bool unitTrailing(const Buffer &b) {
    if (!b || b->scope != Scope::Fragment || b->shape.size() < 2) return false;
    for (size_t d = 1; d < b->shape.size(); ++d)
        if (constInt(b->shape[d]) != std::optional<int64_t>(1)) return false;
    return true;
}

/// The candidates (unitTrailing allocations) that some mention keeps from being squeezed (`operands`): any but a
/// load or store whose trailing indices are the constant 0, or a region of a copy, fill or atomic add whose
/// trailing ranges are [0, 1).
struct Mentions : OperandMentions {
    using OperandMentions::visit;
    std::set<const BufferNode *> candidates;

    bool candidate(const BufferNode *b) const { return b && candidates.count(b); }
    void indices(const Buffer &b, const std::vector<Expr> &idx) {
        if (!candidate(b.get())) return;
        if (idx.size() != b->shape.size()) return (void)operands.insert(b.get());
        for (size_t d = 1; d < idx.size(); ++d)
            if (constInt(idx[d]) != std::optional<int64_t>(0)) operands.insert(b.get());
    }
    void visitRegion(const Region &r) override {
        if (candidate(r.buffer.get())) {
            bool ok = r.ranges.size() == r.buffer->shape.size();
            for (size_t d = 1; ok && d < r.ranges.size(); ++d)
                ok = constInt(r.ranges[d].min) == std::optional<int64_t>(0) &&
                     constInt(r.ranges[d].extent) == std::optional<int64_t>(1);
            if (!ok) operands.insert(r.buffer.get());
        }
        IRVisitor::visitRegion(r);
    }
    void visit(const Load &op) override { indices(op.buffer, op.indices), IRVisitor::visit(op); }
    void visit(const Store &op) override { indices(op.buffer, op.indices), IRVisitor::visit(op); }
};

struct Squeeze : BufferSwap {
    using BufferSwap::visit;
    Region mutateRegion(const Region &r) override {
        Region out = BufferSwap::mutateRegion(r);
        if (to.count(r.buffer.get())) out.ranges.resize(1);
        return out;
    }
    Expr visit(const std::shared_ptr<const Load> &op) override {
        Expr e = BufferSwap::visit(op);
        if (!to.count(op->buffer.get())) return e;
        auto l = as<Load>(e);
        return Load::make(l->buffer, {l->indices[0]}, l->loc);
    }
    Stmt visit(const std::shared_ptr<const Store> &op) override {
        Stmt s = BufferSwap::visit(op);
        if (!to.count(op->buffer.get())) return s;
        auto st = as<Store>(s);
        return Store::make(st->buffer, {st->indices[0]}, st->value, st->loc);
    }
};

KernelP squeezeKernel(const KernelP &k) {
    Mentions m;
    for (auto &b : k->allocs)
        if (unitTrailing(b)) m.candidates.insert(b.get());
    if (m.candidates.empty()) return k;
    for (auto &[view, base] : k->fragmentViews) m.operands.insert(view.get()), m.operands.insert(base.get());
    m.visit(k->body);
    Squeeze s;
    auto nk = std::make_shared<Kernel>(*k);
    for (auto &b : nk->allocs) {
        if (!m.candidates.count(b.get()) || m.operands.count(b.get())) continue;
        Buffer flat = makeBuffer(b->name, b->scope, b->dtype, {b->shape[0]}, b->loc);
        s.to[b.get()] = flat;
        b = flat;
    }
    if (s.to.empty()) return k;
    nk->body = s.mutate(k->body);
    return nk;
}

} // namespace

Program squeezeUnitFragments(const Program &p) {
    Program out = p;
    out.kernels.clear();
    for (auto &k : p.kernels) out.kernels.push_back(squeezeKernel(k));
    return out;
}

} // namespace tilec::passes
