/// \file
/// Pipeline stages each thread reads only where it copied itself (src/lower/PrivateStages.h).
#include "PrivateStages.h"

#include "ThreadOwners.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Staging.h"

namespace tilec::passes {

using namespace ir;

namespace {

/// Walks the statements around the reads of one tile: loops add their ranges, T.Parallel nests are checked
/// against the transfer's owners; any other statement may not mention the tile.
struct OwnReads {
    const BufferNode *tile;
    int64_t vec, threads;
    const KernelLayouts &layouts;
    OwnerCache cache;

    bool nest(const For &f, const RangeMap &ranges) {
        // The nest's threads are the transfer's (not a warp role's part of the block, numbered from its own first).
        auto l = layouts.loops.find(f.var.get());
        if (l == layouts.loops.end() || l->second.threads != threads) return false;
        OwnerMap loads, stores;
        nestOwners(f, layouts, ranges, cache, loads, stores);
        auto it = loads.find(tile);
        if (it == loads.end() || stores.count(tile)) return false; // unknown reads, or a store into the stage
        const std::vector<int32_t> &owners = *it->second;
        for (size_t e = 0; e < owners.size(); ++e)
            if (owners[e] != kUntouched && owners[e] != transferOwner((int64_t)e, vec, threads)) return false;
        return true;
    }

    bool stmt(const Stmt &s, const RangeMap &ranges) {
        if (!s || !mentionedBuffers(s, nullptr).count(tile)) return true;
        if (auto q = as<Seq>(s)) {
            for (auto &t : q->stmts)
                if (!stmt(t, ranges)) return false;
            return true;
        }
        if (auto f = as<For>(s)) {
            if (f->forKind == ForKind::Parallel) return nest(*f, ranges);
            if (mentionedIn(f->min) || mentionedIn(f->extent)) return false;
            RangeMap inner = ranges;
            addLoopRange(inner, *f);
            return stmt(f->body, inner);
        }
        if (auto i = as<IfThenElse>(s)) return !mentionedIn(i->cond) && stmt(i->then, ranges) && stmt(i->otherwise, ranges);
        return false; // a copy, GEMM, reduction or per-thread access of the tile: not known to be the copier's own
    }

    bool mentionedIn(const Expr &e) const {
        struct Finds : IRVisitor {
            using IRVisitor::visit;
            const BufferNode *tile;
            bool found = false;
            void visit(const Load &op) override {
                found |= op.buffer.get() == tile;
                IRVisitor::visit(op);
            }
        } f;
        f.tile = tile;
        if (e) f.visit(e);
        return f.found;
    }
};

} // namespace

bool readsOwnTransfer(const std::vector<Stmt> &body, const BufferNode *tile, int64_t vec, int64_t threads,
                      const KernelLayouts &layouts, const RangeMap &ranges) {
    if (vec <= 0 || threads <= 0) return false;
    OwnReads r{tile, vec, threads, layouts, {}};
    bool read = false;
    for (auto &s : body) {
        if (!r.stmt(s, ranges)) return false;
        read |= mentionedBuffers(s, nullptr).count(tile) > 0;
    }
    return read;
}

} // namespace tilec::passes
