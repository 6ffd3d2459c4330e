/// \file
/// Shared-memory planning (include/tilec/passes/PlanSharedMemory.h).
#include "tilec/passes/PlanSharedMemory.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/OccupancyBlocks.h"
#include "tilec/SharedAliases.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace tilec::passes {

using namespace ir;

namespace {

/// Buffers each statement mentions.
struct Mentions : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> found;
    void visitRegion(const Region &r) override { found.insert(r.buffer.get()), IRVisitor::visitRegion(r); }
    void visit(const Load &op) override { found.insert(op.buffer.get()), IRVisitor::visit(op); }
    void visit(const Store &op) override { found.insert(op.buffer.get()), IRVisitor::visit(op); }
    void visit(const Reduce &op) override { found.insert(op.src.get()), found.insert(op.dst.get()); }
};

using Pairs = std::set<std::pair<const BufferNode *, const BufferNode *>>;

/// The storage of the buffers `s` mentions: a shared alias stands for its base (tilec/SharedAliases.h), whose
/// memory it uses.
std::set<const BufferNode *> storageMentioned(const Kernel &k, const Stmt &s) {
    Mentions m;
    if (s) m.visit(s);
    std::set<const BufferNode *> out;
    for (auto *b : m.found) out.insert(ir::storageOf(k, b));
    return out;
}

/// The buffers `stmts` mention (their storage).
std::set<const BufferNode *> mentioned(const Kernel &k, const std::vector<Stmt> &stmts) {
    std::set<const BufferNode *> out;
    for (auto &s : stmts)
        for (auto *b : storageMentioned(k, s)) out.insert(b);
    return out;
}

bool isBarrier(const Stmt &s) { return isCall(s, lib::Fn::Sync); }

/// The asynchronous accesses of shared memory that may be in flight after `s` (bits: 1 a wgmma's reads, 2 a TMA
/// store's reads, 4 cp.async's writes, 8 any other), given those in flight before it. Each kind retires at its
/// wait for none pending (the others never, here); a loop may run no iteration, a branch not be taken.
unsigned inFlightAfter(const Stmt &s, unsigned in) {
    if (auto q = as<Seq>(s)) {
        for (auto &c : q->stmts) in = inFlightAfter(c, in);
        return in;
    }
    // Each kind's body leaves it as it was, set or clear: once through the body is as many times through.
    if (auto f = as<For>(s)) return in | inFlightAfter(f->body, in);
    if (auto w = as<While>(s)) return in | inFlightAfter(w->body, in);
    if (auto i = as<IfThenElse>(s)) return inFlightAfter(i->then, in) | (i->otherwise ? inFlightAfter(i->otherwise, in) : in);
    const Call *c = callOf(s);
    const lib::Info *info = c ? lib::find(c->name) : nullptr;
    if (!info) return in;
    auto none = [&] { return c->args.empty() || constInt(c->args[0]) == std::optional<int64_t>(0); }; // `pending`
    if (isWgmmaProduct(*c)) return in | 1;
    switch (info->fn) {
    case lib::Fn::TmaStoreTile: case lib::Fn::BulkStore: return in | 2;
    case lib::Fn::CopyG2S: case lib::Fn::CpAsyncChunk: case lib::Fn::CpAsyncCopy: return in | 4;
    case lib::Fn::WgmmaWait: case lib::Fn::WgmmaWaitAcc: return none() ? in & ~1u : in;
    case lib::Fn::TmaStoreWait: return none() ? in & ~2u : in;
    case lib::Fn::CpAsyncWait: return none() ? in & ~4u : in;
    default: return info->effects & lib::kAsync ? in | 8 : in;
    }
}

/// The mbarrier (its address) TMA load `c` completes on, or null where `c` is no TMA load.
const Expr *loadBarrier(const Call *c) {
    if (c && lib::is(*c, lib::Fn::TmaLoadTile)) return &lib::arg(*c, lib::Fn::TmaLoadTile, "bar");
    if (c && lib::is(*c, lib::Fn::TmaLoadTileMulticast)) return &lib::arg(*c, lib::Fn::TmaLoadTileMulticast, "bar");
    if (c && lib::is(*c, lib::Fn::TmaLoadTileRows)) return &lib::arg(*c, lib::Fn::TmaLoadTileRows, "bar");
    return nullptr;
}

/// The mbarriers of the TMA loads in `s`, wherever they are, one per load.
std::vector<Expr> loadBarriers(const Stmt &s) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        std::vector<Expr> found;
        void visit(const Call &op) override {
            if (const Expr *bar = loadBarrier(&op)) found.push_back(*bar);
            IRVisitor::visit(op);
        }
    } v;
    v.visit(s);
    return v.found;
}

/// The statements that run at most once each time `s` does: nested lists and branches flattened, loops not.
std::vector<Stmt> straight(const Stmt &s) {
    std::vector<Stmt> out;
    for (auto &c : Seq::items(s))
        if (auto b = as<IfThenElse>(c)) {
            for (auto &x : straight(b->then)) out.push_back(x);
            if (b->otherwise)
                for (auto &x : straight(b->otherwise)) out.push_back(x);
        } else out.push_back(c);
    return out;
}

/// Whether `list` waits, unconditionally (not in a branch or an inner loop), on mbarrier `bar`.
bool waitsOn(const std::vector<Stmt> &list, const Expr &bar) {
    return std::any_of(list.begin(), list.end(), [&](const Stmt &s) {
        return isCall(s, lib::Fn::MbarrierWait) && structurallyEqual(lib::arg(*callOf(s), lib::Fn::MbarrierWait, "bar"), bar);
    });
}

/// Whether `list` arrives on mbarrier `bar` at most once, so that its TMA loads on it complete in one phase.
bool onePhase(const std::vector<Stmt> &list, const Expr &bar) {
    return std::count_if(list.begin(), list.end(), [&](const Stmt &s) {
               const Call *c = callOf(s);
               const bool arrives = c && (lib::is(*c, lib::Fn::MbarrierArrive) || lib::is(*c, lib::Fn::MbarrierArriveExpectTx) ||
                                          lib::is(*c, lib::Fn::MbarrierArriveEach) || lib::is(*c, lib::Fn::MbarrierArriveCluster));
               return arrives && !c->args.empty() && structurallyEqual(c->args[0], bar);
           }) <= 1;
}

/// Whether the consumers' statements `before` wait for every TMA load of `producer`: a load outside loops (on an
/// mbarrier it arrives on once there) on one they wait on outside loops; a load in a loop of the producer's
/// top level (not nested deeper, arriving once an iteration) on one that a loop of theirs over the same
/// iterations waits on in every iteration. Then each tile the producer writes has landed once they are through
/// `before`. A producer that loads more (the next output tile's, where the roles walk tiles) or where the
/// consumers may not wait (under a condition) does not qualify.
bool producerAwaited(const Stmt &producer, const std::vector<Stmt> &before) {
    size_t awaited = 0;
    const std::vector<Stmt> work = straight(producer);
    for (auto &s : work) {
        if (const Expr *bar = loadBarrier(callOf(s))) {
            awaited += onePhase(work, *bar) && waitsOn(before, *bar);
            continue;
        }
        auto f = as<For>(s);
        if (!f) continue;
        const std::vector<Stmt> body = straight(f->body);
        for (auto &l : body)
            if (const Expr *bar = loadBarrier(callOf(l)))
                awaited += onePhase(body, *bar) && std::any_of(before.begin(), before.end(), [&](const Stmt &c) {
                               auto g = as<For>(c);
                               return g && structurallyEqual(g->min, f->min) && structurallyEqual(g->extent, f->extent) &&
                                      waitsOn(Seq::items(g->body), substitute(*bar, VarMap{{f->var.get(), g->var}}));
                           });
    }
    return awaited == loadBarriers(producer).size();
}

/// Buffers of mbarriers (64-bit integers, as SharedMemory.h aligns them): never reused as other data (PTX wants
/// an mbarrier invalidated first).
bool mbarriers(const BufferNode *b) { return b->dtype.bytes() == 8 && b->dtype.isInt(); }

/// With warp roles: the pairs (a buffer the consumers use only after a barrier of theirs, one used only before
/// it) that may share memory. The barrier: the first at the consumers' top level (which every consumer thread
/// reaches) with none of their asynchronous accesses of shared memory in flight, by which they have waited for
/// every tile the producer loads (producerAwaited). There every consumer is done with the earlier buffers, and
/// the producer too: what it wrote has landed, and it writes nothing more.
Pairs warpRoleReuse(const Kernel &k) {
    std::vector<Stmt> top = Seq::items(k.body);
    auto roles = std::find_if(top.begin(), top.end(), [](const Stmt &s) { return (bool)as<WarpRoles>(s); });
    if (roles == top.end()) return {};
    auto r = as<WarpRoles>(*roles);
    const std::vector<Stmt> cs = Seq::items(r->consumer);
    size_t barrier = cs.size();
    unsigned inFlight = 0;
    for (size_t i = 0; i < cs.size() && barrier == cs.size(); ++i) {
        if (isBarrier(cs[i]) && !inFlight && producerAwaited(r->producer, std::vector<Stmt>(cs.begin(), cs.begin() + (long)i)))
            barrier = i;
        inFlight = inFlightAfter(cs[i], inFlight);
    }
    if (barrier == cs.size()) return {};
    std::vector<Stmt> before(cs.begin(), cs.begin() + (long)barrier), after(cs.begin() + (long)barrier + 1, cs.end());
    before.push_back(r->producer);
    for (auto s = top.begin(); s != top.end(); ++s)
        if (s < roles) before.push_back(*s);
        else if (s > roles) before.push_back(*s), after.push_back(*s); // every thread, after both roles: none shares
    const auto early = mentioned(k, before), late = mentioned(k, after);
    Pairs out;
    for (auto *a : late)
        for (auto *b : early)
            if (!early.count(a) && !late.count(b) && !mbarriers(a) && !mbarriers(b)) out.insert({a, b}), out.insert({b, a});
    return out;
}

/// Where the buffers of `order` go (offsets into `out`) when two may overlap only if `mayShare` says so: the
/// lowest aligned offset clear of every placed buffer it may not share with. Returns the end of the last byte.
template <class MayShare>
int64_t place(const std::vector<const BufferNode *> &order, const Kernel &k, MayShare mayShare, SharedPlan &out,
              std::vector<std::pair<const BufferNode *, std::pair<int64_t, int64_t>>> &placed, bool wide) {
    int64_t end = 0;
    for (auto *b : order) {
        const int64_t bytes = smem::sharedBytes(b);
        // TMA's alignment for its tiles, and for every tile in the panel layout (wgmma's swizzle modes follow
        // address bits): what the passes that planned them recorded (Kernel::tileLayouts).
        const TileLayout *tile = k.tileLayoutOf(b);
        const int64_t align = wide ? smem::kTmaTileAlignment : smem::bufferAlignment(*b, tile && (tile->tma || tile->swizzleBytes > 0));
        out.alignment = std::max<int>(out.alignment, (int)align);
        int64_t at = 0;
        for (bool moved = true; moved;) {
            moved = false;
            for (auto &[other, range] : placed) {
                if (at < range.second && range.first < at + bytes && !mayShare(b, other)) {
                    at = smem::roundUp(range.second, align);
                    moved = true;
                }
            }
        }
        placed.push_back({b, {at, at + bytes}});
        out.offsets.push_back({b, at});
        end = std::max(end, at + bytes);
    }
    return end;
}

/// `barriers` null: buffers share memory when a top-level barrier separates their uses. Otherwise (the plan
/// did not fit) also when their uses are merely apart: `barriers` gets the top-level positions where a barrier
/// must go first (before the later buffer's first statement), so that every thread is done with the earlier one.
/// `reuse`: more pairs that may share. `wide`: every buffer 1024-aligned (an estimate before the later passes
/// record their tiles' layouts).
SharedPlan plan(const Kernel &k, std::set<int> *barriers = nullptr, const Pairs &reuse = {}, bool wide = false) {
    std::vector<Stmt> top = Seq::items(k.body);
    std::map<const BufferNode *, std::pair<int, int>> live;
    std::vector<int> syncsBefore(top.size() + 1, 0); // top-level barriers among statements [0, i)
    for (size_t i = 0; i < top.size(); ++i) {
        auto e = as<Evaluate>(top[i]);
        auto c = e ? as<Call>(e->value) : nullptr;
        syncsBefore[i + 1] = syncsBefore[i] + (c && lib::is(*c, lib::Fn::Sync));
        for (auto *b : storageMentioned(k, top[i])) {
            auto it = live.find(b);
            if (it == live.end()) live[b] = {(int)i, (int)i};
            else it->second.second = (int)i;
        }
    }
    auto separated = [&](const BufferNode *a, const BufferNode *b) {
        auto x = live.find(a), y = live.find(b);
        if (x == live.end() || y == live.end()) return false;
        auto [a0, a1] = x->second;
        auto [b0, b1] = y->second;
        if (a1 < b0) return syncsBefore[b0] - syncsBefore[a1 + 1] > 0;
        if (b1 < a0) return syncsBefore[a0] - syncsBefore[b1 + 1] > 0;
        return false;
    };
    auto apart = [&](const BufferNode *a, const BufferNode *b) {
        auto x = live.find(a), y = live.find(b);
        return x != live.end() && y != live.end() && (x->second.second < y->second.first || y->second.second < x->second.first);
    };
    SharedPlan out;
    std::vector<const BufferNode *> order;
    for (auto &b : k.allocs)
        if (b && b->scope == Scope::Shared && ir::storageOf(k, b.get()) == b.get()) order.push_back(b.get());
    std::vector<std::pair<const BufferNode *, std::pair<int64_t, int64_t>>> placed;
    auto mayShare = [&](auto *a, auto *b) { return separated(a, b) || (barriers && apart(a, b)) || reuse.count({a, b}); };
    int64_t end = place(order, k, mayShare, out, placed, wide);
    for (auto &[view, base] : ir::sharedAliases(k)) // a shared alias is its base's bytes
        if (auto at = out.offsetOf(base.get()); at && std::count(k.allocs.begin(), k.allocs.end(), view))
            out.offsets.push_back({view.get(), *at});
    if (barriers) {
        // Each overlapping pair needs a barrier somewhere after the earlier buffer's last statement, up to the later
        // one's first; the fewest positions that serve every pair: by the latest position each pair allows, that
        // position unless a chosen one serves already.
        std::vector<std::pair<int, int>> spans; // (latest, earliest)
        for (size_t i = 0; i < placed.size(); ++i)
            for (size_t j = 0; j < i; ++j) {
                auto [a, ra] = placed[i];
                auto [b, rb] = placed[j];
                if (ra.first < rb.second && rb.first < ra.second && !separated(a, b)) {
                    auto [x, y] = live[a].first > live[b].first ? std::pair(live[b], live[a]) : std::pair(live[a], live[b]);
                    spans.push_back({y.first, std::min(x.second + 1, y.first)});
                }
            }
        std::sort(spans.begin(), spans.end());
        for (auto [latest, earliest] : spans) {
            auto at = barriers->lower_bound(earliest);
            if (at == barriers->end() || *at > latest) barriers->insert(latest);
        }
    }
    out.bytes = (end + 15) / 16 * 16;
    // The kernel declares its dynamic shared memory 128-byte aligned; a stricter plan rounds the base up at
    // run time, so it asks for the difference too.
    if (out.bytes > 0 && out.alignment > 128) out.bytes += out.alignment - 128;
    return out;
}

/// A shared buffer the body never mentions (allocated on a path the factory did not take, as
/// `Bias_shared` without a bias) takes no memory: it leaves the kernel's allocations, as TileLang drops it.
/// So does a shared alias the body never mentions; the base of one it mentions stays.
void dropUnusedShared(Kernel &k) {
    Mentions m;
    m.visit(k.body);
    std::erase_if(k.fragmentViews, [&](const auto &a) { return a.second->scope == Scope::Shared && !m.found.count(a.first.get()); });
    const std::set<const BufferNode *> used = storageMentioned(k, k.body);
    std::erase_if(k.allocs, [&](const Buffer &b) {
        return b && b->scope == Scope::Shared && !m.found.count(b.get()) && !(used.count(b.get()) && ir::aliased(k, b.get()));
    });
}

/// Whether every shared alias's base is still a buffer of the kernel, as allocated; else (a pass replaced it, as a
/// warp-role ring of explicit TMA loads) a located error for the view, which would address the old bytes.
bool aliasBasesKept(const Kernel &k, DiagnosticEngine &diag) {
    bool ok = true;
    for (auto &[view, base] : ir::sharedAliases(k))
        if (!std::count(k.allocs.begin(), k.allocs.end(), base)) {
            diag.error(view->loc, "'" + view->name + "', a T.view of '" + base->name + "' as " + std::string(view->dtype.name()) +
                                      ", is not supported where tilec stores '" + base->name + "' as a ring of pipeline stages");
            ok = false;
        }
    return ok;
}

/// Whether none of the asynchronous accesses of shared memory the top-level statements start (inFlightAfter) is
/// in flight before any of `positions`, so that a barrier there leaves every thread done with what came before.
bool settledAt(const Stmt &body, const std::set<int> &positions) {
    std::vector<Stmt> top = Seq::items(body);
    unsigned inFlight = 0;
    for (size_t i = 0; i < top.size(); ++i) {
        if (positions.count((int)i) && inFlight) return false;
        inFlight = inFlightAfter(top[i], inFlight);
    }
    return true;
}

/// Whether the kernel's grid may hold more blocks than the SMs of `t` run at once with `perSm` blocks each (a grid
/// that is not a constant may): only then do more blocks per SM shorten it.
bool pastOneWave(const Kernel &k, const Target &t, int64_t perSm) {
    int64_t blocks = 1;
    for (const Expr &e : k.grid) {
        std::optional<int64_t> n = constInt(e);
        if (!n) return true;
        blocks *= *n;
    }
    return blocks > (int64_t)t.numSms * perSm;
}

/// The body with a barrier before each of the top-level statements at `positions`.
Stmt withBarriersBefore(const Stmt &body, const std::set<int> &positions) {
    if (positions.empty()) return body;
    std::vector<Stmt> top = Seq::items(body);
    std::vector<Stmt> out;
    for (size_t i = 0; i < top.size(); ++i) {
        if (positions.count((int)i)) out.push_back(lib::stmt(lib::Fn::Sync, {}, top[i]->loc));
        out.push_back(top[i]);
    }
    return Seq::make(std::move(out), body->loc);
}

} // namespace

Program planSharedMemory(const Program &p, const Target &t, DiagnosticEngine &diag, bool reuseForBlocks) {
    Program out;
    for (auto &k : p.kernels) {
        auto nk = std::make_shared<Kernel>(*k);
        dropUnusedShared(*nk);
        if (!aliasBasesKept(*nk, diag)) {
            out.kernels.push_back(nk);
            continue;
        }
        nk->shared = plan(*nk);
        if (reuseForBlocks && nk->shared.bytes <= t.maxSharedPerBlock && !nk->producerThreads) {
            // It fits, but a buffer no longer used may still give its bytes to a later one, with a barrier between
            // (TileLang's planner reuses them always), where that lets more blocks share an SM: by shared memory,
            // threads and occupancyBlocks' estimate of the registers, in a grid of more than one wave. Not where an
            // asynchronous access of shared memory may be in flight at such a barrier.
            std::set<int> barriers;
            SharedPlan reused = plan(*nk, &barriers);
            const int before = occupancyBlocks(*nk, t, nullptr, nk->shared.bytes);
            if (occupancyBlocks(*nk, t, nullptr, reused.bytes) > before && pastOneWave(*nk, t, before) &&
                settledAt(nk->body, barriers)) {
                nk->shared = reused;
                nk->body = withBarriersBefore(nk->body, barriers);
            }
        }
        if (nk->shared.bytes > t.maxSharedPerBlock && !nk->producerThreads) {
            // Too much: let buffers whose uses are apart share memory, with a barrier between them (TileLang
            // reuses the shared memory of buffers no longer live). Not with warp roles, whose threads do not
            // all reach the top-level statements together.
            std::set<int> barriers;
            SharedPlan reused = plan(*nk, &barriers);
            if (reused.bytes < nk->shared.bytes) {
                nk->shared = reused;
                nk->body = withBarriersBefore(nk->body, barriers);
            }
        }
        if (nk->shared.bytes > t.maxSharedPerBlock && nk->producerThreads) {
            SharedPlan reused = plan(*nk, nullptr, warpRoleReuse(*nk));
            if (reused.bytes < nk->shared.bytes) nk->shared = reused;
        }
        out.kernels.push_back(nk);
        if (nk->shared.bytes <= t.maxSharedPerBlock) continue;
        const BufferNode *largest = nullptr;
        int64_t largestBytes = 0;
        for (auto &b : nk->allocs) {
            int64_t bytes = smem::sharedBytes(b.get());
            if (bytes > largestBytes) largestBytes = bytes, largest = b.get();
        }
        diag.error(k->loc, "kernel '" + k->name + "' needs " + std::to_string(nk->shared.bytes) +
                               " bytes of shared memory (including the compiler's reduction scratch), more than the " +
                               std::to_string(t.maxSharedPerBlock) + " bytes a block can have on " + t.name);
        if (largest) diag.note(largest->loc, "the largest buffer, '" + largest->name + "', takes " + std::to_string(largestBytes) + " bytes");
    }
    return out;
}

int64_t warpRoleSharedBytes(const Kernel &k, const Target &t) {
    const int64_t apart = plan(k, nullptr, {}, true).bytes;
    return apart > t.maxSharedPerBlock ? std::min(apart, plan(k, nullptr, warpRoleReuse(k), true).bytes) : apart;
}

std::string describeSharedPlans(const Program &p) {
    std::string s;
    for (auto &k : p.kernels) {
        if (!k) continue;
        s += "# shared memory of " + k->name + ": " + std::to_string(k->shared.bytes) + " bytes, base aligned to " +
             std::to_string(k->shared.alignment) + "\n";
        for (auto &b : k->allocs)
            if (auto at = b ? k->shared.offsetOf(b.get()) : std::nullopt)
                s += "#   " + b->name + " at " + std::to_string(*at) + "\n";
    }
    return s;
}

} // namespace tilec::passes
