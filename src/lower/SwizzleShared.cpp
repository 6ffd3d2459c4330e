/// \file
/// Swizzled shared operand tiles (include/tilec/passes/SwizzleShared.h).
#include "tilec/passes/SwizzleShared.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/SharedAliases.h"

#include "BankConflicts.h"

#include <algorithm>
#include <map>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

/// How one buffer is swizzled: its row length, the elements of one tile (one pipeline stage), and whether in
/// the panel layout (swz_panels) rather than the row swizzle (swz).
struct Swizzle {
    int64_t cols = 0, tileElems = 0;
    bool panels = false;
};

/// Whether the panel layout of a tile with rows of `cols` `eb`-byte elements differs from its row swizzle:
/// rows wider than one panel (rows of 32, 64 or 128 bytes are one panel, the row swizzle's own pattern).
bool panelsDiffer(int64_t cols, int eb) {
    const int64_t rowBytes = cols * eb;
    return rowBytes != 32 && rowBytes != 64 && rowBytes != 128;
}

/// The buffers the library is handed as swizzled tiles. A wgmma operand (or a gemm_*_panels one) is read in
/// the panel layout, so every access of it (the cp.async transfers that fill it among them) takes that layout;
/// an mma.sync operand or a transfer's destination takes the row swizzle. Where both read one tile, the two
/// layouts must be the same (cpAsyncWgmma reads such tiles as panels everywhere; a TMA tile has no other reader).
struct Find : IRVisitor {
    using IRVisitor::visit;
    std::map<const BufferNode *, Swizzle> found;
    std::set<const BufferNode *> panelReaders, rowReaders; ///< read by a wgmma in panels, by an mma.sync in rows
    /// A TMA tile is stored in the panel layout whoever reads it (its record, Kernel::tileLayouts): the consumers'
    /// own loads of it (element-wise work, copies into fragments) take that layout too. An unswizzled one (a
    /// dense row) none.
    void tile(const TileLayout &t) {
        if (t.tma && t.swizzleBytes > 0) operand(t.buffer, true, false);
    }
    void visit(const Call &op) override {
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
    void operand(const Buffer &b, bool panelled, bool transfer) {
        if (b->shape.size() < 2) return;
        auto &shape = b->shape;
        auto rows = constValue(shape[shape.size() - 2]), cols = constValue(shape.back());
        if (!rows || !cols) return;
        Swizzle &sw = found[b.get()];
        sw.cols = *cols, sw.tileElems = *rows * *cols;
        if (panelled) {
            sw.panels = panelsDiffer(*cols, b->dtype.bytes());
            if (sw.panels) panelReaders.insert(b.get());
        } else if (!transfer) {
            rowReaders.insert(b.get());
        }
    }
};

/// Whether swz<cols, eb> moves anything (swizzle.cuh's swz_active), and its map of an element offset.
bool rowSwizzleActive(int64_t cols, int64_t eb) {
    return eb > 0 && 16 % eb == 0 && cols % (16 / eb) == 0 && (cols * eb % 128 == 0 || cols * eb == 64 || cols * eb == 32);
}
int64_t rowSwizzled(int64_t cols, int64_t eb, int64_t off) {
    const int64_t row = off / cols, rowBytes = cols * eb;
    const int64_t x = rowBytes % 128 == 0 ? row & 7 : rowBytes == 64 ? (row >> 1) & 3 : (row >> 2) & 1;
    return off ^ (x * (16 / eb));
}

/// Shared tiles that no library call addresses (every access an element load or store) and whose accesses the
/// row swizzle serves in fewer wavefronts than row-major storage: counted for the block's first warp, loop
/// variables at their first value (a warp storing a wgmma accumulator's pairs into 256-byte rows, eight rows
/// at one column, is 8-way conflicted; swizzled, each row's chunk moves to its own banks). A vector access
/// keeps its lanes together only when aligned to its width of at most 16 bytes; another one leaves the tile
/// as it is, and so does an access that does not evaluate for lack of evidence.
struct Conflicts : IRVisitor {
    using IRVisitor::visit;
    explicit Conflicts(const Kernel &k) : k_(k), tx_(k.threadIdx.get()) {}
    std::set<const BufferNode *> excluded;
    std::map<const BufferNode *, std::pair<int64_t, int64_t>> cost; ///< wavefronts plain, swizzled

    void visit(const Call &op) override {
        if (lib::is(op, lib::Fn::AddressOf)) {
            for (auto &a : op.args)
                if (auto l = as<Load>(a)) excluded.insert(l->buffer.get());
        }
        IRVisitor::visit(op);
    }
    void visit(const For &op) override {
        auto savedValues = values_;
        const For *savedLanes = lanes_;
        if (auto m = constValue(op.min)) values_[op.var.get()] = *m;
        else values_.erase(op.var.get());
        if (op.forKind == ForKind::Vectorized) lanes_ = &op;
        IRVisitor::visit(op);
        values_ = std::move(savedValues), lanes_ = savedLanes;
    }
    void visit(const Load &op) override {
        access(op.buffer, op.indices);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        access(op.buffer, op.indices);
        IRVisitor::visit(op);
    }

  private:
    const Kernel &k_;
    const VarNode *tx_;
    std::map<const VarNode *, int64_t> values_;

    /// The row of `b` in elements: a shared alias's is its base's row bytes in its own elements (the swizzle its
    /// base takes, aliasSwizzles), or none where they are no whole number of them.
    std::optional<int64_t> rowOf(const BufferNode *b) const {
        const BufferNode *base = ir::storageOf(k_, b);
        auto cols = base->shape.size() >= 2 ? constValue(base->shape.back()) : std::nullopt;
        if (!cols || base == b) return cols;
        const int64_t rowBytes = *cols * base->dtype.bytes();
        return rowBytes % b->dtype.bytes() == 0 ? std::optional<int64_t>(rowBytes / b->dtype.bytes()) : std::nullopt;
    }
    const For *lanes_ = nullptr;

    void access(const Buffer &b, const std::vector<Expr> &idx) {
        if (b->scope != Scope::Shared || idx.size() != 1 || excluded.count(b.get())) return;
        auto cols = rowOf(b.get());
        const int64_t eb = b->dtype.bytes();
        if (!cols) return (void)excluded.insert(b.get());
        if (!rowSwizzleActive(*cols, eb)) return;
        int64_t bytes = eb;
        if (lanes_) {
            auto lin = linearIn(idx[0], lanes_->var.get());
            auto width = constValue(lanes_->extent);
            if (!lin || !width) return (void)excluded.insert(b.get());
            if (lin->second != 0) {
                const bool whole = lin->second == 1 && *width * eb <= 16 && lin->first && knownMultiple(lin->first) % *width == 0;
                if (!whole) return (void)excluded.insert(b.get());
                bytes = *width * eb;
            }
        }
        auto a = banks::firstWarp(idx[0], tx_, values_, (int)bytes);
        if (!a) return;
        auto &c = cost[b.get()];
        c.first += banks::wavefronts(*a, (int)eb, [](int64_t o) { return o; });
        c.second += banks::wavefronts(*a, (int)eb, [&](int64_t o) { return rowSwizzled(*cols, eb, o); });
    }
};

class Apply : public IRMutator {
  public:
    using IRMutator::visit;
    explicit Apply(const std::map<const BufferNode *, Swizzle> &s) : swizzled_(s) {}

    Expr visit(const std::shared_ptr<const Call> &op) override {
        if (lib::is(*op, lib::Fn::AddressOf)) return op; // the library swizzles its own accesses
        if (isTileTransfer(*op)) return transferInto(op);
        if (lib::is(*op, lib::Fn::LdMatrix)) return ldmatrixFrom(op);
        return IRMutator::visit(op);
    }
    Stmt visit(const std::shared_ptr<const For> &op) override {
        auto saved = lanes_;
        if (op->forKind == ForKind::Vectorized) lanes_ = op.get();
        Stmt s = IRMutator::visit(op);
        lanes_ = saved;
        return s;
    }
    Expr visit(const std::shared_ptr<const Load> &op) override {
        Expr e = IRMutator::visit(op);
        auto l = as<Load>(e);
        auto it = swizzled_.find(l->buffer.get());
        if (it == swizzled_.end()) return e;
        return Load::make(l->buffer, {map(l->buffer, it->second, l->indices[0])}, l->loc);
    }
    Stmt visit(const std::shared_ptr<const Store> &op) override {
        Stmt s = IRMutator::visit(op);
        auto st = as<Store>(s);
        auto it = swizzled_.find(st->buffer.get());
        if (it == swizzled_.end()) return s;
        return Store::make(st->buffer, {map(st->buffer, it->second, st->indices[0])}, st->value, st->loc);
    }

  private:
    const std::map<const BufferNode *, Swizzle> &swizzled_;
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
        args[sw] = i32(lib::kTransferPanels);
        return Call::make(op->dtype, op->name, std::move(args), op->loc);
    }

    /// An ldmatrix's lanes address rows themselves: each lane's row address is mapped (a row is one aligned
    /// 16-byte chunk, which the swizzle keeps whole).
    Expr ldmatrixFrom(const std::shared_ptr<const Call> &op) {
        const size_t i = lib::argIndex(lib::Fn::LdMatrix, "src");
        const Load *src = addressedLoad(op->args[i]);
        auto it = src ? swizzled_.find(src->buffer.get()) : swizzled_.end();
        if (it == swizzled_.end()) return op;
        std::vector<Expr> args = op->args;
        args[i] = addressOf(src->buffer, {map(src->buffer, it->second, src->indices[0])});
        return Call::make(op->dtype, op->name, std::move(args), op->loc);
    }

    Expr map(const Buffer &b, const Swizzle &sw, const Expr &offset) {
        const int eb = b->dtype.bytes();
        auto swz = [&](Expr off) {
            return lib::call(sw.panels ? lib::Fn::SwzPanels : lib::Fn::Swz, {i32(sw.cols), i32(eb), i32(sw.tileElems), std::move(off)},
                             {}, DType::Int32);
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
        found[view.get()] = Swizzle{rowBytes / vb, tileBytes / vb, sw.panels};
    }
}

} // namespace

Program swizzleShared(const Program &p) {
    Program out;
    for (auto &k : p.kernels) {
        Find f;
        for (auto &t : k->tileLayouts) f.tile(t);
        f.visit(k->body);
        Conflicts c(*k);
        c.visit(k->body);
        // A shared alias's accesses count for its base (aliasSwizzles gives it the base's swizzle).
        std::map<const BufferNode *, std::pair<int64_t, int64_t>> cost;
        for (auto &[b, w] : c.cost) cost[ir::storageOf(*k, b)].first += w.first, cost[ir::storageOf(*k, b)].second += w.second;
        for (auto &[view, base] : ir::sharedAliases(*k))
            if (c.excluded.count(view.get())) c.excluded.insert(base.get());
        for (auto &[b, w] : cost) {
            if (f.found.count(b) || c.excluded.count(b) || w.second >= w.first) continue;
            auto rows = constValue(b->shape[b->shape.size() - 2]), cols = constValue(b->shape.back());
            if (rows && cols) f.found[b] = Swizzle{*cols, *rows * *cols, false};
        }
        aliasSwizzles(*k, f.found);
        for (auto *b : f.panelReaders)
            TILEC_ASSERT(!f.rowReaders.count(b), "shared tile '" + b->name + "' is read both in wgmma's panel layout and in mma.sync's row swizzle");
        if (f.found.empty()) {
            out.kernels.push_back(k);
            continue;
        }
        Apply a(f.found);
        out.kernels.push_back(a.mutate(k));
    }
    return out;
}

} // namespace tilec::passes
