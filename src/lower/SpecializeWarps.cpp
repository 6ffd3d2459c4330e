/// \file
/// Warp specialization with TMA rings and mbarriers (include/tilec/passes/SpecializeWarps.h).
#include "tilec/passes/SpecializeWarps.h"

#include "tilec/Diagnostics.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/LibraryCalls.h"
#include "tilec/passes/Staging.h"
#include "tilec/passes/WarpRolePlan.h"

#include <algorithm>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

bool readsBuffers(const Expr &e) {
    struct Reads : IRVisitor {
        using IRVisitor::visit;
        bool any = false;
        void visit(const Load &) override { any = true; }
    } r;
    r.visit(e);
    return r.any;
}

/// Whether any T.gemm in `stmts` reads A from a fragment.
bool anyRegisterOperand(const std::vector<Stmt> &stmts) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Gemm &g) override { found |= aInRegisters(g); }
    } v;
    for (auto &s : stmts) v.visit(s);
    return v.found;
}

/// Uses of the ring buffers other than as the shared operands of a wgmma T.gemm.
struct OtherUses : IRVisitor {
    using IRVisitor::visit;
    const std::map<const BufferNode *, const TmaTile *> *tiles = nullptr;
    int warpgroups = 1;
    bool rowsOnly = false;
    bool mma = false; ///< the consumers use mma.sync (sm_90), not wgmma
    bool found = false;
    void use(const Buffer &b) { found |= b && tiles->count(b.get()); }
    void visit(const Load &op) override { use(op.buffer), IRVisitor::visit(op); }
    void visit(const Store &op) override { use(op.buffer), IRVisitor::visit(op); }
    void visit(const Copy &op) override { use(op.src.buffer), use(op.dst.buffer), IRVisitor::visit(op); }
    void visit(const Fill &op) override { use(op.dst.buffer), IRVisitor::visit(op); }
    void visit(const Reduce &op) override { use(op.src), use(op.dst); }
    void visit(const AtomicAdd &op) override { use(op.dst.buffer), IRVisitor::visit(op); }
    void visit(const Gemm &op) override {
        use(op.c.buffer);
        if (!(mma ? mmaPanelsCan(op, *tiles) : wgmmaCan(op, *tiles, warpgroups, rowsOnly))) use(op.a.buffer), use(op.b.buffer);
    }
};

/// Marks the T.gemms of the loop body that run on wgmma.
struct MarkWgmma : IRMutator {
    using IRMutator::visit;
    const std::map<const BufferNode *, const TmaTile *> *tiles = nullptr;
    int warpgroups = 1;
    bool rowsOnly = false;
    bool mma = false;            ///< sm_90: mark mma.sync over the panel layout instead
    bool registerAOnMma = false; ///< a T.gemm with A from registers stays on mma.sync
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        if (mma) return mmaPanelsCan(*op, *tiles) ? op->withInstr(GemmInstr::MmaPanels) : op;
        if (wgmmaCan(*op, *tiles, warpgroups, rowsOnly)) return op->withInstr(GemmInstr::Wgmma);
        registerAOnMma |= aInRegisters(*op);
        return op;
    }
};

/// A shared buffer the consumers' code (the kernel's statements and the pipelined loop's rest) touches other
/// than the TMA tiles (the ring's, and those loaded once, whose copies at `onceAt` the producer takes over);
/// null when none: then one output tile's consumers cannot race the next tile's over shared memory, and the
/// roles may walk several tiles without a barrier between them (the once tiles behind a full/empty barrier
/// pair of their own).
const BufferNode *sharedOutsideTiles(const std::vector<Stmt> &top, size_t at, const std::map<const BufferNode *, const TmaTile *> &tiles,
                                     const std::vector<size_t> &onceAt) {
    for (size_t i = 0; i < top.size(); ++i) {
        if (std::find(onceAt.begin(), onceAt.end(), i) != onceAt.end()) continue;
        for (auto *b : mentionedBuffers(top[i], nullptr))
            if (b->scope == Scope::Shared && !(i == at && tiles.count(b))) return b;
    }
    return nullptr;
}

class Specializer {
  public:
    Specializer(const Kernel &k, const Variant &v, const SourceManager *sources)
        : k_(k), t_(v.target), o_(v.options), sources_(sources) {}

    std::string clusterWhy; ///< why T.ClusterKernel's clusters were not planned (empty: they were, or none asked)

    /// The rewritten kernel, or null when nothing applies; -v logs which, and why.
    std::shared_ptr<Kernel> run() {
        if (k_.threads % 128 || !k_.threadIdx) {
            log(k_.launchLoc, "keeps the cp.async path: " + std::string(k_.threads % 128 ? "threads are not whole warpgroups"
                                                                                    : "the kernel has no thread binding"));
            return nullptr;
        }
        std::vector<Stmt> top;
        if (auto q = as<Seq>(k_.body)) top = q->stmts;
        else top = {k_.body};
        for (size_t i = 0; i < top.size(); ++i) {
            auto f = as<For>(top[i]);
            if (!f || f->forKind != ForKind::Pipelined || f->numStages < 1) continue;
            why_.clear();
            if (auto k = specialize(top, i)) {
                log(f->loc, std::string("T.Pipelined loop -> warp roles: a producer ") + (t_.hasWgmma() ? "warpgroup" : "warp") + " loading " +
                                std::to_string(ringTiles_) + " tile(s) per stage by TMA" +
                                (barrierGroups_ > 1 ? " behind " + std::to_string(barrierGroups_) + " full/empty barrier pairs (each waited for where first used)" : "") +
                                (onceTiles_ ? ", " + std::to_string(onceTiles_) + " tile(s) once before the loop" : "") + ", " +
                                std::to_string(k_.threads / 128) + " consumer warpgroup(s) on " +
                                (t_.hasWgmma() ? "wgmma" : "mma.sync (ldmatrix from TMA's panel layout; a producer warp, no setmaxnreg)") +
                                (registerA_ ? " (A from registers: RS)" : "") + "; " +
                                std::to_string(k->minBlocksPerSM) + " block(s) per SM" + (k->persistent ? ", persistent" : ", not persistent: " + notPersistent_) +
                                (k->persistent && onceTiles_ ? " (the once tiles reloaded per output tile behind a full/empty barrier pair)" : "") +
                                (k->walkSlowest != 2 ? " walking grid dimension " + std::to_string(k->walkSlowest) +
                                                           " slowest (the loop's trip count depends on its block index)"
                                                     : "") +
                                (k->clusterSize > 1 ? ", clusters of " + std::to_string(k->clusterSize) + " along grid dimension " +
                                                          std::to_string(k->clusterAxis) + " sharing " + std::to_string(k->sharedTiles) +
                                                          " tile(s) by TMA multicast"
                                                    : ""));
                return k;
            }
            log(f->loc, "T.Pipelined loop keeps the cp.async path: " + (why_.empty() ? std::string("no T.gemm can use wgmma") : why_));
        }
        return nullptr;
    }

  private:
    const Kernel &k_;
    const Target &t_;
    const LoweringOptions &o_;
    const SourceManager *sources_;
    std::string why_; ///< why the last loop tried was not specialized
    int barrierGroups_ = 0, onceTiles_ = 0, ringTiles_ = 0; ///< of the loop specialized: full/empty barrier pairs per stage, tiles loaded once
    bool registerA_ = false;                ///< ... and whether a T.gemm in it reads A from registers (wgmma RS)
    std::string notPersistent_;             ///< ... and why its roles do not walk several output tiles

    void log(const SourceRange &at, const std::string &what) const {
        remark(sources_, at, "kernel '" + k_.name + "' (" + t_.name + "): " + what);
    }
    std::nullptr_t no(std::string why) {
        why_ = std::move(why);
        return nullptr;
    }

    /// The TMA tiles loaded once before the loop: top-level copies ahead of it whose shared destination is
    /// mentioned by no other top-level statement than the copy and the loop (FlashAttention's Q). Null
    /// when one such copy is not a TMA tile (its buffer then stays an ordinary one).
    std::vector<TmaTile> onceTiles(const std::vector<Stmt> &top, size_t at, std::vector<size_t> &where) {
        std::vector<TmaTile> out;
        std::set<const BufferNode *> inLoop = mentionedBuffers(top[at], nullptr);
        for (size_t i = 0; i < at; ++i) {
            auto c = as<Copy>(top[i]);
            if (!c || !c->dst.buffer || !inLoop.count(c->dst.buffer.get())) continue;
            auto t = planTmaTile(*c, k_);
            if (!t || std::any_of(t->coords.begin(), t->coords.end(), readsBuffers) || !tmaNeverHolds(t->map.tensor).empty()) continue;
            bool alone = true;
            for (size_t j = 0; j < top.size() && alone; ++j)
                if (j != i && j != at) alone = !mentionedBuffers(top[j], nullptr).count(c->dst.buffer.get());
            if (!alone) continue;
            out.push_back(*t);
            where.push_back(i);
        }
        return out;
    }

    /// A grid dimension whose block index the loop's bounds depend on (attention's causal key blocks on the
    /// query block), -1 where none; `count` (if given) is set to how many do.
    int workAxis(const For &loop, int *count) const {
        int axis = -1, found = 0;
        for (int d = 0; d < 3; ++d)
            if (k_.blockIdx[(size_t)d] && (mentions(loop.min, k_.blockIdx[(size_t)d].get()) || mentions(loop.extent, k_.blockIdx[(size_t)d].get())))
                axis = d, ++found;
        if (count) *count = found;
        return axis;
    }

    std::shared_ptr<Kernel> specialize(const std::vector<Stmt> &top, size_t at) {
        const For &loop = *as<For>(top[at]);
        // sm_90a: a producer warpgroup, whose registers setmaxnreg hands to the consumers. sm_90 (no setmaxnreg):
        // one producer warp, so that the registers every thread keeps are wasted on 32 threads, not 128.
        const bool mma = !t_.hasWgmma();
        const int S = loop.numStages, C = k_.threads, P = mma ? 32 : 128;
        if (readsBuffers(loop.min) || readsBuffers(loop.extent)) return no("its bounds read a buffer");
        LoopSplit split = splitPipelinedBody(loop);
        if (split.hoisted.empty()) return no("no global-to-shared tile copy to hoist into a producer");
        std::vector<TmaTile> tiles;
        for (auto *c : split.hoisted) {
            auto t = planTmaTile(*c, k_);
            if (!t) return no("a copy is not a TMA tile (2-D or more, 16-byte rows, a box TMA can take)");
            if (auto never = tmaNeverHolds(t->map.tensor); !never.empty()) return no(never + " (no TMA variant)");
            for (auto &e : t->coords)
                if (readsBuffers(e)) return no("a copy's position reads a buffer");
            tiles.push_back(*t);
        }
        std::vector<size_t> onceAt;
        std::vector<TmaTile> once = onceTiles(top, at, onceAt);
        std::map<const BufferNode *, const TmaTile *> byBuffer;
        for (auto *list : {&tiles, &once})
            for (auto &t : *list) {
                if (byBuffer.count(t.copy->dst.buffer.get())) return no("two copies load one shared buffer");
                byBuffer[t.copy->dst.buffer.get()] = &t;
            }
        // The ring buffers live only in this loop, only as wgmma operands, and every tile feeds one.
        std::set<const BufferNode *> outside = mentionedBuffers(k_.body, top[at].get());
        for (auto &t : tiles)
            if (outside.count(t.copy->dst.buffer.get())) return no("a staged buffer is used outside the loop");
        for (auto *b : copyTargets(split.rest))
            if (byBuffer.count(b)) return no("a staged buffer is also written in the loop");
        const bool rowsOnly = anyRegisterOperand(split.rest);
        OtherUses other;
        other.tiles = &byBuffer;
        other.warpgroups = C / 128;
        other.rowsOnly = rowsOnly;
        other.mma = mma;
        for (auto &s : split.rest) other.visit(s);
        if (other.found && mma) return no("a staged buffer is used by something other than a T.gemm reading it as a TMA tile "
                                          "(rows a multiple of 8; A from registers needs a 16-bit fragment)");
        if (other.found) return no("a staged buffer is used by something other than a wgmma (e.g. a T.gemm wgmma cannot take: "
                                    "tf32, float8 and int8 operands must be K-major; A from registers needs a 16-bit "
                                    "fragment and the consumer warpgroups splitting the rows only)");
        MarkWgmma mark;
        mark.tiles = &byBuffer;
        mark.warpgroups = C / 128;
        mark.rowsOnly = rowsOnly;
        mark.mma = mma;
        std::vector<Stmt> rest;
        bool anyWgmma = false;
        for (auto &s : split.rest) {
            rest.push_back(mark.mutate(s));
            anyWgmma |= rest.back() != s;
        }
        if (!anyWgmma) return no(mma ? "no T.gemm in it reads the TMA tiles" : "no T.gemm in it can use wgmma (operand types, layouts or shapes)");
        // its A fragment would need mma.sync's layout while the products feeding it have wgmma's
        if (mark.registerAOnMma) return no("a T.gemm with A from registers cannot use wgmma (B not a TMA tile, or the "
                                           "consumer warpgroups cannot split its rows)");

        auto nk = std::make_shared<Kernel>(k_);
        const SourceRange &loc = loop.loc;
        // Barrier groups: the tiles first used by the same statement of the body share a full and an empty
        // barrier per stage, so that the consumers wait for each tile only where they first need it (attention's
        // QK^T before V has landed) and release it after its last use. Group g's full[s] is at 2gS + s, its
        // empty[s] at 2gS + S + s; the once-loaded tiles' barrier follows them.
        std::vector<std::set<const BufferNode *>> mentions;
        for (auto &s : rest) mentions.push_back(mentionedBuffers(s, nullptr));
        struct Group {
            size_t first = 0, last = 0;
            std::vector<size_t> tiles;
            int64_t bytes = 0;
        };
        std::vector<Group> groups;
        for (size_t i = 0; i < tiles.size(); ++i) {
            const BufferNode *b = tiles[i].copy->dst.buffer.get();
            size_t first = rest.size(), last = 0;
            for (size_t j = 0; j < rest.size(); ++j)
                if (mentions[j].count(b)) first = std::min(first, j), last = j;
            if (first == rest.size()) return no("a staged tile is loaded but never used");
            auto g = std::find_if(groups.begin(), groups.end(), [&](const Group &x) { return x.first == first; });
            if (g == groups.end()) g = groups.insert(std::upper_bound(groups.begin(), groups.end(), first,
                                                                      [](size_t f, const Group &x) { return f < x.first; }),
                                                     Group{first, last, {}, 0});
            g->last = std::max(g->last, last);
            g->tiles.push_back(i);
            g->bytes += tiles[i].bytes();
        }
        const int G = (int)groups.size();
        // sm_90's mma.sync consumers are checked (simulator, SASS) for GEMM loops; attention-shaped ones keep
        // cp.async there.
        if (mma && (G > 1 || !once.empty()))
            return no("on sm_90 (no wgmma) only a GEMM loop takes warp roles: its tiles first used by one statement, "
                      "none loaded once before the loop");
        // Rings and barriers.
        std::map<const BufferNode *, Buffer> ring;
        for (auto &t : tiles) ring[t.copy->dst.buffer.get()] = ringOf(t.copy->dst.buffer, S);
        // Persistent: each role walks the block's output tiles; the ring's position runs on across them. Tiles
        // loaded once per output tile (attention's Q) are reloaded for each: the producer waits until the
        // consumers have released the previous tile's (their "once empty" barrier after its last read).
        const BufferNode *outsideTiles = sharedOutsideTiles(top, at, byBuffer, onceAt);
        // Tiles of unequal work (the trip count depends on a block index: causal attention) are walked with that
        // index in groups (LoweringOptions::walkGroup; walked slowest, they lost 5 % to the hardware's dynamic block
        // scheduling at causal 8,16,4096, docs/PERFORMANCE.md session 8; in groups of 7 they won 2-13 %,
        // session 9); where the work depends on two block indices, or with --walk-group=0, one block per tile; also
        // where there are no more tiles than SMs, so that every block would walk one (the seed's 64 causal tiles:
        // 0.0168 ms persistent against 0.0160 one block per tile on the H200, session 9).
        const Expr gridTiles = simplify(binary(BinaryOp::Mul, binary(BinaryOp::Mul, k_.grid[0], k_.grid[1]), k_.grid[2]));
        const auto constTiles = constInt(gridTiles);
        int uneven = 0;
        const int unevenAxis = workAxis(loop, &uneven);
        const bool oneWave = uneven == 1 && constTiles && *constTiles <= t_.numSms;
        const bool unevenTiles = uneven > 1 || (uneven == 1 && (o_.walkGroup == 0 || oneWave));
        const bool persistent = o_.persistent && !outsideTiles && !unevenTiles;
        notPersistent_ = persistent ? "" : !o_.persistent ? "--no-persistent" : outsideTiles ? "the consumers use shared buffer '" + outsideTiles->name + "' outside the TMA tiles"
                         : uneven > 1 ? "its tiles differ in work (the loop's trip count depends on several block indices)"
                         : o_.walkGroup == 0 ? "its tiles differ in work (the loop's trip count depends on a block index; --walk-group=0)"
                                             : "its tiles differ in work and are no more than the " + std::to_string(t_.numSms) + " SMs (--num-sms): one wave, every block one tile";
        const int onceBarriers = once.empty() ? 0 : persistent ? 2 : 1;
        Buffer mbar = makeBuffer("tilec_mbar", Scope::Shared, DType::UInt64, {i32(2 * G * S + onceBarriers)}, loc);
        for (auto &b : nk->allocs)
            if (b && ring.count(b.get())) b = ring[b.get()];
        nk->allocs.push_back(mbar);
        // Clustered (persistent GEMMs with one barrier group): the walk is over cluster units, pairs of tiles that
        // share a tile. Only where each block walks at least two waves of tiles: a single wave of clustered
        // blocks measured slower than unclustered ones (4096x1024x8192 on the H200, 2026-12-01).
        const int blocks = plannedBlocks(*nk, C, P, t_);
        // sm_90 keeps every thread at the launch bound's share: at one block per SM, a producer warp beside
        // whole consumer warpgroups puts one warp more on a sub-partition and costs the consumers up to a
        // third of their registers. Where their fragments and the room plannedBlocks keeps no longer fit, the
        // cp.async variant is the better one: ptxas -v measured 128x256 tiles over 256 threads spilling there
        // (float16: 112 bytes at 168 registers, none at 224 with cp.async; float8: 820 against 96 bytes).
        const int shareWith = partitionRegisters(C + P, blocks, t_), shareWithout = partitionRegisters(C, blocks, t_);
        if (mma && blocks == 1 && shareWith < shareWithout && fragmentWords(*nk, C) + 64 > shareWith)
            return no("on sm_90 (no setmaxnreg) a producer warp would leave the consumers " + std::to_string(shareWith) +
                      " registers per thread instead of " + std::to_string(shareWithout) + ", too few for their " +
                      std::to_string(fragmentWords(*nk, C)) + " fragment registers and 64 more (register budget)");
        ClusterPlan cluster;
        const auto &cd = k_.clusterDims;
        if (cd[0] * cd[1] * cd[2] > 1) { // T.ClusterKernel: the author's clusters, or why not
            const int axis = cd[1] == 1 && cd[2] == 1 ? 0 : cd[0] == 1 && cd[2] == 1 ? 1 : cd[0] == 1 && cd[1] == 1 ? 2 : -1;
            if (axis < 0 || cd[0] * cd[1] * cd[2] != 2)
                clusterWhy = "tilec's clusters are two blocks along one grid dimension: (2, 1, 1), (1, 2, 1) or (1, 1, 2)";
            else if (!persistent)
                clusterWhy = "the kernel's warp roles are not persistent (--no-persistent, or shared memory used outside the ring)";
            else if (!once.empty())
                clusterWhy = "the kernel loads tiles once per output tile (its clusters share ring tiles only)";
            else if (G != 1)
                clusterWhy = "the loop's tiles are waited for in several barrier groups";
            else if (axis >= k_.gridDims)
                clusterWhy = "T.Kernel has no grid dimension " + std::to_string(axis);
            else if (o_.clusters && (cluster = planCluster(k_, tiles, loop.var.get(), axis)).axis < 0)
                clusterWhy = "no tile of the loop can be shared along grid dimension " + std::to_string(axis) +
                             " (each depends on it, or its boxes do not split in two, or the grid's extent there is not an even constant)";
        } else if (persistent && once.empty() && G == 1 && o_.clusters && t_.archSpecific && constTiles && *constTiles >= 2LL * t_.numSms * blocks) {
            cluster = planCluster(k_, tiles, loop.var.get());
        }
        const int CM = cluster.axis >= 0 ? 2 : 1;
        // Tensor maps, one per distinct (tensor, box, swizzle); a multicast tile's box is one block's share.
        auto mapOf = [&](const TmaTile &t, int64_t boxRows) {
            TensorMap m = t.map;
            if (boxRows) m.box[(size_t)t.rowDim] = boxRows;
            auto it = std::find(nk->tensorMaps.begin(), nk->tensorMaps.end(), m);
            if (it == nk->tensorMaps.end()) it = nk->tensorMaps.insert(nk->tensorMaps.end(), m);
            return (int)(it - nk->tensorMaps.begin());
        };
        std::vector<int> ringMap, onceMap;
        for (size_t i = 0; i < tiles.size(); ++i) ringMap.push_back(mapOf(tiles[i], CM > 1 ? cluster.boxRows[i] : 0));
        for (auto &t : once) onceMap.push_back(mapOf(t, 0));
        auto barrier = [&](const Expr &index) { return addressOf(mbar, {simplify(index)}); };
        auto full = [&](int g, const Expr &stage) { return barrier(binary(BinaryOp::Add, i32(2 * g * S), stage)); };
        auto empty = [&](int g, const Expr &stage) { return barrier(binary(BinaryOp::Add, i32(2 * g * S + S), stage)); };
        const Expr onceBar = barrier(i32(2 * G * S)), onceEmpty = barrier(i32(2 * G * S + 1));

        Var tx = k_.threadIdx;
        Expr tileCount = persistent ? simplify(binary(BinaryOp::FloorDiv, gridTiles, i32(CM))) : Expr();
        Var producerTile = persistent ? makeVar("tile", DType::Int32, loc) : Var();
        Var consumerTile = persistent ? makeVar("tile", DType::Int32, loc) : Var();
        // The ring's position runs on across a block's tiles: tile * trips + k where every tile runs the same
        // trips; where they differ (attention's causal loop on the query block) a count of the iterations of
        // the block's earlier tiles, one per role thread (`ringBase`, advanced after each tile's loop).
        const bool tripsVary = persistent && unevenAxis >= 0;
        Buffer ringBase = tripsVary ? makeBuffer("tilec_ring_base", Scope::Var, DType::Int32, {i32(1)}, loc) : Buffer();
        if (ringBase) nk->allocs.push_back(ringBase);
        const Expr baseNow = ringBase ? Load::make(ringBase, {i32(0)}, loc) : Expr();
        auto resetBase = [&]() { return Store::make(ringBase, {i32(0)}, i32(0), loc); };
        auto advanceBase = [&]() { return Store::make(ringBase, {i32(0)}, simplify(binary(BinaryOp::Add, baseNow, binary(BinaryOp::Max, loop.extent, i32(0)))), loc); };
        auto stageOf = [&](const Var &ko, const Var &tile) {
            Expr k0 = simplify(binary(BinaryOp::Sub, ko, loop.min));
            if (tile) k0 = simplify(binary(BinaryOp::Add, ringBase ? baseNow : binary(BinaryOp::Mul, tile, loop.extent), k0));
            return std::pair{simplify(binary(BinaryOp::FloorMod, k0, i32(S))),
                             simplify(binary(BinaryOp::FloorMod, binary(BinaryOp::FloorDiv, k0, i32(S)), i32(2)))};
        };
        // boxRows > 0: this block's share of a tile the cluster loads together, multicast to every block of it.
        auto tmaLoad = [&](const TmaTile &t, int map, const Expr &dst, const Expr &bar, const VarMap &vars, int64_t boxRows) {
            std::vector<Expr> args{i32(t.rank), i32(t.rowDim), i32(t.rows), i32(t.cols), i32(t.elemBytes), i32(t.swizzle)};
            if (boxRows) args.insert(args.end(), {i32(boxRows), i32(CM)});
            args.insert(args.end(), {dst, i32(map), bar});
            if (boxRows) args.insert(args.end(), {i32((1 << CM) - 1), lib::call(lib::Fn::ClusterRank, {}, loc, DType::Int32)});
            for (size_t j = 0; j < 5; ++j) args.push_back(j < t.coords.size() ? simplify(substitute(t.coords[j], vars)) : i32(0));
            return lib::stmt(boxRows ? lib::Fn::TmaLoadTileMulticast : lib::Fn::TmaLoadTile, std::move(args), t.copy->loc);
        };

        // Producer: one thread loads the once tiles, then walks the loop, filling each group's part of a stage
        // once its consumers have released it.
        Var pk = makeVar(loop.var->name, loop.var->dtype, loop.var->loc);
        auto [ps, pphase] = stageOf(pk, producerTile);
        std::vector<Stmt> issue;
        VarMap toProducer{{loop.var.get(), pk}};
        for (int g = 0; g < G; ++g) {
            issue.push_back(lib::stmt(lib::Fn::MbarrierWait, {empty(g, ps), simplify(binary(BinaryOp::BitXor, pphase, i32(1)))}, loc));
            issue.push_back(lib::stmt(lib::Fn::MbarrierArriveExpectTx, {full(g, ps), i32(groups[(size_t)g].bytes)}, loc));
            for (size_t i : groups[(size_t)g].tiles)
                issue.push_back(tmaLoad(tiles[i], ringMap[i], addressOf(ring[tiles[i].copy->dst.buffer.get()], {ps, i32(0), i32(0)}),
                                        full(g, ps), toProducer, CM > 1 && cluster.shared[i] ? cluster.boxRows[i] : 0));
        }
        Stmt producerLoop = For::make(pk, loop.min, loop.extent, ForKind::Serial, 0, Seq::make(std::move(issue), loc), loc);
        if (ringBase) producerLoop = Seq::make({producerLoop, advanceBase()}, loc);
        // The once tiles ahead of the loop; persistent, for each output tile once the consumers have released
        // the previous one's (the first tile's wait, on the parity before the barrier's first phase, passes).
        if (!once.empty()) {
            int64_t onceBytes = 0;
            for (auto &t : once) onceBytes += t.bytes();
            std::vector<Stmt> first;
            if (persistent)
                first.push_back(lib::stmt(lib::Fn::MbarrierWait, {onceEmpty, simplify(binary(BinaryOp::BitXor, binary(BinaryOp::FloorMod, producerTile, i32(2)), i32(1)))}, loc));
            first.push_back(lib::stmt(lib::Fn::MbarrierArriveExpectTx, {onceBar, i32(onceBytes)}, loc));
            for (size_t i = 0; i < once.size(); ++i)
                first.push_back(tmaLoad(once[i], onceMap[i], addressOf(once[i].copy->dst.buffer, {i32(0), i32(0)}), onceBar, {}, 0));
            first.push_back(producerLoop);
            producerLoop = Seq::make(std::move(first), loc);
        }
        if (persistent) producerLoop = For::make(producerTile, i32(0), tileCount, ForKind::Persistent, 0, producerLoop, loc);
        if (ringBase) producerLoop = Seq::make({resetBase(), producerLoop}, loc);
        Stmt producer = IfThenElse::make(binary(BinaryOp::EQ, tx, i32(C)), producerLoop, nullptr, loc);

        // Consumers: the kernel's own code; each group's stage waited for before its first use and released
        // (one arrival per consumer warp: its lane 0) after its last.
        auto [cs, cphase] = stageOf(loop.var, consumerTile);
        // Persistent with once tiles: their release (one arrival per consumer warp) after the last statement
        // of the tile's last iteration that reads them (attention's last QK^T, whose wgmma wait precedes the
        // release), so that the next tile's Q lands under this tile's last P.V and epilogue; after the loop
        // where it runs no iteration, or where --intra-overlap or --pingpong rewrite the loop's body (they
        // match its statements).
        const Expr lane0 = binary(BinaryOp::EQ, binary(BinaryOp::FloorMod, tx, i32(32)), i32(0));
        const Stmt onceRelease = IfThenElse::make(lane0, lib::stmt(lib::Fn::MbarrierArrive, {onceEmpty}, loc), nullptr, loc);
        size_t onceLast = rest.size();
        if (persistent && !once.empty() && !o_.intraOverlap && !o_.pingPong)
            for (size_t j = 0; j < rest.size(); ++j)
                for (auto &t : once)
                    if (mentions[j].count(t.copy->dst.buffer.get())) onceLast = j;
        const Expr lastIter = simplify(binary(BinaryOp::Sub, binary(BinaryOp::Add, loop.min, loop.extent), i32(1)));
        std::vector<Stmt> body;
        for (size_t j = 0; j < rest.size(); ++j) {
            for (int g = 0; g < G; ++g)
                if (groups[(size_t)g].first == j) body.push_back(lib::stmt(lib::Fn::MbarrierWait, {full(g, cs), cphase}, loc));
            body.push_back(stageBuffers(rest[j], ring, cs));
            for (int g = 0; g < G; ++g)
                if (groups[(size_t)g].last == j && mma) {
                    // mma.sync's ldmatrix reads are each thread's own: every consumer thread releases them. They
                    // read through the generic proxy and the producer's next TMA writes the stage through the
                    // async proxy: a proxy fence orders the two (without it the arrival's SASS waits for no
                    // outstanding ldmatrix, and persistent sm_90 GEMMs summed wrong stages on the H200).
                    body.push_back(lib::stmt(lib::Fn::FenceProxyAsync, {}, loc));
                    body.push_back(lib::stmt(lib::Fn::MbarrierArriveEach, {empty(g, cs)}, loc));
                } else if (groups[(size_t)g].last == j)
                    // In a cluster on every block's empty barrier: each block's producer multicasts into both.
                    body.push_back(IfThenElse::make(binary(BinaryOp::EQ, binary(BinaryOp::FloorMod, tx, i32(32)), i32(0)),
                                                    CM > 1 ? lib::stmt(lib::Fn::MbarrierArriveCluster, {empty(g, cs), i32(CM)}, loc)
                                                           : lib::stmt(lib::Fn::MbarrierArrive, {empty(g, cs)}, loc),
                                                    nullptr, loc));
            if (j == onceLast) body.push_back(IfThenElse::make(binary(BinaryOp::EQ, loop.var, lastIter), onceRelease, nullptr, loc));
        }
        std::vector<Stmt> consumer;
        for (size_t i = 0; i < at; ++i) {
            bool isOnce = std::find(onceAt.begin(), onceAt.end(), i) != onceAt.end();
            if (!isOnce) consumer.push_back(top[i]);
            else if (i == onceAt.back())
                consumer.push_back(lib::stmt(lib::Fn::MbarrierWait, {onceBar, persistent ? simplify(binary(BinaryOp::FloorMod, consumerTile, i32(2))) : i32(0)},
                                             top[i]->loc));
        }
        consumer.push_back(For::make(loop.var, loop.min, loop.extent, ForKind::Serial, 0, Seq::make(std::move(body), loc), loc));
        if (persistent && !once.empty())
            consumer.push_back(onceLast < rest.size()
                                   ? IfThenElse::make(binary(BinaryOp::LE, loop.extent, i32(0)), onceRelease, nullptr, loc)
                                   : onceRelease);
        if (ringBase) consumer.push_back(advanceBase());
        consumer.insert(consumer.end(), top.begin() + (long)at + 1, top.end());
        Stmt consumerBody = Seq::make(std::move(consumer), loc);
        if (persistent) consumerBody = For::make(consumerTile, i32(0), tileCount, ForKind::Persistent, 0, consumerBody, loc);
        if (ringBase) consumerBody = Seq::make({resetBase(), consumerBody}, loc);

        std::vector<Stmt> init;
        for (int g = 0; g < G; ++g)
            for (int s = 0; s < S; ++s) {
                init.push_back(lib::stmt(lib::Fn::MbarrierInit, {full(g, i32(s)), i32(1)}, loc));
                init.push_back(lib::stmt(lib::Fn::MbarrierInit, {empty(g, i32(s)), i32(mma ? C : C / 32 * CM)}, loc));
            }
        if (!once.empty()) init.push_back(lib::stmt(lib::Fn::MbarrierInit, {onceBar, i32(1)}, loc));
        if (persistent && !once.empty()) init.push_back(lib::stmt(lib::Fn::MbarrierInit, {onceEmpty, i32(C / 32)}, loc));
        init.push_back(lib::stmt(lib::Fn::MbarrierInitFence, {}, loc));
        auto [pr, cr] = t_.archSpecific ? roleRegisters(C, P, blocks, t_) : std::pair{0, 0};
        // In a cluster the peer's barriers must be initialised before anything arrives on them or lands in
        // them, and a block may not exit while its peer can still do either: cluster-wide barriers.
        std::vector<Stmt> top2{IfThenElse::make(binary(BinaryOp::EQ, tx, i32(0)), Seq::make(std::move(init), loc), nullptr, loc),
                               lib::stmt(CM > 1 ? lib::Fn::ClusterSync : lib::Fn::Sync, {}, loc),
                               WarpRoles::make(C, P, pr, cr, producer, consumerBody, loc)};
        if (CM > 1) top2.push_back(lib::stmt(lib::Fn::ClusterSync, {}, loc));
        nk->body = Seq::make(std::move(top2), k_.body->loc);
        nk->producerThreads = P;
        nk->minBlocksPerSM = blocks;
        nk->persistent = persistent;
        // The dimension the walk takes slowest (Kernel::walkSlowest): the one the trip count depends on, where
        // exactly one does; else z.
        nk->walkSlowest = persistent && CM == 1 && k_.swizzlePanel == 0 && uneven == 1 ? unevenAxis : 2;
        nk->walkGroup = nk->walkSlowest != 2 ? o_.walkGroup : 1; // only set where exactly one index sets the work
        nk->clusterSize = CM;
        nk->clusterAxis = CM > 1 ? cluster.axis : 0;
        nk->sharedTiles = CM > 1 ? (int)std::count(cluster.shared.begin(), cluster.shared.end(), true) : 0;
        nk->needsTma = true;
        barrierGroups_ = G;
        ringTiles_ = (int)tiles.size();
        onceTiles_ = (int)once.size();
        registerA_ = rowsOnly;
        return nk;
    }
};

} // namespace

Program specializeWarps(const Program &p, const Variant &v, DiagnosticEngine *diag) {
    const Target &t = v.target;
    const LoweringOptions &o = v.options;
    const SourceManager *sources = diag ? &diag->sources() : nullptr;
    // T.ClusterKernel: clusters multicast tiles by TMA, which tilec plans on sm_90a only.
    auto asked = [](const Kernel &k) { return k.clusterDims[0] * k.clusterDims[1] * k.clusterDims[2] > 1; };
    auto refuse = [&](const Kernel &k, const std::string &why) {
        if (diag) diag->error(k.clusterLoc.valid() ? k.clusterLoc : k.launchLoc,
                              "T.ClusterKernel's cluster_dims cannot be honoured for " + t.name + ": " + why);
    };
    for (auto &k : p.kernels)
        if (asked(*k) && !(t.sm == 90 && t.archSpecific))
            refuse(*k, "tilec's clusters share tiles by TMA multicast, which it uses on sm_90a only");
    auto dropped = [&](const Kernel &k, const char *why) {
        if (asked(k)) remark(nullptr, {}, t.name + ": kernel '" + k.name + "' launches without the clusters of T.ClusterKernel (" + why + ")");
    };
    if (!v.hasTma() || !o.warpSpecialize) {
        for (auto &k : p.kernels) dropped(*k, "the variant without TMA, --no-tma or --no-warp-specialize");
        remark(nullptr, {}, t.name + ": no warp specialization (" +
                                std::string(!o.warpSpecialize ? "--no-warp-specialize"
                                            : t.sm < 90       ? "no TMA or wgmma on the target"
                                                              : "the variant without TMA, or --no-tma") +
                                "): T.gemm keeps mma.sync, tile copies cp.async");
        return p;
    }
    Program out;
    for (auto &k : p.kernels) {
        // pass_configs={"tl.disable_tma_lower": True} / {"tl.disable_warp_specialized": True} on this kernel.
        // ... and kernels that already have warp roles (the user's own, lowerWarpRoles).
        const LoweringOptions ko = o.forKernel(*k);
        if (!ko.tma || !ko.warpSpecialize || k->producerThreads) {
            if (k->producerThreads && asked(*k) && t.archSpecific) refuse(*k, "the kernel has explicit warp roles (T.ws)");
            else dropped(*k, "pass_configs turn TMA or warp specialization off");
            out.kernels.push_back(k);
            continue;
        }
        Specializer s(*k, v, sources);
        auto nk = s.run();
        if (asked(*k) && t.archSpecific) {
            if (!nk) refuse(*k, "the kernel keeps the cp.async path (-v says why)");
            else if (!s.clusterWhy.empty()) refuse(*k, s.clusterWhy);
            else if (!o.clusters) dropped(*k, "--no-cluster");
        }
        out.kernels.push_back(nk ? nk : k);
    }
    return out;
}

} // namespace tilec::passes
