/// \file
/// Which lowerings a program gets and in which order the launcher tries them: one per -arch target, and
/// beside one that needs TMA or assumes wide rows, the variants that do without (the switches of each are a
/// Variant); lowerings that came out identical are merged into one kernel naming all their targets.
#include "tilec/Lower.h"

#include "tilec/IRCompare.h"
#include "tilec/IRPrinter.h"
#include "tilec/passes/PlanSharedMemory.h"
#include "tilec/passes/ShrinkGemmTiles.h"
#include "tilec/passes/SplitK.h"
#include "tilec/passes/WidenGemmTiles.h"

#include <algorithm>

namespace tilec {

LoweringOptions LoweringOptions::forKernel(const ir::Kernel &k) const {
    LoweringOptions o = *this;
    o.tma &= !k.noTma;
    o.warpSpecialize &= !k.noWarpSpecialize;
    return o;
}

AttentionSchedule LoweringOptions::attentionSchedule(int64_t headDim, int operandBits, int64_t stages) const {
    const bool wide = headDim >= kAttentionOverlapHeadDim && operandBits == 16;
    AttentionSchedule s;
    s.overlap = intraOverlap == Choice::On || (intraOverlap == Choice::Auto && wide && stages >= 2);
    s.turns = pingPong == Choice::On || (pingPong == Choice::Auto && s.overlap && wide);
    return s;
}

namespace {

/// Runs lower() for `v` with `ctx`'s diagnostics held, then reports those that no earlier variant reported
/// (a note goes with the diagnostic before it). False when the lowering had errors.
bool lowerOnce(const ir::Program &program, const Variant &v, PassContext &ctx, std::vector<ir::Program> &lowerings,
               std::vector<HeldDiagnostic> &reported) {
    DiagnosticEngine &diag = *ctx.diag;
    diag.hold();
    lowerings.push_back(lower(program, v, ctx));
    bool dropped = false;
    for (auto &d : diag.endHold()) {
        auto same = [&](const HeldDiagnostic &r) {
            return r.severity == d.severity && r.message == d.message && r.range.file == d.range.file &&
                   r.range.line == d.range.line && r.range.col == d.range.col;
        };
        if (d.severity != Severity::Note) dropped = std::any_of(reported.begin(), reported.end(), same);
        if (dropped) continue;
        diag.report(d.severity, d.range, d.message);
        if (d.severity != Severity::Note) reported.push_back(d);
    }
    return !diag.hasErrors();
}

/// Kernel `i`'s distinct lowerings (two are the same kernel when ir::sameLowering says so: node by node,
/// everything but the targets), each naming every target it is for, in the order the launcher tries them.
std::vector<ir::KernelP> mergeVariants(const std::vector<ir::Program> &lowerings, size_t i) {
    std::vector<std::shared_ptr<ir::Kernel>> variants;
    for (auto &l : lowerings) {
        const ir::KernelP &k = l.kernels[i];
        auto same = std::find_if(variants.begin(), variants.end(), [&](auto &v) { return ir::sameLowering(*v, *k); });
        if (same == variants.end()) {
            variants.push_back(std::make_shared<ir::Kernel>(*k));
        } else {
            auto &ts = (*same)->targets;
            for (auto &t : k->targets)
                if (std::find(ts.begin(), ts.end(), t) == ts.end()) ts.push_back(t);
        }
    }
    // Variants with a launch condition on the grid first, then TMA variants (they need the most of the device and of the arguments), then those assuming
    // wide rows, each arch-specific one before a portable one (the launcher takes the first that runs on
    // the device: sm_90a's wgmma before sm_90's mma.sync, which would run there too), then by target.
    auto specific = [](const ir::Kernel &k) {
        return std::all_of(k.targets.begin(), k.targets.end(), [](const Target &t) { return t.archSpecific; });
    };
    // (a variant clustered from two waves of a run-time tile count before the one without clusters)
    auto demand = [&](const ir::Kernel &k) {
        return 8 * (k.clusterMinWaves > 0) + 4 * k.needsTma + 2 * !k.assumptions.empty() + specific(k);
    };
    std::stable_sort(variants.begin(), variants.end(), [&](auto &a, auto &b) { return demand(*a) > demand(*b); });
    return std::vector<ir::KernelP>(variants.begin(), variants.end());
}

} // namespace

ir::Program lowerVariants(const ir::Program &program, const std::vector<Target> &targets,
                          const LoweringOptions &options, PassContext &ctx) {
    TILEC_ASSERT(ctx.diag, "lowerVariants() needs a diagnostic engine");
    // GEMM tiles taller than their observed rows shrink first (splitK then weighs the tile that runs); split-K
    // changes the program's launches: both are decided once for every target.
    const ir::Program shrunk = ctx.run("shrinkGemmTiles", [&] { return passes::shrinkGemmTiles(program, &ctx.diag->sources()); },
                                       [](const ir::Program &p) { return ir::print(p); });
    const ir::Program split = ctx.run("splitK", [&] { return passes::splitK(shrunk, targets, options, &ctx.diag->sources()); },
                                      [](const ir::Program &p) { return ir::print(p); });
    // One-warpgroup 128x128 GEMM tiles two to a block of two consumer warpgroups (--widen-gemm-tiles), after splitK
    // has weighed the narrow tiles (a split kernel is no longer one GEMM launch).
    const ir::Program widened = ctx.run("widenGemmTiles", [&] { return passes::widenGemmTiles(split, targets, options, &ctx.diag->sources()); },
                                     [](const ir::Program &p) { return ir::print(p); });
    std::vector<ir::Program> lowerings;
    std::vector<HeldDiagnostic> reported;
    for (const Target &t : targets) {
        bool tmaNeeded = false;
        for (bool tma : {true, false}) {
            if (!tma && !tmaNeeded) break;
            bool assumed = false;
            for (bool wide : {true, false}) {
                if (!wide && !assumed) break;
                // A kernel clustered for a tile count known at run time (Kernel::clusterMinWaves) is lowered
                // again without those clusters, the launcher's choice below two waves.
                for (bool clustered : {true, false}) {
                    Variant v{t, options};
                    v.options.tma = options.tma && tma;
                    v.options.assumeAlignedRows = wide;
                    v.options.runtimeClusters = options.runtimeClusters && clustered;
                    if (!lowerOnce(widened, v, ctx, lowerings, reported)) return {};
                    bool conditional = false;
                    for (auto &k : lowerings.back().kernels) {
                        tmaNeeded |= k->needsTma;
                        assumed |= !k->assumptions.empty();
                        conditional |= k->clusterMinWaves > 0;
                    }
                    if (!conditional) break;
                }
            }
        }
    }
    ir::Program out;
    for (size_t i = 0; i < widened.kernels.size(); ++i)
        for (auto &k : mergeVariants(lowerings, i)) out.kernels.push_back(k);
    return out;
}

} // namespace tilec
