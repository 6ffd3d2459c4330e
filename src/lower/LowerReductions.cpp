/// \file
/// T.reduce_* to thread-level code (include/tilec/passes/LowerReductions.h). The plan for a distributed
/// source comes from evaluating the layout numerically (include/tilec/passes/ReductionPlan.h).
#include "tilec/passes/LowerReductions.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/ReductionPlan.h"
#include "tilec/SharedAliases.h"
#include "ReduceMmaColumns.h"

#include <cmath>
#include <functional>
#include <map>
#include <limits>
#include <optional>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// How one reduction of one dtype combines values.
struct Combiner {
    ReduceKind kind;
    DType acc;

    Expr identity() const { return reduceIdentity(kind, acc); }
    /// A source element as it enters the fold.
    Expr pre(const Expr &x) const {
        Expr v = cast(acc, x);
        if (kind == ReduceKind::AbsSum || kind == ReduceKind::AbsMax)
            return acc.isFloat() || acc.isSigned() ? Call::make(acc, "abs", {v}) : v;
        return v;
    }
    Expr combine(const Expr &a, const Expr &b) const {
        switch (kind) {
        case ReduceKind::Max:
        case ReduceKind::AbsMax: return binary(BinaryOp::Max, a, b);
        case ReduceKind::Min: return binary(BinaryOp::Min, a, b);
        default: return binary(BinaryOp::Add, a, b);
        }
    }
};

DType accumulatorType(DType t) {
    if (t.isFloat()) return t.bits() >= 32 ? t : DType(DType::Float32);
    if (t.isBool()) return DType::Int32;
    if (t.bits() < 32) return t.isSigned() ? DType::Int32 : DType::UInt32;
    return t;
}

/// Whether `l` is an mma accumulator seen through a view that splits its columns (Layout::columns): reduced
/// along any dimension from the plan of its slots (distributedSource), not by mmaSource / reduceMmaColumns.
bool mmaView(const Layout &l) { return l.kind == Layout::Mma && l.shape.size() > 2; }

/// Whether a reduction of `l` along `dim` is planned from its slots (distributedSource) although `l` is mma: a
/// view (mmaView), or a column reduction in the operand order (reduceMmaColumns folds the accumulator order).
bool plannedFromSlots(const Layout &l, int dim) { return mmaView(l) || (l.kind == Layout::Mma && l.opCols && dim != 1); }

/// The coordinates (in the layout's shape) of register slot `slot` of thread `tid` of an mma layout.
std::vector<Expr> mmaSlotCoords(const Layout &l, const Expr &tid, int64_t slot) {
    auto [row, col] = mmaSlotRowCol(l, tid, slot);
    return mmaViewCoords(l, row, col);
}

using reduction::directSlots;
using reduction::Plan;
using reduction::Reducer;

class LowerReduce : public IRMutator {
  public:
    using IRMutator::visit;
    /// `scratchSizes`: the elements per dtype of the shared scratch (from a first instance run over the body
    /// with none, which only records them); ignored where the kernel's reductions do not share it.
    LowerReduce(const KernelLayouts &l, const Kernel &k, bool shareScratch, const std::map<int, int64_t> *scratchSizes)
        : layouts_(l), tid_(k.threadIdx), threads_(k.threads), share_(shareScratch), sizing_(share_ && !scratchSizes) {
        if (scratchSizes) need_ = *scratchSizes;
    }

    std::vector<Buffer> newAllocs;
    std::map<int, int64_t> need_; ///< dtype kind -> scratch elements (the largest reduction's)

    Stmt visit(const std::shared_ptr<const Reduce> &op) override;

  private:
    const KernelLayouts &layouts_;
    Var tid_;
    int threads_;
    bool share_, sizing_;
    std::map<int, Buffer> shared_;
    const Layout *dst_ = nullptr;                 ///< the destination's layout (of the reduction being lowered)
    std::function<Stmt(Expr, Expr)> finishSlot_; ///< (slot, value): the result into that register slot

    Buffer alloc(const std::string &name, Scope s, DType t, int64_t n, const SourceRange &loc) {
        Buffer b = makeBuffer(name, s, t, {i32(n)}, loc);
        newAllocs.push_back(b);
        return b;
    }
    /// The shared scratch through which warps exchange partial results (reductionsShareScratch).
    Buffer scratch(const std::string &name, DType t, int64_t n, const SourceRange &loc) {
        if (!share_) return alloc(name, Scope::Shared, t, n, loc);
        int64_t &need = need_[(int)t.kind];
        if (sizing_) {
            need = std::max(need, n);
            return makeBuffer(name, Scope::Shared, t, {i32(n)}, loc);
        }
        TILEC_ASSERT(need >= n, "lowerReductions: the shared scratch was sized for fewer elements than a reduction needs");
        Buffer &b = shared_[(int)t.kind];
        if (!b) b = alloc("reduce_scratch_" + std::string(t.name()), Scope::Shared, t, need, loc);
        return b;
    }
    Stmt store(const Buffer &b, Expr idx, Expr v, const SourceRange &loc) { return Store::make(b, {std::move(idx)}, std::move(v), loc); }
    Expr load(const Buffer &b, Expr idx) { return Load::make(b, {std::move(idx)}); }

    Stmt replicatedSource(const Reduce &op, const Layout &src, const Combiner &cb, const Buffer &srcReg,
                          const std::function<Stmt(Expr, Expr)> &finish);
    Stmt distributedSource(const Reduce &op, const Layout &src, const Combiner &cb, const Buffer &srcReg,
                           const std::function<Stmt(Expr, Expr)> &finish);
    Stmt mmaSource(const Reduce &op, const Layout &src, const Combiner &cb, const Buffer &srcReg,
                   const std::function<Stmt(Expr, Expr)> &finish);
    Stmt staged(const Reduce &op, const Reducer &red, const Combiner &cb, const Buffer &srcReg,
                const std::function<Stmt(Expr, Expr)> &finish);
    Stmt resultLoop(int64_t outputs, const ResultBody &body, const std::function<Stmt(Expr, Expr)> &finish,
                    const SourceRange &loc, bool vectorLanes = false);
};

/// body(o, put) for each result o the destination keeps in this thread (ReduceMmaColumns.h): a replicated
/// destination keeps every one (a loop over them, put = finish); a distributed one only its own slots, round r
/// and lane v of virtual thread u holding result r*T'*V + u*V + v (Layout.h), so each thread computes or reads
/// rounds()*V results rather than all `outputs` of them each behind a test of its owner (the unrolled scan
/// over every result that gave a 1024-result reduction a thousand predicated shared loads per thread).
/// `vectorLanes`: body reads the results from memory, one vector per full round (vectorizeAccesses).
Stmt LowerReduce::resultLoop(int64_t outputs, const ResultBody &body, const std::function<Stmt(Expr, Expr)> &finish,
                             const SourceRange &loc, bool vectorLanes) {
    const Layout &d = *dst_;
    if (d.kind != Layout::Distributed || d.elements() != outputs) {
        Var o = makeVar("o", DType::Int32, loc);
        return For::make(o, i32(0), i32(outputs), ForKind::Unrolled, 0,
                         body(o, [&](Expr value) { return finish(o, std::move(value)); }), loc);
    }
    const int64_t V = d.vec, TV = (int64_t)d.vthreads() * V;
    const Expr vtid = virtualThread(d, tid_);
    std::vector<Stmt> out;
    for (int64_t r = 0; r < d.rounds(); ++r) {
        Var v = makeVar("v", DType::Int32, loc);
        Expr o = simplify(binary(BinaryOp::Add, binary(BinaryOp::Add, i32(r * TV), binary(BinaryOp::Mul, vtid, i32(V))), v));
        Expr slot = simplify(binary(BinaryOp::Add, i32(r * V), v));
        Stmt s = body(o, [&](Expr value) { return finishSlot_(slot, std::move(value)); });
        const bool partial = r >= d.fullRounds();
        if (partial) s = IfThenElse::make(binary(BinaryOp::LT, o, i32(outputs)), s, nullptr, loc);
        ForKind kind = vectorLanes && !partial && V > 1 ? ForKind::Vectorized : ForKind::Unrolled;
        out.push_back(For::make(v, i32(0), i32(V), kind, 0, s, loc));
    }
    return out.size() == 1 ? out[0] : Seq::make(std::move(out), loc);
}

Stmt LowerReduce::visit(const std::shared_ptr<const Reduce> &op) {
    auto srcL = layouts_.fragments.find(op->src.get());
    auto dstL = layouts_.fragments.find(op->dst.get());
    TILEC_ASSERT(srcL != layouts_.fragments.end() && dstL != layouts_.fragments.end(), "reduction of a non-fragment");
    const bool rows = srcL->second.kind == Layout::Mma && op->dim == 1 && !mmaView(srcL->second);
    const Layout &dstLayout = dstL->second;
    TILEC_ASSERT(rows ? dstLayout.kind == Layout::MmaRows
                      : dstLayout.kind == Layout::Replicated || dstLayout.kind == Layout::Distributed,
                 "reduction into a fragment of a tensor-core layout");
    TILEC_ASSERT(op->dim >= 0 && op->dim < (int)srcL->second.shape.size(), "reduction dimension out of range");
    Combiner cb{op->reduceKind, accumulatorType(op->dst->dtype)};
    auto srcR = layouts_.registers.find(op->src.get()), dstR = layouts_.registers.find(op->dst.get());
    TILEC_ASSERT(srcR != layouts_.registers.end() && dstR != layouts_.registers.end(), "reduction without register arrays");
    Buffer srcReg = srcR->second, dstReg = dstR->second;
    DType dstT = op->dst->dtype;
    bool clear = op->clear;
    SourceRange loc = op->loc;
    // The result in register slot `slot` of the destination (combined with its old value).
    finishSlot_ = [=, this](Expr slot, Expr value) {
        Expr v = clear ? value : cb.combine(cast(cb.acc, Load::make(dstReg, {slot})), value);
        return store(dstReg, slot, cast(dstT, v), loc);
    };
    dst_ = &dstLayout;
    // The result for output position `o` enters the destination: every thread's copy of a replicated one, or
    // the slot of the one thread that owns it in a distributed one.
    auto finish = [=, this](Expr o, Expr value) -> Stmt {
        if (dstLayout.kind != Layout::Distributed) return finishSlot_(o, value);
        const int64_t V = dstLayout.vec, TV = (int64_t)dstLayout.vthreads() * V;
        Expr slot = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, binary(BinaryOp::FloorDiv, o, i32(TV)), i32(V)),
                                    binary(BinaryOp::FloorMod, o, i32(V))));
        Expr owner = simplify(binary(BinaryOp::FloorMod, binary(BinaryOp::FloorDiv, o, i32(V)), i32(dstLayout.vthreads())));
        return IfThenElse::make(binary(BinaryOp::EQ, owner, virtualThread(dstLayout, tid_)), finishSlot_(slot, value), nullptr, loc);
    };
    if (rows) return mmaSource(*op, srcL->second, cb, srcReg, finish);
    if (srcL->second.kind == Layout::Mma && !plannedFromSlots(srcL->second, op->dim)) { // columns (dim 0): ReduceMmaColumns.cpp
        ColumnFold f{cb.acc, [cb] { return cb.identity(); }, [cb](const Expr &x) { return cb.pre(x); },
                     [cb](const Expr &a, const Expr &b) { return cb.combine(a, b); },
                     [&](const std::string &n, int64_t e) { return alloc(n, Scope::Local, cb.acc, e, loc); },
                     [&](const std::string &n, int64_t e) { return scratch(n, cb.acc, e, loc); }};
        return reduceMmaColumns(*op, srcL->second, srcReg, tid_, f,
                                [&](int64_t n, const ResultBody &body) { return resultLoop(n, body, finish, loc); });
    }
    if (srcL->second.kind == Layout::Replicated) return replicatedSource(*op, srcL->second, cb, srcReg, finish);
    return distributedSource(*op, srcL->second, cb, srcReg, finish);
}

Stmt LowerReduce::replicatedSource(const Reduce &op, const Layout &src, const Combiner &cb, const Buffer &srcReg,
                                   const std::function<Stmt(Expr, Expr)> &finish) {
    int64_t extent = src.shape[op.dim], inner = 1;
    for (size_t d = op.dim + 1; d < src.shape.size(); ++d) inner *= src.shape[d];
    int64_t outputs = src.elements() / extent;
    Buffer acc = alloc(op.dst->name + "_partial", Scope::Local, cb.acc, 1, op.loc);
    return resultLoop(outputs, [&](const Expr &o, const auto &put) {
        Var j = makeVar("j", DType::Int32, op.loc);
        Expr e = binary(BinaryOp::Add,
                        binary(BinaryOp::Add, binary(BinaryOp::Mul, binary(BinaryOp::FloorDiv, o, i32(inner)), i32(extent * inner)),
                               binary(BinaryOp::Mul, j, i32(inner))),
                        binary(BinaryOp::FloorMod, o, i32(inner)));
        Stmt fold = For::make(j, i32(0), i32(extent), ForKind::Unrolled, 0,
                              store(acc, i32(0), cb.combine(load(acc, i32(0)), cb.pre(load(srcReg, simplify(e)))), op.loc), op.loc);
        return Seq::make({store(acc, i32(0), cb.identity(), op.loc), fold, put(load(acc, i32(0)))}, op.loc);
    }, finish, op.loc);
}

/// Rows of an mma accumulator into their mmaRows fragment: each thread folds the columns it holds of each of
/// its rows, the four lanes sharing a row combine by shuffles, and warps splitting the columns through
/// shared memory. Slot mi*2 + h of the result is the row of the accumulator's slots (mi, *, h, *).
Stmt LowerReduce::mmaSource(const Reduce &op, const Layout &src, const Combiner &cb, const Buffer &srcReg,
                            const std::function<Stmt(Expr, Expr)> &finish) {
    const SourceRange &loc = op.loc;
    const int64_t mT = src.tilesM(), R = mT * 2, M = src.shape[0];
    // A row's slots: (ni, c) of tile row mi, half h in the accumulator order; groups q in the operand order.
    const int64_t nT = src.opCols ? src.colGroups() : src.tilesN();
    Buffer acc = alloc(op.dst->name + "_partial", Scope::Local, cb.acc, R, loc);
    std::vector<Stmt> out;
    for (int64_t mi = 0; mi < mT; ++mi)
        for (int64_t h = 0; h < 2; ++h) {
            const int64_t r = mi * 2 + h;
            out.push_back(store(acc, i32(r), cb.identity(), loc));
            Var ni = makeVar("ni", DType::Int32, loc), c = makeVar("c", DType::Int32, loc);
            Expr slot = src.opCols ? binary(BinaryOp::Add, binary(BinaryOp::Mul, binary(BinaryOp::Add, i32(mi * nT), ni), i32(2)), i32(h))
                                   : binary(BinaryOp::Add, binary(BinaryOp::Mul, ni, i32(4)), binary(BinaryOp::Add, i32((mi * nT * 2 + h) * 2), c));
            Stmt fold = store(acc, i32(r), cb.combine(load(acc, i32(r)), cb.pre(load(srcReg, simplify(slot)))), loc);
            if (!src.opCols) fold = For::make(c, i32(0), i32(2), ForKind::Unrolled, 0, fold, loc);
            out.push_back(For::make(ni, i32(0), i32(nT), ForKind::Unrolled, 0, fold, loc));
        }
    for (int b : {1, 2})
        for (int64_t r = 0; r < R; ++r) {
            Expr other = lib::call(lib::Fn::ShflXor, {load(acc, i32(r)), i32(b)}, {}, cb.acc);
            out.push_back(store(acc, i32(r), cb.combine(load(acc, i32(r)), other), loc));
        }
    if (src.warpsN > 1) {
        Buffer scratch = this->scratch(op.dst->name + "_scratch", cb.acc, src.warpsN * M, loc);
        Expr wn = binary(BinaryOp::FloorDiv, binary(BinaryOp::FloorDiv, tid_, i32(32)), i32(src.warpsM));
        std::vector<Stmt> publish;
        auto row = [&](int64_t r) { return mmaRow(src, tid_, i32(r / 2), i32(r % 2)); };
        for (int64_t r = 0; r < R; ++r)
            publish.push_back(store(scratch, simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, wn, i32(M)), row(r))),
                                    load(acc, i32(r)), loc));
        out.push_back(IfThenElse::make(binary(BinaryOp::EQ, binary(BinaryOp::FloorMod, tid_, i32(4)), i32(0)),
                                       Seq::make(std::move(publish), loc), nullptr, loc));
        out.push_back(syncThreads(loc));
        for (int64_t r = 0; r < R; ++r) {
            out.push_back(store(acc, i32(r), cb.identity(), loc));
            for (int w = 0; w < src.warpsN; ++w)
                out.push_back(store(acc, i32(r), cb.combine(load(acc, i32(r)), load(scratch, simplify(binary(BinaryOp::Add, i32(w * M), row(r))))), loc));
        }
    }
    for (int64_t r = 0; r < R; ++r) out.push_back(finish(i32(r), load(acc, i32(r))));
    return Seq::make(std::move(out), loc);
}

Stmt LowerReduce::distributedSource(const Reduce &op, const Layout &src, const Combiner &cb, const Buffer &srcReg,
                                    const std::function<Stmt(Expr, Expr)> &finish) {
    Reducer red(src, op.dim);
    Plan p = red.plan();
    if (p.mode == Plan::Staged) return staged(op, red, cb, srcReg, finish);
    const int64_t V = src.vec, TV = (int64_t)src.vthreads() * V, full = src.fullRounds(), N = src.elements();
    const SourceRange &loc = op.loc;
    const Expr vtid = virtualThread(src, tid_);
    Buffer acc = alloc(op.dst->name + "_partial", Scope::Local, cb.acc, p.classes, loc);
    std::vector<Stmt> out;
    for (int c = 0; c < p.classes; ++c) out.push_back(store(acc, i32(c), cb.identity(), loc));

    // 1. Each thread folds its slots into the partial of their class; slots of the partial last round only
    //    while they are inside the fragment.
    //    A round whose lanes all feed one partial is a loop over the lanes.
    auto fold = [&](int c, int64_t r, const Expr &lane) {
        Expr x = cb.pre(load(srcReg, simplify(binary(BinaryOp::Add, i32(r * V), lane))));
        if (r >= full) {
            Expr inside = binary(BinaryOp::LT, binary(BinaryOp::Add, binary(BinaryOp::Mul, vtid, i32(V)), lane), i32(N - r * TV));
            x = select(inside, x, cb.identity());
        }
        return store(acc, i32(c), cb.combine(load(acc, i32(c)), x), loc);
    };
    // Every full round feeding one partial (rows), or lane v of every round feeding partial c0 + v
    // (columns), is two loops.
    const int64_t slots = (int64_t)p.slotClass.size();
    if (src.kind == Layout::Mma) // every slot holds an element (the layout tiles its fragment)
        for (int64_t s = 0; s < slots; ++s) {
            Expr c = i32(p.slotClass[s]);
            out.push_back(store(acc, c, cb.combine(load(acc, c), cb.pre(load(srcReg, i32(s)))), loc));
        }
    bool single = full > 0 && src.kind != Layout::Mma, byLane = V > 1 && single;
    for (int64_t s = 0; s < full * V; ++s) single &= p.slotClass[s] == p.slotClass[0];
    for (int64_t s = 0; s < full * V && byLane; ++s) byLane = p.slotClass[s] == p.slotClass[0] + s % V;
    if (single && full > 1) byLane = false;
    else single = false;
    if (single || byLane) {
        Var round = makeVar("r", DType::Int32, loc), lane = makeVar("v", DType::Int32, loc);
        Expr c = single ? i32(p.slotClass[0]) : simplify(binary(BinaryOp::Add, i32(p.slotClass[0]), lane));
        Expr x = cb.pre(load(srcReg, simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, round, i32(V)), lane))));
        Stmt body = store(acc, c, cb.combine(load(acc, c), x), loc);
        body = For::make(lane, i32(0), i32(V), ForKind::Unrolled, 0, body, loc);
        out.push_back(For::make(round, i32(0), i32(full), ForKind::Unrolled, 0, body, loc));
    }
    for (int64_t r = single || byLane ? full : 0; src.kind != Layout::Mma && r * V < slots; ++r) {
        int c0 = p.slotClass[r * V];
        bool uniform = V > 1;
        for (int64_t v = 1; v < V; ++v) uniform &= p.slotClass[r * V + v] == c0;
        if (uniform && c0 >= 0) {
            Var lane = makeVar("v", DType::Int32, loc);
            out.push_back(For::make(lane, i32(0), i32(V), ForKind::Unrolled, 0, fold(c0, r, lane), loc));
            continue;
        }
        for (int64_t v = 0; v < V; ++v)
            if (p.slotClass[r * V + v] >= 0) out.push_back(fold(p.slotClass[r * V + v], r, i32(v)));
    }
    // 2. Lanes of a warp that share results, by shuffles.
    for (int b = 4; b >= 0; --b) {
        if (!(p.laneBits & (int64_t(1) << b))) continue;
        for (int c = 0; c < p.classes; ++c) {
            Expr other = lib::call(lib::Fn::ShflXor, {load(acc, i32(c)), i32(1 << b)}, {}, cb.acc);
            out.push_back(store(acc, i32(c), cb.combine(load(acc, i32(c)), other), loc));
        }
    }
    // 3. Warps, through shared memory: every thread reads its partners in the same order.
    if (p.warpBits || p.allWarps) {
        Buffer scratch = this->scratch(op.dst->name + "_scratch", cb.acc, (int64_t)p.classes * threads_, loc);
        for (int c = 0; c < p.classes; ++c)
            out.push_back(store(scratch, simplify(binary(BinaryOp::Add, i32((int64_t)c * threads_), tid_)), load(acc, i32(c)), loc));
        out.push_back(syncThreads(loc));
        std::vector<int64_t> partners; // constant parts, combined with the thread's own bits
        Expr own;
        if (p.allWarps) {
            for (int w = 0; w < threads_ / 32; ++w) partners.push_back(32 * w);
            own = binary(BinaryOp::FloorMod, tid_, i32(32));
        } else {
            std::vector<int> bitPos;
            for (int b = 5; (1 << b) < threads_; ++b)
                if (p.warpBits & (int64_t(1) << b)) bitPos.push_back(b);
            for (int64_t k = 0; k < (int64_t(1) << bitPos.size()); ++k) {
                int64_t dep = 0;
                for (size_t i = 0; i < bitPos.size(); ++i)
                    if (k & (int64_t(1) << i)) dep |= int64_t(1) << bitPos[i];
                partners.push_back(dep);
            }
            own = binary(BinaryOp::BitAnd, tid_, i32(~p.warpBits & (threads_ - 1)));
        }
        for (int c = 0; c < p.classes; ++c) {
            out.push_back(store(acc, i32(c), cb.identity(), loc));
            for (int64_t k : partners) {
                Expr idx = simplify(binary(BinaryOp::Add, i32((int64_t)c * threads_ + k), own));
                out.push_back(store(acc, i32(c), cb.combine(load(acc, i32(c)), load(scratch, idx)), loc));
            }
        }
    }
    // 4. The results into the destination: straight from the partials where a distributed destination keeps
    //    each thread's results in its own slots, one per class.
    if (auto slots = directSlots(p, *dst_)) {
        for (int c = 0; c < p.classes; ++c) out.push_back(finishSlot_(i32((*slots)[c]), load(acc, i32(c))));
        return Seq::make(std::move(out), loc);
    }
    if (p.mode == Plan::Invariant) {
        for (int c = 0; c < p.classes; ++c) {
            int64_t o = -1;
            for (auto x : p.outOf[c])
                if (x >= 0) o = x;
            out.push_back(finish(i32(o), load(acc, i32(c))));
        }
        return Seq::make(std::move(out), loc);
    }
    Buffer bcast = alloc(op.dst->name + "_bcast", Scope::Shared, cb.acc, red.outputs(), loc);
    int64_t bits = p.laneBits | p.warpBits | src.copyBits(); // one thread of each result's holders publishes it
    for (int c = 0; c < p.classes; ++c) {
        int s = p.repSlot[c];
        int64_t r = s / V, v = s % V;
        auto coords = src.kind == Layout::Mma ? mmaSlotCoords(src, tid_, s) : elementCoords(src, i32(r), vtid, i32(v));
        coords.erase(coords.begin() + op.dim);
        std::vector<int64_t> outShape = src.shape;
        outShape.erase(outShape.begin() + op.dim);
        Expr o = flattenCoords(coords, outShape);
        Expr cond = binary(BinaryOp::EQ, binary(BinaryOp::BitAnd, tid_, i32(bits)), i32(0));
        if (r >= full && src.kind != Layout::Mma)
            cond = binary(BinaryOp::And, cond, binary(BinaryOp::LT, binary(BinaryOp::Mul, vtid, i32(V)), i32(N - r * TV)));
        out.push_back(IfThenElse::make(cond, store(bcast, o, load(acc, i32(c)), loc), nullptr, loc));
    }
    out.push_back(syncThreads(loc));
    out.push_back(resultLoop(red.outputs(), [&](const Expr &o, const auto &put) { return put(load(bcast, o)); }, finish, loc, true));
    return Seq::make(std::move(out), loc);
}

Stmt LowerReduce::staged(const Reduce &op, const Reducer &red, const Combiner &cb, const Buffer &srcReg,
                         const std::function<Stmt(Expr, Expr)> &finish) {
    const Layout &src = red.layout();
    const int64_t V = src.vec, TV = (int64_t)src.vthreads() * V, N = src.elements(), full = src.fullRounds();
    const SourceRange &loc = op.loc;
    const Expr vtid = virtualThread(src, tid_), holder = firstHolder(src, tid_);
    Buffer stage = alloc(op.dst->name + "_stage", Scope::Shared, cb.acc, N, loc);
    Buffer bcast = alloc(op.dst->name + "_bcast", Scope::Shared, cb.acc, red.outputs(), loc);
    Buffer acc = alloc(op.dst->name + "_partial", Scope::Local, cb.acc, 1, loc);
    std::vector<Stmt> out;
    // Every element into shared memory at its row-major position.
    // An mma layout held in several warp copies: the first copy stores (the others hold the same values).
    const Expr mmaHolder = src.kind == Layout::Mma && src.warpCopies() > 1
                               ? binary(BinaryOp::LT, tid_, i32(32 * src.warpsM * src.warpsN)) : nullptr;
    for (int64_t s = 0; src.kind == Layout::Mma && s < src.slotsPerThread(); ++s) {
        Stmt st = store(stage, flattenCoords(mmaSlotCoords(src, tid_, s), src.shape), cb.pre(load(srcReg, i32(s))), loc);
        out.push_back(mmaHolder ? IfThenElse::make(mmaHolder, st, nullptr, loc) : st);
    }
    for (int64_t r = 0; src.kind != Layout::Mma && r < src.rounds(); ++r) {
        Var v = makeVar("v", DType::Int32, loc);
        Expr e = simplify(binary(BinaryOp::Add, binary(BinaryOp::Add, i32(r * TV), binary(BinaryOp::Mul, vtid, i32(V))), v));
        Stmt s = store(stage, e, cb.pre(load(srcReg, simplify(binary(BinaryOp::Add, i32(r * V), v)))), loc);
        if (r >= full) s = IfThenElse::make(binary(BinaryOp::LT, e, i32(N)), s, nullptr, loc);
        if (holder) s = IfThenElse::make(holder, s, nullptr, loc);
        out.push_back(For::make(v, i32(0), i32(V), ForKind::Unrolled, 0, s, loc));
    }
    out.push_back(syncThreads(loc));
    // Thread t reduces results t, t + T, ... serially.
    int64_t extent = src.shape[op.dim], inner = 1;
    for (size_t d = op.dim + 1; d < src.shape.size(); ++d) inner *= src.shape[d];
    Var k = makeVar("k", DType::Int32, loc), j = makeVar("j", DType::Int32, loc);
    Expr o = binary(BinaryOp::Add, binary(BinaryOp::Mul, k, i32(threads_)), tid_);
    Expr e = binary(BinaryOp::Add,
                    binary(BinaryOp::Add, binary(BinaryOp::Mul, binary(BinaryOp::FloorDiv, o, i32(inner)), i32(extent * inner)),
                           binary(BinaryOp::Mul, j, i32(inner))),
                    binary(BinaryOp::FloorMod, o, i32(inner)));
    Stmt fold = For::make(j, i32(0), i32(extent), ForKind::Serial, 0,
                          store(acc, i32(0), cb.combine(load(acc, i32(0)), load(stage, simplify(e))), loc), loc);
    Stmt one = Seq::make({store(acc, i32(0), cb.identity(), loc), fold, store(bcast, o, load(acc, i32(0)), loc)}, loc);
    int64_t perThread = (red.outputs() + threads_ - 1) / threads_;
    out.push_back(For::make(k, i32(0), i32(perThread), ForKind::Serial, 0,
                            IfThenElse::make(binary(BinaryOp::LT, o, i32(red.outputs())), one, nullptr, loc), loc));
    out.push_back(syncThreads(loc));
    out.push_back(resultLoop(red.outputs(), [&](const Expr &o, const auto &put) { return put(load(bcast, o)); }, finish, loc, true));
    return Seq::make(std::move(out), loc);
}

} // namespace

bool reductionUsesShared(const Reduce &r, const KernelLayouts &layouts) {
    auto src = layouts.fragments.find(r.src.get());
    if (src == layouts.fragments.end()) return true;
    const Layout &l = src->second;
    if (l.kind == Layout::Distributed || plannedFromSlots(l, r.dim)) { // see distributedSource: scratch across warps, staging, broadcasts
        Plan p = Reducer(l, r.dim).plan();
        if (p.mode == Plan::Staged || p.warpBits || p.allWarps) return true;
        auto dst = layouts.fragments.find(r.dst.get());
        return p.mode != Plan::Invariant && !(dst != layouts.fragments.end() && directSlots(p, dst->second));
    }
    return !(l.kind == Layout::Replicated || (l.kind == Layout::Mma && r.dim == 1 && l.warpsN == 1)); // see mmaSource
}

bool reductionsShareScratch(const Kernel &k, const KernelLayouts &layouts, const Target &t) {
    struct Roles : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const WarpRoles &) override { found = true; }
    } roles;
    roles.visit(k.body);
    if (k.producerThreads || roles.found) return false;
    int64_t total = 0;
    for (auto &b : k.allocs)
        if (ir::storageOf(k, b.get()) == b.get()) total += smem::sharedBytes(b.get()); // (an alias: its base's bytes)
    KernelP kt = withThreadIndex(std::make_shared<Kernel>(k));
    LowerReduce each(layouts, *kt, false, nullptr); // one scratch per reduction: what they would take
    each.mutate(kt->body);
    for (auto &b : each.newAllocs) total += smem::sharedBytes(b.get());
    return total > t.maxSharedPerBlock;
}

Program lowerReductions(const Program &p, const Target &t) {
    Program out;
    for (const KernelP &in : p.kernels) {
        KernelP k = withThreadIndex(in);
        const KernelLayouts &layouts = layoutsOf(*k);
        bool share = reductionsShareScratch(*k, layouts, t);
        LowerReduce sizing(layouts, *k, share, nullptr);
        if (share) sizing.mutate(k->body);
        LowerReduce m(layouts, *k, share, &sizing.need_);
        Stmt body = m.mutate(k->body);
        if (m.newAllocs.empty() && body == k->body) {
            out.kernels.push_back(k);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body ? body : Seq::make({});
        for (auto &b : m.newAllocs) nk->allocs.push_back(b);
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
