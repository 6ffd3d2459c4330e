/// \file
/// Ping-pong of the consumer warpgroups (include/tilec/passes/PingPongConsumers.h).
#include "tilec/passes/PingPongConsumers.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ConsumerRewriter.h"

namespace tilec::passes {

using namespace ir;

namespace {

using consumer::i32;
using consumer::op;

class Turns : public ConsumerRewriter {
  public:
    explicit Turns(const Var &tx) : turns_(tx) {}

  protected:
    bool takes(const WarpRoles &r) const override { return r.consumerThreads == kPingPongThreads; }

    std::optional<std::vector<Stmt>> rewrite(const Stmt &s) override {
        auto f = as<For>(s);
        // ... unless overlapScores already gave it turns (a hand-over: a bar.arrive, which no other consumer
        // code issues; their syncs among themselves are bar.sync).
        if (!f || !isAttentionLoop(*f) || callsAny(f->body, {lib::Fn::NamedArrive}))
            return std::nullopt;
        return std::vector<Stmt>{turns_.open(f->loc), withTurns(*f), turns_.close(f->loc)};
    }

  private:
    PingPongTurns turns_;

    /// Each wgmma of the loop's body between this warpgroup's turn and the hand-over to the other's.
    Stmt withTurns(const For &f) const {
        std::vector<Stmt> body;
        for (auto &s : as<Seq>(f.body)->stmts) {
            const bool wgmma = isCall(s, lib::Fn::WgmmaSS) || isCall(s, lib::Fn::WgmmaRS);
            if (wgmma)
                body.push_back(turns_.take(s->loc));
            body.push_back(s);
            if (wgmma)
                body.push_back(turns_.handOver(s->loc));
        }
        return For::make(f.var, f.min, f.extent, f.forKind, f.numStages,
                         Seq::make(std::move(body), f.body->loc), f.loc);
    }
};

} // namespace

Program pingPongConsumers(const Program &p) {
    Program out = p;
    for (auto &k : out.kernels) {
        if (!k->producerThreads || !k->threadIdx)
            continue; // no warp roles
        Stmt body = Turns(k->threadIdx).mutate(k->body);
        if (body == k->body)
            continue;
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        k = nk;
    }
    return out;
}

namespace {
Stmt barrier(lib::Fn f, Expr id, const SourceRange &loc) {
    return lib::stmt(f, {std::move(id), i32(kPingPongThreads)}, loc);
}
} // namespace

/// A loop whose body issues wgmmas of both kinds at its top level: attention's QK^T (SS) and P.V (RS).
bool isAttentionLoop(const For &f) {
    auto q = as<Seq>(f.body);
    if (!q)
        return false;
    bool ss = false, rs = false;
    for (auto &s : q->stmts) {
        ss |= isCall(s, lib::Fn::WgmmaSS);
        rs |= isCall(s, lib::Fn::WgmmaRS);
    }
    return ss && rs;
}

PingPongTurns::PingPongTurns(const Var &tx)
    : wg_(op(BinaryOp::FloorDiv, tx, i32(128))),
      warpWg_(lib::call(lib::Fn::Shfl, {intImm(0xFFFFFFFFll, DType::Int64), wg_, i32(0), i32(32)}, {}, DType::Int32)) {}

Stmt PingPongTurns::take(const SourceRange &loc) const {
    return barrier(lib::Fn::NamedSync, op(BinaryOp::Add, i32(lib::kPingPongBarrier), wg_), loc);
}

Stmt PingPongTurns::handOver(const SourceRange &loc) const {
    return barrier(lib::Fn::NamedArrive, op(BinaryOp::Sub, i32(lib::kPingPongBarrier + 1), wg_), loc);
}

Stmt PingPongTurns::open(const SourceRange &loc) const {
    return IfThenElse::make(op(BinaryOp::EQ, warpWg_, i32(1)), barrier(lib::Fn::NamedArrive, i32(lib::kPingPongBarrier), loc),
                            nullptr, loc);
}

Stmt PingPongTurns::close(const SourceRange &loc) const {
    return IfThenElse::make(op(BinaryOp::EQ, warpWg_, i32(0)), barrier(lib::Fn::NamedSync, i32(lib::kPingPongBarrier), loc),
                            nullptr, loc);
}

} // namespace tilec::passes
