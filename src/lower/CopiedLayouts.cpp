/// \file
/// Layouts with copies (src/lower/CopiedLayouts.h): chosen by evaluating, for every thread, which elements the
/// uses of a fragment group need there, then the thread bits along which those needs repeat.
#include "CopiedLayouts.h"
#include "ThreadOwners.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ReductionPlan.h"

#include <algorithm>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// Groups larger than this many elements times threads are not evaluated (compile time).
constexpr int64_t kMaxEvaluated = int64_t(1) << 22;

bool pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/// Distributed layout `l` (its group's) over buffer `b`'s own constant shape, the same thread and slot for each
/// row-major element; nullopt when the shapes hold different counts or the vector width does not divide b's rows.
std::optional<Layout> overShape(const Layout &l, const BufferNode *b) {
    std::vector<int64_t> shape;
    for (auto &e : b->shape) {
        auto c = constInt(e);
        if (!c) return std::nullopt;
        shape.push_back(*c);
    }
    if (shape == l.shape) return l;
    Layout v = Layout::distributed(shape, l.threads, l.vec, l.copies);
    if (shape.empty() || shape.back() % l.vec || v.elements() != l.elements()) return std::nullopt;
    return v;
}

/// Calls f(t, slot, values) for every element a thread meets in a nest of layout `l` over `extents` (as many
/// iterations, row-major), with the nest's variables set to its coordinates; false when the sizes differ.
/// How many of `indices`' first entries use none of `vars` (a slice's leading index, `lse[k, i]` in a nest over i).
size_t leadingFree(const std::vector<Expr> &indices, const std::vector<Var> &vars) {
    size_t L = 0;
    for (; L < indices.size(); ++L)
        for (auto &v : vars)
            if (ir::uses(indices[L], v.get())) return L;
    return L;
}

/// `indices` with its first entries the coordinates of `flat` (row-major over `shape`'s first dimensions).
std::vector<Expr> withLeading(std::vector<Expr> indices, size_t L, const std::vector<int64_t> &shape, int64_t flat) {
    for (size_t d = L; d-- > 0; flat /= shape[d]) indices[d] = intImm(flat % shape[d], DType::Int32);
    return indices;
}

template <class F> bool forEachIteration(const Layout &l, const std::vector<Var> &vars, const std::vector<int64_t> &extents, F f) {
    int64_t n = 1;
    for (int64_t e : extents) n *= e;
    if (vars.size() != extents.size() || n != l.elements()) return false;
    std::map<const VarNode *, int64_t> values;
    for (int64_t t = 0; t < l.threads; ++t)
        for (int64_t s = 0; s < l.slotsPerThread(); ++s) {
            int64_t e = elementOf(l, t, s);
            if (e < 0) continue;
            for (size_t d = vars.size(); d-- > 0; e /= extents[d]) values[vars[d].get()] = e % extents[d];
            f(t, s, values);
        }
    return true;
}

/// The distributed layout with copies over `shape` in which every thread holds the elements `need` lists for
/// it (one set per thread), with the widest vector width up to `maxVec` that allows it; nullopt when none
/// holds less than the whole fragment in each thread.
std::optional<Layout> fit(const std::vector<int64_t> &shape, int threads, int maxVec, const std::vector<std::set<int64_t>> &need) {
    int64_t copies = 0;
    for (int b = 0; (1 << b) < threads; ++b) {
        bool same = true;
        for (int t = 0; t < threads && same; ++t) same = need[t] == need[t ^ (1 << b)];
        if (same) copies |= int64_t(1) << b;
    }
    int64_t elements = 1;
    for (int64_t e : shape) elements *= e;
    for (int v = maxVec; v >= 1; v /= 2) {
        if (shape.empty() || shape.back() % v) continue;
        Layout l = Layout::distributed(shape, threads, v, copies);
        if (l.slotsPerThread() >= elements) continue; // no fewer than replicated
        bool ok = true;
        for (int t = 0; t < threads && ok; ++t)
            for (int64_t q : need[t])
                if (slotOf(l, t, q) < 0) {
                    ok = false;
                    break;
                }
        if (ok) return l;
    }
    return std::nullopt;
}

class Chooser {
  public:
    Chooser(const LayoutUses &c, int threads, const std::function<int(const BufferNode *)> &groupOf,
            const std::function<int(int)> &nestGroup)
        : c_(c), threads_(threads), groupOf_(groupOf), nestGroup_(nestGroup) {}

    std::map<int, Layout> run(const std::map<int, CopyGroup> &groups) {
        for (auto &[id, g] : groups) layout_[id] = g.layout;
        if (!pow2(threads_)) return {};
        for (auto &[id, g] : groups)
            if (!g.fixed && g.layout.kind == Layout::Distributed && !g.layout.copies) small(id);
        for (bool changed = true; changed;) {
            changed = false;
            for (auto &[id, g] : groups)
                if (!g.fixed && layout_[id].kind == Layout::Replicated && !chosen_.count(id)) changed |= needed(id, g.maxVec);
        }
        return chosen_;
    }

  private:
    const LayoutUses &c_;
    int threads_;
    const std::function<int(const BufferNode *)> &groupOf_;
    const std::function<int(int)> &nestGroup_;
    std::map<int, Layout> layout_, chosen_;

    /// The layout so far of group `id` (a fragment's or a nest's), or null.
    const Layout *layoutOf(int id) const {
        auto it = layout_.find(id);
        return it == layout_.end() ? nullptr : &it->second;
    }

    /// Whether the nests of group `id` may run each iteration in several threads: none reads shared or global
    /// memory it also stores (a copy's read would race with the first holder's store) or hands an address of
    /// it to a call (which every copy would make).
    bool nestsAllowCopies(int id) const {
        for (size_t n = 0; n < c_.nests.size(); ++n) {
            if (nestGroup_((int)n) != id) continue;
            if (c_.nests[n].passesAddress) return false;
            for (auto &[b, loc] : c_.nests[n].memReads)
                if (c_.nests[n].memWrites.count(b)) return false;
        }
        return true;
    }

    /// A group of fewer vectors than threads, linked to others only exactly: over as many virtual threads.
    void small(int id) {
        const Layout &l = layout_[id];
        const int64_t vectors = l.elements() / l.vec;
        if (l.elements() % l.vec || !pow2(vectors) || vectors >= threads_ || !nestsAllowCopies(id)) return;
        bool reduced = false; // only groups with reductions gain: they stay inside a warp
        for (auto &u : c_.uses) {
            bool mine = groupOf_(u.buffer) == id, inMine = u.nest >= 0 && nestGroup_(u.nest) == id;
            if (mine && !u.exact && !u.reduceDst) return; // read elsewhere by another index
            const Layout *other = layoutOf(groupOf_(u.buffer));
            if (inMine && !mine && !u.exact && (!other || other->kind != Layout::Replicated)) return;
            reduced |= (mine && u.reduceDst) || (u.reduceDst && groupOf_(u.reduceSrc) == id);
        }
        if (!reduced) return;
        Layout nl = Layout::distributed(l.shape, threads_, l.vec, (threads_ - 1) & ~(vectors - 1));
        layout_[id] = chosen_[id] = nl;
    }

    /// A replicated group: the layout holding, in each thread, what the other nests read or store of it there
    /// and what its reductions leave there.
    bool needed(int id, int maxVec) {
        std::vector<std::set<int64_t>> need(threads_);
        bool any = false, written = false;
        for (auto &u : c_.uses) {
            if (groupOf_(u.buffer) != id) continue;
            if (u.reduceDst) {
                const Layout *src = u.reduceSrc ? layoutOf(groupOf_(u.reduceSrc)) : nullptr;
                if (src && src->kind == Layout::Replicated) continue; // computed whole in every thread: any layout serves
                if (!src || src->kind != Layout::Distributed) return false;
                // The reduced dimension is one of the source's own shape, which may be a view of its group's
                // (T.reshape(x, (m, groups, 128)) of an (m, groups * 128) fragment): the same threads and slots.
                auto sl = overShape(*src, u.reduceSrc);
                if (!sl || sl->elements() * threads_ > kMaxEvaluated) return false;
                reduction::Reducer red(*sl, u.reduceDim);
                for (int64_t t = 0; t < threads_; ++t)
                    for (int64_t s = 0; s < sl->slotsPerThread(); ++s)
                        if (int64_t e = elementOf(*sl, t, s); e >= 0) need[t].insert(red.outIndex(e));
                any = true;
                continue;
            }
            if (u.nest < 0) return false; // an element outside any nest
            if (nestGroup_(u.nest) == id) {
                if (!u.exact) return false;
                continue;
            }
            const Layout *nlp = layoutOf(nestGroup_(u.nest));
            written |= u.write;
            if (!nlp || nlp->kind != Layout::Distributed || nlp->elements() * threads_ > kMaxEvaluated) return false;
            const Layout &nl = *nlp;
            const std::vector<int64_t> &fs = layout_[id].shape;
            // A slice's leading index is known only at run time: the nest reads every slice there.
            const size_t L = u.sliceElements ? std::min(leadingFree(u.indices, c_.nests[u.nest].vars), fs.size()) : 0;
            int64_t slices = 1;
            for (size_t d = 0; d < L; ++d) slices *= fs[d];
            if (slices * nl.elements() * threads_ > kMaxEvaluated) return false;
            bool ok = true;
            for (int64_t k = 0; k < slices && ok; ++k) {
                auto idx = withLeading(u.indices, L, fs, k);
                ok &= forEachIteration(nl, c_.nests[u.nest].vars, c_.nests[u.nest].extents, [&](int64_t t, int64_t, const auto &values) {
                    int64_t q = elementAt(idx, fs, values);
                    if (q < 0) ok = false;
                    else need[t].insert(q);
                });
            }
            if (!ok) return false;
            any = true;
        }
        if (!any || !nestsAllowCopies(id)) return false;
        auto l = fit(layout_[id].shape, threads_, maxVec, need);
        // A store from another nest reaches only the thread that runs its iteration: every element it stores
        // must have that one holder (no copies, which would go stale), which fit's layout gives each thread's
        // needs only when no two threads store one element.
        if (!l || (written && l->copies)) return false;
        if (!readsServed(id, *l)) return false;
        layout_[id] = chosen_[id] = *l;
        return true;
    }

    /// Whether, with group `id` in layout `l`, every thread of its nests holds what they read of fragments of
    /// other distributed groups by an index other than the nest's own.
    bool readsServed(int id, const Layout &l) const {
        for (auto &u : c_.uses) {
            if (u.nest < 0 || nestGroup_(u.nest) != id || u.exact || u.reduceDst) continue;
            const Layout *f = layoutOf(groupOf_(u.buffer));
            if (!f || f->kind == Layout::Replicated) continue;
            const Nest &n = c_.nests[u.nest];
            Layout nl = Layout::distributed(n.extents, l.threads, l.vec, l.copies);
            Layout fl = *f;
            fl.shape.clear();
            for (auto &e : u.buffer->shape) fl.shape.push_back(constInt(e).value_or(0));
            if (fl.elements() != f->elements() || nl.elements() != l.elements() || n.extents.back() % l.vec ||
                !projectedSlots(fl, nl, u.indices, n.vars))
                return false;
        }
        return true;
    }
};

} // namespace

int64_t slotOf(const Layout &l, int64_t t, int64_t q) {
    if (q < 0 || q >= l.elements()) return -1;
    if (l.kind == Layout::Replicated) return q;
    if (l.kind != Layout::Distributed) return -1;
    const int64_t V = l.vec, T = l.vthreads();
    if ((q / V) % T != virtualThreadOf(l, t)) return -1;
    return (q / (V * T)) * V + q % V;
}

std::map<int, Layout> chooseCopiedLayouts(const LayoutUses &c, int threads, const std::map<int, CopyGroup> &groups,
                                          const std::function<int(const BufferNode *)> &groupOf,
                                          const std::function<int(int)> &nestGroup) {
    return Chooser(c, threads, groupOf, nestGroup).run(groups);
}

std::optional<std::vector<int64_t>> projectedSlots(const Layout &frag, const Layout &nest, const std::vector<Expr> &indices,
                                                   const std::vector<Var> &vars) {
    if (nest.kind != Layout::Distributed || nest.elements() * nest.threads > kMaxEvaluated) return std::nullopt;
    std::vector<int64_t> table(nest.slotsPerThread(), -1);
    bool ok = true;
    ok &= forEachIteration(nest, vars, nest.shape, [&](int64_t t, int64_t s, const auto &values) {
        int64_t slot = ok ? slotOf(frag, t, elementAt(indices, frag.shape, values)) : -1;
        if (slot < 0) ok = false;
        else if (table[s] == -1) table[s] = slot;
        else if (table[s] != slot) table[s] = -2; // threads differ
    });
    if (!ok) return std::nullopt;
    return table;
}

std::optional<Expr> copiedSlot(const Layout &frag, const Layout &nest, const std::vector<Expr> &indices,
                               const std::vector<Var> &vars, const Var &round, const Var &lane) {
    // A slice at a run-time leading index (`lse[k, i]`): slices of whole rounds of the fragment's layout sit
    // P / T' slots apart in every thread (P a slice's elements), so the slot is slice 0's plus k * P / T'.
    if (size_t L = std::min(leadingFree(indices, vars), frag.shape.size()); L > 0 && L < indices.size() &&
                                                                           frag.kind == Layout::Distributed) {
        bool constant = true;
        for (size_t d = 0; d < L; ++d) constant &= constInt(indices[d]).has_value();
        int64_t P = 1;
        for (size_t d = L; d < frag.shape.size(); ++d) P *= frag.shape[d];
        if (!constant && P % ((int64_t)frag.vec * frag.vthreads()) == 0) {
            auto base = copiedSlot(frag, nest, withLeading(indices, L, frag.shape, 0), vars, round, lane);
            if (!base) return std::nullopt;
            std::vector<Expr> lead(indices.begin(), indices.begin() + (long)L);
            std::vector<int64_t> leadShape(frag.shape.begin(), frag.shape.begin() + (long)L);
            Expr step = binary(BinaryOp::Mul, flattenCoords(lead, leadShape), intImm(P / frag.vthreads(), DType::Int32));
            return simplify(binary(BinaryOp::Add, *base, step));
        }
    }
    auto table = projectedSlots(frag, nest, indices, vars);
    if (!table) return std::nullopt;
    const int64_t V = nest.vec, S = (int64_t)table->size();
    auto at = [&](int64_t s) { return s < S && (*table)[s] >= 0 ? (*table)[s] : -1; };
    // slot = a*round + b*lane + c wherever the nest meets an element (the same in every thread).
    int64_t c = at(0), b = V > 1 && at(1) >= 0 ? at(1) - c : 0, a = S > V && at(V) >= 0 ? at(V) - c : 0;
    bool affine = c >= 0 && std::find(table->begin(), table->end(), -2) == table->end();
    for (int64_t s = 0; s < S && affine; ++s) affine = at(s) < 0 || at(s) == a * (s / V) + b * (s % V) + c;
    auto i32 = [](int64_t v) { return intImm(v, DType::Int32); };
    if (affine) {
        Expr e = i32(c);
        if (a) e = binary(BinaryOp::Add, e, binary(BinaryOp::Mul, round, i32(a)));
        if (b) e = binary(BinaryOp::Add, e, binary(BinaryOp::Mul, lane, i32(b)));
        return simplify(e);
    }
    if (frag.kind == Layout::Replicated) return flattenCoords(indices, frag.shape);
    const int64_t FV = frag.vec, FT = frag.vthreads();
    Expr q = flattenCoords(indices, frag.shape);
    return simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, binary(BinaryOp::FloorDiv, q, i32(FV * FT)), i32(FV)),
                           binary(BinaryOp::FloorMod, q, i32(FV))));
}

} // namespace tilec::passes
