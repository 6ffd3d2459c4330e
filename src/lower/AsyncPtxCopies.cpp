/// \file
/// T.ptx_cp_async as an asynchronous cp.async where the issuing thread's own program proves it safe
/// (include/tilec/passes/AsyncPtxCopies.h).
#include "tilec/passes/AsyncPtxCopies.h"

#include "ProgramVectorized.h"
#include "VectorLanes.h"
#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedAliases.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LaneUniformity.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;
using lanes::isZero;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

bool zero(const Expr &e) {
    auto c = as<Cast>(e);
    return isZero(e) || (c && isZero(c->value));
}

const For *copyLoop(const Stmt &s) {
    auto f = as<For>(s);
    return f && f->forKind == ForKind::Unrolled && f->numStages == kPtxCpAsync && isZero(f->min) ? f : nullptr;
}

/// One T.ptx_cp_async of the program as a chunk: `bytes` from src[srcAt] to dst[dstAt], zero-filled where not `valid`.
struct Chunk {
    Buffer dst, src;
    Expr dstAt, srcAt, valid;
    int64_t bytes = 0, lanes = 0;
    const BufferNode *storage = nullptr; ///< the bytes dst names (SharedAliases.h)
    SourceRange loc;
};

/// The chunk of a T.ptx_cp_async statement (its copy loop, or `if p: copy else: zero fill`), or nullopt where the
/// statement is none, or its lanes are not one aligned chunk under one test.
std::optional<Chunk> matchChunk(const Stmt &s, const Kernel &k) {
    const For *f = copyLoop(s), *fill = nullptr;
    Expr pred;
    if (auto i = as<IfThenElse>(s)) {
        f = copyLoop(i->then), fill = i->otherwise ? copyLoop(i->otherwise) : nullptr, pred = i->cond;
        if (!fill) return std::nullopt;
    }
    auto n = f ? constInt(f->extent) : std::nullopt;
    auto st = f ? as<Store>(f->body) : nullptr;
    if (!st || st->indices.size() != 1 || st->buffer->scope != Scope::Shared) return std::nullopt;
    Expr v = st->value, test;
    if (auto sel = as<Select>(v)) {
        if (!zero(sel->f)) return std::nullopt;
        test = sel->cond, v = sel->t;
    }
    auto l = as<Load>(v);
    if (!l || l->indices.size() != 1 || l->buffer->scope != Scope::Global || (test && uses(test, f->var.get())))
        return std::nullopt;
    if (fill) { // the same stores of zeros
        auto z = as<Store>(fill->body);
        if (!z || z->buffer != st->buffer || !zero(z->value) || constInt(fill->extent) != n ||
            !structurallyEqual(substitute(z->indices[0], VarMap{{fill->var.get(), Expr(f->var)}}), st->indices[0]))
            return std::nullopt;
    }
    Chunk c;
    c.lanes = *n, c.bytes = *n * st->buffer->dtype.bytes(), c.dst = st->buffer, c.src = l->buffer, c.loc = s->loc;
    if (c.bytes != 4 && c.bytes != 8 && c.bytes != 16) return std::nullopt;
    c.dstAt = lanes::alignedBase(st->indices[0], f->var.get(), *n);
    c.srcAt = lanes::alignedBase(l->indices[0], f->var.get(), *n);
    if (!c.dstAt || !c.srcAt || uses(c.dstAt, f->var.get()) || uses(c.srcAt, f->var.get())) return std::nullopt;
    c.valid = pred && test ? binary(BinaryOp::And, pred, test) : pred ? pred : test ? test : boolImm(true);
    c.storage = storageOf(k, c.dst.get());
    return c;
}

/// The storages of the buffers a statement's own expressions load and store (not those of the statements inside it).
struct Touched : IRVisitor {
    using IRVisitor::visit;
    const Kernel &k;
    std::set<const BufferNode *> loaded, stored;
    explicit Touched(const Kernel &k) : k(k) {}
    void visit(const Load &op) override {
        loaded.insert(storageOf(k, op.buffer.get()));
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        stored.insert(storageOf(k, op.buffer.get()));
        IRVisitor::visit(op);
    }
    void visit(const AtomicAdd &op) override {
        stored.insert(storageOf(k, op.dst.buffer.get()));
        IRVisitor::visit(op);
    }
};

/// The copies that may be in flight in a thread: issued since its last arrival (uncommitted), and the committed
/// groups, the most recent first (the last one: that depth or deeper).
struct Flight {
    static constexpr size_t kDepth = 4;
    std::set<size_t> open;
    std::vector<std::set<size_t>> groups;
    std::set<std::string> arrived; ///< the mbarriers the thread arrived on since its role's last barrier
    bool empty() const {
        return open.empty() && std::all_of(groups.begin(), groups.end(), [](auto &g) { return g.empty(); });
    }
    bool operator==(const Flight &o) const { return open == o.open && groups == o.groups && arrived == o.arrived; }
    void join(const Flight &o) {
        open.insert(o.open.begin(), o.open.end());
        arrived.insert(o.arrived.begin(), o.arrived.end());
        if (groups.size() < o.groups.size()) groups.resize(o.groups.size());
        for (size_t d = 0; d < o.groups.size(); ++d) groups[d].insert(o.groups[d].begin(), o.groups[d].end());
    }
    void commit() {
        groups.insert(groups.begin(), std::move(open));
        open.clear();
        if (groups.size() > kDepth) {
            groups[kDepth - 1].insert(groups[kDepth].begin(), groups[kDepth].end());
            groups.resize(kDepth);
        }
    }
};

bool markedArrival(const Stmt &s) {
    const Call *c = callOf(s);
    const Expr *n = c && lib::is(*c, lib::Fn::MbarrierArriveEach) ? lib::optionalArg(*c, lib::Fn::MbarrierArriveEach, "noinc") : nullptr;
    return n && constInt(*n) == std::optional<int64_t>(1);
}

/// The statements directly inside `s`.
std::vector<Stmt> children(const Stmt &s) {
    if (auto q = as<Seq>(s)) return q->stmts;
    if (auto i = as<IfThenElse>(s)) return {i->then, i->otherwise};
    if (auto f = as<For>(s)) return {f->body};
    if (auto w = as<While>(s)) return {w->body};
    if (auto r = as<WarpRoles>(s)) return {r->producer, r->consumer};
    return {};
}

bool contains(const Stmt &s, const StmtNode *target) {
    if (!s) return false;
    if (s.get() == target) return true;
    for (auto &c : children(s))
        if (contains(c, target)) return true;
    return false;
}

bool hasArrival(const Stmt &s) {
    if (!s) return false;
    if (markedArrival(s)) return true;
    for (auto &c : children(s))
        if (hasArrival(c)) return true;
    return false;
}

/// Whether every run of loop body `s` makes a marked arrival (one outside branches and inner loops).
bool arrivesEveryTime(const Stmt &s) {
    for (auto &i : Seq::items(s))
        if (markedArrival(i) || (as<Seq>(i) && arrivesEveryTime(i))) return true;
    return false;
}

/// The proof (the header's rules), walking the kernel in program order.
class Proof {
  public:
    const Kernel &k;
    std::vector<Chunk> chunks;
    std::map<const StmtNode *, size_t> chunkOf;
    std::map<const StmtNode *, int64_t> waitBefore; ///< blocks of copies that first wait until at most N groups fly
    std::string why;
    SourceRange whyAt;

    explicit Proof(const Kernel &k) : k(k), lanes_(laneUniformity(k)) {}

    void fail(const std::string &msg, const SourceRange &at) {
        if (why.empty()) why = msg, whyAt = at;
    }

    Flight walk(const Stmt &s, Flight f) {
        if (!s) return f;
        if (auto it = chunkOf.find(s.get()); it != chunkOf.end()) return copy(it->second, f);
        if (auto q = as<Seq>(s)) {
            for (auto &c : q->stmts) f = block(c, f);
            return f;
        }
        if (auto i = as<IfThenElse>(s)) {
            own(i->cond, f, s->loc);
            Scope in(*this);
            // a warp group's test is alike in all of a warp group's threads: a role's threads take one branch
            const bool group = lib::is(i->cond, lib::Fn::WarpGroup), same = group || uniform(i->cond);
            if (group) role_ = Role{print(i->cond), 128};
            uniform_ = in.uniform && same;
            Flight t = block(i->then, f);
            role_ = in.role, uniform_ = in.uniform && same;
            t.join(block(i->otherwise, f));
            return t;
        }
        if (auto l = as<For>(s)) return loop(s, l->body, {l->min, l->extent}, f);
        if (auto w = as<While>(s)) return loop(s, w->body, {w->cond}, f);
        if (auto r = as<WarpRoles>(s)) {
            Scope in(*this);
            role_ = Role{"producer", r->producerThreads};
            Flight p = role(r->producer, f);
            role_ = in.role, uniform_ = in.uniform;
            p.join(role(r->consumer, f));
            return p;
        }
        return leaf(s, f);
    }

    /// The role barrier's part of the proof (a barrier of the copying role's threads while copies may be in
    /// flight, as seesaw's producer has around its row flags): any thread of the role that passes it and then
    /// arrives on X passes it before its own arrival on X in the same phase, so X's phase still waits for every
    /// copy that precedes the barrier. That holds where every thread of the role makes the same arrivals and
    /// barriers (none under a thread- or data-dependent test or loop), X expects exactly the role's threads and
    /// only their marked arrivals, and a thread passes a role barrier between any two of its arrivals on X (no
    /// thread arrives twice in one phase). Checked once the walk is done.
    void checkRoleBarriers() {
        if (!roleBarrier_) return;
        const SourceRange at = roleBarrierAt_;
        if (ragged_) return fail("a barrier of the role's threads follows a copy in flight, and not every thread of the role makes the same arrivals and barriers", at);
        if (twice_) return fail("a barrier of the role's threads follows a copy in flight, and a thread may arrive twice on one mbarrier between two such barriers", at);
        std::map<std::string, int64_t> counts;
        std::map<const BufferNode *, int> others;
        scanBarriers(k.body, counts, others);
        for (auto &[bar, role] : arrivalRole_) {
            auto c = counts.find(bar);
            const BufferNode *b = arrivalBuffer_[bar];
            if (role.threads <= 0 || c == counts.end() || c->second != role.threads || !b || others[b] > 0)
                return fail("a barrier of the role's threads follows a copy in flight, and " + bar +
                                " does not expect exactly the role's " + std::to_string(role.threads) + " marked arrivals",
                            at);
        }
    }

  private:
    struct Role {
        std::string key; ///< its warp group's test, or "producer"
        int threads = 0;
        bool operator!=(const Role &o) const { return key != o.key; }
    };
    std::vector<Stmt> loops_; ///< the loops around the statement walked, outermost first
    bool inBlock_ = false;
    std::optional<Role> role_;     ///< the role whose code is walked (a warp group's branch, the producer)
    bool uniform_ = true;          ///< every thread of the role runs the statement walked
    bool roleBarrier_ = false, ragged_ = false, twice_ = false;
    SourceRange roleBarrierAt_;
    std::map<std::string, Role> arrivalRole_; ///< per mbarrier, the role whose marked arrivals it counts
    std::map<std::string, const BufferNode *> arrivalBuffer_; ///< its buffer, where its element is a constant
    struct Scope {
        Proof &p;
        std::optional<Role> role;
        bool uniform;
        explicit Scope(Proof &p) : p(p), role(p.role_), uniform(p.uniform_) {}
        ~Scope() { p.role_ = role, p.uniform_ = uniform; }
    };

    const LaneUniformity lanes_;
    /// Whether every thread evaluates `e` alike: the same in the block, and no load or call (a role may read
    /// flags that another role or block writes while it polls them).
    bool uniform(const Expr &e) const { return lanes_.sameInBlock(e) && !readsMemory(e) && !callsAnything(e); }

    /// Per mbarrier (printed address): its expected arrivals; per buffer of mbarriers, the statements other than
    /// marked arrivals, waits and initialisations that name any of its elements (arrivals, TMA loads completing on it).
    static void scanBarriers(const Stmt &s, std::map<std::string, int64_t> &counts, std::map<const BufferNode *, int> &others) {
        if (!s) return;
        if (const Call *c = callOf(s)) {
            if (lib::is(*c, lib::Fn::MbarrierInit)) {
                auto n = constInt(lib::arg(*c, lib::Fn::MbarrierInit, "arrivals"));
                counts[print(lib::arg(*c, lib::Fn::MbarrierInit, "bar"))] = n ? *n : -1;
            } else if (!markedArrival(s) && !lib::is(*c, lib::Fn::MbarrierWait)) {
                for (auto &a : c->args)
                    if (const Load *l = addressedLoad(a)) others[l->buffer.get()]++;
            }
        }
        for (auto &c : children(s)) scanBarriers(c, counts, others);
    }

    /// A statement of a sequence or branch: where it holds copies and no arrival (a block that fills buffers), it
    /// first waits for the groups that last wrote those buffers.
    Flight block(const Stmt &s, Flight f) {
        if (!s || inBlock_ || hasArrival(s)) return walk(s, f);
        std::set<const BufferNode *> fills;
        for (auto &[st, c] : chunkOf)
            if (contains(s, st)) fills.insert(chunks[c].storage);
        if (fills.empty()) return walk(s, f);
        for (size_t d = 0; d < f.groups.size(); ++d)
            if (std::any_of(f.groups[d].begin(), f.groups[d].end(), [&](size_t c) { return fills.count(chunks[c].storage); })) {
                auto [it, fresh] = waitBefore.insert({s.get(), (int64_t)d});
                if (!fresh) it->second = std::min(it->second, (int64_t)d);
                f.groups.resize(d);
                break;
            }
        inBlock_ = true;
        f = walk(s, f);
        inBlock_ = false;
        return f;
    }

    Flight role(const Stmt &body, const Flight &f) {
        Flight out = walk(body, f);
        // a role body with copies ends waiting for them all (asyncPtxCopies appends it)
        for (auto &[st, c] : chunkOf)
            if (contains(body, st)) return Flight{};
        return out;
    }

    Flight loop(const Stmt &s, const Stmt &body, std::vector<Expr> heads, Flight f) {
        for (auto &h : heads) own(h, f, s->loc);
        Scope in(*this);
        for (auto &h : heads) uniform_ = uniform_ && as<For>(s) && uniform(h);
        loops_.push_back(s);
        Flight cur = f;
        for (int round = 0;; ++round) {
            Flight next = f;
            next.join(block(body, cur));
            if (next == cur) break;
            if (round == 64) {
                fail("the copies in flight around a loop do not settle", s->loc);
                break;
            }
            cur = next;
        }
        // a loop known to run: it ends after one of its runs (the walk from the fixed point covers them all)
        auto l = as<For>(s);
        auto trips = l ? constInt(l->extent) : std::nullopt;
        if (trips && *trips >= 1 && isZero(l->min)) cur = block(body, cur);
        loops_.pop_back();
        return cur;
    }

    std::set<const BufferNode *> storages(const Flight &f, bool sources) const {
        std::set<const BufferNode *> out;
        auto add = [&](const std::set<size_t> &cs) {
            for (size_t c : cs) out.insert(sources ? chunks[c].src.get() : chunks[c].storage);
        };
        add(f.open);
        for (auto &g : f.groups) add(g);
        return out;
    }

    /// A statement's own expressions: no load of a destination, no store into one or into a source, in flight.
    void own(const Expr &e, const Flight &f, const SourceRange &at) { check(Evaluate::make(e, at), f, at, false); }
    void check(const Stmt &s, const Flight &f, const SourceRange &at, bool statement) {
        if (f.empty()) return;
        Touched t(k);
        if (statement) t.visit(s);
        else t.visit(as<Evaluate>(s)->value);
        auto dsts = storages(f, false), srcs = storages(f, true);
        for (auto *b : t.loaded)
            if (dsts.count(b)) fail("the thread reads '" + b->name + "' while its T.ptx_cp_async into it may be in flight", at);
        for (auto *b : t.stored)
            if (dsts.count(b) || srcs.count(b))
                fail("the thread writes '" + b->name + "' while a T.ptx_cp_async of it may be in flight", at);
    }

    Flight copy(size_t id, Flight f) {
        const Chunk &c = chunks[id];
        own(c.srcAt, f, c.loc), own(c.dstAt, f, c.loc), own(c.valid, f, c.loc);
        for (size_t o : f.open) {
            if (chunks[o].storage != c.storage) continue;
            if (o != id) fail("two T.ptx_cp_async into '" + c.dst->name + "' with no arrival between them", c.loc);
            else if (!distinctChunks(c)) fail("the T.ptx_cp_async into '" + c.dst->name + "' may copy one chunk twice before an arrival", c.loc);
        }
        for (auto &g : f.groups)
            for (size_t o : g)
                if (chunks[o].storage == c.storage) fail("a T.ptx_cp_async into '" + c.dst->name + "' whose earlier copies into it may be in flight", c.loc);
        f.open.insert(id);
        return f;
    }

    /// Whether the copy's runs of the loops around it that make no arrival every time write distinct chunks: its
    /// destination linear in their variables, each stride past the chunk and the span of the smaller ones.
    bool distinctChunks(const Chunk &c) {
        if (readsMemory(c.dstAt)) return false; // a register's value may differ between the runs
        std::vector<std::pair<int64_t, int64_t>> strides; // (|stride|, extent)
        for (auto it = loops_.rbegin(); it != loops_.rend(); ++it) {
            const For *l = as<For>(*it);
            const Stmt &body = l ? l->body : as<While>(*it)->body;
            if (arrivesEveryTime(body)) break;
            if (!l) return false;
            auto ext = constInt(l->extent);
            auto lin = linearIn(c.dstAt, l->var.get());
            if (!ext || !lin) return false;
            if (*ext > 1) strides.push_back({std::abs(lin->second), *ext});
        }
        std::sort(strides.begin(), strides.end());
        int64_t span = c.lanes;
        for (auto [stride, ext] : strides) {
            if (stride < span) return false;
            span = stride * (ext - 1) + span;
        }
        return true;
    }

    Flight leaf(const Stmt &s, Flight f) {
        if (markedArrival(s)) {
            check(s, f, s->loc, true);
            f.commit();
            const Expr &at = lib::arg(*callOf(s), lib::Fn::MbarrierArriveEach, "bar");
            std::string bar = print(at);
            const Load *l = addressedLoad(at);
            arrivalBuffer_[bar] = l && std::all_of(l->indices.begin(), l->indices.end(), [](auto &i) { return constInt(i).has_value(); })
                                      ? l->buffer.get() : nullptr;
            twice_ |= !f.arrived.insert(bar).second;
            ragged_ |= !uniform_ || !role_;
            auto [it, fresh] = arrivalRole_.insert({bar, role_ ? *role_ : Role{}});
            if (!fresh && it->second != (role_ ? *role_ : Role{})) it->second.threads = 0; // two roles arrive
            return f;
        }
        check(s, f, s->loc, true);
        if (isCall(s, lib::Fn::Sync) && role_) { // a barrier of the role's threads
            ragged_ |= !uniform_;
            if (uniform_) f.arrived.clear();
            if (!f.empty() && uniform_) {
                if (!roleBarrier_) roleBarrierAt_ = s->loc;
                roleBarrier_ = true;
                return f;
            }
        }
        if (f.empty()) return f;
        using F = lib::Fn;
        if (as<AtomicAdd>(s)) fail("an atomic addition follows a T.ptx_cp_async that may be in flight", s->loc);
        if (!as<Store>(s) && !as<Evaluate>(s)) fail("a tile statement follows a T.ptx_cp_async that may be in flight", s->loc);
        const Call *c = callOf(s);
        if (!c) return f;
        const lib::Info *info = lib::find(c->name);
        if (!info) {
            fail("a call of '" + c->name + "' follows a T.ptx_cp_async that may be in flight", s->loc);
            return f;
        }
        switch (info->fn) {
        case F::MbarrierWait: case F::FenceProxyAsync: case F::MbarrierExpectTx: return f;
        case F::CpAsyncCommit: case F::CpAsyncWait: case F::CpAsyncChunk: case F::CpAsyncCopy: case F::CopyG2S:
        case F::CopyG2SWait: case F::CpAsyncArrive:
            fail("other cp.async copies meet T.ptx_cp_async copies in flight", s->loc);
            return f;
        default:
            if (info->effects & (lib::kBarrier | lib::kAsync) || info->fn == F::MbarrierArrive || info->fn == F::MbarrierArriveEach ||
                info->fn == F::MbarrierArriveExpectTx || info->fn == F::MbarrierArriveCluster || info->fn == F::NamedArrive ||
                info->fn == F::SyncWarp || info->fn == F::ThreadReturn)
                fail(std::string(info->name) + " follows a T.ptx_cp_async that may be in flight: only its "
                                               "T.cp_async_barrier_noinc may publish what the thread did",
                     s->loc);
            return f;
        }
    }
};

/// The kernel rewritten: chunks as cp.async, marked arrivals as `commit; cp.async.mbarrier.arrive; arrive` (async)
/// or plain arrivals, role bodies with copies ending in `commit; wait 0`.
class Rewrite {
  public:
    const Proof &proof;
    bool async;
    Stmt run(const Stmt &s) {
        if (!s) return s;
        if (auto it = proof.chunkOf.find(s.get()); async && it != proof.chunkOf.end()) {
            const Chunk &c = proof.chunks[it->second];
            Stmt call = lib::stmt(lib::Fn::CpAsyncChunk, {i32(c.bytes), lib::call(lib::Fn::AddressOf, {Load::make(c.dst, {c.dstAt})}, c.loc),
                                                         lib::call(lib::Fn::AddressOf, {Load::make(c.src, {c.srcAt})}, c.loc), c.valid},
                                  c.loc);
            return withWait(s, call);
        }
        Stmt out = s;
        if (auto q = as<Seq>(s)) {
            std::vector<Stmt> items;
            bool same = true;
            for (auto &i : q->stmts) items.push_back(run(i)), same &= items.back() == i;
            if (!same) out = Seq::make(std::move(items), s->loc);
        } else if (auto i = as<IfThenElse>(s)) {
            Stmt t = run(i->then), e = run(i->otherwise);
            if (t != i->then || e != i->otherwise) out = IfThenElse::make(i->cond, t, e, s->loc);
        } else if (auto f = as<For>(s)) {
            Stmt b = run(f->body);
            if (b != f->body) out = For::make(f->var, f->min, f->extent, f->forKind, f->numStages, b, s->loc);
        } else if (auto w = as<While>(s)) {
            Stmt b = run(w->body);
            if (b != w->body) out = While::make(w->cond, b, s->loc);
        } else if (auto r = as<WarpRoles>(s)) {
            Stmt p = ended(r->producer), c = ended(r->consumer);
            if (p != r->producer || c != r->consumer)
                out = WarpRoles::make(r->consumerThreads, r->producerThreads, r->producerRegs, r->consumerRegs, p, c, s->loc);
        } else if (markedArrival(s)) {
            Expr bar = lib::arg(*callOf(s), lib::Fn::MbarrierArriveEach, "bar");
            Stmt plain = lib::stmt(lib::Fn::MbarrierArriveEach, {bar}, s->loc);
            out = !async ? plain
                         : Seq::make({lib::stmt(lib::Fn::CpAsyncCommit, {}, s->loc), lib::stmt(lib::Fn::CpAsyncArrive, {bar}, s->loc), plain},
                                     s->loc);
        }
        return withWait(s, out);
    }

    /// A role body with copies, ending in a wait for them all.
    Stmt ended(const Stmt &body) {
        Stmt b = run(body);
        if (!async || b == body) return b;
        bool copies = false;
        for (auto &[st, c] : proof.chunkOf) copies |= contains(body, st);
        return copies ? Seq::make({b, completion(body->loc)}, body->loc) : b;
    }

    static Stmt completion(const SourceRange &at) {
        return Seq::make({lib::stmt(lib::Fn::CpAsyncCommit, {}, at), lib::stmt(lib::Fn::CpAsyncWait, {i32(0)}, at)}, at);
    }

  private:
    Stmt withWait(const Stmt &orig, const Stmt &s) const {
        auto it = proof.waitBefore.find(orig.get());
        if (!async || it == proof.waitBefore.end()) return s;
        return Seq::make({lib::stmt(lib::Fn::CpAsyncWait, {i32(it->second)}, orig->loc), s}, orig->loc);
    }
};

/// Every T.ptx_cp_async statement of `s` into `p`'s chunks; those whose lanes are no chunk into `unmatched`.
void collect(const Stmt &s, Proof &p, std::vector<SourceRange> &unmatched) {
    if (!s) return;
    auto i = as<IfThenElse>(s);
    if (copyLoop(s) || (i && copyLoop(i->then) && i->otherwise && copyLoop(i->otherwise))) {
        if (auto c = matchChunk(s, p.k)) {
            p.chunkOf[s.get()] = p.chunks.size();
            p.chunks.push_back(*c);
        } else {
            unmatched.push_back(s->loc);
        }
        return;
    }
    for (auto &c : children(s)) collect(c, p, unmatched);
}

} // namespace

Program asyncPtxCopies(const Program &p, const SourceManager *sources) {
    Program out;
    for (auto &k : p.kernels) {
        bool marked = false;
        struct V : IRVisitor {
            using IRVisitor::visit;
            bool *marked;
            void visit(const For &op) override { *marked |= op.numStages == kPtxCpAsync, IRVisitor::visit(op); }
            void visit(const Evaluate &op) override { *marked |= markedArrival(Evaluate::make(op.value)); }
        } v;
        v.marked = &marked;
        v.visit(k->body);
        if (!marked) {
            out.kernels.push_back(k);
            continue;
        }
        Proof proof(*k);
        std::vector<SourceRange> unmatched;
        collect(k->body, proof, unmatched);
        if (!unmatched.empty())
            proof.fail("a T.ptx_cp_async whose lanes are no aligned 4-, 8- or 16-byte chunk under one test", unmatched[0]);
        Flight end = proof.walk(k->body, Flight{});
        proof.checkRoleBarriers();
        const bool async = proof.why.empty() && !proof.chunks.empty();
        Rewrite rw{proof, async};
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = rw.run(k->body);
        if (async && !end.empty()) nk->body = Seq::make({nk->body, Rewrite::completion(k->launchLoc)}, k->launchLoc);
        if (async)
            remark(sources, k->launchLoc, "kernel '" + k->name + "': " + std::to_string(proof.chunks.size()) +
                                              " T.ptx_cp_async as cp.async, completed at their T.cp_async_barrier_noinc");
        else if (!proof.chunks.empty() || !unmatched.empty())
            remark(sources, proof.whyAt, "kernel '" + k->name + "': T.ptx_cp_async synchronous: " + proof.why);
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
