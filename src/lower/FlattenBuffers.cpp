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

/// What narrowTail needs to know of the access and the loops around it.
struct TailScope {
    const RangeMap &ranges;
    bool wanted;                                ///< a vector write (Flatten::vectorWrite_)
    const VarNode *thread;                      ///< the kernel's thread index
    const std::vector<const VarNode *> &loops;  ///< every enclosing loop's variable
    const std::vector<const VarNode *> &rolled; ///< those of loops emitted without an unroll pragma
};

/// The 32-bit sum of a 64-bit offset's innermost terms (narrowTail): the first `n` terms but those in
/// `apart`, which are widened one by one like the terms from `n` on.
struct Tail {
    Expr sum;
    size_t n = 0;
    std::vector<size_t> apart;
};

bool usesAny(const Expr &e, const std::vector<const VarNode *> &vars) {
    return std::any_of(vars.begin(), vars.end(), [&](const VarNode *v) { return uses(e, v); });
}

/// Of the first `n` terms (a vector write's 32-bit sum), those to widen apart: where the sum steps with a
/// loop left rolled, the terms that depend on no loop and not on the thread (block indices, T.dynamic sizes).
/// NVVM forms a rolled loop's store address as an induction variable and re-joins the 16-byte store's four
/// 4-byte parts (one per part of the register array it was built in) afterwards; where the sign-extended
/// sum's recurrence cannot be proven not to wrap (NVVM knows the thread index (tilec's assumption) and the
/// loops' counters, not that blockIdx.x < 4), the variable's base lands inside the 16 bytes (`[iv-8]`,
/// `[iv-4]` and so on) and the parts stay 4 st.global.u32 (engram_gate_fwd: `i_s * 28672LL + (int64_t)(pid_h
/// * 7168 + i_b * 1024 + i_sub * 256 + tx * 8)`, 48 STG.E for 12 STG.E.128). With the invariant terms widened
/// apart the sum is one NVVM bounds, and they are one 64-bit product per block, hoisted out of the loops.
std::vector<size_t> invariantTerms(const std::vector<std::pair<Expr, int64_t>> &terms, size_t n,
                                   const TailScope &in) {
    bool steps = false;
    for (size_t j = 0; j < n; ++j)
        steps = steps || usesAny(terms[j].first, in.rolled);
    std::vector<size_t> apart;
    for (size_t j = 0; j < n && steps && in.wanted; ++j)
        if (!uses(terms[j].first, in.thread) && !usesAny(terms[j].first, in.loops))
            apart.push_back(j);
    return apart;
}

/// The leading terms of `terms` (innermost dimension first: index, constant stride) summed in 32 bits, and
/// how many: as many as are 32-bit integers whose scaled sum provably fits 32 bits; none unless two or more
/// do and every term after them is one that no 32-bit sum could hold (its own range unknown or past 32 bits:
/// the row of a T.dynamic dimension, a block index times a large stride). A 64-bit offset keeps them in one
/// 32-bit sum widened once, as an offset known to fit is computed: widened one by one, two terms that both
/// depend on the thread (a row `r * 2 + tx / 64` and a column `tx * 8 % 512`) left NVVM unable to prove a
/// 16-byte store's address aligned, and it split the store into 4 (mhc_post:
/// `(int64_t)(r * 2 + tx / 64) * 2048LL + (int64_t)(tx * 8 % 512)`). Where a term that fits stays outside
/// (behind a loaded row offset, fusedmoe's `m_start[0] * 7168`), the thread's terms would end up on both
/// sides of the widening, which cost instructions (fusedmoe 2972 -> 3147 SASS): such offsets stay as they
/// were. Vector writes take it (`wanted`: Flatten::vectorWrite_), less the terms invariantTerms widens apart;
/// other accesses only where no term summed depends on `thread` (block indices, loop counters: one 32-bit sum
/// per block or iteration where each widened term cost a 64-bit product; block_causal_attention_varlen_fwd
/// 130 -> 123 registers, grouped_gemm_bwd 72 -> 64).
Tail narrowTail(const std::vector<std::pair<Expr, int64_t>> &terms, const TailScope &in) {
    constexpr int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    auto scaled = [&](size_t j) -> Expr {
        auto &[e, k] = terms[j];
        if (!e->dtype.isInt() || e->dtype.bits() > 32 || k < lo || k > hi) return nullptr;
        Expr i = cast(DType::Int32, e);
        return k == 1 ? i : binary(BinaryOp::Mul, i, intImm(k, DType::Int32));
    };
    auto fits = [&](const Expr &e) {
        Interval b = boundsOf(e, in.ranges);
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
    if (n < 2)
        return {};
    for (size_t j = 0; j < n && !in.wanted; ++j)
        if (!in.thread || uses(terms[j].first, in.thread))
            return {};
    for (size_t j = n; j < terms.size(); ++j)
        if (Expr term = scaled(j); term && fits(term))
            return {};
    // The rest summed without the terms widened apart, each partial sum proven to fit as the whole one was (a
    // term of negative coefficient left out could have kept it in range); where one does not, none goes
    // apart.
    std::vector<size_t> apart = invariantTerms(terms, n, in);
    Expr rest;
    for (size_t j = 0; j < n && !apart.empty(); ++j) {
        if (std::find(apart.begin(), apart.end(), j) != apart.end())
            continue;
        rest = rest ? binary(BinaryOp::Add, scaled(j), rest) : scaled(j);
        if (!fits(rest))
            apart.clear();
    }
    return {simplify(apart.empty() ? tail : rest), n, apart};
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
    Expr build(DType t, const TailScope &in) const {
        std::vector<std::pair<Expr, int64_t>> live;
        for (auto &term : terms)
            if (term.second != 0) live.push_back(term);
        Tail inner;
        if (t == DType::Int64)
            inner = narrowTail(live, in);
        Expr sum = intImm(c, t);
        if (inner.sum)
            sum = binary(BinaryOp::Add, sum, cast(t, inner.sum));
        auto widened = [&](size_t i) {
            return binary(BinaryOp::Mul, cast(t, live[i].first), intImm(live[i].second, t));
        };
        for (size_t i : inner.apart)
            sum = binary(BinaryOp::Add, sum, widened(i));
        for (size_t i = inner.n; i < live.size(); ++i)
            sum = binary(BinaryOp::Add, sum, widened(i));
        return simplify(sum);
    }
};

class Flatten : public RangeScopedMutator {
  public:
    using RangeScopedMutator::visit;
    explicit Flatten(const Kernel &k) : RangeScopedMutator(k), kernel_(k) {}

    /// A vectorized loop's lane in scope (vectorLanes); every loop's variable, and whether it stays rolled,
    /// in scope (invariantTerms).
    Stmt visit(const std::shared_ptr<const For> &op) override {
        bool program = op->forKind == ForKind::Unrolled && programVectorized(op->numStages);
        bool vector = op->forKind == ForKind::Vectorized || program;
        bool rolled = !vector && op->forKind != ForKind::Unrolled;
        auto ext = constInt(op->extent);
        if (vector)
            lanes_.push_back({op->var, ext ? *ext : 0});
        loops_.push_back(op->var.get());
        if (rolled)
            rolled_.push_back(op->var.get());
        Stmt s = RangeScopedMutator::visit(op);
        if (rolled)
            rolled_.pop_back();
        loops_.pop_back();
        if (vector)
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
    std::vector<const VarNode *> loops_;         ///< every enclosing loop's variable
    std::vector<const VarNode *> rolled_;        ///< those of loops emitted without an unroll pragma
    /// The access being flattened is a vector write: its 64-bit offset takes narrowTail whatever the terms
    /// (other accesses only where no summed term depends on the thread). Measured over the 53 TileLang and
    /// TileKernels libraries whose code the tail changed (session 33, docs/PERFORMANCE.md): NVVM split 16- and
    /// 8-byte stores whose terms were widened apart, never a load (the same LDG.E.128 count in all 53); for
    /// loads and scalar accesses a sum of thread terms only moved registers (mhc_pre_big_fuse 0 -> 12 bytes of
    /// spill, sparse_mla_bwd_preprocess 32 -> 35 registers, engram_gate_bwd 24 -> 84 bytes of spill).
    bool vectorWrite_ = false;

    /// What narrowTail needs of the access being flattened; the thread index is the kernel's, which
    /// narrowTail keeps other accesses' sums free of.
    TailScope scope() const { return {ranges(), vectorWrite_, kernel_.threadIdx.get(), loops_, rolled_}; }

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
        if (idx.size() == 1)
            return fold ? fold->build(idx[0]->dtype, scope()) : idx[0];
        auto build = [&](DType t) {
            if (fold)
                return fold->build(t, scope());
            Expr flat, stride;
            size_t d = idx.size();
            if (t == DType::Int64) {
                // The innermost dimensions of constant strides whose offset fits 32 bits: one sum (narrowTail).
                std::vector<std::pair<Expr, int64_t>> inner;
                int64_t s = 1;
                for (size_t j = idx.size(); j-- > 0;) {
                    inner.push_back({idx[j], s});
                    auto ext = j ? constInt(shape[j]) : std::nullopt;
                    if (!ext || __builtin_mul_overflow(s, *ext, &s))
                        break;
                }
                if (Tail tail = narrowTail(inner, scope()); tail.sum) {
                    flat = cast(t, tail.sum);
                    for (size_t j : tail.apart)
                        flat = binary(
                            BinaryOp::Add, flat,
                            binary(BinaryOp::Mul, cast(t, inner[j].first), intImm(inner[j].second, t)));
                    const size_t n = tail.n;
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
