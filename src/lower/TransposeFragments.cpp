/// \file
/// Fragments reached through a permutation of a T.Parallel nest's variables (include/tilec/passes/TransposeFragments.h).
#include "tilec/passes/TransposeFragments.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelNest.h"
#include "tilec/passes/HoistStagedCopies.h"
#include "tilec/passes/InferLayouts.h"
#include "tilec/passes/Layout.h"
#include "FlatIndexViews.h"
#include "LayoutUses.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace tilec::passes {

using namespace ir;

namespace {

/// One fragment access in a nest's body.
struct Access {
    Buffer buffer;
    std::vector<Expr> indices;
    bool store = false;
};

std::vector<Access> fragmentAccesses(const Stmt &body) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        std::vector<Access> out;
        void visit(const Load &op) override {
            if (op.buffer && op.buffer->scope == Scope::Fragment) out.push_back({op.buffer, op.indices, false});
            IRVisitor::visit(op);
        }
        void visit(const Store &op) override {
            if (op.buffer && op.buffer->scope == Scope::Fragment) out.push_back({op.buffer, op.indices, true});
            IRVisitor::visit(op);
        }
    } v;
    v.visit(body);
    return v.out;
}

/// p with indices[d] == vars[p[d]] for every d, each variable once, over the fragment's whole shape; else none.
std::optional<std::vector<size_t>> permutationOf(const Access &a, const std::vector<Var> &vars,
                                                 const std::vector<int64_t> &extents) {
    if (a.indices.size() != vars.size() || a.buffer->shape.size() != vars.size()) return std::nullopt;
    std::vector<size_t> p;
    std::set<size_t> seen;
    for (size_t d = 0; d < a.indices.size(); ++d) {
        size_t j = 0;
        while (j < vars.size() && a.indices[d] != Expr(vars[j])) ++j;
        if (j == vars.size() || !seen.insert(j).second ||
            constInt(a.buffer->shape[d]) != std::optional<int64_t>(extents[j]))
            return std::nullopt;
        p.push_back(j);
    }
    return p;
}

bool identity(const std::vector<size_t> &p) {
    for (size_t d = 0; d < p.size(); ++d)
        if (p[d] != d) return false;
    return true;
}

/// The loops over [0, n) (serial, unrolled or vectorized) inside a nest's body: variable -> n.
std::map<const VarNode *, int64_t> innerLoops(const Stmt &body) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        std::map<const VarNode *, int64_t> out;
        void visit(const For &op) override {
            auto e = constInt(op.extent);
            if (op.forKind != ForKind::Parallel && e && constInt(op.min) == std::optional<int64_t>(0)) out[op.var.get()] = *e;
            IRVisitor::visit(op);
        }
    } v;
    v.visit(body);
    return v.out;
}

/// Whether load `a` in a nest over `vars` is an expansion (LayoutUses.h, expandFactor) that layout inference can
/// keep in the reading thread by widening the fragment's vector width to S (`loc[j] = f[y * 8 + j]`): S a power of
/// two up to 16.
bool widenableExpansion(const Access &a, const std::vector<Var> &vars, const std::vector<int64_t> &extents,
                        const std::map<const VarNode *, int64_t> &inner) {
    if (a.store) return false;
    Nest n;
    n.vars = vars, n.extents = extents;
    const int64_t S = expandFactor(a.indices, n, *a.buffer, inner);
    return S > 1 && S <= 16 && (S & (S - 1)) == 0;
}

/// Whether a load of a fragment in a nest over `vars` reads an element that the nest's layout cannot place in the
/// reading thread, so that layout inference would have to hold the fragment whole in every thread: any index but
/// the forms it spreads (LayoutUses.h: exact, a per-row value, a broadcast along trailing variables, a packed
/// `j // S` unless the nest takes a tensor-core layout (`tensorCores`), and slices of whole rounds of `threads`).
bool crossesThreads(const Access &a, const std::vector<Var> &vars, const std::vector<int64_t> &extents, int threads,
                    bool tensorCores) {
    const auto &idx = a.indices;
    const size_t r = idx.size(), nv = vars.size();
    if (r != a.buffer->shape.size()) return true;
    auto is = [&](size_t d, size_t v) {
        return idx[d] == Expr(vars[v]) && constInt(a.buffer->shape[d]) == std::optional<int64_t>(extents[v]);
    };
    size_t prefix = 0;
    while (prefix < r && prefix < nv && is(prefix, prefix)) ++prefix;
    if (prefix == r) return false;                           // exact, per-row, broadcast
    if (r == 1 && idx[0] == Expr(vars[0])) return false;     // per-row value
    if (r == nv && prefix + 1 == r && !tensorCores) {        // packed `B[i, j // S]`, S within one vector of the
        auto q = as<Binary>(idx[r - 1]);                     // nest (inferLayouts' broadcast: at most 16 lanes)
        auto S = q ? constInt(q->b) : std::nullopt;
        if (q && q->op == BinaryOp::FloorDiv && q->a == Expr(vars[nv - 1]) && S && *S <= 16) return false;
    }
    size_t k = 0;                                            // a slice: free leading indices, trailing variables
    while (k < nv && k < r && is(r - 1 - k, nv - 1 - k)) ++k;
    if (k == 0) return true;
    for (size_t d = 0; d < r - k; ++d)
        for (auto &v : vars)
            if (ir::uses(idx[d], v.get())) return true;
    int64_t p = 1;
    for (size_t v = nv - k; v < nv; ++v) p *= extents[v];
    return p % threads != 0;
}

/// A store into a box of the fragment at a constant corner (`f[i, j + 4]` over a (32, 24) fragment inside
/// `for i, j in T.Parallel(32, 4)`, DeepSeek's mHC split-mixes backward filling a row in three parts): each index
/// is its nest variable plus a constant, the box inside the shape, and not the whole shape. No layout of the
/// nest's own shape places those elements in the storing thread.
bool subBoxStore(const Access &a, const std::vector<Var> &vars, const std::vector<int64_t> &extents) {
    if (!a.store || a.indices.size() != vars.size() || a.buffer->shape.size() != vars.size()) return false;
    bool whole = true;
    for (size_t d = 0; d < vars.size(); ++d) {
        const Expr &i = a.indices[d];
        int64_t c = 0;
        if (i != Expr(vars[d])) {
            auto b = as<Binary>(i);
            if (!b || b->op != BinaryOp::Add) return false;
            auto k = b->a == Expr(vars[d]) ? constInt(b->b) : b->b == Expr(vars[d]) ? constInt(b->a) : std::nullopt;
            if (!k || *k < 0) return false;
            c = *k;
        }
        auto n = constInt(a.buffer->shape[d]);
        if (!n || c + extents[d] > *n) return false;
        whole = whole && c == 0 && extents[d] == *n;
    }
    return !whole;
}

int64_t elements(const BufferNode &b) {
    int64_t n = 1;
    for (auto &e : b.shape) n *= constInt(e).value_or(kMaxReplicatedElements + 1);
    return n;
}

class Transposer : public IRMutator {
  public:
    using IRMutator::visit;
    Transposer(const Kernel &k, bool widen) : threads_(k.threads), widen_(widen) {
        for (auto &[view, base] : k.fragmentViews) viewed_.insert(base.get()), viewed_.insert(view.get());
        struct G : IRVisitor {
            using IRVisitor::visit;
            std::set<const BufferNode *> *out;
            std::vector<const Gemm *> gemms;
            void visit(const Gemm &op) override {
                gemms.push_back(&op);
                for (auto *r : {&op.a, &op.c})
                    if (r->buffer && r->buffer->scope == Scope::Fragment) out->insert(r->buffer.get());
            }
        } g;
        g.out = &gemmFragments_;
        g.visit(k.body);
        gemms_ = std::move(g.gemms);
        tieToGemms(k.body);
    }

    std::vector<Buffer> newAllocs;
    std::vector<std::pair<Buffer, Buffer>> newViews; ///< (view, fragment): Kernel::fragmentViews
    std::vector<StagedCopy> stagedCopies;             ///< the copies into shared buffers made before nests
    int widenedReads = 0; ///< expansion reads left to layout inference (widenableExpansion) instead of staged

    /// `T.gemm(a, b, c, transpose_A=True)` with `a` a whole (K, M) fragment: tensor cores read A's registers as
    /// (M, K) rows, so the product reads a fragment `a_t[m, k] = a[k, m]` that a nest fills first (a permuted read
    /// of `a`, staged through shared memory below when `a` cannot be held whole by every thread).
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        const Buffer &a = op->a.buffer;
        if (!op->transA || !a || a->scope != Scope::Fragment || a->shape.size() != 2) return op;
        for (size_t d = 0; d < 2; ++d)
            if (constInt(op->a.ranges[d].min) != std::optional<int64_t>(0) || !constInt(a->shape[d]) ||
                constInt(op->a.ranges[d].extent) != constInt(a->shape[d]))
                return op; // inferLayouts reports a part of a fragment as operand A
        const SourceRange &loc = op->a.loc.valid() ? op->a.loc : op->loc;
        Buffer t = makeBuffer(a->name + "_t", Scope::Fragment, a->dtype, {a->shape[1], a->shape[0]}, loc);
        newAllocs.push_back(t);
        mmaTied_.insert(t.get()); // the product's operand now: its fill nest runs in its order (tiedPermutation)
        Var m = makeVar("m", DType::Int32, loc), k = makeVar("k", DType::Int32, loc);
        Stmt fill = Store::make(t, {m, k}, Load::make(a, {k, m}, loc), loc);
        fill = For::make(k, intImm(0, DType::Int32), a->shape[0], ForKind::Parallel, 0, fill, loc);
        fill = For::make(m, intImm(0, DType::Int32), a->shape[1], ForKind::Parallel, 0, fill, loc);
        Stmt product = Gemm::make(Region::whole(t, op->a.loc), op->b, op->c, false, op->transB, op->clearAccum, op->policy,
                                  op->loc, op->instr);
        return Seq::make({mutate(fill), product}, op->loc);
    }

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (op->forKind != ForKind::Parallel) return IRMutator::visit(op);
        const std::vector<const For *> loops = parallelNest(*op);
        std::vector<Var> vars;
        std::vector<int64_t> extents;
        for (auto *f : loops) {
            auto e = constInt(f->extent), m = constInt(f->min);
            if (!e || !m || *m != 0) return op; // collectLayoutUses reports it
            vars.push_back(f->var);
            extents.push_back(*e);
        }
        Stmt body = FlatViews(*this, vars, extents).mutate(loops.back()->body);
        auto accesses = fragmentAccesses(body);
        const auto innerExtents = innerLoops(body);
        // 1. No fragment exact: the loops in the order of the first permuted store (else load).
        std::optional<std::vector<size_t>> order;
        bool anyExact = false;
        for (bool stores : {true, false})
            for (auto &a : accesses) {
                auto p = permutationOf(a, vars, extents);
                anyExact |= p && identity(*p);
                if (p && !identity(*p) && a.store == stores && !order) order = p;
            }
        // 1b. A pure permutation nest (every fragment indexed by a permutation of its variables) that reaches a
        //     fragment tied to a T.gemm operand through a permutation, and none exactly: the loops in that
        //     fragment's order, so that the nest runs in the tensor-core layout and the other side is staged.
        //     The tensor-core layouts spread a warp over 8 rows and 4 column groups, whose permuted accesses of a
        //     padded staging tile fall in distinct banks; the layouts of copied tiles put a warp along one row, whose
        //     permuted accesses hit one column of 32 rows (chunk_delta_bwd's `Q_t[k, s] = Q[s, k]`: 16-way
        //     conflicted stores, 73 M conflicts a launch).
        if (auto tied = tiedPermutation(accesses, vars, extents)) order = tied, anyExact = false;
        std::vector<const For *> ordered = loops;
        if (order && !anyExact) {
            for (size_t d = 0; d < loops.size(); ++d) ordered[d] = loops[(*order)[d]];
            vars.clear(), extents.clear();
            for (auto *f : ordered) vars.push_back(f->var), extents.push_back(*constInt(f->extent));
        }
        // A nest indexing exactly a fragment tied to a T.gemm operand takes a tensor-core layout (inferLayouts);
        // `otherOrder`: one that is not in the operand order, which a nest reading by column groups cannot follow.
        bool tensorCores = false, otherOrder = false;
        for (auto &a : accesses)
            if (auto p = permutationOf(a, vars, extents); p && identity(*p) && mmaTied_.count(a.buffer.get()))
                tensorCores = true, otherOrder |= !operandOrder_.count(a.buffer.get());
        // 2. Fragments reached through a permutation, read across threads or stored in a box of their shape
        //    (subBoxStore) that cannot be held whole by every thread: every access of the nest goes to a shared copy, filled before the nest (unless a store at the nest's top level
        //    writes every element) and copied back after it where the nest stores to it.
        std::map<const BufferNode *, Buffer> staged;
        std::vector<Stmt> before, after;
        for (auto &a : accesses) {
            auto p = permutationOf(a, vars, extents);
            bool permuted = p && !identity(*p);
            const bool box = subBoxStore(a, vars, extents);
            // A read of a fragment in the tf32 operand order by 4-column groups stays in the reading lane (MmaLayouts).
            const bool byGroups = !a.store && !otherOrder && operandOrder_.count(a.buffer.get()) &&
                                  colGroupOffset(a.indices, vars, extents, a.buffer->shape).first;
            const bool widened =
                widen_ && !tensorCores && !viewed_.count(a.buffer.get()) && widenableExpansion(a, vars, extents, innerExtents);
            widenedReads += widened;
            const bool moved =
                permuted || (!a.store && !byGroups && !widened && crossesThreads(a, vars, extents, threads_, tensorCores)) || box;
            if (!moved || staged.count(a.buffer.get())) continue;
            // A fragment small enough is held whole in every thread instead, unless a box store comes from a nest
            // that another fragment spreads over the threads (each copy would get only some of the values).
            if (elements(*a.buffer) <= kMaxReplicatedElements && !gemmFragments_.count(a.buffer.get()) && !(box && anyExact))
                continue;
            Buffer s = makeBuffer(a.buffer->name + "_staged", Scope::Shared, a.buffer->dtype, paddedRows(*a.buffer), a.buffer->loc);
            newAllocs.push_back(s);
            staged[a.buffer.get()] = s;
            bool stored = false, read = false, boxed = false; // boxed: a store covers only part of the shape
            for (auto &b : accesses)
                if (b.buffer == a.buffer) (b.store ? stored : read) = true, boxed |= subBoxStore(b, vars, extents);
            if (read || boxed || !storesWhole(body, a.buffer)) {
                before.push_back(copyNest(a.buffer, s, a.buffer->shape, op->loc));
                stagedCopies.push_back({before.back(), a.buffer, s});
            }
            if (stored) after.push_back(copyNest(s, a.buffer, a.buffer->shape, op->loc));
        }
        Stmt inner = body;
        if (!staged.empty()) inner = ToShared(staged).mutate(body);
        if (ordered == loops && inner == loops.back()->body) return op;
        for (size_t d = ordered.size(); d-- > 0;) {
            const For *f = ordered[d];
            inner = For::make(f->var, f->min, f->extent, ForKind::Parallel, f->numStages, inner, f->loc);
        }
        if (before.empty() && after.empty()) return inner;
        before.push_back(inner);
        before.insert(before.end(), after.begin(), after.end());
        return Seq::make(std::move(before), op->loc);
    }

  private:
    /// The permutation of a nest's loops that indexes a fragment tied to a T.gemm operand exactly, where every
    /// fragment access of the nest is a permutation of its variables, one tied fragment is permuted and none is
    /// indexed exactly; else none.
    std::optional<std::vector<size_t>> tiedPermutation(const std::vector<Access> &accesses, const std::vector<Var> &vars,
                                                       const std::vector<int64_t> &extents) const {
        std::optional<std::vector<size_t>> tied;
        for (auto &a : accesses) {
            auto p = permutationOf(a, vars, extents);
            if (!p) return std::nullopt;
            if (!mmaTied_.count(a.buffer.get())) continue;
            if (identity(*p)) return std::nullopt;
            if (!tied) tied = p;
            else if (*tied != *p) return std::nullopt;
        }
        return tied;
    }

    int threads_;
    bool widen_; ///< leave widenable expansion reads to layout inference
    std::set<const BufferNode *> viewed_; ///< fragments with a T.reshape / T.view, and those views
    std::set<const BufferNode *> gemmFragments_;
    /// The fragments inferLayouts gives a tensor-core layout: T.gemm's A and C fragments and those linked to one
    /// through nests that index both exactly (an operand filled by a copy of a dequantized fragment).
    std::set<const BufferNode *> mmaTied_;
    std::vector<const Gemm *> gemms_;
    /// Those linked to a 32-bit A (mma.sync or wgmma) and to no other operand, which take the tf32 operand column order
    /// (MmaLayouts.cpp, operandOrderGroups: the same rule over inferLayouts' groups).
    std::set<const BufferNode *> operandOrder_;

    /// Fills operandOrder_ from the linked sets `exact` (each nest's fragments indexed exactly by its variables).
    void findOperandOrder(const std::vector<std::set<const BufferNode *>> &exact) {
        std::map<const BufferNode *, const BufferNode *> parent; // union-find over the fragments
        std::function<const BufferNode *(const BufferNode *)> find = [&](const BufferNode *b) {
            auto it = parent.find(b);
            return it == parent.end() || it->second == b ? b : (it->second = find(it->second));
        };
        for (auto &bufs : exact)
            for (auto *b : bufs)
                if (find(b) != find(*bufs.begin())) parent[find(b)] = find(*bufs.begin());
        std::set<const BufferNode *> tf32, other;
        for (const Gemm *g : gemms_) {
            if (g->c.buffer) other.insert(find(g->c.buffer.get()));
            const Buffer &a = g->a.buffer;
            if (!a || a->scope != Scope::Fragment) continue;
            const bool ok = a->dtype.bytes() == 4 && a->dtype.isFloat(); // mma.sync and wgmma alike
            (ok ? tf32 : other).insert(find(a.get()));
        }
        for (auto *b : mmaTied_)
            if (tf32.count(find(b)) && !other.count(find(b))) operandOrder_.insert(b);
    }

    /// Fills mmaTied_ from the nests of `body` (each one's fragments indexed exactly by its variables).
    void tieToGemms(const Stmt &body) {
        struct Nests : IRVisitor {
            using IRVisitor::visit;
            std::vector<std::set<const BufferNode *>> exact;
            void visit(const For &op) override {
                if (op.forKind != ForKind::Parallel) return IRVisitor::visit(op);
                std::vector<Var> vars;
                std::vector<int64_t> extents;
                const std::vector<const For *> loops = parallelNest(op);
                for (const For *f : loops) vars.push_back(f->var), extents.push_back(constInt(f->extent).value_or(-1));
                std::set<const BufferNode *> bufs;
                for (auto &a : fragmentAccesses(loops.back()->body))
                    if (auto p = permutationOf(a, vars, extents); p && identity(*p)) bufs.insert(a.buffer.get());
                exact.push_back(std::move(bufs));
            }
        } n;
        n.visit(body);
        mmaTied_ = gemmFragments_;
        for (bool grew = true; grew;) {
            grew = false;
            for (auto &bufs : n.exact)
                if (std::any_of(bufs.begin(), bufs.end(), [&](const BufferNode *b) { return mmaTied_.count(b) > 0; }))
                    for (auto *b : bufs) grew |= mmaTied_.insert(b).second;
        }
        findOperandOrder(n.exact);
    }

    /// The shape of a fragment's shared copy: rows (the last dimension) a multiple of 128 bytes long get 16 bytes
    /// more, so that a column of a row per thread (the nests this pass stages for read across the rows:
    /// `x[i, jj * 4 + j]`, `x[j, i]`) falls in different banks, and 16-byte vectors stay aligned. The padding is
    /// never addressed: the copies and the nest index the fragment's own extents. It is the layout of last
    /// resort: swizzleShared's bank model, which sees both sides' lanes, stores the tile unpadded and swizzled
    /// instead where that takes fewer wavefronts (a transpose storing rows 4 apart, which no padding of 16-byte
    /// multiples spreads).
    static std::vector<Expr> paddedRows(const BufferNode &f) {
        std::vector<Expr> shape = f.shape;
        const int64_t bytes = f.dtype.bits() % 8 == 0 ? f.dtype.bytes() : 0;
        auto last = shape.empty() ? std::nullopt : constInt(shape.back());
        if (shape.size() >= 2 && bytes > 0 && 16 % bytes == 0 && last && *last * bytes % 128 == 0)
            shape.back() = intImm(*last + 16 / bytes, DType::Int32);
        return shape;
    }

    /// `for i... in T.Parallel(shape): dst[i...] = src[i...]`.
    static Stmt copyNest(const Buffer &src, const Buffer &dst, const std::vector<Expr> &shape, const SourceRange &loc) {
        std::vector<Var> vs;
        std::vector<Expr> idx;
        for (size_t d = 0; d < shape.size(); ++d) {
            vs.push_back(makeVar("t" + std::to_string(d), DType::Int32, loc));
            idx.push_back(vs.back());
        }
        Stmt s = Store::make(dst, idx, Load::make(src, idx, loc), loc);
        for (size_t d = vs.size(); d-- > 0;)
            s = For::make(vs[d], intImm(0, DType::Int32), shape[d], ForKind::Parallel, 0, s, loc);
        return s;
    }

    /// Whether `body` stores to `b` unconditionally (a store reached through sequences only): each iteration
    /// writes its element.
    static bool storesWhole(const Stmt &body, const Buffer &b) {
        if (auto st = as<Store>(body)) return st->buffer == b;
        if (auto seq = as<Seq>(body))
            for (auto &s : seq->stmts)
                if (storesWhole(s, b)) return true;
        return false;
    }

    /// A view of `f` in the shape `extents` (one per fragment and shape).
    Buffer viewOf(const Buffer &f, const std::vector<int64_t> &extents) {
        for (auto &[v, base] : newViews) {
            bool same = base == f && v->shape.size() == extents.size();
            for (size_t d = 0; same && d < extents.size(); ++d) same = constInt(v->shape[d]) == std::optional<int64_t>(extents[d]);
            if (same) return v;
        }
        std::vector<Expr> shape;
        for (auto e : extents) shape.push_back(intImm(e, DType::Int32));
        Buffer v = makeBuffer(f->name + "_flat", Scope::Fragment, f->dtype, shape, f->loc);
        newViews.push_back({v, f});
        return v;
    }

    /// Accesses of a fragment at the element the iteration addresses row-major (FlatIndexViews.h) become exact
    /// accesses of a view of it in the nest's shape: the same elements, in the same threads (inferLayouts).
    struct FlatViews : IRMutator {
        using IRMutator::visit;
        Transposer &t;
        const std::vector<Var> &vars;
        const std::vector<int64_t> &extents;
        FlatViews(Transposer &t, const std::vector<Var> &v, const std::vector<int64_t> &e) : t(t), vars(v), extents(e) {}
        std::optional<Buffer> view(const Buffer &b, const std::vector<Expr> &idx) {
            if (!b || b->scope != Scope::Fragment) return std::nullopt;
            std::vector<int64_t> shape;
            for (auto &e : b->shape) {
                auto c = constInt(e);
                if (!c) return std::nullopt;
                shape.push_back(*c);
            }
            if (!flatEquivalent(idx, shape, vars, extents)) return std::nullopt;
            return t.viewOf(b, extents);
        }
        std::vector<Expr> nestIndex() const { return std::vector<Expr>(vars.begin(), vars.end()); }
        Expr visit(const std::shared_ptr<const Load> &op) override {
            if (auto v = view(op->buffer, op->indices)) return Load::make(*v, nestIndex(), op->loc);
            return IRMutator::visit(op);
        }
        Stmt visit(const std::shared_ptr<const Store> &op) override {
            if (auto v = view(op->buffer, op->indices)) return Store::make(*v, nestIndex(), mutate(op->value), op->loc);
            return IRMutator::visit(op);
        }
    };

    /// Every access of a staged fragment goes to its shared copy.
    struct ToShared : IRMutator {
        using IRMutator::visit;
        const std::map<const BufferNode *, Buffer> &staged;
        explicit ToShared(const std::map<const BufferNode *, Buffer> &s) : staged(s) {}
        Buffer mutateBuffer(const Buffer &b) override {
            auto it = b ? staged.find(b.get()) : staged.end();
            return it == staged.end() ? b : it->second;
        }
    };
};

/// Kernel `k` with its fragments staged where nests read them across threads; `widen`: expansion reads left to
/// layout inference. `widened` counts those.
std::shared_ptr<const Kernel> transposed(const std::shared_ptr<const Kernel> &k, bool widen, int &widened) {
    Transposer t(*k, widen);
    Stmt body = t.mutate(k->body);
    widened = t.widenedReads;
    if (body == k->body) return k;
    auto nk = std::make_shared<Kernel>(*k);
    for (auto &b : t.newAllocs) nk->allocs.push_back(b);
    for (auto &v : t.newViews) nk->fragmentViews.push_back(v);
    // A copy in made at every iteration of a loop that does not change its source is made once before it.
    nk->body = hoistStagedCopies(body, t.stagedCopies, nk->fragmentViews);
    return nk;
}

/// Whether layout inference lays kernel `k` out without an error (quietly: the real run reports).
bool laysOut(const Program &p, const std::shared_ptr<const Kernel> &k) {
    Program one = p;
    one.kernels = {k};
    SourceManager sm;
    std::ostringstream quiet;
    DiagnosticEngine diag(sm, quiet);
    inferLayouts(one, diag);
    return diag.errorCount() == 0;
}

} // namespace

Program transposeFragments(const Program &p) {
    Program out = p;
    for (auto &k : out.kernels) {
        if (!k) continue;
        // An expansion read is widened only where layout inference then agrees (another use of the fragment may
        // hold it whole, or cap its vector width): else it is staged as before, never an error instead.
        int widened = 0, none = 0;
        auto nk = transposed(k, true, widened);
        if (widened && !laysOut(p, nk)) nk = transposed(k, false, none);
        k = nk;
    }
    return out;
}

} // namespace tilec::passes
