/// \file
/// Bounds checks for global tensor accesses (include/tilec/passes/PredicateBounds.h).
#include "tilec/passes/PredicateBounds.h"

#include "EachKernel.h"
#include "RangeScopedMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <algorithm>

namespace tilec::passes {

using namespace ir;

namespace {

Expr zeroOf(DType t) {
    if (t.isFloat()) return floatImm(0.0, t);
    return IntImm::make(t, 0);
}

class Predicate : public RangeScopedMutator {
  public:
    using RangeScopedMutator::visit;
    explicit Predicate(const Kernel &k) : RangeScopedMutator(k), kernel_(k) {}

    Stmt visit(const std::shared_ptr<const For> &op) override {
        const VarNode *savedLane = lane_;
        int64_t savedWidth = laneWidth_;
        if (op->forKind == ForKind::Vectorized) {
            lane_ = op->var.get();
            laneWidth_ = constInt(op->extent).value_or(1);
        }
        const size_t savedFacts = below_.size();
        Expr end = simplify(binary(BinaryOp::Add, op->min, op->extent));
        if (!readsMemory(end)) below_.push_back({op->var, end});
        Stmt s = RangeScopedMutator::visit(op);
        below_.resize(savedFacts);
        lane_ = savedLane;
        laneWidth_ = savedWidth;
        return s;
    }

    /// An address handed to the device library is not an access: the library checks its own bounds. What its
    /// indices read is (a paged tile's position from a block table, hoisted into the transfer that loads it
    /// ahead: splitPipelinedBody), and is guarded like any load.
    Expr visit(const std::shared_ptr<const Call> &op) override {
        if (!lib::is(*op, lib::Fn::AddressOf)) return RangeScopedMutator::visit(op);
        auto l = op->args.size() == 1 ? as<Load>(op->args[0]) : nullptr;
        if (!l) return op;
        std::vector<Expr> idx;
        bool changed = false;
        for (auto &i : l->indices) {
            idx.push_back(mutate(i));
            changed |= idx.back() != i;
        }
        if (!changed) return op;
        return Call::make(op->dtype, op->name, {Load::make(l->buffer, std::move(idx), l->loc)}, op->loc);
    }

    Expr visit(const std::shared_ptr<const Load> &op) override {
        Expr e = RangeScopedMutator::visit(op);
        auto l = as<Load>(e);
        Expr cond = inside(l->buffer, l->indices);
        return cond ? select(cond, e, zeroOf(e->dtype), op->loc) : e;
    }

    Stmt visit(const std::shared_ptr<const Store> &op) override {
        Stmt s = RangeScopedMutator::visit(op);
        auto st = as<Store>(s);
        Expr cond = inside(st->buffer, st->indices);
        return cond ? IfThenElse::make(cond, s, nullptr, op->loc) : s;
    }

    Stmt visit(const std::shared_ptr<const AtomicAdd> &op) override {
        Stmt s = RangeScopedMutator::visit(op);
        auto a = as<AtomicAdd>(s);
        std::vector<Expr> idx;
        for (auto &r : a->dst.ranges) idx.push_back(r.min);
        Expr cond = inside(a->dst.buffer, idx);
        return cond ? IfThenElse::make(cond, s, nullptr, op->loc) : s;
    }

  private:
    const Kernel &kernel_;
    const VarNode *lane_ = nullptr;
    int64_t laneWidth_ = 1;
    /// What holds where the traversal is: `first < second` (a loop's variable below its end). Not a branch's test:
    /// a guard dropped under `if a < b` leaves a load that later passes may hoist out of the branch (hoistNestInvariants
    /// moves a nest's invariant loads ahead of it, vectorizeAccesses reads a per-lane branch's lanes as one vector):
    /// tests/fuzz/index_width_gather_dynamic.tile read Idx past its end, examples/histogram.tile X.
    std::vector<std::pair<Expr, Expr>> below_;

    /// `e` without the integer casts around it (a loop over int64 bounds of an int32 size).
    static Expr uncast(Expr e) {
        while (auto c = as<Cast>(e)) {
            if (!c->dtype.isInt() || !c->value->dtype.isInt() || c->dtype.bits() < c->value->dtype.bits()) break;
            e = c->value;
        }
        return e;
    }

    /// Whether `bound <= extent`: `bound` is `extent`, or a min() of which one term is.
    static bool atMost(const Expr &bound, const Expr &extent) {
        Expr b = uncast(bound);
        if (structurallyEqual(b, uncast(extent))) return true;
        auto m = as<Binary>(b);
        return m && m->op == BinaryOp::Min && (atMost(m->a, extent) || atMost(m->b, extent));
    }

    /// Whether `idx < extent` follows from what holds here: idx <= e for a known e < E, and E <= extent
    /// (TileKernels' persistent loops `for i_s in T.serial(t_start, t_end)`, t_end = min(.., num_tokens): every
    /// token row they touch exists).
    bool belowByFacts(const Expr &idx, const Expr &extent) const {
        for (auto &[e, bound] : below_) {
            if (!atMost(bound, extent)) continue;
            Expr a = uncast(idx), b = uncast(e);
            if (a->dtype != b->dtype) a = cast(DType::Int64, a), b = cast(DType::Int64, b);
            Expr gap = simplify(binary(BinaryOp::Sub, a, b));
            Interval g = boundsOf(gap, ranges());
            if (g.hi && *g.hi <= 0) return true;
        }
        return false;
    }

    /// Whether `idx < extent` follows from the grid: idx is `a * b + rest` for a block index b whose grid
    /// extent is `extent // a` (`extent` when a = 1) and rest in [.., a - 1]. Then a * b <= a * (extent // a
    /// - 1) <= extent - a, so idx <= extent - 1 for every run-time extent: a tile of a blocks per tensor, the
    /// grid launching whole tiles only (TileKernels' `T.Kernel(shape_y // block_y, ...)` over T.dynamic
    /// sizes).
    bool belowByGrid(const Expr &idx, const Expr &extent) const {
        for (int d = 0; d < 3; ++d) {
            const Var &b = kernel_.blockIdx[d];
            auto lin = b && kernel_.grid[d] ? linearIn(idx, b.get()) : std::nullopt;
            if (!lin || lin->second <= 0) continue;
            const int64_t a = lin->second;
            Expr tiles = a == 1 ? extent : binary(BinaryOp::FloorDiv, extent, intImm(a, extent->dtype));
            if (!provablyEqual(simplify(kernel_.grid[d]), simplify(tiles))) continue;
            Interval rest = lin->first ? boundsOf(lin->first, ranges()) : Interval::point(0);
            if (rest.hi && *rest.hi <= a - 1) return true;
        }
        return false;
    }

    /// The condition for the indices to lie inside a global tensor; null when provably inside.
    Expr inside(const Buffer &b, const std::vector<Expr> &indices) {
        if (!b || b->scope != Scope::Global || indices.size() != b->shape.size()) return nullptr;
        Expr cond;
        auto conj = [&](Expr c) { cond = cond ? binary(BinaryOp::And, cond, c) : c; };
        for (size_t d = 0; d < indices.size(); ++d) {
            Expr idx = indices[d];
            const Expr &extent = b->shape[d];
            // A vector lane checked once for the whole vector (see the header).
            if (lane_ && laneWidth_ > 1 && uses(idx, lane_)) {
                auto lin = linearIn(idx, lane_);
                auto ext = constInt(extent);
                if (lin && lin->second == 1 && ext && *ext % laneWidth_ == 0) {
                    Expr base = lin->first ? lin->first : intImm(0, idx->dtype);
                    if (knownMultiple(base) % laneWidth_ == 0) idx = base;
                }
            }
            Interval iv = boundsOf(idx, ranges());
            if (!(iv.lo && *iv.lo >= 0)) conj(binary(BinaryOp::GE, idx, intImm(0, idx->dtype)));
            Interval ev = boundsOf(extent, ranges());
            bool below = (iv.hi && ev.lo && *iv.hi < *ev.lo) || belowByGrid(idx, extent) || belowByFacts(idx, extent);
            if (!below) conj(binary(BinaryOp::LT, idx, extent));
        }
        return cond;
    }
};

} // namespace

Program predicateBounds(const Program &p) {
    return eachKernel(p, [](const KernelP &k) { return Predicate(*k).mutate(k); });
}

} // namespace tilec::passes
