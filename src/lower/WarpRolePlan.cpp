/// \file
/// How many blocks per SM a warp-role kernel is planned for, the registers each role gets, and which tiles a
/// cluster of two blocks shares (include/tilec/passes/WarpRolePlan.h), and whether a loop's warp roles run in
/// clusters (chooseCluster, WarpRoleBodies.h): the planning half of specializeWarps (src/lower/SpecializeWarps.cpp).
#include "tilec/passes/WarpRolePlan.h"

#include "WarpRoleBodies.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/Staging.h"

#include <algorithm>
#include <set>

namespace tilec::passes {

using namespace ir;

/// Registers per thread for each role after setmaxnreg, for `blocks` blocks per SM: the producer gives up all
/// but a few, the consumers take what each block's allocation at entry (the launch bound's share of the
/// register file) leaves: 24 for the producer at two blocks, beside three consumer warpgroups, or beside two whose
/// loop reads A from registers (FlashAttention-3's 24 / 240: its producer only issues TMA), else 40 (CUTLASS's
/// cooperative GEMM: 40 / 232).
std::pair<int, int> roleRegisters(int consumers, int producers, int blocks, const Target &t, bool registerA) {
    auto down8 = [](int64_t r) { return (int)(r / 8 * 8); };
    int entry = down8(std::min<int64_t>(t.registersPerThread, t.registersPerSM / blocks / (consumers + producers)));
    int producer = consumers >= 384 || blocks > 1 || (registerA && consumers >= 256) ? 24 : 40;
    int consumer = down8(std::min<int64_t>(240, ((int64_t)entry * (consumers + producers) - (int64_t)producer * producers) / consumers));
    return {producer, consumer};
}

/// The 32-bit registers each consumer thread's fragments take.
int64_t fragmentWords(const Kernel &k, int consumers) {
    int64_t bytes = 0;
    for (auto &b : k.allocs)
        if (b && b->scope == Scope::Fragment) bytes += std::max<int64_t>(0, b->constElements()) * b->dtype.bytes();
    return bytes / 4 / consumers;
}

/// Blocks per SM to plan the warp roles for: two where two blocks' shared memory fits an SM and the consumers'
/// share of the registers at two blocks still holds their fragments with room for addresses and the epilogue
/// (the seed's 128x128 tile over one consumer warpgroup: one block's epilogue and barrier waits then overlap
/// the other block's wgmma), else one. The room is 64 registers: at 40 (the 128x128 tile over two consumer
/// warpgroups, 64 accumulators in 104 registers) ptxas gives up on the wgmma (C7602, insufficient registers).
int plannedBlocks(const Kernel &k, int consumers, int producers, const Target &t) {
    const int64_t shared = smem::estimatedBytes(k);
    const int64_t words = fragmentWords(k, consumers);
    const bool sharedFits = smem::fitsSm(t, shared, 2);
    const bool threadsFit = 2 * (consumers + producers) <= t.threadsPerSM;
    // Without setmaxnreg (sm_90) every thread keeps its share of the register file at two blocks.
    const int consumerRegs = t.archSpecific ? roleRegisters(consumers, producers, 2, t).second
                                            : (int)std::min<int64_t>(t.registersPerThread, t.registersPerSM / 2 / (consumers + producers)) / 8 * 8;
    return sharedFits && threadsFit && consumerRegs >= words + 64 ? 2 : 1;
}

/// The registers ptxas can give each thread of `threads` at `blocks` blocks per SM without setmaxnreg: the
/// warps are spread over the SM's four sub-partitions, each with a quarter of the register file, so the
/// fullest one sets the share (nine warps put three on one: 168 registers, as for twelve).
int partitionRegisters(int threads, int blocks, const Target &t) {
    const int64_t warps = (int64_t)blocks * ((threads + 31) / 32), fullest = (warps + 3) / 4;
    return (int)std::min<int64_t>(t.registersPerThread, t.registersPerSM / 4 / fullest / 32 / 8 * 8);
}


/// The grid dimension (a constant extent that `parts` divides) whose shared tiles are the most bytes, or axis -1
/// when no tile can be shared. A tile is shared along d when its position is made of the other block indices,
/// the loop's variable and the kernel's scalars only, and its boxes (halved where needed, down to one 8-row
/// swizzle period) split evenly between the `parts` blocks.
ClusterPlan planCluster(const Kernel &k, const std::vector<TmaTile> &tiles, const VarNode *loopVar, int onlyAxis, int parts) {
    struct FreeVars : IRVisitor {
        using IRVisitor::visit;
        std::set<const VarNode *> vars;
        void visit(const VarNode &v) override { vars.insert(&v); }
    };
    std::set<const VarNode *> uniform{loopVar};
    for (auto &p : k.params)
        if (p.kind == Param::Scalar) uniform.insert(p.var.get());
    for (auto &v : k.dynamicSymbols) uniform.insert(v.get());
    ClusterPlan best;
    int64_t bestBytes = 0;
    for (int d = 0; d < k.gridDims; ++d) {
        if (onlyAxis >= 0 && d != onlyAxis) continue;
        auto g = constInt(k.grid[(size_t)d]);
        if (!g || *g < parts || *g % parts || !k.blockIdx[(size_t)d]) continue;
        std::set<const VarNode *> allowed = uniform;
        for (int j = 0; j < 3; ++j)
            if (j != d && k.blockIdx[(size_t)j]) allowed.insert(k.blockIdx[(size_t)j].get());
        ClusterPlan p;
        p.axis = d;
        int64_t bytes = 0;
        for (auto &t : tiles) {
            FreeVars fv;
            for (auto &c : t.coords) fv.visit(c);
            bool same = std::all_of(fv.vars.begin(), fv.vars.end(), [&](const VarNode *v) { return allowed.count(v) > 0; });
            int64_t boxRows = std::min<int64_t>(t.rows, 256), panels = t.cols * t.elemBytes / t.swizzle;
            while (same && panels * (t.rows / boxRows) % parts && boxRows % 16 == 0) boxRows /= 2;
            bool ok = same && panels * (t.rows / boxRows) % parts == 0;
            p.shared.push_back(ok);
            p.boxRows.push_back(ok ? boxRows : std::min<int64_t>(t.rows, 256));
            if (ok) bytes += t.bytes();
        }
        if (bytes > bestBytes) best = std::move(p), bestBytes = bytes;
    }
    return best;
}

const BufferNode *sharedOutsideTiles(const std::vector<Stmt> &top, size_t at, const std::map<const BufferNode *, const TmaTile *> &tiles,
                                     const std::vector<size_t> &onceAt) {
    for (size_t i = 0; i < top.size(); ++i) {
        if (std::find(onceAt.begin(), onceAt.end(), i) != onceAt.end()) continue;
        for (auto *b : mentionedBuffers(top[i], nullptr))
            if (b->scope == Scope::Shared && !(i == at && tiles.count(b))) return b;
    }
    return nullptr;
}

namespace {

using warproles::Plan;

/// Whether the conditions around the loop (a walk's) or its iterations' guard use the block index along `axis`.
bool conditionsUse(const Plan &p, const Kernel &k, int axis) {
    const VarNode *b = k.blockIdx[(size_t)axis].get();
    if (!b) return false;
    if (p.guard && uses(p.guard, b)) return true;
    if (p.walk) {
        for (auto &s : p.walk->path) {
            if (auto c = as<IfThenElse>(s); c && uses(c->cond, b)) return true;
            if (auto f = as<For>(s); f && (uses(f->min, b) || uses(f->extent, b))) return true;
        }
    }
    return false;
}

} // namespace

namespace warproles {

/// Clustered (persistent GEMMs with one barrier group): the walk is over cluster units, two tiles (four under
/// --cluster-blocks=4 where a grid dimension allows them, else two; or T.ClusterKernel's four) that share a
/// tile. Only where each block walks at least two waves of tiles: a single wave of clustered blocks measured
/// slower than unclustered ones (4096x1024x8192 on the H200, 2026-12-01). A tile count known only at run time (a
/// grouped GEMM's row tiles) is clustered too where LoweringOptions::runtimeClusters allows: the kernel then
/// records the two waves as the launcher's condition (Kernel::clusterMinWaves) and the driver lowers the
/// variant without clusters beside it. The blocks of a cluster walk the same units whatever the count: the
/// cluster's grid dimension is a constant multiple of its blocks (planCluster), the run-time count is the units'.
/// T.ClusterKernel's clusters where they can be honoured, else clusterWhy says why not; its cluster_dims of one
/// block (1, or (1, 1, 1)) are the author's choice of none.
void chooseCluster(Plan &p, const Kernel &k, const Target &t, const LoweringOptions &o, std::string &clusterWhy) {
    ClusterPlan &cluster = p.cluster;
    const auto &cd = k.clusterDims;
    int parts = 2;
    if (cd[0] * cd[1] * cd[2] > 1) { // T.ClusterKernel: the author's clusters, or why not
        const int axis = cd[1] == 1 && cd[2] == 1 ? 0 : cd[0] == 1 && cd[2] == 1 ? 1 : cd[0] == 1 && cd[1] == 1 ? 2 : -1;
        parts = cd[0] * cd[1] * cd[2];
        if (axis < 0 || (parts != 2 && parts != 4))
            clusterWhy = "tilec's clusters are two or four blocks along one grid dimension: (2, 1, 1), (1, 4, 1), ...";
        else if (!p.persistent)
            clusterWhy = "the kernel's warp roles are not persistent (--no-persistent, or shared memory used outside the ring)";
        else if (!p.once.empty())
            clusterWhy = "the kernel loads tiles once per output tile (its clusters share ring tiles only)";
        else if (p.G != 1)
            clusterWhy = "the loop's tiles are waited for in several barrier groups";
        else if (!p.genericReads.empty())
            clusterWhy = "the consumers read the loop's tiles through the generic proxy (each thread releases them)";
        else if (axis >= k.gridDims)
            clusterWhy = "T.Kernel has no grid dimension " + std::to_string(axis);
        else if (o.clusters && (cluster = planCluster(k, p.tiles, p.loop->var.get(), axis, parts)).axis < 0)
            clusterWhy = "no tile of the loop can be shared along grid dimension " + std::to_string(axis) +
                         " (each depends on it, or its boxes do not split in " + std::to_string(parts) +
                         ", or the grid's extent there is not a constant multiple of " + std::to_string(parts) + ")";
    } else if (k.clusterLoc.valid()) {
        // T.ClusterKernel(..., cluster_dims=1): the author's clusters are single blocks; tilec adds none
    } else if (p.persistent && p.once.empty() && p.G == 1 && p.genericReads.empty() && o.clusters && t.archSpecific &&
               (p.constTiles ? *p.constTiles >= 2LL * t.numSms * p.blocks : o.runtimeClusters)) {
        parts = o.clusterBlocks;
        cluster = planCluster(k, p.tiles, p.loop->var.get(), -1, parts);
        if (cluster.axis < 0 && parts > 2) cluster = planCluster(k, p.tiles, p.loop->var.get(), -1, parts = 2);
        p.clusterMinWaves = p.constTiles ? 0 : 2;
    }
    // The scalars the producer replays (a grouped GEMM's group, found by a loop over a tensor) are loads that
    // planCluster sees no block index in: where their statements use the axis's, no tile is shared.
    if (cluster.axis >= 0 && k.blockIdx[(size_t)cluster.axis] &&
        std::any_of(p.replay.begin(), p.replay.end(), [&](const Stmt &s) { return uses(s, k.blockIdx[(size_t)cluster.axis].get()); })) {
        if (cd[0] * cd[1] * cd[2] > 1)
            clusterWhy = "the tiles' positions read scalars the kernel computes from the block index along grid dimension " +
                         std::to_string(cluster.axis) + " by a loop";
        cluster = ClusterPlan();
    }
    // The blocks of a cluster must run the same iterations (each loads a share of the others' shared tiles).
    if (cluster.axis >= 0 && conditionsUse(p, k, cluster.axis)) {
        if (cd[0] * cd[1] * cd[2] > 1)
            clusterWhy = "the conditions the loop's iterations run under depend on the block index along grid dimension " +
                         std::to_string(cluster.axis);
        cluster = ClusterPlan();
    }
    p.CM = cluster.axis >= 0 ? parts : 1;
    if (p.CM == 1) p.clusterMinWaves = 0;
}

} // namespace warproles

} // namespace tilec::passes
