/// \file
/// Pipelining helpers shared by pipelineLoops and specializeWarps (include/tilec/passes/Staging.h).
#include "tilec/passes/Staging.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LoopInvariants.h"

#include <optional>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// Buffers a statement mentions (accesses and tile-statement regions).
struct Mentioned : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> buffers;
    const StmtNode *skip = nullptr;
    void visit(const Load &op) override { buffers.insert(op.buffer.get()), IRVisitor::visit(op); }
    void visit(const Store &op) override { buffers.insert(op.buffer.get()), IRVisitor::visit(op); }
    void visit(const Copy &op) override { buffers.insert(op.src.buffer.get()), buffers.insert(op.dst.buffer.get()); }
    void visit(const Gemm &op) override {
        for (auto *r : {&op.a, &op.b, &op.c}) buffers.insert(r->buffer.get());
        if (op.sparse()) buffers.insert(op.e.buffer.get());
    }
    void visit(const Fill &op) override { buffers.insert(op.dst.buffer.get()); }
    void visit(const For &op) override {
        if (skip == static_cast<const StmtNode *>(&op)) return;
        IRVisitor::visit(op);
    }
};

/// Replaces buffers by their staged copies, indexed by `stage`.
class Stage : public IRMutator {
  public:
    using IRMutator::visit;
    Stage(const std::map<const BufferNode *, Buffer> &m, Expr stage) : map_(m), stage_(std::move(stage)) {}

    Expr visit(const std::shared_ptr<const Load> &op) override {
        auto it = map_.find(op->buffer.get());
        if (it == map_.end()) return IRMutator::visit(op);
        return Load::make(it->second, withStage(op->indices), op->loc);
    }
    Stmt visit(const std::shared_ptr<const Store> &op) override {
        auto it = map_.find(op->buffer.get());
        if (it == map_.end()) return IRMutator::visit(op);
        return Store::make(it->second, withStage(op->indices), mutate(op->value), op->loc);
    }
    Stmt visit(const std::shared_ptr<const Copy> &op) override {
        Region src = region(op->src), dst = region(op->dst);
        if (src.buffer == op->src.buffer && dst.buffer == op->dst.buffer) return op;
        return Copy::make(src, dst, op->loc);
    }
    Stmt visit(const std::shared_ptr<const Fill> &op) override {
        Region dst = region(op->dst);
        return dst.buffer == op->dst.buffer ? Stmt(op) : Fill::make(dst, op->value, op->loc);
    }
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        Region a = region(op->a), b = region(op->b);
        Region e = op->sparse() ? region(op->e) : op->e; // T.gemm_sp's metadata tile is staged like A and B
        if (a.buffer == op->a.buffer && b.buffer == op->b.buffer && e.buffer == op->e.buffer) return op;
        Stmt g = op->withRegions(a, b, op->c);
        return op->sparse() ? as<Gemm>(g)->withMetadata(e) : g;
    }

  private:
    const std::map<const BufferNode *, Buffer> &map_;
    Expr stage_;
    std::vector<Expr> withStage(const std::vector<Expr> &idx) {
        std::vector<Expr> out{stage_};
        for (auto &i : idx) out.push_back(mutate(i));
        return out;
    }
    Region region(const Region &r) {
        auto it = map_.find(r.buffer.get());
        if (it == map_.end()) return r;
        Region out{it->second, {{stage_, i32(1)}}, r.loc};
        for (auto &x : r.ranges) out.ranges.push_back(x);
        return out;
    }
};


bool hoistable(const Copy &c, const std::set<const VarNode *> &boundInside, const std::set<const BufferNode *> &invariant) {
    for (auto &r : c.src.ranges) {
        if (!readsOnly(r.min, invariant) || !readsOnly(r.extent, invariant)) return false;
        for (auto *v : boundInside)
            if (uses(r.min, v) || uses(r.extent, v)) return false;
    }
    return true;
}

/// The scalars a loop body sets once per iteration, at its top level, from the loop variable and what the loop
/// does not change (invariant buffers, earlier such scalars): their definitions, to be written into a copy's
/// region in place of their loads, so that the copy can be issued for a later iteration.
class IterationScalars : public IRMutator {
  public:
    using IRMutator::visit;
    explicit IterationScalars(const Stmt &body) {
        struct Stores : IRVisitor {
            using IRVisitor::visit;
            std::map<const BufferNode *, int> n;
            void visit(const Store &op) override { ++n[op.buffer.get()], IRVisitor::visit(op); }
        } st;
        st.visit(body);
        stores_ = std::move(st.n);
    }

    /// Records `s` when it is such a definition: a store to element 0 of a one-element scalar that the body
    /// stores to nowhere else, whose value (over the earlier definitions) reads only invariant buffers and no
    /// variable bound inside the body.
    void define(const Stmt &s, const std::set<const VarNode *> &boundInside, const std::set<const BufferNode *> &invariant) {
        auto st = as<Store>(s);
        if (!st || (st->buffer->scope != Scope::Local && st->buffer->scope != Scope::Var) || st->buffer->constElements() != 1 ||
            st->indices.size() != 1 || constInt(st->indices[0]) != std::optional<int64_t>(0) || stores_[st->buffer.get()] != 1)
            return;
        Expr v = mutate(st->value);
        if (!readsOnly(v, invariant)) return;
        for (auto *x : boundInside)
            if (uses(v, x)) return;
        defs_[st->buffer.get()] = v->dtype == st->buffer->dtype ? v : cast(st->buffer->dtype, v);
    }

    /// The copy with the definitions written into its source region; null when it reads none of them.
    Stmt inlined(const Copy &c) {
        if (defs_.empty()) return nullptr;
        Region src = c.src;
        bool changed = false;
        for (auto &r : src.ranges) {
            Expr lo = mutate(r.min), ext = mutate(r.extent);
            changed |= lo != r.min || ext != r.extent;
            r.min = lo, r.extent = ext;
        }
        return changed ? Copy::make(src, c.dst, c.loc) : nullptr;
    }

    /// `e` with the definitions written in.
    Expr inlinedExpr(const Expr &e) { return mutate(e); }

    Expr visit(const std::shared_ptr<const Load> &op) override {
        auto it = defs_.find(op->buffer.get());
        return it != defs_.end() ? it->second : IRMutator::visit(op);
    }

  private:
    std::map<const BufferNode *, int> stores_;
    std::map<const BufferNode *, Expr> defs_;
};

/// Whether `e` reads only `invariant` buffers and no variable of `boundInside`.
bool invariantExpr(const Expr &e, const std::set<const VarNode *> &boundInside, const std::set<const BufferNode *> &invariant) {
    if (!readsOnly(e, invariant)) return false;
    for (auto *v : boundInside)
        if (uses(e, v)) return false;
    return true;
}

/// The copies of a top-level `if` that splitPipelinedBody may issue ahead under its condition (see Staging.h).
struct GuardedCopies {
    Stmt rewritten;                   ///< the `if` without them
    std::vector<Stmt> copies;         ///< each as issued ahead (the scalars' definitions written in)
    Expr guard;                       ///< the condition, likewise
};

/// The copies at the top of `s`'s then-branch, when `s` is an `if` whose condition reads what the loop does not
/// change, each copy hoistable and its tile mentioned neither before it in the branch nor in the else-branch,
/// nor in `others` (the body's other statements); nothing otherwise.
std::optional<GuardedCopies> guardedCopies(const Stmt &s, const std::set<const BufferNode *> &others, IterationScalars &scalars,
                                           const std::set<const VarNode *> &boundInside, const std::set<const BufferNode *> &invariant) {
    auto branch = as<IfThenElse>(s);
    if (!branch) return std::nullopt;
    GuardedCopies out;
    out.guard = scalars.inlinedExpr(branch->cond);
    if (!invariantExpr(out.guard, boundInside, invariant)) return std::nullopt;
    std::vector<Stmt> then = as<Seq>(branch->then) ? as<Seq>(branch->then)->stmts : std::vector<Stmt>{branch->then};
    std::set<const BufferNode *> before = others, tiles;
    if (branch->otherwise) before.merge(mentionedBuffers(branch->otherwise, nullptr));
    std::vector<Stmt> kept;
    for (auto &t : then) {
        auto c = as<Copy>(t);
        Stmt moved = c ? scalars.inlined(*c) : nullptr;
        const Copy *issued = moved ? as<Copy>(moved) : c;
        if (c && !before.count(c->dst.buffer.get()) && !tiles.count(c->dst.buffer.get()) && hoistable(*issued, boundInside, invariant)) {
            out.copies.push_back(moved ? moved : t);
            tiles.insert(c->dst.buffer.get());
            continue;
        }
        before.merge(mentionedBuffers(t, nullptr));
        kept.push_back(t);
    }
    if (out.copies.empty()) return std::nullopt;
    out.rewritten = IfThenElse::make(branch->cond, Seq::make(std::move(kept), branch->loc), branch->otherwise, branch->loc);
    return out;
}

} // namespace

LoopSplit splitPipelinedBody(const For &loop, const Stmt &kernelBody, bool guarded) {
    const std::set<const BufferNode *> invariant = loopInvariantBuffers(loop, kernelBody);
    LoopSplit out;
    if (auto q = as<Seq>(loop.body)) out.top = q->stmts;
    else out.top = {loop.body};
    const std::set<const VarNode *> boundVars = loopVariablesIn(loop.body);
    IterationScalars scalars(loop.body);
    for (size_t i = 0; i < out.top.size(); ++i) {
        const Stmt &s = out.top[i];
        auto c = as<Copy>(s);
        std::optional<GuardedCopies> g;
        if (guarded && as<IfThenElse>(s)) {
            std::set<const BufferNode *> others;
            for (size_t j = 0; j < out.top.size(); ++j)
                if (j != i) others.merge(mentionedBuffers(out.top[j], nullptr));
            g = guardedCopies(s, others, scalars, boundVars, invariant);
        }
        if (c && hoistable(*c, boundVars, invariant)) out.hoisted.push_back(c), out.guards.push_back(nullptr), out.at.push_back(i);
        else if (Stmt moved = c ? scalars.inlined(*c) : nullptr; moved && hoistable(*as<Copy>(moved), boundVars, invariant)) {
            out.rewritten.push_back(moved);
            out.hoisted.push_back(as<Copy>(moved));
            out.guards.push_back(nullptr);
            out.at.push_back(i);
        } else if (g) {
            for (auto &m : g->copies) {
                out.rewritten.push_back(m);
                out.hoisted.push_back(as<Copy>(m));
                out.guards.push_back(g->guard);
                out.at.push_back(i);
            }
            out.rewritten.push_back(g->rewritten);
            out.rest.push_back(g->rewritten);
        } else {
            out.rest.push_back(s);
            scalars.define(s, boundVars, invariant);
        }
    }
    return out;
}

std::set<const VarNode *> loopVariablesIn(const Stmt &s) {
    struct Bound : IRVisitor {
        using IRVisitor::visit;
        std::set<const VarNode *> vars;
        void visit(const For &f) override { vars.insert(f.var.get()), IRVisitor::visit(f); }
    } bound;
    bound.visit(s);
    return bound.vars;
}

std::set<const BufferNode *> mentionedBuffers(const Stmt &s, const StmtNode *skip) {
    Mentioned m;
    m.skip = skip;
    m.visit(s);
    return m.buffers;
}

std::set<const BufferNode *> copyTargets(const std::vector<Stmt> &stmts) {
    struct CopyTargets : IRVisitor {
        using IRVisitor::visit;
        std::set<const BufferNode *> dst;
        void visit(const Copy &c) override { dst.insert(c.dst.buffer.get()); }
    } t;
    for (auto &s : stmts) t.visit(s);
    return t.dst;
}

int panelSwizzleBytes(int64_t rowBytes) { return lib::widestPanelSpan(rowBytes); }

Buffer ringOf(const Buffer &b, int stages) {
    std::vector<Expr> shape{i32(stages)};
    for (auto &e : b->shape) shape.push_back(e);
    return makeBuffer(b->name, Scope::Shared, b->dtype, shape, b->loc);
}

Stmt stageBuffers(const Stmt &s, const std::map<const BufferNode *, Buffer> &ring, const Expr &stage) {
    Stage st(ring, stage);
    return st.mutate(s);
}

} // namespace tilec::passes
