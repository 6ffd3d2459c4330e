/// \file
/// Intra-warpgroup overlap of attention's softmax with its GEMMs (include/tilec/passes/OverlapScores.h).
#include "tilec/passes/OverlapScores.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ConsumerRewriter.h"
#include "tilec/passes/HopperOperands.h"
#include "tilec/passes/PingPongTurns.h"

#include <algorithm>
#include <set>

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

/// The buffers a statement reads and writes (an address passed to a call counts as both).
struct Access : IRVisitor {
    std::set<const BufferNode *> reads, writes;
    using IRVisitor::visit;
    void visit(const Load &op) override {
        reads.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        writes.insert(op.buffer.get());
        IRVisitor::visit(op);
    }
    void visit(const Call &op) override {
        for (auto &a : op.args)
            if (const Load *l = addressedLoad(a))
                writes.insert(l->buffer.get());
        IRVisitor::visit(op);
    }
    static Access of(const Stmt &s) {
        Access a;
        a.visit(s);
        return a;
    }
    bool meets(const std::set<const BufferNode *> &x, const std::set<const BufferNode *> &y) const {
        for (auto *b : x)
            if (y.count(b))
                return true;
        return false;
    }
    /// Whether this statement and `o` may not trade places.
    bool conflicts(const Access &o) const {
        return meets(writes, o.reads) || meets(writes, o.writes) || meets(reads, o.writes);
    }
};

/// Where a softmax statement goes in the rotated loop: under P.V of the previous block (early), after P.V of
/// the previous block has retired (late: it touches P.V's operands), or in the next iteration between its
/// QK^T and the P.V of this block (rescale: it writes P.V's accumulator only).
enum class Place { Early, Late, Rescale };

/// The positions of an attention loop body's parts (see the header), or nothing when the body is not one.
struct Parts {
    size_t ss = 0, rk = 0, rs = 0, rv = 0; ///< QK^T, K's release, P.V, V's release
    Buffer scores;                         ///< QK^T's accumulator
    std::vector<Place> place;              ///< of the softmax's statements, b[rk + 1, rs - 1)
};

/// Where each softmax statement `soft` goes (see Place): a late statement moves after the early ones that follow
/// it, so a statement that shares a buffer with an earlier late one (the partial sums of a reduction over P, say)
/// is late too; a rescale moves after every statement that follows it and the next block's QK^T (which writes
/// the scores), or is late.
std::vector<Place> placeSoftmax(const std::vector<Stmt> &soft, const BufferNode *probs, const BufferNode *out,
                                const BufferNode *scores) {
    std::vector<Access> acc;
    std::vector<Place> place;
    for (auto &s : soft) {
        acc.push_back(Access::of(s));
        const Access &a = acc.back();
        const bool p = a.reads.count(probs) || a.writes.count(probs), o = a.reads.count(out) || a.writes.count(out);
        place.push_back(p ? Place::Late : o ? Place::Rescale : Place::Early);
    }
    for (size_t i = 0; i < soft.size(); ++i) {
        if (place[i] != Place::Rescale)
            continue;
        bool moves = !acc[i].reads.count(scores) && !acc[i].writes.count(scores);
        for (size_t j = i + 1; j < soft.size() && moves; ++j)
            moves = !acc[i].conflicts(acc[j]);
        if (!moves)
            place[i] = Place::Late; // after P.V of the previous block has retired, in this iteration
    }
    for (size_t j = 0; j < soft.size(); ++j)
        for (size_t i = 0; i < j && place[j] != Place::Late; ++i)
            if (place[i] == Place::Late && acc[i].conflicts(acc[j]))
                place[j] = Place::Late;
    return place;
}

/// The parts of `f`'s body, or nothing with `why` said.
std::optional<Parts> match(const For &f, std::string &why) {
    auto q = as<Seq>(f.body);
    why = "its body is not QK^T, a softmax and P.V each behind its stage's wait, as warp roles leave them";
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
    const Load *a = addressedLoad(lib::arg(*callOf(b[p.rs]), lib::Fn::WgmmaRS, "a"));
    const Load *c = addressedLoad(lib::arg(*callOf(b[p.rs]), lib::Fn::WgmmaRS, "c"));
    if (!a || !c)
        return std::nullopt;
    p.place = placeSoftmax(std::vector<Stmt>(b.begin() + (long)p.rk + 1, b.begin() + (long)p.rs - 1), a->buffer.get(),
                           c->buffer.get(), p.scores.get());
    return p;
}

class Overlap : public ConsumerRewriter {
  public:
    Overlap(const LoweringOptions &o, Var tx, const SourceManager *sources, std::string kernel)
        : options_(o), tx_(std::move(tx)), sources_(sources), kernel_(std::move(kernel)) {}

    Stmt visit(const std::shared_ptr<const WarpRoles> &op) override {
        twoGroups_ = tx_ && op->consumerThreads == kPingPongThreads;
        consumerRegs_ = op->consumerRegs > 0 ? op->consumerRegs : 255;
        return ConsumerRewriter::visit(op);
    }

  protected:
    std::optional<std::vector<Stmt>> rewrite(const Stmt &s) override {
        auto f = as<For>(s);
        if (!f || !isAttentionLoop(*f))
            return std::nullopt;
        std::string why;
        std::optional<Parts> p = match(*f, why);
        const std::string what = "kernel '" + kernel_ + "': attention loop ";
        const auto [headDim, bits] = qkShape(*f);
        const int64_t stages = valueStages(*f);
        const AttentionSchedule schedule = options_.attentionSchedule(headDim, bits, stages);
        if (!schedule.overlap && stages < 2 && options_.attentionSchedule(headDim, bits).overlap) {
            remark(sources_, f->loc, what + "kept in order: P.V's tile has one stage (T.Pipelined(num_stages=1)), so "
                                            "rotated, V of block ko would load only after P.V of ko - 1 retired and "
                                            "right before P.V of ko (--intra-overlap asks for the overlap)");
            return std::nullopt;
        }
        if (!schedule.overlap) {
            remark(sources_, f->loc, what + "kept in order: head dimension " + std::to_string(headDim) + " of " +
                                         std::to_string(bits) + "-bit operands, not 16-bit from " +
                                         std::to_string(LoweringOptions::kAttentionOverlapHeadDim) +
                                         " on (--intra-overlap asks for the overlap)");
            return std::nullopt;
        }
        // Rotated, the loop keeps P.V's accumulator, the next block's scores and P (P.V's A) live at once: where
        // they leave less than the room every consumer needs beside its fragments (WarpRolePlan's 64 registers),
        // ptxas spills in the loop (mha_inference: 224 of 240, 128 bytes), which costs more than the overlap gains.
        if (const int64_t live = rotatedRegisters(*f); options_.intraOverlap == Choice::Auto && live + kRoom > consumerRegs_) {
            remark(sources_, f->loc, what + "kept in order: rotated, it would keep " + std::to_string(live) +
                                         " registers a consumer thread live in P.V's accumulator, the scores and P, "
                                         "more than its " + std::to_string(consumerRegs_) + " leave beside " +
                                         std::to_string(kRoom) + " for the rest (--intra-overlap asks for the overlap)");
            return std::nullopt;
        }
        turns_ = twoGroups_ && schedule.turns;
        if (!p) {
            remark(sources_, f->loc, what + "kept in order (intra-warpgroup overlap): " + why);
            return std::nullopt;
        }
        auto count = [&](Place w) { return std::to_string(std::count(p->place.begin(), p->place.end(), w)); };
        remark(sources_, f->loc,
               what + "in FlashAttention-3's intra-warpgroup schedule: QK^T of ko issued with P.V of "
                      "ko - 1, " + count(Place::Early) + " softmax statements under that P.V, " + count(Place::Late) +
                   " after it, " + count(Place::Rescale) + " rescales of the output under the next QK^T" +
                   (turns_ ? "; both wgmmas one ping-pong turn" : ""));
        return rotate(*f, *p);
    }

  private:
    LoweringOptions options_;
    Var tx_;
    const SourceManager *sources_;
    std::string kernel_;
    bool twoGroups_ = false; ///< this warp-role kernel has the two consumer warpgroups that turns need
    int consumerRegs_ = 255; ///< the registers a consumer thread of this warp-role kernel has (setmaxnreg)
    /// Registers a consumer needs beside its fragments: addresses, descriptors, the softmax's row state.
    static constexpr int64_t kRoom = 64;
    bool turns_ = false;     ///< ... and the loop being rotated takes them

    /// The reduction of the loop's QK^T (its first wgmma SS), the head dimension, and the bits of its
    /// operands; {0, 0} where there is none.
    static std::pair<int64_t, int> qkShape(const For &f) {
        for (auto &s : as<Seq>(f.body)->stmts)
            if (isCall(s, lib::Fn::WgmmaSS)) {
                const Load *a = addressedLoad(lib::arg(*callOf(s), lib::Fn::WgmmaSS, "a"));
                return {constInt(lib::arg(*callOf(s), lib::Fn::WgmmaSS, "K")).value_or(0),
                        a ? a->buffer->dtype.bits() : 0};
            }
        return {0, 0};
    }

    /// The 32-bit registers per consumer thread that the rotated loop keeps live together: the accumulators of
    /// QK^T (the scores) and P.V (the output), and P.V's A from registers (P), until P.V retires.
    static int64_t rotatedRegisters(const For &f) {
        int64_t words = 0;
        for (auto &s : as<Seq>(f.body)->stmts) {
            const bool ss = isCall(s, lib::Fn::WgmmaSS), rs = isCall(s, lib::Fn::WgmmaRS);
            if (!ss && !rs) continue;
            const lib::Fn fn = ss ? lib::Fn::WgmmaSS : lib::Fn::WgmmaRS;
            auto c = [&](const char *n) { return constInt(lib::arg(*callOf(s), fn, n)).value_or(0); };
            const int64_t tiles = c("wgM") ? c("M") / c("wgM") / 64 : 0; // 64-row tiles of each warpgroup
            words += tiles * (c("wgN") ? c("N") / c("wgN") / 2 : 0);     // its accumulator: N / 2 a tile
            if (const Load *a = rs ? addressedLoad(lib::arg(*callOf(s), fn, "a")) : nullptr)
                words += tiles * (c("K") / 16) * 8 * a->buffer->dtype.bits() / 32; // P: 8 elements a k16 step
        }
        return words;
    }

    /// The stages of the ring P.V's tile (its wgmma RS's B operand) is loaded into: the leading dimension
    /// warp roles gave it; a tile outside any ring (loaded once) is never waited for again, as good as two.
    static int64_t valueStages(const For &f) {
        for (auto &s : as<Seq>(f.body)->stmts)
            if (isCall(s, lib::Fn::WgmmaRS)) {
                const Load *b = addressedLoad(lib::arg(*callOf(s), lib::Fn::WgmmaRS, "b"));
                if (b && b->buffer->shape.size() == 3) return constInt(b->buffer->shape[0]).value_or(2);
                return 2;
            }
        return 2;
    }

    /// The loop rotated (see the header): the first block peeled, the loop over the rest, the last P.V.
    std::vector<Stmt> rotate(const For &f, const Parts &p) {
        const auto &b = as<Seq>(f.body)->stmts;
        const SourceRange &loc = f.loc;
        const Expr end = op(BinaryOp::Add, f.min, f.extent), ko = f.var;
        const Expr prev = op(BinaryOp::Sub, ko, i32(1)), last = op(BinaryOp::Sub, end, i32(1));
        auto at = [&](const Stmt &s, const Expr &k) {
            return simplifyIndices(substitute(s, VarMap{{f.var.get(), k}}));
        };
        // `s` under `cond`, unless that always holds.
        auto when = [&](const Expr &cond, Stmt s) {
            return constInt(cond) == std::optional<int64_t>(1) ? s : IfThenElse::make(cond, std::move(s), nullptr, loc);
        };
        std::vector<Stmt> early, late, rescale; // of block ko
        for (size_t i = 0; i < p.place.size(); ++i) {
            const Stmt &s = b[p.rk + 1 + i];
            (p.place[i] == Place::Early ? early : p.place[i] == Place::Late ? late : rescale).push_back(s);
        }
        const std::vector<Stmt> pinPV(b.begin() + (long)p.rs + 2, b.begin() + (long)p.rv);
        const PingPongTurns turns(tx_);
        auto add = [&](std::vector<Stmt> &to, const std::vector<Stmt> &from, const Expr &k) {
            for (auto &s : from)
                to.push_back(at(s, k));
        };
        // QK^T of block k issued (the clear, the wait for K's stage, the wgmma), its turn taken just before it.
        // The clear by the wgmma library, so that no zeroing sinks into the pipeline of P.V (info C7515).
        const Stmt clear = lib::stmt(lib::Fn::WgmmaClear, {i32(p.scores->constElements()), addressOf(p.scores, {i32(0)})},
                                     b[0]->loc);
        auto issueQK = [&](std::vector<Stmt> &to, const Expr &k) {
            to.push_back(clear);
            to.push_back(at(b[1], k));
            if (turns_)
                to.push_back(turns.take(loc));
            to.push_back(at(b[p.ss], k));
        };
        // P.V of block k issued after its rescale of the output, the turn handed over after it.
        auto issuePV = [&](std::vector<Stmt> &to, const Expr &k, bool take) {
            add(to, rescale, k);
            to.push_back(at(b[p.rs - 1], k));
            if (take && turns_)
                to.push_back(turns.take(loc));
            to.push_back(at(b[p.rs], k));
            if (turns_)
                to.push_back(turns.handOver(loc));
        };

        // The first block: QK^T, then its softmax with nothing else in flight.
        std::vector<Stmt> first;
        issueQK(first, f.min);
        if (turns_)
            first.push_back(turns.handOver(loc));
        first.push_back(wait(0, loc));
        first.push_back(at(b[p.ss + 2], f.min));
        first.push_back(at(b[p.rk], f.min));
        add(first, early, f.min);
        add(first, late, f.min);

        // Block ko: its QK^T and P.V of ko - 1 issued together; QK^T retired (P.V left in flight) and K's stage
        // released; the early softmax under P.V; P.V retired and V's stage of ko - 1 released; the late part.
        std::vector<Stmt> body;
        issueQK(body, ko);
        issuePV(body, prev, false);
        body.push_back(wait(1, loc));
        body.push_back(b[p.ss + 2]);
        body.push_back(b[p.rk]);
        add(body, early, ko);
        body.push_back(wait(0, loc));
        add(body, pinPV, ko);
        body.push_back(at(b[p.rv], prev));
        add(body, late, ko);

        // The last block's P.V.
        std::vector<Stmt> lastPV;
        issuePV(lastPV, last, true);
        lastPV.push_back(wait(0, loc));
        add(lastPV, pinPV, last);
        lastPV.push_back(at(b[p.rv], last));

        const Expr any = op(BinaryOp::GT, f.extent, i32(0));
        std::vector<Stmt> out;
        out.push_back(when(any, Seq::make(std::move(first), loc)));
        out.push_back(For::make(f.var, op(BinaryOp::Add, f.min, i32(1)), op(BinaryOp::Sub, f.extent, i32(1)), f.forKind,
                                f.numStages, Seq::make(std::move(body), loc), loc));
        out.push_back(when(any, Seq::make(std::move(lastPV), loc)));
        if (turns_) {
            out.insert(out.begin(), turns.open(loc));
            out.push_back(turns.close(loc));
        }
        return out;
    }
};

} // namespace

Program overlapScores(const Program &p, const LoweringOptions &o, const SourceManager *sources) {
    Program out = p;
    for (auto &k : out.kernels) {
        if (!k->producerThreads)
            continue; // no warp roles
        k = Overlap(o, k->threadIdx, sources, k->name).mutate(k);
    }
    return out;
}

} // namespace tilec::passes
