/// \file
/// The fragment uses and T.Parallel nests of a kernel (src/lower/LayoutUses.h): which fragment each nest indexes,
/// and how (exactly by its variables, a slice, a broadcast along its trailing variables), for layout inference.
#include "LayoutUses.h"

#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelNest.h"
#include "ProgramVectorized.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>

namespace tilec::passes {

using namespace ir;

namespace {

/// S > 1 when a read indexes a fragment by the nest's variables but the last, divided by S (`B[i, j // 2]` in a
/// nest over (i, j): a dequantizing GEMM's packed bytes) over a shape whose last extent is the nest's / S; else 0.
/// Nest iteration p then reads the fragment's element p // S (row-major), as a broadcast of S iterations does.
int64_t packedReadFactor(const std::vector<Expr> &indices, const Nest &n, const BufferNode &b) {
    const size_t r = indices.size();
    if (r == 0 || r != n.vars.size() || r != b.shape.size()) return 0;
    for (size_t d = 0; d + 1 < r; ++d)
        if (indices[d] != Expr(n.vars[d]) || constInt(b.shape[d]) != std::optional<int64_t>(n.extents[d])) return 0;
    auto q = as<Binary>(indices[r - 1]);
    std::optional<int64_t> S;
    if (q && q->op == BinaryOp::FloorDiv && q->a == Expr(n.vars[r - 1])) S = constInt(q->b);
    if (!S || *S < 2 || n.extents[r - 1] % *S || constInt(b.shape[r - 1]) != std::optional<int64_t>(n.extents[r - 1] / *S))
        return 0;
    return *S;
}

/// The widest vector (elements, a power of two up to 16) at which an access of memory buffer `b` along the nest's
/// lane variable `lane` can start every vector aligned: its rows' length where only the last index runs with the
/// lanes and an earlier index moves between rows (a padded shared tile, `s[i, j]` over rows of 132 bfloat16: 4,
/// so the nest moves 8-byte vectors on both sides instead of 16-byte global ones beside 2-byte shared ones);
/// 16 where the rows' length is only known at run time or the lanes do not run along the last index.
int rowAlignment(const BufferNode &b, const std::vector<Expr> &indices, const VarNode *lane) {
    const size_t r = indices.size();
    if (r < 2 || r != b.shape.size() || !uses(indices[r - 1], lane)) return 16;
    bool moves = false;
    for (size_t d = 0; d + 1 < r; ++d) {
        if (uses(indices[d], lane)) return 16;
        moves |= constInt(indices[d]) != std::optional<int64_t>(0);
    }
    auto row = constInt(b.shape[r - 1]);
    if (!moves || !row || *row <= 0) return 16;
    int v = 16;
    while (v > 1 && *row % v != 0) v /= 2;
    return v;
}

/// The lanes that share each element an access reads: c > 1 where its indices reach the lane variable only as
/// `lane // c` (the greatest common divisor of such divisors: `s[i, j // 32]`, a per-block scale read in a nest
/// over j), so that an aligned vector of V lanes reads V / c elements where V > c and one where V <= c; 1 where
/// any index holds the lane otherwise.
int64_t lanesPerElement(const std::vector<Expr> &indices, const VarNode *lane) {
    struct Divisors : IRVisitor {
        using IRVisitor::visit;
        const VarNode *lane;
        int64_t c = 0; ///< 0: the lane not met yet
        void visit(const VarNode &v) override {
            if (&v == lane) c = 1;
        }
        void visit(const Binary &b) override {
            auto d = b.op == BinaryOp::FloorDiv && b.a.get() == lane ? constInt(b.b) : std::nullopt;
            if (!d || *d < 1) return IRVisitor::visit(b);
            c = std::gcd(c, *d);
        }
    } v;
    v.lane = lane;
    for (auto &i : indices) v.visit(i);
    return std::max<int64_t>(1, v.c);
}

class Collect : public IRVisitor {
  public:
    using IRVisitor::visit;
    Collect(DiagnosticEngine &d, bool broadcastLoadWidths) : diag_(d), broadcastLoadWidths_(broadcastLoadWidths) {}

    LayoutUses out;
    std::vector<Nest> &nests = out.nests;
    std::vector<Use> &uses = out.uses;
    std::vector<GemmUse> &gemms = out.gemms;

    void visit(const Gemm &op) override {
        auto shape = [](const Region &r) {
            std::vector<int64_t> s;
            for (auto &x : r.ranges)
                if (auto e = constInt(x.extent); e && *e != 1) s.push_back(*e);
            return s;
        };
        auto cs = shape(op.c), as = shape(op.a);
        if (!op.c.buffer || op.c.buffer->scope != Scope::Fragment || cs.size() != 2 || as.size() != 2) return;
        GemmUse g;
        g.op = &op;
        g.c = op.c.buffer.get();
        g.m = cs[0], g.n = cs[1], g.k = op.transA ? as[0] : as[1];
        if (op.a.buffer && op.a.buffer->scope == Scope::Fragment) g.aFrag = op.a.buffer.get();
        gemms.push_back(g);
    }

    void visit(const For &op) override {
        if (op.forKind != ForKind::Parallel) {
            auto e = constInt(op.extent);
            if (current_ >= 0 && e && constInt(op.min) == std::optional<int64_t>(0)) {
                innerExtents_[op.var.get()] = *e;
                if (programVectorized(op.numStages)) programLanes_[op.var.get()] = *e;
            }
            return IRVisitor::visit(op);
        }
        if (current_ >= 0) {
            diag_.error(op.loc, "a T.Parallel loop inside the body of another T.Parallel loop is not supported; "
                                "merge them into one T.Parallel with several extents");
            return;
        }
        Nest n;
        n.outer = op.var;
        n.loc = op.loc;
        const std::vector<const For *> loops = parallelNest(op);
        for (const For *f : loops) {
            auto e = constInt(f->extent);
            auto m = constInt(f->min);
            if (!e || !m || *m != 0) {
                diag_.error(f->loc, "T.Parallel needs a constant extent starting at 0");
                return;
            }
            n.vars.push_back(f->var);
            n.extents.push_back(*e);
        }
        nests.push_back(n);
        current_ = (int)nests.size() - 1;
        visit(loops.back()->body);
        current_ = -1;
        innerExtents_.clear();
        programLanes_.clear();
    }

    void visit(const Load &op) override {
        access(op.buffer, op.indices, op.loc, false);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        access(op.buffer, op.indices, op.loc, true);
        // A store to shared or global memory in a nest is lowered whole under the condition that this thread is
        // the element's one writer (LowerParallel: ownedByOneThread), its value's loads included: a read of the
        // element it stores (`pp[i] += x[i]`) is the writer's own, never another thread's.
        const Store *outer = updated_;
        if (current_ >= 0 && op.buffer && (op.buffer->scope == Scope::Global || op.buffer->scope == Scope::Shared))
            updated_ = &op;
        IRVisitor::visit(op);
        updated_ = outer;
    }
    void visit(const AtomicAdd &op) override {
        std::vector<Expr> idx;
        for (auto &r : op.dst.ranges) idx.push_back(r.min);
        access(op.dst.buffer, idx, op.loc, true);
        IRVisitor::visit(op);
    }
    /// A T.access_ptr handed to a call (T.call_extern) may be written through: a store into its buffer.
    void visit(const Call &op) override {
        if (current_ >= 0 && lib::is(op, lib::Fn::AddressOf) && op.args.size() == 1)
            if (auto l = as<Load>(op.args[0]); l && l->buffer && l->buffer->scope != Scope::Local)
                nests[current_].nonLocalStore = nests[current_].passesAddress = true;
        IRVisitor::visit(op);
    }
    void visit(const Reduce &op) override {
        if (current_ >= 0) {
            diag_.error(op.loc, "a reduction cannot be inside a T.Parallel loop: every thread takes part in it");
            return;
        }
        if (op.dst && op.dst->scope == Scope::Fragment) {
            Use u;
            u.buffer = op.dst.get();
            u.loc = op.loc;
            u.reduceDst = true;
            u.reduceSrc = op.src.get();
            u.reduceDim = op.dim;
            uses.push_back(u);
        }
    }

  private:
    DiagnosticEngine &diag_;
    bool broadcastLoadWidths_; ///< LoweringOptions::broadcastLoadWidths
    int current_ = -1;
    const Store *updated_ = nullptr; ///< the memory store whose value is being visited, inside a nest

    /// A read of the very element the enclosing memory store writes (same buffer, equal indices).
    bool ownUpdateRead(const Buffer &b, const std::vector<Expr> &indices) const {
        if (!updated_ || updated_->buffer != b || updated_->indices.size() != indices.size()) return false;
        for (size_t d = 0; d < indices.size(); ++d)
            if (!structurallyEqual(indices[d], updated_->indices[d])) return false;
        return true;
    }
    std::map<const VarNode *, int64_t> innerExtents_; ///< loops over [0, n) inside the current nest
    std::map<const VarNode *, int64_t> programLanes_; ///< those of them the program wrote as T.vectorized

    /// A fragment indexed by a nest variable whose extent passes the fragment's dimension (`sinks[i]` over a
    /// `(heads,)` fragment inside `for i in T.Parallel(block_M)`): its registers hold no such element.
    bool outOfBounds(const BufferNode &b, const std::vector<Expr> &indices, const Nest &n, const SourceRange &loc) {
        for (size_t d = 0; d < indices.size() && d < b.shape.size(); ++d)
            for (size_t v = 0; v < n.vars.size(); ++v) {
                auto extent = constInt(b.shape[d]);
                if (indices[d] != Expr(n.vars[v]) || !extent || *extent >= n.extents[v]) continue;
                diag_.error(loc, "fragment '" + b.name + "' has " + std::to_string(*extent) + " elements along dimension " +
                                     std::to_string(d) + ", but this T.Parallel indexes it by '" + n.vars[v]->name +
                                     "' up to " + std::to_string(n.extents[v] - 1));
                return true;
            }
        return false;
    }

    /// The lanes of the program's T.vectorized loops inside the nest that an access's last index runs along (1 for
    /// none): each thread's access is then a vector of that many elements (T.atomic_addx4's four floats, a
    /// T.vectorized copy of a row's 8 halves), and the nest's own vector width is what is left of 16 bytes. A nest
    /// that kept its 16-byte width would give each thread several such vectors side by side, which the lanes of a
    /// warp then access 64 bytes apart instead of one after the other (sparse_mla_bwd's dKV atomics).
    int64_t programLanes(const std::vector<Expr> &indices) const {
        int64_t n = 1;
        if (!indices.empty())
            for (auto &[v, lanes] : programLanes_)
                if (ir::uses(indices.back(), v)) n *= lanes;
        return n;
    }

    void access(const Buffer &b, const std::vector<Expr> &indices, const SourceRange &loc, bool write) {
        if (!b) return;
        if (current_ >= 0) {
            nests[current_].fragmentAccess |= b->scope == Scope::Fragment;
            nests[current_].nonLocalStore |= write && b->scope != Scope::Local;
        }
        if (current_ >= 0 && (b->scope == Scope::Global || b->scope == Scope::Shared)) {
            // A load whose index leaves out the nest's last variable (the vector lanes run along it) reads one
            // element for all lanes of a vector, not a vector (the row of a gather, `KV[Idx[i], d]`'s `Idx[i]`,
            // a per-row scale): its width does not narrow the nest's vectors, as in TileLang's vectorizer.
            const ir::VarNode *lane = nests[current_].vars.back().get();
            bool laneInvariantLoad = !write && std::none_of(indices.begin(), indices.end(),
                                                            [&](const Expr &i) { return ir::uses(i, lane); });
            if (!laneInvariantLoad) {
                // A vector's lanes that share one element (`s[i, j // 32]`) move a part of it each, and its
                // elements stay aligned in rows `per` times as many lanes wide: a 4-byte scale read once by 32 lanes
                // from rows of 4 does not narrow 1-byte vectors to 4 lanes (per_block_cast_lossless).
                int64_t per = broadcastLoadWidths_ && !write ? lanesPerElement(indices, lane) : 1;
                int64_t bytes = (b->dtype.bytes() * programLanes(indices) + per - 1) / per;
                nests[current_].memBytes = std::max(nests[current_].memBytes, (int)bytes);
                nests[current_].vecCap = std::min<int64_t>(nests[current_].vecCap, std::min<int64_t>(16, rowAlignment(*b, indices, lane) * per));
            }
            if (write) nests[current_].memWrites.insert(b.get());
            else if (!ownUpdateRead(b, indices)) nests[current_].memReads.emplace(b.get(), loc);
        }
        if (b->scope != Scope::Fragment) return;
        Use u;
        u.buffer = b.get();
        u.loc = loc;
        u.nest = current_;
        u.write = write;
        u.indexText = "(";
        for (size_t i = 0; i < indices.size(); ++i) u.indexText += (i ? ", " : "") + print(indices[i]);
        u.indexText += indices.size() == 1 ? ",)" : ")";
        u.indices = indices;
        if (current_ >= 0) {
            const Nest &n = nests[current_];
            if (outOfBounds(*b, indices, n, loc)) return;
            bool exact = indices.size() == n.vars.size() && b->shape.size() == n.vars.size();
            for (size_t d = 0; exact && d < indices.size(); ++d)
                exact = indices[d] == Expr(n.vars[d]) && constInt(b->shape[d]) == std::optional<int64_t>(n.extents[d]);
            u.exact = exact;
            u.rowOfNest = !exact && indices.size() == 1 && b->shape.size() == 1 && indices[0] == Expr(n.vars[0]);
            u.colOfNest = !exact && !write && !indices.empty() && indices.size() == b->shape.size() &&
                          n.vars.size() == indices.size() + 1;
            for (size_t d = 0; u.colOfNest && d < indices.size(); ++d)
                u.colOfNest = indices[d] == Expr(n.vars[d + 1]) && constInt(b->shape[d]) == std::optional<int64_t>(n.extents[d + 1]);
            if (!exact && !write) u.colGroupStride = colGroupOffset(indices, n.vars, n.extents, b->shape).second;
            const size_t r = indices.size();
            bool prefix = !exact && !write && r == b->shape.size() && r < n.vars.size();
            for (size_t d = 0; prefix && d < r; ++d)
                prefix = indices[d] == Expr(n.vars[d]) && constInt(b->shape[d]) == std::optional<int64_t>(n.extents[d]);
            if (prefix) {
                u.trailing = (int)(n.vars.size() - r);
                u.trailElements = std::accumulate(n.extents.begin() + (long)r, n.extents.end(), int64_t(1), std::multiplies<>());
            } else if (int64_t S = !exact && !write ? packedReadFactor(indices, n, *b) : 0) {
                u.trailing = 1; // `B[i, j // S]`: S consecutive iterations read one element, as a broadcast does
                u.trailElements = S;
            } else if (!exact) {
                u.expand = expandFactor(indices, n, *b, innerExtents_);
            }
            // A slice: indices free of the nest's variables, then exactly its last k variables over the fragment's
            // remaining dimensions (`lse[c, j]` in a nest over j). A read may leave out the nest's first variables
            // (`b[m, h]` or `d[h]` in a nest over (o, h)): every value of them reads the same slice.
            const size_t nv = n.vars.size();
            size_t k = 0;
            while (!exact && k < nv && k < r && r == b->shape.size() && indices[r - 1 - k] == Expr(n.vars[nv - 1 - k]) &&
                   constInt(b->shape[r - 1 - k]) == std::optional<int64_t>(n.extents[nv - 1 - k]))
                ++k;
            bool slice = k > 0 && (k < r || k < nv) && (k == nv || !write);
            for (size_t d = 0; slice && d < r - k; ++d)
                for (auto &v : n.vars) slice = slice && !ir::uses(indices[d], v.get());
            if (slice) {
                u.leading = (int)(r - k);
                u.sliceElements = std::accumulate(n.extents.end() - (long)k, n.extents.end(), int64_t(1), std::multiplies<>());
            }
        }
        uses.push_back(u);
    }
};

} // namespace

/// S where `indices` are the nest's variables, the last times S plus the variable of a loop inside the nest over
/// [0, S) (`innerExtents`), over `b`'s whole shape (Use::expand); else 0.
int64_t expandFactor(const std::vector<Expr> &indices, const Nest &n, const BufferNode &b,
                     const std::map<const VarNode *, int64_t> &innerExtents) {
    const size_t r = indices.size();
    if (r == 0 || r != n.vars.size() || r != b.shape.size()) return 0;
    for (size_t d = 0; d + 1 < r; ++d)
        if (indices[d] != Expr(n.vars[d]) || constInt(b.shape[d]) != std::optional<int64_t>(n.extents[d])) return 0;
    auto sum = as<Binary>(indices[r - 1]);
    if (!sum || sum->op != BinaryOp::Add) return 0;
    for (auto [scaled, inner] : {std::pair{sum->a, sum->b}, std::pair{sum->b, sum->a}}) {
        auto m = as<Binary>(scaled);
        auto w = as<VarNode>(inner);
        auto it = w ? innerExtents.find(w) : innerExtents.end();
        if (!m || m->op != BinaryOp::Mul || it == innerExtents.end()) continue;
        auto S = m->a == Expr(n.vars[r - 1]) ? constInt(m->b) : m->b == Expr(n.vars[r - 1]) ? constInt(m->a) : std::nullopt;
        if (S && *S == it->second && *S > 1 && constInt(b.shape[r - 1]) == std::optional<int64_t>(n.extents[r - 1] * *S))
            return *S;
    }
    return 0;
}

LayoutUses collectLayoutUses(const Stmt &body, DiagnosticEngine &diag, bool broadcastLoadWidths) {
    Collect c(diag, broadcastLoadWidths);
    c.visit(body);
    return std::move(c.out);
}

std::pair<Expr, int64_t> colGroupOffset(const std::vector<Expr> &indices, const std::vector<Var> &vars,
                                        const std::vector<int64_t> &extents, const std::vector<Expr> &shape) {
    const std::pair<Expr, int64_t> none{nullptr, 0};
    if (indices.size() != 2 || vars.size() != 2 || shape.size() != 2 || extents[1] % 4 != 0) return none;
    auto rows = constInt(shape[0]), cols = constInt(shape[1]);
    if (indices[0] != Expr(vars[0]) || rows != std::optional<int64_t>(extents[0]) || !cols || *cols % 4 != 0) return none;
    const Expr &col = indices[1], j = vars[1];
    if (col == j) return *cols == extents[1] ? none : std::pair{intImm(0, DType::Int32), int64_t(4)};
    auto sum = as<Binary>(col);
    if (!sum || sum->op != BinaryOp::Add) return none;
    for (auto [scaled, inner] : {std::pair{sum->a, sum->b}, std::pair{sum->b, sum->a}}) {
        auto m = as<Binary>(scaled);
        if (inner != j || !m || m->op != BinaryOp::Mul) continue;
        for (auto [e, k] : {std::pair{m->a, m->b}, std::pair{m->b, m->a}}) {
            auto S = constInt(k);
            if (!S || *S <= 0 || *S % 4 != 0 || ir::uses(e, vars[0].get()) || ir::uses(e, vars[1].get())) continue;
            return {e, *S};
        }
    }
    return none;
}

bool ownRegisterNest(const Stmt &s) {
    auto f = as<For>(s);
    if (!f || f->forKind != ForKind::Parallel) return false;
    SourceManager sm;
    std::ostringstream quiet; // a misplaced nest or reduction inside is reported where layouts are inferred
    DiagnosticEngine diag(sm, quiet);
    LayoutUses u = collectLayoutUses(s, diag);
    struct TileOps : IRVisitor { // a tile statement inside takes every thread of the block
        using IRVisitor::visit;
        bool found = false;
        void visit(const Copy &) override { found = true; }
        void visit(const Fill &) override { found = true; }
        void visit(const Gemm &) override { found = true; }
    } tile;
    tile.visit(s);
    return diag.errorCount() == 0 && !tile.found && u.nests.size() == 1 && !u.nests[0].fragmentAccess &&
           !u.nests[0].nonLocalStore;
}

} // namespace tilec::passes
