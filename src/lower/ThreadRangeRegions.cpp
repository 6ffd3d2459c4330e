/// \file
/// Thread-range regions run by the whole block (include/tilec/passes/ThreadRangeRegions.h).
#include "tilec/passes/ThreadRangeRegions.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "ConcurrentRoles.h"
#include "SyncHazards.h"
#include "ThreadRanges.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

namespace tilec::passes {

using namespace ir;

namespace {

using threadranges::ThreadRange;
using threadranges::rangeOf;
using threadranges::complementOf;
using threadranges::usesMbarriers;

/// Calls whose meaning depends on which threads run them (warp shuffles and mma.sync, mbarrier counts, named
/// barriers, leaving the kernel).
bool threadCountedCall(const Call &c) {
    using lib::Fn;
    for (Fn f : {Fn::NamedSync, Fn::NamedArrive, Fn::ShflXor, Fn::Shfl, Fn::MbarrierInit, Fn::MbarrierArrive,
                 Fn::MbarrierArriveExpectTx, Fn::MbarrierWait, Fn::MbarrierArriveCluster, Fn::ClusterSync,
                 Fn::MbarrierExpectTx, Fn::MbarrierArriveEach, Fn::WarpGroup, Fn::TmaCopyOn, Fn::ShflXorSync,
                 Fn::ShflDownSync, Fn::ShflUpSync, Fn::SyncWarp, Fn::ThreadReturn, Fn::GridSync, Fn::MmaSync,
                 Fn::LdMatrix})
        if (lib::is(c, f)) return true;
    return false;
}

/// Whether `s` holds a statement of tile work: a T.Parallel nest (not of a thread's own registers), a T.copy, fill,
/// reduction or T.gemm. Barriers and per-thread code alone (an author's named barrier in `if tx < 128:`) are not.
bool holdsTileWork(const Stmt &s) {
    return syncs::containsStatement(s, [](const Stmt &t) {
        return (syncs::tileStatement(t) && t->kind != NodeKind::Evaluate) || t->kind == NodeKind::Fill;
    });
}

/// Where a branch cannot run on more threads than its range: the first such statement and why, or nothing.
struct BranchCheck : IRVisitor {
    using IRVisitor::visit;
    const VarNode *tx;
    SourceRange at;
    std::string why;
    int nests = 0;
    SourceRange stmtLoc;
    explicit BranchCheck(const VarNode *t) : tx(t) {}
    void fail(const SourceRange &loc, const std::string &w) {
        if (why.empty()) at = loc, why = w;
    }
    void visit(const VarNode &v) override {
        if (&v == tx) fail(stmtLoc, "reads the thread index");
    }
    void visit(const Call &c) override {
        if (lib::is(c, lib::Fn::WarpGroup)) fail(stmtLoc, "is a T.ws block inside another T.ws block or range of the threads");
        else if (threadCountedCall(c)) fail(stmtLoc, "calls " + c.name + ", whose meaning depends on the threads that run it");
        IRVisitor::visit(c);
    }
    void visit(const For &f) override {
        stmtLoc = f.loc;
        nests += f.forKind == ForKind::Parallel;
        IRVisitor::visit(f);
        nests -= f.forKind == ForKind::Parallel;
    }
    void visit(const While &w) override {
        fail(w.loc, "is a `while` loop (a wait for other threads would never end once the branches run in turn)");
        IRVisitor::visit(w);
    }
    void visit(const AtomicAdd &a) override {
        if (!nests) fail(a.loc, "is an atomic update outside a T.Parallel nest, which every thread of the range does");
        stmtLoc = a.loc;
        IRVisitor::visit(a);
    }
    void visit(const Store &s) override { stmtLoc = s.loc, IRVisitor::visit(s); }
    void visit(const Evaluate &e) override { stmtLoc = e.loc, IRVisitor::visit(e); }
    void visit(const IfThenElse &i) override { stmtLoc = i.loc, IRVisitor::visit(i); }
    void visit(const Copy &c) override { stmtLoc = c.loc, IRVisitor::visit(c); }
    void visit(const Fill &f) override { stmtLoc = f.loc, IRVisitor::visit(f); }
};

/// The `if`s this pass turns into their branches: the range of each branch.
struct Branches {
    ThreadRange then;
    std::optional<ThreadRange> otherwise;
};

/// Each register buffer (fragment, T.alloc_var, T.alloc_local) by the ranges it is touched in (nullopt: outside
/// every region), with the first place for each; `order` lists the buffers as the program first touches them
/// (the order diagnostics follow: `seen` is ordered by address, which differs from run to run).
struct Touches : IRVisitor {
    using IRVisitor::visit;
    const std::map<const IfThenElse *, Branches> &regions;
    std::map<const BufferNode *, std::map<std::optional<ThreadRange>, SourceRange>> seen;
    std::vector<const BufferNode *> order;
    std::optional<ThreadRange> current;
    SourceRange stmtLoc;
    explicit Touches(const std::map<const IfThenElse *, Branches> &r) : regions(r) {}
    void touch(const BufferNode *b) {
        if (b->scope != Scope::Fragment && b->scope != Scope::Local && b->scope != Scope::Var) return;
        auto [it, fresh] = seen.try_emplace(b);
        if (fresh) order.push_back(b);
        it->second.emplace(current, stmtLoc);
    }
    void visit(const Load &l) override { touch(l.buffer.get()), IRVisitor::visit(l); }
    void visitRegion(const ir::Region &r) override { touch(r.buffer.get()), IRVisitor::visitRegion(r); }
    void visit(const Store &s) override { stmtLoc = s.loc, touch(s.buffer.get()), IRVisitor::visit(s); }
    void visit(const Reduce &r) override { stmtLoc = r.loc, touch(r.src.get()), touch(r.dst.get()); }
    void visit(const Evaluate &e) override { stmtLoc = e.loc, IRVisitor::visit(e); }
    void visit(const Copy &c) override { stmtLoc = c.loc, IRVisitor::visit(c); }
    void visit(const Fill &f) override { stmtLoc = f.loc, IRVisitor::visit(f); }
    void visit(const Gemm &g) override { stmtLoc = g.loc, IRVisitor::visit(g); }
    void visit(const AtomicAdd &a) override { stmtLoc = a.loc, IRVisitor::visit(a); }
    void visit(const For &f) override { stmtLoc = f.loc, IRVisitor::visit(f); }
    void visit(const IfThenElse &i) override {
        auto r = regions.find(&i);
        if (r == regions.end()) return IRVisitor::visit(i);
        auto saved = current;
        current = r->second.then;
        visit(i.then);
        current = r->second.otherwise;
        if (i.otherwise) visit(i.otherwise);
        current = saved;
    }
};

/// The warp group of a `with T.ws(g)` block (its marker condition), or nullopt.
std::optional<int64_t> warpGroupOf(const IfThenElse &i) {
    auto c = as<Call>(i.cond);
    return c && lib::is(i.cond, lib::Fn::WarpGroup) ? constInt(c->args[0]) : std::nullopt;
}

class Regions {
  public:
    /// `warpGroups`: T.ws blocks are regions too (a kernel whose warp groups share no mbarrier).
    Regions(const Kernel &k, DiagnosticEngine &diag, bool warpGroups) : k_(k), diag_(diag), warpGroups_(warpGroups) {}

    /// Finds the regions (errors where a branch cannot be run whole), then checks the register buffers.
    bool find(const Stmt &s) {
        walk(s);
        if (failed_) return false;
        Touches t(regions_);
        t.visit(k_.body);
        for (const BufferNode *b : t.order) {
            const auto &where = t.seen.at(b);
            if (where.size() < 2) continue;
            for (auto &[range, loc] : where) {
                if (!range) continue;
                auto other = where.begin()->first == range ? std::next(where.begin()) : where.begin();
                diag_.error(loc, "'" + b->name + "' is used here, in a branch of " + range->text() +
                                     " whose tile statements tilec runs with the whole block, and also " +
                                     (other->first ? "in a branch of " + other->first->text() : std::string("outside it")) +
                                     ": not supported (keep each fragment and T.alloc_var within the branches of one range)");
                diag_.note(other->second, "'" + b->name + "' is used here");
                failed_ = true;
                break;
            }
        }
        return !failed_;
    }
    const std::map<const IfThenElse *, Branches> &regions() const { return regions_; }

  private:
    const Kernel &k_;
    DiagnosticEngine &diag_;
    std::map<const IfThenElse *, Branches> regions_;
    bool warpGroups_;
    bool failed_ = false;

    void walk(const Stmt &s) {
        if (!s) return;
        if (auto q = as<Seq>(s)) {
            for (auto &x : q->stmts) walk(x);
        } else if (auto f = as<For>(s)) {
            if (f->forKind != ForKind::Parallel) walk(f->body);
        } else if (auto w = as<While>(s)) {
            walk(w->body);
        } else if (auto i = as<IfThenElse>(s)) {
            if (!region(*i)) walk(i->then), walk(i->otherwise);
        }
    }

    /// Whether `i` is a region (recorded); a located error when it is one whose branches cannot run whole.
    bool region(const IfThenElse &i) {
        auto group = warpGroups_ ? warpGroupOf(i) : std::nullopt;
        if (!group && !holdsTileWork(i.then) && !(i.otherwise && holdsTileWork(i.otherwise))) return false;
        auto then = group ? std::optional<ThreadRange>(ThreadRange{128 * *group, 128 * (*group + 1)})
                          : rangeOf(i.cond, k_.threadIdx.get(), k_.threads);
        if (!then) return false;
        auto other = complementOf(*then, k_.threads);
        if (i.otherwise && !other) return false;
        for (auto &[branch, range] : {std::pair{i.then, *then}, std::pair{i.otherwise, other.value_or(ThreadRange{})}}) {
            if (!branch) continue;
            BranchCheck c(k_.threadIdx.get());
            c.visit(branch);
            if (c.why.empty()) continue;
            diag_.error(c.at.valid() ? c.at : i.loc,
                        "this statement " + c.why + ", inside a branch of " + range.text() +
                            " whose tile statements tilec runs with the whole block (as TileLang's results do not "
                            "depend on which threads run them): not supported there");
            diag_.note(i.loc, "the condition that gives the branch its threads");
            failed_ = true;
        }
        regions_[&i] = Branches{*then, other};
        return true;
    }
};

/// Each region's `if` as its branches, one after the other.
struct Flatten : IRMutator {
    using IRMutator::visit;
    const std::map<const IfThenElse *, Branches> &regions;
    explicit Flatten(const std::map<const IfThenElse *, Branches> &r) : regions(r) {}
    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        if (!regions.count(op.get())) return IRMutator::visit(op);
        std::vector<Stmt> both{mutate(op->then)};
        if (op->otherwise) both.push_back(mutate(op->otherwise));
        return Seq::make(std::move(both), op->loc);
    }
};

/// The regions of `r` whose branches run as concurrent roles: the kernel that runs the others one after the
/// other and the roles' kernels (joinThreadRoles puts them back together), or `k` with every region flattened.
std::vector<KernelP> lowerRegions(const KernelP &k, const Regions &r, DiagnosticEngine &diag) {
    std::vector<concurrent::RangeIf> regions;
    for (auto &[at, b] : r.regions()) regions.push_back({at, b.then, b.otherwise});
    std::sort(regions.begin(), regions.end(), [](auto &a, auto &b) { return std::pair{a.at->loc.line, a.at->loc.col} < std::pair{b.at->loc.line, b.at->loc.col}; });
    std::vector<std::pair<SourceRange, std::string>> why;
    auto split = concurrent::splitRoles(*k, regions, why);
    for (auto &[at, w] : why)
        remark(&diag.sources(), at, "kernel '" + k->name + "': the branches of this `if` run one after the other: " + w);
    std::vector<KernelP> out{Flatten(r.regions()).mutate(split ? split->outer : k)};
    if (!split) return out;
    for (auto &role : split->roles) {
        remark(&diag.sources(), role->body->loc, "kernel '" + k->name + "': this branch runs as a role of " +
                                                   std::to_string(role->threads) + " threads, beside the other branch");
        out.push_back(role);
    }
    return out;
}

} // namespace

Program threadRangeRegions(const Program &p, DiagnosticEngine &diag) {
    Program out;
    for (auto &k : p.kernels) {
        Regions r(*k, diag, k->body && !usesMbarriers(k->body));
        if (!k->body || !k->threadIdx || !r.find(k->body) || r.regions().empty()) {
            out.kernels.push_back(k);
            continue;
        }
        for (auto &nk : lowerRegions(k, r, diag)) out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
