/// \file
/// Warp specialization with TMA rings and mbarriers (include/tilec/passes/SpecializeWarps.h).
#include "tilec/passes/SpecializeWarps.h"

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

namespace tilec::passes {

using namespace ir;

namespace {

using warproles::chooseCluster;
using warproles::Group;
using warproles::Plan;
using warproles::consumerRole;
using warproles::initBarriers;
using warproles::producerRole;

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

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
        std::vector<Stmt> top = Seq::items(k_.body);
        for (size_t i = 0; i < top.size(); ++i) {
            // The loop at the top level, or inside the kernel's own walk over output tiles (T.Persistent).
            std::string walkWhy;
            std::optional<TileWalk> walk = findTileWalk(top[i], k_.threadIdx, walkWhy);
            auto f = walk ? as<For>(walk->inner[walk->loopAt]) : as<For>(top[i]);
            if (!walk && !walkWhy.empty()) log(top[i]->loc, "a T.Pipelined loop keeps the cp.async path: " + walkWhy);
            if (!f || f->forKind != ForKind::Pipelined || f->numStages < 1) continue;
            why_.clear();
            if (auto k = walk ? specialize(walk->inner, walk->loopAt, &*walk, top, i) : specialize(top, i)) {
                log(f->loc, std::string("T.Pipelined loop -> warp roles: a producer ") + (t_.hasWgmma() ? "warpgroup" : "warp") + " loading " +
                                std::to_string(ringTiles_) + " tile(s) per stage by TMA" +
                                (rowTiles_ ? " (" + std::to_string(rowTiles_) + " of them 1-D, unswizzled)" : "") +
                                (boxTiles_ ? " (" + std::to_string(boxTiles_) + " of them T.gemm_sp's metadata in unswizzled boxes of 16-byte rows)" : "") +
                                (threadTiles_ ? ", " + std::to_string(threadTiles_) + " T.gemm_sp metadata tile(s) copied by every producer thread "
                                                "(plain loads and stores, each thread's arrival on the stage's full barrier)" : "") +
                                (genericTiles_ ? ", " + std::to_string(genericTiles_) + " tile(s) also read by the consumers' own loads "
                                                 "(their stages released by every consumer thread after a proxy fence)" : "") +
                                (viewCount_ ? ", " + std::to_string(viewCount_) + " product operand(s) the consumers fill in shared memory" : "") +
                                (barrierGroups_ > 1 ? " behind " + std::to_string(barrierGroups_) + " full/empty barrier pairs (each waited for where first used)" : "") +
                                (onceTiles_ ? ", " + std::to_string(onceTiles_) + " tile(s) once before the loop" : "") + ", " +
                                std::to_string(k_.threads / 128) + " consumer warpgroup(s) on " +
                                (!t_.hasWgmma() ? "mma.sync (ldmatrix from TMA's panel layout; a producer warp, no setmaxnreg)"
                                 : mmaOnly_ ? "mma.sync (ldmatrix from TMA's panel layout; no product is wgmma's: --mma-warp-roles)"
                                            : "wgmma") +
                                (registerA_ ? " (A from registers: RS)" : "") +
                                (guarded_ ? ", each iteration under its body's condition (the ring moving on by the iterations that run)" : "") + "; " +
                                std::to_string(k->minBlocksPerSM) + " block(s) per SM" +
                                (walk && walk->loops ? ", walking the kernel's own tiles (" + std::to_string(walk->loops) + " serial loop(s) around it; the ring's stages run on across tiles)"
                                 : k->persistent ? ", persistent" : ", not persistent: " + notPersistent_) +
                                (walk && !walk->loops ? " (both roles under the kernel's conditions around the loop)" : "") +
                                (k->persistent && onceTiles_ ? " (the once tiles reloaded per output tile behind a full/empty barrier pair)" : "") +
                                (k->walkSlowest != 2 ? " walking grid dimension " + std::to_string(k->walkSlowest) +
                                                           " slowest (the loop's trip count depends on its block index)"
                                                     : "") +
                                (k->clusterSize > 1 ? ", clusters of " + std::to_string(k->clusterSize) + " along grid dimension " +
                                                          std::to_string(k->clusterAxis) + " sharing " + std::to_string(k->sharedTiles) +
                                                          " tile(s) by TMA multicast" +
                                                          (k->clusterMinWaves ? " (launched from " + std::to_string(k->clusterMinWaves) +
                                                                                    " waves of tiles, a count known at run time; the variant without clusters below)"
                                                                              : "")
                                                    : "") +
                                (weighed_.empty() ? "" : "; chosen over the cp.async pipeline: " + weighed_));
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
    std::optional<KernelScalars> scalars_;  ///< the scalars set before the loop being tried
    int barrierGroups_ = 0, onceTiles_ = 0, ringTiles_ = 0; ///< of the loop specialized: full/empty barrier pairs per stage, tiles loaded once
    int rowTiles_ = 0, boxTiles_ = 0, genericTiles_ = 0, viewCount_ = 0, threadTiles_ = 0;   ///< ... 1-D tiles, tiles read by loads, shared operands the consumers fill
    bool registerA_ = false;                ///< ... and whether a T.gemm in it reads A from registers (wgmma RS)
    bool mmaOnly_ = false;                  ///< ... and, on a wgmma target, whether all its products run on mma.sync
    bool guarded_ = false;                  ///< ... and whether its body runs under a condition
    std::string notPersistent_;             ///< ... and why its roles do not walk several output tiles
    std::string weighed_;                   ///< ... and the cost test's figures (WarpRoleCost.h)

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
    int workAxis(const For &loop, int *count) const {
        int axis = -1, found = 0;
        for (int d = 0; d < 3; ++d)
            if (k_.blockIdx[(size_t)d] && (uses(loop.min, k_.blockIdx[(size_t)d].get()) || uses(loop.extent, k_.blockIdx[(size_t)d].get())))
                axis = d, ++found;
        if (count) *count = found;
        return axis;
    }


    bool fail(std::string why) {
        why_ = std::move(why);
        return false;
    }

    /// A loop body that is one condition without an else (block-sparse GEMM's `if mask[by, bx, k]:` around its
    /// copies and T.gemm): both roles evaluate it per iteration, the producer loading and the consumers
    /// computing only where it holds, and the ring moves on by the iterations that run. It may read what every
    /// thread computes alike (global tensors the kernel does not write, scalars set once before the loop:
    /// scalars_); false (why_) where it reads anything else.
    bool unguard(Plan &p) {
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

    /// The loop kernelTop[at] as warp roles; `walk` (at `walkAt` among the kernel's top-level statements `outer`):
    /// the kernel's own walk over output tiles around it, whose innermost list `kernelTop` is.
    std::shared_ptr<Kernel> specialize(const std::vector<Stmt> &kernelTop, size_t at, const TileWalk *walk = nullptr,
                                       const std::vector<Stmt> &outer = {}, size_t walkAt = 0) {
        // The producer runs none of the consumers' code: what the loop's bounds and the tiles' positions read of
        // the scalars the kernel sets before the loop (variable-length attention's cu_seqlens[bz]) it computes
        // from their definitions (scalars_); inside a walk, those set before the walk.
        scalars_.emplace(walk ? outer : kernelTop, walk ? walkAt : at, k_.body, k_.threadIdx);
        auto f = as<For>(kernelTop[at]);
        Expr lo = scalars_->uniform(f->min), n = scalars_->uniform(f->extent);
        if (!lo || !n) return no("its bounds read what the producer cannot (shared memory, a tensor the kernel writes, "
                                 "or a scalar set by the thread or more than once)");
        std::vector<Stmt> top = kernelTop;
        // 1-D rows the producer can load by TMA (the T.copy lowerTileOps turned into element stores).
        std::map<const StmtNode *, Stmt> rowLoops;
        Stmt body = t_.hasWgmma() ? rowCopies(f->body, rowLoops) : f->body;
        if (lo != f->min || n != f->extent || body != f->body) top[at] = For::make(f->var, lo, n, f->forKind, f->numStages, body, f->loc);
        Plan p;
        p.loop = as<For>(top[at]);
        p.at = at;
        p.walk = walk, p.outer = &outer, p.walkAt = walkAt;
        p.loc = p.loop->loc;
        // sm_90a: a producer warpgroup, whose registers setmaxnreg hands to the consumers. sm_90 (no setmaxnreg):
        // one producer warp, so that the registers every thread keeps are wasted on 32 threads, not 128.
        p.mma = !t_.hasWgmma();
        p.S = p.loop->numStages, p.C = k_.threads, p.P = p.mma ? 32 : 128;
        // Roles would put the grid barrier in one role's code, a persistent walk in a loop of tiles.
        if (callsAny(k_.body, {lib::Fn::GridSync})) return no("T.sync_grid: every thread of every block must reach its grid barrier once");
        if (!unguard(p)) return nullptr;
        LoopSplit split = splitPipelinedBody(*p.loop, k_.body);
        for (auto &s : split.rest) // a row the producer cannot load ahead stays the consumers' element stores
            if (auto it = rowLoops.find(s.get()); it != rowLoops.end()) s = it->second;
        if (split.hoisted.empty()) return no("no global-to-shared tile copy to hoist into a producer");
        if (!planTiles(top, split, p) || !markGemms(split, p, top) || !groupBarriers(p) || !markOutsideGemms(top, p)) return nullptr;
        // What the producer must compute first: scalars set by loops ahead of the loop. Inside a walk of the
        // kernel's own they would be set before the walk, in the consumers' variables.
        p.replay = scalars_->replay();
        if (walk && !p.replay.empty())
            return no("a copy's position reads a scalar set by a loop before the kernel's walk over output tiles");
        auto nk = std::make_shared<Kernel>(k_);
        planRingsAndWalk(top, p, *nk);
        // Rings that do not fit beside the rest: the buffers the consumers use only after the loop may reuse
        // the loop's tiles behind a barrier of theirs (warpRoleSharedBytes, checked once the roles are built),
        // not where the producer runs on into the next output tile's loads while they finish this one (a walk
        // of output tiles, persistent or not: planSharedMemory finds no such barrier there either), nor where
        // a thread may have left the kernel (T.thread_return) before the barrier that every consumer must reach.
        const int64_t apart = smem::estimatedBytes(*nk);
        p.consumerBarrier = apart > t_.maxSharedPerBlock && !walk && !p.persistent && at + 1 < top.size() &&
                            !callsAny(k_.body, {lib::Fn::ThreadReturn});
        if (apart > t_.maxSharedPerBlock && !p.consumerBarrier) return tooMuchShared(p, apart);
        // (--mixed-warp-roles: such loops are taken only where the rings fit beside the rest as they are; on
        // gqa_sink_bwd_varlen the final plan did not find the reuse behind the consumers' barrier counted here.)
        if (apart > t_.maxSharedPerBlock && !p.mma && callsMmaPanels(p.rest))
            return no("its rings beside its other shared buffers take about " + std::to_string(apart) + " bytes, more than the " +
                      std::to_string(t_.maxSharedPerBlock) + " a block can have, and a loop with a product on mma.sync beside "
                      "its wgmma ones does not share them with the buffers used after it");
        if (!planBlocks(p, *nk) || !weighPaths(walk ? outer : kernelTop, p, *nk)) return nullptr;
        chooseCluster(p, k_, t_, o_, clusterWhy);
        planLiveRowBoxes(p, k_.body);
        internTensorMaps(p, *nk);
        planWalkVariables(p, *nk);
        Stmt producer = producerRole(p, k_);
        Stmt consumer = consumerRole(top, p, k_, o_);
        Stmt init = initBarriers(p, k_);
        auto [pr, cr] = t_.archSpecific ? roleRegisters(p.C, p.P, p.blocks, t_, p.rowsOnly) : std::pair{0, 0};
        // In a cluster the peer's barriers must be initialised before anything arrives on them or lands in
        // them, and a block may not exit while its peer can still do either: cluster-wide barriers.
        std::vector<Stmt> top2{init, lib::stmt(p.CM > 1 ? lib::Fn::ClusterSync : lib::Fn::Sync, {}, p.loc),
                               WarpRoles::make(p.C, p.P, pr, cr, producer, consumer, p.loc)};
        if (p.CM > 1) top2.push_back(lib::stmt(lib::Fn::ClusterSync, {}, p.loc));
        nk->body = Seq::make(std::move(top2), k_.body->loc);
        for (auto &t : p.tiles) nk->recordTileLayout({p.ring.at(t.copy->dst.buffer.get()), t.swizzle, true});
        for (auto &t : p.once) nk->recordTileLayout({t.copy->dst.buffer, t.swizzle, true});
        if (p.consumerBarrier)
            if (int64_t bytes = warpRoleSharedBytes(*nk, t_); bytes > t_.maxSharedPerBlock) return tooMuchShared(p, bytes);
        nk->producerThreads = p.P;
        nk->minBlocksPerSM = p.blocks;
        nk->persistent = p.persistent;
        // The dimension the walk takes slowest (Kernel::walkSlowest): the one the trip count depends on, where
        // exactly one does; else z.
        nk->walkSlowest = p.persistent && p.CM == 1 && k_.swizzlePanel == 0 && p.uneven == 1 ? p.unevenAxis : 2;
        nk->walkGroup = nk->walkSlowest != 2 ? o_.walkGroup : 1; // only set where exactly one index sets the work
        nk->clusterSize = p.CM;
        nk->clusterMinWaves = p.clusterMinWaves;
        nk->clusterAxis = p.CM > 1 ? p.cluster.axis : 0;
        nk->sharedTiles = p.CM > 1 ? (int)std::count(p.cluster.shared.begin(), p.cluster.shared.end(), true) : 0;
        nk->needsTma = true;
        recordPanelOperands(*nk);
        barrierGroups_ = p.G;
        ringTiles_ = (int)p.tiles.size();
        rowTiles_ = (int)std::count_if(p.tiles.begin(), p.tiles.end(), [](const TmaTile &t) { return t.swizzle == 0 && t.rows == 1; });
        boxTiles_ = (int)std::count_if(p.tiles.begin(), p.tiles.end(), [](const TmaTile &t) { return t.swizzle == 0 && t.rows > 1; });
        genericTiles_ = (int)p.genericReads.size();
        viewCount_ = (int)p.views.size();
        threadTiles_ = (int)p.threadTiles.size();
        onceTiles_ = (int)p.once.size();
        registerA_ = anyRegisterOperand(p.rest);
        guarded_ = p.guard != nullptr;
        return nk;
    }

    /// The hoisted copies as TMA tiles (the ring's) and the tiles loaded once before the loop; false (why_ says
    /// why) where one is not a TMA tile, or a staged buffer is used outside the loop or written in it.
    bool planTiles(const std::vector<Stmt> &top, const LoopSplit &split, Plan &p) {
        const std::set<const BufferNode *> metadata = sparseMetadataTiles(split.rest);
        if (!metadata.empty() && (p.mma || !o_.sparseWgmma || !o_.sparseWarpRoles))
            return fail(p.mma               ? "a T.gemm_sp takes warp roles on wgmma.mma_async.sp only (sm_90a)"
                        : !o_.sparseWgmma ? "--no-sparse-wgmma keeps T.gemm_sp on mma.sp, over cp.async tiles"
                                          : "a T.gemm_sp loop keeps the cp.async ring unless --sparse-warp-roles (its warp roles "
                                            "are not yet checked on the GPU)");
        for (auto *c : split.hoisted) {
            const bool isMetadata = c->dst.buffer && metadata.count(c->dst.buffer.get());
            auto t = isMetadata ? planTmaMetadata(*c, k_) : planTmaTile(*c, k_);
            if (!t && isMetadata && metadataThreadCopyable(*c)) {
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
    bool markGemms(const LoopSplit &split, Plan &p, const std::vector<Stmt> &top) {
        p.rowsOnly = registerOperandTied(k_.body);
        // wgmma consumers may also read the tiles through the generic proxy (element-wise, copies into
        // fragments: released by every thread, WarpRoleBodies) and run products on shared operands they fill
        // themselves (views); mma.sync ones keep to GEMM loops.
        if (!p.mma) planViews(split, top, p);
        else p.operands = p.byBuffer;
        // --mma-warp-roles: where wgmma can take none of the loop's products, the consumers run them all on mma.sync
        // over the panels, A from registers of any type included (no wgmma layout for its fragment to agree with),
        // unless an A fragment is tied to an accumulator (registerOperandTied): where their layouts disagree the
        // cp.async path reads A from a shared copy (StagedOperands), which a product over the panels cannot
        // (TileLang's amd_flash_attn_bwd: P cast from a FullRow product's scores).
        const bool allMma = !p.mma && o_.mmaWarpRoles && !anyWgmmaCan(split.rest, p.operands, p.C / 128, p.rowsOnly) &&
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
        if (!p.mma && anyWgmma && anyPanels && !o_.mixedWarpRoles) // marked so only because --mma-warp-roles is on
            return fail("a product wgmma cannot take sits beside wgmma ones (--no-mixed-warp-roles)");
        mmaOnly_ = !p.mma && !anyWgmma && anyPanels && o_.mmaWarpRoles;
        anyWgmma |= mmaOnly_;
        if (!anyWgmma) return fail(p.mma ? "no T.gemm in it reads the TMA tiles" : "no T.gemm in it can use wgmma (operand types, layouts or shapes)");
        // its A fragment would need mma.sync's layout while the products feeding it have wgmma's
        if (registerAOnMma) return fail("a T.gemm with A from registers cannot use wgmma (B not a TMA tile, or the "
                                             "consumer warpgroups cannot split its rows)");
        return true;
    }

    /// The shared operands of the loop's products that are not TMA tiles (filled by the consumers: attention
    /// backward's dS, chunked recurrences' state) as wgmma reads them (operandTile), beside the tiles (p.operands).
    void planViews(const LoopSplit &split, const std::vector<Stmt> &top, Plan &p) {
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
    bool markOutsideGemms(std::vector<Stmt> &top, Plan &p) {
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
    bool groupBarriers(Plan &p) {
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
    void planRingsAndWalk(const std::vector<Stmt> &top, Plan &p, Kernel &nk) {
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

    /// Whether the consumers of a wgmma target may run a product wgmma cannot take on mma.sync over the panels:
    /// beside wgmma ones (mixed warp roles) or, with --mma-warp-roles, in a loop of such products alone.
    bool mmaBeside() const { return o_.mixedWarpRoles || o_.mmaWarpRoles; }

    /// Whether a T.gemm of `s` is marked for instruction `instr`.
    static bool callsInstr(const Stmt &s, GemmInstr instr) {
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
    static bool callsMmaPanels(const std::vector<Stmt> &stmts) {
        return std::any_of(stmts.begin(), stmts.end(), [](const Stmt &s) { return callsInstr(s, GemmInstr::MmaPanels); });
    }

    /// Null, with why: the rings beside the other shared buffers (`bytes`, as planned) do not fit.
    std::shared_ptr<Kernel> tooMuchShared(const Plan &p, int64_t bytes) {
        return no("its rings of " + std::to_string(p.S) + " stages beside its other shared buffers take about " +
                  std::to_string(bytes) + " bytes, more than the " + std::to_string(t_.maxSharedPerBlock) +
                  " a block can have" + (p.consumerBarrier ? " (the buffers used after the loop sharing the loop's)" : ""));
    }

    /// The blocks per SM; false where, on sm_90, a producer warp would leave the consumers too few registers.
    bool planBlocks(Plan &p, const Kernel &nk) {
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
    bool weighPaths(const std::vector<Stmt> &top, const Plan &p, const Kernel &nk) {
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
    void internTensorMaps(Plan &p, Kernel &nk) {
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
    void planWalkVariables(Plan &p, Kernel &nk) {
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
                                "): tile copies cp.async (T.gemm on wgmma where cpAsyncWgmma can)");
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
