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

#include "Specializer.h"
#include "WarpRoleBodies.h"

#include <algorithm>
#include <set>

namespace tilec::passes::warproles {

/// The rewritten kernel, or null when nothing applies; -v logs which, and why.
std::shared_ptr<Kernel> Specializer::run() {
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
                             : mmaOnly_ ? "mma.sync (ldmatrix from TMA's panel layout; no product is wgmma's)"
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

/// The loop kernelTop[at] as warp roles; `walk` (at `walkAt` among the kernel's top-level statements `outer`):
/// the kernel's own walk over output tiles around it, whose innermost list `kernelTop` is.
std::shared_ptr<Kernel> Specializer::specialize(const std::vector<Stmt> &kernelTop, size_t at, const TileWalk *walk,
                                   const std::vector<Stmt> &outer, size_t walkAt) {
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


} // namespace tilec::passes::warproles

namespace tilec::passes {

using namespace ir;
using warproles::Specializer;

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
