/// \file
/// Waits of in-place tile transfers moved to where their tiles are first needed
/// (include/tilec/passes/SinkTransferWaits.h).
#include "tilec/passes/SinkTransferWaits.h"

#include "EachKernel.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Staging.h"

#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

const Call *waitingTransfer(const Stmt &s) {
    const Call *c = callOf(s);
    return c && lib::is(*c, lib::Fn::CopyG2SWait) ? c : nullptr;
}

/// Whether a statement may run between a transfer's issue and its wait: nothing in it orders threads, waits
/// for asynchronous work or issues it, or becomes such code later (tile statements other than fills).
struct Passable : IRVisitor {
    using IRVisitor::visit;
    bool ok = true;
    void visit(const Copy &) override { ok = false; }
    void visit(const Gemm &) override { ok = false; }
    void visit(const Reduce &) override { ok = false; }
    void visit(const WarpRoles &) override { ok = false; }
    void visit(const While &) override { ok = false; }
    void visit(const Call &op) override {
        const lib::Info *f = lib::find(op.name);
        const bool quiet = f && (f->effects == lib::kNone || (f->effects & lib::kPure) ||
                                 f->effects == lib::kReadsShared || f->effects == lib::kWritesShared);
        if (!quiet || lib::is(op, lib::Fn::CpAsyncCommit) || lib::is(op, lib::Fn::CpAsyncWait) || lib::is(op, lib::Fn::CopyG2SWait))
            ok = false;
        IRVisitor::visit(op);
    }
};

bool passable(const Stmt &s, const std::set<const BufferNode *> &tiles) {
    Passable p;
    p.visit(s);
    if (!p.ok) return false;
    for (auto *b : mentionedBuffers(s, nullptr))
        if (tiles.count(b)) return false;
    return true;
}

class Sink : public IRMutator {
  public:
    using IRMutator::visit;
    Stmt visit(const std::shared_ptr<const Seq> &op) override {
        bool changed = false;
        std::vector<Stmt> in = mutateEach(op->stmts, changed);
        // The transfers issued since the last wait (as the program has them, and issued without their waits,
        // with the statements passed in between) and the tiles they fill.
        std::vector<Stmt> out, run, issued;
        std::set<const BufferNode *> pending;
        bool passed = false;
        auto flush = [&] {
            if (passed) {
                out.insert(out.end(), issued.begin(), issued.end());
                out.push_back(lib::stmt(lib::Fn::CpAsyncWait, {intImm(0)}, op->loc));
                changed = true;
            } else {
                out.insert(out.end(), run.begin(), run.end()); // nothing to overlap: each waits in place
            }
            run.clear(), issued.clear(), pending.clear(), passed = false;
        };
        for (auto &s : in) {
            if (const Call *c = waitingTransfer(s)) {
                auto l = addressedLoad(lib::arg(*c, lib::Fn::CopyG2SWait, "dst"));
                if (!l || pending.count(l->buffer.get())) flush();
                if (!l) { // a destination it cannot name: waited for in place
                    out.push_back(s);
                    continue;
                }
                run.push_back(s);
                issued.push_back(lib::stmt(lib::Fn::CopyG2S, c->args, s->loc));
                issued.push_back(lib::stmt(lib::Fn::CpAsyncCommit, {}, s->loc));
                pending.insert(l->buffer.get());
                continue;
            }
            if (!run.empty() && passable(s, pending)) {
                issued.push_back(s);
                passed = true;
                continue;
            }
            flush();
            out.push_back(s);
        }
        flush();
        return changed ? Seq::make(std::move(out), op->loc) : op;
    }
};

} // namespace

Program sinkTransferWaits(const Program &p) {
    return eachKernel(p, [](const KernelP &k) { return Sink().mutate(k); });
}

} // namespace tilec::passes
