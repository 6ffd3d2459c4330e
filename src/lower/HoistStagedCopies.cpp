/// \file
/// Staged fragment copies hoisted out of the loops that do not change them (include/tilec/passes/HoistStagedCopies.h).
#include "tilec/passes/HoistStagedCopies.h"

#include "tilec/IRMutator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <map>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

using BufferSet = std::set<const BufferNode *>;

/// The buffers `s` may write: stores, destinations of tile statements, T.gemm accumulators, atomics, and every
/// buffer named in the arguments of a library or extern call (an address it may write through).
BufferSet writtenBy(const Stmt &s) {
    struct Loads : IRVisitor {
        using IRVisitor::visit;
        BufferSet *out;
        void visit(const Load &op) override {
            out->insert(op.buffer.get());
            IRVisitor::visit(op);
        }
    };
    struct W : IRVisitor {
        using IRVisitor::visit;
        BufferSet out;
        void visit(const Store &op) override {
            out.insert(op.buffer.get());
            IRVisitor::visit(op);
        }
        void visit(const Copy &op) override {
            out.insert(op.dst.buffer.get());
            IRVisitor::visit(op);
        }
        void visit(const Fill &op) override {
            out.insert(op.dst.buffer.get());
            IRVisitor::visit(op);
        }
        void visit(const Gemm &op) override {
            out.insert(op.c.buffer.get());
            IRVisitor::visit(op);
        }
        void visit(const Reduce &op) override {
            out.insert(op.dst.get());
            IRVisitor::visit(op);
        }
        void visit(const AtomicAdd &op) override {
            out.insert(op.dst.buffer.get());
            IRVisitor::visit(op);
        }
        void visit(const Call &op) override {
            if (lib::find(op.name) || op.name.rfind("extern:", 0) == 0) {
                Loads l;
                l.out = &out;
                for (auto &a : op.args) l.visit(a);
            }
            IRVisitor::visit(op);
        }
    } w;
    w.visit(s);
    w.out.erase(nullptr);
    return w.out;
}

class Hoister : public IRMutator {
  public:
    using IRMutator::visit;
    Hoister(const std::vector<StagedCopy> &copies, const std::vector<std::pair<Buffer, Buffer>> &views) {
        for (auto &c : copies) byStmt_[c.copy.get()] = &c;
        // A view and its base name the same elements: a write to either changes the other (and every view of it).
        for (auto &c : copies) {
            BufferSet &g = group_[c.source.get()];
            g.insert(c.source.get());
            for (bool grew = true; grew;) {
                grew = false;
                for (auto &[v, base] : views)
                    if (g.count(v.get()) || g.count(base.get()))
                        grew |= g.insert(v.get()).second | g.insert(base.get()).second;
            }
        }
    }

    Stmt visit(const std::shared_ptr<const For> &op) override {
        Stmt s = IRMutator::visit(op); // the loops inside first: a copy leaves them before this one is asked
        auto f = as<For>(s);
        if (!f || !(f->forKind == ForKind::Serial || f->forKind == ForKind::Unrolled || f->forKind == ForKind::Pipelined))
            return s;
        std::vector<Stmt> stmts = Seq::items(f->body);
        std::vector<BufferSet> writes;
        for (auto &st : stmts) writes.push_back(writtenBy(st));
        std::vector<Stmt> moved, kept;
        for (size_t i = 0; i < stmts.size(); ++i) {
            auto it = byStmt_.find(stmts[i].get());
            if (it != byStmt_.end() && invariant(*it->second, i, stmts, writes, *f)) moved.push_back(stmts[i]);
            else kept.push_back(stmts[i]);
        }
        if (moved.empty() || kept.empty()) return s;
        Stmt loop = For::make(f->var, f->min, f->extent, f->forKind, f->numStages, Seq::make(kept, f->body->loc), f->loc);
        moved.push_back(loop);
        return Seq::make(moved, f->loc);
    }

  private:
    std::map<const StmtNode *, const StagedCopy *> byStmt_;
    std::map<const BufferNode *, BufferSet> group_; ///< a copy's source -> it and the views sharing its elements

    /// Whether copy `c`, statement `at` of loop `f`'s body `stmts`, copies the same elements at every iteration.
    bool invariant(const StagedCopy &c, size_t at, const std::vector<Stmt> &stmts, const std::vector<BufferSet> &writes,
                   const For &f) const {
        if (uses(c.copy, f.var.get())) return false;
        const BufferSet &source = group_.at(c.source.get());
        for (size_t j = 0; j < stmts.size(); ++j) {
            for (auto *b : source)
                if (writes[j].count(b)) return false;
            if (j != at && writes[j].count(c.staged.get())) return false;
        }
        return true;
    }
};

} // namespace

Stmt hoistStagedCopies(const Stmt &body, const std::vector<StagedCopy> &copies,
                       const std::vector<std::pair<Buffer, Buffer>> &views) {
    if (copies.empty()) return body;
    return Hoister(copies, views).mutate(body);
}

} // namespace tilec::passes
