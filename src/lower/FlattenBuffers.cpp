/// \file
/// Row-major flattening of buffer indices (include/tilec/passes/FlattenBuffers.h).
#include "tilec/passes/FlattenBuffers.h"

#include "EachKernel.h"
#include "ProgramVectorized.h"
#include "RangeScopedMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/passes/Arith.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace tilec::passes {

using namespace ir;

namespace {

/// The leading terms of `terms` (innermost dimension first: index, constant stride) summed in 32 bits, and how
/// many: as many as are 32-bit integers whose scaled sum provably fits 32 bits; none unless two or more do and
/// every term after them is one that no 32-bit sum could hold (its own range unknown or past 32 bits: the row
/// of a T.dynamic dimension, a block index times a large stride).
/// A 64-bit offset keeps them in one 32-bit sum widened once, as an offset known to fit is computed: widened
/// one by one, two terms that both depend on the thread (a row `r * 2 + tx / 64` and a column `tx * 8 % 512`)
/// left NVVM unable to prove a 16-byte store's address aligned, and it split the store into 4 (mhc_post:
/// `(int64_t)(r * 2 + tx / 64) * 2048LL + (int64_t)(tx * 8 % 512)`). Where a term that fits stays outside
/// (behind a loaded row offset, fusedmoe's `m_start[0] * 7168`), the thread's terms would end up on both sides
/// of the widening, which cost instructions (fusedmoe 2972 -> 3147 SASS): such offsets stay as they were.
/// Vector writes take it (`wanted`: Flatten::vectorWrite_); other accesses only where no term summed depends on
/// `thread` (block indices, loop counters: one 32-bit sum per block or iteration where each widened term cost a
/// 64-bit product; block_causal_attention_varlen_fwd 130 -> 123 registers, grouped_gemm_bwd 72 -> 64).
std::pair<Expr, size_t> narrowTail(const std::vector<std::pair<Expr, int64_t>> &terms, const RangeMap &ranges,
                                   bool wanted, const VarNode *thread) {
    constexpr int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    auto scaled = [&](size_t j) -> Expr {
        auto &[e, k] = terms[j];
        if (!e->dtype.isInt() || e->dtype.bits() > 32 || k < lo || k > hi) return nullptr;
        Expr i = cast(DType::Int32, e);
        return k == 1 ? i : binary(BinaryOp::Mul, i, intImm(k, DType::Int32));
    };
    auto fits = [&](const Expr &e) {
        Interval b = boundsOf(e, ranges);
        return b.lo && b.hi && *b.lo >= lo && *b.hi <= hi;
    };
    Expr tail;
    size_t n = 0;
    for (; n < terms.size(); ++n) {
        Expr term = scaled(n);
        Expr sum = !term ? nullptr : tail ? binary(BinaryOp::Add, term, tail) : term;
        if (!sum || !fits(sum)) break;
        tail = sum;
    }
    if (n < 2) return {nullptr, 0};
    for (size_t j = 0; j < n && !wanted; ++j)
        if (!thread || uses(terms[j].first, thread)) return {nullptr, 0};
    for (size_t j = n; j < terms.size(); ++j)
        if (Expr term = scaled(j); term && fits(term)) return {nullptr, 0};
    return {simplify(tail), n};
}

/// An offset as a sum of constant multiples of terms (expressions that are no sum, difference, negation or
/// constant multiple) plus a constant; `ok` false once a coefficient overflowed.
struct Terms {
    std::vector<std::pair<Expr, int64_t>> terms;
    int64_t c = 0;
    bool ok = true;

    void add(const Expr &e, int64_t k) {
        if (auto i = as<IntImm>(e)) {
            int64_t m;
            ok = ok && !__builtin_mul_overflow(i->value, k, &m) && !__builtin_add_overflow(c, m, &c);
            return;
        }
        if (auto u = as<Unary>(e); u && u->op == UnaryOp::Neg) return add(u->a, -k);
        if (auto b = as<Binary>(e); b && b->a->dtype == e->dtype && b->b->dtype == e->dtype) {
            if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) {
                add(b->a, k);
                return add(b->b, b->op == BinaryOp::Add ? k : -k);
            }
            auto ka = constInt(b->a), kb = constInt(b->b);
            int64_t m;
            if (b->op == BinaryOp::Mul && (ka || kb)) {
                if (__builtin_mul_overflow(k, ka ? *ka : *kb, &m)) ok = false;
                else add(ka ? b->b : b->a, m);
                return;
            }
        }
        for (auto &t : terms)
            if (t.first == e || provablyEqual(t.first, e)) {
                ok = ok && !__builtin_add_overflow(t.second, k, &t.second);
                return;
            }
        terms.push_back({e, k});
    }

    /// `K * (x // c) + (K / c) * (x % c)` is `(K / c) * x` (Python's floor division and modulo, c > 0): the
    /// element of a tile's row split into (row, column) by a copy's thread mapping and flattened again with
    /// the row length c. Returns whether any pair was found.
    bool foldDivMod() {
        bool any = false;
        for (bool changed = true; changed && ok;) {
            changed = false;
            for (size_t i = 0; i < terms.size() && !changed; ++i) {
                auto d = as<Binary>(terms[i].first);
                auto c = d && d->op == BinaryOp::FloorDiv ? constInt(d->b) : std::nullopt;
                if (!c || *c <= 0 || terms[i].second == 0 || terms[i].second % *c != 0) continue;
                const int64_t k = terms[i].second / *c;
                for (size_t j = 0; j < terms.size() && !changed; ++j) {
                    auto m = as<Binary>(terms[j].first);
                    if (!m || m->op != BinaryOp::FloorMod || terms[j].second != k || constInt(m->b) != c ||
                        !provablyEqual(m->a, d->a))
                        continue;
                    Expr x = d->a;
                    terms.erase(terms.begin() + (std::ptrdiff_t)std::max(i, j));
                    terms.erase(terms.begin() + (std::ptrdiff_t)std::min(i, j));
                    add(x, k);
                    changed = any = true;
                }
            }
        }
        return any && ok;
    }

    /// The sum in type t, each term converted to t before it is scaled; in 64 bits the innermost terms whose
    /// sum provably fits 32 bits are summed first and widened once (narrowTail).
    Expr build(DType t, const RangeMap &ranges, bool tail, const VarNode *thread) const {
        std::vector<std::pair<Expr, int64_t>> live;
        for (auto &term : terms)
            if (term.second != 0) live.push_back(term);
        size_t first = 0;
        Expr sum = intImm(c, t);
        if (t == DType::Int64) {
            auto [inner, n] = narrowTail(live, ranges, tail, thread);
            if (inner) sum = binary(BinaryOp::Add, sum, cast(t, inner)), first = n;
        }
        for (size_t i = first; i < live.size(); ++i)
            sum = binary(BinaryOp::Add, sum, binary(BinaryOp::Mul, cast(t, live[i].first), intImm(live[i].second, t)));
        return simplify(sum);
    }
};

class Flatten : public RangeScopedMutator {
  public:
    using RangeScopedMutator::visit;
    explicit Flatten(const Kernel &k) : RangeScopedMutator(k), kernel_(k) {}

    /// A vectorized loop's lane in scope (vectorLanes).
    Stmt visit(const std::shared_ptr<const For> &op) override {
        bool program = op->forKind == ForKind::Unrolled && programVectorized(op->numStages);
        if (op->forKind != ForKind::Vectorized && !program) return RangeScopedMutator::visit(op);
        auto ext = constInt(op->extent);
        lanes_.push_back({op->var, ext ? *ext : 0});
        Stmt s = RangeScopedMutator::visit(op);
        lanes_.pop_back();
        return s;
    }

    Expr visit(const std::shared_ptr<const Load> &op) override {
        std::vector<Expr> idx;
        for (auto &i : op->indices) idx.push_back(mutate(i));
        return Load::make(op->buffer, {offset(op->buffer, idx)}, op->loc);
    }

    Stmt visit(const std::shared_ptr<const Store> &op) override {
        std::vector<Expr> idx;
        for (auto &i : op->indices) idx.push_back(mutate(i));
        vectorWrite_ = vectorLanes(op->buffer, idx);
        Expr off = offset(op->buffer, idx);
        vectorWrite_ = false;
        return Store::make(op->buffer, {off}, mutate(op->value), op->loc);
    }

    Stmt visit(const std::shared_ptr<const AtomicAdd> &op) override {
        std::vector<Expr> idx;
        for (auto &r : op->dst.ranges) idx.push_back(mutate(r.min));
        vectorWrite_ = vectorLanes(op->dst.buffer, idx);
        Region dst{op->dst.buffer, {{offset(op->dst.buffer, idx), intImm(1)}}, op->dst.loc};
        vectorWrite_ = false;
        Expr value = mutate(op->value);
        return AtomicAdd::make(dst, std::nullopt, value, op->loc);
    }

  private:
    const Kernel &kernel_;
    std::vector<std::pair<Var, int64_t>> lanes_; ///< enclosing vectorized loops: variable, lanes
    /// The access being flattened is a vector write: its 64-bit offset takes narrowTail whatever the terms
    /// (other accesses only where no summed term depends on the thread). Measured over the 53 TileLang and
    /// TileKernels libraries whose code the tail changed (session 33, docs/PERFORMANCE.md): NVVM split 16- and
    /// 8-byte stores whose terms were widened apart, never a load (the same LDG.E.128 count in all 53); for
    /// loads and scalar accesses a sum of thread terms only moved registers (mhc_pre_big_fuse 0 -> 12 bytes of
    /// spill, sparse_mla_bwd_preprocess 32 -> 35 registers, engram_gate_bwd 24 -> 84 bytes of spill).
    bool vectorWrite_ = false;

    /// The kernel's thread index, which narrowTail keeps other accesses' sums free of.
    const VarNode *thread() const { return kernel_.threadIdx.get(); }

    /// Whether an access of `b` at `idx` moves 8 bytes or more at once: its innermost index steps by one with
    /// the lane of an enclosing vectorized loop (a T.Parallel round's lanes, or the program's T.vectorized
    /// loop) and no other index uses it, the `base + v` that vectorizeAccesses turns into one vector access.
    bool vectorLanes(const Buffer &b, const std::vector<Expr> &idx) const {
        for (auto &[v, n] : lanes_) {
            if (idx.empty() || b->dtype.bytes() * n < 8) continue;
            for (size_t d = 0; d + 1 < idx.size(); ++d)
                if (uses(idx[d], v.get())) return false;
            VarMap next;
            next[v.get()] = binary(BinaryOp::Add, v, intImm(1, v->dtype));
            Expr step = binary(BinaryOp::Add, idx.back(), intImm(1, idx.back()->dtype));
            if (uses(idx.back(), v.get()) && provablyEqual(substitute(idx.back(), next), step)) return true;
        }
        return false;
    }

    /// The row-major offset of element `idx` of `b`; for a global tensor with a T.Layout, of the layout's
    /// output indices in its output shape.
    Expr offset(const Buffer &b, const std::vector<Expr> &idx) {
        TILEC_ASSERT(b && idx.size() == b->shape.size(), "access of '" + (b ? b->name : std::string("?")) +
                                                             "' with the wrong number of indices");
        if (const TensorLayout *l = kernel_.layoutOf(b.get())) {
            VarMap at;
            for (size_t d = 0; d < idx.size(); ++d) at[l->vars[d].get()] = idx[d];
            std::vector<Expr> out;
            for (auto &e : l->forward) out.push_back(simplify(substitute(e, at)));
            return rowMajor(l->shape, out);
        }
        return rowMajor(b->shape, idx);
    }

    /// The offset as a sum of terms in which a copy's (row, column) split of a contiguous run folds back
    /// (Terms::foldDivMod), or nothing where the strides are not constant or nothing folds.
    std::optional<Terms> folded(const std::vector<Expr> &shape, const std::vector<Expr> &idx) {
        Terms t;
        int64_t stride = 1;
        for (size_t d = idx.size(); d-- > 0;) {
            if (!idx[d]->dtype.isInt() || idx[d]->dtype.bits() > 32) return std::nullopt;
            t.add(idx[d], stride);
            if (d == 0) break;
            auto ext = constInt(shape[d]);
            if (!ext || __builtin_mul_overflow(stride, *ext, &stride)) return std::nullopt;
        }
        if (!t.foldDivMod()) return std::nullopt;
        return t;
    }

    Expr rowMajor(const std::vector<Expr> &shape, const std::vector<Expr> &idx) {
        if (idx.empty()) return intImm(0);
        const std::optional<Terms> fold = folded(shape, idx);
        if (idx.size() == 1) return fold ? fold->build(idx[0]->dtype, ranges(), vectorWrite_, thread()) : idx[0];
        auto build = [&](DType t) {
            if (fold) return fold->build(t, ranges(), vectorWrite_, thread());
            Expr flat, stride;
            size_t d = idx.size();
            if (t == DType::Int64) {
                // The innermost dimensions of constant strides whose offset fits 32 bits: one sum (narrowTail).
                std::vector<std::pair<Expr, int64_t>> inner;
                int64_t s = 1;
                for (size_t j = idx.size(); j-- > 0;) {
                    inner.push_back({idx[j], s});
                    auto ext = j ? constInt(shape[j]) : std::nullopt;
                    if (!ext || __builtin_mul_overflow(s, *ext, &s)) break;
                }
                if (auto [tail, n] = narrowTail(inner, ranges(), vectorWrite_, thread()); tail) {
                    flat = cast(t, tail);
                    d = idx.size() - n;
                    stride = intImm(inner[n - 1].second, t);
                    Expr ext = cast(t, shape[d]);
                    stride = binary(BinaryOp::Mul, ext, stride);
                }
            }
            while (d-- > 0) {
                Expr i = cast(t, idx[d]);
                Expr term = stride ? binary(BinaryOp::Mul, i, stride) : i;
                flat = flat ? binary(BinaryOp::Add, term, flat) : term;
                Expr ext = cast(t, shape[d]);
                stride = stride ? binary(BinaryOp::Mul, ext, stride) : ext;
            }
            return simplify(flat);
        };
        Expr narrow = build(DType::Int32);
        Interval iv = boundsOf(narrow, ranges());
        bool fits = iv.lo && iv.hi && *iv.lo >= std::numeric_limits<int32_t>::min() &&
                    *iv.hi <= std::numeric_limits<int32_t>::max();
        // The extents' product must fit as well, since the strides are computed too.
        int64_t total = 1;
        for (auto &e : shape) {
            Interval ev = boundsOf(e, ranges());
            if (!ev.hi || __builtin_mul_overflow(total, *ev.hi, &total)) total = std::numeric_limits<int64_t>::max();
        }
        if (fits && total <= std::numeric_limits<int32_t>::max()) return narrow;
        return build(DType::Int64);
    }
};

} // namespace

Program flattenBuffers(const Program &p) {
    return eachKernel(p, [](const KernelP &k) { return Flatten(*k).mutate(k); });
}

} // namespace tilec::passes
