/// \file
/// Explicit warp roles onto WarpRoles (include/tilec/passes/LowerWarpRoles.h).
#include "tilec/passes/LowerWarpRoles.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/HopperOperands.h"
#include "tilec/passes/Staging.h"
#include "tilec/passes/WgmmaGroups.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

constexpr int kGroup = 128;   // threads of a warp group
constexpr int kMaxGroups = 4; // warp groups explicit roles may have

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// The marker call of `with T.ws(g)` / T.tma_copy: an IfThenElse whose condition is a call of f.
const Call *markerOf(const Stmt &s, lib::Fn f) {
    auto i = as<IfThenElse>(s);
    return i && lib::is(i->cond, f) ? as<Call>(i->cond) : nullptr;
}
bool isBarrierOp(const Stmt &s) { return isCall(s, lib::Fn::MbarrierWait) || isCall(s, lib::Fn::MbarrierArriveEach); }
/// T.set_max_nreg's setmaxnreg: the warp group's register count, which makes no group more than a loader
/// (keepMaxNreg decides whether it stays).
bool registerCount(const Stmt &s) { return isCall(s, lib::Fn::MaxNregInc) || isCall(s, lib::Fn::MaxNregDec); }
/// Before the roles: what every warp group runs itself (a wait, an arrival) or one thread for all (a T.tma_copy).
bool everyGroup(const Stmt &s) { return isBarrierOp(s) || markerOf(s, lib::Fn::TmaCopyOn); }

/// Whether the kernel uses any of the explicit constructs.
bool usesExplicitRoles(const Stmt &body) {
    return callsAny(body, {lib::Fn::WarpGroup, lib::Fn::TmaCopyOn, lib::Fn::MbarrierInit, lib::Fn::MbarrierWait,
                           lib::Fn::MbarrierArriveEach});
}

/// Where `s` first reads `v`: the innermost statement, or the loop or `if` whose bounds or condition do.
std::optional<SourceRange> firstUse(const Stmt &s, const VarNode *v) {
    if (!s || !uses(s, v)) return std::nullopt;
    if (auto q = as<Seq>(s)) {
        for (auto &c : q->stmts)
            if (auto at = firstUse(c, v)) return at;
    } else if (auto f = as<For>(s); f && !uses(f->min, v) && !uses(f->extent, v)) {
        return firstUse(f->body, v);
    } else if (auto i = as<IfThenElse>(s); i && !uses(i->cond, v)) {
        if (auto at = firstUse(i->then, v)) return at;
        return firstUse(i->otherwise, v);
    }
    return s->loc;
}

/// Whether `s` assigns a T.alloc_var / T.alloc_local element (each thread's own register) from what every
/// thread can read (no fragment): code any role may run.
bool registerStore(const Stmt &s) {
    auto st = as<Store>(s);
    if (!st || (st->buffer->scope != Scope::Var && st->buffer->scope != Scope::Local)) return false;
    for (auto *b : mentionedBuffers(s, nullptr))
        if (b->scope == Scope::Fragment) return false;
    return true;
}

/// Whether `s` is one thread's store (T.ptx_cp_async's, or an assignment outside T.Parallel nests) into memory
/// that is not a fragment, reading no fragment: what a producer may run with its own thread index.
bool threadStore(const Stmt &s) {
    auto st = as<Store>(s);
    if (!st) return false;
    for (auto *b : mentionedBuffers(s, nullptr))
        if (b->scope == Scope::Fragment) return false;
    return true;
}

/// The first statement of `s` outside T.Parallel nests whose effect counts the threads that run it (an atomic
/// update, a call: an arrival, a shuffle, a print), or null.
const StmtNode *perThreadEffect(const Stmt &s) {
    if (!s) return nullptr;
    if (auto q = as<Seq>(s)) {
        for (auto &c : q->stmts)
            if (auto *b = perThreadEffect(c)) return b;
        return nullptr;
    }
    if (auto f = as<For>(s)) return f->forKind == ForKind::Parallel ? nullptr : perThreadEffect(f->body);
    if (auto i = as<IfThenElse>(s)) {
        auto *b = perThreadEffect(i->then);
        return b ? b : perThreadEffect(i->otherwise);
    }
    return as<AtomicAdd>(s) || as<Evaluate>(s) || as<While>(s) ? s.get() : nullptr;
}

/// What one warp group's blocks hold.
struct Role {
    bool used = false;
    const StmtNode *firstTma = nullptr;   ///< a T.tma_copy
    const StmtNode *firstOther = nullptr; ///< a statement other than T.tma_copy, barrier operations and thread stores
};

class Lowerer {
  public:
    Lowerer(const Kernel &k, const Target &t, DiagnosticEngine &diag) : k_(k), t_(t), diag_(diag) {}

    std::shared_ptr<Kernel> run() {
        SourceRange at = k_.launchLoc;
        if (!t_.hasWgmma())
            return fail(at, "explicit warp roles (T.ws, T.alloc_barrier, T.tma_copy) need TMA and wgmma, a Hopper target "
                            "(sm_90a); they are not supported for " + t_.name);
        std::vector<Stmt> top;
        if (auto q = as<Seq>(k_.body)) top = q->stmts;
        else top = {k_.body};
        std::vector<Stmt> inits, prologue, roles;
        for (auto &s : top) {
            if (isCall(s, lib::Fn::MbarrierInit)) inits.push_back(s);
            else if (roles.empty() && (!usesExplicitRoles(s) || everyGroup(s))) prologue.push_back(s); // what all groups run first
            else if (roles.empty() && !callsAny(s, {lib::Fn::WarpGroup}))
                return fail(s->loc, "before the warp roles, mbarrier operations and T.tma_copy inside a loop or branch "
                                    "that every warp group runs are not supported (tilec runs such code in the "
                                    "consumer only); write them outside it, or put them in a role");
            else check(s, -1), roles.push_back(s);
        }
        for (auto &s : prologue)
            if (!registerStore(s) && k_.threadIdx && uses(s, k_.threadIdx.get()))
                return fail(firstUse(s, k_.threadIdx.get()).value_or(s->loc),
                            "before the warp roles, code that every warp group runs reads the thread index here: tilec "
                            "runs that code over the consumer's threads only, so its threads would see other values; "
                            "read it inside a role");
        if (!ok_) return nullptr;
        int used = 0;
        for (auto &r : roles_) used += r.used;
        const int groups = k_.threads / kGroup;
        if (k_.threads % kGroup || groups < 2 || groups > kMaxGroups || used != groups)
            return fail(at, "explicit warp roles are supported for 2 to " + std::to_string(kMaxGroups) + " warp groups of " +
                                std::to_string(kGroup) + " threads, each with blocks whose tile statements are laid out "
                                "over its own 128 threads (threads=256 and blocks for "
                                "T.ws(0) and T.ws(1), threads=384 and T.ws(0) to T.ws(2), ...); this kernel has " +
                                std::to_string(k_.threads) + " threads and " + std::to_string(used) + " warp group(s) with blocks");
        if (inits.empty()) return fail(at, "a kernel with T.ws roles synchronises them through T.alloc_barrier mbarriers; it has none");
        chooseProducer(groups);
        for (int g = 0; g < groups; ++g)
            if (g != producer_) consumers_.push_back(g);

        auto nk = std::make_shared<Kernel>(k_);
        const Stmt body = Seq::make(roles, k_.body->loc);
        const int nc = (int)consumers_.size();
        Stmt produced = producer_ >= 0 ? restrict(body, producer_, true) : nullptr;
        std::vector<Stmt> consumed;
        for (int c = 0; c < nc; ++c) consumed.push_back(restrict(body, consumers_[c], c > 0));
        if (!prologue.empty()) handOver(prologue, *nk, inits, produced, consumed);
        // The thread index is threadIdx.x as the user launched it: consumer c runs on threads 128 c .. 128 c + 127
        // of the lowered kernel (consumer 0: the kernel's own; a later one reads the index within its warp group,
        // see consumerGroups) and the producer on the last 128 (tilec.role_thread, whose range the analyses know),
        // each role's reads shifted back to its own warp group's.
        if (k_.threadIdx) {
            Expr launched = lib::call(lib::Fn::RoleThread, {i32(kGroup * nc), i32(kGroup)}, k_.launchLoc, DType::Int32);
            if (producer_ >= 0) produced = asLaunched(produced, launched, producer_ - nc);
            for (int c = 0; c < nc; ++c) consumed[c] = asLaunched(consumed[c], k_.threadIdx, consumers_[c]);
        }
        if (nc > 1) checkOwnFragments(consumed);
        if (!ok_) return nullptr;
        generic_ = genericAccesses(consumed);
        Stmt producer = producer_ >= 0 ? lowerProducer(produced, *nk) : Seq::make({}, k_.launchLoc);
        if (!ok_) return nullptr;
        for (auto &c : consumed) c = tmaLoads(c, binary(BinaryOp::EQ, k_.threadIdx, i32(0)), *nk); // the group's first thread
        if (!ok_) return nullptr;
        needs_ = wgmmaNeeds(consumed, byBuffer_);
        for (auto &c : consumed) c = lowerConsumer(c);
        if (!ok_) return nullptr;
        Stmt consumer = consumerGroups(consumed);
        for (auto &b : nk->allocs)
            if (b && rings_.count(b.get())) b = rings_[b.get()];
        const SourceRange &loc = k_.launchLoc;
        inits.push_back(lib::stmt(lib::Fn::MbarrierInitFence, {}, loc));
        Expr tx = k_.threadIdx;
        nk->body = Seq::make({IfThenElse::make(binary(BinaryOp::EQ, tx, i32(0)), Seq::make(std::move(inits), loc), nullptr, loc),
                              lib::stmt(lib::Fn::Sync, {}, loc),
                              WarpRoles::make(kGroup * nc, producer_ >= 0 ? kGroup : 0, 0, 0, producer, consumer, loc)},
                             k_.body->loc);
        // Tile statements are laid out over one consumer warp group's threads; the others are launched beside.
        nk->threads = kGroup;
        nk->producerThreads = kGroup * (groups - 1);
        nk->minBlocksPerSM = 1;
        nk->persistent = false;
        nk->needsTma = !tiles_.empty();
        recordPanelOperands(*nk);
        return nk;
    }

  private:
    const Kernel &k_;
    const Target &t_;
    DiagnosticEngine &diag_;
    bool ok_ = true;
    Role roles_[kMaxGroups];
    int producer_ = -1;                                  ///< the warp group that only loads, or -1
    std::vector<int> consumers_;                         ///< the other warp groups, in order: lowered at 128 c..
    std::deque<TmaTile> tiles_;                          ///< by the buffer the consumer's T.gemm names
    std::map<const BufferNode *, const TmaTile *> byBuffer_;
    std::vector<Stmt> proxies_;                          ///< the 2-D copies the tiles were planned on
    std::map<const BufferNode *, Buffer> rings_;         ///< 2-D TMA destinations become rings of one stage
    WgmmaNeeds needs_;                                   ///< the consumers' products that run on wgmma
    std::set<const BufferNode *> generic_;               ///< what the consumers access through the generic proxy

    std::nullptr_t fail(const SourceRange &at, const std::string &msg) {
        diag_.error(at, msg);
        ok_ = false;
        return nullptr;
    }

    /// The producer: a warp group whose blocks only load (T.tma_copy, one thread's stores) and operate on
    /// mbarriers, laid out as one thread's code: the one such group that issues T.tma_copy, or else the one such
    /// group. Without it there is none: every group is lowered as written over its own 128 threads, a T.tma_copy
    /// issued by the first thread of the group that contains it (FlashMLA: each of two groups loads half of the
    /// tiles for both and computes on all of them).
    void chooseProducer(int groups) {
        std::vector<int> loaders, tma;
        for (int g = 0; g < groups; ++g)
            if (!roles_[g].firstOther) (roles_[g].firstTma ? tma : loaders).push_back(g);
        producer_ = tma.size() == 1 ? tma[0] : tma.empty() && loaders.size() == 1 ? loaders[0] : -1;
    }

    /// Checks the structure: `group` is the enclosing T.ws block's warp group, -1 outside every block.
    void check(const Stmt &s, int group) {
        if (!s || !ok_) return;
        if (auto m = markerOf(s, lib::Fn::WarpGroup)) {
            if (group >= 0) return (void)fail(s->loc, "a T.ws block inside another T.ws block is not supported");
            auto g = constInt(m->args[0]);
            TILEC_ASSERT(g && *g >= 0, "internal error in lowerWarpRoles: a T.ws marker without its group");
            if (*g >= kMaxGroups || kGroup * *g >= k_.threads)
                return (void)fail(s->loc, "T.ws(" + std::to_string(*g) + ") (threads " + std::to_string(kGroup * *g) +
                                              " to " + std::to_string(kGroup * *g + kGroup - 1) +
                                              ", a T.ws block or a branch on the thread index): the kernel has " +
                                              std::to_string(k_.threads) + " threads; explicit warp roles are supported for " +
                                              "up to " + std::to_string(kMaxGroups) + " warp groups, one each of its 128 threads");
            roles_[*g].used = true;
            return check(as<IfThenElse>(s)->then, (int)*g);
        }
        if (auto q = as<Seq>(s)) {
            for (auto &c : q->stmts) check(c, group);
            return;
        }
        if (auto f = as<For>(s); f && f->forKind != ForKind::Parallel && f->forKind != ForKind::Vectorized) {
            if (group < 0) return check(f->body, group);
        }
        if (auto i = as<IfThenElse>(s); i && !markerOf(s, lib::Fn::TmaCopyOn)) {
            if (group < 0) {
                check(i->then, group);
                return check(i->otherwise, group);
            }
        }
        if (isCall(s, lib::Fn::MbarrierInit))
            return (void)fail(s->loc, "T.alloc_barrier belongs at the top of the kernel, outside T.ws blocks and loops");
        if (group < 0)
            return (void)fail(s->loc, "with T.ws roles that synchronise through mbarriers, every statement must be inside "
                                      "a T.ws block: code that all warp groups run together is not supported there");
        Role &r = roles_[group];
        if (markerOf(s, lib::Fn::TmaCopyOn)) {
            if (!r.firstTma) r.firstTma = s.get();
        } else if (!isBarrierOp(s) && !registerCount(s) && !as<For>(s) && !as<IfThenElse>(s) && !threadStore(s)) {
            if (!r.firstOther) r.firstOther = s.get();
        } else if (auto f = as<For>(s)) {
            check(f->body, group);
        } else if (auto i = as<IfThenElse>(s)) {
            check(i->then, group);
            check(i->otherwise, group);
        }
    }

    /// The code before the roles, which every warp group runs in TileLang: the consumer runs it all (its tile
    /// statements laid out over the consumer's threads, as every other) and then arrives on an mbarrier of its
    /// own, which the producer waits for before it runs the prologue's T.alloc_var / T.alloc_local assignments
    /// (each thread's own registers) and its own blocks: shared memory the prologue writes is written before the
    /// producer reads it or TMA overwrites it.
    ///
    /// Its mbarrier operations every group runs itself (each role's threads wait and arrive), and its T.tma_copy
    /// loads one thread issues for all (the producer's): the producer runs them, and the register assignments
    /// before them, in the program's order, and waits for the consumer's hand-over after the last of them (the
    /// consumer may wait in the prologue for what they announce); a register assignment that reads shared memory
    /// before then would read it before the consumer wrote it, a located error. With several consumer warp groups
    /// the first runs the prologue and the others run it as the producer does, without its T.tma_copy loads;
    /// without a producer, the first issues those loads too.
    void handOver(const std::vector<Stmt> &prologue, Kernel &nk, std::vector<Stmt> &inits, Stmt &produced,
                  std::vector<Stmt> &consumed) {
        const SourceRange &at = prologue.front()->loc;
        size_t last = 0; // the statements before `last` run in the producer before its wait
        for (size_t i = 0; i < prologue.size(); ++i)
            if (everyGroup(prologue[i])) last = i + 1;
        for (size_t i = 0; i < last; ++i)
            for (auto *b : mentionedBuffers(prologue[i], nullptr))
                if (registerStore(prologue[i]) && b->scope == Scope::Shared)
                    return (void)fail(prologue[i]->loc, "before the warp roles, this assignment reads shared memory ('" +
                                                            b->name + "') before the mbarrier operations or T.tma_copy "
                                                            "that every warp group runs: tilec runs it in the producer "
                                                            "before the consumer's code has written it; move it after them");
        for (auto &s : prologue)
            if (everyGroup(s)) continue;
            else if (auto bad = perThreadEffect(s))
                return (void)fail(bad->loc, "before the warp roles, code that every thread runs once is not supported "
                                            "here (an atomic update or call outside a T.Parallel nest): tilec runs that "
                                            "code in the consumer's threads only; move it into a role");
        Buffer done = makeBuffer("prologue_done", Scope::Shared, DType::UInt64, {i32(1)}, at);
        nk.allocs.push_back(done);
        Expr bar = addressOf(done, {i32(0)});
        inits.push_back(lib::stmt(lib::Fn::MbarrierInit, {bar, i32(kGroup)}, at));
        auto follow = [&](Stmt &own, bool loads) {
            std::vector<Stmt> mine;
            for (size_t i = 0; i <= prologue.size(); ++i) {
                if (i == last) mine.push_back(lib::stmt(lib::Fn::MbarrierWait, {bar, i32(0)}, at));
                if (i == prologue.size()) break;
                const Stmt &s = prologue[i];
                if (registerStore(s) || (everyGroup(s) && (loads || !markerOf(s, lib::Fn::TmaCopyOn)))) mine.push_back(s);
            }
            if (own) mine.push_back(own);
            own = Seq::make(std::move(mine), at);
        };
        if (producer_ >= 0) follow(produced, true);
        for (size_t c = 1; c < consumed.size(); ++c) follow(consumed[c], false);
        std::vector<Stmt> all;
        for (auto &s : prologue)
            if (producer_ < 0 || !markerOf(s, lib::Fn::TmaCopyOn)) all.push_back(s);
        all.push_back(lib::stmt(lib::Fn::MbarrierArriveEach, {bar}, at));
        if (consumed[0]) all.push_back(consumed[0]);
        consumed[0] = Seq::make(std::move(all), at);
    }

    /// Fails at the first statement of a later consumer warp group that names a fragment an earlier one (or the
    /// code before the roles, which the first runs) names: each group's fragments are laid out over its own threads.
    void checkOwnFragments(const std::vector<Stmt> &consumed) {
        std::map<const BufferNode *, int> owner;
        std::function<void(const Stmt &, int)> walk = [&](const Stmt &s, int c) {
            auto q = as<Seq>(s);
            auto f = as<For>(s);
            auto i = as<IfThenElse>(s);
            if (!s || !ok_) return;
            if (q) for (auto &t : q->stmts) walk(t, c);
            else if (f && f->forKind != ForKind::Parallel) walk(f->body, c);
            else if (i && !markerOf(s, lib::Fn::TmaCopyOn)) walk(i->then, c), walk(i->otherwise, c);
            else
                for (auto *b : mentionedBuffers(s, nullptr))
                    if (auto [it, fresh] = owner.emplace(b, c); b->scope == Scope::Fragment && it->second != c)
                        return (void)fail(s->loc, "the fragment '" + b->name + "' is used by two warp groups (T.ws(" +
                                                      std::to_string(consumers_[it->second]) + ") and T.ws(" +
                                                      std::to_string(consumers_[c]) + ")): tilec lays each warp group's "
                                                      "fragments out over its own 128 threads, so one group cannot read "
                                                      "what the other's threads hold; hand it over through shared memory");
        };
        for (size_t c = 0; c < consumed.size(); ++c) walk(consumed[c], (int)c);
    }

    /// The consumer role: one consumer's code, or each group's own under the marker of its place (`if
    /// tilec.warp_group(c)`: threads 128 c .. 128 c + 127, laid out over as a kernel of 128 threads, the thread index
    /// read there the thread's within the group; its barriers are named barriers of those 128 threads).
    Stmt consumerGroups(const std::vector<Stmt> &consumed) const {
        if (consumed.size() == 1) return consumed[0];
        Stmt chain;
        for (size_t c = consumed.size(); c-- > 0;) {
            const SourceRange &at = consumed[c] ? consumed[c]->loc : k_.launchLoc;
            Expr marker = lib::call(lib::Fn::WarpGroup, {intImm((int64_t)c)}, at, DType::Bool);
            chain = IfThenElse::make(marker, consumed[c] ? consumed[c] : Seq::make({}, at), chain, at);
        }
        return chain;
    }

    /// `s`, a role's code that the lowered kernel runs on threads `launched` of its warp group g - `shift`,
    /// reading the thread index of warp group g as TileLang launched it.
    Stmt asLaunched(const Stmt &s, const Expr &launched, int shift) const {
        if (!s || !uses(s, k_.threadIdx.get())) return s;
        Expr tx = shift ? binary(BinaryOp::Add, launched, i32(kGroup * shift), k_.launchLoc) : launched;
        return tx == Expr(k_.threadIdx) ? s : substitute(s, VarMap{{k_.threadIdx.get(), tx}});
    }

    /// The kernel as warp group `g` runs it: its own blocks, inside the loops and branches around them (loops
    /// made serial; `fresh`: with new loop variables).
    Stmt restrict(const Stmt &s, int g, bool fresh) {
        if (!s || isCall(s, lib::Fn::MbarrierInit)) return nullptr;
        if (auto m = markerOf(s, lib::Fn::WarpGroup)) return constInt(m->args[0]) == std::optional<int64_t>(g) ? as<IfThenElse>(s)->then : nullptr;
        if (auto q = as<Seq>(s)) {
            std::vector<Stmt> out;
            for (auto &c : q->stmts)
                if (Stmt r = restrict(c, g, fresh)) out.push_back(r);
            return out.empty() ? nullptr : Seq::make(std::move(out), q->loc);
        }
        if (auto f = as<For>(s)) {
            Stmt body = restrict(f->body, g, fresh);
            if (!body) return nullptr;
            Var v = f->var;
            if (fresh) {
                v = makeVar(f->var->name, f->var->dtype, f->var->loc);
                body = substitute(body, VarMap{{f->var.get(), v}});
            }
            return For::make(v, f->min, f->extent, ForKind::Serial, 0, body, f->loc);
        }
        if (auto i = as<IfThenElse>(s)) {
            Stmt then = restrict(i->then, g, fresh), otherwise = restrict(i->otherwise, g, fresh);
            if (!then && !otherwise) return nullptr;
            return IfThenElse::make(i->cond, then ? then : Seq::make({}, i->loc), otherwise, i->loc);
        }
        TILEC_ASSERT(false, "internal error in lowerWarpRoles: a statement outside the T.ws blocks passed the check");
        return nullptr;
    }

    /// Fails at the producer's first store or read of a T.tma_copy destination other than T.tma_copy's own: the
    /// tile is in TMA's swizzled layout, which one thread's row-major element does not name.
    void checkProducerTiles(const Stmt &body) {
        struct V : IRVisitor {
            using IRVisitor::visit;
            Lowerer *self = nullptr;
            std::set<const BufferNode *> tiles;
            bool collecting = true;
            void visit(const IfThenElse &op) override {
                if (!lib::is(op.cond, lib::Fn::TmaCopyOn)) return IRVisitor::visit(op);
                if (collecting) tiles.insert(as<Copy>(op.then)->dst.buffer.get());
            }
            void touch(const Buffer &b, const SourceRange &at) {
                if (!collecting && tiles.count(b.get()) && self->ok_)
                    self->fail(at, "'" + b->name + "' is loaded by T.tma_copy (stored in TMA's swizzled layout), so the "
                                   "producer's threads can neither store into it nor read it");
            }
            void visit(const Store &op) override { touch(op.buffer, op.loc), IRVisitor::visit(op); }
            void visit(const Load &op) override { touch(op.buffer, op.loc), IRVisitor::visit(op); }
        } v;
        v.self = this;
        if (!body) return;
        v.visit(body);
        v.collecting = false;
        v.visit(body);
    }

    /// The producer: its T.tma_copy statements issued by its first thread (launched after the consumers').
    Stmt lowerProducer(const Stmt &body, Kernel &nk) {
        checkProducerTiles(body);
        return tmaLoads(body, binary(BinaryOp::EQ, k_.threadIdx, i32(kGroup * (int)consumers_.size())), nk);
    }

    /// A role's T.tma_copy statements as TMA loads that the thread where `leader` holds issues, with the
    /// expect-tx of the tile's bytes on the mbarrier the user names.
    Stmt tmaLoads(const Stmt &body, const Expr &leader, Kernel &nk) {
        struct M : IRMutator {
            using IRMutator::visit;
            Lowerer *self = nullptr;
            Kernel *nk = nullptr;
            Expr leader;
            Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
                auto m = markerOf(op, lib::Fn::TmaCopyOn);
                if (!m) return IRMutator::visit(op);
                Stmt issue = self->tmaLoad(*as<Copy>(op->then), m->args[0], *nk);
                return IfThenElse::make(leader, issue, nullptr, op->loc);
            }
        } m;
        m.self = this;
        m.nk = &nk;
        m.leader = leader;
        return body ? m.mutate(body) : Seq::make({}, k_.launchLoc);
    }

    Stmt tmaLoad(const Copy &c, const Expr &bar, Kernel &nk) {
        const Buffer &dst = c.dst.buffer;
        const size_t nd = dst->shape.size();
        // A whole 2-D tile or one stage of a 3-D ring, stored in the panel layout of its rows' span, or whole
        // panels of its columns: a tile of that layout of its own, loaded in its own boxes at its first panel.
        auto C = nd >= 2 ? constValue(dst->shape.back()) : std::nullopt;
        const int span = C ? panelSwizzleBytes(*C * dst->dtype.bytes()) : 0;
        std::string why;
        auto part = C && (nd == 2 || nd == 3) ? panelPart(c.dst, span, &why) : std::nullopt;
        if (!part || !C) {
            fail(c.loc, "T.tma_copy's destination must be a whole 2-D shared buffer or one stage [s, :, :] of a 3-D one, "
                        "or whole swizzle panels of its columns" + (why.empty() ? std::string() : ": this region " + why));
            return Seq::make({}, c.loc);
        }
        const bool whole = part->cols == *C;
        Expr stage = i32(0);
        Buffer ring;
        Copy plan = c;
        if (nd == 2) {
            auto it = rings_.find(dst.get());
            ring = it != rings_.end() ? it->second : (rings_[dst.get()] = ringOf(dst, 1));
        } else {
            ring = dst;
            stage = simplify(cast(DType::Int32, c.dst.ranges[0].min));
        }
        if (nd == 3 || !whole) {
            Expr cols = whole ? dst->shape[nd - 1] : i32(part->cols);
            Buffer view = makeBuffer(dst->name, Scope::Shared, dst->dtype, {dst->shape[nd - 2], cols}, dst->loc);
            plan.dst = Region::whole(view, c.dst.loc);
        }
        const Expr panel = whole ? i32(0) : simplify(cast(DType::Int32, part->at.back())); // the part's first panel
        proxies_.push_back(Copy::make(plan.src, plan.dst, c.loc));
        auto t = planTmaTile(*as<Copy>(proxies_.back()), k_, span);
        if (!t) {
            fail(c.loc, "T.tma_copy: TMA cannot load this tile (it takes a box of a global tensor with the tile's rows "
                        "along one dimension and its columns, a multiple of 32 bytes, along the innermost)");
            return Seq::make({}, c.loc);
        }
        if (auto never = tmaNeverHolds(t->map.tensor); !never.empty()) {
            fail(c.loc, "T.tma_copy: " + never);
            return Seq::make({}, c.loc);
        }
        for (auto &e : t->coords)
            for (auto *b : mentionedBuffers(Evaluate::make(e), nullptr))
                if (b->scope != Scope::Var && b->scope != Scope::Local) {
                    fail(c.loc, "T.tma_copy: a tile position that reads a buffer other than a T.alloc_var / "
                                "T.alloc_local register ('" + b->name + "') is not supported (assign it to one first)");
                    return Seq::make({}, c.loc);
                }
        if (!byBuffer_.count(dst.get())) { // the whole tile (wgmma reads its parts: operandPart)
            tiles_.push_back(*t);
            tiles_.back().cols = *C;
            byBuffer_[dst.get()] = &tiles_.back();
        }
        const int map = internTensorMap(nk, t->map);
        nk.recordTileLayout({ring, t->swizzle, true});
        std::vector<Expr> args{i32(t->rank), i32(t->rowDim), i32(t->rows), i32(t->cols), i32(t->elemBytes), i32(t->swizzle),
                               addressOf(ring, {stage, i32(0), panel}), i32(map), bar};
        for (size_t j = 0; j < 5; ++j) args.push_back(j < t->coords.size() ? t->coords[j] : i32(0));
        // Where the consumers also read or write the tile through the generic proxy, a proxy fence after the
        // barrier that handed it back orders their accesses before TMA's writes (the async proxy).
        std::vector<Stmt> issue{lib::stmt(lib::Fn::MbarrierExpectTx, {bar, i32(t->bytes())}, c.loc),
                                lib::stmt(lib::Fn::TmaLoadTile, std::move(args), c.loc)};
        if (generic_.count(dst.get())) issue.insert(issue.begin(), lib::stmt(lib::Fn::FenceProxyAsync, {}, c.loc));
        return Seq::make(std::move(issue), c.loc);
    }

    /// Whether wgmma computes `g`, which must run on it (`seed`, which reads a T.tma_copy tile, put it there): a
    /// located error where it cannot.
    bool wgmmaComputes(const Gemm &g, const Gemm &seed) {
        std::string why = whyNotWgmma(needs_, g, byBuffer_);
        if (why.empty()) return true;
        fail(g.loc, std::string(&seed == &g ? "this T.gemm reads tiles that T.tma_copy loads, so it must run on wgmma"
                                            : "this T.gemm must run on wgmma, as the T.gemm that shares its accumulator "
                                              "or a shared tile with it does") + ", which cannot compute it " + why);
        if (&seed != &g) diag_.note(seed.loc, "this T.gemm runs on wgmma: it reads tiles that T.tma_copy loads");
        return false;
    }

    /// The consumer: the T.gemms wgmmaNeeds names on wgmma; TMA tiles also loaded, stored and copied by the
    /// threads (their record makes swizzleShared index those in the panel layout), not reduced or updated
    /// atomically; 2-D TMA tiles staged into their rings of one stage.
    Stmt lowerConsumer(const Stmt &body) {
        struct M : IRMutator {
            using IRMutator::visit;
            Lowerer *self = nullptr;
            bool tma(const Buffer &b) const { return b && self->byBuffer_.count(b.get()); }
            void other(const Stmt &s, const Buffer &b) {
                if (tma(b))
                    self->fail(s->loc, "'" + b->name + "' is loaded by T.tma_copy (stored in TMA's swizzled layout), so "
                                       "T.reduce and T.atomic_add cannot use it; T.copy it into a buffer of their own");
            }
            Stmt visit(const std::shared_ptr<const Gemm> &op) override {
                if (op->sparse() && (tma(op->a.buffer) || tma(op->b.buffer) || tma(op->e.buffer)))
                    self->fail(op->loc, "this T.gemm_sp reads tiles that T.tma_copy loads (stored in TMA's swizzled "
                                        "layout), but it runs on mma.sp, which reads its tiles in the row layout T.copy "
                                        "stores; load A_sparse, E and B with T.copy");
                auto need = self->needs_.gemms.find(op.get());
                if (need == self->needs_.gemms.end()) return op;
                if (op->sparse()) { // explicit warp roles keep T.gemm_sp on mma.sp (wgmma.sp: cpAsyncWgmma only)
                    self->fail(op->loc, "this T.gemm_sp must run on wgmma, as the T.gemm that shares its accumulator or "
                                        "a shared tile with it does, but under explicit warp roles T.gemm_sp runs on mma.sp");
                    return op;
                }
                if (!self->wgmmaComputes(*op, *need->second)) return op;
                return op->withInstr(GemmInstr::Wgmma);
            }
            Stmt visit(const std::shared_ptr<const Reduce> &op) override { return other(op, op->src), op; }
            Stmt visit(const std::shared_ptr<const AtomicAdd> &op) override {
                other(op, op->dst.buffer);
                if (op->src) other(op, op->src->buffer);
                return op;
            }
        } m;
        m.self = this;
        if (!body) return Seq::make({}, k_.launchLoc);
        Stmt s = m.mutate(body);
        return stageBuffers(s, rings_, i32(0));
    }
};

} // namespace

Program lowerWarpRoles(const Program &p, const Target &t, DiagnosticEngine &diag) {
    Program out;
    for (auto &k : p.kernels) {
        std::shared_ptr<Kernel> lowered = k->body && usesExplicitRoles(k->body) ? Lowerer(*k, t, diag).run() : nullptr;
        out.kernels.push_back(lowered ? KernelP(lowered) : k);
    }
    return out;
}

} // namespace tilec::passes
