/// \file
/// Ping-pong of the consumer warpgroups (include/tilec/passes/PingPongConsumers.h).
#include "tilec/passes/PingPongConsumers.h"

#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/ConsumerRewriter.h"
#include "tilec/passes/PingPongTurns.h"

namespace tilec::passes {

using namespace ir;

namespace {

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
        k = Turns(k->threadIdx).mutate(k);
    }
    return out;
}

} // namespace tilec::passes
