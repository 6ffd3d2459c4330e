/// \file
/// Thread-range regions whose branches run at once, on their own threads (src/lower/ConcurrentRoles.h).
#include "ConcurrentRoles.h"

#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedAliases.h"

#include <algorithm>
#include <map>
#include <set>

namespace tilec::passes::concurrent {

using namespace ir;
using threadranges::ThreadRange;

namespace {

constexpr int64_t kWarp = 32;

/// What one branch does to memory, and the first statement that keeps it from running beside another.
struct Accesses : IRVisitor {
    using IRVisitor::visit;
    const Kernel *k;
    std::set<const BufferNode *> written, touched, registers;
    SourceRange at;
    std::string why;
    SourceRange stmtLoc;
    explicit Accesses(const Kernel &kk) : k(&kk) {}

    void fail(const std::string &w) {
        if (why.empty()) at = stmtLoc, why = w;
    }
    /// Shared buffers by their storage (a view is its base's bytes); tensors a pointer table addresses may be
    /// any tensor's memory.
    void touch(const Buffer &b, bool write) {
        if (!b) return;
        if (b->scope == Scope::Fragment || b->scope == Scope::Local || b->scope == Scope::Var) {
            registers.insert(b.get());
            return;
        }
        if (b->scope == Scope::Global && k->addressOf(b.get())) fail("reaches tensor '" + b->name + "' through a pointer table");
        const BufferNode *s = b->scope == Scope::Shared ? ir::storageOf(*k, b.get()) : b.get();
        touched.insert(s);
        if (write) written.insert(s);
    }
    void region(const ir::Region &r, bool write) { touch(r.buffer, write), visitRegion(r); }

    void visit(const Load &l) override { touch(l.buffer, false), IRVisitor::visit(l); }
    void visit(const Store &s) override { stmtLoc = s.loc, touch(s.buffer, true), IRVisitor::visit(s); }
    void visit(const Copy &c) override { stmtLoc = c.loc, region(c.src, false), region(c.dst, true); }
    void visit(const Fill &f) override { stmtLoc = f.loc, region(f.dst, true), visit(f.value); }
    void visit(const Reduce &r) override { stmtLoc = r.loc, touch(r.src, false), touch(r.dst, true); }
    void visit(const AtomicAdd &a) override {
        stmtLoc = a.loc;
        region(a.dst, true);
        if (a.src) region(*a.src, false);
        if (a.value) visit(a.value);
    }
    void visit(const Gemm &g) override { stmtLoc = g.loc, fail("is a T.gemm (its tiles and instructions are the block's)"); }
    void visit(const WarpRoles &) override { fail("holds warp roles"); }
    void visit(const While &w) override { stmtLoc = w.loc, fail("is a `while` loop"), IRVisitor::visit(w); }
    void visit(const For &f) override { stmtLoc = f.loc, IRVisitor::visit(f); }
    void visit(const IfThenElse &i) override { stmtLoc = i.loc, IRVisitor::visit(i); }
    void visit(const Evaluate &e) override { stmtLoc = e.loc, IRVisitor::visit(e); }
    /// Math functions and pure library calls read nothing but their operands; a barrier becomes the role's own.
    void visit(const Call &c) override {
        const lib::Info *f = lib::find(c.name);
        const bool math = !f && c.name.rfind("extern:", 0) != 0;
        if (!math && !(f && ((f->effects & lib::kPure) || f->effects == lib::kNone || f->fn == lib::Fn::Sync)))
            fail("calls " + c.name + ", whose effects tilec does not order between roles");
        IRVisitor::visit(c);
    }
};

Accesses accessesOf(const Kernel &k, const Stmt &branch) {
    Accesses a(k);
    if (branch) a.visit(branch);
    return a;
}

/// Why two branches that run at once could compute something else than one after the other: a buffer one
/// writes that the other touches. Empty: nothing.
std::string conflict(const Accesses &a, const Accesses &b) {
    for (auto [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}})
        for (auto *w : x->written)
            if (y->touched.count(w))
                return "'" + w->name + "' is written by one branch and used by the other, with no barrier both take";
    return "";
}

/// Whether region `r` of `k` may run its branches as concurrent roles: the reason it may not, or "".
std::string gate(const Kernel &k, const RangeIf &r, const Accesses &then, const Accesses &otherwise) {
    if (r.then.lo == 0 && r.then.hi >= k.threads) return "its branch is every thread's";
    if (k.threads % kWarp || r.then.lo % kWarp || r.then.hi % kWarp)
        return "its threads (" + r.then.text() + " of " + std::to_string(k.threads) + ") are not whole warps";
    if (!then.why.empty()) return "a statement of the branch of " + r.then.text() + " " + then.why;
    if (!otherwise.why.empty()) return "a statement of the other branch " + otherwise.why;
    return conflict(then, otherwise);
}

/// A region whose branches run as roles: where it is at the top level, what each branch touches.
struct Taken {
    const RangeIf *region;
    size_t at;
    Accesses then, otherwise;
};

/// Each role lays its register buffers out over its own threads: none may be used by other code (another
/// region's roles, or what the block runs). Dropping a region makes its code the block's: until none is left.
void dropSharedRegisters(const Kernel &k, const std::vector<Stmt> &top, std::vector<Taken> &taken,
                         std::vector<std::pair<SourceRange, std::string>> &why) {
    for (bool dropped = true; dropped && !taken.empty();) {
        dropped = false;
        std::map<const BufferNode *, int> users; // taken regions and the block's code using each register buffer
        std::set<size_t> roleAt;
        for (auto &t : taken) roleAt.insert(t.at);
        for (size_t i = 0; i < top.size(); ++i)
            if (!roleAt.count(i))
                for (auto *b : accessesOf(k, top[i]).registers) users[b] += 2; // the block's: never alone
        for (auto &t : taken) {
            std::set<const BufferNode *> own(t.then.registers);
            own.insert(t.otherwise.registers.begin(), t.otherwise.registers.end());
            for (auto *b : own) ++users[b];
        }
        for (size_t j = 0; j < taken.size() && !dropped; ++j) {
            std::string no;
            for (auto *regs : {&taken[j].then.registers, &taken[j].otherwise.registers})
                for (auto *b : *regs)
                    if (no.empty() && users[b] > 1) no = "'" + b->name + "' is used outside its branch too (each role lays its registers out alone)";
            if (no.empty()) continue;
            why.push_back({taken[j].region->at->loc, no});
            taken.erase(taken.begin() + (long)j);
            dropped = true;
        }
    }
}

/// `k` without the register buffers its body does not use (another role's: a fragment is laid out where it is used).
void keepOwnRegisters(Kernel &k) {
    auto used = [&](const BufferNode *b) {
        if (uses(k.body, b)) return true;
        for (auto &[view, base] : k.fragmentViews)
            if (base.get() == b && uses(k.body, view.get())) return true;
        return false;
    };
    std::erase_if(k.allocs, [&](const Buffer &b) {
        return b && (b->scope == Scope::Fragment || b->scope == Scope::Local || b->scope == Scope::Var) && !used(b.get());
    });
}

/// A kernel that runs `body` on `threads` threads: role `consumer` of the index-th roles of `k`.
KernelP roleKernel(const Kernel &k, size_t index, bool consumer, int64_t threads, const Stmt &body) {
    auto nk = std::make_shared<Kernel>(k);
    nk->name = roleKernelName(k.name, index, consumer);
    nk->threads = (int)threads;
    nk->body = body ? body : Seq::make({}, k.launchLoc);
    keepOwnRegisters(*nk);
    return nk;
}

} // namespace

std::string roleKernelName(const std::string &outer, size_t index, bool consumer) {
    return outer + ".role" + std::to_string(index) + (consumer ? ".consumer" : ".producer");
}

std::optional<Split> splitRoles(const Kernel &k, const std::vector<RangeIf> &regions,
                                std::vector<std::pair<SourceRange, std::string>> &why) {
    if (k.parts > 1 || !k.body) return std::nullopt;
    std::vector<Stmt> top = Seq::items(k.body);
    std::map<const IfThenElse *, size_t> position;
    for (size_t i = 0; i < top.size(); ++i)
        if (auto f = as<IfThenElse>(top[i])) position[f] = i;
    std::vector<Taken> taken;
    for (auto &r : regions) {
        auto p = position.find(r.at);
        if (p == position.end()) {
            why.push_back({r.at->loc, "it is not at the kernel's top level"});
            continue;
        }
        if (!r.at->otherwise) continue; // no other threads' work to overlap: the block runs it (threadRangeRegions)
        Accesses then = accessesOf(k, r.at->then), otherwise = accessesOf(k, r.at->otherwise);
        if (std::string no = gate(k, r, then, otherwise); !no.empty()) {
            why.push_back({r.at->loc, no});
            continue;
        }
        taken.push_back({&r, p->second, std::move(then), std::move(otherwise)});
    }
    dropSharedRegisters(k, top, taken, why);
    if (taken.empty()) return std::nullopt;
    std::sort(taken.begin(), taken.end(), [](const Taken &a, const Taken &b) { return a.at < b.at; });

    Split out;
    std::vector<Stmt> body;
    size_t next = 0;
    for (size_t i = 0; i < top.size(); ++i) {
        if (next == taken.size() || taken[next].at != i) {
            body.push_back(top[i]);
            continue;
        }
        const RangeIf &r = *taken[next].region;
        const bool thenFirst = r.then.lo == 0; // the consumer: the threads from 0
        const int64_t C = thenFirst ? r.then.hi : r.then.lo;
        Stmt consumer = thenFirst ? r.at->then : r.at->otherwise, producer = thenFirst ? r.at->otherwise : r.at->then;
        out.roles.push_back(roleKernel(k, next, true, C, consumer));
        out.roles.push_back(roleKernel(k, next, false, k.threads - C, producer));
        const SourceRange &loc = r.at->loc;
        // Both roles meet the block's other code at a barrier: what either side wrote to shared memory before is
        // seen after (the roles' own accesses are invisible to the passes that lower the rest).
        if (i > 0) body.push_back(lib::stmt(lib::Fn::Sync, {}, loc));
        body.push_back(WarpRoles::make((int)C, (int)(k.threads - C), 0, 0, Seq::make({}, loc), Seq::make({}, loc), loc));
        if (i + 1 < top.size()) body.push_back(lib::stmt(lib::Fn::Sync, {}, loc));
        ++next;
    }
    auto outer = std::make_shared<Kernel>(k);
    outer->body = Seq::make(std::move(body), k.body->loc);
    keepOwnRegisters(*outer);
    out.outer = outer;
    return out;
}

} // namespace tilec::passes::concurrent
