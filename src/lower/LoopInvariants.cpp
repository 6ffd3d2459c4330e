/// \file
/// What a T.Pipelined loop reads the same at every iteration (include/tilec/passes/LoopInvariants.h).
#include "tilec/passes/LoopInvariants.h"

#include "tilec/IRSubstitute.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

namespace tilec::passes {

using namespace ir;

namespace {

/// The buffers a statement may write: stores, tile-statement destinations, atomics, and anything whose
/// address a call is handed (T.call_extern, atomics returning the old value).
struct Writes : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> buffers;
    void visit(const Store &op) override { buffers.insert(op.buffer.get()), IRVisitor::visit(op); }
    void visit(const Copy &op) override { buffers.insert(op.dst.buffer.get()), IRVisitor::visit(op); }
    void visit(const Fill &op) override { buffers.insert(op.dst.buffer.get()), IRVisitor::visit(op); }
    void visit(const Gemm &op) override { buffers.insert(op.c.buffer.get()), IRVisitor::visit(op); }
    void visit(const Reduce &op) override { buffers.insert(op.dst.get()), IRVisitor::visit(op); }
    void visit(const AtomicAdd &op) override { buffers.insert(op.dst.buffer.get()), IRVisitor::visit(op); }
    void visit(const Call &op) override {
        for (auto &a : op.args)
            if (auto l = addressedLoad(a)) buffers.insert(l->buffer.get());
        IRVisitor::visit(op);
    }
};


/// The buffers an expression loads from, and whether it calls anything.
struct Reads : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> buffers;
    bool calls = false;
    void visit(const Load &op) override { buffers.insert(op.buffer.get()), IRVisitor::visit(op); }
    void visit(const Call &op) override { calls = true, IRVisitor::visit(op); }
};

Reads reads(const Expr &e) {
    Reads r;
    if (e) r.visit(e);
    return r;
}

bool isScalar(const BufferNode &b) { return (b.scope == Scope::Local || b.scope == Scope::Var) && b.constElements() == 1; }

/// The buffers a statement mentions otherwise than by loading an element: stores, tile-statement regions,
/// reductions, addresses handed to calls.
struct NotLoads : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> buffers;
    void visitRegion(const Region &r) override { buffers.insert(r.buffer.get()), IRVisitor::visitRegion(r); }
    void visit(const Store &op) override { buffers.insert(op.buffer.get()), IRVisitor::visit(op); }
    void visit(const Reduce &op) override { buffers.insert(op.src.get()), buffers.insert(op.dst.get()); }
    void visit(const Call &op) override {
        for (auto &a : op.args)
            if (auto l = addressedLoad(a)) buffers.insert(l->buffer.get());
        IRVisitor::visit(op);
    }
};

/// Whether `s` is made only of stores to scalars (constant indices), serial or unrolled loops, conditions and
/// sequences; the scalars it stores to go into `written`.
bool scalarOnly(const Stmt &s, std::set<const BufferNode *> &written) {
    if (auto st = as<Store>(s)) {
        if (!isScalar(*st->buffer)) return false;
        for (auto &x : st->indices)
            if (!constInt(x)) return false;
        written.insert(st->buffer.get());
        return true;
    }
    if (auto q = as<Seq>(s)) {
        for (auto &x : q->stmts)
            if (!scalarOnly(x, written)) return false;
        return true;
    }
    if (auto f = as<For>(s)) return (f->forKind == ForKind::Serial || f->forKind == ForKind::Unrolled) && scalarOnly(f->body, written);
    if (auto c = as<IfThenElse>(s)) return scalarOnly(c->then, written) && (!c->otherwise || scalarOnly(c->otherwise, written));
    return false;
}

} // namespace

std::set<const BufferNode *> writtenBuffers(const Stmt &s) {
    Writes w;
    if (s) w.visit(s);
    return w.buffers;
}

std::set<const BufferNode *> loopInvariantBuffers(const For &loop, const Stmt &kernelBody) {
    std::set<const BufferNode *> out;
    std::set<const BufferNode *> inLoop = writtenBuffers(loop.body), inKernel = writtenBuffers(kernelBody);
    struct All : IRVisitor {
        using IRVisitor::visit;
        std::set<const BufferNode *> buffers;
        void visit(const Load &op) override { buffers.insert(op.buffer.get()), IRVisitor::visit(op); }
    } all;
    all.visit(loop.body);
    for (auto *b : all.buffers) {
        const bool local = b->scope == Scope::Local || b->scope == Scope::Var;
        if ((local && !inLoop.count(b)) || (b->scope == Scope::Global && !inKernel.count(b))) out.insert(b);
    }
    return out;
}

bool readsOnly(const Expr &e, const std::set<const BufferNode *> &buffers) {
    for (auto *b : reads(e).buffers)
        if (!buffers.count(b)) return false;
    return true;
}

KernelScalars::KernelScalars(const std::vector<Stmt> &top, size_t at, const Stmt &kernelBody, const Var &threadIdx)
    : threadIdx_(threadIdx) {
    std::set<const BufferNode *> writes = writtenBuffers(kernelBody);
    Reads everything;
    everything.visit(kernelBody);
    for (auto *b : everything.buffers)
        if (b->scope == Scope::Global && !writes.count(b)) inputs_.insert(b);
    findReplayable(top, at);
    // Candidates: scalars stored to by one top-level statement ahead of `at`, in order, each definition made
    // uniform with the earlier ones; deps: the scalars each definition read, directly or through another.
    std::map<const BufferNode *, size_t> definedAt;
    std::map<const BufferNode *, std::set<const BufferNode *>> deps;
    for (size_t i = 0; i < at && i < top.size(); ++i) {
        auto st = as<Store>(top[i]);
        if (!st || !isScalar(*st->buffer) || definedAt.count(st->buffer.get())) continue;
        bool constIndex = true;
        for (auto &x : st->indices) constIndex &= constInt(x).has_value();
        Expr v = constIndex ? uniform(st->value, true) : Expr();
        // a definition reading replayed scalars is not substituted: the scalar is replayed itself
        if (!v || !readsOnly(v, inputs_)) continue;
        defs_[st->buffer.get()] = v, definedAt[st->buffer.get()] = i;
        for (auto *b : reads(st->value).buffers)
            if (defs_.count(b)) deps[st->buffer.get()].insert(b), deps[st->buffer.get()].insert(deps[b].begin(), deps[b].end());
    }
    // Keep those that no other statement mentions except by loading an element, and whose definitions read
    // only such scalars.
    std::set<const BufferNode *> elsewhere;
    for (size_t i = 0; i < top.size(); ++i) {
        NotLoads m;
        m.visit(top[i]);
        for (auto &[b, where] : definedAt)
            if (where != i && m.buffers.count(b)) elsewhere.insert(b);
    }
    for (auto it = defs_.begin(); it != defs_.end();) {
        bool bad = elsewhere.count(it->first) > 0;
        for (auto *d : deps[it->first]) bad |= elsewhere.count(d) > 0;
        it = bad ? defs_.erase(it) : std::next(it);
    }
    used_.clear();
}

void KernelScalars::findReplayable(const std::vector<Stmt> &top, size_t at) {
    // Candidates: the statements ahead of `at` that only store to scalars. Then, until nothing changes, drop
    // those that read anything but inputs and the candidates' scalars, call a function, depend on the thread
    // index, or store to a scalar that another statement of the list (the loop, what follows it) also writes.
    std::vector<std::pair<Stmt, std::set<const BufferNode *>>> cands;
    std::set<const StmtNode *> candStmts;
    for (size_t i = 0; i < at && i < top.size(); ++i) {
        std::set<const BufferNode *> w;
        if (scalarOnly(top[i], w) && !w.empty()) cands.emplace_back(top[i], w), candStmts.insert(top[i].get());
    }
    for (bool changed = true; changed;) {
        changed = false;
        std::set<const BufferNode *> scalars, others;
        for (auto &c : cands) scalars.insert(c.second.begin(), c.second.end());
        for (auto &st : top)
            if (!candStmts.count(st.get())) for (auto *b : writtenBuffers(st)) others.insert(b);
        for (auto it = cands.begin(); it != cands.end();) {
            Reads r;
            r.visit(it->first);
            bool ok = !r.calls && !(threadIdx_ && uses(it->first, threadIdx_.get()));
            for (auto *b : r.buffers) ok &= inputs_.count(b) || scalars.count(b);
            for (auto *b : it->second) ok &= !others.count(b);
            if (ok) ++it;
            else candStmts.erase(it->first.get()), it = cands.erase(it), changed = true;
        }
    }
    replayable_ = std::move(cands);
    for (auto &c : replayable_) replayed_.insert(c.second.begin(), c.second.end());
}

std::vector<Stmt> KernelScalars::replay() const {
    std::set<const BufferNode *> needed = used_;
    std::vector<bool> take(replayable_.size(), false);
    for (size_t i = replayable_.size(); i-- > 0;) {
        for (auto *b : replayable_[i].second) take[i] = take[i] || needed.count(b) > 0;
        if (!take[i]) continue;
        Reads r;
        r.visit(replayable_[i].first);
        for (auto *b : r.buffers)
            if (replayed_.count(b)) needed.insert(b);
    }
    std::vector<Stmt> out;
    for (size_t i = 0; i < replayable_.size(); ++i)
        if (take[i]) out.push_back(replayable_[i].first);
    return out;
}

Expr KernelScalars::substitute(const Expr &e) const {
    return replaceLoads(e, defs_);
}

Expr KernelScalars::uniform(const Expr &e, bool replayed) const {
    if (!e) return e;
    Expr out = substitute(e);
    Reads r = reads(out);
    if (r.calls || (threadIdx_ && uses(out, threadIdx_.get()))) return nullptr;
    for (auto *b : r.buffers)
        if (!inputs_.count(b) && !(replayed && replayed_.count(b))) return nullptr;
    for (auto *b : r.buffers)
        if (replayed_.count(b)) used_.insert(b);
    return out;
}

} // namespace tilec::passes
