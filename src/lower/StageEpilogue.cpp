/// \file
/// The staged Hopper GEMM epilogue: stmatrix into shared pieces, TMA stores (include/tilec/passes/StageEpilogue.h).
#include "tilec/passes/StageEpilogue.h"

#include "ThreadInvariant.h"

#include "tilec/Diagnostics.h"
#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/HopperOperands.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/Staging.h"

#include <algorithm>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }
Expr op(BinaryOp o, Expr a, Expr b) { return simplify(binary(o, std::move(a), std::move(b))); }

constexpr int kPieceRows = 64; ///< one wgmma m-tile: the rows of a piece and of the TMA store's box

/// What a matched T.copy stores: out[origin + (.., i at rowDim, .., j)] = acc[i, j] for the whole (M, N)
/// accumulator: its columns along the destination's innermost dimension, its rows along one other, every
/// other index the same for the whole tile (a 2-D C tile, or attention's O[b, rows, h, :]).
struct EpilogueCopy {
    Buffer acc, out;
    std::vector<Expr> origin; ///< per destination dimension, outermost first
    size_t rowDim = 0;        ///< the rows' destination dimension (outermost first)
    int64_t M = 0, N = 0;
    /// `if i < liveRows:` around the store (a grouped GEMM's rows of the group, known at run time): rows from
    /// liveRows on are not stored (null: every row is).
    Expr liveRows;
};

/// The bound R of a row guard `i < R` (or `R > i`) on the nest's row variable, R free of the nest's variables.
Expr rowBound(const Expr &cond, const VarNode *i, const VarNode *j) {
    auto b = as<Binary>(cond);
    if (!b) return nullptr;
    Expr var, bound;
    if (b->op == BinaryOp::LT) var = b->a, bound = b->b;
    else if (b->op == BinaryOp::GT) var = b->b, bound = b->a;
    else return nullptr;
    auto v = as<VarNode>(var);
    if (!v || v != i || uses(bound, i) || uses(bound, j)) return nullptr;
    return bound;
}

/// The T.Parallel nest of a whole-fragment copy into a global tile, or why it is not one (null when the
/// nest is not a copy of a fragment into global memory at all: nothing to say about it).
std::optional<EpilogueCopy> matchCopy(const For &outer, std::string &why) {
    auto inner = as<For>(outer.body);
    if (auto q = as<Seq>(outer.body); q && q->stmts.size() == 1) inner = as<For>(q->stmts[0]);
    if (!inner || inner->forKind != ForKind::Parallel) return {};
    Stmt body = inner->body;
    if (auto q = as<Seq>(body); q && q->stmts.size() == 1) body = q->stmts[0];
    Expr guard;
    if (auto c = as<IfThenElse>(body); c && !c->otherwise) {
        guard = c->cond, body = c->then;
        if (auto q = as<Seq>(body); q && q->stmts.size() == 1) body = q->stmts[0];
    }
    auto st = as<Store>(body);
    if (!st || !st->buffer || st->buffer->scope != Scope::Global) return {};
    Expr v = st->value;
    if (auto c = as<Cast>(v)) v = c->value;
    auto ld = as<Load>(v);
    if (!ld || !ld->buffer || ld->buffer->scope != Scope::Fragment) return {};
    EpilogueCopy e;
    e.acc = ld->buffer, e.out = st->buffer;
    auto M = constInt(outer.extent), N = constInt(inner->extent);
    if (ld->indices.size() != 2 || !structurallyEqual(ld->indices[0], outer.var) || !structurallyEqual(ld->indices[1], inner->var) ||
        constInt(outer.min) != std::optional<int64_t>(0) || constInt(inner->min) != std::optional<int64_t>(0) || !M || !N ||
        e.acc->shape.size() != 2 || constInt(e.acc->shape[0]) != M || constInt(e.acc->shape[1]) != N) {
        why = "it is not a copy of a whole 2-D fragment";
        return std::nullopt;
    }
    e.M = *M, e.N = *N;
    if (guard && !(e.liveRows = rowBound(guard, outer.var.get(), inner->var.get()))) {
        why = "its store's condition is not one test of the fragment's row against a bound";
        return std::nullopt;
    }
    const size_t nd = st->indices.size();
    if (nd < 2 || nd > 5 || e.out->shape.size() != nd) {
        why = "the destination has " + std::to_string(e.out->shape.size()) + " dimensions (TMA tensors have 2 to 5)";
        return std::nullopt;
    }
    VarMap zero{{outer.var.get(), i32(0)}, {inner->var.get(), i32(0)}};
    auto uses = [&](const Expr &x, const Var &var) { return !provablyEqual(substitute(x, {{var.get(), i32(0)}}), x); };
    bool rowFound = false;
    for (size_t d = 0; d < nd; ++d) {
        const Expr &x = st->indices[d];
        e.origin.push_back(simplify(substitute(x, zero)));
        const Expr step = binary(BinaryOp::Sub, x, e.origin.back());
        const bool cols = d + 1 == nd, rows = !cols && uses(x, outer.var);
        if (rows) {
            if (rowFound) {
                why = "the fragment's rows run along more than one dimension of '" + e.out->name + "'";
                return std::nullopt;
            }
            rowFound = true, e.rowDim = d;
        }
        const bool ok = cols ? provablyEqual(step, inner->var) : rows ? provablyEqual(step, outer.var) : provablyEqual(step, i32(0));
        if (!ok) {
            why = cols ? "the fragment's columns are not the innermost dimension of '" + e.out->name + "' at one origin"
                       : "the destination tile is not the fragment's shape at one origin";
            return std::nullopt;
        }
    }
    if (!rowFound) {
        why = "the fragment's rows run along no dimension of '" + e.out->name + "'";
        return std::nullopt;
    }
    return e;
}

class Stager : public IRMutator {
  public:
    using IRMutator::visit;
    Stager(Kernel &k, const KernelLayouts &layouts, const Variant &v, const WarpRoles &roles, const SourceManager *sources)
        : k_(k), layouts_(layouts), t_(v.target), o_(v.options), roles_(roles), sources_(sources) {}

    bool staged = false; ///< some copy now goes through the staging buffer

    Stmt visit(const std::shared_ptr<const For> &f) override {
        if (f->forKind != ForKind::Parallel) return IRMutator::visit(f);
        std::string why;
        auto e = matchCopy(*f, why);
        if (!e && why.empty()) return f;
        if (e) why = refuse(*e);
        if (!why.empty()) {
            log(f->loc, "T.copy keeps direct stores from registers: " + why);
            return f;
        }
        return stage(*e, f->loc);
    }

  private:
    Kernel &k_;
    const KernelLayouts &layouts_;
    const Target &t_;
    const LoweringOptions &o_;
    const WarpRoles &roles_;
    const SourceManager *sources_;
    Buffer staging_;                 ///< one per kernel, shared by its staged copies
    Buffer regs_;                    ///< a guarded piece's vector on its way from staging_ to the tensor
    int buffers_ = 0;                ///< staging buffers per warpgroup
    int64_t pieceCols_ = 0;
    // the accumulator's split (set by refuse)
    int wgM_ = 0, wgN_ = 0;

    void log(const SourceRange &at, const std::string &what) const {
        remark(sources_, at, "kernel '" + k_.name + "' (" + t_.name + "): " + what);
    }

    /// Why `e` cannot take the staged epilogue ("" when it can); chooses the pieces and buffers.
    std::string refuse(const EpilogueCopy &e) {
        if (k_.layoutOf(e.out.get())) return "'" + e.out->name + "' has a T.Layout (its tiles are no TMA boxes)";
        if (k_.addressOf(e.out.get())) return "'" + e.out->name + "' is a T.make_tensor (no tensor map for its address)";
        auto lay = layouts_.fragments.find(e.acc.get());
        if (lay == layouts_.fragments.end() || lay->second.kind != Layout::Mma || !lay->second.wgmma || !layouts_.registers.count(e.acc.get()))
            return "'" + e.acc->name + "' is not a wgmma accumulator";
        const Layout &l = lay->second;
        const DType out = e.out->dtype, acc = e.acc->dtype;
        if (out.kind != DType::Float16 && out.kind != DType::BFloat16)
            return "stmatrix stores 16-bit elements: '" + e.out->name + "' is " + std::string(out.name());
        if (acc.kind != DType::Float32 && !(acc.kind == DType::Float16 && out.kind == DType::Float16))
            return "the accumulators are " + std::string(acc.name()) + " (float32, or float16 into float16, can be staged)";
        if (auto never = tmaNeverHolds(e.out); !never.empty()) return never;
        if (statementsUsing(e.out, k_.body) != 1) return "'" + e.out->name + "' is accessed by other statements too (a TMA store is not ordered with them)";
        // Each warpgroup decides per piece between its TMA store and the guarded stores: on one bound.
        if (e.liveRows && !threadInvariant(e.liveRows, k_))
            return "the bound of the rows it stores is not provably the same in every thread";
        if (l.warpsM % 4 || l.warpsM / 4 * l.warpsN * 128 != roles_.consumerThreads) return "the accumulator's split is not the consumer warpgroups'";
        wgM_ = l.warpsM / 4, wgN_ = l.warpsN;
        const int64_t rows = e.M / wgM_, cols = e.N / wgN_;
        if (rows % kPieceRows) return "a warpgroup's rows are not whole 64-row tiles";
        const int64_t pieceCols = cols % 64 == 0 ? 64 : cols % 32 == 0 ? 32 : cols % 16 == 0 ? 16 : 0;
        if (!pieceCols) return "a warpgroup's columns are not a multiple of 16";
        if (o_.epilogueBuffers == 0) return "--epilogue-buffers=0";
        if (staging_)
            return pieceCols == pieceCols_ && staging_->dtype == out ? "" : "the kernel's staging buffer is planned for pieces of another shape";
        pieceCols_ = pieceCols;
        // Buffers: as many as asked for that still fit the blocks per SM the kernel was planned for.
        const int64_t shared = smem::estimatedBytes(k_);
        const int warpgroups = roles_.consumerThreads / 128, blocks = std::max(1, k_.minBlocksPerSM);
        for (buffers_ = o_.epilogueBuffers; buffers_ > 0; --buffers_) {
            const int64_t total = shared + warpgroups * buffers_ * kPieceRows * pieceCols_ * 2;
            if (smem::fits(t_, total, blocks)) break;
        }
        if (buffers_ == 0) return "no staging buffer fits beside the kernel's other shared memory at " + std::to_string(blocks) + " block(s) per SM";
        return "";
    }

    /// How many statements of `at` mention `b`, a T.Parallel nest counting once (and a loop's bounds or a
    /// branch's condition once more).
    static int statementsUsing(const Buffer &b, const Stmt &at) {
        if (!at) return 0;
        auto header = [&](const Expr &x, const Expr &y) {
            return (int)mentionedBuffers(Seq::make({Evaluate::make(x), Evaluate::make(y)}), nullptr).count(b.get());
        };
        if (auto q = as<Seq>(at)) {
            int n = 0;
            for (auto &c : q->stmts) n += statementsUsing(b, c);
            return n;
        }
        if (auto r = as<WarpRoles>(at)) return statementsUsing(b, r->producer) + statementsUsing(b, r->consumer);
        if (auto f = as<For>(at); f && f->forKind != ForKind::Parallel) return header(f->min, f->extent) + statementsUsing(b, f->body);
        if (auto i = as<IfThenElse>(at))
            return header(i->cond, i->cond) + statementsUsing(b, i->then) + (i->otherwise ? statementsUsing(b, i->otherwise) : 0);
        return mentionedBuffers(at, nullptr).count(b.get()) > 0;
    }

    /// The live rows (tile rows row0 + r below e.liveRows) of the staged piece at element `piece` of the buffer,
    /// columns col0 on of the tile, stored by the warpgroup's threads in 16-byte vectors read from the swizzled
    /// piece (swizzled_chunk of sm90_store.cuh): one row test per vector, the tensor's bounds left to
    /// predicateBounds.
    Stmt guardedRows(const EpilogueCopy &e, const Expr &piece, const Expr &row0, const Expr &col0, const SourceRange &loc) {
        const int eb = e.out->dtype.bytes();
        const int64_t vec = 16 / eb, chunks = pieceCols_ / vec;
        const Var it = makeVar("epi_it", DType::Int32, loc), lane = makeVar("epi_v", DType::Int32, loc);
        const Expr idx = op(BinaryOp::Add, op(BinaryOp::Mul, it, i32(128)), op(BinaryOp::FloorMod, k_.threadIdx, i32(128)));
        const Expr r = op(BinaryOp::FloorDiv, idx, i32(chunks)), c = op(BinaryOp::FloorMod, idx, i32(chunks));
        // The piece's rows of 2 * pieceCols_ bytes swizzled by TMA's pattern of that span: swz's row swizzle
        // (swizzle.cuh), which moves whole 16-byte chunks, so a vector's start stays provably aligned.
        const Expr logical = op(BinaryOp::Add, op(BinaryOp::Mul, r, i32(pieceCols_)), op(BinaryOp::Mul, c, i32(vec)));
        const Expr chunk = lib::call(lib::Fn::Swz, {i32(pieceCols_), i32(eb), i32(kPieceRows * pieceCols_), logical}, loc, DType::Int32);
        const Expr from = op(BinaryOp::Add, op(BinaryOp::Add, piece, chunk), lane);
        const size_t nd = e.origin.size();
        std::vector<Expr> to;
        for (size_t d = 0; d < nd; ++d) {
            Expr x = e.origin[d];
            if (d == e.rowDim) x = op(BinaryOp::Add, x, op(BinaryOp::Add, row0, r));
            if (d + 1 == nd) x = op(BinaryOp::Add, x, op(BinaryOp::Add, col0, op(BinaryOp::Add, op(BinaryOp::Mul, c, i32(vec)), lane)));
            to.push_back(x);
        }
        // The vector read into registers first, under the row test only (the tensor's bounds, added later around
        // the store, would leave a shared load under them element by element).
        if (!regs_) {
            regs_ = makeBuffer("tilec_epi_regs", Scope::Local, e.out->dtype, {i32(vec)}, loc);
            k_.allocs.push_back(regs_);
        }
        const Var lane2 = makeVar("epi_w", DType::Int32, loc);
        Stmt read = For::make(lane, i32(0), i32(vec), ForKind::Vectorized, 0, Store::make(regs_, {lane}, Load::make(staging_, {from}, loc), loc), loc);
        VarMap second{{lane.get(), lane2}};
        for (auto &x : to) x = substitute(x, second);
        Stmt write = For::make(lane2, i32(0), i32(vec), ForKind::Vectorized, 0, Store::make(e.out, std::move(to), Load::make(regs_, {lane2}, loc), loc), loc);
        Stmt st = IfThenElse::make(op(BinaryOp::LT, op(BinaryOp::Add, row0, r), e.liveRows), Seq::make({read, write}, loc), nullptr, loc);
        return For::make(it, i32(0), i32(kPieceRows * chunks / 128), ForKind::Unrolled, 0, st, loc);
    }

    Stmt stage(const EpilogueCopy &e, const SourceRange &loc) {
        const int warpgroups = roles_.consumerThreads / 128;
        const int64_t rows = e.M / wgM_, cols = e.N / wgN_, pieceElems = kPieceRows * pieceCols_;
        const int eb = e.out->dtype.bytes(), swizzle = (int)pieceCols_ * eb;
        if (!staging_) {
            staging_ = makeBuffer("tilec_epi", Scope::Shared, e.out->dtype, {i32(warpgroups * buffers_ * pieceElems)}, loc);
            k_.allocs.push_back(staging_);
            k_.recordTileLayout({staging_, swizzle, true}); // TMA stores read it, each piece swizzled
        }
        // The box: the piece's columns innermost, its rows along the rows' dimension, 1 along every other.
        const size_t nd = e.origin.size(), rowAt = nd - 1 - e.rowDim; // map dimensions count innermost first
        TensorMap map{e.out, std::vector<int64_t>(nd, 1), swizzle};
        map.box[0] = pieceCols_, map.box[rowAt] = kPieceRows;
        const Expr mapIndex = i32(internTensorMap(k_, map));

        const Var &tx = k_.threadIdx;
        const Expr g = warpgroups == 1 ? i32(0) : op(BinaryOp::FloorDiv, tx, i32(128)); // the warpgroup
        const Expr leader = op(BinaryOp::EQ, op(BinaryOp::FloorMod, tx, i32(128)), i32(0));
        const Expr barrierId = op(BinaryOp::Add, i32(lib::kWarpgroupBarrier), g);
        const Buffer &regs = layouts_.registers.at(e.acc.get());
        const int64_t nT = cols / 8, pieces = cols / pieceCols_;
        auto sync = [&] { return lib::stmt(lib::Fn::NamedSync, {barrierId, i32(128)}, loc); };
        std::vector<Stmt> out;
        int64_t q = 0;
        for (int64_t mi = 0; mi < rows / kPieceRows; ++mi)
            for (int64_t p = 0; p < pieces; ++p, ++q) {
                const Expr at = addressOf(staging_, {op(BinaryOp::Mul, op(BinaryOp::Add, op(BinaryOp::Mul, g, i32(buffers_)), i32(q % buffers_)), i32(pieceElems))});
                const Expr slot = i32((mi * nT + p * pieceCols_ / 8) * 4);
                // The buffer's previous store (this tile's, or the last tile's) has read it. Where a piece may
                // take the guarded stores instead, the leader's latest store need not be the previous piece's:
                // every store waited for.
                const int64_t pending = q == 0 || e.liveRows ? 0 : buffers_ - 1;
                out.push_back(IfThenElse::make(leader, lib::stmt(lib::Fn::TmaStoreWait, {i32(pending)}, loc), nullptr, loc));
                out.push_back(sync());
                out.push_back(lib::stmt(lib::Fn::StmatrixTile, {i32(pieceCols_), i32(swizzle), at, addressOf(regs, {slot})}, loc));
                out.push_back(lib::stmt(lib::Fn::FenceProxyAsync, {}, loc));
                out.push_back(sync());
                // The piece's first element, innermost first: this warpgroup's columns and rows of the tile.
                std::vector<Expr> c;
                for (size_t d = 0; d < nd; ++d) c.push_back(cast(DType::Int32, e.origin[nd - 1 - d]));
                c[0] = op(BinaryOp::Add, c[0], op(BinaryOp::Add, op(BinaryOp::Mul, op(BinaryOp::FloorDiv, g, i32(wgM_)), i32(cols)), i32(p * pieceCols_)));
                c[rowAt] = op(BinaryOp::Add, c[rowAt],
                              op(BinaryOp::Add, op(BinaryOp::Mul, op(BinaryOp::FloorMod, g, i32(wgM_)), i32(rows)), i32(mi * kPieceRows)));
                std::vector<Expr> args{i32(kPieceRows), i32(pieceCols_), i32(eb), i32(swizzle), at, mapIndex, i32((int64_t)nd)};
                for (size_t d = 0; d < 5; ++d) args.push_back(d < nd ? simplify(c[d]) : i32(0));
                Stmt tma = IfThenElse::make(leader, lib::stmt(lib::Fn::TmaStoreTile, std::move(args), loc), nullptr, loc);
                if (!e.liveRows) {
                    out.push_back(tma);
                    continue;
                }
                // Run-time rows: a piece wholly below the bound by TMA (which clips at the tensor's end), the
                // piece the bound crosses or passes by each thread's 16-byte stores of the live rows.
                const Expr row0 = op(BinaryOp::Add, op(BinaryOp::Mul, op(BinaryOp::FloorMod, g, i32(wgM_)), i32(rows)), i32(mi * kPieceRows));
                const Expr col0 = op(BinaryOp::Add, op(BinaryOp::Mul, op(BinaryOp::FloorDiv, g, i32(wgM_)), i32(cols)), i32(p * pieceCols_));
                const Expr piece = op(BinaryOp::Mul, op(BinaryOp::Add, op(BinaryOp::Mul, g, i32(buffers_)), i32(q % buffers_)), i32(pieceElems));
                const Expr whole = op(BinaryOp::LE, op(BinaryOp::Add, row0, i32(kPieceRows)), e.liveRows);
                out.push_back(IfThenElse::make(whole, tma, guardedRows(e, piece, row0, col0, loc), loc));
            }
        log(loc, "T.copy of '" + e.acc->name + "' to '" + e.out->name + "' -> stmatrix into shared memory, TMA stores: " +
                     std::to_string(q) + " piece(s) of 64x" + std::to_string(pieceCols_) + " per warpgroup through " +
                     std::to_string(buffers_) + " staging buffer(s) of " + std::to_string(pieceElems * eb) + " bytes each" +
                     (e.liveRows ? " (rows known at run time: a piece the row bound crosses by 16-byte stores, one row test each)" : ""));
        staged = true;
        return Seq::make(std::move(out), loc);
    }
};

} // namespace

Program stageEpilogue(const Program &p, const Variant &v, const SourceManager *sources) {
    Program out;
    for (const KernelP &k : p.kernels) {
        auto top = as<Seq>(k->body);
        size_t at = 0;
        while (top && at < top->stmts.size() && !as<WarpRoles>(top->stmts[at])) ++at;
        if (!top || at == top->stmts.size() || !k->threadIdx || !v.hasTma() || !k->layouts) {
            out.kernels.push_back(k);
            continue;
        }
        auto roles = as<WarpRoles>(top->stmts[at]);
        auto nk = std::make_shared<Kernel>(*k);
        Stager s(*nk, *k->layouts, v, *roles, sources);
        Stmt consumer = s.mutate(roles->consumer);
        if (!s.staged) {
            out.kernels.push_back(k);
            continue;
        }
        // The role's last stores still read the staging buffer: wait for them before the block exits.
        Expr leader = simplify(binary(BinaryOp::EQ, binary(BinaryOp::FloorMod, k->threadIdx, i32(128)), i32(0)));
        Stmt drain = IfThenElse::make(leader, lib::stmt(lib::Fn::TmaStoreWait, {i32(0)}, roles->loc), nullptr, roles->loc);
        std::vector<Stmt> stmts = top->stmts;
        stmts[at] = WarpRoles::make(roles->consumerThreads, roles->producerThreads, roles->producerRegs, roles->consumerRegs,
                                    roles->producer, Seq::make({consumer, drain}, roles->loc), roles->loc);
        nk->body = Seq::make(std::move(stmts), top->loc);
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
