/// \file
/// The whole pipeline in one screen. Each step is one pass from its own file; PassContext::run names it for
/// internal errors, times it and dumps the IR after it on request.
#include "tilec/Lower.h"

#include "tilec/IRPrinter.h"
#include "tilec/passes/FlattenBuffers.h"
#include "tilec/passes/InferLayouts.h"
#include "tilec/passes/InsertSyncs.h"
#include "tilec/passes/LowerParallel.h"
#include "tilec/passes/LowerReducers.h"
#include "tilec/passes/LowerReductions.h"
#include "tilec/passes/LowerGemm.h"
#include "tilec/passes/LowerTileOps.h"
#include "tilec/passes/LowerWarpRoles.h"
#include "tilec/passes/OverlapScores.h"
#include "tilec/passes/PingPongConsumers.h"
#include "tilec/passes/PipelineLoops.h"
#include "tilec/passes/PlaceWgmmaWaits.h"
#include "tilec/passes/PlanSharedMemory.h"
#include "tilec/passes/SpecializeWarps.h"
#include "tilec/passes/StageEpilogue.h"
#include "tilec/passes/PredicateBounds.h"
#include "tilec/passes/SwizzleShared.h"
#include "tilec/passes/VectorizeAccesses.h"

#include <iomanip>
#include <ostream>

namespace tilec {

const std::vector<std::string> &passNames() {
    // Front-end phases (run by the driver) first, then the passes of lower() in the order they run.
    static const std::vector<std::string> names = {
        "parse",           "evaluate",       "check",             "lowerReducers", "lowerWarpRoles", "lowerTileOps",  "specializeWarps",
        "inferLayouts",    "pipelineLoops",  "insertSyncs",       "lowerReductions", "lowerGemm",
        "stageEpilogue",   "lowerParallel",   "placeWgmmaWaits",  "overlapScores", "pingPongConsumers", "predicateBounds",   "flattenBuffers", "vectorizeAccesses",
        "swizzleShared",   "planSharedMemory",
    };
    return names;
}

ir::Program lower(ir::Program p, const Variant &v, PassContext &ctx) {
    const Target &t = v.target;
    TILEC_ASSERT(ctx.diag, "lower() needs a diagnostic engine");
    DiagnosticEngine &diag = *ctx.diag;
    auto printProgram = [](const ir::Program &q) { return ir::print(q); };

    // T.alloc_reducer accumulations in T.Parallel nests become reductions.
    p = ctx.run("lowerReducers", [&] { return passes::lowerReducers(p, diag); }, printProgram);
    // Explicit warp roles (T.ws blocks, mbarriers, T.tma_copy) become producer/consumer warp roles.
    p = ctx.run("lowerWarpRoles", [&] { return passes::lowerWarpRoles(p, t, diag); }, printProgram);
    if (diag.hasErrors()) return p;
    // Tile statements that are element-wise at heart become T.Parallel nests.
    p = ctx.run("lowerTileOps", [&] { return passes::lowerTileOps(p, diag); }, printProgram);
    if (diag.hasErrors()) return p;
    // Hopper: T.Pipelined loops of TMA-able tiles feeding T.gemm become producer/consumer warp roles.
    p = ctx.run("specializeWarps", [&] { return passes::specializeWarps(p, v, &diag); }, printProgram);
    if (diag.hasErrors()) return p;
    // Which thread holds which fragment element and runs which iteration.
    std::vector<passes::KernelLayouts> layouts;
    p = ctx.run("inferLayouts", [&] { layouts = passes::inferLayouts(p, diag); return p; },
                [&](const ir::Program &q) { return passes::describeLayouts(q, layouts) + ir::print(q); });
    if (diag.hasErrors()) return p;
    // Asynchronous tile transfers; T.Pipelined loops overlap the next tiles' transfers with this one's math.
    p = ctx.run("pipelineLoops", [&] { return passes::pipelineLoops(p, v, diag); }, printProgram);
    // Barriers between tile statements that exchange data through shared memory.
    p = ctx.run("insertSyncs", [&] { return passes::insertSyncs(p, layouts, t, diag); }, printProgram);
    if (diag.hasErrors()) return p;
    // Per-thread code: reductions, then T.Parallel nests and fragments as register arrays.
    p = ctx.run("lowerReductions", [&] { return passes::lowerReductions(p, layouts, t); }, printProgram);
    p = ctx.run("lowerGemm", [&] { return passes::lowerGemm(p, layouts, t, diag); }, printProgram);
    if (diag.hasErrors()) return p;
    // Hopper: wgmma accumulators copied to a global tile go through shared memory (stmatrix) and TMA stores.
    p = ctx.run("stageEpilogue", [&] { return passes::stageEpilogue(p, layouts, v, &diag.sources()); }, printProgram);
    p = ctx.run("lowerParallel", [&] { return passes::lowerParallel(p, layouts); }, printProgram);
    // Waits for the asynchronous wgmma (one k-block kept in flight), accumulators cleared and pinned for them.
    p = ctx.run("placeWgmmaWaits", [&] { return passes::placeWgmmaWaits(p); }, printProgram);
    // Hopper attention, on request: the next key block's QK^T issued before this block's softmax.
    if (v.options.intraOverlap) p = ctx.run("overlapScores", [&] { return passes::overlapScores(p); }, printProgram);
    // Hopper attention, on request: two consumer warpgroups take turns at the tensor cores (named barriers).
    if (v.options.pingPong) p = ctx.run("pingPongConsumers", [&] { return passes::pingPongConsumers(p); }, printProgram);
    // Memory: bounds checks at tensor edges, flat offsets, vector accesses.
    p = ctx.run("predicateBounds", [&] { return passes::predicateBounds(p); }, printProgram);
    p = ctx.run("flattenBuffers", [&] { return passes::flattenBuffers(p); }, printProgram);
    p = ctx.run("vectorizeAccesses", [&] { return passes::vectorizeAccesses(p); }, printProgram);
    // Shared T.gemm operands are stored swizzled (bank-conflict-free cp.async writes and ldmatrix reads).
    p = ctx.run("swizzleShared", [&] { return passes::swizzleShared(p); }, printProgram);
    // Offsets of the shared buffers (mbarriers and 1024-byte aligned TMA tiles included); limits per target.
    p = ctx.run("planSharedMemory", [&] { return passes::planSharedMemory(p, t, diag); }, printProgram);
    // Which target this lowering is for (the driver merges identical lowerings of several targets).
    for (auto &k : p.kernels) {
        auto nk = std::make_shared<ir::Kernel>(*k);
        nk->targets = {t};
        k = nk;
    }
    return p;
}

void PassContext::reportTimes(std::ostream &os) const {
    double total = 0;
    for (auto &[n, ms] : times) total += ms;
    os << "===- pass execution timing -===\n";
    for (auto &[n, ms] : times)
        os << "  " << std::setw(10) << std::fixed << std::setprecision(3) << ms << " ms  " << n << "\n";
    os << "  " << std::setw(10) << std::fixed << std::setprecision(3) << total << " ms  total\n";
}

} // namespace tilec
