/// \file
/// The whole pipeline in one table: each row is one pass from its own file, with when it runs and whether
/// lowering stops after it on a user error. lower() runs the rows in order; --dump-after and --time-passes
/// name them (PassContext::run), and the driver runs the front-end rows itself.
#include "tilec/Lower.h"

#include "tilec/IRPrinter.h"
#include "tilec/passes/BoundGemmRows.h"
#include "tilec/passes/BulkStores.h"
#include "tilec/passes/CheckWholeWarps.h"
#include "tilec/passes/FlattenBuffers.h"
#include "tilec/passes/FoldImpliedConditions.h"
#include "tilec/passes/FullTileTransfers.h"
#include "tilec/passes/HoistNestInvariants.h"
#include "tilec/passes/HonourProgramWaits.h"
#include "tilec/passes/InferLayouts.h"
#include "tilec/passes/InsertSyncs.h"
#include "tilec/passes/LowerAsyncCopies.h"
#include "tilec/passes/LowerParallel.h"
#include "tilec/passes/LowerReducers.h"
#include "tilec/passes/ThreadRangeRegions.h"
#include "tilec/passes/ThreadRangeRoles.h"
#include "tilec/passes/LowerReductions.h"
#include "tilec/passes/LowerGemm.h"
#include "tilec/passes/LowerTileOps.h"
#include "tilec/passes/JoinThreadRoles.h"
#include "tilec/passes/KeepMaxNreg.h"
#include "tilec/passes/LowerWarpRoles.h"
#include "tilec/passes/LoadBatchLaunchBounds.h"
#include "tilec/passes/OneWaveLaunchBounds.h"
#include "tilec/passes/OverlapScores.h"
#include "tilec/passes/PingPongConsumers.h"
#include "tilec/passes/PipelineLoops.h"
#include "tilec/passes/RingWarpRoles.h"
#include "tilec/passes/PlaceWgmmaWaits.h"
#include "tilec/passes/PlanSharedMemory.h"
#include "tilec/passes/AsyncPtxCopies.h"
#include "tilec/passes/CpAsyncWgmma.h"
#include "tilec/passes/ShiftFragmentOffsets.h"
#include "tilec/passes/SqueezeUnitFragments.h"
#include "tilec/passes/GrowIndexedFragments.h"
#include "tilec/passes/OrderRoleExchanges.h"
#include "tilec/passes/SpecializeWarps.h"
#include "tilec/passes/StageEpilogue.h"
#include "tilec/passes/StoreMatrices.h"
#include "tilec/passes/PredicateBounds.h"
#include "tilec/passes/SelectRegisterSlots.h"
#include "tilec/passes/SinkTransferWaits.h"
#include "tilec/passes/SkipUnitRescales.h"
#include "tilec/passes/ZeroInitWgmma.h"
#include "tilec/passes/SplitIndexDivisions.h"
#include "tilec/passes/SplitSwizzles.h"
#include "tilec/passes/SplitUniformConditions.h"
#include "tilec/passes/SwizzleShared.h"
#include "tilec/passes/TransposeFragments.h"
#include "tilec/passes/UnrollSerialLoops.h"
#include "tilec/passes/UnswitchLoops.h"
#include "tilec/passes/UnswitchUniformSelects.h"
#include "tilec/passes/VectorizeAccesses.h"
#include "tilec/passes/WidenIndices.h"

#include <algorithm>
#include <iomanip>
#include <ostream>

namespace tilec {

/// What the passes of one lowering share: the variant and the user's diagnostics (what a pass decides for the
/// passes after it is stored on the kernels: the fragment layouts, Kernel::layouts; the shared tiles' storage,
/// Kernel::tileLayouts).
struct PassState {
    const Variant &variant;
    DiagnosticEngine &diag;
};

namespace {

using ir::Program;
bool always(const LoweringOptions &) { return true; }

/// The pipeline's first half, in order: the driver's phases (no `run`, listed for --dump-after), then the passes
/// over tile-level IR, up to the T.Parallel nests' lowering to each thread's statements.
std::vector<Pass> tileRows() {
    return {
        {"parse"}, {"evaluate"}, {"check"},
        // GEMM tiles taller than the rows anyone observes are computed at those rows (once for all targets:
        // lowerVariants), then GEMMs whose tiles leave the GPU idle split K over two launches (likewise), then
        // one-warpgroup 128x128 tiles two to a block under --widen-gemm-tiles (likewise).
        {"shrinkGemmTiles"}, {"splitK"}, {"widenGemmTiles"},
        // Rows of a T.gemm accumulator that no one observes (a skinny A in a tall tile) are marked as such.
        {"boundGemmRows", always, [](const Program &p, PassState &) { return passes::boundGemmRows(p); }, false},
        // Fragments a T.Parallel nest indexes past their extent hold the nest's extent, as TileLang lays them out.
        {"growIndexedFragments", always,
         [](const Program &p, PassState &s) { return passes::growIndexedFragments(p, s.diag); }, false},
        // Branches on the thread index that are warp groups synchronised by mbarriers become T.ws blocks.
        {"threadRangeRoles", always, [](const Program &p, PassState &s) { return passes::threadRangeRoles(p, s.diag); }, true},
        // Tile statements under `if tx < N:` (a range of the threads) are run by the whole block, or (an `else` on
        // whole warps that shares nothing the other writes) each branch on its own threads, at once.
        {"threadRangeRegions", always, [](const Program &p, PassState &s) { return passes::threadRangeRegions(p, s.diag); }, true},
        // T.alloc_reducer accumulations in T.Parallel nests become reductions.
        {"lowerReducers", always, [](const Program &p, PassState &s) { return passes::lowerReducers(p, s.diag); }, false},
        // A T.Pipelined loop of explicit warp roles runs on rings of its num_stages stages (tiles and mbarriers).
        {"ringWarpRoles", always, [](const Program &p, PassState &s) { return passes::ringWarpRoles(p, &s.diag.sources()); }, false},
        // Explicit warp roles (T.ws blocks, mbarriers, T.tma_copy) become producer/consumer warp roles.
        {"lowerWarpRoles", always,
         [](const Program &p, PassState &s) { return passes::lowerWarpRoles(p, s.variant.target, s.diag); }, true},
        // Fragments of shape (M, 1, ..., 1) become 1-D: per-row values a T.gemm result's rows can hold.
        {"squeezeUnitFragments", always, [](const Program &p, PassState &) { return passes::squeezeUnitFragments(p); }, false},
        // T.async_copy as per-thread cp.async where the program's waits provably cover it, else synchronous.
        {"lowerAsyncCopies", always,
         [](const Program &p, PassState &s) { return passes::lowerAsyncCopies(p, &s.diag.sources()); }, false},
        // Tile statements that are element-wise at heart become T.Parallel nests.
        {"lowerTileOps", always, [](const Program &p, PassState &s) { return passes::lowerTileOps(p, s.diag); }, true},
        // Hopper: T.Pipelined loops of TMA-able tiles feeding T.gemm become producer/consumer warp roles.
        {"specializeWarps", always,
         [](const Program &p, PassState &s) { return passes::specializeWarps(p, s.variant, &s.diag); }, true},
        // sm_90a kernels left on the cp.async path run their T.gemms on wgmma where every one can.
        {"cpAsyncWgmma", always, [](const Program &p, PassState &s) { return passes::cpAsyncWgmma(p, s.variant, &s.diag.sources()); }, true},
        // T.Parallel nests reading a fragment at a constant offset from a guarded variable (`acc[i + 16, d]` under
        // `if i < 16`) re-indexed over the shifted variable, so that they index it exactly.
        {"shiftFragmentOffsets", always, [](const Program &p, PassState &) { return passes::shiftFragmentOffsets(p); }, false},
        // T.Parallel nests reaching a fragment through a permutation of their variables: loops reordered, or
        // the fragment read from a shared copy.
        {"transposeFragments", always, [](const Program &p, PassState &) { return passes::transposeFragments(p); }, false},
        // Which thread holds which fragment element and runs which iteration.
        {"inferLayouts", always, [](const Program &p, PassState &s) { return passes::inferLayouts(p, s.diag, s.variant.options.broadcastLoadWidths); }, true,
         [](const Program &p, const PassState &) { return passes::describeLayouts(p); }},
        // Asynchronous tile transfers; T.Pipelined loops overlap the next tiles' transfers with this one's math.
        {"pipelineLoops", always, [](const Program &p, PassState &s) { return passes::pipelineLoops(p, s.variant, s.diag); }, false},
        // Barriers between tile statements that exchange data through shared memory.
        {"insertSyncs", always,
         [](const Program &p, PassState &s) { return passes::insertSyncs(p, s.variant.target, s.diag); }, true},
        // sm_90+: the shared tiles a kernel copies to global memory last go by TMA bulk copies of single threads.
        {"bulkStores", [](const LoweringOptions &o) { return o.bulkStores; },
         [](const Program &p, PassState &s) { return passes::bulkStores(p, s.variant, &s.diag.sources()); }, false},
        // Consumer warp groups that hand data on through shared memory after their last mbarrier arrival wait for it.
        {"orderRoleExchanges", always, [](const Program &p, PassState &) { return passes::orderRoleExchanges(p); }, false},
        // Per-thread code: reductions, then T.Parallel nests and fragments as register arrays.
        {"lowerReductions", always,
         [](const Program &p, PassState &s) { return passes::lowerReductions(p, s.variant.target); }, false},
        {"lowerGemm", always,
         [](const Program &p, PassState &s) { return passes::lowerGemm(p, s.variant.target, s.diag); }, true},
        // Hopper: wgmma accumulators copied to a global tile go through shared memory (stmatrix) and TMA stores.
        {"stageEpilogue", always,
         [](const Program &p, PassState &s) { return passes::stageEpilogue(p, s.variant, &s.diag.sources()); }, false},
        // sm_90+: tensor-core fragments copied into 16-bit shared tiles by each warp's stmatrix.
        {"storeMatrices", [](const LoweringOptions &o) { return o.stmatrixCopies; },
         [](const Program &p, PassState &s) { return passes::storeMatrices(p, s.variant, &s.diag.sources()); }, false},
    };
}

/// The pipeline's second half, in order: from the T.Parallel nests' lowering on, the passes over each thread's
/// statements, down to the launch bounds and the shared-memory plan.
std::vector<Pass> threadRows() {
    return {
        {"lowerParallel", always, [](const Program &p, PassState &) { return passes::lowerParallel(p); }, false},
        // Reads of fragments held whole by every thread at a thread-dependent index: a choice among constant slots.
        {"selectRegisterSlots", always, [](const Program &p, PassState &) { return passes::selectRegisterSlots(p); }, false},
        // Blocks that end in a partial warp (threads=1): what needs all 32 lanes of a warp is an error there.
        {"checkWholeWarps", always,
         [](const Program &p, PassState &s) { return passes::checkWholeWarps(p, s.diag), p; }, true},
        // Branches on the thread index that threadRangeRegions lowered as kernels of their own threads: back in
        // their kernel as concurrent warp roles.
        {"joinThreadRoles", always, [](const Program &p, PassState &) { return passes::joinThreadRoles(p); }, false},
        // Waits for the asynchronous wgmma (one k-block kept in flight), accumulators cleared and pinned for them.
        {"placeWgmmaWaits", always, [](const Program &p, PassState &) { return passes::placeWgmmaWaits(p); }, false},
        // Hopper attention (head dimension >= 128, or on request): the next key block's QK^T issued before this block's softmax.
        {"overlapScores", [](const LoweringOptions &o) { return o.intraOverlap != Choice::Off; },
         [](const Program &p, PassState &s) { return passes::overlapScores(p, s.variant.options, &s.diag.sources()); }, false},
        // Hopper attention, on request: two consumer warpgroups take turns at the tensor cores (named barriers), in
        // the loops overlapScores left without them.
        {"pingPongConsumers", [](const LoweringOptions &o) { return o.pingPong == Choice::On; },
         [](const Program &p, PassState &) { return passes::pingPongConsumers(p); }, false},
        // T.wgmma_gemm: groups in flight until the program's T.wait_wgmma, retired early only where the issuing
        // threads touch their registers or overwrite their shared operands.
        {"honourProgramWaits", always, [](const Program &p, PassState &) { return passes::honourProgramWaits(p); }, false},
        // In-place rescales of registers by per-row factors (attention's output): skipped by a warp vote where every
        // factor is exactly 1 (after the attention schedule placed them).
        {"skipUnitRescales", [](const LoweringOptions &o) { return o.skipUnitRescales; },
         [](const Program &p, PassState &s) { return passes::skipUnitRescales(p, &s.diag.sources()); }, false},
        // A wgmma product right after a clear of its accumulators (attention's scores, per key block): scale-d 0 in
        // its first k-step, the clear dropped (after the schedule that places the clears).
        {"zeroInitWgmma", [](const LoweringOptions &o) { return o.zeroInitWgmma; },
         [](const Program &p, PassState &) { return passes::zeroInitWgmma(p); }, false},
        // Loops whose element-wise conditions (a causal mask, a bounds check) are uniformly true or false over the
        // tile for a range of iterations: those iterations run a copy of the body without them.
        {"splitUniformConditions", [](const LoweringOptions &o) { return o.splitConditions; },
         [](const Program &p, PassState &s) {
             return passes::splitUniformConditions(p, s.variant.options, &s.diag.sources());
         }, false},
        // Memory: bounds checks at tensor edges, flat offsets, vector accesses.
        {"predicateBounds", always, [](const Program &p, PassState &) { return passes::predicateBounds(p); }, false},
        // What a fragment nest reads again at every element (a row's scale), read once per value.
        {"hoistNestInvariants", always, [](const Program &p, PassState &) { return passes::hoistNestInvariants(p); }, false},
        {"flattenBuffers", always, [](const Program &p, PassState &) { return passes::flattenBuffers(p); }, false},
        // T.ptx_cp_async as cp.async completed at its thread's T.cp_async_barrier_noinc, where the thread's program
        // proves nothing it does after a copy reaches another thread before that arrival.
        {"asyncPtxCopies", always, [](const Program &p, PassState &s) { return passes::asyncPtxCopies(p, &s.diag.sources()); }, false},
        {"vectorizeAccesses", always, [](const Program &p, PassState &s) {
             const LoweringOptions &o = s.variant.options;
             return passes::vectorizeAccesses(p, o.assumeAlignedRows, o.selectTestLoads, o.bankVectorLoads); }, false},
        // Divisions and remainders in global offsets split over their terms: unrolled iterations add constants.
        {"splitIndexDivisions", always, [](const Program &p, PassState &) { return passes::splitIndexDivisions(p); }, false},
        // Tests around a loop's whole body that the loop cannot change, made once before it.
        {"unswitchLoops", always, [](const Program &p, PassState &) { return passes::unswitchLoops(p); }, false},
        // Short serial loops of independent memory rounds unrolled: their rounds' global loads in flight together.
        {"unrollSerialLoops", always, [](const Program &p, PassState &) { return passes::unrollSerialLoops(p); }, false},
        // Tile transfers waited for in place wait where their tiles are first needed (loads between in flight).
        {"sinkTransferWaits", always, [](const Program &p, PassState &) { return passes::sinkTransferWaits(p); }, false},
        // Tests that the branches around them decide (bounds checks in an author's interior branch), folded. After
        // every pass that moves a load or a test across a branch: what they moved out keeps its guard.
        {"foldImpliedConditions", always, [](const Program &p, PassState &) { return passes::foldImpliedConditions(p); }, false},
        // Tile transfers that the block indices' and loops' ranges prove inside their tensor: no per-row test left
        // in them (after foldImpliedConditions took the other dimensions' tests out of their counts).
        {"fullTileTransfers", always, [](const Program &p, PassState &) { return passes::fullTileTransfers(p); }, false},
        // Unrolled nests choosing per element by a block-uniform test (block_causal_attention's masks): the test made
        // once, a copy of the nest for each outcome.
        {"unswitchUniformSelects", always, [](const Program &p, PassState &) { return passes::unswitchUniformSelects(p); }, false},
        // Index arithmetic in 64 bits where its exact range passes 32 (large tensors); past 64 bits an error.
        {"widenIndices", always, [](const Program &p, PassState &s) { return passes::widenIndices(p, s.diag); }, true},
        // Shared T.gemm operands are stored swizzled (bank-conflict-free cp.async writes and ldmatrix reads).
        {"swizzleShared", always, [](const Program &p, PassState &) { return passes::swizzleShared(p); }, false,
         [](const Program &p, const PassState &) { return passes::describeBankConflicts(p); }},
        // Swizzled offsets in unrolled loops: the thread's part mapped once, the unrolled loops' part a constant.
        {"splitSwizzles", always, [](const Program &p, PassState &) { return passes::splitSwizzles(p); }, false},
        // A constant grid of no more blocks than SMs: one block per SM as the launch bound (registers for ILP).
        {"oneWaveLaunchBounds", always,
         [](const Program &p, PassState &s) { return passes::oneWaveLaunchBounds(p, s.variant.target); }, false},
        // Other grids whose unrolled loops issue many global loads together: one block per SM, registers for them.
        // Bandwidth-bound kernels (no tensor-core product) name the blocks per SM their shared memory and registers allow.
        {"loadBatchLaunchBounds", always,
         [](const Program &p, PassState &s) {
             const LoweringOptions &o = s.variant.options;
             return passes::loadBatchLaunchBounds(p, s.variant.target, {o.oneBlockBounds, o.boundBlocks, o.occupancyBounds},
                                                  &s.diag.sources());
         },
         false},
        // The program's own setmaxnreg (T.set_max_nreg) kept where whole warp groups of explicit warp roles run it
        // and the counts fit the register file at the launch bound's blocks per SM; dropped elsewhere (-v says why).
        {"keepMaxNreg", always,
         [](const Program &p, PassState &s) { return passes::keepMaxNreg(p, s.variant.target, &s.diag.sources()); }, false},
        // Offsets of the shared buffers (mbarriers and 1024-byte aligned TMA tiles included); limits per target.
        {"planSharedMemory", always,
         [](const Program &p, PassState &s) { return passes::planSharedMemory(p, s.variant.target, s.diag, s.variant.options.sharedReuseBlocks); }, false,
         [](const Program &p, const PassState &) { return passes::describeSharedPlans(p); }},
    };
}

/// The pipeline, in order: tileRows, then threadRows.
const std::vector<Pass> &table() {
    static const std::vector<Pass> rows = [] {
        std::vector<Pass> all = tileRows();
        for (auto &p : threadRows()) all.push_back(std::move(p));
        return all;
    }();
    return rows;
}

} // namespace

const std::vector<Pass> &pipeline() { return table(); }

const std::vector<std::string> &passNames() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (auto &p : table()) n.push_back(p.name);
        return n;
    }();
    return names;
}

bool isFrontEndPhase(const std::string &name) {
    // shrinkGemmTiles, splitK and widenGemmTiles have no per-variant `run` either, but lowerVariants runs them: they dump only
    // when lowering runs.
    return name != "splitK" && name != "shrinkGemmTiles" && name != "widenGemmTiles" &&
           std::any_of(table().begin(), table().end(), [&](const Pass &p) { return !p.run && name == p.name; });
}

ir::Program lower(ir::Program p, const Variant &v, PassContext &ctx) {
    TILEC_ASSERT(ctx.diag, "lower() needs a diagnostic engine");
    PassState state{v, *ctx.diag};
    for (const Pass &pass : table()) {
        if (!pass.run || !pass.enabled(v.options)) continue;
        p = ctx.run(pass.name, [&] { return pass.run(p, state); }, [&](const Program &q) {
            return (pass.notes ? pass.notes(q, state) : std::string()) + ir::print(q);
        });
        if (ctx.observe) ctx.observe(pass.name, p);
        if (pass.stopsOnError && state.diag.hasErrors()) return p;
    }
    // Which target this lowering is for (the driver merges identical lowerings of several targets); the fragment
    // layouts name fragments that are register arrays by now.
    for (auto &k : p.kernels) {
        auto nk = std::make_shared<ir::Kernel>(*k);
        nk->targets = {v.target};
        nk->layouts = nullptr;
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
