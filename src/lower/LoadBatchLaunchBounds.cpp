/// \file
/// Registers for the global loads an unrolled loop issues together (include/tilec/passes/LoadBatchLaunchBounds.h).
#include "tilec/passes/LoadBatchLaunchBounds.h"

#include "EachKernel.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/OccupancyBlocks.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace tilec::passes {

using namespace ir;

namespace {

constexpr int64_t kDefaultCap = 64;      ///< what ptxas kept 128- and 256-thread row kernels to without a bound
constexpr int64_t kOtherRegisters = 32; ///< addresses, accumulators and loop state beside the batch

/// The bytes of global loads one unrolled loop issues, with whether something in it orders or defers them.
struct Batch : IRVisitor {
    using IRVisitor::visit;
    int64_t bytes = 0;
    int64_t scale = 1; ///< trips of the unrolled loops and lanes of the vectorized loop around the load
    bool blocked = false;

    void visit(const For &op) override {
        auto trips = constInt(op.extent);
        if (!trips || (op.forKind != ForKind::Unrolled && op.forKind != ForKind::Vectorized)) {
            blocked = true;
            return;
        }
        const int64_t saved = scale;
        scale *= std::max<int64_t>(*trips, 1);
        IRVisitor::visit(op);
        scale = saved;
    }
    void visit(const While &) override { blocked = true; }
    void visit(const Load &op) override {
        if (op.buffer && op.buffer->scope == Scope::Global) bytes += scale * op.buffer->dtype.bytes();
        IRVisitor::visit(op);
    }
    void visit(const Call &op) override {
        if (const lib::Info *f = lib::find(op.name); f && (f->effects & (lib::kBarrier | lib::kAsync))) blocked = true;
        if (op.name.rfind("extern:", 0) == 0) blocked = true;
        IRVisitor::visit(op);
    }
};

/// The largest batch over the outermost unrolled loops of a body.
struct Largest : IRVisitor {
    using IRVisitor::visit;
    int64_t registers = 0;

    void visit(const For &op) override {
        if (op.forKind != ForKind::Unrolled) {
            IRVisitor::visit(op);
            return;
        }
        Batch b;
        b.visit(op);
        if (!b.blocked) registers = std::max(registers, (b.bytes + 3) / 4);
        else IRVisitor::visit(op); // an inner unrolled loop may still be a batch of its own
    }
};

/// Whether a body issues tensor-core products (mma.sync, wgmma, their sparse forms): their accumulators, not a
/// batch of loads, decide such a kernel's registers.
struct TensorCores : IRVisitor {
    using IRVisitor::visit;
    bool found = false;

    void visit(const Call &op) override {
        for (lib::Fn f : {lib::Fn::GemmSS, lib::Fn::GemmRS, lib::Fn::GemmSSPanels, lib::Fn::GemmRSPanels, lib::Fn::GemmSpSS,
                          lib::Fn::MmaSync})
            found = found || lib::is(op, f);
        found = found || isWgmmaProduct(op);
        IRVisitor::visit(op);
    }
    void visit(const Gemm &) override { found = true; }
};

} // namespace

int64_t loadBatchRegisters(const Stmt &body) {
    Largest l;
    if (body) l.visit(body);
    return l.registers;
}

ir::Program loadBatchLaunchBounds(const ir::Program &p, const Target &t, const LaunchBoundChoice &c,
                                  const SourceManager *sources) {
    return eachKernel(p, [&](const ir::KernelP &k) -> ir::KernelP {
        if (k->minBlocksPerSM || k->persistent || !k->body) return k;
        TensorCores tc;
        tc.visit(k->body);
        if (!c.everyKernel) {
            if (tc.found) return k;
            const int64_t batch = loadBatchRegisters(k->body);
            const int64_t perThread = (batch + kOtherRegisters + 7) / 8 * 8;
            // A batch that fits beside the rest in what ptxas takes on its own is issued together without a bound.
            if (perThread <= kDefaultCap) return k;
        }
        auto nk = std::make_shared<ir::Kernel>(*k);
        nk->minBlocksPerSM = c.blocks > 0 ? c.blocks : 1;
        if (c.blocks == 0 && c.occupancy && !tc.found) {
            std::string why;
            nk->minBlocksPerSM = occupancyBlocks(*k, t, &why);
            remark(sources, k->launchLoc, "kernel '" + k->name + "' (" + t.name + "): no tensor-core product, launch bound (" +
                                              std::to_string(k->launchedThreads()) + ", " +
                                              std::to_string(nk->minBlocksPerSM) + "): " + why);
        }
        return nk;
    });
}

} // namespace tilec::passes
