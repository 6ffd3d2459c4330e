/// \file
/// Swizzled shared operand tiles (include/tilec/passes/SwizzleShared.h).
#include "tilec/passes/SwizzleShared.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRPrinter.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/SharedAliases.h"

#include "BankConflicts.h"
#include "RangeScopedMutator.h"
#include "OffsetTerms.h"

#include <algorithm>
#include <map>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// How one buffer is swizzled: its row length, the elements of one tile (one pipeline stage), and whether in
/// the panel layout (swz_panels, in panels of `span` bytes) rather than the row swizzle (swz).
struct Swizzle {
    int64_t cols = 0, tileElems = 0;
    bool panels = false;
    int span = 0; ///< the panel layout's (the tile's record, Kernel::tileLayouts; else the row's widest)
    /// A tile stored with a shorter row pitch than its shape's (rows padded with elements no access addresses):
    /// the pitch it had (0: unchanged) and the one it gets; `cols` 0 then leaves it unswizzled.
    int64_t fromPitch = 0, toPitch = 0;
};

/// Whether the panel layout of a tile with rows of `cols` `eb`-byte elements in panels of `span` bytes differs
/// from its row swizzle: rows wider than one panel (a row of one panel, 32, 64 or 128 bytes, is the row swizzle's
/// own pattern).
bool panelsDiffer(int64_t cols, int eb, int span) { return cols * eb != span; }

/// The buffers the library is handed as swizzled tiles. A wgmma operand (or a gemm_*_panels one) is read in
/// the panel layout, so every access of it (the cp.async transfers that fill it among them) takes that layout;
/// an mma.sync operand or a transfer's destination takes the row swizzle. Where both read one tile, the two
/// layouts must be the same (cpAsyncWgmma reads such tiles as panels everywhere; a TMA tile has no other reader).
struct Find : IRVisitor {
    using IRVisitor::visit;
    explicit Find(const Kernel &k) : k_(k) {}
    std::map<const BufferNode *, Swizzle> found;
    std::set<const BufferNode *> panelReaders, rowReaders; ///< read by a wgmma in panels, by an mma.sync in rows
    /// A TMA tile is stored in the panel layout whoever reads it (its record, Kernel::tileLayouts): the consumers'
    /// own loads of it (element-wise work, copies into fragments) take that layout too. An unswizzled one (a
    /// dense row) none.
    void tile(const TileLayout &t) {
        if (t.tma && t.swizzleBytes > 0) operand(t.buffer, true, false);
    }
    std::set<const BufferNode *> bulkSources; ///< read by a bulk copy (bulkStores): row-major, as the copy reads
    void visit(const Call &op) override {
        if (lib::is(op, lib::Fn::BulkStore))
            if (auto l = addressedLoad(lib::arg(op, lib::Fn::BulkStore, "src"))) bulkSources.insert(l->buffer.get());
        auto panelled = panelSharedOperands(op);
        for (const Load *l : swizzledOperands(op)) {
            // A transfer pipelineLoops stores unswizzled (a stage each thread reads only where it copied itself)
            // asks nothing of its destination's layout.
            if (isTileTransfer(op) && constValue(lib::arg(op, lib::find(op.name)->fn, "swizzle")) == std::optional<int64_t>(0)) continue;
            operand(l->buffer, std::find(panelled.begin(), panelled.end(), l) != panelled.end(), isTileTransfer(op));
        }
        IRVisitor::visit(op);
    }

  private:
    const Kernel &k_;
    void operand(const Buffer &b, bool panelled, bool transfer) {
        if (b->shape.size() < 2) return;
        auto &shape = b->shape;
        auto rows = constValue(shape[shape.size() - 2]), cols = constValue(shape.back());
        if (!rows || !cols) return;
        Swizzle &sw = found[b.get()];
        sw.cols = *cols, sw.tileElems = *rows * *cols;
        if (panelled) {
            // the span the plan recorded (a narrower one where warpgroups split the tile inside a wider panel)
            const TileLayout *t = k_.tileLayoutOf(b.get());
            sw.span = t && t->swizzleBytes > 0 ? t->swizzleBytes : lib::widestPanelSpan(*cols * b->dtype.bytes());
            sw.panels = panelsDiffer(*cols, b->dtype.bytes(), sw.span);
            if (sw.panels) panelReaders.insert(b.get());
        } else if (!transfer) {
            rowReaders.insert(b.get());
        }
    }
};

using banks::rowSwizzleActive;

/// A tile's offset `e` (rows of `pitch` elements) with rows of `to` elements instead, where every term of it is
/// either a whole number of rows or part of a column sum that provably stays in [0, to): nullopt otherwise.
/// `maxCol` (when given) receives the largest column the sum reaches.
std::optional<Expr> repitched(const Expr &e, int64_t pitch, int64_t to, const RangeMap &ranges, int64_t *maxCol = nullptr) {
    std::vector<offsets::Term> terms;
    if (pitch <= 0 || !offsets::flatten(e, 1, e->dtype, terms)) return std::nullopt;
    int64_t lo = 0, hi = 0, constant = 0; // the column sum's bounds; the new offset's constant term
    Expr out;
    auto add = [&](const Expr &leaf, int64_t c) {
        Expr t = c == 1 ? leaf : binary(BinaryOp::Mul, leaf, intImm(c, leaf->dtype));
        out = out ? binary(BinaryOp::Add, out, t) : t;
    };
    for (auto &t : terms) {
        if (!t.leaf) {
            const int64_t row = t.coeff >= 0 ? t.coeff / pitch : -((-t.coeff + pitch - 1) / pitch), col = t.coeff - row * pitch;
            constant += row * to + col, lo += col, hi += col;
        } else if (t.coeff % pitch == 0) {
            add(t.leaf, t.coeff / pitch * to);
        } else {
            Interval b = boundsOf(t.leaf, ranges);
            if (!b.lo || !b.hi) return std::nullopt;
            const int64_t x = *b.lo * t.coeff, y = *b.hi * t.coeff;
            lo += std::min(x, y), hi += std::max(x, y);
            add(t.leaf, t.coeff);
        }
    }
    if (lo < 0 || hi >= to) return std::nullopt;
    if (maxCol) *maxCol = hi;
    if (!out) return intImm(constant, e->dtype);
    return constant ? binary(BinaryOp::Add, out, intImm(constant, e->dtype)) : out;
}

/// One candidate layout of a tile that no library call addresses: its row pitch (that of its shape, or a
/// shorter one) and the row swizzle over virtual rows of `swizzleCols` elements (0: none) in tiles of
/// `tileElems` (swz_in_tiles: the pattern restarts at each tile).
struct Candidate {
    int64_t pitch = 0, swizzleCols = 0, tileElems = 0;
};

/// Shared tiles that no library call addresses (every access an element load or store), stored in the layout
/// their accesses, writers and readers together, take the fewest bank wavefronts in, counted for the block's
/// first warp with loop variables at their first value (banks::wavefronts): the row swizzle over the tile's rows
/// (a warp storing a wgmma accumulator's pairs into 256-byte rows, eight rows at one column, is 8-way conflicted
/// row-major), and where the tile's rows carry padding that no access reaches (the column part of every offset
/// provably inside a shorter row: transposeFragments' staging tiles) the shorter pitch, plain or swizzled over
/// its rows or over virtual rows of 2-16 rows or 1/2-1/8 row (the XOR of a 16-byte chunk by row / 2^k, or by
/// 2 row + half: a transpose staged through a tile of 64 floats, a warp storing 8 rows 4 apart, needs the XOR
/// by row / 4, which no padding of whole chunks gives). Row-major storage stays unless a candidate takes
/// strictly fewer wavefronts. A vector access keeps its lanes together only when aligned to its width of at
/// most 16 bytes; another one leaves the tile as it is, and so does an access that does not evaluate for lack
/// of evidence.
struct Conflicts : IRVisitor {
    using IRVisitor::visit;
    explicit Conflicts(const Kernel &k) : k_(k), tx_(k.threadIdx.get()), ranges_(kernelRanges(k)) {
        for (auto &[view, base] : ir::sharedAliases(k)) aliased.insert(view.get()), aliased.insert(base.get());
    }
    std::set<const BufferNode *> excluded, aliased;
    /// Per tile: the first warp's accesses (with their element bytes), and the last column any access reaches
    /// (columnsKnown false where an offset does not split into whole rows and a bounded column).
    struct Accesses {
        std::vector<banks::WarpAccess> warps;
        std::vector<int> elemBytes;
        int64_t maxCol = 0;
        bool columnsKnown = true;
    };
    std::map<const BufferNode *, Accesses> accesses;

    void visit(const Call &op) override {
        if (lib::is(op, lib::Fn::AddressOf)) {
            for (auto &a : op.args)
                if (auto l = as<Load>(a)) excluded.insert(l->buffer.get());
        }
        if (lib::is(op, lib::Fn::Stmatrix)) { // each lane's 16-byte row, as a vector store of the lane would write it
            if (const Load *dst = addressedLoad(lib::arg(op, lib::Fn::Stmatrix, "dst")))
                access(dst->buffer, dst->indices, lib::kMatrixRowBytes);
            return;
        }
        IRVisitor::visit(op);
    }
    /// A tile a statement still names by region (no element offsets this pass could map) keeps its layout.
    void visitRegion(const Region &r) override {
        if (r.buffer) excluded.insert(r.buffer.get());
        IRVisitor::visitRegion(r);
    }
    void visit(const Reduce &op) override {
        if (op.src) excluded.insert(op.src.get());
        if (op.dst) excluded.insert(op.dst.get());
    }
    void visit(const For &op) override {
        auto savedValues = values_;
        auto savedRanges = ranges_;
        const For *savedLanes = lanes_;
        if (auto m = constValue(op.min)) values_[op.var.get()] = *m;
        else values_.erase(op.var.get());
        addLoopRange(ranges_, op);
        if (op.forKind == ForKind::Vectorized) lanes_ = &op;
        IRVisitor::visit(op);
        values_ = std::move(savedValues), lanes_ = savedLanes, ranges_ = std::move(savedRanges);
    }
    void visit(const Load &op) override {
        access(op.buffer, op.indices);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        access(op.buffer, op.indices);
        IRVisitor::visit(op);
    }

    /// The row of `b` in elements: a shared alias's is its base's row bytes in its own elements (the swizzle its
    /// base takes, aliasSwizzles), or none where they are no whole number of them.
    std::optional<int64_t> rowOf(const BufferNode *b) const {
        const BufferNode *base = ir::storageOf(k_, b);
        auto cols = base->shape.size() >= 2 ? constValue(base->shape.back()) : std::nullopt;
        if (!cols || base == b) return cols;
        const int64_t rowBytes = *cols * base->dtype.bytes();
        return rowBytes % b->dtype.bytes() == 0 ? std::optional<int64_t>(rowBytes / b->dtype.bytes()) : std::nullopt;
    }

  private:
    const Kernel &k_;
    const VarNode *tx_;
    std::map<const VarNode *, int64_t> values_;
    RangeMap ranges_;
    const For *lanes_ = nullptr;

    /// An element access of `b` at `idx`, or (`rowBytes`) one of a whole 16-byte row of an 8x8 matrix at its start.
    void access(const Buffer &b, const std::vector<Expr> &idx, int64_t rowBytes = 0) {
        if (b->scope != Scope::Shared || excluded.count(b.get())) return;
        if (idx.size() != 1) return (void)excluded.insert(b.get());
        auto cols = rowOf(b.get());
        const int64_t eb = b->dtype.bytes();
        if (!cols) return (void)excluded.insert(b.get());
        int64_t bytes = rowBytes ? rowBytes : eb;
        // The lanes of a vectorized loop are one access only where code generation issues them as one vector (a
        // pair conversion reads its lanes' elements one by one: per_block_cast_lossless's 4-bit decode, 16 bytes
        // of a lane read as 16 byte loads, each 4-way conflicted, counted before as one conflict-free vector).
        if (lanes_ && !rowBytes && banks::issuesVectors(*lanes_)) {
            auto lin = linearIn(idx[0], lanes_->var.get());
            auto width = constValue(lanes_->extent);
            if (!lin || !width) return (void)excluded.insert(b.get());
            if (lin->second != 0) {
                const bool whole = lin->second == 1 && *width * eb <= 16 && lin->first && knownMultiple(lin->first) % *width == 0;
                if (!whole) return (void)excluded.insert(b.get());
                bytes = *width * eb;
            }
        }
        auto &acc = accesses[b.get()];
        int64_t maxCol = 0;
        if (acc.columnsKnown && !aliased.count(b.get()) && repitched(idx[0], *cols, *cols, ranges_, &maxCol))
            acc.maxCol = std::max(acc.maxCol, maxCol + (rowBytes ? rowBytes / eb - 1 : 0)); // a row: its last element
        else
            acc.columnsKnown = false;
        auto a = banks::firstWarp(idx[0], tx_, values_, (int)bytes);
        if (!a) return;
        acc.warps.push_back(*a);
        acc.elemBytes.push_back((int)eb);
    }
};

/// The candidate layouts of tile `b` (rows of `cols` elements; `shorter`: a shorter pitch its accesses allow,
/// or 0), in the order ties are broken: the row swizzle over its own rows in tiles of its last two dimensions
/// first (what this pass chose before), then the shorter pitch unswizzled, swizzled over its rows, over 2-16
/// rows and over 1/2-1/8 row. A virtual row is a power of two elements (its row and chunk are shifts, never
/// divisions) and its pattern's 8 rows divide the whole buffer, the swizzle's tile (no access of a tile no
/// library addresses cares where a stage ends; the XOR may then take bits of the outer indices). Virtual rows
/// only where the padding goes (transposeFragments' staging tiles, written and read as whole words): the count
/// sees element accesses as written, not as nvcc merges them, and a tile of 16-bit pairs (gemm_intrinsics'
/// and bitnet's accumulator staging) took 8 -> 4 read wavefronts there for 48 more STS, its pairs no longer
/// merged into 32-bit stores (splitSwizzles keeps a constant such as 129 in the swizzle's argument).
std::vector<Candidate> candidates(const BufferNode &b, int64_t cols, int64_t shorter, bool virtualRows) {
    std::vector<Candidate> out;
    const int64_t eb = b.dtype.bytes();
    auto rows = constValue(b.shape[b.shape.size() - 2]);
    const int64_t elems = b.constElements();
    if (!rows || eb <= 0 || elems <= 0 || elems % cols != 0) return out;
    for (int64_t pitch : {cols, shorter}) {
        if (pitch <= 0) continue;
        if (pitch != cols) out.push_back({pitch, 0, 0});
        const int64_t tileElems = *rows * pitch, whole = elems / cols * pitch;
        if (rowSwizzleActive(pitch, eb)) out.push_back({pitch, pitch, tileElems});
        for (int64_t num : {2, 4, 8, 16, -2, -4, -8}) {
            if (!virtualRows || pitch == cols || (num < 0 && pitch % -num != 0)) continue;
            const int64_t w = num > 0 ? pitch * num : pitch / -num;
            if ((w & (w - 1)) == 0 && rowSwizzleActive(w, eb) && whole % (8 * w) == 0) out.push_back({pitch, w, whole});
        }
    }
    return out;
}

/// The element offset `o` of a tile with rows of `pitch` elements stored as candidate `c` (the map
/// tilec::swz_in_tiles computes: code generation's form of tilec.swz).
int64_t candidateOffset(const Candidate &c, int64_t pitch, int64_t eb, int64_t o) {
    const int64_t p = c.pitch == pitch ? o : o / pitch * c.pitch + o % pitch;
    return c.swizzleCols ? banks::rowSwizzled(c.swizzleCols, eb, c.tileElems, p) : p;
}

/// The layout chosen for a tile that no library call addresses (see Conflicts), or nullopt for row-major.
std::optional<Swizzle> chooseLayout(const BufferNode &b, const Conflicts::Accesses &acc, int64_t cols, bool aliased) {
    const int64_t eb = b.dtype.bytes();
    int64_t shorter = 0;
    if (acc.columnsKnown && !aliased && b.shape.size() >= 2 && eb > 0 && 16 % eb == 0) {
        // The shortest pitch of whole 16-byte chunks past every column reached (vector accesses stay aligned).
        const int64_t chunk = 16 / eb, need = (acc.maxCol + chunk) / chunk * chunk;
        if (need < cols && cols % chunk == 0) shorter = need;
    }
    auto cost = [&](const std::optional<Candidate> &c) {
        int64_t n = 0;
        for (size_t i = 0; i < acc.warps.size(); ++i) {
            const int64_t e = acc.elemBytes[i];
            const int64_t p = cols * eb / e; // the access's own elements per row (an alias's)
            std::optional<Candidate> ce = c; // in the access's elements (a shared alias's may differ from the tile's)
            if (ce) ce->pitch = ce->pitch * eb / e, ce->swizzleCols = ce->swizzleCols * eb / e, ce->tileElems = ce->tileElems * eb / e;
            n += banks::wavefronts(acc.warps[i], (int)e, [&](int64_t o) { return ce ? candidateOffset(*ce, p, e, o) : o; });
        }
        return n;
    };
    int64_t best = cost(std::nullopt);
    std::optional<Candidate> chosen;
    for (const Candidate &c : candidates(b, cols, shorter, !aliased))
        if (int64_t n = cost(c); n < best) best = n, chosen = c;
    if (!chosen) return std::nullopt;
    Swizzle sw;
    sw.cols = chosen->swizzleCols, sw.tileElems = chosen->tileElems;
    if (chosen->pitch != cols) sw.fromPitch = cols, sw.toPitch = chosen->pitch;
    return sw;
}

class Apply : public RangeScopedMutator {
  public:
    using IRMutator::visit;
    /// `shorter`: the tiles stored with a shorter row pitch, and the buffer each becomes.
    Apply(const Kernel &k, const std::map<const BufferNode *, Swizzle> &s, const std::map<const BufferNode *, Buffer> &shorter)
        : RangeScopedMutator(k), swizzled_(s), shorter_(shorter) {}

    Buffer mutateBuffer(const Buffer &b) override {
        auto it = shorter_.find(b.get());
        return it == shorter_.end() ? b : it->second;
    }
    Expr visit(const std::shared_ptr<const Call> &op) override {
        if (lib::is(*op, lib::Fn::AddressOf)) return op; // the library swizzles its own accesses
        if (isTileTransfer(*op)) return transferInto(op);
        if (lib::is(*op, lib::Fn::LdMatrix)) return chunkAddress(op, lib::Fn::LdMatrix, "src");
        if (lib::is(*op, lib::Fn::Stmatrix)) return chunkAddress(op, lib::Fn::Stmatrix, "dst");
        if (lib::is(*op, lib::Fn::CpAsyncChunk)) return chunkAddress(op, lib::Fn::CpAsyncChunk, "dst");
        if (lib::is(*op, lib::Fn::CpAsyncCopy)) return chunkAddress(op, lib::Fn::CpAsyncCopy, "dst");
        return IRMutator::visit(op);
    }
    Stmt visit(const std::shared_ptr<const For> &op) override {
        auto saved = lanes_;
        if (op->forKind == ForKind::Vectorized) lanes_ = op.get();
        Stmt s = RangeScopedMutator::visit(op);
        lanes_ = saved;
        return s;
    }
    Expr visit(const std::shared_ptr<const Load> &op) override {
        Expr e = IRMutator::visit(op);
        auto l = as<Load>(e);
        auto it = swizzled_.find(op->buffer.get());
        if (it == swizzled_.end()) return e;
        return Load::make(l->buffer, {map(l->buffer, it->second, l->indices[0])}, l->loc);
    }
    Stmt visit(const std::shared_ptr<const Store> &op) override {
        Stmt s = IRMutator::visit(op);
        auto st = as<Store>(s);
        auto it = swizzled_.find(op->buffer.get());
        if (it == swizzled_.end()) return s;
        return Store::make(st->buffer, {map(st->buffer, it->second, st->indices[0])}, st->value, st->loc);
    }

  private:
    const std::map<const BufferNode *, Swizzle> &swizzled_;
    const std::map<const BufferNode *, Buffer> &shorter_;
    const For *lanes_ = nullptr; ///< the innermost vectorized loop

    /// A tile transfer into a buffer in the panel layout is told to store it so (its tile is the buffer's
    /// whole tile: pipelineLoops copies whole 2-D buffers).
    Expr transferInto(const std::shared_ptr<const Call> &op) {
        const lib::Fn f = lib::find(op->name)->fn;
        const Load *dst = addressedLoad(lib::arg(*op, f, "dst"));
        auto it = dst ? swizzled_.find(dst->buffer.get()) : swizzled_.end();
        if (it == swizzled_.end()) return op;
        std::vector<Expr> args = op->args;
        const size_t sw = lib::argIndex(f, "swizzle");
        if (!it->second.panels) { // (a plain transfer into a tile that another reader swizzles stores it swizzled too)
            if (constValue(args[sw]) != std::optional<int64_t>(0)) return op;
            args[sw] = i32(1);
            return Call::make(op->dtype, op->name, std::move(args), op->loc);
        }
        auto rows = constValue(lib::arg(*op, f, "rows")), cols = constValue(lib::arg(*op, f, "cols"));
        TILEC_ASSERT(rows && cols && *cols == it->second.cols && *rows * *cols == it->second.tileElems,
                     "a tile transfer into part of '" + dst->buffer->name + "', which is in the panel layout");
        args[sw] = i32(lib::transferPanels(it->second.span, *cols * dst->buffer->dtype.bytes()));
        return Call::make(op->dtype, op->name, std::move(args), op->loc);
    }

    /// An address a call hands the hardware itself, chunk by chunk (a thread's cp.async chunk of a gathered fill,
    /// GatherTransfers.h; an ldmatrix lane's row): mapped, as a chunk of at most 16 aligned bytes, which the
    /// swizzle keeps whole.
    Expr chunkAddress(const std::shared_ptr<const Call> &op, lib::Fn f, const char *arg) {
        const size_t i = lib::argIndex(f, arg);
        const Load *at = addressedLoad(op->args[i]);
        auto it = at ? swizzled_.find(at->buffer.get()) : swizzled_.end();
        if (it == swizzled_.end()) return op;
        std::vector<Expr> args = op->args;
        args[i] = addressOf(at->buffer, {map(at->buffer, it->second, at->indices[0])});
        return Call::make(op->dtype, op->name, std::move(args), op->loc);
    }

    Expr map(const Buffer &b, const Swizzle &sw, const Expr &offset) {
        const int eb = b->dtype.bytes();
        // A shorter pitch first (Conflicts proved every offset's column part inside the shorter row).
        auto pitched = [&](const Expr &off) {
            if (!sw.fromPitch) return off;
            auto e = repitched(off, sw.fromPitch, sw.toPitch, ranges());
            TILEC_ASSERT(e, "swizzleShared: an offset of '" + b->name + "' past the row it was given");
            return *e;
        };
        auto swz = [&](Expr off) {
            off = pitched(off);
            if (!sw.cols) return off;
            if (sw.panels) return lib::call(lib::Fn::SwzPanels, {i32(sw.cols), i32(eb), i32(sw.tileElems), i32(sw.span), std::move(off)}, {}, DType::Int32);
            return lib::call(lib::Fn::Swz, {i32(sw.cols), i32(eb), i32(sw.tileElems), std::move(off)}, {}, DType::Int32);
        };
        if (lanes_) {
            auto width = constValue(lanes_->extent);
            auto lin = linearIn(offset, lanes_->var.get());
            if (width && lin && lin->second == 1 && *width * eb <= 16 && lin->first &&
                knownMultiple(lin->first) % *width == 0)
                return binary(BinaryOp::Add, swz(lin->first), lanes_->var);
        }
        return swz(offset);
    }
};

/// A shared alias (tilec/SharedAliases.h) is stored as its base: the base's swizzle, which moves whole 16-byte
/// chunks of its bytes, counted in the alias's elements (its rows and tiles are as many bytes; an element of at
/// most 16 bytes lies in one chunk, and the swizzle is active only on rows of a multiple of 16 bytes). Every
/// swizzle of tilec's (swz, swz_panels) is a map of byte offsets that depends on the row and tile bytes alone.
void aliasSwizzles(const Kernel &k, std::map<const BufferNode *, Swizzle> &found) {
    for (auto &[view, base] : ir::sharedAliases(k)) {
        auto it = found.find(base.get());
        const int64_t eb = base->dtype.bytes(), vb = view->dtype.bytes();
        TILEC_ASSERT(!found.count(view.get()), "swizzleShared: shared alias '" + view->name + "' is a library operand of its own");
        if (it == found.end()) continue;
        const Swizzle &sw = it->second;
        const int64_t rowBytes = sw.cols * eb, tileBytes = sw.tileElems * eb;
        const bool active = sw.panels || rowSwizzleActive(sw.cols, eb);
        if (!active) continue;
        TILEC_ASSERT(vb > 0 && 16 % vb == 0 && rowBytes % vb == 0 && tileBytes % vb == 0,
                     "swizzleShared: shared alias '" + view->name + "' of elements that straddle its base's swizzled chunks");
        found[view.get()] = Swizzle{rowBytes / vb, tileBytes / vb, sw.panels, sw.span};
    }
}

} // namespace

Program swizzleShared(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Find f(*k);
        for (auto &t : k->tileLayouts) f.tile(t);
        f.visit(k->body);
        Conflicts c(*k);
        c.visit(k->body);
        // A shared alias's accesses count for its base (aliasSwizzles gives it the base's swizzle).
        std::map<const BufferNode *, Conflicts::Accesses> tiles;
        for (auto &[b, acc] : c.accesses) {
            auto &t = tiles[ir::storageOf(*k, b)];
            t.warps.insert(t.warps.end(), acc.warps.begin(), acc.warps.end());
            t.elemBytes.insert(t.elemBytes.end(), acc.elemBytes.begin(), acc.elemBytes.end());
            t.maxCol = std::max(t.maxCol, acc.maxCol), t.columnsKnown = t.columnsKnown && acc.columnsKnown;
        }
        for (auto &[view, base] : ir::sharedAliases(*k))
            if (c.excluded.count(view.get())) c.excluded.insert(base.get());
        std::map<const BufferNode *, Buffer> shorter;
        for (auto &[b, acc] : tiles) {
            if (f.found.count(b) || c.excluded.count(b) || b->shape.size() < 2) continue;
            auto cols = constValue(b->shape.back());
            auto sw = cols ? chooseLayout(*b, acc, *cols, c.aliased.count(b) > 0) : std::nullopt;
            if (!sw) continue;
            f.found[b] = *sw;
            if (sw->fromPitch) {
                std::vector<Expr> shape = b->shape;
                shape.back() = intImm(sw->toPitch, shape.back()->dtype);
                shorter[b] = makeBuffer(b->name, b->scope, b->dtype, std::move(shape), b->loc);
            }
        }
        aliasSwizzles(*k, f.found);
        for (auto *b : f.bulkSources)
            TILEC_ASSERT(!f.found.count(b), "swizzleShared: shared tile '" + b->name + "', which a bulk copy reads row by row, would be swizzled");
        for (auto *b : f.panelReaders)
            TILEC_ASSERT(!f.rowReaders.count(b), "shared tile '" + b->name + "' is read both in wgmma's panel layout and in mma.sync's row swizzle");
        if (f.found.empty()) {
            out.kernels.push_back(k);
            continue;
        }
        Apply a(*k, f.found, shorter);
        auto nk = std::make_shared<Kernel>(*a.mutate(k));
        for (auto &b : nk->allocs) b = a.mutateBuffer(b);
        out.kernels.push_back(nk);
    }
    return out;
}

std::string describeBankConflicts(const Program &p) {
    std::string s;
    for (auto &k : p.kernels) {
        if (!k) continue;
        auto costs = banks::sharedAccessCosts(*k);
        if (costs.empty()) continue;
        s += "# shared accesses of " + k->name + " (the first warp; wavefronts against the fewest possible):\n";
        for (auto &c : costs)
            s += "#   " + std::string(c.store ? "store " : "load ") + c.buffer->name + "[" + print(c.index) + "] " +
                 std::to_string(c.bytes) + " B a lane: " + std::to_string(c.wavefronts) + " wavefronts, ideal " +
                 std::to_string(c.ideal) + (c.wavefronts > c.ideal ? " (conflicted)" : "") + "\n";
    }
    return s;
}

} // namespace tilec::passes
