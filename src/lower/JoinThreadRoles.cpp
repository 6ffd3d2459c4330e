/// \file
/// Concurrent thread-range roles put back into their kernel (include/tilec/passes/JoinThreadRoles.h).
#include "tilec/passes/JoinThreadRoles.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "ConcurrentRoles.h"

#include <algorithm>
#include <map>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// The partial barriers (NamedSync / NamedArrive ids from lib::kFirstPartialBarrier) of a role's code: the
/// highest id, or kFirstPartialBarrier - 1 for none; `shift` moves each by that much.
struct PartialBarriers : IRMutator {
    using IRMutator::visit;
    int64_t shift = 0, highest = lib::kFirstPartialBarrier - 1;
    Expr visit(const std::shared_ptr<const Call> &op) override {
        if (!lib::is(*op, lib::Fn::NamedSync) && !lib::is(*op, lib::Fn::NamedArrive)) return IRMutator::visit(op);
        auto id = constInt(op->args[0]);
        TILEC_ASSERT(id && *id >= lib::kFirstPartialBarrier,
                     "internal error: a thread-range role holds a named barrier that is not a partial one");
        highest = std::max(highest, *id + shift);
        TILEC_ASSERT(*id + shift <= 15, "internal error: thread-range roles need more than 16 named barriers");
        if (!shift) return op;
        std::vector<Expr> args = op->args;
        args[0] = intImm(*id + shift, op->args[0]->dtype);
        return Call::make(op->dtype, op->name, std::move(args), op->loc);
    }
};

/// Whether `s` is a WarpRoles that splitRoles left empty.
const WarpRoles *emptyRoles(const Stmt &s) {
    auto r = as<WarpRoles>(s);
    return r && Seq::items(r->consumer).empty() && Seq::items(r->producer).empty() ? r : nullptr;
}

/// Kernel `k` with its roles' code from `roles` (by name), or `k` where it has none.
KernelP join(const KernelP &k, const std::map<std::string, KernelP> &roles) {
    if (k->producerThreads || !k->body) return k;
    auto nk = std::make_shared<Kernel>(*k);
    std::vector<Stmt> top = Seq::items(k->body);
    size_t index = 0;
    for (auto &s : top) {
        const WarpRoles *r = emptyRoles(s);
        if (!r) continue;
        auto c = roles.find(concurrent::roleKernelName(k->name, index, true));
        auto p = roles.find(concurrent::roleKernelName(k->name, index, false));
        if (c == roles.end() || p == roles.end()) continue;
        ++index;
        for (const KernelP &role : {c->second, p->second}) {
            TILEC_ASSERT(role->tensorMaps.empty() && !role->needsTma && !role->producerThreads && !role->persistent,
                         "internal error: a thread-range role was lowered with TMA or warp roles of its own");
            for (auto &b : role->allocs)
                if (std::find(nk->allocs.begin(), nk->allocs.end(), b) == nk->allocs.end()) nk->allocs.push_back(b);
            for (auto &v : role->fragmentViews)
                if (std::find(nk->fragmentViews.begin(), nk->fragmentViews.end(), v) == nk->fragmentViews.end())
                    nk->fragmentViews.push_back(v);
            for (auto &t : role->tileLayouts) nk->recordTileLayout(t);
            for (auto &a : role->assumptions)
                if (std::find(nk->assumptions.begin(), nk->assumptions.end(), a) == nk->assumptions.end())
                    nk->assumptions.push_back(a);
        }
        PartialBarriers consumerIds;
        Stmt consumer = consumerIds.mutate(c->second->body);
        PartialBarriers producerIds;
        producerIds.shift = consumerIds.highest - (lib::kFirstPartialBarrier - 1);
        Stmt producer = producerIds.mutate(p->second->body);
        if (k->threadIdx && uses(producer, k->threadIdx.get())) {
            const SourceRange &at = r->loc;
            Expr launched = lib::call(lib::Fn::RoleThread, {intImm(r->consumerThreads), intImm(r->producerThreads)}, at, DType::Int32);
            producer = substitute(producer, VarMap{{k->threadIdx.get(), binary(BinaryOp::Sub, launched, intImm(r->consumerThreads), at)}});
        }
        s = WarpRoles::make(r->consumerThreads, r->producerThreads, 0, 0, producer, consumer, r->loc);
    }
    if (!index) return k;
    nk->body = Seq::make(std::move(top), k->body->loc);
    return nk;
}

} // namespace

Program joinThreadRoles(const Program &p) {
    std::map<std::string, KernelP> roles;
    std::set<std::string> owners;
    for (auto &k : p.kernels)
        if (auto dot = k->name.find(".role"); dot != std::string::npos) roles[k->name] = k, owners.insert(k->name.substr(0, dot));
    if (roles.empty()) return p;
    Program out;
    for (auto &k : p.kernels)
        if (k->name.find(".role") == std::string::npos) out.kernels.push_back(owners.count(k->name) ? join(k, roles) : k);
    return out;
}

} // namespace tilec::passes
