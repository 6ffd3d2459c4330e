/// \file
/// Short serial loops of independent memory rounds unrolled (include/tilec/passes/UnrollSerialLoops.h).
#include "tilec/passes/UnrollSerialLoops.h"

#include "tilec/IRMutator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <cstdint>

namespace tilec::passes {

using namespace ir;

namespace {

constexpr int64_t kMaxTrips = 32;        ///< rounds of one loop
constexpr int64_t kMaxStatements = 512;  ///< statements of the unrolled loop (a vector access counts once)
constexpr int64_t kMaxGlobalLoads = 128; ///< global loads (vector or scalar) of the unrolled loop

/// The size of one iteration, and whether it may be unrolled at all.
struct Body : IRVisitor {
    using IRVisitor::visit;
    bool blocked = false;
    int64_t statements = 0, globalLoads = 0, mmas = 0;
    int64_t scale = 1; ///< the trips of the unrolled loops around the statement being counted

    void visit(const For &op) override {
        auto trips = constInt(op.extent);
        if ((op.forKind != ForKind::Unrolled && op.forKind != ForKind::Vectorized) || !trips) {
            blocked = true;
            return;
        }
        // A vector access is one instruction: a vectorized loop counts as one round.
        const int64_t saved = scale;
        if (op.forKind == ForKind::Unrolled) scale *= std::max<int64_t>(*trips, 1);
        IRVisitor::visit(op);
        scale = saved;
    }
    void visit(const While &) override { blocked = true; }
    void visit(const Copy &) override { blocked = true; }
    void visit(const Fill &) override { blocked = true; }
    void visit(const Gemm &) override { blocked = true; }
    void visit(const Reduce &) override { blocked = true; }
    void visit(const WarpRoles &) override { blocked = true; }
    void visit(const Store &op) override {
        statements += scale;
        IRVisitor::visit(op);
    }
    void visit(const AtomicAdd &op) override {
        statements += scale;
        IRVisitor::visit(op);
    }
    void visit(const Evaluate &op) override {
        statements += scale;
        IRVisitor::visit(op);
    }
    void visit(const Load &op) override {
        if (op.buffer && op.buffer->scope == Scope::Global) globalLoads += scale;
        IRVisitor::visit(op);
    }
    /// Barriers, asynchronous transfers and the author's own device calls keep the loop as it is; math and
    /// the pure library calls (shuffles, swizzle offsets) do not.
    /// An mma.sync of the intrinsics-level API and the ldmatrix that feeds it are a tensor-core round: issued in
    /// order by the warp, synchronous, no barrier.
    void visit(const Call &op) override {
        if (op.name.rfind("extern:", 0) == 0) blocked = true;
        if (lib::is(op, lib::Fn::MmaSync)) mmas += scale;
        if (const lib::Info *f = lib::find(op.name); f && !lib::is(op, lib::Fn::LdMatrix)) {
            bool pure = f->effects == lib::kNone || (f->effects & lib::kPure);
            if (!pure || (f->effects & (lib::kBarrier | lib::kAsync))) blocked = true;
        }
        IRVisitor::visit(op);
    }
};

class Unroll : public IRMutator {
  public:
    using IRMutator::visit;

    Stmt visit(const std::shared_ptr<const For> &op) override {
        Stmt s = IRMutator::visit(op); // inner loops first
        auto f = as<For>(s);
        if (!f || f->forKind != ForKind::Serial || f->numStages != 0) return s;
        auto lo = constInt(f->min), trips = constInt(f->extent);
        if (!lo || !trips || *trips < 2 || *trips > kMaxTrips) return s;
        Body b;
        b.visit(f->body);
        // Rounds of global loads, or of mma.sync with their fragment loads: unrolled, the next k-step's ldmatrix
        // is issued under this one's mma.sync (TileLang's emitter loops: gemm_intrinsics' `for ki`), where a
        // rolled loop waits for each round's fragments before its first mma.
        if (b.blocked || (b.globalLoads == 0 && b.mmas == 0)) return s;
        if (*trips * b.statements > kMaxStatements || *trips * b.globalLoads > kMaxGlobalLoads) return s;
        return For::make(f->var, f->min, f->extent, ForKind::Unrolled, 0, f->body, f->loc);
    }
};

} // namespace

bool unrolledFits(const Stmt &body, int64_t trips) {
    Body b;
    b.visit(body);
    return !b.blocked && trips * b.statements <= kMaxStatements && trips * b.globalLoads <= kMaxGlobalLoads;
}

Program unrollSerialLoops(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Unroll u;
        out.kernels.push_back(u.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
