/// \file
/// Warp-group roles written as branches on the thread index (include/tilec/passes/ThreadRangeRoles.h).
#include "tilec/passes/ThreadRangeRoles.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "ThreadRanges.h"

#include <utility>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

using threadranges::ThreadRange;
using threadranges::rangeOf;
using threadranges::usesMbarriers;

constexpr int64_t kGroup = 128; // threads of a warp group

/// The warp group whose threads `r` is, or -1.
int64_t groupOf(const ThreadRange &r) { return r.lo % kGroup == 0 && r.hi == r.lo + kGroup ? r.lo / kGroup : -1; }

/// Threads of the block: disjoint ranges.
using Threads = std::vector<ThreadRange>;

/// The threads of `avail` in `r`, and those outside it.
std::pair<Threads, Threads> cut(const Threads &avail, const ThreadRange &r) {
    Threads in, out;
    for (auto &a : avail) {
        ThreadRange mid{std::max(a.lo, r.lo), std::min(a.hi, r.hi)};
        if (mid.lo < mid.hi) in.push_back(mid);
        for (ThreadRange side : {ThreadRange{a.lo, std::min(a.hi, r.lo)}, ThreadRange{std::max(a.lo, r.hi), a.hi}})
            if (side.lo < side.hi) out.push_back(side);
    }
    return {in, out};
}

/// The warp group whose threads `t` is, or -1.
int64_t groupOf(const Threads &t) { return t.size() == 1 ? groupOf(t[0]) : -1; }

/// The `if` of an `else` branch that is one (an `elif`), or null.
const IfThenElse *elifOf(const Stmt &s) {
    if (auto q = as<Seq>(s); q && q->stmts.size() == 1) return elifOf(q->stmts[0]);
    return as<IfThenElse>(s);
}

/// One T.ws block: the branch run by warp group `g`.
struct RoleBranch {
    int64_t group;
    Stmt body;
    SourceRange loc;
};

class Roles : public IRMutator {
  public:
    Roles(const Kernel &k, DiagnosticEngine &diag) : k_(k), diag_(diag) {}
    using IRMutator::visit;

    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        if (lib::is(op->cond, lib::Fn::WarpGroup)) return op; // already a T.ws block
        std::vector<RoleBranch> out;
        if (!split(*op, Threads{ThreadRange{0, k_.threads}}, out)) {
            auto r = rangeOf(op->cond, k_.threadIdx.get(), k_.threads);
            if (r && callsAny(op, {lib::Fn::MbarrierWait, lib::Fn::MbarrierArriveEach, lib::Fn::TmaCopyOn}))
                diag_.error(op->loc, "this `if` on the thread index gives a branch of " + r->text() +
                                         " that synchronises through mbarriers, a warp-specialized role: tilec supports "
                                         "roles of one warp group each (`128 * g <= tx < 128 * (g + 1)`, T.ws(g)), with "
                                         "an `else` or `elif` branches of one warp group each");
            // an `if` on other threads keeps what it holds: an inner range is not a warp group's T.ws block there
            return uses(op->cond, k_.threadIdx.get()) ? Stmt(op) : IRMutator::visit(op);
        }
        std::vector<Stmt> blocks;
        for (auto &b : out) {
            Expr marker = lib::call(lib::Fn::WarpGroup, {intImm(b.group)}, b.loc, DType::Bool);
            blocks.push_back(IfThenElse::make(marker, b.body, nullptr, b.loc));
        }
        return Seq::make(std::move(blocks), op->loc);
    }
    Stmt visit(const std::shared_ptr<const For> &op) override {
        return op->forKind == ForKind::Parallel ? Stmt(op) : IRMutator::visit(op);
    }

  private:
    const Kernel &k_;
    DiagnosticEngine &diag_;

    /// Whether `i` (run by the threads `avail`) is branches of one warp group each; appends them to `out`.
    bool split(const IfThenElse &i, const Threads &avail, std::vector<RoleBranch> &out) {
        auto r = rangeOf(i.cond, k_.threadIdx.get(), k_.threads);
        if (!r) return false;
        auto [in, others] = cut(avail, *r);
        const int64_t g = groupOf(in);
        if (g < 0) return false;
        out.push_back({g, i.then, i.loc});
        if (!i.otherwise) return true;
        if (const IfThenElse *elif = elifOf(i.otherwise); elif && rangeOf(elif->cond, k_.threadIdx.get(), k_.threads))
            return split(*elif, others, out);
        const int64_t h = groupOf(others);
        if (h < 0) return false;
        out.push_back({h, i.otherwise, i.otherwise->loc.valid() ? i.otherwise->loc : i.loc});
        return true;
    }
};

} // namespace

Program threadRangeRoles(const Program &p, DiagnosticEngine &diag) {
    Program out;
    for (auto &k : p.kernels) {
        if (!k->body || !k->threadIdx || !usesMbarriers(k->body)) {
            out.kernels.push_back(k);
            continue;
        }
        out.kernels.push_back(Roles(*k, diag).mutate(k));
    }
    return out;
}

} // namespace tilec::passes
