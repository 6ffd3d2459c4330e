/// \file
/// Which transfers of a serial loop's body are issued together (src/lower/EarlyTransfers.h).
#include "EarlyTransfers.h"

#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/LoopInvariants.h"
#include "tilec/passes/Staging.h"

#include <algorithm>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// Whether a statement orders memory in a way a transfer must not cross, or does what is not known: an extern
/// call, a barrier (block, grid, an mbarrier's wait or arrival: explicit warp roles hand tiles over through them) or
/// an asynchronous call.
bool opaque(const Stmt &s) {
    struct Find : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Call &op) override {
            const lib::Info *f = lib::find(op.name);
            found |= op.name.rfind("extern:", 0) == 0 || (f && (f->effects & (lib::kBarrier | lib::kAsync)));
            IRVisitor::visit(op);
        }
    } f;
    f.visit(s);
    return f.found;
}

/// The buffers an expression loads, and whether a statement reads global memory (a load of a tensor, or a tile
/// transfer left in place): a round trip to memory that the thread waits for.
struct Loads : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> buffers;
    bool global = false;
    void visit(const Load &op) override {
        buffers.insert(op.buffer.get());
        global |= op.buffer->scope == Scope::Global;
        IRVisitor::visit(op);
    }
    void visit(const Copy &op) override {
        global |= op.src.buffer->scope == Scope::Global;
        IRVisitor::visit(op);
    }
};

/// What a transfer's source depends on: its tensor and the buffers its region's bounds read.
std::set<const BufferNode *> sourceReads(const Copy &c) {
    Loads l;
    for (auto &r : c.src.ranges) {
        if (r.min) l.visit(r.min);
        if (r.extent) l.visit(r.extent);
    }
    l.buffers.insert(c.src.buffer.get());
    return l.buffers;
}

/// Whether the group saves a round trip to memory: its transfers stood in two or more runs (transfers back to back
/// already share one wait), or one of them moves up past a statement that reads global memory (its transfer now in
/// flight under that statement's loads).
bool savesRoundTrip(const std::vector<Stmt> &top, const TransferGroup &g) {
    auto member = [&](size_t j) { return std::find(g.copies.begin(), g.copies.end(), j) != g.copies.end(); };
    size_t runs = 1;
    for (size_t k = 1; k < g.copies.size(); ++k) {
        bool adjacent = true;
        for (size_t j = g.copies[k - 1] + 1; j < g.copies[k]; ++j) adjacent &= as<Copy>(top[j]) != nullptr;
        runs += !adjacent;
    }
    if (runs > 1) return true;
    for (size_t j = g.issueAt; j < g.copies.back(); ++j) {
        if (member(j)) continue;
        Loads l;
        l.visit(top[j]);
        if (l.global) return true;
    }
    return false;
}

} // namespace

std::optional<TransferGroup> earlyTransfers(const std::vector<Stmt> &top) {
    std::vector<std::set<const BufferNode *>> mentions;
    std::vector<std::set<const BufferNode *>> writes;
    std::vector<bool> opaques;
    for (auto &s : top) mentions.push_back(mentionedBuffers(s, nullptr)), writes.push_back(writtenBuffers(s)), opaques.push_back(opaque(s));
    // Whether the transfer at `i` may move: nothing before it names its tile, something after it does.
    auto movable = [&](size_t i) {
        auto c = as<Copy>(top[i]);
        if (!c) return false;
        const BufferNode *b = c->dst.buffer.get();
        for (size_t j = 0; j < i; ++j)
            if (mentions[j].count(b)) return false;
        for (size_t j = i + 1; j < top.size(); ++j)
            if (mentions[j].count(b)) return true;
        return false;
    };
    // The earliest place the transfer at `i` may be issued: after the last statement before it that writes what
    // its source reads, or that is opaque.
    auto earliest = [&](size_t i) {
        const std::set<const BufferNode *> reads = sourceReads(*as<Copy>(top[i]));
        size_t e = 0;
        for (size_t j = 0; j < i; ++j) {
            bool clash = opaques[j];
            for (auto *b : writes[j]) clash |= reads.count(b) > 0;
            if (clash) e = j + 1;
        }
        return e;
    };
    TransferGroup g;
    size_t first = 0;
    while (first < top.size() && !movable(first)) ++first;
    if (first == top.size()) return std::nullopt;
    g.issueAt = earliest(first);
    g.copies.push_back(first);
    std::set<const BufferNode *> tiles{as<Copy>(top[first])->dst.buffer.get()};
    for (size_t j = first + 1; j < top.size(); ++j) {
        auto c = as<Copy>(top[j]);
        if (c && movable(j) && !tiles.count(c->dst.buffer.get()) && earliest(j) <= g.issueAt) {
            g.copies.push_back(j);
            tiles.insert(c->dst.buffer.get());
        }
    }
    if (!savesRoundTrip(top, g)) return std::nullopt;
    g.waitAt = top.size();
    for (size_t j = g.issueAt; j < top.size() && g.waitAt == top.size(); ++j) {
        if (std::find(g.copies.begin(), g.copies.end(), j) != g.copies.end()) continue;
        for (auto *b : tiles)
            if (mentions[j].count(b)) g.waitAt = j;
    }
    return g;
}

} // namespace tilec::passes
