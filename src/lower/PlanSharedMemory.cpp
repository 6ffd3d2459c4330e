/// \file
/// Shared-memory planning (include/tilec/passes/PlanSharedMemory.h).
#include "tilec/passes/PlanSharedMemory.h"

#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedMemory.h"

#include <algorithm>
#include <map>
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

/// Where the buffers of `order` go (offsets into `out`) when two may overlap only if `mayShare` says so: the
/// lowest aligned offset clear of every placed buffer it may not share with. Returns the end of the last byte.
template <class MayShare>
int64_t place(const std::vector<const BufferNode *> &order, const Kernel &k, MayShare mayShare, SharedPlan &out,
              std::vector<std::pair<const BufferNode *, std::pair<int64_t, int64_t>>> &placed) {
    int64_t end = 0;
    for (auto *b : order) {
        const int64_t bytes = smem::sharedBytes(b);
        // TMA's alignment for its tiles, and for every tile in the panel layout (wgmma's swizzle modes follow
        // address bits): what the passes that planned them recorded (Kernel::tileLayouts).
        const TileLayout *tile = k.tileLayoutOf(b);
        const int64_t align = smem::bufferAlignment(*b, tile && (tile->tma || tile->swizzleBytes > 0));
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
SharedPlan plan(const Kernel &k, std::set<int> *barriers = nullptr) {
    std::vector<Stmt> top;
    if (auto q = as<Seq>(k.body)) top = q->stmts;
    else top = {k.body};
    std::map<const BufferNode *, std::pair<int, int>> live;
    std::vector<int> syncsBefore(top.size() + 1, 0); // top-level barriers among statements [0, i)
    for (size_t i = 0; i < top.size(); ++i) {
        auto e = as<Evaluate>(top[i]);
        auto c = e ? as<Call>(e->value) : nullptr;
        syncsBefore[i + 1] = syncsBefore[i] + (c && lib::is(*c, lib::Fn::Sync));
        Mentions m;
        m.visit(top[i]);
        for (auto *b : m.found) {
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
        if (b && b->scope == Scope::Shared) order.push_back(b.get());
    std::vector<std::pair<const BufferNode *, std::pair<int64_t, int64_t>>> placed;
    int64_t end = place(order, k, [&](auto *a, auto *b) { return separated(a, b) || (barriers && apart(a, b)); }, out, placed);
    if (barriers)
        for (size_t i = 0; i < placed.size(); ++i)
            for (size_t j = 0; j < i; ++j) {
                auto [a, ra] = placed[i];
                auto [b, rb] = placed[j];
                if (ra.first < rb.second && rb.first < ra.second && !separated(a, b))
                    barriers->insert(std::max(live[a].first, live[b].first));
            }
    out.bytes = (end + 15) / 16 * 16;
    // The kernel declares its dynamic shared memory 128-byte aligned; a stricter plan rounds the base up at
    // run time, so it asks for the difference too.
    if (out.bytes > 0 && out.alignment > 128) out.bytes += out.alignment - 128;
    return out;
}

/// A shared buffer the body never mentions (allocated on a path the factory did not take, as
/// `Bias_shared` without a bias) takes no memory: it leaves the kernel's allocations, as TileLang drops it.
void dropUnusedShared(Kernel &k) {
    Mentions m;
    m.visit(k.body);
    std::erase_if(k.allocs, [&](const Buffer &b) { return b && b->scope == Scope::Shared && !m.found.count(b.get()); });
}

/// The body with a barrier before each of the top-level statements at `positions`.
Stmt withBarriersBefore(const Stmt &body, const std::set<int> &positions) {
    if (positions.empty()) return body;
    std::vector<Stmt> top;
    if (auto q = as<Seq>(body)) top = q->stmts;
    else top = {body};
    std::vector<Stmt> out;
    for (size_t i = 0; i < top.size(); ++i) {
        if (positions.count((int)i)) out.push_back(lib::stmt(lib::Fn::Sync, {}, top[i]->loc));
        out.push_back(top[i]);
    }
    return Seq::make(std::move(out), body->loc);
}

} // namespace

Program planSharedMemory(const Program &p, const Target &t, DiagnosticEngine &diag) {
    Program out;
    for (auto &k : p.kernels) {
        auto nk = std::make_shared<Kernel>(*k);
        dropUnusedShared(*nk);
        nk->shared = plan(*nk);
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
