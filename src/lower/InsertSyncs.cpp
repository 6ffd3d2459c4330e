/// \file
/// Barriers between shared-memory producers and consumers (include/tilec/passes/InsertSyncs.h).
#include "tilec/passes/InsertSyncs.h"

#include "ParallelRaces.h"
#include "SyncHazards.h"
#include "ThreadOwners.h"
#include "ThreadRaces.h"
#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ReductionPlan.h"
#include "tilec/SharedAliases.h"

#include <cstdint>
#include <cstdlib>
#include <set>

namespace tilec::passes {

using namespace ir;
using namespace syncs;

namespace {

class Syncer {
  public:
    Syncer(const Kernel &k, const KernelLayouts &layouts, const Target &t, DiagnosticEngine &diag)
        : uniformity_(k, layouts), layouts_(layouts), diag_(diag), shareScratch_(reductionsShareScratch(k, layouts, t)),
          ranges_(kernelRanges(k)), kernel_(k) {
        for (auto &p : k.params)
            if (p.kind == Param::Tensor && p.buffer) tensors_.insert(p.buffer.get());
        for (auto &b : k.allocs)
            if (b && b->scope == Scope::Shared) shared_.insert(b.get());
        userIds_ = namedBarrierIds(k.body);
        struct AsyncDsts : IRVisitor {
            using IRVisitor::visit;
            const Kernel *k;
            BufferSet *dsts;
            void visit(const Call &op) override {
                if (lib::is(op, lib::Fn::CpAsyncCopy))
                    if (auto l = addressedLoad(lib::arg(op, lib::Fn::CpAsyncCopy, "dst"))) dsts->insert(storageOf(*k, l->buffer.get()));
                IRVisitor::visit(op);
            }
        } dsts;
        dsts.k = &k, dsts.dsts = &asyncDsts_;
        dsts.visit(k.body);
        if (!asyncDsts_.empty()) landedOwners(k.body, kernelRanges(k));
        elements_.tx = k.threadIdx.get();
        elements_.ranges = &ranges_;
        elements_.uniformVar = [this](const VarNode *v) { return uniformity_.uniformVar(v); };
    }

    /// Per-thread races that no barrier can order (ThreadRaces.h): located errors.
    void checkRaces() {
        checkThreadRaces(kernel_, [this](const Expr &e) { return uniform(e); }, diag_);
    }

    /// Rewrites `s` given what is pending before it; updates `state` to what is pending after it.
    Stmt run(const Stmt &s, Pending &state) {
        if (!s) return s;
        if (++depth_ > kMaxIRDepth) TILEC_ASSERT(false, "statement nesting too deep for barrier insertion");
        Stmt r = step(s, state);
        --depth_;
        return r;
    }

  private:
    Uniformity uniformity_;
    const KernelLayouts &layouts_;
    DiagnosticEngine &diag_;
    bool shareScratch_;
    int depth_ = 0;
    BufferSet tensors_; ///< the kernel's global tensors
    BufferSet shared_;  ///< its shared buffers
    RangeMap ranges_;   ///< block and thread indices, T.dynamic sizes, the loops seen so far
    mutable OwnerCache ownerCache_;
    mutable std::set<Stmt> ownersOf_; ///< the statements in ownerCache_, kept alive so that no other takes their address
    const Kernel &kernel_;
    ElementContext elements_; ///< what sitesThreadPrivate compares per-thread accesses with
    /// Inside a branch of an `if` on the thread index that holds for whole warps only (`if tx < 128:` of 256
    /// threads), the barriers the branch needs among its own threads are a named barrier of those threads
    /// (bar.sync id, count), as TileLang makes them (ThreadPartialSyncRewriter): everything pending there was
    /// touched by those threads, since a full barrier before the `if` orders it after what came before.
    int64_t partialThreads_ = 0; ///< the branch's threads (0: barriers there are impossible)
    int partialId_ = 0;          ///< its barrier, once one is needed
    int nextPartialId_ = lib::kFirstPartialBarrier;
    std::set<int64_t> userIds_; ///< the named barriers the kernel uses already (T.sync_threads(id, count))
    BufferSet asyncDsts_;       ///< the destinations of the kernel's T.async_copy chunks (CpAsyncCopy)

    /// The destinations a statement issues T.async_copy chunks into (the chunks alone, in unrolled loops, under the
    /// `if` on the thread of the threads that have a chunk), or none.
    static std::vector<const BufferNode *> asyncIssue(const Stmt &s) {
        if (auto f = as<For>(s); f && f->forKind == ForKind::Unrolled) return asyncIssue(f->body);
        if (auto i = as<IfThenElse>(s); i && !i->otherwise) return asyncIssue(i->then);
        const Call *c = callOf(s);
        if (!c || !lib::is(*c, lib::Fn::CpAsyncCopy)) return {};
        auto l = addressedLoad(lib::arg(*c, lib::Fn::CpAsyncCopy, "dst"));
        return l ? std::vector<const BufferNode *>{l->buffer.get()} : std::vector<const BufferNode *>{};
    }

    /// A T.async_copy's chunks write their destination from their issue until the wait that retires their group
    /// (lowerAsyncCopies proved that nothing touches it in between). At the issue they are ordered after what is
    /// pending (other threads may still read the old values), but leave nothing pending: the values land at a
    /// CpAsyncWait, where lowerAsyncCopies' AsyncLanded markers name the destinations that may land there
    /// (asyncLanded: written as by a tile statement, the threads being tilec's, the elements' threads those of
    /// every issue into it). A barrier after the issue does not order the landing.
    Stmt asyncIssued(const Stmt &s, const std::vector<const BufferNode *> &dsts, Pending &state) {
        Pending mine;
        for (auto *b : dsts) mine.writes.insert(storageOf(kernel_, b));
        mine.tileWrites = mine.writes;
        if (Owners o = issueOwners(s, dsts[0], ranges_)) mine.writeOwners[dsts[0]] = o;
        if (!conflicts(mine, state, elements_)) return s;
        Stmt sync = blocked() ? nullptr : barrier(s->loc);
        if (!sync) divergentError(s->loc, "this T.async_copy overwrites shared memory read before it, which needs a barrier "
                                          "between them that every thread of the block reaches");
        state.clear();
        return sync ? Seq::make({sync, s}, s->loc) : s;
    }
    void asyncLanded(Pending &state, const BufferNode *b) const {
        Pending landed;
        landed.writes = landed.tileWrites = {storageOf(kernel_, b)};
        if (auto it = landed_.find(b); it != landed_.end() && storageOf(kernel_, b) == b) landed.writeOwners[b] = it->second;
        state.merge(landed);
    }

    mutable std::map<const StmtNode *, Stmt> chunkStores_; ///< issueOwners' statements, by issue
    OwnerMap landed_; ///< per T.async_copy destination, the thread that lands each element, where every issue's is known

    /// The elements a T.async_copy issue writes as per-thread stores (each chunk's elements), for ThreadOwners.
    static Stmt chunkStores(const Stmt &s) {
        if (auto f = as<For>(s)) return For::make(f->var, f->min, f->extent, f->forKind, f->numStages, chunkStores(f->body), f->loc);
        if (auto i = as<IfThenElse>(s)) return IfThenElse::make(i->cond, chunkStores(i->then), nullptr, i->loc);
        const Call *c = callOf(s);
        auto l = addressedLoad(lib::arg(*c, lib::Fn::CpAsyncCopy, "dst"));
        const int64_t n = *constInt(lib::arg(*c, lib::Fn::CpAsyncCopy, "bytes")) / l->buffer->dtype.bytes();
        Var e = makeVar("ce", DType::Int32, s->loc);
        std::vector<Expr> idx = l->indices;
        idx.back() = binary(BinaryOp::Add, idx.back(), cast(idx.back()->dtype, e));
        return For::make(e, intImm(0), intImm(n), ForKind::Serial, 0, Store::make(l->buffer, idx, cast(l->buffer->dtype, intImm(0)), s->loc), s->loc);
    }
    /// Owners of the writes of issue `s` with `ranges` around it; null where not known.
    Owners issueOwners(const Stmt &s, const BufferNode *b, const RangeMap &ranges) const {
        if (storageOf(kernel_, b) != b) return nullptr;
        OwnerMap loads, stores;
        Stmt &synth = chunkStores_[s.get()]; // (kept alive: ownerCache_ knows statements by address)
        if (!synth) synth = chunkStores(s);
        threadOwners(synth, kernel_.threadIdx.get(), kernel_.threads, ranges, ownerCache_, loads, stores);
        auto it = stores.find(b);
        return it == stores.end() ? nullptr : it->second;
    }
    /// landed_: every issue's owners of a destination combined (a destination with one issue of unknown owners
    /// has none).
    void landedOwners(const Stmt &body, const RangeMap &kernelRanges) {
        std::set<const BufferNode *> unknown;
        std::function<void(const Stmt &, RangeMap)> walk = [&](const Stmt &s, RangeMap r) {
            if (!s) return;
            if (auto dsts = asyncIssue(s); !dsts.empty()) {
                Owners o = issueOwners(s, dsts[0], r);
                if (!o) unknown.insert(dsts[0]);
                else landed_[dsts[0]] = landed_.count(dsts[0]) ? combineOwners(landed_[dsts[0]], o) : o;
                return;
            }
            if (auto q = as<Seq>(s)) for (auto &c : q->stmts) walk(c, r);
            else if (auto f = as<For>(s)) addLoopRange(r, *f), walk(f->body, r);
            else if (auto i = as<IfThenElse>(s)) walk(i->then, r), walk(i->otherwise, r);
            else if (auto w = as<While>(s)) walk(w->body, r);
            else if (auto roles = as<WarpRoles>(s)) walk(roles->producer, r), walk(roles->consumer, r);
        };
        walk(body, kernelRanges);
        for (auto *b : unknown) landed_.erase(b);
    }

    /// Whether `s` is the author's named barrier of exactly the threads of the whole-warp branch being rewritten
    /// (`if tx < 256: ... T.sync_threads(3, 256)`, DeepSeek's top-k selector): as CUDA's bar.sync, it orders
    /// what those threads did in the branch (a full barrier before the branch orders what came before).
    bool branchBarrier(const Stmt &s) const {
        auto e = as<Evaluate>(s);
        auto c = e ? as<Call>(e->value) : nullptr;
        if (!c || !lib::is(*c, lib::Fn::NamedSync) || !partialThreads_) return false;
        auto threads = constInt(lib::arg(*c, lib::Fn::NamedSync, "threads"));
        return threads && *threads == partialThreads_;
    }

    /// Whether a barrier is impossible where the statement being rewritten is.
    bool blocked() const { return divergence_ && !partialThreads_; }
    /// A barrier here: __syncthreads, or the branch's named barrier (null when the 16 are used up).
    Stmt barrier(const SourceRange &loc) {
        if (!divergence_) return syncThreads(loc);
        if (!partialId_) {
            while (nextPartialId_ <= 15 && userIds_.count(nextPartialId_)) ++nextPartialId_;
            if (nextPartialId_ > 15) return nullptr;
            partialId_ = nextPartialId_++;
        }
        return lib::stmt(lib::Fn::NamedSync, {intImm(partialId_, DType::Int32), intImm(partialThreads_, DType::Int32)}, loc);
    }

    /// Drops buffers from what an iteration leaves pending for the next one: all global tensors for a
    /// persistent tile loop (its iterations stand for separate blocks, which CUDA does not order either), and
    /// for any loop the global tensors and shared buffers whose elements no two iterations share
    /// (iterationPrivate).
    void dropPrivate(Pending &p, const For &loop) const {
        BufferSet all;
        for (auto *set : {&p.reads, &p.writes, &p.threadReads, &p.threadWrites, &p.atomics}) all.insert(set->begin(), set->end());
        for (auto *b : all) {
            // (a shared alias's base: its iterations' elements are also the alias's, which this does not count)
            bool tensor = tensors_.count(b) > 0, buffer = tensor || (shared_.count(b) && !ir::aliased(kernel_, static_cast<const BufferNode *>(b)));
            if ((tensor && loop.forKind == ForKind::Persistent) ||
                (buffer && iterationPrivate(static_cast<const BufferNode *>(b), loop)))
                p.erase(b);
        }
    }

    /// Do the threads' runs `c * v + rest` (v over the loop's trip count n) lie apart? So when the terms of
    /// rest that differ between threads are multiples of a number no smaller than |c| * n: two threads' values
    /// of rest then differ by at least the length of a run.
    bool apartRuns(const Expr &rest, int64_t c, const For &loop) const {
        auto trips = constInt(loop.extent);
        if (!trips || constInt(loop.min) != std::optional<int64_t>(0)) return false;
        int64_t step = 0; // the gcd of the thread-dependent terms
        for (const Expr &t : addends(rest))
            if (!uniform(t)) step = gcd64(step, knownMultiple(t));
        return step >= std::abs(c) * *trips;
    }

    /// The terms of the sum `e` (e itself where it is no addition).
    static std::vector<Expr> addends(const Expr &e) {
        std::vector<Expr> out, todo{e};
        while (!todo.empty()) {
            Expr t = todo.back();
            todo.pop_back();
            if (auto b = as<Binary>(t); b && b->op == BinaryOp::Add) todo.push_back(b->a), todo.push_back(b->b);
            else out.push_back(t);
        }
        return out;
    }

    /// Do the terms of `rest` that differ between threads or with the body's loop variables (`withBody`: the
    /// kernel's ranges and acc.boundRanges, the same bounds in each iteration) span fewer than |c| values, reading no memory? The other terms are the
    /// same for every thread in every iteration, so iteration v's elements c * v + rest then lie in a run of |c|
    /// of their own, whatever thread touches them: a stage loop over a T.Parallel nest that writes rows
    /// `pid * 64 + stage * 16 + i`, i < 16 (TileKernels' per-channel casts: out and out_sf kept a barrier at every
    /// stage of the unrolled loop where one before it orders the shared tile the stages read).
    bool withinStep(const Expr &rest, int64_t c, const TensorAccesses &acc, const RangeMap &withBody) const {
        if (readsMemory(rest)) return false;
        int64_t span = 0;
        for (const Expr &t : addends(rest)) {
            bool fixed = uniform(t);
            for (auto *v : acc.bound) fixed &= !uses(t, v);
            if (fixed) continue;
            Interval i = boundsOf(t, withBody);
            if (!i.lo || !i.hi) return false;
            span += *i.hi - *i.lo;
        }
        return span < std::abs(c);
    }

    static int countSyncs(const Stmt &s) {
        struct Count : IRVisitor {
            using IRVisitor::visit;
            int n = 0;
            void visit(const Evaluate &op) override {
                auto c = as<Call>(op.value);
                n += c && (lib::is(*c, lib::Fn::Sync) || lib::is(*c, lib::Fn::NamedSync));
            }
        } c;
        c.visit(s);
        return c.n;
    }

    /// The loop with what was pending before it ordered by one barrier before the loop, when its body then
    /// needs fewer barriers than with that state carried in (where one at every iteration would only wait for
    /// what was written before the loop); null otherwise. `body` is the body rewritten the other way.
    Stmt hoistEntryBarrier(const For &f, const Stmt &body, Pending &state) {
        if (divergence_ || (state.reads.empty() && state.writes.empty() && state.atomics.empty()) || countSyncs(body) == 0)
            return nullptr;
        diag_.hold(); // the trial runs repeat what the main run reports
        Pending carried; // what one iteration, from nothing pending, leaves for the next
        (void)run(f.body, carried);
        dropPrivate(carried, f);
        std::set<const VarNode *> vars = loopVars(f.body);
        vars.insert(f.var.get());
        carried.forget(vars);
        Pending after = carried;
        Stmt alone = run(f.body, after);
        (void)diag_.endHold();
        if (countSyncs(alone) >= countSyncs(body)) return nullptr;
        state = after; // the barrier before the loop cleared the rest, even if it runs no iteration
        state.merge(carried);
        state.forget(vars);
        return Seq::make({syncThreads(f.loc), For::make(f.var, f.min, f.extent, f.forKind, f.numStages, alone, f.loc)},
                         f.loc);
    }

    /// Do the iterations of `loop` touch disjoint elements of the global tensor `b`? So when, in one dimension,
    /// every access of the body indexes it by one expression `c * v + rest` (v the loop variable, c != 0, rest
    /// the same in every iteration: no variable of the body, no load) that stays inside the dimension, and
    /// either rest is the same in every thread (iteration v touches only slice c * v + rest) or the threads'
    /// runs c * v + rest lie apart (apartRuns: an element is only ever touched by one thread in one
    /// iteration). Then what one iteration wrote or read
    /// needs no barrier before the next (a loop that only moves registers to its own slice of a tensor, or
    /// to each thread's own piece of a row, runs without).
    bool iterationPrivate(const BufferNode *b, const For &loop) const {
        TensorAccesses acc(b);
        acc.visit(loop.body);
        if (acc.opaque || acc.indices.empty()) return false;
        RangeMap withBody = ranges_; // the indices' bounds over the body's loops too
        for (auto &[v, i] : acc.boundRanges) withBody[v] = i;
        const std::vector<Expr> &first = *acc.indices.front();
        for (size_t d = 0; d < first.size() && first.size() == b->shape.size(); ++d) {
            bool same = true;
            for (auto *ix : acc.indices) same &= ix->size() == first.size() && provablyEqual((*ix)[d], first[d]);
            auto lin = same ? linearIn(first[d], loop.var.get()) : std::nullopt;
            if (!lin || lin->second == 0) continue;
            if (const Expr &rest = lin->first; rest) {
                bool invariant = !readsMemory(rest);
                for (auto *v : acc.bound) invariant &= !uses(rest, v);
                if (!(invariant && (uniform(rest) || apartRuns(rest, lin->second, loop))) &&
                    !withinStep(rest, lin->second, acc, withBody))
                    continue;
            }
            Interval r = boundsOf(first[d], withBody), extent = boundsOf(b->shape[d], ranges_);
            if (r.lo && *r.lo >= 0 && r.hi && extent.lo && *r.hi < *extent.lo) return true;
        }
        return false;
    }
    /// The innermost thread-dependent condition or loop around the statement being rewritten, if any:
    /// there no barrier can be placed and no tile statement can run.
    const StmtNode *divergence_ = nullptr;

    bool uniform(const Expr &e) const { return uniformity_.uniform(e); }

    /// `what` (which says why every thread or a barrier is needed) is impossible here: an error, with a note at
    /// the condition or loop that depends on the thread.
    void divergentError(const SourceRange &loc, const std::string &what) {
        diag_.error(loc, what + ", but it is under a condition that depends on the thread index");
        diag_.note(divergence_->loc, divergence_->kind == NodeKind::For     ? "the loop's bounds depend on the thread index here"
                                     : divergence_->kind == NodeKind::While ? "the loop's condition depends on the thread index here"
                                                                            : "the condition depends on the thread index here");
    }

    /// A statement under thread-dependent control flow: its shared-memory exchanges would need barriers that
    /// only some threads reach, and its tile statements would run on only some threads. Both are errors; the
    /// statement as a whole is then ordered against its neighbours like any other.
    Stmt divergent(const Stmt &s, Pending &state) {
        const StmtNode *saved = divergence_;
        divergence_ = s.get();
        int64_t outerThreads = partialThreads_;
        partialThreads_ = 0; // a nested thread-dependent statement: no barrier of its own threads (branch() below)
        struct Back { int64_t &t; int64_t v; ~Back() { t = v; } } back{partialThreads_, outerThreads};
        Pending inner; // a barrier before the whole statement orders it after what is pending (ordered())
        if (auto f = as<For>(s)) {
            Pending dry = inner;
            (void)run(f->body, dry);
            dry.forget(loopVars(s));
            inner.merge(dry);
            (void)run(f->body, inner);
        } else if (auto w = as<While>(s)) {
            Pending dry = inner;
            (void)run(w->body, dry);
            dry.forget(loopVars(w->body));
            inner.merge(dry);
            (void)run(w->body, inner);
        } else if (auto i = as<IfThenElse>(s)) {
            Pending other = inner;
            bool partial = false;
            auto branch = [&](const Stmt &b, bool negate, Pending &p) {
                if (!b) return b;
                int64_t saveThreads = partialThreads_;
                int saveId = partialId_;
                partialThreads_ = saved || kernel_.producerThreads ? 0
                                                                   : wholeWarpsSatisfying(i->cond, negate, kernel_.threadIdx.get(), kernel_.threads);
                partialId_ = 0;
                Stmt r = run(b, p);
                partial |= partialId_ != 0;
                partialThreads_ = saveThreads, partialId_ = saveId;
                return r;
            };
            Stmt then = branch(i->then, false, inner), otherwise = branch(i->otherwise, true, other);
            divergence_ = saved;
            return ordered(partial ? IfThenElse::make(i->cond, then, otherwise, i->loc) : s, state);
        }
        divergence_ = saved;
        return ordered(s, state);
    }

    /// The accesses of `s` (`tile`: a tile statement is in it); otherwise its global-tensor accesses are per-thread ones.
    /// Every access counts, under tl.disable_thread_storage_sync too: `ordered` decides what it is ordered against.
    Pending accessesOf(const Stmt &s, bool tile) const {
        Accesses acc(layouts_, shareScratch_, kernel_);
        acc.visit(s);
        ownersOf_.insert(s);
        if (auto f = as<For>(s); f && f->forKind == ForKind::Parallel)
            nestOwners(*f, layouts_, ranges_, ownerCache_, acc.p.readOwners, acc.p.writeOwners);
        foldAliasedElements(acc.p, kernel_, s);
        if (tile) {
            acc.p.tileReads = acc.p.reads;
            acc.p.tileWrites = acc.p.writes;
            return acc.p;
        }
        Pending p;
        threadOwners(s, kernel_.threadIdx.get(), kernel_.threads, ranges_, ownerCache_, p.readOwners, p.writeOwners);
        recordSites(s, ranges_, p.readSites, p.writeSites);
        foldAliasedElements(p, kernel_, s);
        for (auto *b : acc.p.reads) (tensors_.count(b) ? p.threadReads : p.reads).insert(b);
        for (auto *b : acc.p.writes) (tensors_.count(b) ? p.threadWrites : p.writes).insert(b);
        p.atomics = acc.p.atomics;
        return p;
    }

    /// `s` as one statement: a barrier before it when it conflicts with what is pending.
    Stmt ordered(const Stmt &s, Pending &state) {
        const bool tile = containsTileStatement(s); // one walk of s for both uses
        Pending mine = accessesOf(s, tile);
        bool author = kernel_.noThreadSync && !tile;
        if (!conflicts(mine, author ? authorView(state) : state, elements_)) {
            state.merge(mine);
            return s;
        }
        Stmt sync = blocked() ? nullptr : barrier(s->loc);
        if (!sync) {
            divergentError(s->loc, "this statement exchanges data through shared memory with an earlier one, which needs a "
                                   "barrier between them that every thread of the block reaches");
            state = mine;
            return s;
        }
        state = mine;
        return Seq::make({sync, s}, s->loc);
    }

    /// The shared memory that an if's condition or a loop's bounds read (at entry) before its body runs: a
    /// barrier first (returned) when it was written since the last one.
    Stmt readsFirst(const std::vector<Expr> &es, Pending &state, const SourceRange &loc) {
        Accesses acc(layouts_, shareScratch_, kernel_);
        for (auto &e : es) acc.visit(e);
        // a condition is per-thread code: under tl.disable_thread_storage_sync ordered against tile statements only
        const BufferSet &written = kernel_.noThreadSync ? state.tileWrites : state.writes;
        bool hazard = intersects(acc.p.reads, written) || intersects(acc.p.reads, state.atomics);
        Stmt sync = hazard && !blocked() ? barrier(loc) : nullptr;
        if (hazard && !sync)
            divergentError(loc, "this reads shared memory written before it, which needs a barrier that every thread of "
                                "the block reaches");
        if (hazard) state.clear();
        state.merge(acc.p);
        return sync;
    }

    Stmt step(const Stmt &s, Pending &state) {
        if (isSync(s)) {
            if (divergence_ && !branchBarrier(s)) divergentError(s->loc, "a barrier must be reached by every thread of the block");
            state.clear();
            return s;
        }
        if (auto dsts = asyncIssue(s); !dsts.empty()) return asyncIssued(s, dsts, state);
        if (const Call *c = callOf(s); c && lib::is(*c, lib::Fn::AsyncLanded)) {
            if (auto l = addressedLoad(lib::arg(*c, lib::Fn::AsyncLanded, "buffer"))) asyncLanded(state, l->buffer.get());
            return Seq::make({}, s->loc);
        }
        if (divergence_)
            if (const char *what = tileStatement(s)) {
                divergentError(s->loc, std::string(what) + " must be run by every thread of the block");
                Accesses acc(layouts_, shareScratch_, kernel_);
                acc.visit(s);
                acc.p.tileReads = acc.p.reads, acc.p.tileWrites = acc.p.writes;
                state.merge(acc.p);
                return s;
            }
        // Warp roles: the producer only issues TMA loads (ordered by mbarriers); the consumers' exchanges through
        // shared memory get barriers among the consumers (code generation makes them named barriers).
        if (auto r = as<WarpRoles>(s)) {
            Stmt consumer = run(r->consumer, state);
            if (consumer == r->consumer) return s;
            return WarpRoles::make(r->consumerThreads, r->producerThreads, r->producerRegs, r->consumerRegs, r->producer,
                                   consumer, r->loc);
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
            Stmt sync = readsFirst({f->min, f->extent}, state, s->loc);
            // The state at the end of one iteration is pending at the start of the next one, unless the loop
            // runs at most once (a T.Pipelined loop over one tile: nothing is carried).
            addLoopRange(ranges_, *f);
            std::set<const VarNode *> vars = loopVars(s); // the next iteration's values differ
            Pending entry = state;
            auto trips = constInt(f->extent);
            const bool once = trips && *trips <= 1;
            if (!once) {
                Pending dry = state;
                (void)run(f->body, dry);
                dropPrivate(dry, *f);
                dry.forget(vars);
                entry.merge(dry);
            }
            Stmt body = run(f->body, entry);
            if (!sync && !once)
                if (Stmt hoisted = hoistEntryBarrier(*f, body, state)) return hoisted;
            state.merge(entry); // the loop may also run zero times
            state.forget(vars);
            Stmt loop = For::make(f->var, f->min, f->extent, f->forKind, f->numStages, body, f->loc);
            return sync ? Seq::make({sync, loop}, s->loc) : loop;
        }
        if (auto w = as<While>(s); w && uniform(w->cond)) {
            // The condition is read before the first iteration and after each one: a barrier before the loop
            // orders it after what is pending, one at the end of the body after what the body left pending.
            Stmt sync = readsFirst({w->cond}, state, s->loc);
            Pending dry = state;
            (void)run(w->body, dry);
            std::set<const VarNode *> vars = loopVars(w->body);
            dry.forget(vars);
            Pending entry = state;
            entry.merge(dry);
            Stmt body = run(w->body, entry);
            Accesses cond(layouts_, shareScratch_, kernel_);
            cond.visit(w->cond);
            if (intersects(cond.p.reads, kernel_.noThreadSync ? entry.tileWrites : entry.writes) ||
                intersects(cond.p.reads, entry.atomics)) {
                Stmt sync = blocked() ? nullptr : barrier(s->loc);
                if (!sync) divergentError(s->loc, "this loop's condition reads shared memory its body writes, which needs a "
                                                  "barrier that every thread of the block reaches");
                body = sync ? Seq::make({body, sync}, s->loc) : body;
                entry.clear();
            }
            state.merge(entry); // the loop may also run zero times
            state.forget(vars);
            state.merge(cond.p);
            Stmt loop = While::make(w->cond, body, w->loc);
            return sync ? Seq::make({sync, loop}, s->loc) : loop;
        }
        if (auto i = as<IfThenElse>(s); i && uniform(i->cond)) {
            Stmt sync = readsFirst({i->cond}, state, s->loc);
            Pending a = state, b = state;
            Stmt then = run(i->then, a);
            Stmt otherwise = i->otherwise ? run(i->otherwise, b) : nullptr;
            a.merge(b);
            state = a;
            Stmt branch = IfThenElse::make(i->cond, then, otherwise, i->loc);
            return sync ? Seq::make({sync, branch}, s->loc) : branch;
        }
        if ((as<For>(s) && !nest) || as<IfThenElse>(s) || as<While>(s)) return divergent(s, state);
        if (nest) checkNest(*as<For>(s), diag_);
        return ordered(s, state);
    }
};

} // namespace

Program insertSyncs(const Program &p, const Target &t, DiagnosticEngine &diag) {
    Program out;
    for (const KernelP &k : p.kernels) {
        Syncer s(*k, layoutsOf(*k), t, diag);
        s.checkRaces();
        Pending state;
        Stmt body = s.run(k->body, state);
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
