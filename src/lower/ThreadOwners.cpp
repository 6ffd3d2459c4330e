/// \file
/// Which thread touches each element of a shared buffer in a T.Parallel nest (src/lower/ThreadOwners.h).
#include "ThreadOwners.h"

#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelNest.h"

#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// Bounds of the enumeration: nests and buffers past these are left unknown (a barrier stays).
constexpr int64_t kMaxIterations = 1 << 16, kMaxElements = 1 << 20;

/// The plain loads and stores of shared buffers in a nest body; a shared buffer used any other way (a tile
/// region, an address handed to the device library) is unknown.
struct SharedAccesses : IRVisitor {
    using IRVisitor::visit;
    struct Access {
        const BufferNode *buffer;
        const std::vector<Expr> *indices;
        bool store;
    };
    std::vector<Access> accesses;
    std::set<const BufferNode *> unknown;
    bool innerLoop = false; ///< a loop inside the nest: its variable is not enumerated
    static bool shared(const Buffer &b) { return b && b->scope == Scope::Shared; }
    void visit(const Load &op) override {
        if (shared(op.buffer)) accesses.push_back({op.buffer.get(), &op.indices, false});
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        if (shared(op.buffer)) accesses.push_back({op.buffer.get(), &op.indices, true});
        IRVisitor::visit(op);
    }
    void visitRegion(const Region &r) override {
        if (shared(r.buffer)) unknown.insert(r.buffer.get());
        IRVisitor::visitRegion(r);
    }
    void visit(const For &op) override {
        innerLoop = true;
        IRVisitor::visit(op);
    }
    void visit(const Call &op) override {
        if (!addressesShared(op, unknown)) IRVisitor::visit(op);
    }
};

std::optional<std::vector<int64_t>> constShape(const BufferNode &b) {
    std::vector<int64_t> s;
    int64_t n = 1;
    for (auto &d : b.shape) {
        auto v = constInt(d);
        if (!v || *v < 0 || (n *= std::max<int64_t>(*v, 1)) > kMaxElements) return std::nullopt;
        s.push_back(*v);
    }
    return s;
}

} // namespace

bool addressesShared(const Call &op, std::set<const BufferNode *> &out) {
    if (!lib::is(op, lib::Fn::AddressOf) && op.name.rfind("extern:", 0) != 0) return false;
    struct Addressed : IRVisitor {
        using IRVisitor::visit;
        std::set<const BufferNode *> *out;
        void visit(const Load &l) override {
            if (l.buffer && l.buffer->scope == Scope::Shared) out->insert(l.buffer.get());
            IRVisitor::visit(l);
        }
    } a;
    a.out = &out;
    a.IRVisitor::visit(op);
    return true;
}

int64_t elementAt(const std::vector<Expr> &indices, const std::vector<int64_t> &shape,
                  const std::map<const VarNode *, int64_t> &values) {
    if (indices.size() != shape.size()) return -1;
    int64_t e = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
        auto v = evalInt(indices[d], values);
        if (!v || *v < 0 || *v >= shape[d]) return -1;
        e = e * shape[d] + *v;
    }
    return e;
}

namespace {

using Values = std::map<const VarNode *, int64_t>;

/// The variables the accesses' indices use.
std::set<const VarNode *> indexVars(const std::vector<SharedAccesses::Access> &accesses) {
    struct Vars : IRVisitor {
        using IRVisitor::visit;
        std::set<const VarNode *> vars;
        void visit(const VarNode &v) override { vars.insert(&v); }
    } v;
    for (auto &a : accesses)
        for (auto &i : *a.indices) v.visit(i);
    return v.vars;
}

/// Every assignment of the variables in `free` that `ranges` bounds (small ranges only, at most `limit`
/// assignments in all): the values the accesses may see in any iteration of the loops around them. A
/// variable left out stays unassigned (the buffers it indexes are then unknown); at least one (empty)
/// assignment is returned.
std::vector<Values> assignments(const std::set<const VarNode *> &free, const RangeMap &ranges, int64_t limit) {
    std::vector<Values> out{Values{}};
    for (auto *v : free) {
        auto r = ranges.find(v);
        if (r == ranges.end() || !r->second.lo || !r->second.hi || *r->second.hi < *r->second.lo) continue;
        int64_t n = *r->second.hi - *r->second.lo + 1;
        if (n > limit || static_cast<int64_t>(out.size()) * n > limit) continue;
        std::vector<Values> next;
        for (auto &a : out)
            for (int64_t x = *r->second.lo; x <= *r->second.hi; ++x) {
                next.push_back(a);
                next.back()[v] = x;
            }
        out = std::move(next);
    }
    return out;
}

/// The cache's key for statement `s` whose indices use the variables `free`.
OwnerCache::Key cacheKey(const void *s, const std::set<const VarNode *> &free, const RangeMap &ranges) {
    OwnerCache::Key k{s, {}};
    for (auto *v : free)
        if (auto r = ranges.find(v); r != ranges.end()) k.second.emplace_back(v, r->second);
    return k;
}

/// Owners of the shared buffers that a set of accesses touches, recorded thread by thread.
struct OwnerRecorder {
    const SharedAccesses &acc;
    std::map<const BufferNode *, std::vector<int32_t>> owners[2]; // loads, stores
    std::set<const BufferNode *> unknown = acc.unknown;
    std::map<const BufferNode *, std::vector<int64_t>> shapes;

    explicit OwnerRecorder(const SharedAccesses &a) : acc(a) {
        for (auto &x : acc.accesses)
            if (!shapes.count(x.buffer)) {
                if (auto s = constShape(*x.buffer)) shapes[x.buffer] = *s;
                else unknown.insert(x.buffer);
            }
    }
    /// The accesses thread `t` makes with `values`; `loadsOnly`: its stores are another thread's (copies).
    void touch(int64_t t, const Values &values, bool loadsOnly) {
        for (auto &a : acc.accesses) {
            if (unknown.count(a.buffer) || (a.store && loadsOnly)) continue;
            const std::vector<int64_t> &shape = shapes[a.buffer];
            int64_t el = elementAt(*a.indices, shape, values);
            if (el < 0) {
                unknown.insert(a.buffer);
                continue;
            }
            auto &v = owners[a.store][a.buffer];
            if (v.empty()) {
                int64_t n = 1;
                for (int64_t d : shape) n *= d;
                v.assign(static_cast<size_t>(n), kUntouched);
            }
            int32_t &o = v[static_cast<size_t>(el)];
            o = o == kUntouched || o == t ? static_cast<int32_t>(t) : kSeveral;
        }
    }
    void finish(OwnerMap &loads, OwnerMap &stores) {
        for (int s = 0; s < 2; ++s)
            for (auto &[b, v] : owners[s])
                if (!unknown.count(b)) (s ? stores : loads)[b] = std::make_shared<const std::vector<int32_t>>(std::move(v));
    }
};

} // namespace

bool OwnerCache::Less::operator()(const Key &a, const Key &b) const {
    auto flat = [](const Key &k) {
        std::vector<std::tuple<const VarNode *, bool, int64_t, bool, int64_t>> f;
        for (auto &[v, r] : k.second) f.emplace_back(v, r.lo.has_value(), r.lo.value_or(0), r.hi.has_value(), r.hi.value_or(0));
        return f;
    };
    return a.first != b.first ? std::less<const void *>()(a.first, b.first) : flat(a) < flat(b);
}

void nestOwners(const For &outer, const KernelLayouts &layouts, const RangeMap &ranges, OwnerCache &cache,
                OwnerMap &loads, OwnerMap &stores) {
    auto lit = layouts.loops.find(outer.var.get());
    if (lit == layouts.loops.end()) return;
    const Layout &l = lit->second;
    if ((l.kind != Layout::Distributed && l.kind != Layout::Mma) || l.warpCopies() > 1) return; // copies in several threads
    if (l.elements() > kMaxIterations) return;
    std::vector<const VarNode *> vars;
    const std::vector<const For *> loops = parallelNest(outer, l.shape.size());
    for (const For *f : loops) {
        if (constInt(f->min) != std::optional<int64_t>(0)) return;
        vars.push_back(f->var.get());
    }
    if (vars.size() != l.shape.size()) return;
    SharedAccesses acc;
    acc.visit(loops.back()->body);
    if (acc.innerLoop) return;
    // The loops around the nest (a T.copy into slice `step` of a shared buffer): all their iterations at once.
    std::set<const VarNode *> free = indexVars(acc.accesses);
    for (auto *v : vars) free.erase(v);
    OwnerCache::Key key = cacheKey(&outer, free, ranges);
    if (auto hit = cache.entries.find(key); hit != cache.entries.end()) {
        loads = hit->second.first, stores = hit->second.second;
        return;
    }
    OwnerRecorder rec(acc);
    for (const Values &outerValues : assignments(free, ranges, std::max<int64_t>(1, kMaxIterations / l.elements()))) {
        Values values = outerValues;
        for (int64_t t = 0; t < l.threads; ++t)
            for (int64_t slot = 0; slot < l.slotsPerThread(); ++slot) {
                int64_t e = elementOf(l, t, slot);
                if (e < 0) continue;
                for (size_t d = vars.size(); d-- > 0; e /= l.shape[d]) values[vars[d]] = e % l.shape[d];
                rec.touch(t, values, (t & l.copies) != 0); // copies: the first holder stores
            }
    }
    rec.finish(loads, stores);
    cache.entries[key] = {loads, stores};
}

void threadOwners(const Stmt &s, const VarNode *tx, int64_t threads, const RangeMap &ranges, OwnerCache &cache,
                  OwnerMap &loads, OwnerMap &stores) {
    if (!tx || threads <= 0 || threads > 1024) return;
    struct Loops : SharedAccesses {
        using SharedAccesses::visit;
        RangeMap ranges;
        void visit(const For &op) override {
            addLoopRange(ranges, op); // its bounds see the loops around it
            SharedAccesses::visit(op);
        }
    } acc;
    acc.ranges = ranges;
    acc.visit(s);
    std::set<const VarNode *> free = indexVars(acc.accesses);
    free.erase(tx);
    OwnerCache::Key key = cacheKey(s.get(), free, acc.ranges);
    if (auto hit = cache.entries.find(key); hit != cache.entries.end()) {
        loads = hit->second.first, stores = hit->second.second;
        return;
    }
    OwnerRecorder rec(acc);
    for (const Values &outerValues : assignments(free, acc.ranges, std::max<int64_t>(1, kMaxIterations / threads))) {
        Values values = outerValues;
        for (int64_t t = 0; t < threads; ++t) {
            values[tx] = t;
            rec.touch(t, values, false);
        }
    }
    rec.finish(loads, stores);
    cache.entries[key] = {loads, stores};
}

Owners combineOwners(const Owners &a, const Owners &b) {
    if (!a || !b || a->size() != b->size()) return nullptr;
    if (a == b) return a;
    auto out = std::make_shared<std::vector<int32_t>>(*a);
    for (size_t i = 0; i < out->size(); ++i) {
        int32_t &o = (*out)[i], n = (*b)[i];
        if (n == kUntouched || o == n) continue;
        o = o == kUntouched ? n : kSeveral;
    }
    return out;
}

bool samePrivateOwners(const Owners &a, const Owners &b) {
    if (!a || !b || a->size() != b->size()) return false;
    for (size_t i = 0; i < a->size(); ++i) {
        int32_t x = (*a)[i], y = (*b)[i];
        if (x == kUntouched || y == kUntouched) continue;
        if (x != y || x == kSeveral) return false;
    }
    return true;
}

int64_t wholeWarpsSatisfying(const ir::Expr &cond, bool negate, const ir::VarNode *tx, int64_t threads) {
    if (!tx || threads % 32 || threads > 1024) return 0;
    int64_t count = 0;
    for (int64_t w = 0; w < threads; w += 32) {
        int64_t inWarp = 0;
        for (int64_t t = w; t < w + 32; ++t) {
            auto c = ir::constInt(ir::simplify(substitute(cond, VarMap{{tx, ir::intImm(t, tx->dtype)}})));
            if (!c) return 0;
            inWarp += (*c != 0) != negate;
        }
        if (inWarp != 0 && inWarp != 32) return 0;
        count += inWarp;
    }
    return count > 0 && count < threads ? count : 0;
}

} // namespace tilec::passes
