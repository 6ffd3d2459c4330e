/// \file
/// Ping-pong of the consumer warpgroups (include/tilec/passes/PingPongConsumers.h).
#include "tilec/passes/PingPongConsumers.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ConsumerRewriter.h"

namespace tilec::passes {

using namespace ir;

namespace {

using consumer::i32;
using consumer::op;

constexpr int kTurnThreads = 256; ///< both consumer warpgroups take part in each turn's barrier

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

class Turns : public ConsumerRewriter {
  public:
    explicit Turns(const Var &tx) : wg_(op(BinaryOp::FloorDiv, tx, i32(128))) {}

  protected:
    bool takes(const WarpRoles &r) const override { return r.consumerThreads == kTurnThreads; }

    std::optional<std::vector<Stmt>> rewrite(const Stmt &s) override {
        auto f = as<For>(s);
        if (!f || !isAttentionLoop(*f))
            return std::nullopt;
        const SourceRange &loc = f->loc;
        return std::vector<Stmt>{
            IfThenElse::make(isWarpgroup(1), barrier(lib::Fn::NamedArrive, i32(lib::kPingPongBarrier), loc), nullptr,
                             loc),
            withTurns(*f),
            IfThenElse::make(isWarpgroup(0), barrier(lib::Fn::NamedSync, i32(lib::kPingPongBarrier), loc), nullptr,
                             loc)};
    }

  private:
    Expr wg_; ///< the consumer warpgroup, 0 or 1

    Expr isWarpgroup(int g) const { return op(BinaryOp::EQ, wg_, i32(g)); }
    Stmt barrier(lib::Fn f, Expr id, const SourceRange &loc) const {
        return lib::stmt(f, {std::move(id), i32(kTurnThreads)}, loc);
    }

    /// Each wgmma of the loop's body between this warpgroup's turn and the hand-over to the other's.
    Stmt withTurns(const For &f) const {
        const Expr mine = op(BinaryOp::Add, i32(lib::kPingPongBarrier), wg_);
        const Expr other = op(BinaryOp::Sub, i32(lib::kPingPongBarrier + 1), wg_);
        std::vector<Stmt> body;
        for (auto &s : as<Seq>(f.body)->stmts) {
            const bool wgmma = isCall(s, lib::Fn::WgmmaSS) || isCall(s, lib::Fn::WgmmaRS);
            if (wgmma)
                body.push_back(barrier(lib::Fn::NamedSync, mine, s->loc));
            body.push_back(s);
            if (wgmma)
                body.push_back(barrier(lib::Fn::NamedArrive, other, s->loc));
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

} // namespace tilec::passes
