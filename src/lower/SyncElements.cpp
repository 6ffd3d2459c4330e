/// \file
/// Element-level alias analysis of per-thread shared-memory accesses (src/lower/SyncElements.h).
#include "SyncElements.h"

#include "ThreadOwners.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"

#include <cstdlib>
#include <tuple>

namespace tilec::passes::syncs {

using namespace ir;

namespace {

/// Bounds of the analysis: more sites than these for one buffer are left unknown (a barrier stays).
constexpr size_t kMaxSitesPerStatement = 32, kMaxPendingSites = 64;

using SiteList = std::vector<std::shared_ptr<const Site>>;

/// The variables an expression uses.
struct VarsOf : IRVisitor {
    using IRVisitor::visit;
    std::set<const VarNode *> vars;
    bool impure = false; ///< it loads memory or calls a function: its value may change between two evaluations
    void visit(const VarNode &v) override { vars.insert(&v); }
    void visit(const Load &l) override {
        impure = true;
        IRVisitor::visit(l);
    }
    void visit(const Call &c) override {
        impure = true;
        IRVisitor::visit(c);
    }
};

/// The plain loads and stores of shared buffers in a per-thread statement, with the ranges of the loops
/// around each; a shared buffer used any other way (a tile region, an address handed to a function) is unknown.
struct SiteCollector : IRVisitor {
    using IRVisitor::visit;
    RangeMap ranges;
    std::map<const BufferNode *, SiteList> sites[2]; // loads, stores
    std::set<const BufferNode *> unknown;
    static bool shared(const Buffer &b) { return b && b->scope == Scope::Shared; }
    void add(const Buffer &b, const std::vector<Expr> &indices, bool store) {
        if (!shared(b)) return;
        auto site = std::make_shared<Site>();
        site->indices = indices;
        VarsOf v;
        for (auto &i : indices) v.visit(i);
        for (auto *x : v.vars)
            if (auto r = ranges.find(x); r != ranges.end()) site->ranges.emplace(x, r->second);
        sites[store][b.get()].push_back(std::move(site));
    }
    void visit(const Load &op) override {
        add(op.buffer, op.indices, false);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        add(op.buffer, op.indices, true);
        IRVisitor::visit(op);
    }
    void visitRegion(const Region &r) override {
        if (shared(r.buffer)) unknown.insert(r.buffer.get());
        IRVisitor::visitRegion(r);
    }
    void visit(const For &op) override {
        RangeMap outer = ranges;
        addLoopRange(ranges, op); // its bounds see the loops around it
        IRVisitor::visit(op);
        ranges = std::move(outer);
    }
    void visit(const Call &op) override {
        if (!addressesShared(op, unknown)) IRVisitor::visit(op);
    }
};

/// An index as a sum of variables and opaque terms times constants, plus a constant. Each variable and term is
/// keyed by the side it belongs to (0: the same value on both sides of a comparison; 1 or 2: its own side's).
struct Affine {
    std::map<std::pair<const VarNode *, int>, __int128> vars;
    std::vector<std::tuple<Expr, int, __int128>> atoms;
    __int128 constant = 0;
};

/// The two sites compared and which variables they share.
struct Pair {
    const Site *side[3];
    const ElementContext &cx;
    bool sharedVar(const VarNode *v) const {
        return v != cx.tx && cx.uniformVar(v) && !side[1]->stale.count(v) && !side[2]->stale.count(v);
    }
    /// Whether `e` has the same value on both sides: no load or call, only shared variables.
    bool sharedExpr(const Expr &e) const {
        VarsOf v;
        v.visit(e);
        if (v.impure) return false;
        for (auto *x : v.vars)
            if (!sharedVar(x)) return false;
        return true;
    }
    /// `e * k` of side `s` added to `a`. Sums and products by constants of signed integers are taken apart
    /// (their arithmetic does not wrap in valid indices); anything else is an opaque term.
    void linearize(const Expr &e, __int128 k, int s, Affine &a, int depth = 0) const {
        auto b = e->dtype.isSigned() ? as<Binary>(e) : nullptr;
        auto c = as<Cast>(e);
        auto ka = b ? as<IntImm>(b->a) : nullptr, kb = b ? as<IntImm>(b->b) : nullptr;
        const __int128 kMax = __int128(1) << 62;
        if (auto i = as<IntImm>(e)) {
            a.constant += k * i->value;
        } else if (auto v = as<VarNode>(e)) {
            a.vars[{v, sharedVar(v) ? 0 : s}] += k;
        } else if (depth > 64) {
            a.atoms.emplace_back(e, sharedExpr(e) ? 0 : s, k);
        } else if (c && preservesValue(c->dtype, c->value->dtype)) {
            linearize(c->value, k, s, a, depth + 1);
        } else if (b && (b->op == BinaryOp::Add || b->op == BinaryOp::Sub)) {
            linearize(b->a, k, s, a, depth + 1);
            linearize(b->b, b->op == BinaryOp::Sub ? -k : k, s, a, depth + 1);
        } else if (b && b->op == BinaryOp::Mul && (ka || kb) && std::llabs((ka ? ka : kb)->value) <= (int64_t(1) << 32) &&
                   (k < 0 ? -k : k) * std::llabs((ka ? ka : kb)->value) <= kMax) {
            linearize(ka ? b->b : b->a, k * (ka ? ka : kb)->value, s, a, depth + 1);
        } else {
            a.atoms.emplace_back(e, sharedExpr(e) ? 0 : s, k);
        }
    }
    /// An integer cast that keeps every value of its operand.
    static bool preservesValue(DType to, DType from) {
        if (!to.isInt() || !from.isInt()) return false;
        if (to.isSigned() == from.isSigned()) return to.bits() >= from.bits();
        return to.isSigned() && to.bits() > from.bits();
    }
    /// The ranges of side `s`'s variables: those recorded with its site over the ones in scope now.
    RangeMap rangesOf(int s) const {
        RangeMap r = *cx.ranges;
        if (s)
            for (auto &[v, i] : side[s]->ranges) r[v] = i;
        return r;
    }
};

/// A closed interval of 128-bit values; a missing end is unbounded.
struct Wide {
    std::optional<__int128> lo = 0, hi = 0;
    void add(const Interval &i, __int128 k) {
        const std::optional<int64_t> &low = k < 0 ? i.hi : i.lo, &high = k < 0 ? i.lo : i.hi;
        lo = lo && low ? std::optional<__int128>(*lo + k * *low) : std::nullopt;
        hi = hi && high ? std::optional<__int128>(*hi + k * *high) : std::nullopt;
        const __int128 kLimit = __int128(1) << 126; // past this, sums could overflow: unbounded
        if (lo && (*lo > kLimit || *lo < -kLimit)) lo.reset();
        if (hi && (*hi > kLimit || *hi < -kLimit)) hi.reset();
    }
};

__int128 gcd128(__int128 a, __int128 b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) a %= b, std::swap(a, b);
    return a;
}

/// Is `x` `y ^ k` (k a non-zero constant) with y the same value on both sides as `other`? Then x != other.
bool toggled(const Expr &x, const Expr &other, const Pair &p) {
    auto b = as<Binary>(x);
    if (!b || b->op != BinaryOp::BitXor) return false;
    for (auto [k, y] : {std::pair{b->b, b->a}, std::pair{b->a, b->b}})
        if (auto c = constInt(k); c && *c != 0 && provablyEqual(y, other) && p.sharedExpr(y)) return true;
    return false;
}

/// Whether index `a` (side 1) and `c` (side 2) are never equal, or equal only when both sides are one thread.
bool dimensionSeparates(const Expr &a, const Expr &c, const Pair &p) {
    if (toggled(a, c, p) || toggled(c, a, p)) return true;
    Affine d;
    p.linearize(a, 1, 1, d);
    p.linearize(c, -1, 2, d);
    // Terms the same on both sides cancel.
    for (size_t i = 0; i < d.atoms.size(); ++i)
        for (size_t j = i + 1; j < d.atoms.size(); ++j) {
            auto &[x, sx, kx] = d.atoms[i];
            auto &[y, sy, ky] = d.atoms[j];
            if (sx == 0 && sy == 0 && kx + ky == 0 && kx != 0 && provablyEqual(x, y)) kx = ky = 0;
        }
    RangeMap ranges[3] = {p.rangesOf(0), p.rangesOf(1), p.rangesOf(2)};
    __int128 txCoef[3] = {0, 0, 0};
    Wide rest, all; // the terms but those in the thread index, and all terms
    rest.lo = rest.hi = all.lo = all.hi = d.constant;
    __int128 g = 0; // the gcd of every term's known multiple
    auto term = [&](const Interval &i, __int128 k, __int128 multiple, bool thread) {
        all.add(i, k);
        if (!thread) rest.add(i, k);
        g = gcd128(g, k * multiple);
    };
    for (auto &[key, k] : d.vars) {
        if (k == 0) continue;
        auto r = ranges[key.second].find(key.first);
        bool thread = key.first == p.cx.tx && key.second;
        if (thread) txCoef[key.second] = k;
        term(r == ranges[key.second].end() ? Interval{} : r->second, k, 1, thread);
    }
    for (auto &[x, s, k] : d.atoms)
        if (k != 0) term(boundsOf(x, ranges[s]), k, knownMultiple(x), false);
    // Never equal: the difference's range excludes 0, or every value is a multiple of g plus a constant that
    // is not.
    if ((all.lo && *all.lo > 0) || (all.hi && *all.hi < 0) || (g > 1 && d.constant % g != 0)) return true;
    // K * tx1 - K * tx2 + rest == 0 with |rest| < |K|: only when tx1 == tx2.
    __int128 k = txCoef[1] < 0 ? -txCoef[1] : txCoef[1];
    return k != 0 && txCoef[1] == -txCoef[2] && rest.lo && rest.hi && *rest.lo > -k && *rest.hi < k;
}

} // namespace

void recordSites(const Stmt &s, const RangeMap &ranges, SiteMap &loads, SiteMap &stores) {
    SiteCollector c;
    c.ranges = ranges;
    c.visit(s);
    std::set<const VarNode *> inner = loopVars(s);
    for (int st = 0; st < 2; ++st)
        for (auto &[b, list] : c.sites[st]) {
            if (c.unknown.count(b) || list.size() > kMaxSitesPerStatement) continue;
            auto out = std::make_shared<SiteList>();
            for (auto &site : list) {
                auto copy = std::make_shared<Site>(*site);
                copy->stale = inner; // the variables of loops inside the statement: any of their values
                out->push_back(std::move(copy));
            }
            (st ? stores : loads)[b] = std::move(out);
        }
}

void mergeSites(bool mineHas, SiteMap &mine, const void *buffer, const SiteMap &theirs) {
    auto ot = theirs.find(buffer);
    auto mt = mine.find(buffer);
    if (ot == theirs.end()) {
        mine.erase(buffer);
    } else if (!mineHas) {
        mine[buffer] = ot->second;
    } else if (mt != mine.end() && mt->second != ot->second) {
        if (mt->second->size() + ot->second->size() > kMaxPendingSites) return (void)mine.erase(mt);
        auto both = std::make_shared<SiteList>(*mt->second);
        both->insert(both->end(), ot->second->begin(), ot->second->end());
        mt->second = std::move(both);
    }
}

void forgetVars(SiteMap &sites, const std::set<const VarNode *> &vars) {
    if (vars.empty()) return;
    for (auto &[b, list] : sites) {
        std::shared_ptr<SiteList> out;
        for (size_t i = 0; i < list->size(); ++i) {
            const Site &site = *(*list)[i];
            bool uses = false;
            for (auto *v : vars)
                for (auto &e : site.indices) uses |= !site.stale.count(v) && ir::uses(e, v);
            if (!uses) continue;
            if (!out) out = std::make_shared<SiteList>(*list);
            auto copy = std::make_shared<Site>(site);
            copy->stale.insert(vars.begin(), vars.end());
            (*out)[i] = std::move(copy);
        }
        if (out) list = std::move(out);
    }
}

std::set<const VarNode *> loopVars(const Stmt &s) {
    struct Loops : IRVisitor {
        using IRVisitor::visit;
        std::set<const VarNode *> vars;
        void visit(const For &op) override {
            vars.insert(op.var.get());
            IRVisitor::visit(op);
        }
    } l;
    l.visit(s);
    return l.vars;
}

bool sitesThreadPrivate(const Sites &earlier, const Sites &later, const ElementContext &cx) {
    if (!earlier || !later || !cx.tx || !cx.ranges) return false;
    for (auto &a : *earlier)
        for (auto &c : *later) {
            if (a->indices.size() != c->indices.size()) return false;
            Pair p{{nullptr, a.get(), c.get()}, cx};
            bool separated = false;
            for (size_t d = 0; d < a->indices.size() && !separated; ++d)
                separated = dimensionSeparates(a->indices[d], c->indices[d], p);
            if (!separated) return false;
        }
    return true;
}

} // namespace tilec::passes::syncs
