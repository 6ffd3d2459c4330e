/// \file
/// The program's own wgmma waits honoured (include/tilec/passes/HonourProgramWaits.h).
///
/// An abstract run over each kernel body that contains a T.wgmma_gemm keeps the warpgroup's wgmma groups in
/// flight, oldest first: a wgmma call adds one, `tilec.wgmma_wait(n)` keeps the n youngest. Where paths meet
/// with different lists the state becomes a set of groups that may be in flight, in no known order (`exact`
/// false): a wait then retires a given group only with n = 0. A loop's first iteration is run on its own, so
/// that `if j == 0:` in it (T.wgmma_gemm's run-time clear_accum) is taken there and skipped in later ones. The
/// waits a statement needs are recorded per statement and the run repeated until they no longer change (they
/// only ever retire more), then inserted.
#include "tilec/passes/HonourProgramWaits.h"

#include "EachKernel.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace tilec::passes {

using namespace ir;

Stmt programWaitsMark(const SourceRange &loc) { return lib::stmt(lib::Fn::WgmmaWait, {intImm(-1, DType::Int32)}, loc); }

bool isProgramWaitsMark(const Stmt &s) {
    return isCall(s, lib::Fn::WgmmaWait) && constInt(callOf(s)->args[0]) == std::optional<int64_t>(-1);
}

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }
bool isWgmma(const Stmt &s) {
    const Call *c = callOf(s);
    return c && isWgmmaProduct(*c);
}

/// The groups a wait keeps in flight (`pending`), or -1 when `s` is no wait.
int64_t waitPending(const Stmt &s) {
    if (isCall(s, lib::Fn::WgmmaWaitAcc)) return constInt(lib::arg(*callOf(s), lib::Fn::WgmmaWaitAcc, "pending")).value_or(0);
    if (!isCall(s, lib::Fn::WgmmaWait) || isProgramWaitsMark(s)) return -1;
    return constInt(callOf(s)->args[0]).value_or(0);
}

/// What a group holds: its accumulators, its A registers (wgmma_rs), its shared operands, and the registers
/// to pin once it has retired (address, count).
struct Group {
    const BufferNode *acc = nullptr, *regsA = nullptr;
    std::set<const BufferNode *> shared;
    std::vector<std::pair<Expr, int64_t>> pins;
};

Group groupOf(const Call &g) {
    const lib::Fn f = lib::find(g.name)->fn;
    auto c = [&](const char *n) { return *constInt(lib::arg(g, f, n)); };
    Group r;
    r.acc = addressedLoad(lib::arg(g, f, "c"))->buffer.get();
    r.pins.push_back({lib::arg(g, f, "c"), c("M") / c("wgM") / 64 * (c("N") / c("wgN") / 2)});
    if (f == lib::Fn::WgmmaRS) {
        const Load *a = addressedLoad(lib::arg(g, f, "a"));
        r.regsA = a->buffer.get();
        r.pins.push_back({lib::arg(g, f, "a"), c("M") / c("wgM") / 64 * (c("K") / 16) * 8 * (a->buffer->dtype.isFloat8() ? 2 : 1)});
    }
    for (const Load *l : wgmmaSharedOperands(g)) r.shared.insert(l->buffer.get());
    return r;
}

/// The registers a statement reads or writes and the shared buffers it may write (stores, and library calls
/// that write shared memory or are not library calls; the pins and fences of wgmma touch nothing).
struct Touches : IRVisitor {
    using IRVisitor::visit;
    std::set<const BufferNode *> regs, sharedWrites;
    static bool isRegister(const BufferNode &b) { return b.scope == Scope::Local || b.scope == Scope::Fragment || b.scope == Scope::Var; }
    void visit(const Load &op) override {
        if (op.buffer && isRegister(*op.buffer)) regs.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        if (op.buffer && isRegister(*op.buffer)) regs.insert(op.buffer.get());
        if (op.buffer && op.buffer->scope == Scope::Shared) sharedWrites.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Call &op) override {
        const lib::Info *i = lib::find(op.name);
        if (i && (i->fn == lib::Fn::WgmmaFenceOperands || i->fn == lib::Fn::FenceProxyAsync)) return;
        const bool writes = !i || (i->effects & lib::kWritesShared);
        for (auto &a : op.args)
            if (const Load *l = addressedLoad(a); l && l->buffer && l->buffer->scope == Scope::Shared && writes)
                sharedWrites.insert(l->buffer.get());
        IRVisitor::visit(op);
    }
};

struct Contains : IRVisitor {
    using IRVisitor::visit;
    bool found = false;
    void visit(const Evaluate &op) override {
        for (lib::Fn f : {lib::Fn::WgmmaSS, lib::Fn::WgmmaRS, lib::Fn::WgmmaSpSS, lib::Fn::WgmmaWait, lib::Fn::WgmmaWaitAcc})
            found |= lib::is(op.value, f);
    }
};

bool containsWgmmaOrWait(const Stmt &s) {
    Contains c;
    c.visit(s);
    return c.found;
}

struct ContainsWgmma : IRVisitor {
    using IRVisitor::visit;
    bool found = false;
    void visit(const Evaluate &op) override {
        for (lib::Fn f : {lib::Fn::WgmmaSS, lib::Fn::WgmmaRS, lib::Fn::WgmmaSpSS}) found |= lib::is(op.value, f);
    }
};

bool containsWgmma(const Stmt &s) {
    ContainsWgmma c;
    c.visit(s);
    return c.found;
}

/// The groups possibly in flight, oldest first; `exact`: exactly these, in this order.
struct State {
    std::vector<const Call *> flight;
    bool exact = true;
    bool operator==(const State &o) const { return flight == o.flight && exact == o.exact; }
};

State join(const State &a, const State &b) {
    if (a == b) return a;
    State r{a.flight, false};
    for (auto *g : b.flight)
        if (std::find(r.flight.begin(), r.flight.end(), g) == r.flight.end()) r.flight.push_back(g);
    return r;
}

/// At a wait: the registers to pin after it (of groups it retired) and those it must not (still in flight).
struct WaitFacts {
    std::vector<std::pair<Expr, int64_t>> retired;
    std::set<const BufferNode *> stillWritten;
    bool maybeBusy = false; ///< some visit found a group possibly in flight before it
};

class Analysis {
  public:
    std::map<const StmtNode *, int64_t> need; ///< a wait (its pending count) to insert before the statement
    /// Statements of `need` that write a shared operand of a group they retire: their wait goes above the block
    /// barriers right before them (a wgmma wait retires only the executing warp's part of the product, so the
    /// barrier that orders the other warps' writes of the operand must follow every warp's wait). Kept over the
    /// rounds, as `need` is: a later round finds the group already retired by the wait asked for.
    std::set<const StmtNode *> sharedWrite;
    std::map<const StmtNode *, WaitFacts> waits, inserted; ///< at the program's / tilec's waits, at `need`'s
    std::map<const Call *, Group> groups;

    State run(const Stmt &s, State st) {
        if (!s) return st;
        if (auto it = need.find(s.get()); it != need.end()) st = retire(st, it->second, &inserted[s.get()]);
        if (auto q = as<Seq>(s)) {
            for (auto &x : q->stmts) st = run(x, st);
            return st;
        }
        if (isWgmma(s)) return issue(*callOf(s), st, s.get());
        if (int64_t n = waitPending(s); n >= 0) return retire(st, n, &waits[s.get()]);
        auto i = as<IfThenElse>(s);
        if (auto known = i ? decided(i->cond) : std::nullopt) return run(*known ? i->then : i->otherwise, st);
        if (!containsWgmmaOrWait(s)) return touch(s, st);
        if (auto f = as<For>(s)) return loop(*f, st);
        if (auto w = as<While>(s)) return loopWhile(*w, st);
        if (i) return join(run(i->then, st), run(i->otherwise, st));
        if (auto r = as<WarpRoles>(s)) return join(run(r->producer, st), run(r->consumer, st));
        TILEC_ASSERT(false, "honourProgramWaits: a wgmma inside a statement it cannot follow");
        return st;
    }

  private:
    /// Loop variables whose first iteration (true) or a later one (false) the run is in.
    std::map<const VarNode *, std::pair<Expr, bool>> first_;

    std::optional<bool> decided(const Expr &cond) {
        auto b = as<Binary>(cond);
        if (!b || b->op != BinaryOp::EQ) return std::nullopt;
        auto v = as<VarNode>(b->a);
        auto it = v ? first_.find(v) : first_.end();
        if (it == first_.end() || !structurallyEqual(b->b, it->second.first)) return std::nullopt;
        return it->second.second;
    }

    void require(const StmtNode *at, int64_t pending) {
        auto [it, fresh] = need.emplace(at, pending);
        if (!fresh) it->second = std::min(it->second, pending);
    }

    /// The pending count that retires every group of `st` for which `hit` holds (-1: none needs retiring).
    int64_t toRetire(const State &st, const std::function<bool(const Group &)> &hit) {
        for (size_t i = st.flight.size(); i-- > 0;)
            if (hit(groups.at(st.flight[i]))) return st.exact ? (int64_t)(st.flight.size() - 1 - i) : 0;
        return -1;
    }

    State retire(State st, int64_t pending, WaitFacts *facts) {
        State after = st;
        if (st.exact) {
            if ((int64_t)after.flight.size() > pending) after.flight.erase(after.flight.begin(), after.flight.end() - pending);
        } else if (pending == 0) {
            after = State{};
        }
        if (facts) {
            WaitFacts &w = *facts;
            w.maybeBusy |= !st.flight.empty();
            for (auto *g : after.flight) w.stillWritten.insert(groups.at(g).acc);
            for (auto *g : st.flight)
                if (std::find(after.flight.begin(), after.flight.end(), g) == after.flight.end())
                    for (auto &p : groups.at(g).pins) w.retired.push_back(p);
        }
        return after;
    }

    State issue(const Call &c, State st, const StmtNode *at) {
        const Group &g = groups.emplace(&c, groupOf(c)).first->second;
        // registers one group writes that another reads as A (or the reverse) must not be in flight together
        int64_t n = toRetire(st, [&](const Group &o) { return (g.regsA && g.regsA == o.acc) || (o.regsA && o.regsA == g.acc); });
        if (n >= 0) require(at, n), st = retire(st, n, &inserted[at]);
        st.flight.push_back(&c);
        return st;
    }

    State touch(const Stmt &s, State st) {
        Touches t;
        t.visit(s);
        auto writesShared = [&](const Group &g) {
            return std::any_of(g.shared.begin(), g.shared.end(), [&](auto *b) { return t.sharedWrites.count(b) > 0; });
        };
        int64_t n = toRetire(st, [&](const Group &g) {
            return t.regs.count(g.acc) || (g.regsA && t.regs.count(g.regsA)) || writesShared(g);
        });
        if (toRetire(st, writesShared) >= 0) sharedWrite.insert(s.get());
        if (n >= 0) require(s.get(), n), st = retire(st, n, &inserted[s.get()]);
        return st;
    }

    /// A loop of a few iterations known at compile time (T.unroll's) is followed iteration by iteration, so
    /// that the groups it leaves in flight are known in order; any other to a fixed point.
    State loop(const For &f, State in) {
        if (auto n = constInt(f.extent); n && *n > 0 && *n <= 16) {
            for (int64_t it = 0; it < *n; ++it) {
                first_[f.var.get()] = {f.min, it == 0};
                in = run(f.body, in);
            }
            first_.erase(f.var.get());
            return in;
        }
        first_[f.var.get()] = {f.min, true};
        State head = run(f.body, in);
        first_[f.var.get()] = {f.min, false};
        for (int round = 0;; ++round) {
            State next = join(head, run(f.body, head));
            if (next == head) break;
            TILEC_ASSERT(round < 64, "honourProgramWaits: no fixed point for a loop");
            head = next;
        }
        first_.erase(f.var.get());
        const bool runs = constInt(f.extent).value_or(0) > 0;
        return runs ? head : join(in, head);
    }

    State loopWhile(const While &w, State in) {
        State head = in;
        for (int round = 0;; ++round) {
            State next = join(head, run(w.body, head));
            if (next == head) return head;
            TILEC_ASSERT(round < 64, "honourProgramWaits: no fixed point for a loop");
            head = next;
        }
    }
};

/// The kernel body with the marks taken out.
class Unmark : public IRMutator {
  public:
    using IRMutator::visit;
    bool found = false;
    Stmt visit(const std::shared_ptr<const Seq> &op) override {
        std::vector<Stmt> out;
        bool changed = false;
        for (auto &s : op->stmts) {
            if (isProgramWaitsMark(s)) {
                found = changed = true;
                continue;
            }
            Stmt m = mutate(s);
            changed |= m != s;
            out.push_back(m);
        }
        return changed ? Seq::make(std::move(out), op->loc) : op;
    }
};

/// The waits the analysis asked for inserted, pins after every wait that retires groups, the program's waits
/// where nothing can be in flight dropped.
class Insert : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Insert(const Analysis &a) : a_(a) {}
    Stmt visit(const std::shared_ptr<const Seq> &op) override { return block(op); }
    Stmt visit(const std::shared_ptr<const For> &op) override {
        Stmt b = block(op->body);
        return b == op->body ? op : For::make(op->var, op->min, op->extent, op->forKind, op->numStages, b, op->loc);
    }
    Stmt visit(const std::shared_ptr<const While> &op) override {
        Stmt b = block(op->body);
        return b == op->body ? op : While::make(op->cond, b, op->loc);
    }
    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        Stmt t = block(op->then), e = op->otherwise ? block(op->otherwise) : nullptr;
        return t == op->then && e == op->otherwise ? op : IfThenElse::make(op->cond, t, e, op->loc);
    }

  private:
    const Analysis &a_;

    /// `already`: the registers pinned by the statements after the wait (tilec's own waits have theirs).
    void pinsAfter(const WaitFacts &w, const SourceRange &loc, std::vector<Stmt> &out, std::set<const BufferNode *> already = {}) {
        std::set<const BufferNode *> done(w.stillWritten);
        done.insert(already.begin(), already.end());
        for (auto &[regs, count] : w.retired) {
            const BufferNode *b = addressedLoad(regs)->buffer.get();
            if (done.insert(b).second) out.push_back(lib::stmt(lib::Fn::WgmmaFenceOperands, {i32(count), regs}, loc));
        }
    }

    Stmt block(const Stmt &body) {
        if (!body) return body;
        std::vector<Stmt> out;
        bool changed = false;
        const std::vector<Stmt> items = Seq::items(body);
        for (size_t at = 0; at < items.size(); ++at) {
            const Stmt &s = items[at];
            if (auto it = a_.need.find(s.get()); it != a_.need.end()) {
                std::vector<Stmt> barriers;
                while (a_.sharedWrite.count(s.get()) && !out.empty() && isCall(out.back(), lib::Fn::Sync))
                    barriers.insert(barriers.begin(), out.back()), out.pop_back();
                out.push_back(lib::stmt(lib::Fn::WgmmaWait, {i32(it->second)}, s->loc));
                pinsAfter(a_.inserted.at(s.get()), s->loc, out);
                out.insert(out.end(), barriers.begin(), barriers.end());
                changed = true;
            }
            auto wf = a_.waits.find(s.get());
            if (waitPending(s) >= 0 && wf != a_.waits.end() && !wf->second.maybeBusy && isCall(s, lib::Fn::WgmmaWait)) {
                changed = true; // nothing can be in flight here: the program's wait has nothing to wait for
                continue;
            }
            Stmt m = mutate(s);
            changed |= m != s;
            out.push_back(m);
            if (wf != a_.waits.end()) {
                std::set<const BufferNode *> already;
                for (size_t n = at + 1; n < items.size() && isCall(items[n], lib::Fn::WgmmaFenceOperands); ++n)
                    already.insert(addressedLoad(lib::arg(*callOf(items[n]), lib::Fn::WgmmaFenceOperands, "regs"))->buffer.get());
                size_t before = out.size();
                pinsAfter(wf->second, s->loc, out, already);
                changed |= out.size() != before;
            }
        }
        return changed ? Seq::make(std::move(out), body->loc) : body;
    }
};

/// One kernel's program waits honoured.
KernelP honourKernel(const KernelP &k) {
    Unmark u;
    KernelP unmarked = u.mutate(k);
    // With no mark the waits are tilec's own, unless there is no wgmma at all (the program's, with nothing to wait for).
    if (!u.found && !(containsWgmmaOrWait(k->body) && !containsWgmma(k->body))) return k;
    Analysis a;
    State end;
    // Repeated until the waits asked for settle: each run sees those of the last.
    for (int round = 0;; ++round) {
        auto need = a.need;
        a.waits.clear(), a.inserted.clear();
        end = a.run(unmarked->body, State{});
        if (a.need == need) break;
        TILEC_ASSERT(round < 64, "honourProgramWaits: the waits do not settle");
    }
    Insert ins(a);
    KernelP done = ins.mutate(unmarked);
    if (!end.flight.empty()) { // a group the program never waited for: retired before the block exits
        auto kk = std::make_shared<Kernel>(*done);
        kk->body = Seq::make({kk->body, lib::stmt(lib::Fn::WgmmaWait, {i32(0)}, kk->body->loc)}, kk->body->loc);
        done = kk;
    }
    return done;
}

} // namespace

Program honourProgramWaits(const Program &p) { return eachKernel(p, honourKernel); }

} // namespace tilec::passes
