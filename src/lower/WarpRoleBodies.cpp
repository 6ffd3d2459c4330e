/// \file
/// The code of specializeWarps' two roles from its plan (WarpRoleBodies.h).
#include "WarpRoleBodies.h"

#include "tilec/IRVisitor.h"
#include "tilec/passes/Staging.h"

#include <algorithm>

namespace tilec::passes::warproles {

namespace {

Expr i32(int64_t v) { return intImm32(v); }

/// The address of buffer `b`'s first element, of stage `stage` of a ring where given (tiles of 1 or 2 dimensions).
Expr origin(const Buffer &b, const Expr &stage) {
    std::vector<Expr> at(b->shape.size(), i32(0));
    if (stage) at[0] = stage;
    return addressOf(b, std::move(at));
}

/// The release of a stage the consumers read through the generic proxy (mma.sync's ldmatrix, their own loads
/// and copies out of it): each thread's reads are its own, so every consumer thread arrives. The producer's next
/// TMA writes the stage through the async proxy: a proxy fence orders the two (without it the arrival's SASS
/// waits for no outstanding ldmatrix, and persistent sm_90 GEMMs summed wrong stages on the H200).
Stmt genericRelease(const Expr &bar, const SourceRange &loc) {
    return Seq::make({lib::stmt(lib::Fn::FenceProxyAsync, {}, loc), lib::stmt(lib::Fn::MbarrierArriveEach, {bar}, loc)}, loc);
}

/// The schedule overlapScores will give an attention loop (by the reduction of its first T.gemm with A in
/// shared memory, where a later one reads A from registers: QK^T, then P.V, and by that A's width) over a ring of
/// `stages`; overlapScores decides by the same dimension, read off that QK^T's wgmma, and the same ring.
AttentionSchedule attentionSchedule(const std::vector<Stmt> &rest, const LoweringOptions &o, int64_t stages) {
    const Gemm *qk = nullptr;
    for (auto &s : rest) {
        auto g = as<Gemm>(s);
        if (!g || !g->a.buffer) continue;
        if (g->a.buffer->scope != Scope::Fragment) {
            if (!qk) qk = g;
            continue;
        }
        if (!qk) break;
        std::vector<int64_t> shape;
        for (auto &r : qk->a.ranges)
            if (auto e = constInt(r.extent); e && *e != 1) shape.push_back(*e);
        if (shape.size() == 2) return o.attentionSchedule(qk->transA ? shape[0] : shape[1], qk->a.buffer->dtype.bits(), stages);
        break;
    }
    return o.attentionSchedule(0, 16, stages);
}

} // namespace

/// One TMA load of a tile; boxRows > 0: this block's share of a tile the cluster loads together, multicast
/// to every block of it; live: its boxes of kLiveBoxRows rows that start below that row.
Stmt tmaLoad(const Plan &p, const TmaTile &t, int map, const Expr &dst, const Expr &bar, const VarMap &vars, int64_t boxRows,
             const Expr &live) {
    const int CM = p.CM;
    std::vector<Expr> args{i32(t.rank), i32(t.rowDim), i32(t.rows), i32(t.cols), i32(t.elemBytes), i32(t.swizzle)};
    if (boxRows) args.insert(args.end(), {i32(boxRows), i32(CM)});
    if (live) args.push_back(i32(kLiveBoxRows));
    args.insert(args.end(), {dst, i32(map), bar});
    if (boxRows) args.insert(args.end(), {i32((1 << CM) - 1), lib::call(lib::Fn::ClusterRank, {}, p.loc, DType::Int32)});
    if (live) args.push_back(simplify(cast(DType::Int32, substitute(live, vars))));
    for (size_t j = 0; j < 5; ++j) args.push_back(j < t.coords.size() ? simplify(substitute(t.coords[j], vars)) : i32(0));
    const lib::Fn fn = boxRows ? lib::Fn::TmaLoadTileMulticast : live ? lib::Fn::TmaLoadTileRows : lib::Fn::TmaLoadTile;
    return lib::stmt(fn, std::move(args), t.copy->loc);
}

namespace {

/// The rows past which the block observes nothing of the products that read tile `b` in the kernel's `body`,
/// where every read of `b` anywhere in it is the A operand of a wgmma T.gemm marked with the same
/// Gemm::liveRowsAt (K-major: its rows are the tile's first dimension; on wgmma where `wgmma`, as in the
/// loop's body once marked); null otherwise. Writes of `b` (its loads, stores, fills) do not matter: the rows
/// the producer leaves out are read by no one.
Expr onlyLiveReaders(const Stmt &body, const BufferNode *b, bool wgmma) {
    struct Uses : IRVisitor {
        using IRVisitor::visit;
        const BufferNode *b = nullptr;
        Expr live;
        bool other = false, wgmma = false;
        void visitRegion(const Region &r) override {
            other |= r.buffer.get() == b;
            IRVisitor::visitRegion(r);
        }
        /// A region written: only the expressions of its ranges are read.
        void written(const Region &r) {
            if (r.buffer.get() != b) return visitRegion(r);
            for (auto &x : r.ranges) visit(x.min), visit(x.extent);
        }
        void visit(const Load &l) override {
            other |= l.buffer.get() == b;
            IRVisitor::visit(l);
        }
        void visit(const Copy &c) override { visitRegion(c.src), written(c.dst); }
        void visit(const Fill &f) override {
            written(f.dst);
            if (f.value) visit(f.value);
        }
        void visit(const Reduce &r) override { other |= r.src.get() == b; }
        void visit(const Gemm &g) override {
            if (g.a.buffer.get() != b) return IRVisitor::visit(g);
            const bool ok = !g.transA && (!wgmma || g.instr == GemmInstr::Wgmma) && g.liveRowsAt &&
                            (!live || provablyEqual(live, g.liveRowsAt));
            other |= !ok;
            if (ok) live = g.liveRowsAt;
            for (auto &r : g.a.ranges) visit(r.min), visit(r.extent);
            visitRegion(g.b);
            visitRegion(g.c);
            if (g.sparse()) visitRegion(g.e);
        }
    } uses;
    uses.b = b, uses.wgmma = wgmma;
    uses.visit(body);
    return uses.other ? nullptr : uses.live;
}

} // namespace

void planLiveRowBoxes(Plan &p, const Stmt &body) {
    p.liveRows.assign(p.tiles.size(), nullptr);
    if (p.mma) return; // mma.sync issues every row
    for (size_t i = 0; i < p.tiles.size(); ++i) {
        const TmaTile &t = p.tiles[i];
        const Buffer &b = t.copy->dst.buffer;
        // panel-layout tiles of several boxes' rows, the rows the tile's first dimension; one block's own loads
        if (!t.swizzle || t.rows % kLiveBoxRows || t.rows <= kLiveBoxRows || b->shape.size() != 2 ||
            constInt(b->shape[0]) != std::optional<int64_t>(t.rows))
            continue;
        if ((p.CM > 1 && p.cluster.shared[i]) || p.genericReads.count(b.get())) continue;
        // in the whole kernel, and in the loop's body as specializeWarps runs it (its T.gemms on wgmma)
        Expr whole = onlyLiveReaders(body, b.get(), false), loop = onlyLiveReaders(Seq::make(p.rest, p.loc), b.get(), true);
        if (whole && loop && provablyEqual(whole, loop)) p.liveRows[i] = loop;
    }
}

/// The bytes the TMA loads of barrier group `g` bring in stage by stage: a tile loaded in part counts its
/// boxes that start below its live rows (those tmaLoad issues), every other tile whole.
Expr groupBytes(const Plan &p, int g, const VarMap &vars) {
    const Group &grp = p.groups[(size_t)g];
    int64_t fixed = grp.bytes;
    Expr sum;
    for (size_t i : grp.tiles) {
        if (p.liveRows.size() <= i || !p.liveRows[i]) continue;
        const TmaTile &t = p.tiles[i];
        fixed -= t.bytes();
        const int64_t boxes = t.rows / kLiveBoxRows, boxBytes = t.bytes() / boxes;
        Expr live = cast(DType::Int32, substitute(p.liveRows[i], vars));
        Expr issued = binary(BinaryOp::FloorDiv, binary(BinaryOp::Add, live, i32(kLiveBoxRows - 1)), i32(kLiveBoxRows));
        issued = binary(BinaryOp::Min, binary(BinaryOp::Max, issued, i32(0)), i32(boxes));
        Expr bytes = binary(BinaryOp::Mul, issued, i32(boxBytes));
        sum = sum ? binary(BinaryOp::Add, sum, bytes) : bytes;
    }
    return simplify(sum ? binary(BinaryOp::Add, sum, i32(fixed)) : i32(fixed));
}

namespace {

/// Thread tile `c` (Plan::threadTiles) into stage `stage` of its ring, by producer thread tx - C: rows r * P +
/// tx - C, each a run of plain loads and stores of its elements (zero outside the tensor, as TMA fills them).
/// What orders the stores before the consumers' loads is the thread's arrival on the full barrier after them
/// (mbarrier.arrive: release at CTA scope; the consumers' wait acquires).
Stmt threadCopy(const Plan &p, const Copy &c, const Expr &stage, const VarMap &vars, const Var &tx) {
    const Buffer &src = c.src.buffer, &ring = p.ring.at(c.dst.buffer.get());
    const int64_t R = *constInt(c.dst.buffer->shape[0]), C = *constInt(c.dst.buffer->shape[1]);
    const size_t nd = c.src.ranges.size();
    Var r = makeVar("r", DType::Int32, c.loc), col = makeVar("c", DType::Int32, c.loc);
    Expr row = binary(BinaryOp::Add, binary(BinaryOp::Mul, r, i32(p.P)), binary(BinaryOp::Sub, tx, i32(p.C)));
    std::vector<Expr> at;
    Expr inside;
    for (size_t d = 0; d < nd; ++d) {
        Expr i = cast(DType::Int32, substitute(c.src.ranges[d].min, vars));
        if (d + 1 == nd) i = binary(BinaryOp::Add, i, col);
        else if (constInt(c.src.ranges[d].extent) == std::optional<int64_t>(R) && R != 1) i = binary(BinaryOp::Add, i, row);
        i = simplify(i);
        Expr in = binary(BinaryOp::And, binary(BinaryOp::GE, i, i32(0)), binary(BinaryOp::LT, i, cast(DType::Int32, src->shape[d])));
        inside = inside ? binary(BinaryOp::And, inside, in) : in;
        at.push_back(i);
    }
    std::vector<Expr> to{stage, row, col};
    Stmt store = IfThenElse::make(simplify(inside), Store::make(ring, to, Load::make(src, at, c.loc), c.loc),
                                  Store::make(ring, to, intImm(0, src->dtype), c.loc), c.loc);
    Stmt rowBody = For::make(col, i32(0), i32(C), ForKind::Unrolled, 0, store, c.loc);
    if (R % p.P) rowBody = IfThenElse::make(binary(BinaryOp::LT, row, i32(R)), rowBody, nullptr, c.loc);
    return For::make(r, i32(0), i32((R + p.P - 1) / p.P), ForKind::Unrolled, 0, rowBody, c.loc);
}

/// Group g's part of stage `ps`: the wait for its release, the TMA loads (by the producer's first thread where
/// its other threads copy thread tiles) and the thread tiles' copies with every thread's arrival.
std::vector<Stmt> fillGroup(const Plan &p, const Kernel &k, int g, const Expr &ps, const Expr &pphase, const VarMap &toProducer) {
    const SourceRange &loc = p.loc;
    std::vector<Stmt> issue, tma;
    issue.push_back(lib::stmt(lib::Fn::MbarrierWait, {p.empty(g, ps), simplify(binary(BinaryOp::BitXor, pphase, i32(1)))}, loc));
    tma.push_back(lib::stmt(lib::Fn::MbarrierArriveExpectTx, {p.full(g, ps), groupBytes(p, g, toProducer)}, loc));
    for (size_t i : p.groups[(size_t)g].tiles)
        tma.push_back(tmaLoad(p, p.tiles[i], p.ringMap[i], origin(p.ring.at(p.tiles[i].copy->dst.buffer.get()), ps),
                              p.full(g, ps), toProducer, p.CM > 1 && p.cluster.shared[i] ? p.cluster.boxRows[i] : 0,
                              i < p.liveRows.size() ? p.liveRows[i] : nullptr));
    if (p.threadTiles.empty()) {
        issue.insert(issue.end(), tma.begin(), tma.end());
        return issue;
    }
    issue.push_back(IfThenElse::make(binary(BinaryOp::EQ, k.threadIdx, i32(p.C)), Seq::make(std::move(tma), loc), nullptr, loc));
    bool copied = false;
    for (size_t i = 0; i < p.threadTiles.size(); ++i)
        if (p.threadTileGroup[i] == g) issue.push_back(threadCopy(p, *p.threadTiles[i], ps, toProducer, k.threadIdx)), copied = true;
    if (copied) issue.push_back(lib::stmt(lib::Fn::MbarrierArrive, {p.full(g, ps)}, loc));
    return issue;
}

} // namespace

/// Each thread tile joins the barrier group of the TMA tiles first used where it is (the T.gemm_sp's A_sparse
/// and B): the consumers read it with their own loads, so every consumer thread releases that group's stages.
bool joinThreadTiles(Plan &p, std::string &why) {
    for (auto *c : p.threadTiles) {
        size_t first = p.rest.size(), last = 0;
        for (size_t j = 0; j < p.rest.size(); ++j)
            if (p.mentions[j].count(c->dst.buffer.get())) first = std::min(first, j), last = j;
        auto g = std::find_if(p.groups.begin(), p.groups.end(), [&](const Group &x) { return x.first == first; });
        if (g == p.groups.end()) return why = "a T.gemm_sp's metadata is first used where no TMA tile is", false;
        g->generic = true;
        g->last = std::max(g->last, last);
        p.threadTileGroup.push_back((int)(g - p.groups.begin()));
    }
    return true;
}

/// Producer: one thread loads the once tiles, then walks the loop, filling each group's part of a stage
/// once its consumers have released it; where it copies thread tiles, every thread of the producer warpgroup.
Stmt producerRole(const Plan &p, const Kernel &k) {
    const For &loop = *p.loop;
    const SourceRange &loc = p.loc;
    Var pk = makeVar(loop.var->name, loop.var->dtype, loop.var->loc);
    auto [ps, pphase] = p.stageOf(pk, p.producerTile);
    std::vector<Stmt> issue;
    VarMap toProducer{{loop.var.get(), pk}};
    for (int g = 0; g < p.G; ++g)
        for (auto &s : fillGroup(p, k, g, ps, pphase, toProducer)) issue.push_back(s);
    Stmt producerLoop = For::make(pk, loop.min, loop.extent, ForKind::Serial, 0, p.iteration(std::move(issue), toProducer), loc);
    if (p.ringBase) producerLoop = Seq::make({producerLoop, p.advanceBase()}, loc);
    // The once tiles ahead of the loop; persistent, for each output tile once the consumers have released
    // the previous one's (the first tile's wait, on the parity before the barrier's first phase, passes).
    if (!p.once.empty()) {
        int64_t onceBytes = 0;
        for (auto &t : p.once) onceBytes += t.bytes();
        std::vector<Stmt> first;
        if (p.persistent)
            first.push_back(lib::stmt(lib::Fn::MbarrierWait, {p.onceEmpty, simplify(binary(BinaryOp::BitXor, binary(BinaryOp::FloorMod, p.producerTile, i32(2)), i32(1)))}, loc));
        first.push_back(lib::stmt(lib::Fn::MbarrierArriveExpectTx, {p.onceBar, i32(onceBytes)}, loc));
        for (size_t i = 0; i < p.once.size(); ++i)
            first.push_back(tmaLoad(p, p.once[i], p.onceMap[i], origin(p.once[i].copy->dst.buffer, nullptr), p.onceBar, {}, 0));
        first.push_back(producerLoop);
        producerLoop = Seq::make(std::move(first), loc);
    }
    // the scalars the positions read that the kernel computes by loops (a grouped GEMM's group scan), per tile
    if (!p.replay.empty()) {
        std::vector<Stmt> replayed = p.replay;
        replayed.push_back(producerLoop);
        producerLoop = Seq::make(std::move(replayed), loc);
    }
    if (p.walk) { // the consumers' walk, in the producer's own variables
        VarMap vars = freshWalkVars(*p.walk);
        producerLoop = rewrapTileWalk(*p.walk, substitute(producerLoop, vars), vars, true);
    }
    if (p.persistent) producerLoop = For::make(p.producerTile, i32(0), p.tileCount, ForKind::Persistent, 0, producerLoop, loc);
    if (p.ringBase) producerLoop = Seq::make({p.resetBase(), producerLoop}, loc);
    if (!p.threadTiles.empty()) return producerLoop; // (no once tiles: planTiles)
    return IfThenElse::make(binary(BinaryOp::EQ, k.threadIdx, i32(p.C)), producerLoop, nullptr, loc);
}

/// Consumers: the kernel's own code; each group's stage waited for before its first use and released
/// (one arrival per consumer warp: its lane 0) after its last.
Stmt consumerRole(const std::vector<Stmt> &top, const Plan &p, const Kernel &k, const LoweringOptions &o) {
    const For &loop = *p.loop;
    const SourceRange &loc = p.loc;
    const size_t at = p.at;
    const Var tx = k.threadIdx;
    auto [cs, cphase] = p.stageOf(loop.var, p.consumerTile);
    // Persistent with once tiles: their release (one arrival per consumer warp) after the last statement
    // of the tile's last iteration that reads them (attention's last QK^T, whose wgmma wait precedes the
    // release), so that the next tile's Q lands under this tile's last P.V and epilogue; after the loop
    // where it runs no iteration, or where overlapScores or pingPongConsumers rewrite the loop's body (they
    // match its statements).
    const Expr lane0 = binary(BinaryOp::EQ, binary(BinaryOp::FloorMod, tx, i32(32)), i32(0));
    const Stmt onceRelease = p.onceGeneric ? genericRelease(p.onceEmpty, loc)
                                           : IfThenElse::make(lane0, lib::stmt(lib::Fn::MbarrierArrive, {p.onceEmpty}, loc), nullptr, loc);
    size_t onceLast = p.rest.size();
    // ... and after the loop where the iterations run under a condition (the last one may not run).
    if (p.persistent && !p.once.empty() && !attentionSchedule(p.rest, o, p.S).any() && !p.guard)
        for (size_t j = 0; j < p.rest.size(); ++j)
            for (auto &t : p.once)
                if (p.mentions[j].count(t.copy->dst.buffer.get())) onceLast = j;
    const Expr lastIter = simplify(binary(BinaryOp::Sub, binary(BinaryOp::Add, loop.min, loop.extent), i32(1)));
    std::vector<Stmt> body;
    for (size_t j = 0; j < p.rest.size(); ++j) {
        for (int g = 0; g < p.G; ++g)
            if (p.groups[(size_t)g].first == j) body.push_back(lib::stmt(lib::Fn::MbarrierWait, {p.full(g, cs), cphase}, loc));
        body.push_back(stageBuffers(p.rest[j], p.ring, cs));
        for (int g = 0; g < p.G; ++g)
            if (p.groups[(size_t)g].last == j && (p.mma || p.groups[(size_t)g].generic))
                body.push_back(genericRelease(p.empty(g, cs), loc));
            else if (p.groups[(size_t)g].last == j)
                // In a cluster on every block's empty barrier: each block's producer multicasts into both.
                body.push_back(IfThenElse::make(binary(BinaryOp::EQ, binary(BinaryOp::FloorMod, tx, i32(32)), i32(0)),
                                                p.CM > 1 ? lib::stmt(lib::Fn::MbarrierArriveCluster, {p.empty(g, cs), i32(p.CM)}, loc)
                                                         : lib::stmt(lib::Fn::MbarrierArrive, {p.empty(g, cs)}, loc),
                                                nullptr, loc));
        if (j == onceLast) body.push_back(IfThenElse::make(binary(BinaryOp::EQ, loop.var, lastIter), onceRelease, nullptr, loc));
    }
    std::vector<Stmt> consumer;
    for (size_t i = 0; i < at; ++i) {
        bool isOnce = std::find(p.onceAt.begin(), p.onceAt.end(), i) != p.onceAt.end();
        if (!isOnce) consumer.push_back(top[i]);
        else if (i == p.onceAt.back())
            consumer.push_back(lib::stmt(lib::Fn::MbarrierWait, {p.onceBar, p.persistent ? simplify(binary(BinaryOp::FloorMod, p.consumerTile, i32(2))) : i32(0)},
                                         top[i]->loc));
    }
    consumer.push_back(For::make(loop.var, loop.min, loop.extent, ForKind::Serial, 0, p.iteration(std::move(body), {}), loc));
    if (p.persistent && !p.once.empty())
        consumer.push_back(onceLast < p.rest.size()
                               ? IfThenElse::make(binary(BinaryOp::LE, loop.extent, i32(0)), onceRelease, nullptr, loc)
                               : onceRelease);
    if (p.ringBase) consumer.push_back(p.advanceBase());
    if (p.consumerBarrier) consumer.push_back(lib::stmt(lib::Fn::Sync, {}, loc)); // every consumer done with the loop's tiles
    consumer.insert(consumer.end(), top.begin() + (long)at + 1, top.end());
    Stmt consumerBody = Seq::make(std::move(consumer), loc);
    if (p.walk) { // the kernel's statements, the walk's innermost list replaced
        std::vector<Stmt> outer = *p.outer;
        outer[p.walkAt] = rewrapTileWalk(*p.walk, consumerBody, {}, false);
        consumerBody = Seq::make(std::move(outer), loc);
    }
    if (p.persistent) consumerBody = For::make(p.consumerTile, i32(0), p.tileCount, ForKind::Persistent, 0, consumerBody, loc);
    if (p.ringBase) consumerBody = Seq::make({p.resetBase(), consumerBody}, loc);
    return consumerBody;
}

namespace {

/// Whether the producer's threads copy a thread tile of barrier group g (each then arrives on its full barrier).
bool groupCopies(const Plan &p, int g) { return std::count(p.threadTileGroup.begin(), p.threadTileGroup.end(), g) > 0; }

} // namespace

/// Thread 0 initialises every barrier: full (one arrival: the producer's, and one per producer thread where
/// they copy thread tiles) and empty (the consumers').
Stmt initBarriers(const Plan &p, const Kernel &k) {
    const SourceRange &loc = p.loc;
    const int C = p.C;
    std::vector<Stmt> init;
    for (int g = 0; g < p.G; ++g)
        for (int s = 0; s < p.S; ++s) {
            init.push_back(lib::stmt(lib::Fn::MbarrierInit, {p.full(g, i32(s)), i32(1 + (groupCopies(p, g) ? p.P : 0))}, loc));
            init.push_back(lib::stmt(lib::Fn::MbarrierInit,
                                     {p.empty(g, i32(s)), i32(p.mma || p.groups[(size_t)g].generic ? C : C / 32 * p.CM)}, loc));
        }
    if (!p.once.empty()) init.push_back(lib::stmt(lib::Fn::MbarrierInit, {p.onceBar, i32(1)}, loc));
    if (p.persistent && !p.once.empty())
        init.push_back(lib::stmt(lib::Fn::MbarrierInit, {p.onceEmpty, i32(p.onceGeneric ? C : C / 32)}, loc));
    init.push_back(lib::stmt(lib::Fn::MbarrierInitFence, {}, loc));
    return IfThenElse::make(binary(BinaryOp::EQ, k.threadIdx, i32(0)), Seq::make(std::move(init), loc), nullptr, loc);
}

} // namespace tilec::passes::warproles
