/// \file
/// Intra-warpgroup overlap of attention's QK^T and softmax (include/tilec/passes/OverlapScores.h).
#include "tilec/passes/OverlapScores.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ConsumerRewriter.h"
#include "tilec/passes/HopperOperands.h"

namespace tilec::passes {

using namespace ir;

namespace {

using consumer::i32;
using consumer::op;

Stmt wait(int pending, const SourceRange &loc) {
    return lib::stmt(lib::Fn::WgmmaWait, {i32(pending)}, loc);
}

/// Whether `s` releases a ring stage: an arrive on its empty barrier, possibly under a lane condition.
bool isRelease(const Stmt &s) {
    if (isCall(s, lib::Fn::MbarrierArrive))
        return true;
    auto i = as<IfThenElse>(s);
    return i && !i->otherwise && isCall(i->then, lib::Fn::MbarrierArrive);
}

/// The statement with every access to register array `from` made to `to`.
class Rename : public IRMutator {
  public:
    Rename(const BufferNode *from, Buffer to) : from_(from), to_(std::move(to)) {}
    using IRMutator::visit;
    Expr visit(const std::shared_ptr<const Load> &op) override {
        Expr e = IRMutator::visit(op);
        auto l = as<Load>(e);
        return l && l->buffer.get() == from_ ? Load::make(to_, l->indices, l->loc) : e;
    }
    Stmt visit(const std::shared_ptr<const Store> &op) override {
        Stmt s = IRMutator::visit(op);
        auto st = as<Store>(s);
        return st && st->buffer.get() == from_ ? Store::make(to_, st->indices, st->value, st->loc) : s;
    }

  private:
    const BufferNode *from_;
    Buffer to_;
};

/// The positions of an attention loop body's parts (see the header), or nothing when the body is not one.
struct Parts {
    size_t ss = 0, rk = 0, rs = 0, rv = 0; ///< QK^T, K's release, P.V, V's release
    Buffer scores;                         ///< QK^T's accumulator
};

std::optional<Parts> match(const For &f) {
    auto q = as<Seq>(f.body);
    if (!q || f.forKind != ForKind::Serial)
        return std::nullopt;
    const auto &b = q->stmts;
    Parts p;
    int ss = 0, rs = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        if (isCall(b[i], lib::Fn::WgmmaSS))
            p.ss = i, ++ss;
        if (isCall(b[i], lib::Fn::WgmmaRS))
            p.rs = i, ++rs;
    }
    if (ss != 1 || rs != 1 || p.ss < 1 || p.rs < p.ss + 4 || b.size() < p.rs + 3)
        return std::nullopt;
    const Load *acc = addressedLoad(lib::arg(*callOf(b[p.ss]), lib::Fn::WgmmaSS, "c"));
    if (!acc || acc->buffer->scope != Scope::Local || acc->indices.size() != 1 || constInt(acc->indices[0]) != std::optional<int64_t>(0))
        return std::nullopt;
    p.scores = acc->buffer;
    // Before QK^T: the clear of the scores, then the wait for K's stage.
    if (p.ss != 2 || !isCall(b[1], lib::Fn::MbarrierWait) ||
        !clearsAllRegisters(b[0], p.scores.get(), p.scores->constElements()))
        return std::nullopt;
    // After each wgmma: wgmma_wait(0), the operands pinned, the stage's release; QK^T pins the scores alone.
    auto tail = [&](size_t from, size_t *release) {
        if (!isCall(b[from], lib::Fn::WgmmaWait) || constInt(callOf(b[from])->args[0]) != std::optional<int64_t>(0))
            return false;
        size_t i = from + 1;
        while (i < b.size() && isCall(b[i], lib::Fn::WgmmaFenceOperands))
            ++i;
        if (i == b.size() || !isRelease(b[i]))
            return false;
        *release = i;
        return true;
    };
    if (!tail(p.ss + 1, &p.rk) || p.rk != p.ss + 3 || !tail(p.rs + 1, &p.rv) || p.rv + 1 != b.size())
        return std::nullopt;
    const Load *pinned = addressedLoad(lib::arg(*callOf(b[p.ss + 2]), lib::Fn::WgmmaFenceOperands, "regs"));
    auto count = constInt(lib::arg(*callOf(b[p.ss + 2]), lib::Fn::WgmmaFenceOperands, "count"));
    if (!pinned || pinned->buffer != p.scores || !count || *count != p.scores->constElements())
        return std::nullopt;
    // The softmax: no wgmma or barrier of its own, then the wait for V's stage.
    if (!isCall(b[p.rs - 1], lib::Fn::MbarrierWait) || p.rs - 1 <= p.rk + 1)
        return std::nullopt;
    for (size_t i = p.rk + 1; i + 1 < p.rs; ++i) {
        // no wgmma or mbarrier library call
        if (callsAny(b[i], {lib::Fn::WgmmaSS, lib::Fn::WgmmaRS, lib::Fn::WgmmaWait, lib::Fn::WgmmaWaitAcc,
                            lib::Fn::WgmmaFenceOperands, lib::Fn::MbarrierWait, lib::Fn::MbarrierArrive}))
            return std::nullopt;
    }
    return p;
}

class Overlap : public ConsumerRewriter {
  public:
    std::vector<Buffer> added; ///< the second score accumulators

  protected:
    std::optional<std::vector<Stmt>> rewrite(const Stmt &s) override {
        auto f = as<For>(s);
        std::optional<Parts> p = f ? match(*f) : std::nullopt;
        if (!p)
            return std::nullopt;
        return rotate(*f, *p);
    }

  private:
    /// The loop rotated (see the header): prologue, loop, epilogue.
    std::vector<Stmt> rotate(const For &f, const Parts &p) {
        const auto &b = as<Seq>(f.body)->stmts;
        const SourceRange &loc = f.loc;
        const Buffer &scores = p.scores;
        Buffer next = makeBuffer(scores->name + "_next", scores->scope, scores->dtype, scores->shape, scores->loc);
        added.push_back(next);
        Rename toNext(scores.get(), next);
        const Expr ko = f.var, end = op(BinaryOp::Add, f.min, f.extent);
        auto at = [&](const Stmt &s, Expr k) {
            return simplifyIndices(substitute(s, VarMap{{f.var.get(), std::move(k)}}));
        };
        // `s` under `cond`, unless that always holds.
        auto when = [&](const Expr &cond, Stmt s) {
            return constInt(cond) == std::optional<int64_t>(1) ? s : IfThenElse::make(cond, std::move(s), nullptr, loc);
        };
        // The clear of the next scores (by the wgmma library, so that ptxas does not see other instructions
        // define a wgmma's accumulators inside its pipeline, info C7515), the wait for K's stage of block k,
        // QK^T of block k into them.
        const Expr count = i32(next->constElements());
        auto issue = [&](Expr k) {
            return Seq::make({lib::stmt(lib::Fn::WgmmaClear, {count, addressOf(next, {i32(0)})}, b[0]->loc),
                              toNext.mutate(at(b[1], k)), toNext.mutate(at(b[2], k))},
                             loc);
        };
        const Expr notFirst = op(BinaryOp::GT, ko, f.min), hasNext = op(BinaryOp::LT, op(BinaryOp::Add, ko, i32(1)), end);
        const Expr any = op(BinaryOp::GT, f.extent, i32(0));
        const std::vector<Stmt> pinPV(b.begin() + (long)p.rs + 2, b.begin() + (long)p.rv);

        std::vector<Stmt> body;
        // QK^T of ko retired (P.V of ko - 1, issued after it, left in flight), its scores copied for the softmax.
        body.push_back(IfThenElse::make(notFirst, wait(1, loc), wait(0, loc), loc));
        body.push_back(toNext.mutate(b[p.ss + 2]));
        Var e = makeVar("e", DType::Int32, loc);
        body.push_back(For::make(e, i32(0), count, ForKind::Unrolled, 0,
                                 Store::make(scores, {e}, Load::make(next, {e}, loc), loc), loc));
        body.push_back(b[p.rk]); // K's stage of ko
        // QK^T of ko + 1 under this block's softmax; then P.V of ko - 1 retired before the softmax writes the
        // probabilities (its A operand) and rescales the output (its accumulator).
        body.push_back(IfThenElse::make(hasNext, issue(op(BinaryOp::Add, ko, i32(1))), nullptr, loc));
        body.push_back(IfThenElse::make(hasNext, wait(1, loc), wait(0, loc), loc));
        for (auto &s : pinPV)
            body.push_back(s);
        body.push_back(IfThenElse::make(notFirst, at(b[p.rv], op(BinaryOp::Sub, ko, i32(1))), nullptr, loc));
        for (size_t i = p.rk + 1; i <= p.rs; ++i) // the softmax, the wait for V's stage, P.V of ko
            body.push_back(b[i]);

        std::vector<Stmt> out;
        out.push_back(when(any, issue(f.min)));
        out.push_back(For::make(f.var, f.min, f.extent, f.forKind, f.numStages, Seq::make(std::move(body), loc), loc));
        out.push_back(wait(0, loc));
        for (auto &s : pinPV)
            out.push_back(s);
        out.push_back(when(any, at(b[p.rv], op(BinaryOp::Sub, end, i32(1)))));
        return out;
    }
};

} // namespace

Program overlapScores(const Program &p) {
    Program out = p;
    for (auto &k : out.kernels) {
        if (!k->producerThreads)
            continue; // no warp roles
        Overlap o;
        Stmt body = o.mutate(k->body);
        if (body == k->body)
            continue;
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        for (auto &b : o.added)
            nk->allocs.push_back(b);
        k = nk;
    }
    return out;
}

} // namespace tilec::passes
