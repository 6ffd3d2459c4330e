/// \file
/// T.async_copy as per-thread cp.async where the program's waits provably cover it
/// (include/tilec/passes/LowerAsyncCopies.h).
#include "tilec/passes/LowerAsyncCopies.h"

#include "AsyncCopyProof.h"
#include "RangeScopedMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedAliases.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// Element strides of a buffer's dimensions and the offset of an index: a tensor's T.StridedTensor placement
/// (one output, linear), else row-major.
struct Placement {
    std::vector<Expr> strides;
    Expr origin; ///< the offset of the index it was made for
};
std::optional<Placement> placement(const Kernel &k, const Buffer &b, const std::vector<Expr> &at) {
    Placement p;
    if (const TensorLayout *l = k.layoutOf(b.get())) {
        if (l->forward.size() != 1 || l->vars.size() != at.size()) return std::nullopt;
        VarMap m;
        for (size_t d = 0; d < at.size(); ++d) {
            auto lin = linearIn(l->forward[0], l->vars[d].get());
            if (!lin) return std::nullopt;
            p.strides.push_back(i32(lin->second));
            m[l->vars[d].get()] = at[d];
        }
        p.origin = simplify(substitute(l->forward[0], m));
        return p;
    }
    p.strides.resize(at.size());
    Expr stride = i32(1), origin = i32(0);
    for (size_t d = at.size(); d-- > 0;) {
        p.strides[d] = stride;
        origin = binary(BinaryOp::Add, origin, binary(BinaryOp::Mul, at[d], stride));
        stride = simplify(binary(BinaryOp::Mul, stride, b->shape[d]));
    }
    p.origin = simplify(origin);
    return p;
}

class Lowering : public RangeScopedMutator {
  public:
    Lowering(const Kernel &k, bool async, const std::map<const StmtNode *, std::set<const BufferNode *>> &landings)
        : RangeScopedMutator(k), k_(k), async_(async), landings_(landings) {}
    int issued = 0, synchronous = 0;

    Stmt visit(const std::shared_ptr<const IfThenElse> &op) override {
        const Copy *c = asyncCopyOf(op);
        if (!c) {
            // an `else` left empty by a dropped wait is none, as the front end makes an empty one
            Stmt r = RangeScopedMutator::visit(op);
            auto i = as<IfThenElse>(r);
            auto q = i && i->otherwise ? as<Seq>(i->otherwise) : nullptr;
            return q && q->stmts.empty() ? IfThenElse::make(i->cond, i->then, nullptr, i->loc) : r;
        }
        auto rowThreads = constInt(lib::arg(*as<Call>(op->cond), lib::Fn::AsyncCopyOn, "rowThreads"));
        auto run = constInt(lib::arg(*as<Call>(op->cond), lib::Fn::AsyncCopyOn, "run"));
        if (async_)
            if (Stmt s = chunks(*c, rowThreads.value_or(0), run.value_or(0), op->loc)) {
                ++issued;
                return s;
            }
        ++synchronous;
        return op->then;
    }
    Stmt visit(const std::shared_ptr<const Evaluate> &op) override {
        const Call *c = as<Call>(op->value);
        if (!async_ && c && (lib::is(*c, lib::Fn::CpAsyncCommit) || lib::is(*c, lib::Fn::CpAsyncWait))) return Seq::make({}, op->loc);
        auto it = landings_.find(op.get());
        if (!async_ || !c || !lib::is(*c, lib::Fn::CpAsyncWait) || it == landings_.end() || it->second.empty()) return op;
        // the destinations that may land here, in the kernel's order of allocation (deterministic)
        std::vector<Stmt> out{op};
        for (auto &b : k_.allocs)
            if (it->second.count(b.get())) out.push_back(lib::stmt(lib::Fn::AsyncLanded, {addressOf(b, std::vector<Expr>(b->shape.size(), i32(0)))}, op->loc));
        return Seq::make(std::move(out), op->loc);
    }

  private:
    const Kernel &k_;
    bool async_;
    const std::map<const StmtNode *, std::set<const BufferNode *>> &landings_;

    /// The copy as chunks of the widest width its regions allow: in the author's row-blocked map where one is
    /// given for the region (`rowThreads` threads a row, runs of `run`: thread i * rowThreads + (j / run) %
    /// rowThreads copies element (i, j), and then reads back what it copied), else chunk c issued by thread
    /// c % threads; null where no width is aligned in both buffers (or none divides the author's runs).
    Stmt chunks(const Copy &c, int64_t rowThreads, int64_t run, const SourceRange &loc) {
        const Region &S = c.src, &D = c.dst;
        std::vector<size_t> sd, dd;
        std::vector<int64_t> ext;
        for (auto [r, dims] : {std::pair{&S, &sd}, std::pair{&D, &dd}})
            for (size_t d = 0; d < r->ranges.size(); ++d) {
                auto e = constInt(r->ranges[d].extent);
                if (!e) return nullptr;
                if (*e != 1) dims->push_back(d);
                if (*e != 1 && r == &S) ext.push_back(*e);
            }
        if (sd.empty() || sd.size() != dd.size() || S.buffer->dtype != D.buffer->dtype || !k_.threadIdx) return nullptr;
        for (size_t i = 0; i < sd.size(); ++i)
            if (constInt(D.ranges[dd[i]].extent) != std::optional<int64_t>(ext[i])) return nullptr;
        // the innermost dimension of the region is each buffer's own
        if (sd.back() + 1 != S.buffer->shape.size() || dd.back() + 1 != D.buffer->shape.size()) return nullptr;
        std::vector<Expr> smin, dmin;
        for (auto &r : S.ranges) smin.push_back(r.min);
        for (auto &r : D.ranges) dmin.push_back(r.min);
        auto sp = placement(k_, S.buffer, smin), dp = placement(k_, D.buffer, dmin);
        if (!sp || !dp) return nullptr;
        // a chunk is contiguous: the region's innermost dimension steps one element in both buffers (a
        // T.StridedTensor's innermost stride may be another constant or a run-time size, 0 included)
        if (constInt(sp->strides[sd.back()]) != std::optional<int64_t>(1) || constInt(dp->strides[dd.back()]) != std::optional<int64_t>(1))
            return nullptr;
        const int eb = D.buffer->dtype.bytes();
        int64_t elems = 1;
        for (int64_t e : ext) elems *= e;
        const bool author = ext.size() == 2 && rowThreads > 0 && run > 0 && ext[0] * rowThreads == k_.threads &&
                            ext[1] % (rowThreads * run) == 0;
        auto aligned = [&](int64_t ve) {
            bool ok = ext.back() % ve == 0 && knownMultiple(sp->origin) % ve == 0 && knownMultiple(dp->origin) % ve == 0 &&
                      knownMultiple(S.buffer->shape.back()) % ve == 0;
            for (size_t i = 0; i + 1 < sd.size(); ++i)
                ok = ok && knownMultiple(sp->strides[sd[i]]) % ve == 0 && knownMultiple(dp->strides[dd[i]]) % ve == 0;
            return ok;
        };
        // The widest width whose chunks every thread shares alike; else (tilec's map only) the widest aligned one,
        // its last round issued by the threads that have a chunk left (a row of a few elements: one thread's
        // 16 bytes, as TileLang issues it, not a synchronous load every thread waits for).
        std::optional<int64_t> uneven;
        for (int bytes : {16, 8, 4}) {
            if (bytes % eb || !aligned(bytes / eb)) continue;
            const int64_t ve = bytes / eb;
            if (!author) {
                if ((elems / ve) % k_.threads == 0) return spread(S, D, sd, dd, ext, ve, loc);
                if (!uneven) uneven = ve;
                continue;
            }
            if (run % ve != 0) continue;
            // row tx / T, run r * T + tx % T of it, chunk q of the run
            Var m = makeVar("ac", DType::Int32, loc);
            const Expr tx = k_.threadIdx;
            std::vector<Expr> local(ext.size());
            const int64_t perRun = run / ve;
            Expr r = binary(BinaryOp::FloorDiv, m, i32(perRun)), q = binary(BinaryOp::FloorMod, m, i32(perRun));
            local[0] = binary(BinaryOp::FloorDiv, tx, i32(rowThreads));
            Expr runAt = binary(BinaryOp::Add, binary(BinaryOp::Mul, r, i32(rowThreads)), binary(BinaryOp::FloorMod, tx, i32(rowThreads)));
            local[1] = binary(BinaryOp::Add, binary(BinaryOp::Mul, runAt, i32(run)), binary(BinaryOp::Mul, q, i32(ve)));
            return issue(S, D, sd, dd, m, local, ve, ext[1] / (rowThreads * run) * perRun, loc);
        }
        return uneven ? spread(S, D, sd, dd, ext, *uneven, loc) : nullptr;
    }

    /// The copy's chunks of `ve` elements in tilec's map: chunk c = m * threads + tx of the region (row-major),
    /// each thread ceil(chunks / threads) rounds m; where the threads do not share the chunks alike, a chunk is
    /// issued only where it exists (`if c < chunks`: the last round, or the only one, on some threads).
    Stmt spread(const Region &S, const Region &D, const std::vector<size_t> &sd, const std::vector<size_t> &dd,
                const std::vector<int64_t> &ext, int64_t ve, const SourceRange &loc) {
        int64_t elems = 1;
        for (int64_t e : ext) elems *= e;
        const int64_t total = elems / ve, per = (total + k_.threads - 1) / k_.threads;
        Var m = makeVar("ac", DType::Int32, loc);
        Expr c = binary(BinaryOp::Add, binary(BinaryOp::Mul, m, i32(k_.threads)), k_.threadIdx);
        std::vector<Expr> local(ext.size());
        int64_t stride = 1;
        for (size_t i = ext.size(); i-- > 0;) {
            local[i] = binary(BinaryOp::FloorDiv, binary(BinaryOp::Mul, c, i32(ve)), i32(stride));
            if (i > 0) local[i] = binary(BinaryOp::FloorMod, local[i], i32(ext[i]));
            stride *= ext[i];
        }
        Expr exists;
        if (total % k_.threads)
            exists = simplify(binary(BinaryOp::LT, per == 1 ? k_.threadIdx : c, i32(total)));
        return issue(S, D, sd, dd, m, local, ve, per, loc, exists, total);
    }

    /// Thread tx's chunks m = 0 .. per - 1, chunk m at `local` (its first element's index in the region's non-unit
    /// dimensions); under `exists` (of `total` chunks in all) where not every thread has every round's chunk.
    Stmt issue(const Region &S, const Region &D, const std::vector<size_t> &sd, const std::vector<size_t> &dd, const Var &m,
               const std::vector<Expr> &local, int64_t ve, int64_t per, const SourceRange &loc, const Expr &exists = nullptr,
               int64_t total = 0) {
        RangeMap known = ranges();
        known[m.get()] = Interval::of(0, per - 1);
        if (exists && per == 1) known[k_.threadIdx.get()] = Interval::of(0, total - 1); // the threads that issue
        std::vector<Expr> sidx, didx;
        for (auto &r : S.ranges) sidx.push_back(r.min);
        for (auto &r : D.ranges) didx.push_back(r.min);
        for (size_t i = 0; i < local.size(); ++i) {
            sidx[sd[i]] = simplify(binary(BinaryOp::Add, sidx[sd[i]], cast(sidx[sd[i]]->dtype, local[i])));
            didx[dd[i]] = simplify(binary(BinaryOp::Add, didx[dd[i]], cast(didx[dd[i]]->dtype, local[i])));
        }
        // Outside the tensor the synchronous copy reads zeros (predicateBounds): the chunk zero-fills. A chunk lies
        // inside or outside whole (its start and the innermost extent are multiples of it).
        Expr valid;
        for (size_t d = 0; d < sidx.size(); ++d) {
            const Expr &e = sidx[d];
            Interval b = boundsOf(e, known);
            auto extent = constInt(S.buffer->shape[d]);
            for (Expr in : {b.nonNegative() ? nullptr : binary(BinaryOp::LE, cast(e->dtype, i32(0)), e),
                            extent && b.hi && *b.hi < *extent ? nullptr : binary(BinaryOp::LT, e, cast(e->dtype, S.buffer->shape[d]))})
                if (in) valid = valid ? binary(BinaryOp::And, valid, in) : in;
        }
        Stmt call = lib::stmt(lib::Fn::CpAsyncCopy, {i32(ve * S.buffer->dtype.bytes()), addressOf(D.buffer, didx),
                                                     addressOf(S.buffer, sidx), valid ? simplify(valid) : boolImm(true)},
                              loc);
        if (exists) call = IfThenElse::make(simplify(exists), call, nullptr, loc);
        if (per == 1) return substitute(call, VarMap{{m.get(), i32(0)}});
        return For::make(m, i32(0), i32(per), ForKind::Unrolled, 0, call, loc);
    }
};

/// `body` followed by a wait for every group that may still be in flight at its end (`f`, the proof's state
/// there): a block must not exit with a cp.async still writing its shared memory, which the next block on the
/// SM may already own (the simulator's "exits with a cp.async transfer not awaited").
Stmt retiredAtExit(const Stmt &body, const AsyncCopyProof &proof) {
    if (!proof.pendingAtExit) return body;
    std::vector<Stmt> out{body};
    if (proof.openAtExit) out.push_back(lib::stmt(lib::Fn::CpAsyncCommit, {}, body->loc));
    out.push_back(lib::stmt(lib::Fn::CpAsyncWait, {i32(0)}, body->loc));
    return Seq::make(std::move(out), body->loc);
}

} // namespace

Program lowerAsyncCopies(const Program &p, const SourceManager *sources) {
    Program out;
    for (auto &k : p.kernels) {
        if (!callsAny(k->body, {lib::Fn::AsyncCopyOn, lib::Fn::CpAsyncCommit, lib::Fn::CpAsyncWait})) {
            out.kernels.push_back(k);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        if (!nk->threadIdx) nk->threadIdx = makeVar("tx", DType::Int32, k->launchLoc);
        AsyncCopyProof proof;
        // mbarriers may count the copies' arrivals (T.cp_async_barrier_noinc), which the proof does not follow
        if (callsAny(k->body, {lib::Fn::MbarrierInit, lib::Fn::MbarrierArriveEach, lib::Fn::MbarrierWait, lib::Fn::WarpGroup,
                               lib::Fn::TmaCopyOn}))
            proof.why = "the kernel synchronises through mbarriers", proof.whyAt = k->launchLoc;
        proof = proveAsyncCopies(*nk, proof);
        const bool any = callsAny(k->body, {lib::Fn::AsyncCopyOn});
        Lowering low(*nk, proof.why.empty() && any, proof.landings);
        nk->body = low.mutate(nk->body);
        if (low.issued) nk->body = retiredAtExit(nk->body, proof);
        if (!proof.why.empty() && any)
            remark(sources, proof.whyAt, "kernel '" + k->name + "': T.async_copy synchronous: " + proof.why);
        else if (any)
            remark(sources, k->launchLoc, "kernel '" + k->name + "': " + std::to_string(low.issued) + " T.async_copy as cp.async" +
                                              (low.synchronous ? ", " + std::to_string(low.synchronous) +
                                                                     " synchronous (no chunk width is aligned in both buffers)"
                                                               : std::string()));
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
