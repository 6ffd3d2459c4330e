/// \file
/// T.Parallel nests to per-thread loops over the thread's elements, fragments to register arrays
/// (include/tilec/passes/LowerParallel.h).
#include "tilec/passes/LowerParallel.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelNest.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/UnrollSerialLoops.h"
#include "CopiedLayouts.h"
#include "LayoutUses.h"

namespace tilec::passes {

using namespace ir;

namespace {

/// Longest distributed round loop that stays unrolled when it touches no register array, whatever its body.
/// Unrolled, a copy-like nest (load, convert, store per round) issues every round's loads before the first
/// store waits on one, one memory round trip instead of one per round (the tensors' pointers are __restrict__);
/// TileLang unrolls these loops whole. Longer loops are unrolled too while their unrolled body stays small
/// (unrolledFits: at most 512 statements and 128 global loads): a (64, 576) float tile copied to bfloat16 by
/// 128 threads is 72 rounds of one 16-byte load and one 8-byte store, which TileLang's code issues as 72 loads
/// in flight and which stayed a rolled loop of 3 loads in flight per trip (sparse_mla_bwd's postprocess, 0.45x).
constexpr int64_t kMaxUnrolledRounds = 32;

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// w where `last` is `v * S + w` (in either order), else null: an expansion's offset (LayoutUses.h, Use::expand).
Expr expansionOffset(const Expr &last, const Var &v, int64_t S) {
    auto sum = as<Binary>(last);
    if (!sum || sum->op != BinaryOp::Add) return nullptr;
    for (auto [scaled, w] : {std::pair{sum->a, sum->b}, std::pair{sum->b, sum->a}}) {
        auto m = as<Binary>(scaled);
        if (!m || m->op != BinaryOp::Mul) continue;
        if ((m->a == Expr(v) && constInt(m->b) == std::optional<int64_t>(S)) ||
            (m->b == Expr(v) && constInt(m->a) == std::optional<int64_t>(S)))
            return w;
    }
    return nullptr;
}

bool touchesScope(const Stmt &s, Scope scope) {
    struct F : IRVisitor {
        using IRVisitor::visit;
        Scope scope;
        bool found = false;
        void visit(const Load &op) override {
            found |= op.buffer && op.buffer->scope == scope;
            IRVisitor::visit(op);
        }
        void visit(const Store &op) override {
            found |= op.buffer && op.buffer->scope == scope;
            IRVisitor::visit(op);
        }
    } f;
    f.scope = scope;
    f.visit(s);
    return f.found;
}

class Lowerer : public IRMutator {
  public:
    using IRMutator::visit;
    Lowerer(const KernelLayouts &l, const Kernel &k) : layouts_(l), tid_(k.threadIdx), threads_(k.threads) {}

    Expr visit(const std::shared_ptr<const Load> &op) override {
        if (!op->buffer || op->buffer->scope != Scope::Fragment) return IRMutator::visit(op);
        std::vector<Expr> idx;
        for (auto &i : op->indices) idx.push_back(mutate(i));
        auto [reg, slot] = registerSlot(op->buffer, idx);
        return Load::make(reg, {slot}, op->loc);
    }

    Stmt visit(const std::shared_ptr<const Store> &op) override {
        if (!op->buffer || op->buffer->scope != Scope::Fragment) {
            Stmt s = IRMutator::visit(op);
            return ownedByOneThread(s, op->buffer);
        }
        std::vector<Expr> idx;
        for (auto &i : op->indices) idx.push_back(mutate(i));
        auto [reg, slot] = registerSlot(op->buffer, idx);
        return Store::make(reg, {slot}, mutate(op->value), op->loc);
    }

    Stmt visit(const std::shared_ptr<const AtomicAdd> &op) override {
        Stmt s = IRMutator::visit(op);
        return ownedByOneThread(s, op->dst.buffer);
    }

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (op->forKind != ForKind::Parallel || nest_) return IRMutator::visit(op);
        auto it = layouts_.loops.find(op->var.get());
        TILEC_ASSERT(it != layouts_.loops.end(), "T.Parallel nest without a layout");
        return lowerNest(*op, it->second);
    }

  private:
    const KernelLayouts &layouts_;
    Var tid_;
    int threads_;
    // The nest being lowered.
    const std::vector<Var> *nest_ = nullptr;
    Expr slot_;                  ///< distributed: the register slot of the current element
    Expr rowSlot_;               ///< mma: the slot of the current element's row in mmaRows fragments
    Expr colSlot_;               ///< mma: the slot of the current element's column in mmaCols fragments
    Expr replicatedOwner_;       ///< replicated: the condition under which this thread stores an element
    Var round_, lane_;           ///< distributed: the round and lane variables of the nest being lowered
    int64_t nestVec_ = 0, nestElements_ = 0; ///< distributed: its vector width (0 outside) and iterations
    const std::vector<int64_t> *nestShape_ = nullptr; ///< distributed, operand order: the nest's extents
    std::vector<Var> groupVars_;                      ///< operand order: the nest's (mi, q, h)
    const Layout *nestLayout_ = nullptr;              ///< distributed: the nest's layout

    /// Whether `idx` is the nest's variables after the first, in order: a per-column value read in an mma nest
    /// (`d[j]` over (i, j), `w[a, b]` over (i, a, b); LayoutUses' Use::colOfNest).
    bool readsColumn(const std::vector<Expr> &idx) const {
        if (!nest_ || idx.empty() || idx.size() + 1 != nest_->size()) return false;
        for (size_t d = 0; d < idx.size(); ++d)
            if (!(idx[d] == Expr((*nest_)[d + 1]))) return false;
        return true;
    }

    /// The register array and slot of a fragment element.
    std::pair<Buffer, Expr> registerSlot(const Buffer &b, const std::vector<Expr> &idx) {
        auto reg = layouts_.registers.find(b.get());
        auto lay = layouts_.fragments.find(b.get());
        TILEC_ASSERT(reg != layouts_.registers.end() && lay != layouts_.fragments.end(), "fragment without a layout");
        bool exact = nest_ && idx.size() == nest_->size();
        for (size_t d = 0; exact && d < idx.size(); ++d) exact = idx[d] == Expr((*nest_)[d]);
        // A distributed nest's own slot holds the element only over the fragment's whole shape (Use::exact).
        if (exact && nestShape_ && lay->second.kind == Layout::Distributed) exact = lay->second.shape == *nestShape_;
        const Layout::Kind kind = lay->second.kind;
        if (kind == Layout::Distributed && !exact && nestLayout_ && (lay->second.copies || nestLayout_->copies)) {
            // Layouts with copies: where the nest's thread meets the element, numerically (CopiedLayouts.h).
            auto slot = copiedSlot(lay->second, *nestLayout_, idx, *nest_, round_, lane_);
            TILEC_ASSERT(slot, "fragment '" + b->name + "' read where a thread does not hold the element");
            return {reg->second, *slot};
        }
        if (kind == Layout::MmaRows && !exact && rowSlot_ && idx.size() == 1 && idx[0] == Expr((*nest_)[0]))
            return {reg->second, rowSlot_};
        if (kind == Layout::MmaCols && !exact && colSlot_ && readsColumn(idx) && lay->second.opCols == !groupVars_.empty())
            return {reg->second, colSlot_}; // per-column values in the nest's own column order
        if (auto g = kind == Layout::Mma && !exact ? groupSlot(lay->second, idx) : std::nullopt) return {reg->second, *g};
        if (kind == Layout::Distributed && !exact && slot_ && nest_ && nestShape_) {
            // A slice access (inferLayouts' Use::sliceElements): element (c, p) sits in slot c * P / T + p's slot, P the
            // slice's elements (whole rounds of the layout). Over a nest (o, p) whose first variables o the
            // index leaves out, iteration (o, p) has slot o * P / T + p's slot.
            const size_t r = idx.size(), nv = nest_->size();
            // The matched variables must run over the fragment's whole dimensions, as Use::sliceElements requires:
            // `rn[j]` of a (64,) fragment in a nest over (7, 32) is no slice (its layout was fitted to the read).
            const std::vector<int64_t> &shape = lay->second.shape;
            size_t k = 0;
            while (k < nv && k < r && r == shape.size() && idx[r - 1 - k] == Expr((*nest_)[nv - 1 - k]) &&
                   shape[r - 1 - k] == (*nestShape_)[nv - 1 - k])
                ++k;
            int64_t p = 1;
            for (size_t d = r - k; d < shape.size(); ++d) p *= shape[d];
            if (k > 0 && (k < r || k < nv) && p % ((int64_t)lay->second.threads * lay->second.vec) == 0) {
                const int64_t perThread = p / lay->second.threads;
                std::vector<Expr> c(idx.begin(), idx.end() - (long)k), o(nest_->begin(), nest_->end() - (long)k);
                std::vector<int64_t> cs(shape.begin(), shape.end() - (long)k), os(nestShape_->begin(), nestShape_->end() - (long)k);
                Expr at = c.empty() ? i32(0) : flattenCoords(c, cs);
                if (!o.empty()) at = binary(BinaryOp::Sub, at, flattenCoords(o, os));
                return {reg->second, simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, at, i32(perThread)), slot_))};
            }
        }
        if (kind == Layout::Distributed && !exact && slot_ && nest_ && idx.size() <= nest_->size() && nestVec_ > 0) {
            // A broadcast along the nest's trailing variables (inferLayouts' Use::trailing): the nest's element
            // p = q * S + s, S = V / V_F, holds element q in the same thread, at slot round * V_F + lane / S.
            // So does a read of the nest's variables with the last divided by S (`B[i, j // S]`).
            const int64_t vf = lay->second.vec, S = nestVec_ / vf;
            // Each index the nest's variable over the fragment's whole dimension (Use::trailing), or the last
            // divided by S over a dimension S times shorter.
            const std::vector<int64_t> &shape = lay->second.shape;
            bool prefix = shape.size() == idx.size();
            for (size_t d = 0; prefix && d < idx.size(); ++d) {
                prefix = idx[d] == Expr((*nest_)[d]) && shape[d] == (*nestShape_)[d];
                if (!prefix && d + 1 == nest_->size()) {
                    auto q = as<Binary>(idx[d]);
                    prefix = q && q->op == BinaryOp::FloorDiv && q->a == Expr((*nest_)[d]) &&
                             constInt(q->b) == std::optional<int64_t>(S) && shape[d] * S == (*nestShape_)[d];
                }
            }
            if (prefix && nestVec_ % vf == 0 && lay->second.elements() * S == nestElements_)
                return {reg->second, simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, round_, i32(vf)),
                                                     binary(BinaryOp::FloorDiv, lane_, i32(S))))};
        }
        if (kind == Layout::Distributed && !exact && slot_ && nest_ && idx.size() == nest_->size() && nestVec_ > 0 &&
            lay->second.vec % nestVec_ == 0 && lay->second.elements() == nestElements_ * (lay->second.vec / nestVec_)) {
            // An expansion (inferLayouts' Use::expand): the nest's element p holds F's elements p * S + w, S = V_F / V,
            // in the same thread, at slot round * V_F + lane * S + w.
            const int64_t vf = lay->second.vec, S = vf / nestVec_;
            const std::vector<int64_t> &shape = lay->second.shape;
            bool prefix = S > 1 && shape.size() == idx.size() && shape.back() == nestShape_->back() * S;
            for (size_t d = 0; prefix && d + 1 < idx.size(); ++d)
                prefix = idx[d] == Expr((*nest_)[d]) && shape[d] == (*nestShape_)[d]; // Use::expand's whole dimensions
            if (Expr w = prefix ? expansionOffset(idx.back(), nest_->back(), S) : nullptr)
                return {reg->second, simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, round_, i32(vf)),
                                                     binary(BinaryOp::Add, binary(BinaryOp::Mul, lane_, i32(S)), w)))};
        }
        if (kind == Layout::Distributed && !exact && nestLayout_) // a layout inferLayouts fitted to this read
            if (auto slot = copiedSlot(lay->second, *nestLayout_, idx, *nest_, round_, lane_)) return {reg->second, *slot};
        if (kind != Layout::Replicated) {
            TILEC_ASSERT(exact && slot_, "fragment '" + b->name + "' accessed other than by its loop");
            return {reg->second, slot_};
        }
        return {reg->second, flattenCoords(idx, lay->second.shape)};
    }

    /// The loops of a nest over its rows after the first (inferLayouts: followRows): each thread that holds a
    /// row runs them whole, in order.
    static Stmt wholeInEachRow(const Stmt &body) {
        auto f = as<For>(body);
        if (!f || f->forKind != ForKind::Parallel) return body;
        return For::make(f->var, f->min, f->extent, ForKind::Serial, 0, wholeInEachRow(f->body), f->loc);
    }

    /// In a replicated nest, memory other threads see is written by one thread per element.
    Stmt ownedByOneThread(const Stmt &s, const Buffer &b) {
        if (!replicatedOwner_ || !s || !b || (b->scope != Scope::Global && b->scope != Scope::Shared)) return s;
        return IfThenElse::make(replicatedOwner_, s, nullptr, s->loc);
    }

    Stmt lowerNest(const For &outer, const Layout &l) {
        const std::vector<const For *> loops = parallelNest(outer, l.shape.size());
        std::vector<Var> vars;
        for (const For *f : loops) vars.push_back(f->var);
        TILEC_ASSERT(vars.size() == l.shape.size(), "nest depth differs from its layout");
        Stmt body = loops.back()->body;
        if (l.kind == Layout::MmaRows) body = wholeInEachRow(body);
        nest_ = &vars;
        Stmt out;
        switch (l.kind) {
        case Layout::Distributed: out = distributed(outer, vars, body, l); break;
        case Layout::Replicated: out = replicated(loops, vars, body, l); break;
        case Layout::Mma:
        case Layout::MmaRows:
        case Layout::MmaCols: out = mma(outer, vars, body, l); break;
        }
        nest_ = nullptr;
        slot_ = nullptr;
        rowSlot_ = nullptr;
        colSlot_ = nullptr;
        replicatedOwner_ = nullptr;
        return out;
    }

    /// Every thread runs every iteration; the innermost loop goes in vectors of up to 16 bytes of the widest
    /// element the nest moves through memory (a copy of a vector from global memory into a replicated
    /// fragment: 16-byte loads, not one element at a time).
    Stmt replicated(const std::vector<const For *> &loops, const std::vector<Var> &vars, const Stmt &body, const Layout &l) {
        std::vector<Expr> coords(vars.begin(), vars.end());
        const int64_t inner = l.shape.back(), V = memoryLanes(body, inner);
        // One thread stores each element: whole vectors to one thread, so that its stores are vector stores.
        Expr vec = binary(BinaryOp::FloorDiv, flattenCoords(coords, l.shape), i32(V));
        replicatedOwner_ = binary(BinaryOp::EQ, binary(BinaryOp::FloorMod, V > 1 ? vec : flattenCoords(coords, l.shape), i32(threads_)), tid_);
        Stmt s = mutate(body);
        if (!s) s = Seq::make({});
        size_t d = vars.size();
        if (V > 1) {
            const SourceRange &loc = loops.back()->loc;
            Var o = makeVar(vars.back()->name + "_v", DType::Int32, loc), lane = makeVar("v", DType::Int32, loc);
            VarMap m;
            m[vars.back().get()] = inner == V ? Expr(lane) : binary(BinaryOp::Add, binary(BinaryOp::Mul, o, i32(V)), lane);
            s = simplifyIndices(substitute(s, m));
            s = For::make(lane, i32(0), i32(V), ForKind::Vectorized, 0, s, loc);
            if (inner > V) s = For::make(o, i32(0), i32(inner / V), ForKind::Unrolled, 0, s, loc);
            --d;
        }
        while (d-- > 0) s = For::make(vars[d], i32(0), i32(l.shape[d]), ForKind::Unrolled, 0, s, loops[d]->loc);
        return s;
    }

    /// The lanes of 16 bytes of the widest global or shared element `body` reads or writes, halved until they
    /// divide `inner`; 1 when it touches no such memory.
    static int64_t memoryLanes(const Stmt &body, int64_t inner) {
        struct V : IRVisitor {
            using IRVisitor::visit;
            int64_t widest = 0;
            void see(const Buffer &b) {
                if (b->scope == Scope::Global || b->scope == Scope::Shared) widest = std::max<int64_t>(widest, b->dtype.bytes());
            }
            void visit(const Load &op) override { see(op.buffer), IRVisitor::visit(op); }
            void visit(const Store &op) override { see(op.buffer), IRVisitor::visit(op); }
        } v;
        v.visit(body);
        if (v.widest <= 0 || 16 % v.widest) return 1;
        int64_t lanes = 16 / v.widest;
        while (lanes > 1 && inner % lanes) lanes /= 2;
        return lanes;
    }

    /// An mma nest: the thread's 16x8 tiles (mi, ni), their two row halves h and two columns c (a vector
    /// pair); an mmaRows nest: the thread's rows (mi, h); an mmaCols nest: its columns (ni, c). Memory writes of
    /// the last two are done by one copy of each row or column.
    Stmt mma(const For &outer, const std::vector<Var> &vars, const Stmt &body, const Layout &l) {
        if (l.kind == Layout::Mma && l.opCols) return operandOrder(outer, vars, body, l);
        if (l.kind == Layout::MmaCols && l.opCols) return operandColumns(outer, vars, body, l);
        const SourceRange &loc = outer.loc;
        const bool rows = l.kind == Layout::MmaRows, cols = l.kind == Layout::MmaCols;
        const int64_t nT = rows ? 0 : l.tilesN(); // mmaRows layouts are 1-D: no column tiles
        Var mi = makeVar("mi", DType::Int32, loc), ni = makeVar("ni", DType::Int32, loc);
        Var h = makeVar("h", DType::Int32, loc), c = makeVar("c", DType::Int32, loc);
        Expr rowSlot = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, mi, i32(2)), h));
        Expr colSlot = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, ni, i32(2)), c));
        if (rows) {
            slot_ = rowSlot;
            replicatedOwner_ = mmaRowsOwner(l, tid_);
        } else if (cols) {
            slot_ = colSlot;
            replicatedOwner_ = mmaColsOwner(l, tid_);
        } else {
            Expr tile = binary(BinaryOp::Add, binary(BinaryOp::Mul, mi, i32(nT)), ni);
            slot_ = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, binary(BinaryOp::Add, binary(BinaryOp::Mul, tile, i32(2)), h), i32(2)), c));
            rowSlot_ = rowSlot;
            colSlot_ = colSlot;
            if (l.warpCopies() > 1) // copies in several warp columns (a wgmma RS operand): the first one stores
                replicatedOwner_ = binary(BinaryOp::LT, tid_, i32(32 * l.warpsM * l.warpsN));
        }
        Stmt inner = mutate(body);
        if (!inner) inner = Seq::make({});
        VarMap m;
        if (cols) { // the column, row-major over the fragment's shape
            Expr col = mmaCol(l, tid_, ni, c);
            int64_t stride = l.elements();
            for (size_t d = 0; d < vars.size() && d < l.shape.size(); ++d) {
                stride /= l.shape[d];
                Expr v = stride == 1 ? col : binary(BinaryOp::FloorDiv, col, i32(stride));
                m[vars[d].get()] = simplify(d == 0 ? v : binary(BinaryOp::FloorMod, v, i32(l.shape[d])));
            }
        } else {
            m[vars[0].get()] = mmaRow(l, tid_, mi, h);
        }
        if (!rows && !cols) { // a view's columns split over several variables (Layout::columns)
            auto coords = mmaViewCoords(l, m[vars[0].get()], mmaCol(l, tid_, ni, c));
            for (size_t d = 1; d < vars.size(); ++d) m[vars[d].get()] = coords[d];
        }
        Stmt s = simplifyIndices(substitute(inner, m));
        if (!rows) s = For::make(c, i32(0), i32(2), ForKind::Vectorized, 0, s, loc);
        if (cols) return For::make(ni, i32(0), i32(nT), ForKind::Unrolled, 0, s, loc);
        s = For::make(h, i32(0), i32(2), ForKind::Unrolled, 0, s, loc);
        if (!rows) s = For::make(ni, i32(0), i32(nT), ForKind::Unrolled, 0, s, loc);
        return For::make(mi, i32(0), i32(l.tilesM()), ForKind::Unrolled, 0, s, loc);
    }

    /// An mma nest in the operand column order (Layout::opCols): the thread's 16-row tiles mi, its 4-column groups
    /// q (one column each) and row halves h, slot (mi*nQ + q)*2 + h. A read `F[i, e * W + j]` of a fragment in that
    /// order in a nest over (i, j), W = j's extent (Use::colGroups), is the thread's slot of group e * W/4 + q.
    Stmt operandOrder(const For &outer, const std::vector<Var> &vars, const Stmt &body, const Layout &l) {
        const SourceRange &loc = outer.loc;
        const int64_t nQ = l.colGroups();
        Var mi = makeVar("mi", DType::Int32, loc), q = makeVar("q", DType::Int32, loc), h = makeVar("h", DType::Int32, loc);
        slot_ = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, binary(BinaryOp::Add, binary(BinaryOp::Mul, mi, i32(nQ)), q), i32(2)), h));
        rowSlot_ = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, mi, i32(2)), h));
        colSlot_ = q; // an operand-order mmaCols fragment's slot of the column
        groupVars_ = {mi, q, h};
        nestShape_ = &l.shape;
        if (l.warpCopies() > 1) // copies in several warp columns: the first one stores what other threads see
            replicatedOwner_ = binary(BinaryOp::LT, tid_, i32(32 * l.warpsM));
        Stmt inner = mutate(body);
        groupVars_.clear();
        nestShape_ = nullptr;
        if (!inner) inner = Seq::make({});
        VarMap m;
        m[vars[0].get()] = mmaRow(l, tid_, mi, h);
        m[vars[1].get()] = mmaGroupCol(l, tid_, q);
        Stmt s = simplifyIndices(substitute(inner, m));
        s = For::make(h, i32(0), i32(2), ForKind::Unrolled, 0, s, loc);
        s = For::make(q, i32(0), i32(nQ), ForKind::Unrolled, 0, s, loc);
        return For::make(mi, i32(0), i32(l.tilesM()), ForKind::Unrolled, 0, s, loc);
    }

    /// An mmaCols nest in the operand order: the thread's column groups q, column q*4 + tid%4 in slot q; memory
    /// writes by one copy of each column.
    Stmt operandColumns(const For &outer, const std::vector<Var> &vars, const Stmt &body, const Layout &l) {
        TILEC_ASSERT(vars.size() == 1, "an operand-order mmaCols nest of more than one dimension");
        Var q = makeVar("q", DType::Int32, outer.loc);
        slot_ = q;
        replicatedOwner_ = mmaColsOwner(l, tid_);
        Stmt inner = mutate(body);
        if (!inner) inner = Seq::make({});
        VarMap m;
        m[vars[0].get()] = mmaGroupCol(l, tid_, q);
        return For::make(q, i32(0), i32(l.colGroups()), ForKind::Unrolled, 0, simplifyIndices(substitute(inner, m)), outer.loc);
    }

    /// The slot of `F[i, e * W + j]` (colGroupOffset) in an operand-order nest over (i, j), F in that order too.
    std::optional<Expr> groupSlot(const Layout &f, const std::vector<Expr> &idx) const {
        if (groupVars_.empty() || !f.opCols || f.kind != Layout::Mma || !nest_ || !nestShape_) return std::nullopt;
        std::vector<Expr> shape;
        for (int64_t d : f.shape) shape.push_back(i32(d));
        auto [e, S] = colGroupOffset(idx, *nest_, *nestShape_, shape);
        if (!e) return std::nullopt;
        const Expr &mi = groupVars_[0], &q = groupVars_[1], &h = groupVars_[2];
        Expr group = binary(BinaryOp::Add, binary(BinaryOp::Add, binary(BinaryOp::Mul, mi, i32(f.colGroups())),
                                                  binary(BinaryOp::Mul, e, i32(S / 4))), q);
        return simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, group, i32(2)), h));
    }

    Stmt distributed(const For &outer, const std::vector<Var> &vars, const Stmt &body, const Layout &l) {
        const int64_t V = l.vec, TV = (int64_t)l.vthreads() * V;
        const Expr vtid = virtualThread(l, tid_);
        Var round = makeVar("r", DType::Int32, outer.loc), lane = makeVar("v", DType::Int32, outer.loc);
        slot_ = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, round, i32(V)), lane));
        round_ = round, lane_ = lane, nestVec_ = V, nestElements_ = l.elements(), nestShape_ = &l.shape, nestLayout_ = &l;
        replicatedOwner_ = firstHolder(l, tid_); // copies: the first holder stores what other threads see
        Stmt inner = mutate(body);
        nestVec_ = 0, nestShape_ = nullptr, nestLayout_ = nullptr;
        if (!inner) inner = Seq::make({});
        bool usesRegisters = touchesScope(inner, Scope::Local);

        // One round: the element coordinates in place of the nest's variables, V lanes.
        auto roundBody = [&](const Expr &r) {
            VarMap m;
            auto coords = elementCoords(l, r, vtid, V > 1 ? Expr(lane) : i32(0));
            for (size_t d = 0; d < vars.size(); ++d) m[vars[d].get()] = coords[d];
            m[round.get()] = r;
            if (V == 1) m[lane.get()] = i32(0);
            Stmt s = simplifyIndices(substitute(inner, m));
            if (V > 1) s = For::make(lane, i32(0), i32(V), ForKind::Vectorized, 0, s, outer.loc);
            return s;
        };

        std::vector<Stmt> parts;
        int64_t full = l.fullRounds(), rest = l.elements() - full * TV;
        if (full == 1) {
            parts.push_back(roundBody(i32(0)));
        } else if (full > 1) {
            Stmt one = roundBody(round);
            bool unroll = usesRegisters || full <= kMaxUnrolledRounds || unrolledFits(one, full);
            parts.push_back(For::make(round, i32(0), i32(full), unroll ? ForKind::Unrolled : ForKind::Serial, 0, one, outer.loc));
        }
        if (rest > 0) {
            Expr active = binary(BinaryOp::LT, binary(BinaryOp::Mul, vtid, i32(V)), i32(rest));
            parts.push_back(IfThenElse::make(active, roundBody(i32(full)), nullptr, outer.loc));
        }
        return Seq::make(std::move(parts), outer.loc);
    }
};

} // namespace

Program lowerParallel(const Program &p) {
    Program out;
    for (const KernelP &in : p.kernels) {
        KernelP k = withThreadIndex(in);
        const KernelLayouts &layouts = layoutsOf(*k);
        Lowerer m(layouts, *k);
        auto body = m.mutate(k->body);
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body ? body : Seq::make({});
        nk->allocs.clear();
        for (auto &b : k->allocs) {
            auto reg = layouts.registers.find(b.get());
            nk->allocs.push_back(reg != layouts.registers.end() ? reg->second : b);
        }
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
