/// \file
/// Software pipelining and asynchronous tile transfers (include/tilec/passes/PipelineLoops.h).
#include "tilec/passes/PipelineLoops.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/LoopInvariants.h"
#include "tilec/passes/Staging.h"
#include "EarlyTransfers.h"
#include "GatherTransfers.h"
#include "tilec/SharedAliases.h"
#include "PrivateStages.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }
Expr i64(int64_t v) { return intImm(v, DType::Int64); }

/// Why a transfer cannot use a wider access than one element of `eb` bytes, in words for the warning. A
/// run-time row length is no reason: the wide variant assumes it suits (LoweringOptions::assumeAlignedRows).
std::string narrowReason(const Copy &c, int64_t cols, int64_t ve, std::optional<int64_t> inner) {
    const Buffer &src = c.src.buffer;
    const std::string v = std::to_string(ve);
    if (cols % ve) return "the tile's rows of " + std::to_string(cols) + " elements are not a multiple of " + v;
    if (inner && *inner % ve) return "rows of '" + src->name + "' hold " + std::to_string(*inner) + " elements, not a multiple of " + v;
    return "the tile's first column is not provably a multiple of " + v;
}

/// The rows and columns of a transfer's tile: a 1-D tile is one row.
std::pair<int64_t, int64_t> tileShape(const Copy &c) {
    const auto &shape = c.dst.buffer->shape;
    if (shape.size() == 1) return {1, *constValue(shape[0])};
    return {*constValue(shape[0]), *constValue(shape[1])};
}

/// What every transfer of one kernel's lowering shares: its threads, the target's switch, the warnings
/// given (a pipelined transfer is issued from two places: by location) and the assumptions made.
struct TransferContext {
    int threads = 128;
    bool assumeAlignedRows = false;
    DiagnosticEngine &diag;
    std::set<std::tuple<int, int, int>> warned;
    std::vector<Assumption> assumptions;
    /// Tiles each thread reads only where it copied itself (PrivateStages.h): stored unswizzled.
    std::set<const BufferNode *> ownStages;
    /// Rows (1-D tiles) issued narrower than their widest access, so that each thread reads only what it copied.
    std::map<const BufferNode *, int> rowVec;
};

/// The access width of a transfer: the widest that the tile, its origin and the tensor's row length allow, or
/// that a run-time row length allows when the lowering may assume it suits (then `assumed`).
int transferVec(const Copy &c, const TransferContext &tc, bool *assumed = nullptr, int *possibleOut = nullptr) {
    if (auto r = tc.rowVec.find(c.dst.buffer.get()); r != tc.rowVec.end()) {
        if (assumed) *assumed = false;
        if (possibleOut) *possibleOut = r->second;
        return r->second;
    }
    const Buffer &src = c.src.buffer;
    const size_t nd = c.src.ranges.size();
    const int64_t cols = tileShape(c).second;
    const int eb = src->dtype.bytes();
    const Expr &colOrigin = c.src.ranges[nd - 1].min;
    auto inner = constValue(src->shape[nd - 1]);
    auto widest = [&](bool rowsSuit) {
        for (int bytes : {16, 8, 4}) {
            if (bytes % eb) continue;
            int64_t ve = bytes / eb;
            if (cols % ve == 0 && (inner ? *inner % ve == 0 : rowsSuit) && knownMultiple(colOrigin) % ve == 0) return (int)ve;
        }
        return 1;
    };
    const int proven = widest(false), possible = widest(true);
    if (possibleOut) *possibleOut = possible;
    const bool assume = tc.assumeAlignedRows && possible > proven;
    if (assumed) *assumed = assume;
    return assume ? possible : proven;
}

/// The call that issues one tile transfer. `dst` is the (possibly staged) destination and `stage` its copy.
/// The access is the widest the tile, its origin and the tensor's row length allow; a run-time row length
/// allows only one element unless the lowering may assume it (and the base pointer) suits the widest access,
/// which it then records. A transfer narrower than cp.async's 4 bytes per thread even so (element by element,
/// synchronous) is warned about.
Stmt transferCall(const Copy &c, const Buffer &dst, const Expr &stage, bool wait, TransferContext &tc) {
    const Buffer &src = c.src.buffer;
    const size_t nd = c.src.ranges.size();
    size_t rowDim = 0;
    for (size_t d = 0; d + 1 < nd; ++d)
        if (constValue(c.src.ranges[d].extent) != std::optional<int64_t>(1)) rowDim = d;
    const auto [rows, cols] = tileShape(c);
    const int eb = src->dtype.bytes();
    const Expr &colOrigin = c.src.ranges[nd - 1].min;
    auto inner = constValue(src->shape[nd - 1]);
    bool assumed = false;
    int possible = 1;
    const int vec = transferVec(c, tc, &assumed, &possible);
    if (assumed) {
        Assumption a{src, src->shape[nd - 1], (int64_t)vec * eb};
        if (std::find(tc.assumptions.begin(), tc.assumptions.end(), a) == tc.assumptions.end()) tc.assumptions.push_back(a);
    }
    if (possible * eb < 4 && tc.warned.insert({c.loc.file, c.loc.line, c.loc.col}).second)
        tc.diag.warning(c.loc, "this tile transfer copies one " + std::to_string(eb) + "-byte element at a time, synchronously, "
                               "instead of 4 to 16 bytes per thread with cp.async: " + narrowReason(c, cols, 4 / eb, inner));
    // Row stride, and the rows / columns left in the tensor from the tile's origin.
    Expr ldg = i64(1);
    for (size_t d = rowDim + 1; d < nd; ++d) ldg = binary(BinaryOp::Mul, ldg, cast(DType::Int64, src->shape[d]));
    Expr validRows = binary(BinaryOp::Sub, cast(DType::Int32, src->shape[rowDim]), cast(DType::Int32, c.src.ranges[rowDim].min));
    Expr validCols = binary(BinaryOp::Sub, cast(DType::Int32, src->shape[nd - 1]), cast(DType::Int32, colOrigin));
    Expr inside;
    for (size_t d = 0; d + 1 < nd; ++d) {
        if (d == rowDim) continue;
        Expr in = binary(BinaryOp::LT, c.src.ranges[d].min, src->shape[d]);
        inside = inside ? binary(BinaryOp::And, inside, in) : in;
    }
    if (inside) validRows = select(inside, validRows, i32(0));
    std::vector<Expr> origin;
    for (auto &r : c.src.ranges) origin.push_back(r.min);
    std::vector<Expr> dstIdx;
    if (stage) dstIdx.push_back(stage);
    for (size_t d = 0; d < c.dst.buffer->shape.size(); ++d) dstIdx.push_back(i32(0));
    // One row is stored as it is (a swizzle never moves row 0), and swizzleShared must not read a ring of rows
    // ([stages, cols]) as one swizzled tile of `stages` rows.
    const bool plain = rows == 1 && c.dst.buffer->shape.size() == 1;
    return lib::stmt(wait ? lib::Fn::CopyG2SWait : lib::Fn::CopyG2S,
                {i32(rows), i32(cols), i32(vec), i32(tc.threads), i32(plain || tc.ownStages.count(c.dst.buffer.get()) ? 0 : 1), addressOf(dst, dstIdx), addressOf(src, origin),
                 simplify(ldg), simplify(validRows), simplify(validCols)},
                c.loc);
}

class Pipeliner : public IRMutator {
  public:
    using IRMutator::visit;
    Pipeliner(const Kernel &k, bool assumeAlignedRows, DiagnosticEngine &diag)
        : transfers{k.threads, assumeAlignedRows, diag, {}, {}, {}, {}}, kernel_(k) {}

    std::map<const BufferNode *, Buffer> staged; ///< original buffer -> its ring of copies
    std::vector<Buffer> locals;                  ///< registers the lowering adds (gathered fills' positions)
    TransferContext transfers;

    /// A transfer left where it is: issue, commit, wait.
    Stmt visit(const std::shared_ptr<const Copy> &op) override {
        return transferCall(*op, op->dst.buffer, nullptr, true, transfers);
    }

    Stmt visit(const std::shared_ptr<const For> &op) override {
        if (op->forKind == ForKind::Serial) {
            Stmt grouped = issueTogether(*op);
            return grouped ? grouped : IRMutator::visit(op);
        }
        if (op->forKind != ForKind::Pipelined) return IRMutator::visit(op);
        // One trip overlaps nothing: the body runs once as plain code (its transfers issued and waited for in
        // place), with no ring of stages, no prologue and no waits for transfers that are never issued.
        if (constValue(simplify(op->extent)) == std::optional<int64_t>(1))
            return mutate(substitute(op->body, VarMap{{op->var.get(), op->min}}));
        auto serial = [&] {
            if (Stmt grouped = issueTogether(*op)) return grouped;
            return For::make(op->var, op->min, op->extent, ForKind::Serial, 0, mutate(op->body), op->loc);
        };
        const int S = op->numStages;
        if (S < 1) return serial();

        // Hoistable transfers: top-level Copies whose regions depend on nothing the body computes.
        LoopSplit split = splitPipelinedBody(*op, kernel_.body, true);
        if (S == 1) {
            Stmt single = refillOneBuffer(*op, split);
            return single ? single : serial();
        }
        addGathers(*op, split);
        const std::vector<const Copy *> &hoisted = split.hoisted;
        struct Guards { // this loop's, for as long as its copies live (a loop nested in its body has its own)
            std::map<const Copy *, Expr> &all;
            const LoopSplit &split;
            Guards(std::map<const Copy *, Expr> &a, const LoopSplit &s) : all(a), split(s) {
                for (size_t i = 0; i < s.hoisted.size(); ++i)
                    if (s.guards[i]) all[s.hoisted[i]] = s.guards[i];
            }
            ~Guards() {
                for (auto *c : split.hoisted) all.erase(c);
            }
        } guards(guards_, split);
        const std::vector<Stmt> &rest = split.rest;
        if (hoisted.empty()) return serial();
        // The ring replaces its buffer everywhere, so the buffer must not be used outside this loop.
        std::set<const BufferNode *> outside = mentionedBuffers(kernel_.body, op.get());
        std::map<const BufferNode *, Buffer> ring;
        for (auto *c : hoisted) {
            const Buffer &b = c->dst.buffer;
            // (nor have a shared alias: the ring would leave the alias on the first stage's bytes)
            if (outside.count(b.get()) || staged.count(b.get()) || ir::aliased(kernel_, b.get())) return serial();
            ring[b.get()] = ringOf(b, S);
        }
        // A transfer into a ring buffer left in the body (under a condition, say) would need the ring too.
        for (auto *b : copyTargets(rest))
            if (ring.count(b)) return serial();
        // Stages each thread reads only where it copied itself need no barrier (all of them: the barrier is one).
        bool barrier = false;
        for (auto *c : hoisted)
            if (readsOwnCopies(*c, *op, rest)) transfers.ownStages.insert(c->dst.buffer.get());
            else barrier = true;

        const SourceRange &loc = op->loc;
        Expr n = op->extent, min = op->min;
        Var ko = op->var;
        auto issue = [&](const Expr &iter, const Expr &stage) { return issueTiles(*op, hoisted, iter, stage, ring); };
        auto commit = [&] { return lib::stmt(lib::Fn::CpAsyncCommit, {}, loc); };
        if (Stmt grouped = releaseAfterLastUse(*op, hoisted, rest, ring, barrier)) {
            for (auto &[b, r] : ring) staged[b] = r;
            return grouped;
        }
        std::vector<Stmt> out;
        for (int s = 0; s + 1 < S; ++s) {
            Stmt first = issue(simplify(binary(BinaryOp::Add, min, i32(s))), i32(s));
            Expr inRange = simplify(binary(BinaryOp::LT, i32(s), n));
            if (auto known = constValue(inRange); known && *known) out.push_back(first);
            else if (!known) out.push_back(IfThenElse::make(inRange, first, nullptr, loc));
            out.push_back(commit());
        }
        Expr k0 = simplify(binary(BinaryOp::Sub, ko, min));
        Expr ahead = simplify(binary(BinaryOp::Add, k0, i32(S - 1)));
        std::vector<Stmt> body{lib::stmt(lib::Fn::CpAsyncWait, {i32(S - 2)}, loc)};
        if (barrier) body.push_back(syncThreads(loc));
        body.push_back(IfThenElse::make(binary(BinaryOp::LT, ahead, n),
                                        issue(simplify(binary(BinaryOp::Add, ko, i32(S - 1))), simplify(binary(BinaryOp::FloorMod, ahead, i32(S)))),
                                        nullptr, loc));
        body.push_back(commit());
        Expr stage = simplify(binary(BinaryOp::FloorMod, k0, i32(S)));
        for (auto &s : rest) body.push_back(mutate(stageBuffers(s, ring, stage)));
        out.push_back(For::make(ko, min, n, ForKind::Serial, 0, Seq::make(std::move(body), loc), loc));
        out.push_back(lib::stmt(lib::Fn::CpAsyncWait, {i32(0)}, loc));
        for (auto &[b, r] : ring) staged[b] = r;
        return Seq::make(std::move(out), loc);
    }

  private:
    const Kernel &kernel_;
    /// Gathered tile fills (GatherTransfers.h) issued ahead like hoisted copies: each stands in the split as a
    /// Copy of its whole tile (standIns_ keeps those alive), which issueTiles issues as the fill's cp.async chunks.
    std::map<const Copy *, GatherFill> gathers_;
    std::vector<Stmt> standIns_;

    /// Moves the gathered fills of `split.rest` that can be issued ahead (their reads loop-invariant, their tile
    /// named by no statement before them and written by no other) to `split.hoisted`.
    void addGathers(const For &op, LoopSplit &split) {
        struct Roles : IRVisitor { // (a role's threads are not the block's: copy_g2s alone is told its first thread)
            using IRVisitor::visit;
            bool found = false;
            void visit(const WarpRoles &) override { found = true; }
        } roles;
        roles.visit(kernel_.body);
        if (roles.found) return;
        const std::set<const BufferNode *> invariant = loopInvariantBuffers(op, kernel_.body);
        const std::set<const VarNode *> bound = loopVariablesIn(op.body);
        std::vector<Stmt> rest;
        for (const Stmt &s : split.rest) {
            std::optional<GatherFill> g = gatherFill(s, kernel_, invariant, bound);
            const size_t at = std::find(split.top.begin(), split.top.end(), s) - split.top.begin();
            if (!g || at == split.top.size() || !aheadOnly(split.top, at, g->store->buffer.get())) {
                rest.push_back(s);
                continue;
            }
            Stmt standIn = Copy::make(Region::whole(g->store->buffer, s->loc), Region::whole(g->store->buffer, s->loc), s->loc);
            standIns_.push_back(standIn);
            gathers_[as<Copy>(standIn)] = *g;
            split.hoisted.push_back(as<Copy>(standIn)), split.guards.push_back(nullptr), split.at.push_back(at);
        }
        split.rest = std::move(rest);
    }

    /// Whether no statement of `top` before `at` names tile `b` and none after it writes it.
    static bool aheadOnly(const std::vector<Stmt> &top, size_t at, const BufferNode *b) {
        for (size_t j = 0; j < top.size(); ++j) {
            if (j < at && mentionedBuffers(top[j], nullptr).count(b)) return false;
            if (j > at && writtenBuffers(top[j]).count(b)) return false;
        }
        return true;
    }

    /// A loop that stays serial, its transfers issued together where they save round trips (EarlyTransfers.h):
    /// all as cp.async in one commit group, waited for and made visible by one barrier just before the first
    /// statement that uses any of them. The barrier before the issue (other threads may still read the tiles'
    /// earlier contents: the iteration before, or code before the loop) is insertSyncs': it counts such a
    /// transfer (into the tile itself, not a ring's stage) as a write of its tile where it is issued, and places
    /// none where a barrier already stands between the last reads and the issue. Null where no transfer moves.
    Stmt issueTogether(const For &op) {
        const std::vector<Stmt> top = Seq::items(op.body);
        std::optional<TransferGroup> g = earlyTransfers(top);
        if (!g) return nullptr;
        const SourceRange &loc = op.loc;
        std::vector<Stmt> body;
        for (size_t j = 0; j < top.size(); ++j) {
            const bool moved = std::find(g->copies.begin(), g->copies.end(), j) != g->copies.end();
            if (j == g->issueAt) {
                for (size_t c : g->copies) {
                    const Copy &copy = *as<Copy>(top[c]);
                    body.push_back(transferCall(copy, copy.dst.buffer, nullptr, false, transfers));
                }
                body.push_back(lib::stmt(lib::Fn::CpAsyncCommit, {}, loc));
            }
            if (j == g->waitAt) {
                body.push_back(lib::stmt(lib::Fn::CpAsyncWait, {i32(0)}, loc));
                body.push_back(syncThreads(loc));
            }
            if (!moved) body.push_back(mutate(top[j]));
        }
        return For::make(op.var, op.min, op.extent, ForKind::Serial, 0, Seq::make(std::move(body), loc), loc);
    }

    /// T.Pipelined(num_stages=1): one buffer per tile, as TileLang's one-stage pipeline has, but each tile's
    /// transfer for iteration k + 1 issued right after its last use in iteration k (a barrier first where other
    /// threads read it), not where the body names it: the loads of a loop whose tiles are used one after another
    /// (chunk_delta_bwd's K, G, dv, Q, W and dO) are in flight together under the statements between, instead of
    /// one round trip to memory each. A transfer moves only where nothing before it in the body names its tile
    /// and something after it does, and where the tile is not used outside the loop; any other stays in place
    /// (issued and waited for there). Null where no transfer moves.
    /// Whether every statement of the body but the transfer at `at` names tile `b` only where stageBuffers
    /// rewrites it to a ring's stage (loads, stores, tile copies, fills, GEMM operands), so that a ring can
    /// replace the tile (not a reduction's source or a GEMM's accumulator, say).
    static bool restagedEverywhere(const LoopSplit &split, size_t at, const BufferNode *b) {
        auto self = std::find_if(split.hoisted.begin(), split.hoisted.end(), [&](const Copy *c) { return c->dst.buffer.get() == b; });
        std::map<const BufferNode *, Buffer> one{{b, ringOf((*self)->dst.buffer, 1)}};
        for (size_t j = 0; j < split.top.size(); ++j)
            if (j != at && mentionedBuffers(stageBuffers(split.top[j], one, i32(0)), nullptr).count(b)) return false;
        return true;
    }

    Stmt refillOneBuffer(const For &op, const LoopSplit &split) {
        std::set<const BufferNode *> outside = mentionedBuffers(kernel_.body, &op);
        std::vector<std::set<const BufferNode *>> mentions;
        for (auto &s : split.top) mentions.push_back(mentionedBuffers(s, nullptr));
        std::vector<const Copy *> moved;
        std::set<size_t> movedAt;
        for (size_t h = 0; h < split.hoisted.size(); ++h) {
            if (split.guards[h]) continue; // a copy under a condition stays in its branch
            const BufferNode *b = split.hoisted[h]->dst.buffer.get();
            const size_t at = split.at[h];
            bool before = false, after = false;
            for (size_t j = 0; j < split.top.size(); ++j)
                if (j != at && mentions[j].count(b)) (j < at ? before : after) = true;
            bool twice = std::any_of(moved.begin(), moved.end(), [&](const Copy *c) { return c->dst.buffer.get() == b; });
            if (before || !after || twice || outside.count(b) || staged.count(b) || ir::aliased(kernel_, b) || !restagedEverywhere(split, at, b)) continue;
            moved.push_back(split.hoisted[h]);
            movedAt.insert(at);
        }
        if (moved.empty()) return nullptr;
        std::vector<Stmt> rest;
        for (size_t j = 0; j < split.top.size(); ++j)
            if (!movedAt.count(j)) rest.push_back(split.top[j]);
        std::map<const BufferNode *, Buffer> ring;
        bool barrier = false;
        for (auto *c : moved) {
            ring[c->dst.buffer.get()] = ringOf(c->dst.buffer, 1);
            if (readsOwnCopies(*c, op, rest)) transfers.ownStages.insert(c->dst.buffer.get());
            else barrier = true;
        }
        Stmt out = releaseAfterLastUse(op, moved, rest, ring, barrier);
        if (out)
            for (auto &[b, r] : ring) staged[b] = r;
        return out;
    }

    /// Whether tile transfer `c`, hoisted out of pipelined loop `loop` whose other statements are `rest`, copies
    /// every element of its tile that a thread reads in `rest` in that same thread. A 2-D tile only at the
    /// transfer's own (widest) access width: a narrower one whose threads would be the readers' cost more than the
    /// barrier it saves (TileKernels' mhc_post_bwd at 4 bytes instead of 16: 4x the LDGSTS, +96 instructions, +12
    /// registers; pre_big_fuse at 8: +88, +14). A row (1-D tile) also at a narrower width down to cp.async's 4
    /// bytes, recorded for its transfers (TransferContext::rowVec): one row's accesses cost less than the two
    /// barriers per trip its stage would need (mhc_post_bwd's d row, read 2 bfloat16 per thread: 4 bytes each).
    bool readsOwnCopies(const Copy &c, const For &loop, const std::vector<Stmt> &rest) {
        const BufferNode *tile = c.dst.buffer.get();
        if (!kernel_.layouts || tile->shape.size() > 2 || gathers_.count(&c)) return false;
        RangeMap ranges = kernelRanges(kernel_);
        addLoopRange(ranges, loop);
        const int widest = transferVec(c, transfers), eb = c.src.buffer->dtype.bytes();
        if (readsOwnTransfer(rest, tile, widest, transfers.threads, *kernel_.layouts, ranges)) return true;
        if (tile->shape.size() != 1) return false;
        for (int vec = widest / 2; vec >= 1 && vec * eb >= 4; vec /= 2)
            if (readsOwnTransfer(rest, tile, vec, transfers.threads, *kernel_.layouts, ranges)) {
                transfers.rowVec[tile] = vec;
                return true;
            }
        return false;
    }

    /// Whether `s` copies one of the tiles `copies` load into a fragment or local buffer: a Copy, or the loop nest
    /// a copy lowers to (one store of the tile's element, converted or not). After it no thread reads the tile's
    /// stage again once a barrier has passed, so the stage may be refilled there.
    static bool copiesIntoRegisters(const Stmt &s, const std::vector<const Copy *> &copies) {
        auto isTile = [&](const BufferNode *b) {
            return std::any_of(copies.begin(), copies.end(), [&](const Copy *t) { return t->dst.buffer.get() == b; });
        };
        auto inRegisters = [](const Buffer &b) { return b->scope == Scope::Fragment || b->scope == Scope::Local; };
        if (auto c = as<Copy>(s)) return inRegisters(c->dst.buffer) && isTile(c->src.buffer.get());
        Stmt inner = s;
        while (auto f = as<For>(inner)) inner = f->body;
        auto st = as<Store>(inner);
        if (!st || !inRegisters(st->buffer)) return false;
        Expr v = st->value;
        while (auto c = as<Cast>(v)) v = c->value;
        auto ld = as<Load>(v);
        return ld && isTile(ld->buffer.get());
    }

    /// The condition of each copy hoisted out of an `if` of the loop being pipelined (splitPipelinedBody).
    std::map<const Copy *, Expr> guards_;

    /// The tiles a copy issues for iteration `iter` into stage `stage` of their rings; a copy the body issues under
    /// a condition only where that condition holds for `iter` (where it fails the body reads no stage of the tile).
    Stmt issueTiles(const For &op, const std::vector<const Copy *> &copies, const Expr &iter, const Expr &stage,
                    std::map<const BufferNode *, Buffer> &ring) {
        std::vector<Stmt> calls, guarded; // guarded: the run of copies under `guard`, so far
        Expr guard;
        auto close = [&] {
            if (guarded.empty()) return;
            const SourceRange loc = guarded[0]->loc;
            calls.push_back(IfThenElse::make(simplify(substitute(guard, VarMap{{op.var.get(), iter}})), Seq::make(std::move(guarded), loc), nullptr, loc));
            guarded.clear();
        };
        VarMap m{{op.var.get(), iter}};
        RangeMap ranges = kernelRanges(kernel_);
        addLoopRange(ranges, op);
        for (auto *c : copies) {
            Region src = c->src;
            for (auto &r : src.ranges) r.min = simplify(substitute(r.min, m));
            auto moved = Copy::make(src, c->dst, c->loc);
            auto gather = gathers_.find(c);
            Stmt call = gather != gathers_.end()
                            ? gatherTransfer(gather->second, m, ring[c->dst.buffer.get()], stage, kernel_.threadIdx, transfers.threads, ranges, locals)
                            : transferCall(*as<Copy>(moved), ring[c->dst.buffer.get()], stage, false, transfers);
            auto g = guards_.find(c);
            if (g == guards_.end() || g->second != guard) close();
            if (g == guards_.end()) calls.push_back(call);
            else guard = g->second, guarded.push_back(call);
        }
        close();
        return Seq::make(std::move(calls), op.loc);
    }

    /// A loop whose tiles are first used by different statements (attention: K by QK^T, V by P.V) keeps S
    /// iterations in flight, not S - 1: each group of tiles (those first used by one statement) is waited for
    /// just before that statement, and its stage is refilled with iteration k + S just after its last use (a
    /// barrier first: every thread is done reading it; none for a group whose tiles each thread reads only where
    /// it copied them), one commit group per group of tiles, in the order of
    /// their last uses, which the prologue's S iterations follow too. A loop of one group takes this form where its
    /// last use is a copy into registers (the refill then issued before the body computes) or where it has two
    /// stages (below); null for any other (a GEMM's k-loop of three stages or more keeps the refill at the top of
    /// the iteration, behind the barrier it needs anyway, with S - 1 iterations in flight).
    Stmt releaseAfterLastUse(const For &op, const std::vector<const Copy *> &hoisted, const std::vector<Stmt> &rest,
                             std::map<const BufferNode *, Buffer> &ring, bool barrier) {
        struct Group {
            size_t first, last;
            std::vector<const Copy *> copies;
        };
        std::vector<std::set<const BufferNode *>> mentions;
        for (auto &s : rest) mentions.push_back(mentionedBuffers(s, nullptr));
        std::vector<Group> groups;
        for (auto *c : hoisted) {
            size_t first = rest.size(), last = 0;
            for (size_t j = 0; j < rest.size(); ++j)
                if (mentions[j].count(c->dst.buffer.get())) first = std::min(first, j), last = j;
            if (first == rest.size()) return nullptr; // a tile loaded and never read: the plain ring
            auto g = std::find_if(groups.begin(), groups.end(), [&](const Group &x) { return x.first == first; });
            if (g == groups.end()) g = groups.insert(groups.end(), Group{first, last, {}});
            g->last = std::max(g->last, last);
            g->copies.push_back(c);
        }
        // One group gains a stage in flight where its last use copies it into registers: the refill is issued
        // right after that copy, before the rest of the body computes (gemv: two tiles in flight with two stages).
        // With two stages it gains one whatever its last use: refilled at the top, the ring holds one transfer in
        // flight, issued only once the previous one has landed (each iteration waits a whole round trip wherever
        // memory takes longer than the body: gemm_sp's k-loop); refilled after the last use, the next transfer is
        // in flight while this one is waited for, as in TileLang's own two-stage pipeline (`cp_async_wait<1>`),
        // for one barrier more an iteration. From three stages on the top refill already keeps two in flight.
        const bool oneGroupGains =
            groups.size() == 1 && (op.numStages == 2 || copiesIntoRegisters(rest[groups[0].last], groups[0].copies));
        if (op.numStages > 1 && groups.size() < 2 && !oneGroupGains) return nullptr;
        std::stable_sort(groups.begin(), groups.end(), [](const Group &a, const Group &b) { return a.last < b.last; });
        // A group whose tiles each thread reads only where it copied them needs no barrier at its wait nor before
        // its refill, whatever the other groups need (a thread's wait orders its own copies).
        auto needsBarrier = [&](const Group &g) {
            return barrier && std::any_of(g.copies.begin(), g.copies.end(), [&](const Copy *c) { return !transfers.ownStages.count(c->dst.buffer.get()); });
        };
        const int S = op.numStages, G = (int)groups.size();
        const SourceRange &loc = op.loc;
        auto commit = [&] { return lib::stmt(lib::Fn::CpAsyncCommit, {}, loc); };
        Expr n = op.extent, min = op.min;
        std::vector<Stmt> out;
        for (int s = 0; s < S; ++s) {
            Expr inRange = simplify(binary(BinaryOp::LT, i32(s), n));
            for (auto &g : groups) {
                Stmt first = issueTiles(op, g.copies, simplify(binary(BinaryOp::Add, min, i32(s))), i32(s), ring);
                if (auto known = constValue(inRange); known && *known) out.push_back(first);
                else if (!known) out.push_back(IfThenElse::make(inRange, first, nullptr, loc));
                out.push_back(commit());
            }
        }
        Expr k0 = simplify(binary(BinaryOp::Sub, op.var, min));
        Expr stage = simplify(binary(BinaryOp::FloorMod, k0, i32(S)));
        Expr refillIn = simplify(binary(BinaryOp::LT, binary(BinaryOp::Add, k0, i32(S)), n));
        Expr refillIter = simplify(binary(BinaryOp::Add, op.var, i32(S)));
        std::vector<Stmt> body;
        for (size_t j = 0; j < rest.size(); ++j) {
            for (size_t gi = 0; gi < groups.size(); ++gi) {
                if (groups[gi].first != j) continue;
                // Commit groups after this one's tiles of iteration k: the later groups of iteration k - S, the
                // S - 1 iterations after it, and this iteration's refills made before statement j.
                int64_t after = (G - 1 - (int)gi) + (int64_t)(S - 1) * G;
                for (auto &h : groups) after += h.last < j;
                body.push_back(lib::stmt(lib::Fn::CpAsyncWait, {i32(after)}, loc));
                if (needsBarrier(groups[gi])) body.push_back(syncThreads(loc));
            }
            body.push_back(mutate(stageBuffers(rest[j], ring, stage)));
            bool synced = false;
            for (auto &g : groups) {
                if (g.last != j) continue;
                if (!synced && needsBarrier(g)) body.push_back(syncThreads(loc)), synced = true;
                body.push_back(IfThenElse::make(refillIn, issueTiles(op, g.copies, refillIter, stage, ring), nullptr, loc));
                body.push_back(commit());
            }
        }
        out.push_back(For::make(op.var, min, n, ForKind::Serial, 0, Seq::make(std::move(body), loc), loc));
        out.push_back(lib::stmt(lib::Fn::CpAsyncWait, {i32(0)}, loc));
        return Seq::make(std::move(out), loc);
    }
};

} // namespace

Program pipelineLoops(const Program &p, const Variant &v, DiagnosticEngine &diag) {
    Program out;
    for (auto &k : p.kernels) {
        Pipeliner m(*k, v.options.assumeAlignedRows, diag);
        Stmt body = m.mutate(k->body);
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body ? body : Seq::make({});
        nk->assumptions = m.transfers.assumptions;
        nk->allocs.insert(nk->allocs.end(), m.locals.begin(), m.locals.end());
        for (auto &b : nk->allocs) {
            auto it = m.staged.find(b.get());
            if (it == m.staged.end()) continue;
            // A ring stores each stage as the tile it replaces was to be stored (cpAsyncWgmma's panel layout).
            if (const TileLayout *t = nk->tileLayoutOf(b.get())) {
                const TileLayout stages{it->second, t->swizzleBytes, t->tma};
                nk->recordTileLayout(stages);
            }
            b = it->second;
        }
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
