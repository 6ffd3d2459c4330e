/// \file
/// The program's own setmaxnreg kept where every thread of whole warp groups runs it and the counts fit the
/// register file; dropped elsewhere (include/tilec/passes/KeepMaxNreg.h).
#include "tilec/passes/KeepMaxNreg.h"

#include "tilec/IRMutator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/WarpRolePlan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes {

namespace {

using namespace ir;

/// One setmaxnreg call of the program: where it stands, what it asks, and the warp groups that run it together
/// (empty: no whole warp group is sure to, so it must go).
struct MaxNregCall {
    const Evaluate *node = nullptr;
    SourceRange loc;
    bool inc = false;
    int regs = 0;
    std::vector<int> groups;
    bool waitedBefore = false; ///< a wait of the roles comes before it in an enclosing statement list
    bool waitedInList = false; ///< ... in its own statement list only
};

/// Whether a statement may wait for other threads (a barrier, an mbarrier wait, a loop on a run-time condition).
bool waits(const Stmt &s) {
    struct Find : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Call &c) override {
            const lib::Info *i = lib::find(c.name);
            found = found || (i && (i->effects & lib::kBarrier));
            IRVisitor::visit(c);
        }
        void visit(const While &w) override { found = true, IRVisitor::visit(w); }
    } f;
    f.visit(s);
    return f.found;
}

/// The warp groups of threads [first, first + count), or none unless both ends are warp-group boundaries.
std::vector<int> wholeGroups(int first, int count) {
    std::vector<int> g;
    if (first % 128 || count % 128 || count <= 0) return g;
    for (int w = first / 128; w < (first + count) / 128; ++w) g.push_back(w);
    return g;
}

/// Walks a kernel keeping, for each statement list, the warp groups that reach it together (`uniform_`): a
/// role's, a consumer group's branch, its else; nothing under a loop or any other condition. Records every
/// setmaxnreg call with those groups; with `remove` set, removes every call instead.
class Placement : public IRMutator {
  public:
    using IRMutator::visit;
    std::vector<MaxNregCall> calls;
    bool ownSplit = false; ///< a WarpRoles whose setmaxnreg tilec's planner chose
    bool roles = false;    ///< any WarpRoles
    bool remove = false;

    Stmt visit(const std::shared_ptr<const Evaluate> &op) override {
        const Call *c = callOf(op);
        const bool inc = c && lib::is(*c, lib::Fn::MaxNregInc);
        if (!c || (!inc && !lib::is(*c, lib::Fn::MaxNregDec))) return op;
        if (remove) return nullptr;
        auto regs = constInt(lib::arg(*c, inc ? lib::Fn::MaxNregInc : lib::Fn::MaxNregDec, "regs"));
        calls.push_back({op.get(), op->loc, inc, (int)regs.value_or(0), uniform_, outerWaited_, waited_ && !outerWaited_});
        return op;
    }
    Stmt visit(const std::shared_ptr<const Seq> &op) override;
    Stmt visit(const std::shared_ptr<const For> &op) override { return under({}, [&] { return IRMutator::visit(op); }); }
    Stmt visit(const std::shared_ptr<const While> &op) override { return under({}, [&] { return IRMutator::visit(op); }); }
    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override;
    Stmt visit(const std::shared_ptr<const WarpRoles> &op) override;

  private:
    std::vector<int> uniform_;
    bool nested_ = false;
    bool waited_ = false, outerWaited_ = false; ///< a wait of the roles before here: anywhere, before this list
    bool roles_ = false;

    template <class F> Stmt under(std::vector<int> groups, F &&f) {
        std::swap(uniform_, groups);
        Stmt s = f();
        std::swap(uniform_, groups);
        return s;
    }
};

/// A statement list, noting which of its statements come after a wait (for the decreases, keepMaxNreg's order).
Stmt Placement::visit(const std::shared_ptr<const Seq> &op) {
    const bool waited = waited_, outer = outerWaited_;
    outerWaited_ = waited_;
    std::vector<Stmt> items;
    bool changed = false;
    for (const Stmt &s : op->stmts) {
        Stmt n = mutate(s);
        changed = changed || n != s;
        if (n) items.push_back(n);
        waited_ = waited_ || (roles_ && waits(s));
    }
    waited_ = waited, outerWaited_ = outer;
    return changed ? Seq::make(std::move(items), op->loc) : op;
}

/// `if tilec.warp_group(g)` in a role: its branch is warp group g's (threads 128 g .. 128 g + 127, where the role
/// has them), its else the role's other groups. Any other condition may split a warp group: nothing under it is
/// uniform.
Stmt Placement::visit(const std::shared_ptr<const IfThenElse> &op) {
    auto marker = as<Call>(op->cond);
    std::optional<int64_t> g = marker && lib::is(*marker, lib::Fn::WarpGroup) ? constInt(marker->args[0]) : std::nullopt;
    if (!g) return under({}, [&] { return IRMutator::visit(op); });
    std::vector<int> mine, rest;
    for (int w : uniform_) (w == *g ? mine : rest).push_back(w);
    Stmt then = under(mine, [&] { return mutate(op->then); });
    Stmt otherwise = under(rest, [&] { return mutate(op->otherwise); });
    if (then == op->then && otherwise == op->otherwise) return op;
    return IfThenElse::make(op->cond, then, otherwise, op->loc);
}

/// The consumers are threads [0, consumerThreads), the producer the threads after them: each role's statement list
/// is uniform over its warp groups when the role is whole warp groups. Roles inside a role are not (nor expected).
Stmt Placement::visit(const std::shared_ptr<const WarpRoles> &op) {
    roles = true;
    ownSplit = ownSplit || op->producerRegs || op->consumerRegs;
    const bool top = !nested_;
    nested_ = true;
    roles_ = true, waited_ = false, outerWaited_ = false; // the block's barriers before the roles wait for no role
    Stmt producer = under(top ? wholeGroups(op->consumerThreads, op->producerThreads) : std::vector<int>{},
                          [&] { return mutate(op->producer); });
    Stmt consumer = under(top ? wholeGroups(0, op->consumerThreads) : std::vector<int>{}, [&] { return mutate(op->consumer); });
    nested_ = !top;
    roles_ = !top;
    if (producer == op->producer && consumer == op->consumer) return op;
    return WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, producer, consumer,
                           op->loc);
}

/// Why a kernel's setmaxnreg calls cannot all stay (empty: they can), its launch's registers per thread `entry`
/// at `blocks` blocks per SM.
std::string unsound(const Kernel &k, const Target &t, const Placement &p, int blocks, int entry) {
    if (!t.hasWgmma()) return t.name + " has no setmaxnreg (sm_90a has)";
    if (!p.roles) return "the kernel has no explicit warp roles";
    if (p.ownSplit) return "tilec's warp specialization sets the roles' registers itself";
    const int threads = k.launchedThreads();
    if (threads % 128) return "the block's " + std::to_string(threads) + " threads are not whole warp groups";
    std::vector<int> regs((size_t)(threads / 128), 0);
    for (const MaxNregCall &c : p.calls) {
        if (c.groups.empty())
            return "the call at line " + std::to_string(c.loc.line) +
                   " is not reached by every thread of whole warp groups together (under a loop or a condition on "
                   "the thread, or outside the warp roles' statement lists)";
        if (!c.inc && c.waitedBefore)
            return "the decrease at line " + std::to_string(c.loc.line) +
                   " comes after a wait outside its warp group's statement list (an increase waiting for the registers "
                   "it frees could hold that wait forever)";
        if (c.inc ? c.regs < entry : c.regs > entry)
            return std::string(c.inc ? "an increase to " : "a decrease to ") + std::to_string(c.regs) + " (line " +
                   std::to_string(c.loc.line) + ") from the launch's " + std::to_string(entry) + " registers a thread";
        for (int w : c.groups) {
            if (regs[(size_t)w]) return "warp group " + std::to_string(w) + " sets its registers twice";
            regs[(size_t)w] = c.regs;
        }
    }
    int64_t total = 0;
    for (int r : regs) total += 128LL * (r ? r : entry);
    if (total > (int64_t)entry * threads)
        return "the warp groups' counts take " + std::to_string(total) + " registers, over the " +
               std::to_string((int64_t)entry * threads) + " the block has at launch (" + std::to_string(entry) + " a thread at " +
               std::to_string(blocks) + " block(s) per SM)";
    return {};
}

/// Each decrease moved to the front of its statement list: before the waits its warp group makes there, so that
/// every increase finds the registers it waits for whatever the other warp groups wait for.
struct HoistDecreases : IRMutator {
    using IRMutator::visit;
    std::set<const Evaluate *> hoist;
    Stmt visit(const std::shared_ptr<const Seq> &op) override {
        std::vector<Stmt> front, rest;
        for (const Stmt &s : op->stmts) {
            const bool moved = hoist.count(as<Evaluate>(s)) > 0;
            (moved ? front : rest).push_back(moved ? s : mutate(s));
        }
        if (front.empty() && std::equal(rest.begin(), rest.end(), op->stmts.begin(), op->stmts.end())) return op;
        front.insert(front.end(), rest.begin(), rest.end());
        return Seq::make(std::move(front), op->loc);
    }
};

/// "inc 240 (warp group 0), ..." for the remark.
std::string counts(const std::vector<MaxNregCall> &calls) {
    std::string s;
    for (const MaxNregCall &c : calls) {
        std::string g;
        for (int w : c.groups) g += (g.empty() ? "" : ",") + std::to_string(w);
        s += (s.empty() ? "" : ", ") + std::string(c.inc ? "inc " : "dec ") + std::to_string(c.regs) + " (warp group " + g + ")";
    }
    return s;
}

} // namespace

ir::Program keepMaxNreg(const ir::Program &p, const Target &t, const SourceManager *sources) {
    ir::Program out;
    for (const KernelP &k : p.kernels) {
        Placement place;
        place.mutate(k->body);
        if (place.calls.empty()) {
            out.kernels.push_back(k);
            continue;
        }
        const int blocks = std::max(1, k->minBlocksPerSM);
        const int entry = partitionRegisters(k->launchedThreads(), blocks, t);
        const std::string why = unsound(*k, t, place, blocks, entry);
        auto nk = std::make_shared<Kernel>(*k);
        if (why.empty()) {
            HoistDecreases h;
            for (const MaxNregCall &c : place.calls)
                if (!c.inc && c.waitedInList) h.hoist.insert(c.node);
            nk->body = h.mutate(k->body);
            nk->minBlocksPerSM = blocks;
            remark(sources, k->launchLoc, "kernel '" + k->name + "' (" + t.name + "): T.set_max_nreg kept: " +
                                              counts(place.calls) + " from " + std::to_string(entry) + " registers a thread");
        } else {
            Placement strip;
            strip.remove = true;
            nk->body = strip.mutate(k->body);
            remark(sources, k->launchLoc, "kernel '" + k->name + "' (" + t.name + "): T.set_max_nreg dropped (no effect on the "
                                              "values): " + why);
        }
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
