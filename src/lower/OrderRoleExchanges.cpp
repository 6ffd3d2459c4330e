/// \file
/// Named barriers between consumer warp groups' unpublished shared-memory exchanges
/// (include/tilec/passes/OrderRoleExchanges.h).
#include "tilec/passes/OrderRoleExchanges.h"

#include "EachKernel.h"
#include "SyncHazards.h"
#include "tilec/IRMutator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedAliases.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"

#include <optional>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

constexpr int kGroupThreads = 128; ///< a warp group's threads

/// Whether `s` holds an operation that can tell another warp group something: an mbarrier arrival, a named
/// barrier (a warp group's own `tilec.sync` is not one), a grid barrier, an atomic update, a `while` loop (which
/// may wait on memory another group writes).
bool publishes(const Stmt &s) {
    struct Finder : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Call &c) override {
            using lib::Fn;
            for (Fn f : {Fn::MbarrierArrive, Fn::MbarrierArriveExpectTx, Fn::MbarrierArriveEach, Fn::MbarrierArriveCluster,
                         Fn::NamedArrive, Fn::NamedSync, Fn::GridSync, Fn::ClusterSync})
                found |= lib::is(c, f);
            found |= c.name.rfind("extern:atomic", 0) == 0;
            IRVisitor::visit(c);
        }
        void visit(const AtomicAdd &) override { found = true; }
        void visit(const While &) override { found = true; }
    } f;
    f.visit(s);
    return f.found;
}

/// One consumer warp group's statements, and what they read and write of the kernel's shared buffers.
struct Group {
    std::vector<Stmt> stmts;
    size_t quiet = 0; ///< the first statement after the last one that publishes
    std::vector<syncs::BufferSet> reads, writes;
};

Group groupOf(const Stmt &body, const Kernel &k, const std::set<const void *> &shared) {
    Group g;
    g.stmts = Seq::items(body);
    for (size_t i = 0; i < g.stmts.size(); ++i) {
        if (publishes(g.stmts[i])) g.quiet = i + 1;
        syncs::Accesses acc(layoutsOf(k), false, k);
        acc.visit(g.stmts[i]);
        syncs::BufferSet r, w;
        for (auto *b : acc.p.reads) if (shared.count(b)) r.insert(b);
        for (auto *b : acc.p.writes) if (shared.count(b)) w.insert(b);
        g.reads.push_back(r), g.writes.push_back(w);
    }
    return g;
}

/// The shared buffers `g` writes (or, `reads`, reads) after its last publication.
syncs::BufferSet quietAccesses(const Group &g, bool reads) {
    syncs::BufferSet out;
    for (size_t i = g.quiet; i < g.stmts.size(); ++i)
        for (auto *b : reads ? g.reads[i] : g.writes[i]) out.insert(b);
    return out;
}

/// The consumer's warp-group branches `if warp_group(0): ... elif warp_group(1): ...` (condition and body), or none.
std::vector<std::pair<Expr, Stmt>> groupBranches(const Stmt &consumer) {
    std::vector<std::pair<Expr, Stmt>> out;
    Stmt s = consumer;
    while (s) {
        auto i = as<IfThenElse>(s);
        auto c = i ? as<Call>(i->cond) : nullptr;
        if (!c || !lib::is(*c, lib::Fn::WarpGroup)) return {};
        if (!constInt(lib::arg(*c, lib::Fn::WarpGroup, "group"))) return {};
        out.push_back({i->cond, i->then});
        s = i->otherwise;
    }
    return out;
}

/// The consumer with A -> B exchanges ordered, for every pair of groups that has one (the same consumer if none).
Stmt orderConsumer(const Stmt &consumer, const Kernel &k, std::set<int64_t> &used) {
    auto branches = groupBranches(consumer);
    if (branches.size() < 2) return consumer;
    std::set<const void *> shared;
    for (auto &b : k.allocs)
        if (b && b->scope == Scope::Shared) shared.insert(storageOf(k, b.get()));
    std::vector<Group> groups;
    for (auto &[cond, body] : branches) groups.push_back(groupOf(body, k, shared));
    // Per group, what is inserted after (arrives) or before (waits) each of its statements.
    std::vector<std::vector<std::vector<Stmt>>> after(groups.size()), before(groups.size());
    for (size_t i = 0; i < groups.size(); ++i)
        after[i].resize(groups[i].stmts.size()), before[i].resize(groups[i].stmts.size());
    bool changed = false;
    for (size_t a = 0; a < groups.size(); ++a)
        for (size_t b = 0; b < groups.size(); ++b) {
            if (a == b) continue;
            const Group &A = groups[a], &B = groups[b];
            syncs::BufferSet handed = quietAccesses(A, false), back = quietAccesses(B, false), read = quietAccesses(B, true);
            syncs::BufferSet aTouched = quietAccesses(A, true);
            aTouched.insert(handed.begin(), handed.end());
            if (syncs::intersects(back, aTouched)) continue; // both ways: which goes first is not the program's
            std::optional<size_t> lastWrite, firstRead;
            for (size_t i = A.quiet; i < A.stmts.size(); ++i)
                if (syncs::intersects(A.writes[i], read)) lastWrite = i;
            for (size_t i = B.quiet; i < B.stmts.size() && !firstRead; ++i)
                if (syncs::intersects(B.reads[i], handed)) firstRead = i;
            if (!lastWrite || !firstRead) continue;
            int64_t id = lib::kFirstPartialBarrier;
            while (id <= 15 && used.count(id)) ++id;
            if (id > 15) return consumer;
            used.insert(id);
            auto i32 = [](int64_t v) { return IntImm::make(DType::Int32, v); };
            SourceRange at = B.stmts[*firstRead]->loc;
            after[a][*lastWrite].push_back(
                lib::stmt(lib::Fn::NamedArrive, {i32(id), i32(2 * kGroupThreads)}, A.stmts[*lastWrite]->loc));
            before[b][*firstRead].push_back(lib::stmt(lib::Fn::NamedSync, {i32(id), i32(2 * kGroupThreads)}, at));
            changed = true;
        }
    if (!changed) return consumer;
    Stmt chain;
    for (size_t i = groups.size(); i-- > 0;) {
        std::vector<Stmt> body;
        for (size_t s = 0; s < groups[i].stmts.size(); ++s) {
            body.insert(body.end(), before[i][s].begin(), before[i][s].end());
            body.push_back(groups[i].stmts[s]);
            body.insert(body.end(), after[i][s].begin(), after[i][s].end());
        }
        chain = IfThenElse::make(branches[i].first, Seq::make(body, branches[i].second->loc), chain, consumer->loc);
    }
    return chain;
}

struct Roles : IRMutator {
    using IRMutator::visit;
    const Kernel &k;
    std::set<int64_t> used;
    explicit Roles(const Kernel &k) : k(k), used(syncs::namedBarrierIds(k.body)) {
        for (int64_t id = 0; id < lib::kFirstPartialBarrier; ++id) used.insert(id); // __syncthreads', the roles', ping-pong's
    }
    Stmt visit(const std::shared_ptr<const WarpRoles> &op) override {
        Stmt consumer = orderConsumer(op->consumer, k, used);
        if (consumer == op->consumer) return op;
        return WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, op->producer,
                               consumer, op->loc);
    }
};

} // namespace

Program orderRoleExchanges(const Program &p) {
    return eachKernel(p, [](const KernelP &k) -> KernelP {
        Roles r(*k);
        Stmt body = r.mutate(k->body);
        if (body == k->body) return k;
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        return nk;
    });
}

} // namespace tilec::passes
