/// \file
/// Placement of wgmma waits (include/tilec/passes/PlaceWgmmaWaits.h).
#include "tilec/passes/PlaceWgmmaWaits.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/HonourProgramWaits.h"
#include "tilec/passes/HopperOperands.h"

#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

Stmt wait(int pending, const SourceRange &loc) { return lib::stmt(lib::Fn::WgmmaWait, {i32(pending)}, loc); }
bool isWgmma(const Stmt &s) {
    const Call *c = callOf(s);
    return c && isWgmmaProduct(*c);
}

/// The elements of its A register array a wgmma_rs call reads asynchronously: the fragment's, and for float8
/// as many again, its m64k32 image (sm90_wgmma.cuh); tf32 has as many elements as 16-bit (m64k8: 4 a step).
int64_t rsRegisterElements(const Call &g) {
    auto c = [&](const char *n) { return *constInt(lib::arg(g, lib::Fn::WgmmaRS, n)); };
    const Load *a = addressedLoad(lib::arg(g, lib::Fn::WgmmaRS, "a"));
    TILEC_ASSERT(a, "placeWgmmaWaits: a wgmma_rs whose A is not a register array");
    return c("M") / c("wgM") / 64 * (c("K") / 16) * 8 * (a->buffer->dtype.isFloat8() ? 2 : 1);
}

/// Whether stmts[i] is a wgmma call whose wait the program places (a T.wgmma_gemm's: its mark follows it).
bool programWaited(const std::vector<Stmt> &stmts, size_t i) {
    return isWgmma(stmts[i]) && i + 1 < stmts.size() && isProgramWaitsMark(stmts[i + 1]);
}

/// A run: wgmma calls, each possibly followed by its mark (honourProgramWaits takes the marks out later).
bool inRun(const std::vector<Stmt> &stmts, size_t i) { return isWgmma(stmts[i]) || isProgramWaitsMark(stmts[i]); }

/// The wait after a run of wgmma calls stmts[from, to): wgmma_wait<0>, then every register array the run's
/// calls wrote (accumulators) or read asynchronously (an RS call's A) pinned there: no read of the results
/// moves above the wait, and the A registers live, unchanged, until the group reading them has retired. None
/// where every call of the run is the program's to wait for (honourProgramWaits).
std::vector<Stmt> waitsAfter(const std::vector<Stmt> &stmts, size_t from, size_t to, const SourceRange &loc) {
    bool ours = false;
    for (size_t i = from; i < to; ++i) ours |= isWgmma(stmts[i]) && !programWaited(stmts, i);
    if (!ours) return {};
    std::vector<Stmt> out{wait(0, loc)};
    std::vector<std::pair<Expr, int64_t>> pinned;
    auto pin = [&](const Expr &regs, int64_t count) {
        for (auto &[r, n] : pinned)
            if (structurallyEqual(r, regs) && n == count) return;
        pinned.push_back({regs, count});
        out.push_back(lib::stmt(lib::Fn::WgmmaFenceOperands, {i32(count), regs}, loc));
    };
    for (size_t i = from; i < to; ++i) {
        if (!isWgmma(stmts[i])) continue;
        const Call &g = *callOf(stmts[i]);
        const lib::Fn f = lib::find(g.name)->fn; // wgmma_ss, wgmma_rs or wgmma_sp_ss: each names M, N, wgM, wgN and c
        auto c = [&](const char *n) { return *constInt(lib::arg(g, f, n)); };
        pin(lib::arg(g, f, "c"), c("M") / c("wgM") / 64 * (c("N") / c("wgN") / 2));
        if (f == lib::Fn::WgmmaRS) pin(lib::arg(g, f, "a"), rsRegisterElements(g));
    }
    return out;
}

/// Whether `s` releases a stage: an arrive on its empty barrier (in a cluster, on every block's).
bool isArrive(const Stmt &s) { return isCall(s, lib::Fn::MbarrierArrive) || isCall(s, lib::Fn::MbarrierArriveCluster); }

/// The stage release at the end of a consumer iteration: an arrive, possibly under a condition (one lane per
/// warp); null when `s` is none.
const Call *releaseOf(const Stmt &s, Expr *cond) {
    if (isArrive(s)) return callOf(s);
    auto i = as<IfThenElse>(s);
    if (!i || i->otherwise || !isArrive(i->then)) return nullptr;
    *cond = i->cond;
    return callOf(i->then);
}

/// The barrier a release arrives on (the first argument of both kinds of arrive).
const Expr &releasedBarrier(const Call &arrive) {
    TILEC_ASSERT(lib::argIndex(lib::Fn::MbarrierArrive, "bar") == 0 && lib::argIndex(lib::Fn::MbarrierArriveCluster, "bar") == 0,
                 "placeWgmmaWaits: an arrive's barrier is its first argument");
    return arrive.args[0];
}

/// The same release on barrier `bar`.
Stmt releaseAt(const Call &arrive, Expr bar, const SourceRange &loc) {
    std::vector<Expr> args = arrive.args;
    args[0] = simplify(std::move(bar));
    return Evaluate::make(Call::make(arrive.dtype, arrive.name, std::move(args), loc), loc);
}

/// The accumulator registers a wgmma_ss call writes and their count per thread.
std::pair<Expr, int64_t> accumulatorOf(const Call &g) {
    auto c = [&](const char *n) { return *constInt(lib::arg(g, lib::Fn::WgmmaSS, n)); };
    return {lib::arg(g, lib::Fn::WgmmaSS, "c"), (c("M") / c("wgM") / 64) * (c("N") / c("wgN") / 2)};
}

/// The shared buffers threads may write through the generic proxy: stored to, or handed by address to a library
/// call other than a TMA load or a wgmma (cp.async tile transfers, vector copies, ...).
struct GenericWrites : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> found;
    void visit(const Store &op) override {
        if (op.buffer && op.buffer->scope == Scope::Shared) found.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Call &op) override {
        bool async = false;
        for (lib::Fn f : {lib::Fn::TmaLoadTile, lib::Fn::TmaLoadTileMulticast, lib::Fn::TmaLoadTileRows, lib::Fn::WgmmaSS, lib::Fn::WgmmaRS,
                          lib::Fn::WgmmaSpSS})
            async |= lib::is(op, f);
        if (!async && !lib::is(op, lib::Fn::AddressOf))
            for (auto &a : op.args)
                if (const Load *l = addressedLoad(a); l && l->buffer && l->buffer->scope == Scope::Shared)
                    found.insert(l->buffer.get());
        IRVisitor::visit(op);
    }
};

/// Whether a wgmma of stmts[from, to) reads a shared operand in `generic`.
bool readsGenericWrites(const std::vector<Stmt> &stmts, size_t from, size_t to, const std::set<const BufferNode *> &generic) {
    for (size_t i = from; i < to; ++i)
        if (isWgmma(stmts[i]))
            for (const Load *l : wgmmaSharedOperands(*callOf(stmts[i])))
            if (generic.count(l->buffer.get())) return true;
    return false;
}

Stmt proxyFence(const SourceRange &loc) { return lib::stmt(lib::Fn::FenceProxyAsync, {}, loc); }

class Placer : public IRMutator {
  public:
    using IRMutator::visit;
    /// Shared buffers written through the generic proxy: a wgmma reading one is preceded by a proxy fence
    /// (wgmma reads shared memory through the async proxy; the barrier before it orders the writes).
    std::set<const BufferNode *> generic;

    Stmt visit(const std::shared_ptr<const Seq> &op) override {
        std::vector<Stmt> out;
        bool changed = false;
        size_t runStart = 0;
        for (size_t i = 0; i < op->stmts.size(); ++i) {
            const Stmt &s = op->stmts[i];
            if (auto f = as<For>(s)) {
                if (Stmt overlapped = overlap(*f)) {
                    // The accumulators: cleared by the wgmma library (so ptxas keeps the wgmma pipeline whole)
                    // and pinned at the final wait (so no read of them moves above it).
                    auto [acc, count] = accumulatorOf(*callOf(as<Seq>(f->body)->stmts[1]));
                    const Load *regs = addressedLoad(acc);
                    for (auto &prev : out)
                        if (regs && clearsAllRegisters(prev, regs->buffer.get(), count))
                            prev = lib::stmt(lib::Fn::WgmmaClear, {i32(count), acc}, prev->loc);
                    out.push_back(overlapped);
                    out.push_back(lib::stmt(lib::Fn::WgmmaWaitAcc, {i32(0), i32(count), acc}, f->loc));
                    if (lastRelease_) out.push_back(lastRelease_);
                    changed = true;
                    continue;
                }
            }
            const bool run = inRun(op->stmts, i);
            Stmt m = run ? s : mutate(s); // a run's waits follow it (below), not each call
            changed |= m != s;
            if (run && (i == 0 || !inRun(op->stmts, i - 1))) {
                runStart = i;
                size_t end = i;
                while (end < op->stmts.size() && inRun(op->stmts, end)) ++end;
                if (readsGenericWrites(op->stmts, i, end, generic)) out.push_back(proxyFence(s->loc)), changed = true;
            }
            out.push_back(m);
            bool endsRun = run && (i + 1 == op->stmts.size() || !inRun(op->stmts, i + 1));
            if (endsRun) {
                for (auto &w : waitsAfter(op->stmts, runStart, i + 1, s->loc)) out.push_back(w), changed = true;
            }
        }
        if (!changed) return op;
        return Seq::make(std::move(out), op->loc);
    }

    // A lone wgmma as the whole body of a loop or branch.
    Stmt visit(const std::shared_ptr<const Evaluate> &op) override {
        if (!isWgmma(op)) return op;
        std::vector<Stmt> out;
        if (readsGenericWrites({op}, 0, 1, generic)) out.push_back(proxyFence(op->loc));
        out.push_back(op);
        for (auto &w : waitsAfter({op}, 0, 1, op->loc)) out.push_back(w);
        return Seq::make(std::move(out), op->loc);
    }

  private:
    Stmt lastRelease_; ///< set by overlap(): the release of the loop's last stage

    /// The consumer loop of specializeWarps with nothing but wgmmas between its barriers, rewritten to keep
    /// one k-block in flight; null when `f` is not one.
    Stmt overlap(const For &f) {
        lastRelease_ = nullptr;
        auto q = as<Seq>(f.body);
        if (!q || q->stmts.size() < 3) return nullptr;
        const auto &b = q->stmts;
        Expr lane;
        const Call *release = releaseOf(b.back(), &lane);
        if (!isCall(b.front(), lib::Fn::MbarrierWait) || !release) return nullptr;
        for (size_t i = 1; i + 1 < b.size(); ++i)
            if (!isCall(b[i], lib::Fn::WgmmaSS)) return nullptr;
        // A ring of one stage: the producer refills it only once it is released, so this iteration's wgmmas
        // finish and release it here (deferring the release past the next full-barrier wait would deadlock).
        const Load *ring = addressedLoad(lib::arg(*callOf(b[1]), lib::Fn::WgmmaSS, "a"));
        if (ring && !ring->buffer->shape.empty() && constInt(ring->buffer->shape[0]) == std::optional<int64_t>(1)) {
            std::vector<Stmt> body(b.begin(), b.end() - 1);
            body.push_back(wait(0, f.loc));
            body.push_back(b.back());
            return For::make(f.var, f.min, f.extent, f.forKind, f.numStages, Seq::make(std::move(body), f.loc), f.loc);
        }
        // Release the previous iteration's stage once its wgmmas are done: ko - 1 in the arrive's barrier.
        Expr prevIter = simplify(binary(BinaryOp::Sub, f.var, i32(1)));
        const Call &arrive = *release;
        Expr bar = substitute(releasedBarrier(arrive), VarMap{{f.var.get(), prevIter}});
        std::vector<Stmt> body(b.begin(), b.end() - 1);
        body.push_back(wait(1, f.loc));
        Expr notFirst = simplify(binary(BinaryOp::GT, f.var, f.min));
        if (lane) notFirst = binary(BinaryOp::And, notFirst, lane);
        body.push_back(IfThenElse::make(notFirst, releaseAt(arrive, bar, b.back()->loc), nullptr, f.loc));
        // The last iteration's stage, after the final wait: the producer can refill it while the consumers
        // run their epilogue (and must, when the block walks on to another output tile).
        Expr last = simplify(binary(BinaryOp::Sub, binary(BinaryOp::Add, f.min, f.extent), i32(1)));
        Expr lastBar = substitute(releasedBarrier(arrive), VarMap{{f.var.get(), last}});
        Expr any = simplify(binary(BinaryOp::GT, f.extent, i32(0)));
        if (lane) any = binary(BinaryOp::And, any, lane);
        lastRelease_ = IfThenElse::make(simplify(any), releaseAt(arrive, lastBar, b.back()->loc), nullptr, f.loc);
        return For::make(f.var, f.min, f.extent, f.forKind, f.numStages, Seq::make(std::move(body), f.loc), f.loc);
    }
};

} // namespace

bool clearsAllRegisters(const Stmt &s, const BufferNode *regs, int64_t count) {
    int64_t trips = 1;
    Stmt at = s;
    auto unwrap = [](Stmt x) {
        while (auto q = as<Seq>(x)) {
            if (q->stmts.size() != 1) break;
            x = q->stmts[0];
        }
        return x;
    };
    at = unwrap(at);
    for (auto f = as<For>(at); f; f = as<For>(at = unwrap(f->body))) {
        auto e = constInt(f->extent);
        if ((f->forKind != ForKind::Unrolled && f->forKind != ForKind::Vectorized) || !e) return false;
        trips *= *e;
    }
    auto st = as<Store>(at);
    if (!st || st->buffer.get() != regs || trips != count) return false;
    if (auto fi = as<FloatImm>(st->value)) return fi->value == 0.0;
    if (auto ii = as<IntImm>(st->value)) return ii->value == 0;
    return false;
}

Program placeWgmmaWaits(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Placer pl;
        GenericWrites gw;
        gw.visit(k->body);
        pl.generic = std::move(gw.found);
        out.kernels.push_back(pl.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
