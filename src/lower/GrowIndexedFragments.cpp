/// \file
/// Fragments indexed past their extent by a T.Parallel nest, grown to it
/// (include/tilec/passes/GrowIndexedFragments.h).
#include "tilec/passes/GrowIndexedFragments.h"

#include "tilec/Diagnostics.h"
#include "EachKernel.h"
#include "FragmentMentions.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelNest.h"

#include <map>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// An access past a fragment's declared extent: the dimension, the extent the nest needs there, where.
struct Past {
    size_t dim = 0;
    int64_t extent = 0;
    SourceRange loc;
};

/// Every fragment's accesses by enclosing T.Parallel variables past its extent (`past`); `operands` holds the
/// fragments some mention other than an element load or store keeps at their declared shape.
struct Accesses : OperandMentions {
    using OperandMentions::visit;
    std::map<const BufferNode *, std::vector<Past>> past;
    std::map<const VarNode *, int64_t> nestVars; ///< the enclosing T.Parallel loops' variables and extents

    void indices(const Buffer &b, const std::vector<Expr> &idx, const SourceRange &loc) {
        if (!b || b->scope != Scope::Fragment || idx.size() != b->shape.size()) return;
        for (size_t d = 0; d < idx.size(); ++d) {
            auto v = as<VarNode>(idx[d]);
            auto it = v ? nestVars.find(v) : nestVars.end();
            auto extent = constInt(b->shape[d]);
            if (it != nestVars.end() && extent && *extent < it->second) past[b.get()].push_back(Past{d, it->second, loc});
        }
    }
    void visit(const For &op) override {
        if (op.forKind != ForKind::Parallel) return IRVisitor::visit(op);
        std::vector<const VarNode *> added;
        for (const For *f : parallelNest(op)) {
            auto e = constInt(f->extent);
            if (e && constInt(f->min) == std::optional<int64_t>(0) && nestVars.emplace(f->var.get(), *e).second)
                added.push_back(f->var.get());
        }
        IRVisitor::visit(op);
        for (auto *v : added) nestVars.erase(v);
    }
    void visit(const Load &op) override { indices(op.buffer, op.indices, op.loc), IRVisitor::visit(op); }
    void visit(const Store &op) override { indices(op.buffer, op.indices, op.loc), IRVisitor::visit(op); }
};

/// `b` with each dimension the accesses `past` need widened, or null when none is.
Buffer grown(const Buffer &b, const std::vector<Past> &past, DiagnosticEngine &diag) {
    std::vector<Expr> shape = b->shape;
    for (const Past &x : past)
        if (*constInt(shape[x.dim]) < x.extent) shape[x.dim] = IntImm::make(shape[x.dim]->dtype, x.extent);
    const Past &first = past.front();
    diag.warning(first.loc, "fragment '" + b->name + "' has " + std::to_string(*constInt(b->shape[first.dim])) +
                                " elements along dimension " + std::to_string(first.dim) +
                                ", but this T.Parallel indexes it up to " + std::to_string(first.extent - 1) +
                                "; it holds " + std::to_string(*constInt(shape[first.dim])) +
                                " there, as TileLang lays it out over the loop");
    return makeBuffer(b->name, b->scope, b->dtype, shape, b->loc);
}

KernelP growKernel(const KernelP &k, DiagnosticEngine &diag) {
    Accesses a;
    for (auto &[view, base] : k->fragmentViews) a.operands.insert(view.get()), a.operands.insert(base.get());
    a.visit(k->body);
    BufferSwap r;
    auto nk = std::make_shared<Kernel>(*k);
    for (auto &b : nk->allocs) {
        auto it = a.past.find(b.get());
        if (it == a.past.end() || a.operands.count(b.get())) continue;
        Buffer g = grown(b, it->second, diag);
        r.to[b.get()] = g;
        b = g;
    }
    if (r.to.empty()) return k;
    nk->body = r.mutate(k->body);
    return nk;
}

} // namespace

Program growIndexedFragments(const Program &p, DiagnosticEngine &diag) {
    return eachKernel(p, [&](const KernelP &k) { return growKernel(k, diag); });
}

} // namespace tilec::passes
