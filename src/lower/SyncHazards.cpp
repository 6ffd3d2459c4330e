/// \file
/// What insertSyncs knows about a statement before it places barriers (src/lower/SyncHazards.h).
#include "SyncHazards.h"

#include "LayoutUses.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/LaneUniformity.h"
#include "tilec/passes/ReductionPlan.h"
#include "tilec/SharedAliases.h"

#include <cstdint>

namespace tilec::passes::syncs {

using namespace ir;

namespace {

void mergeOwners(const BufferSet &mine, OwnerMap &owners, const BufferSet &theirs, const OwnerMap &o) {
    for (auto *b : theirs) {
        auto ot = o.find(b);
        auto mt = owners.find(b);
        if (ot == o.end()) owners.erase(b);
        else if (!mine.count(b)) owners[b] = ot->second;
        else if (mt != owners.end()) mt->second = combineOwners(mt->second, ot->second);
    }
}

} // namespace

void Pending::merge(const Pending &o) {
    mergeOwners(reads, readOwners, o.reads, o.readOwners);
    mergeOwners(writes, writeOwners, o.writes, o.writeOwners);
    for (auto *b : o.reads) mergeSites(reads.count(b) > 0, readSites, b, o.readSites);
    for (auto *b : o.writes) mergeSites(writes.count(b) > 0, writeSites, b, o.writeSites);
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
    threadReads.insert(o.threadReads.begin(), o.threadReads.end());
    threadWrites.insert(o.threadWrites.begin(), o.threadWrites.end());
    atomics.insert(o.atomics.begin(), o.atomics.end());
    tileReads.insert(o.tileReads.begin(), o.tileReads.end());
    tileWrites.insert(o.tileWrites.begin(), o.tileWrites.end());
}

namespace {

/// The owners of a view's elements as those of its base's (the view's bytes are the base's, row-major).
Owners baseOwners(const Owners &view, const BufferNode &v, const BufferNode &base) {
    const int64_t vb = v.dtype.bytes(), bb = base.dtype.bytes(), n = base.constElements();
    if (!view || n <= 0 || (int64_t)view->size() * vb != n * bb) return nullptr;
    auto out = std::make_shared<std::vector<int32_t>>((size_t)n, kUntouched);
    for (int64_t e = 0; e < n; ++e)
        for (int64_t i = e * bb / vb; i <= ((e + 1) * bb - 1) / vb; ++i) {
            int32_t &o = (*out)[(size_t)e], t = (*view)[(size_t)i];
            if (t != kUntouched && o != t) o = o == kUntouched ? t : kSeveral;
        }
    return out;
}

} // namespace

void foldAliasedElements(Pending &p, const Kernel &k, const Stmt &s) {
    if (ir::sharedAliases(k).empty()) return;
    std::set<const BufferNode *> direct; // the buffers s names itself (its own accesses of a base)
    struct Named : IRVisitor {
        using IRVisitor::visit;
        std::set<const BufferNode *> *out;
        void visitRegion(const Region &r) override { out->insert(r.buffer.get()), IRVisitor::visitRegion(r); }
        void visit(const Load &op) override { out->insert(op.buffer.get()), IRVisitor::visit(op); }
        void visit(const Store &op) override { out->insert(op.buffer.get()), IRVisitor::visit(op); }
    } named;
    named.out = &direct;
    named.visit(s);
    for (auto &[view, base] : ir::sharedAliases(k)) {
        if (!direct.count(view.get())) continue;
        for (OwnerMap *owners : {&p.readOwners, &p.writeOwners}) {
            auto it = owners->find(view.get());
            Owners mine = it == owners->end() ? nullptr : baseOwners(it->second, *view, *base);
            if (it != owners->end()) owners->erase(it);
            auto own = owners->find(base.get());
            if (direct.count(base.get())) mine = own == owners->end() ? nullptr : combineOwners(mine, own->second);
            if (mine) (*owners)[base.get()] = mine;
            else owners->erase(base.get());
        }
        for (SiteMap *sites : {&p.readSites, &p.writeSites}) sites->erase(view.get()), sites->erase(base.get());
    }
}

Pending authorView(const Pending &st) {
    Pending v = st;
    v.reads = st.tileReads;
    v.writes = st.tileWrites;
    return v;
}

void Pending::erase(const void *b) {
    for (auto *set : {&reads, &writes, &threadReads, &threadWrites, &atomics, &tileReads, &tileWrites}) set->erase(b);
    readOwners.erase(b);
    writeOwners.erase(b);
    readSites.erase(b);
    writeSites.erase(b);
}

void Pending::forget(const std::set<const VarNode *> &vars) {
    forgetVars(readSites, vars);
    forgetVars(writeSites, vars);
}

bool intersects(const BufferSet &a, const BufferSet &b) {
    for (auto *x : a)
        if (b.count(x)) return true;
    return false;
}

bool conflicts(const Pending &p, const Pending &st, const ElementContext &cx) {
    auto clash = [&cx](const BufferSet &a, const OwnerMap &ao, const SiteMap &as, const BufferSet &b, const OwnerMap &bo,
                       const SiteMap &bs) {
        for (auto *x : a) {
            if (!b.count(x)) continue;
            auto i = ao.find(x), j = bo.find(x);
            if (i != ao.end() && j != bo.end() && samePrivateOwners(i->second, j->second)) continue;
            auto si = as.find(x), sj = bs.find(x);
            if (si == as.end() || sj == bs.end() || !sitesThreadPrivate(sj->second, si->second, cx)) return true;
        }
        return false;
    };
    return clash(p.reads, p.readOwners, p.readSites, st.writes, st.writeOwners, st.writeSites) ||
           clash(p.writes, p.writeOwners, p.writeSites, st.writes, st.writeOwners, st.writeSites) ||
           clash(p.writes, p.writeOwners, p.writeSites, st.reads, st.readOwners, st.readSites) ||
           intersects(p.reads, st.threadWrites) ||
           intersects(p.writes, st.threadWrites) || intersects(p.writes, st.threadReads) ||
           intersects(p.threadReads, st.writes) || intersects(p.threadWrites, st.writes) ||
           intersects(p.threadWrites, st.reads) || intersects(p.atomics, st.reads) ||
           intersects(p.atomics, st.writes) || intersects(p.reads, st.atomics) || intersects(p.writes, st.atomics);
}

bool isSync(const Stmt &s) {
    auto e = as<Evaluate>(s);
    auto c = e ? as<Call>(e->value) : nullptr;
    // T.sync_grid waits for the whole grid, so for the block too.
    return c && (lib::is(*c, lib::Fn::Sync) || lib::is(*c, lib::Fn::NamedSync) || lib::is(*c, lib::Fn::GridSync));
}

std::set<int64_t> namedBarrierIds(const Stmt &s) {
    struct Ids : IRVisitor {
        using IRVisitor::visit;
        std::set<int64_t> ids;
        void visit(const Call &c) override {
            for (lib::Fn f : {lib::Fn::NamedSync, lib::Fn::NamedArrive})
                if (lib::is(c, f))
                    if (auto id = constInt(lib::arg(c, f, "id"))) ids.insert(*id);
            IRVisitor::visit(c);
        }
    } v;
    v.visit(s);
    return v.ids;
}

/// Memory the block's threads share: shared buffers, and global tensors (two tile statements writing one
/// region of a tensor from fragments of different layouts, or one writing what the next reads, are ordered
/// by a barrier like shared memory: a block barrier orders global accesses within the block too).
namespace {
bool blockShared(const Buffer &b) { return b && (b->scope == Scope::Shared || b->scope == Scope::Global); }
} // namespace

void Accesses::visit(const Load &op) {
    if (blockShared(op.buffer)) note(p.reads, op.buffer.get());
    IRVisitor::visit(op);
}
void Accesses::visit(const Store &op) {
    if (blockShared(op.buffer)) note(p.writes, op.buffer.get());
    IRVisitor::visit(op);
}
void Accesses::visit(const AtomicAdd &op) {
    if (op.dst.buffer && op.dst.buffer->scope == Scope::Shared) note(p.atomics, op.dst.buffer.get());
    IRVisitor::visit(op);
}
// T.gemm reads its shared operands.
void Accesses::visit(const Gemm &op) {
    for (auto *r : {&op.a, &op.b, &op.e}) // (e: T.gemm_sp's metadata; no buffer when dense)
        if (r->buffer && r->buffer->scope == Scope::Shared) note(p.reads, r->buffer.get());
}
// An address handed to the device library is not an access by itself; a tile transfer that waits for
// itself writes its destination; a pipelined one (into a stage of a ring: the address's first index) is ordered
// by pipelineLoops' own barriers. An asynchronous transfer into a tile itself (a serial loop's transfers issued
// together, EarlyTransfers.h) writes its destination from its issue on, for the barrier before it (other threads
// may still read the tile); its readers wait for it behind pipelineLoops' own wait and barrier. A warp's call that
// reads (or writes) shared memory at its lanes' addresses (tilec.ldmatrix: rows other lanes stored) accesses the
// shared buffers it is handed.
void Accesses::visit(const Call &op) {
    const lib::Info *f = lib::find(op.name);
    if (f && f->fn == lib::Fn::CopyG2S) {
        auto l = addressedLoad(lib::arg(op, f->fn, "dst"));
        // The whole tile (rows x cols its elements): a stage of a ring of 1-D rows (also 2-D, one row a transfer)
        // is pipelined, ordered by pipelineLoops' own barriers.
        auto rows = constValue(lib::arg(op, f->fn, "rows")), cols = constValue(lib::arg(op, f->fn, "cols"));
        auto r0 = l && l->buffer->shape.size() == 2 ? constValue(l->buffer->shape[0]) : std::nullopt;
        auto c0 = l && l->buffer->shape.size() == 2 ? constValue(l->buffer->shape[1]) : std::nullopt;
        if (l && l->indices.size() == 2 && rows && cols && r0 && c0 && *rows * *cols == *r0 * *c0)
            note(p.writes, l->buffer.get());
        return;
    }
    if (f && (f->effects & lib::kAsync)) return;
    if (f && f->fn == lib::Fn::AddressOf) return;
    if (f && f->fn == lib::Fn::CopyG2SWait) {
        if (auto l = addressedLoad(lib::arg(op, f->fn, "dst"))) note(p.writes, l->buffer.get());
        return;
    }
    if (f && (f->effects & (lib::kReadsShared | lib::kWritesShared)))
        for (auto &a : op.args)
            if (auto l = addressedLoad(a); l && l->buffer && l->buffer->scope == Scope::Shared) {
                if (f->effects & lib::kReadsShared) note(p.reads, l->buffer.get());
                if (f->effects & lib::kWritesShared) note(p.writes, l->buffer.get());
            }
    // T.call_extern may read and write the memory it is handed. CUDA's atomicAdd / atomicSub (T.atomic_add(...,
    // return_prev=True)) update it atomically: like T.atomic_add, they commute with each other.
    bool atomic = op.name == "extern:atomicAdd" || op.name == "extern:atomicSub";
    if (op.name.rfind("extern:", 0) == 0)
        for (size_t i = 0; i < op.args.size(); ++i)
            if (auto l = addressedLoad(op.args[i]); l && blockShared(l->buffer)) {
                if (atomic && i == 0) {
                    if (l->buffer->scope == Scope::Shared) note(p.atomics, l->buffer.get());
                    continue;
                }
                note(p.reads, l->buffer.get());
                note(p.writes, l->buffer.get());
            }
    IRVisitor::visit(op);
}
// A reduction that exchanges partial results through shared scratch of its own: the barrier between its
// writes and reads is its own (lowerReductions), but running it again must wait for the last readers.
void Accesses::visit(const Reduce &op) {
    static const char kOneScratch = 0; // stands for the scratch all of a kernel's reductions share
    if (!reductionUsesShared(op, layouts)) return; // shuffles within warps only
    const void *scratch = sharedScratch ? static_cast<const void *>(&kOneScratch) : &op;
    p.writes.insert(scratch);
    p.reads.insert(scratch);
}

Uniformity::Uniformity(const Kernel &k, const KernelLayouts &layouts) : layouts_(layouts) {
    if (k.threadIdx) vars_.insert(k.threadIdx.get());
    for (size_t before = SIZE_MAX; before != vars_.size() + buffers_.size();) {
        before = vars_.size() + buffers_.size();
        divergent_ = 0;
        visit(k.body);
    }
}

bool Uniformity::uniform(const Expr &e) const {
    struct Find : IRVisitor {
        using IRVisitor::visit;
        const Uniformity *u;
        bool varying = false;
        void visit(const VarNode &v) override { varying |= u->vars_.count(&v) > 0; }
        void visit(const Load &l) override {
            varying |= (l.buffer->scope == Scope::Fragment && !u->replicated(l.buffer.get())) ||
                       u->buffers_.count(l.buffer.get()) > 0;
            IRVisitor::visit(l);
        }
        // the lowered level's rule (the thread's own index, T.call_extern's per-thread results), on this level's
        // uniformity of the arguments
        void visit(const Call &c) override {
            varying |= callSpread(c, [&](const Expr &a) { return u->uniform(a) ? Spread::Block : Spread::Lane; }) !=
                       Spread::Block;
        }
    } f;
    f.u = this;
    f.visit(e);
    return !f.varying;
}

bool Uniformity::replicated(const BufferNode *b) const {
    auto it = layouts_.fragments.find(b);
    return it != layouts_.fragments.end() && it->second.kind == Layout::Replicated;
}
void Uniformity::visit(const For &f) {
    bool nest = f.forKind == ForKind::Parallel || f.forKind == ForKind::Vectorized;
    auto l = layouts_.loops.find(f.var.get());
    bool whole = nest && (wholeNest_ > 0 || (l != layouts_.loops.end() && l->second.kind == Layout::Replicated));
    bool varying = (nest && !whole) || !uniform(f.min) || !uniform(f.extent);
    if (varying) vars_.insert(f.var.get());
    divergent_ += varying;
    wholeNest_ += whole;
    visit(f.body);
    wholeNest_ -= whole;
    divergent_ -= varying;
}
void Uniformity::visit(const Reduce &r) {
    if (r.dst && r.dst->scope == Scope::Fragment) buffers_.insert(r.dst.get());
}
void Uniformity::visit(const IfThenElse &i) {
    bool varying = !uniform(i.cond);
    divergent_ += varying;
    visit(i.then);
    visit(i.otherwise);
    divergent_ -= varying;
}
void Uniformity::visit(const While &w) {
    bool varying = !uniform(w.cond);
    divergent_ += varying;
    visit(w.body);
    divergent_ -= varying;
}
void Uniformity::visit(const Store &st) {
    bool perThread = st.buffer->scope == Scope::Local || st.buffer->scope == Scope::Var || replicated(st.buffer.get());
    bool varying = divergent_ > 0 || !uniform(st.value);
    for (auto &i : st.indices) varying |= !uniform(i);
    if (perThread && varying) buffers_.insert(st.buffer.get());
}

const char *tileStatement(const Stmt &s) {
    if (auto f = as<For>(s); f && (f->forKind == ForKind::Parallel || f->forKind == ForKind::Vectorized))
        return ownRegisterNest(s) ? nullptr : "a T.Parallel loop (or the T.copy / T.fill it came from)";
    if (s->kind == NodeKind::Reduce) return "a reduction";
    if (s->kind == NodeKind::Gemm) return "T.gemm";
    if (s->kind == NodeKind::Copy) return "a tile T.copy";
    if (auto e = as<Evaluate>(s))
        if (auto c = as<Call>(e->value))
            if (const lib::Info *f = lib::find(c->name);
                f && f->issuers != lib::Issuers::One &&
                (f->effects & (lib::kReadsShared | lib::kWritesShared | lib::kAsync | lib::kBarrier)))
                return "a tile transfer"; // (per-thread calls such as __syncwarp or T.thread_return are not)
    return nullptr;
}

bool containsTileStatement(const Stmt &s) {
    return containsStatement(s, [](const Stmt &t) {
        return tileStatement(t) || t->kind == NodeKind::Fill || t->kind == NodeKind::WarpRoles;
    });
}

bool containsStatement(const Stmt &s, const std::function<bool(const Stmt &)> &pred) {
    std::vector<Stmt> todo = {s};
    while (!todo.empty()) {
        Stmt t = todo.back();
        todo.pop_back();
        if (!t) continue;
        if (pred(t)) return true;
        if (auto q = as<Seq>(t)) todo.insert(todo.end(), q->stmts.begin(), q->stmts.end());
        else if (auto f = as<For>(t)) todo.push_back(f->body);
        else if (auto i = as<IfThenElse>(t)) todo.push_back(i->then), todo.push_back(i->otherwise);
        else if (auto w = as<While>(t)) todo.push_back(w->body);
    }
    return false;
}

void TensorAccesses::visitRegion(const Region &r) {
    opaque |= r.buffer.get() == buffer;
    IRVisitor::visitRegion(r);
}
void TensorAccesses::visit(const Load &op) {
    if (op.buffer.get() == buffer) indices.push_back(&op.indices);
    IRVisitor::visit(op);
}
void TensorAccesses::visit(const Store &op) {
    if (op.buffer.get() == buffer) indices.push_back(&op.indices);
    IRVisitor::visit(op);
}
void TensorAccesses::visit(const For &op) {
    bound.insert(op.var.get());
    addLoopRange(boundRanges, op);
    IRVisitor::visit(op);
}
void TensorAccesses::visit(const Call &op) {
    const lib::Info *f = lib::find(op.name);
    if (f && (f->fn == lib::Fn::AddressOf || f->fn == lib::Fn::CopyG2SWait || (f->effects & lib::kAsync))) {
        TensorAccesses inner(buffer);
        inner.IRVisitor::visit(op);
        opaque |= inner.opaque || !inner.indices.empty();
        return;
    }
    IRVisitor::visit(op);
}

} // namespace tilec::passes::syncs
