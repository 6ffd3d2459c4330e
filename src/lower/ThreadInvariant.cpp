/// \file
/// Values the same in every thread of a role (src/lower/ThreadInvariant.h).
#include "ThreadInvariant.h"

#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Staging.h"

#include <map>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// One walk of the role: the per-thread scalars' stores, the buffers something other than a load mentions, and
/// the variables that differ between threads (T.Parallel loops' and those of loops with thread-dependent bounds).
struct Facts : IRVisitor {
    using IRVisitor::visit;
    const VarNode *tx = nullptr;
    std::map<const BufferNode *, std::vector<std::pair<const Store *, bool>>> stores; ///< (store, under a thread-dependent branch)
    std::set<const BufferNode *> written;   ///< stored, or mentioned by a statement other than a store
    std::set<const BufferNode *> mentioned; ///< mentioned by a library call or a tile statement
    std::set<const VarNode *> varying;
    int dependent = 0; ///< branches and loops around the visit point that depend on the thread

    bool varies(const Expr &e) const {
        if (!e) return false;
        if (tx && uses(e, tx)) return true;
        for (auto *v : varying)
            if (uses(e, v)) return true;
        return readsMemory(e); // bounds and conditions reading memory: not followed, taken as varying
    }
    void visit(const Store &op) override {
        stores[op.buffer.get()].push_back({&op, dependent > 0});
        written.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const For &op) override {
        const bool dep = op.forKind == ForKind::Parallel || varies(op.min) || varies(op.extent);
        if (dep) varying.insert(op.var.get());
        dependent += dep;
        IRVisitor::visit(op);
        dependent -= dep;
    }
    void visit(const IfThenElse &op) override {
        const bool dep = varies(op.cond);
        dependent += dep;
        IRVisitor::visit(op);
        dependent -= dep;
    }
    void visit(const While &op) override {
        ++dependent; // a trip count found at run time: not followed
        IRVisitor::visit(op);
        --dependent;
    }
    void mentions(const Stmt &s) {
        for (auto *b : mentionedBuffers(s, nullptr)) written.insert(b), mentioned.insert(b);
    }
    void visit(const Evaluate &op) override {
        // a call made for its effect (the library's) may write any buffer it mentions (addresses included)
        mentions(std::make_shared<Evaluate>(op));
        IRVisitor::visit(op);
    }
    void visit(const Copy &op) override { mentions(std::make_shared<Copy>(op)); }
    void visit(const Fill &op) override { mentions(std::make_shared<Fill>(op)); }
    void visit(const AtomicAdd &op) override { mentions(std::make_shared<AtomicAdd>(op)); }
    void visit(const Gemm &op) override { mentions(std::make_shared<Gemm>(op)); }
    // Per-thread scalars of the consumers hold what the consumers stored: the producer's threads are others.
    void visit(const WarpRoles &op) override { visit(op.consumer); }
};

struct Prover {
    const Facts &f;
    std::set<const BufferNode *> assumed; ///< buffers whose stores are being proved (a scalar updated from itself)

    bool invariant(const Expr &e) {
        if (!e) return true;
        if (f.tx && uses(e, f.tx)) return false;
        for (auto *v : f.varying)
            if (uses(e, v)) return false;
        struct Loads : IRVisitor {
            using IRVisitor::visit;
            std::vector<const Load *> found;
            void visit(const Load &op) override {
                found.push_back(&op);
                IRVisitor::visit(op);
            }
            void visit(const Call &) override { calls = true; }
            bool calls = false;
        } loads;
        loads.visit(e);
        if (loads.calls) return false;
        for (auto *l : loads.found)
            if (!loadInvariant(*l)) return false;
        return true;
    }

    bool loadInvariant(const Load &l) {
        const BufferNode *b = l.buffer.get();
        if (b->scope == Scope::Global) return !f.written.count(b);
        if ((b->scope != Scope::Var && b->scope != Scope::Local) || f.mentioned.count(b)) return false;
        if (assumed.count(b)) return true;
        assumed.insert(b);
        auto it = f.stores.find(b);
        bool ok = it != f.stores.end();
        if (ok)
            for (auto &[st, dep] : it->second) {
                ok = !dep && invariant(st->value);
                for (auto &i : st->indices) ok = ok && invariant(i);
                if (!ok) break;
            }
        assumed.erase(b);
        return ok;
    }
};

} // namespace

bool threadInvariant(const Expr &e, const Kernel &k) {
    Facts f;
    f.tx = k.threadIdx.get();
    f.visit(k.body);
    Prover p{f, {}};
    return p.invariant(e);
}

} // namespace tilec::passes
