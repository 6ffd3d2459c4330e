/// \file
/// The turns of the consumer warpgroups at the tensor cores (include/tilec/passes/PingPongTurns.h).
#include "tilec/passes/PingPongTurns.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/ConsumerRewriter.h"

namespace tilec::passes {

using namespace ir;
using consumer::i32;
using consumer::op;

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
