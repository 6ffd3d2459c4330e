/// \file
/// Fragments read transposed that are plain copies of a shared tile (include/tilec/passes/ForwardCopies.h).
#include "tilec/passes/ForwardCopies.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/LibraryCalls.h"

#include <algorithm>
#include <map>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// What the kernel does with its fragments: who writes them, who reads them other than by loads, and which
/// loads are transposed reads in a T.Parallel nest.
struct Uses : IRVisitor {
    using IRVisitor::visit;
    std::map<const BufferNode *, int> writes;
    std::map<const BufferNode *, const Copy *> copyFrom; ///< the last copy writing the whole fragment
    std::set<const BufferNode *> regionReads, transposed;
    std::vector<const VarNode *> nest; ///< variables of the enclosing T.Parallel loops, outermost first

    void wrote(const Buffer &b) { ++writes[b.get()]; }
    void visit(const Copy &c) override {
        wrote(c.dst.buffer);
        regionReads.insert(c.src.buffer.get());
        if (isWhole(c.dst) && isWhole(c.src) && c.src.buffer->scope == Scope::Shared &&
            sameShape(*c.src.buffer, *c.dst.buffer))
            copyFrom[c.dst.buffer.get()] = &c;
        IRVisitor::visit(c);
    }
    void visit(const Store &s) override {
        wrote(s.buffer);
        IRVisitor::visit(s);
    }
    void visit(const Fill &f) override {
        wrote(f.dst.buffer);
        IRVisitor::visit(f);
    }
    void visit(const Gemm &g) override {
        wrote(g.c.buffer);
        regionReads.insert(g.a.buffer.get()), regionReads.insert(g.b.buffer.get()), regionReads.insert(g.c.buffer.get());
        IRVisitor::visit(g);
    }
    void visit(const Reduce &r) override {
        wrote(r.dst);
        regionReads.insert(r.src.get()), regionReads.insert(r.dst.get());
    }
    void visit(const AtomicAdd &a) override {
        wrote(a.dst.buffer);
        if (a.src) regionReads.insert(a.src->buffer.get());
        IRVisitor::visit(a);
    }
    void visit(const Call &c) override {
        // A library call's buffer (a reducer's marker, an address) is a use the loads do not show.
        for (auto &a : c.args)
            if (auto l = addressedLoad(a)) regionReads.insert(l->buffer.get());
        IRVisitor::visit(c);
    }
    void visit(const For &f) override {
        bool par = f.forKind == ForKind::Parallel;
        if (par) nest.push_back(f.var.get());
        IRVisitor::visit(f);
        if (par) nest.pop_back();
    }
    void visit(const Load &l) override {
        if (l.buffer->scope == Scope::Fragment && isTransposed(l)) transposed.insert(l.buffer.get());
        IRVisitor::visit(l);
    }

    /// The indices are distinct variables of the enclosing nest, not in the nest's order.
    bool isTransposed(const Load &l) const {
        std::vector<size_t> at;
        for (auto &i : l.indices) {
            auto v = as<VarNode>(i);
            auto it = v ? std::find(nest.begin(), nest.end(), v) : nest.end();
            if (it == nest.end()) return false;
            at.push_back((size_t)(it - nest.begin()));
        }
        std::set<size_t> distinct(at.begin(), at.end());
        return distinct.size() == at.size() && !std::is_sorted(at.begin(), at.end());
    }
    static bool isWhole(const Region &r) {
        for (size_t d = 0; d < r.ranges.size(); ++d)
            if (constInt(r.ranges[d].min) != std::optional<int64_t>(0) ||
                constInt(r.ranges[d].extent) != constInt(r.buffer->shape[d]) || !constInt(r.ranges[d].extent))
                return false;
        return true;
    }
    static bool sameShape(const BufferNode &a, const BufferNode &b) {
        if (a.shape.size() != b.shape.size()) return false;
        for (size_t d = 0; d < a.shape.size(); ++d)
            if (!constInt(a.shape[d]) || constInt(a.shape[d]) != constInt(b.shape[d])) return false;
        return true;
    }
};

/// How many loads of `b` there are in `s`, and whether `s` may write `b` (any statement or library call
/// naming it as a destination or an address).
struct Touch : Uses {
    using Uses::visit;
    const BufferNode *b = nullptr;
    int64_t loads = 0;
    void visit(const Load &l) override {
        loads += l.buffer.get() == b;
        Uses::visit(l);
    }
};
int64_t loadsOf(const Stmt &s, const BufferNode *b) {
    Touch t;
    t.b = b;
    t.visit(s);
    return t.loads;
}
bool mayWrite(const Stmt &s, const BufferNode *b) {
    Touch t;
    t.visit(s);
    return t.writes.count(b) || t.regionReads.count(b);
}

/// Replaces the loads of `from` with loads of `to` (cast to from's type) and removes the copy `copy`.
struct Forward : IRMutator {
    using IRMutator::visit;
    const BufferNode *from = nullptr;
    Buffer to;
    const Copy *copy = nullptr;
    Expr visit(const std::shared_ptr<const Load> &op) override {
        if (op->buffer.get() != from) return IRMutator::visit(op);
        std::vector<Expr> idx;
        for (auto &i : op->indices) idx.push_back(mutate(i));
        Expr e = Load::make(to, idx, op->loc);
        return to->dtype == op->dtype ? e : cast(op->dtype, e, op->loc);
    }
    Stmt visit(const std::shared_ptr<const Copy> &op) override {
        return op.get() == copy ? nullptr : IRMutator::visit(op);
    }
};

/// Whether the statement list holding `copy` has all `loads` loads of `f` in the statements that follow it,
/// with nothing from the copy to the last of them writing `src`: found by walking the body.
struct Place : IRVisitor {
    using IRVisitor::visit;
    const Copy *copy = nullptr;
    const BufferNode *f = nullptr, *src = nullptr;
    int64_t loads = 0;
    bool ok = false;
    void visit(const Seq &q) override {
        for (size_t i = 0; i < q.stmts.size(); ++i) {
            if (q.stmts[i].get() != copy) continue;
            int64_t seen = 0;
            bool clean = true;
            for (size_t j = i + 1; j < q.stmts.size() && seen < loads; ++j) {
                seen += loadsOf(q.stmts[j], f);
                clean &= !mayWrite(q.stmts[j], src);
            }
            ok = seen == loads && clean;
            return;
        }
        IRVisitor::visit(q);
    }
};

KernelP forward(const KernelP &k) {
    if (!k->body) return k;
    Uses u;
    u.visit(k->body);
    Stmt body = k->body;
    std::set<const BufferNode *> dropped;
    for (auto &fb : k->allocs) {
        const BufferNode *f = fb.get();
        if (!u.transposed.count(f)) continue;
        auto it = u.copyFrom.find(f);
        if (it == u.copyFrom.end() || u.writes[f] != 1 || u.regionReads.count(f)) continue;
        const Copy *c = it->second;
        Place pl;
        pl.copy = c, pl.f = f, pl.src = c->src.buffer.get(), pl.loads = loadsOf(body, f);
        pl.visit(body);
        if (!pl.ok) continue;
        Forward fw;
        fw.from = f, fw.to = c->src.buffer, fw.copy = c;
        body = fw.mutate(body);
        dropped.insert(f);
    }
    if (dropped.empty()) return k;
    auto nk = std::make_shared<Kernel>(*k);
    nk->body = body;
    nk->allocs.erase(std::remove_if(nk->allocs.begin(), nk->allocs.end(),
                                    [&](const Buffer &b) { return dropped.count(b.get()) > 0; }),
                     nk->allocs.end());
    return nk;
}

} // namespace

Program forwardCopies(const Program &p) {
    Program out;
    for (auto &k : p.kernels) out.kernels.push_back(forward(k));
    return out;
}

} // namespace tilec::passes
