/// \file
/// Barriers between shared-memory producers and consumers (include/tilec/passes/InsertSyncs.h).
#include "tilec/passes/InsertSyncs.h"

#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LibraryCalls.h"

#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// Shared buffers, and reductions standing for the shared scratch their lowering uses.
using BufferSet = std::set<const void *>;

struct Pending {
    BufferSet reads, writes;
    void merge(const Pending &o) {
        reads.insert(o.reads.begin(), o.reads.end());
        writes.insert(o.writes.begin(), o.writes.end());
    }
    void clear() {
        reads.clear();
        writes.clear();
    }
};

bool intersects(const BufferSet &a, const BufferSet &b) {
    for (auto *x : a)
        if (b.count(x)) return true;
    return false;
}

bool isSync(const Stmt &s) {
    auto e = as<Evaluate>(s);
    auto c = e ? as<Call>(e->value) : nullptr;
    return c && (lib::is(*c, lib::Fn::Sync) || lib::is(*c, lib::Fn::NamedSync));
}

/// The shared buffers a statement reads and writes.
struct Accesses : IRVisitor {
    using IRVisitor::visit;
    Pending p;
    void visit(const Load &op) override {
        if (op.buffer && op.buffer->scope == Scope::Shared) p.reads.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        if (op.buffer && op.buffer->scope == Scope::Shared) p.writes.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const AtomicAdd &op) override {
        if (op.dst.buffer && op.dst.buffer->scope == Scope::Shared) {
            p.writes.insert(op.dst.buffer.get());
            p.reads.insert(op.dst.buffer.get());
        }
        IRVisitor::visit(op);
    }
    // T.gemm reads its shared operands.
    void visit(const Gemm &op) override {
        for (auto *r : {&op.a, &op.b})
            if (r->buffer && r->buffer->scope == Scope::Shared) p.reads.insert(r->buffer.get());
    }
    // An address handed to the device library is not an access by itself; a tile transfer that waits for
    // itself writes its destination; a pipelined one is ordered by pipelineLoops' own barriers.
    void visit(const Call &op) override {
        const lib::Info *f = lib::find(op.name);
        if (f && (f->effects & lib::kAsync)) return;
        if (f && f->fn == lib::Fn::AddressOf) return;
        if (f && f->fn == lib::Fn::CopyG2SWait) {
            if (auto l = addressedLoad(lib::arg(op, f->fn, "dst"))) p.writes.insert(l->buffer.get());
            return;
        }
        IRVisitor::visit(op);
    }
    // A reduction exchanges partial results through shared scratch of its own: the barrier between its
    // writes and reads is its own (lowerReductions), but running it again must wait for the last readers.
    void visit(const Reduce &op) override {
        p.writes.insert(&op);
        p.reads.insert(&op);
    }
};

class Syncer {
  public:
    explicit Syncer(const Var &tid) : tid_(tid) {}

    /// Rewrites `s` given what is pending before it; updates `state` to what is pending after it.
    Stmt run(const Stmt &s, Pending &state) {
        if (!s) return s;
        if (++depth_ > kMaxIRDepth) TILEC_ASSERT(false, "statement nesting too deep for barrier insertion");
        Stmt r = step(s, state);
        --depth_;
        return r;
    }

  private:
    Var tid_;
    int depth_ = 0;

    bool uniform(const Expr &e) const { return !tid_ || !mentions(e, tid_.get()); }

    Stmt step(const Stmt &s, Pending &state) {
        if (isSync(s)) {
            state.clear();
            return s;
        }
        if (auto q = as<Seq>(s)) {
            std::vector<Stmt> out;
            for (auto &c : q->stmts) {
                Stmt r = run(c, state);
                if (r) out.push_back(r);
            }
            return Seq::make(std::move(out), q->loc);
        }
        bool nest = false;
        if (auto f = as<For>(s)) nest = f->forKind == ForKind::Parallel || f->forKind == ForKind::Vectorized;
        if (auto f = as<For>(s); f && !nest && uniform(f->min) && uniform(f->extent)) {
            // The state at the end of one iteration is pending at the start of the next one.
            Pending dry = state;
            (void)run(f->body, dry);
            Pending entry = state;
            entry.merge(dry);
            Stmt body = run(f->body, entry);
            state.merge(entry); // the loop may also run zero times
            return For::make(f->var, f->min, f->extent, f->forKind, f->numStages, body, f->loc);
        }
        if (auto i = as<IfThenElse>(s); i && uniform(i->cond)) {
            Pending a = state, b = state;
            Stmt then = run(i->then, a);
            Stmt otherwise = i->otherwise ? run(i->otherwise, b) : nullptr;
            a.merge(b);
            state = a;
            return IfThenElse::make(i->cond, then, otherwise, i->loc);
        }
        Accesses acc;
        acc.visit(s);
        bool hazard = intersects(acc.p.reads, state.writes) || intersects(acc.p.writes, state.writes) ||
                      intersects(acc.p.writes, state.reads);
        if (!hazard) {
            state.merge(acc.p);
            return s;
        }
        state = acc.p;
        return Seq::make({syncThreads(s->loc), s}, s->loc);
    }
};

} // namespace

Stmt syncThreads(SourceRange loc) { return lib::stmt(lib::Fn::Sync, {}, loc); }

Program insertSyncs(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Syncer s(k->threadIdx);
        Pending state;
        Stmt body = s.run(k->body, state);
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
