/// \file
/// The warp specializer's planning steps (Specializer.h): which copies become TMA tiles, which products run on
/// wgmma or mma.sync over the panels, the barrier groups, the rings and the walk over output tiles, the blocks
/// per SM, the cost test against the cp.async pipeline and the tensor maps.
#include "Specializer.h"

#include "tilec/passes/LoopInvariants.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRUses.h"

#include "tilec/IRMutator.h"
#include "tilec/IRVisitor.h"
#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/HopperOperands.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/PlanSharedMemory.h"
#include "tilec/passes/Staging.h"
#include "tilec/passes/TileWalks.h"
#include "tilec/passes/WarpRoleCost.h"
#include "tilec/passes/WarpRolePlan.h"
#include "tilec/SharedAliases.h"

#include "WarpRoleBodies.h"

#include <algorithm>
#include <set>

namespace tilec::passes::warproles {

namespace {
Expr i32(int64_t v) { return intImm(v, DType::Int32); }
} // namespace

/// The TMA tiles loaded once before the loop: top-level copies ahead of it whose shared destination is
/// mentioned by no other top-level statement than the copy and the loop (FlashAttention's Q). Null
/// when one such copy is not a TMA tile (its buffer then stays an ordinary one).
std::vector<TmaTile> Specializer::onceTiles(const std::vector<Stmt> &top, size_t at, std::vector<size_t> &where) {
    std::vector<TmaTile> out;
    std::set<const BufferNode *> inLoop = mentionedBuffers(top[at], nullptr);
    for (size_t i = 0; i < at; ++i) {
        auto c = as<Copy>(top[i]);
        if (!c || !c->dst.buffer || !inLoop.count(c->dst.buffer.get())) continue;
        auto t = planTmaTile(*c, k_);
        if (!t || !tmaNeverHolds(t->map.tensor).empty()) continue;
        bool uniform = true;
        for (auto &e : t->coords) uniform &= (e = scalars_->uniform(e, true)) != nullptr;
        if (!uniform) continue;
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
int Specializer::workAxis(const For &loop, int *count) const {
    int axis = -1, found = 0;
    for (int d = 0; d < 3; ++d)
        if (k_.blockIdx[(size_t)d] && (uses(loop.min, k_.blockIdx[(size_t)d].get()) || uses(loop.extent, k_.blockIdx[(size_t)d].get())))
            axis = d, ++found;
    if (count) *count = found;
    return axis;
}

/// A loop body that is one condition without an else (block-sparse GEMM's `if mask[by, bx, k]:` around its
/// copies and T.gemm): both roles evaluate it per iteration, the producer loading and the consumers
/// computing only where it holds, and the ring moves on by the iterations that run. It may read what every
/// thread computes alike (global tensors the kernel does not write, scalars set once before the loop:
/// scalars_); false (why_) where it reads anything else.
bool Specializer::unguard(Plan &p) {
    Stmt body = p.loop->body;
    if (auto q = as<Seq>(body); q && q->stmts.size() == 1) body = q->stmts[0];
    auto c = as<IfThenElse>(body);
    if (!c || c->otherwise) return true;
    p.guard = scalars_->uniform(c->cond);
    if (!p.guard) return fail("the condition around its body reads what the producer cannot (shared memory, a tensor the kernel "
                              "writes, or a scalar set by the thread or more than once)");
    p.unguarded = For::make(p.loop->var, p.loop->min, p.loop->extent, p.loop->forKind, p.loop->numStages, c->then, p.loop->loc);
    p.loop = as<For>(p.unguarded);
    return true;
}

/// The hoisted copies as TMA tiles (the ring's) and the tiles loaded once before the loop; false (why_ says
/// why) where one is not a TMA tile, or a staged buffer is used outside the loop or written in it.
bool Specializer::planTiles(const std::vector<Stmt> &top, const LoopSplit &split, Plan &p) {
    const std::set<const BufferNode *> metadata = sparseMetadataTiles(split.rest);
    using SparseRoles = LoweringOptions::SparseWarpRoles;
    if (!metadata.empty() && (p.mma || !o_.sparseWgmma || o_.sparseWarpRoles == SparseRoles::Off))
        return fail(p.mma               ? "a T.gemm_sp takes warp roles on wgmma.mma_async.sp only (sm_90a)"
                    : !o_.sparseWgmma ? "--no-sparse-wgmma keeps T.gemm_sp on mma.sp, over cp.async tiles"
                                      : "--no-sparse-warp-roles keeps a T.gemm_sp loop on the cp.async ring");
    for (auto *c : split.hoisted) {
        const bool isMetadata = c->dst.buffer && metadata.count(c->dst.buffer.get());
        auto t = isMetadata ? planTmaMetadata(*c, k_) : planTmaTile(*c, k_);
        if (!t && isMetadata && metadataThreadCopyable(*c)) {
            if (o_.sparseWarpRoles != SparseRoles::All)
                return fail("the metadata tile '" + c->dst.buffer->name + "' of a T.gemm_sp has rows too narrow for TMA: "
                            "its loop keeps the cp.async ring unless --sparse-warp-roles (the producer's threads "
                            "copying them ran 0.85x the ring on the H100)");
            p.threadTiles.push_back(c);
            continue;
        }
        if (!t && isMetadata)
            return fail("the metadata tile '" + c->dst.buffer->name + "' of a T.gemm_sp has rows of " +
                        std::to_string(c->dst.buffer->dtype.bytes() * constInt(c->dst.buffer->shape.back()).value_or(0)) +
                        " bytes: TMA loads rows of 16, 32, 64 or 128 bytes as wgmma.sp's metadata loads read them, "
                        "the producer's threads rows of 2, 4 or 8 bytes from a box of the tensor");
        if (!t) return fail("a copy is not a TMA tile (2-D or more, 16-byte rows, a box TMA can take)");
        if (auto never = tmaNeverHolds(t->map.tensor); !never.empty()) return fail(never + " (no TMA variant)");
        for (auto &e : t->coords)
            if (!(e = scalars_->uniform(e, true)))
                return fail("a copy's position reads what the producer cannot (shared memory, a tensor the kernel "
                            "writes, a value of the thread's own, or a scalar the kernel also writes after the loop starts)");
        p.tiles.push_back(*t);
    }
    // In a walk of the kernel's own, copies ahead of the loop stay the consumers' (their barriers' phases
    // would follow the walk's guards).
    if (!p.walk) p.once = onceTiles(top, p.at, p.onceAt);
    for (auto *list : {&p.tiles, &p.once})
        for (auto &t : *list) {
            if (p.byBuffer.count(t.copy->dst.buffer.get())) return fail("two copies load one shared buffer");
            p.byBuffer[t.copy->dst.buffer.get()] = &t;
        }
    // The ring buffers live only in this loop, only as wgmma operands, and every tile feeds one.
    std::set<const BufferNode *> outside = mentionedBuffers(Seq::make(top, k_.body->loc), top[p.at].get());
    for (auto &t : p.tiles)
        if (outside.count(t.copy->dst.buffer.get())) return fail("a staged buffer is used outside the loop");
    for (auto *list : {&p.tiles, &p.once}) // (a ring of it would leave the alias on the first stage's bytes)
        for (auto &t : *list)
            if (ir::aliased(k_, t.copy->dst.buffer.get())) return fail("a staged buffer is viewed as another dtype (T.view)");
    for (auto *c : p.threadTiles) {
        if (outside.count(c->dst.buffer.get())) return fail("a staged buffer is used outside the loop");
        if (ir::aliased(k_, c->dst.buffer.get())) return fail("a staged buffer is viewed as another dtype (T.view)");
    }
    if (!p.threadTiles.empty() && !p.once.empty())
        return fail("the producer's threads copy a T.gemm_sp's metadata beside tiles loaded once before the loop");
    for (auto *b : copyTargets(split.rest)) {
        if (p.byBuffer.count(b)) return fail("a staged buffer is also written in the loop");
        for (auto *c : p.threadTiles)
            if (c->dst.buffer.get() == b) return fail("a staged buffer is also written in the loop");
    }
    return true;
}

/// The loop's other statements with each T.gemm that reads the tiles marked for wgmma (p.rest); false where
/// a staged buffer has another use or no T.gemm can take the tiles.
bool Specializer::markGemms(const LoopSplit &split, Plan &p, const std::vector<Stmt> &top) {
    p.rowsOnly = registerOperandTied(k_.body);
    using MmaRoles = LoweringOptions::MmaWarpRoles;
    mmaRoles_ = o_.mmaWarpRoles == MmaRoles::All ||
                (o_.mmaWarpRoles == MmaRoles::RegisterA && anyRegisterOperand(split.rest));
    // wgmma consumers may also read the tiles through the generic proxy (element-wise, copies into
    // fragments: released by every thread, WarpRoleBodies) and run products on shared operands they fill
    // themselves (views); mma.sync ones keep to GEMM loops.
    if (!p.mma) planViews(split, top, p);
    else p.operands = p.byBuffer;
    // mmaRoles_ (A from registers by default, --mma-warp-roles: any): where wgmma can take none of the loop's
    // products, the consumers run them all on mma.sync over the panels, A from registers of any type included
    // (no wgmma layout for its fragment to agree with),
    // unless an A fragment is tied to an accumulator (registerOperandTied): where their layouts disagree the
    // cp.async path reads A from a shared copy (StagedOperands), which a product over the panels cannot
    // (TileLang's amd_flash_attn_bwd: P cast from a FullRow product's scores).
    const bool allMma = !p.mma && mmaRoles_ && !anyWgmmaCan(split.rest, p.operands, p.C / 128, p.rowsOnly) &&
                        !(p.rowsOnly && anyRegisterOperand(split.rest));
    const bool mma = p.mma || allMma;
    const bool other = tilesUsedOtherwise(split.rest, p.byBuffer, p.C / 128, p.rowsOnly, mma, &p.operands,
                                          p.mma ? nullptr : &p.genericReads, !mma && mmaBeside(), allMma);
    if (other && allMma) return fail("no T.gemm in it can use wgmma, and a staged buffer is used by something other than a "
                                     "T.gemm mma.sync can read as a TMA tile (rows a multiple of 8) or a read of the consumers");
    if (other && p.mma) return fail("a staged buffer is used by something other than a T.gemm reading it as a TMA tile "
                                          "(rows a multiple of 8; A from registers needs a 16-bit fragment)");
    if (other) return fail("a staged buffer is used by something other than a wgmma (e.g. a T.gemm wgmma cannot take: "
                                 "tf32, float8 and int8 operands must be K-major, so a float8 B such as attention's "
                                 "V is stored transposed and read with transpose_B=True; A from registers needs a "
                                 "16-bit, float8 or tf32 fragment and the consumer warpgroups splitting the rows only)");
    bool anyWgmma = false, anyPanels = false, registerAOnMma = false;
    for (auto &s : split.rest) {
        p.rest.push_back(markWgmma(s, p.operands, p.C / 128, p.rowsOnly, mma, registerAOnMma, !mma && mmaBeside(), allMma));
        // (mixed warp roles: a product marked for mma.sync over the panels counts only beside a wgmma one;
        // --mma-warp-roles: alone too)
        anyWgmma |= p.rest.back() != s && (p.mma || callsInstr(p.rest.back(), GemmInstr::Wgmma));
        anyPanels |= callsInstr(p.rest.back(), GemmInstr::MmaPanels);
    }
    if (!p.mma && anyWgmma && anyPanels && !o_.mixedWarpRoles) // marked so only because mmaRoles_ is on
        return fail("a product wgmma cannot take sits beside wgmma ones (--no-mixed-warp-roles)");
    mmaOnly_ = !p.mma && !anyWgmma && anyPanels && mmaRoles_;
    anyWgmma |= mmaOnly_;
    if (!anyWgmma) return fail(p.mma ? "no T.gemm in it reads the TMA tiles" : "no T.gemm in it can use wgmma (operand types, layouts or shapes)");
    // its A fragment would need mma.sync's layout while the products feeding it have wgmma's
    if (registerAOnMma) return fail("a T.gemm with A from registers cannot use wgmma (B not a TMA tile, or the "
                                         "consumer warpgroups cannot split its rows)");
    return true;
}

/// The shared operands of the loop's products that are not TMA tiles (filled by the consumers: attention
/// backward's dS, chunked recurrences' state) as wgmma reads them (operandTile), beside the tiles (p.operands).
void Specializer::planViews(const LoopSplit &split, const std::vector<Stmt> &top, Plan &p) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        std::vector<const Region *> shared;
        void visit(const Gemm &g) override {
            for (const Region *r : {&g.a, &g.b})
                if (r->buffer && r->buffer->scope == Scope::Shared) shared.push_back(r);
        }
    } v;
    for (auto &s : split.rest) v.visit(s);
    for (size_t i = 0; i < top.size(); ++i)
        if (i != p.at) v.visit(top[i]);
    std::set<const BufferNode *> seen;
    for (const Region *r : v.shared) {
        TmaTile t;
        if (p.byBuffer.count(r->buffer.get()) || !seen.insert(r->buffer.get()).second || !operandTile(*r, t).empty()) continue;
        p.views.push_back(t);
        p.viewOf.push_back(r->buffer.get());
    }
    p.operands = p.byBuffer;
    for (size_t i = 0; i < p.views.size(); ++i) p.operands[p.viewOf[i]] = &p.views[i];
}

/// Where the consumers read tiles through the generic proxy, fill product operands themselves or load rows
/// (what the loop needed to take warp roles at all), the products outside the loop run on wgmma as well
/// wherever wgmma can take them (views of their shared operands): an accumulator or a per-row fragment they
/// share with the loop's products then has one layout. False (why_) where one cannot. Loops that took
/// warp roles without these keep their products outside the loop as they were.
bool Specializer::markOutsideGemms(std::vector<Stmt> &top, Plan &p) {
    const bool rows = std::any_of(p.tiles.begin(), p.tiles.end(), [](const TmaTile &t) { return t.swizzle == 0; });
    // (mma.sync consumers, --mma-warp-roles' too, keep mma.sync's layouts: their products outside the loop stay so)
    if (p.mma || mmaOnly_ || (p.genericReads.empty() && p.views.empty() && !rows)) return true;
    struct Left : IRVisitor {
        using IRVisitor::visit;
        int n = 0;
        void visit(const Gemm &g) override { n += g.instr == GemmInstr::Auto; }
    };
    bool registerAOnMma = false;
    for (size_t i = 0; i < top.size(); ++i) {
        if (i == p.at) continue;
        top[i] = markWgmma(top[i], p.operands, p.C / 128, p.rowsOnly, false, registerAOnMma);
        Left left;
        left.visit(top[i]);
        if (left.n) return fail("a T.gemm outside the loop cannot run on wgmma beside the loop's (its operands or shapes)");
    }
    return true;
}

/// Barrier groups: the tiles first used by the same statement of the body share a full and an empty
/// barrier per stage, so that the consumers wait for each tile only where they first need it (attention's
/// QK^T before V has landed) and release it after its last use. Group g's full[s] is at 2gS + s, its
/// empty[s] at 2gS + S + s; the once-loaded tiles' barrier follows them.
bool Specializer::groupBarriers(Plan &p) {
    for (auto &s : p.rest) p.mentions.push_back(mentionedBuffers(s, nullptr));
    for (size_t i = 0; i < p.tiles.size(); ++i) {
        const BufferNode *b = p.tiles[i].copy->dst.buffer.get();
        size_t first = p.rest.size(), last = 0;
        for (size_t j = 0; j < p.rest.size(); ++j)
            if (p.mentions[j].count(b)) first = std::min(first, j), last = j;
        if (first == p.rest.size()) return fail("a staged tile is loaded but never used");
        auto g = std::find_if(p.groups.begin(), p.groups.end(), [&](const Group &x) { return x.first == first; });
        if (g == p.groups.end()) g = p.groups.insert(std::upper_bound(p.groups.begin(), p.groups.end(), first,
                                                                      [](size_t f, const Group &x) { return f < x.first; }),
                                                     Group{first, last, {}, 0});
        g->last = std::max(g->last, last);
        g->tiles.push_back(i);
        g->bytes += p.tiles[i].bytes();
        g->generic |= p.genericReads.count(b) > 0;
    }
    if (!warproles::joinThreadTiles(p, why_)) return false;
    for (auto &t : p.once) p.onceGeneric |= p.genericReads.count(t.copy->dst.buffer.get()) > 0;
    p.G = (int)p.groups.size();
    // sm_90's mma.sync consumers are checked (simulator, SASS) for GEMM loops; attention-shaped ones keep
    // cp.async there.
    if (p.mma && (p.G > 1 || !p.once.empty()))
        return fail("on sm_90 (no wgmma) only a GEMM loop takes warp roles: its tiles first used by one statement, "
                    "none loaded once before the loop");
    return true;
}

/// The rings, whether the roles walk several output tiles (persistent) and the barriers, allocated in nk.
void Specializer::planRingsAndWalk(const std::vector<Stmt> &top, Plan &p, Kernel &nk) {
    for (auto &t : p.tiles) p.ring[t.copy->dst.buffer.get()] = ringOf(t.copy->dst.buffer, p.S);
    for (auto *c : p.threadTiles) p.ring[c->dst.buffer.get()] = ringOf(c->dst.buffer, p.S);
    // Persistent: each role walks the block's output tiles; the ring's position runs on across them. Tiles
    // loaded once per output tile (attention's Q) are reloaded for each: the producer waits until the
    // consumers have released the previous tile's (their "once empty" barrier after its last read).
    const BufferNode *outsideTiles = sharedOutsideTiles(top, p.at, p.byBuffer, p.onceAt);
    if (!outsideTiles && p.walk) outsideTiles = sharedOutsideTiles(*p.outer, p.walkAt, p.byBuffer, {});
    // Tiles of unequal work (the trip count depends on a block index: causal attention) are walked with that
    // index in groups (LoweringOptions::walkGroup; walked slowest, they lost 5 % to the hardware's dynamic block
    // scheduling at causal 8,16,4096, docs/PERFORMANCE.md session 8; in groups of 7 they won 2-13 %,
    // session 9); where the work depends on two block indices, or with --walk-group=0, one block per tile; also
    // where there are no more tiles than SMs, so that every block would walk one (the seed's 64 causal tiles:
    // 0.0168 ms persistent against 0.0160 one block per tile on the H200, session 9).
    p.gridTiles = simplify(binary(BinaryOp::Mul, binary(BinaryOp::Mul, k_.grid[0], k_.grid[1]), k_.grid[2]));
    p.constTiles = constInt(p.gridTiles);
    p.unevenAxis = workAxis(*p.loop, &p.uneven);
    const int uneven = p.uneven;
    const bool oneWave = uneven == 1 && p.constTiles && *p.constTiles <= t_.numSms;
    const bool unevenTiles = uneven > 1 || (uneven == 1 && (o_.walkGroup == 0 || oneWave));
    // A walk of the kernel's own is not walked again; conditions alone (`if bx * block_M < M:`) are.
    const bool ownWalk = p.walk && p.walk->loops > 0;
    // (a tile the producer's threads copy keeps each block on one output tile, as TileLang's producer does)
    const bool copies = !p.threadTiles.empty();
    p.persistent = o_.persistent && !copies && !outsideTiles && !unevenTiles && !ownWalk;
    notPersistent_ = p.persistent ? "" : ownWalk ? "the kernel walks its own tiles" : !o_.persistent ? "--no-persistent"
                     : copies ? "the producer's threads copy T.gemm_sp's metadata '" + p.threadTiles[0]->dst.buffer->name + "'"
                     : outsideTiles ? "the consumers use shared buffer '" + outsideTiles->name + "' outside the TMA tiles"
                     : uneven > 1 ? "its tiles differ in work (the loop's trip count depends on several block indices)"
                     : o_.walkGroup == 0 ? "its tiles differ in work (the loop's trip count depends on a block index; --walk-group=0)"
                                         : "its tiles differ in work and are no more than the " + std::to_string(t_.numSms) + " SMs (--num-sms): one wave, every block one tile";
    const int onceBarriers = p.once.empty() ? 0 : p.persistent ? 2 : 1;
    p.mbar = makeBuffer("tilec_mbar", Scope::Shared, DType::UInt64, {i32(2 * p.G * p.S + onceBarriers)}, p.loc);
    for (auto &b : nk.allocs)
        if (b && p.ring.count(b.get())) b = p.ring[b.get()];
    nk.allocs.push_back(p.mbar);
}

/// Whether a T.gemm of `s` is marked for instruction `instr`.
bool Specializer::callsInstr(const Stmt &s, GemmInstr instr) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        GemmInstr instr;
        bool found = false;
        void visit(const Gemm &g) override { found |= g.instr == instr; }
    } v;
    v.instr = instr;
    v.visit(s);
    return v.found;
}

/// Whether a T.gemm of `stmts` runs on mma.sync over the panels (--mixed-warp-roles' products).
bool Specializer::callsMmaPanels(const std::vector<Stmt> &stmts) {
    return std::any_of(stmts.begin(), stmts.end(), [](const Stmt &s) { return callsInstr(s, GemmInstr::MmaPanels); });
}

/// Null, with why: the rings beside the other shared buffers (`bytes`, as planned) do not fit.
std::shared_ptr<Kernel> Specializer::tooMuchShared(const Plan &p, int64_t bytes) {
    return no("its rings of " + std::to_string(p.S) + " stages beside its other shared buffers take about " +
              std::to_string(bytes) + " bytes, more than the " + std::to_string(t_.maxSharedPerBlock) +
              " a block can have" + (p.consumerBarrier ? " (the buffers used after the loop sharing the loop's)" : ""));
}

/// The blocks per SM; false where, on sm_90, a producer warp would leave the consumers too few registers.
bool Specializer::planBlocks(Plan &p, const Kernel &nk) {
    const int C = p.C, P = p.P;
    p.blocks = plannedBlocks(nk, C, P, t_);
    // sm_90 keeps every thread at the launch bound's share: at one block per SM, a producer warp beside
    // whole consumer warpgroups puts one warp more on a sub-partition and costs the consumers up to a
    // third of their registers. Where their fragments and the room plannedBlocks keeps no longer fit, the
    // cp.async variant is the better one: ptxas -v measured 128x256 tiles over 256 threads spilling there
    // (float16: 112 bytes at 168 registers, none at 224 with cp.async; float8: 820 against 96 bytes).
    const int shareWith = partitionRegisters(C + P, p.blocks, t_), shareWithout = partitionRegisters(C, p.blocks, t_);
    if (p.mma && p.blocks == 1 && shareWith < shareWithout && fragmentWords(nk, C) + 64 > shareWith)
        return fail("on sm_90 (no setmaxnreg) a producer warp would leave the consumers " + std::to_string(shareWith) +
                    " registers per thread instead of " + std::to_string(shareWithout) + ", too few for their " +
                    std::to_string(fragmentWords(nk, C)) + " fragment registers and 64 more (register budget)");
    return true;
}

/// The cost test (WarpRoleCost.h) where the consumers do more than issue wgmma: false (why_) where the
/// cp.async pipeline keeps more loads in flight per SM. `top`: the kernel's top-level statements. Not where
/// T.ClusterKernel asks for clusters, which only warp roles give.
bool Specializer::weighPaths(const std::vector<Stmt> &top, const Plan &p, const Kernel &nk) {
    weighed_.clear();
    if (k_.clusterDims[0] * k_.clusterDims[1] * k_.clusterDims[2] > 1) return true;
    PipelineFacts f;
    f.stages = p.S;
    f.trips = constInt(p.loop->extent);
    f.consumers = p.C;
    f.warpRoleBlocks = p.blocks;
    f.groups = p.G;
    // The cp.async path stages the same buffers as many times, without the mbarriers.
    f.sharedBytes = smem::estimatedBytes(nk) - smem::roundUp(smem::sharedBytes(p.mbar.get()), smem::kTmaTileAlignment);
    f.registerWords = peakRegisterWords(top, k_.allocs, p.C);
    f.consumerWork = !p.genericReads.empty() || !p.views.empty() || !p.threadTiles.empty() ||
                     std::any_of(p.tiles.begin(), p.tiles.end(), [](const TmaTile &t) { return t.swizzle == 0; });
    const PipelineWeights w = weighPipelines(f, t_);
    weighed_ = f.consumerWork ? w.why : "";
    if (w.warpRoles) return true;
    return fail("the cp.async pipeline keeps more loads in flight: " + w.why);
}

/// Tensor maps, one per distinct (tensor, box, swizzle); a multicast tile's box is one block's share, a tile
/// loaded in part (Plan::liveRows) one panel's rows.
void Specializer::internTensorMaps(Plan &p, Kernel &nk) {
    auto mapOf = [&](const TmaTile &t, int64_t boxRows) {
        TensorMap m = t.map;
        if (boxRows) m.box[(size_t)t.rowDim] = boxRows;
        return internTensorMap(nk, m);
    };
    for (size_t i = 0; i < p.tiles.size(); ++i)
        p.ringMap.push_back(mapOf(p.tiles[i], p.liveRows[i] ? warproles::kLiveBoxRows : p.CM > 1 ? p.cluster.boxRows[i] : 0));
    for (auto &t : p.once) p.onceMap.push_back(mapOf(t, 0));
}

/// The once tiles' barriers, the persistent walk's tile variables, and the ring's position where the trip count varies by tile.
void Specializer::planWalkVariables(Plan &p, Kernel &nk) {
    p.onceBar = p.barrier(i32(2 * p.G * p.S)), p.onceEmpty = p.barrier(i32(2 * p.G * p.S + 1));
    p.tileCount = p.persistent ? simplify(binary(BinaryOp::FloorDiv, p.gridTiles, i32(p.CM))) : Expr();
    p.producerTile = p.persistent ? makeVar("tile", DType::Int32, p.loc) : Var();
    p.consumerTile = p.persistent ? makeVar("tile", DType::Int32, p.loc) : Var();
    // The ring's position runs on across a block's tiles: tile * trips + k where every tile runs the same
    // trips; where they differ (attention's causal loop on the query block) a count of the iterations of
    // the block's earlier tiles, one per role thread (`ringBase`, advanced after each tile's loop).
    // In a walk of the kernel's own, always: its guards may skip tiles.
    const bool tripsVary = (p.persistent && p.unevenAxis >= 0) || p.walk || p.guard;
    p.ringBase = tripsVary ? makeBuffer("tilec_ring_base", Scope::Var, DType::Int32, {i32(1)}, p.loc) : Buffer();
    if (p.ringBase) nk.allocs.push_back(p.ringBase);
    p.baseNow = p.ringBase ? Load::make(p.ringBase, {i32(0)}, p.loc) : Expr();
}

} // namespace tilec::passes::warproles
