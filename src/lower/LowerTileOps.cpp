/// \file
/// T.copy / T.fill / region T.atomic_add to T.Parallel nests; loop kinds the later passes do not need
/// (include/tilec/passes/LowerTileOps.h).
#include "tilec/passes/LowerTileOps.h"

#include "ProgramVectorized.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/ParallelCopies.h"
#include "tilec/passes/Staging.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

class TileOpsToLoops : public IRMutator {
  public:
    using IRMutator::visit;
    TileOpsToLoops(const Kernel &k, DiagnosticEngine &d) : kernel_(k), diag_(d) {}

    Stmt visit(const std::shared_ptr<const Copy> &op) override {
        if (tileTransfer(*op)) return op; // pipelineLoops turns it into asynchronous copies
        auto loops = loopsFor({&op->src, &op->dst}, op->loc, "T.copy");
        if (!loops) return nullptr;
        Expr value = cast(op->dst.buffer->dtype, Load::make(op->src.buffer, indicesOf(op->src, *loops), op->loc), op->loc);
        const bool own = perThread({&op->src, &op->dst});
        Stmt s = nest(*loops, Store::make(op->dst.buffer, indicesOf(op->dst, *loops), value, op->loc), op->loc, own);
        return own && op->src.buffer != op->dst.buffer ? asProgramVectorized(s) : s;
    }

    Stmt visit(const std::shared_ptr<const Fill> &op) override {
        auto loops = loopsFor({&op->dst}, op->loc, "T.fill");
        if (!loops) return nullptr;
        Expr value = cast(op->dst.buffer->dtype, mutate(op->value), op->loc);
        return nest(*loops, Store::make(op->dst.buffer, indicesOf(op->dst, *loops), value, op->loc), op->loc,
                    perThread({&op->dst}));
    }

    Stmt visit(const std::shared_ptr<const AtomicAdd> &op) override {
        if (!op->src) return IRMutator::visit(op);
        auto loops = loopsFor({&*op->src, &op->dst}, op->loc, "T.atomic_add");
        if (!loops) return nullptr;
        Expr value = cast(op->dst.buffer->dtype, Load::make(op->src->buffer, indicesOf(*op->src, *loops), op->loc), op->loc);
        std::vector<Range> element;
        for (auto &i : indicesOf(op->dst, *loops)) element.push_back({i, intImm(1)});
        Region dst{op->dst.buffer, std::move(element), op->dst.loc};
        return nest(*loops, AtomicAdd::make(dst, std::nullopt, value, op->loc), op->loc);
    }

    /// Reductions work on fragments; a shared source or destination goes through a fragment copy of it.
    Stmt visit(const std::shared_ptr<const Reduce> &op) override {
        bool srcShared = op->src->scope == Scope::Shared, dstShared = op->dst->scope == Scope::Shared;
        if (!srcShared && !dstShared) return op;
        std::vector<Stmt> out;
        Buffer src = op->src, dst = op->dst;
        auto staged = [&](const Buffer &b) {
            Buffer f = makeBuffer(b->name + "_frag", Scope::Fragment, b->dtype, b->shape, b->loc);
            newAllocs.push_back(f);
            return f;
        };
        auto copy = [&](const Buffer &from, const Buffer &to) {
            return mutate(Copy::make(Region::whole(from, op->loc), Region::whole(to, op->loc), op->loc));
        };
        if (srcShared) {
            src = staged(op->src);
            out.push_back(copy(op->src, src));
        }
        if (dstShared) {
            dst = staged(op->dst);
            if (!op->clear) out.push_back(copy(op->dst, dst));
        }
        out.push_back(Reduce::make(op->reduceKind, src, dst, op->dim, op->clear, op->loc));
        if (dstShared) out.push_back(copy(dst, op->dst));
        return Seq::make(std::move(out), op->loc);
    }

    /// T.gemm stays a tile statement until its layouts are known; clear_accum becomes a fill before it. A whole
    /// 2-D fragment as operand B (TileLang's gemm_sr / gemm_rr: KDA chunk_bwd_intra's `T.gemm(dAqk_shared,
    /// kg_fragment, dq2_fragment)`) is read through a shared copy of it, made just before the product.
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        const Buffer &b = op->b.buffer;
        const bool fragmentB = b && b->scope == Scope::Fragment && b->shape.size() == 2 && wholeRegion(op->b);
        if (!op->clearAccum && !fragmentB) return op;
        std::vector<Stmt> out;
        auto gemm = std::make_shared<Gemm>(*op);
        if (fragmentB) {
            Buffer s = makeBuffer(b->name + "_shared", Scope::Shared, b->dtype, b->shape, b->loc);
            newAllocs.push_back(s);
            out.push_back(mutate(Copy::make(Region::whole(b, op->loc), Region::whole(s, op->loc), op->loc)));
            gemm->b = Region::whole(s, op->b.loc);
        }
        if (op->clearAccum) out.push_back(mutate(Fill::make(Region::whole(op->c.buffer, op->loc), intImm(0), op->loc)));
        gemm->clearAccum = false;
        out.push_back(gemm);
        return Seq::make(std::move(out), op->loc);
    }

    /// Whether region `r` covers its whole buffer.
    static bool wholeRegion(const Region &r) {
        if (r.ranges.size() != r.buffer->shape.size()) return false;
        for (size_t d = 0; d < r.ranges.size(); ++d)
            if (constInt(r.ranges[d].min) != std::optional<int64_t>(0) || !structurallyEqual(r.ranges[d].extent, r.buffer->shape[d]))
                return false;
        return true;
    }

    std::set<const BufferNode *> operands; ///< shared buffers T.gemm reads
    std::set<const BufferNode *> gemmFragments; ///< fragments T.gemm reads or accumulates into
    /// shared buffers that a T.Pipelined loop fills with whole aligned tiles (alignedTile), at its top level
    std::set<const BufferNode *> pipelined;

    Stmt visit(const std::shared_ptr<const For> &op) override {
        // A T.Parallel nest that copies a global tile into a shared one is a tile transfer where that T.copy
        // would be (pipelineLoops makes it asynchronous and pipelines it); elsewhere it stays the user's nest.
        if (Stmt copy = copyOfNest(op); copy && tileTransfer(*as<Copy>(copy))) return copy;
        bool staged = false; // a T.Pipelined loop moving whole tiles into shared memory has something to overlap
        if (op->forKind == ForKind::Pipelined) {
            std::set<const BufferNode *> before; // issued ahead, a copy must be the first to touch its tile
            for (auto &s : Seq::items(op->body)) {
                Stmt copy = as<Copy>(s) ? s : copyOfNest(s); // a nest that copies a tile is that T.copy
                if (auto c = as<Copy>(copy); c && alignedTile(*c) && !before.count(c->dst.buffer.get())) {
                    pipelined.insert(c->dst.buffer.get());
                    staged |= tileTransfer(*c);
                }
                for (auto *b : mentionedBuffers(s, nullptr)) before.insert(b);
            }
        }
        Stmt body = mutate(op->body);
        ForKind kind = op->forKind;
        int stages = kind == ForKind::Pipelined ? op->numStages : 0;
        if (kind == ForKind::Vectorized) kind = ForKind::Unrolled, stages = kProgramVectorized;
        if (kind == ForKind::Pipelined && !hasGemm(op->body) && !staged) kind = ForKind::Serial, stages = 0;
        if (body == op->body && kind == op->forKind) return op;
        if (!body) body = Seq::make({});
        return For::make(op->var, op->min, op->extent, kind, stages, body, op->loc);
    }

    std::vector<Buffer> newAllocs; ///< fragments made for reductions of shared buffers

  private:
    const Kernel &kernel_;
    DiagnosticEngine &diag_;
    int counter_ = 0;
    const Region *primary_ = nullptr; ///< the whole-fragment region of the tile statement being lowered

    struct Loop {
        Var var;
        int64_t extent;
        int64_t offset = 0; ///< a partial primary region (below): its origin on this dimension
        bool point = false; ///< a partial primary region of extent 1 on this dimension (no loop of the others)
    };
    Expr guard_; ///< a partial primary region: the iterations inside it

    static std::vector<int64_t> nonUnitExtents(const Region &r, bool &constant) {
        std::vector<int64_t> out;
        for (auto &range : r.ranges) {
            auto c = constValue(range.extent);
            if (!c) {
                constant = false;
                continue;
            }
            if (*c != 1) out.push_back(*c);
        }
        return out;
    }

    static std::string shapeText(const std::vector<int64_t> &v) {
        std::string s = "(";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
        return s + (v.size() == 1 ? ",)" : ")");
    }

    /// A region covering a whole fragment: its loop keeps the fragment's unit dimensions, so the fragment
    /// is indexed by exactly the loop's variables (what layout inference links on).
    static bool wholeFragment(const Region &r) {
        if (!r.buffer || r.buffer->scope != Scope::Fragment || r.ranges.size() != r.buffer->shape.size()) return false;
        for (size_t d = 0; d < r.ranges.size(); ++d) {
            if (constValue(r.ranges[d].min) != std::optional<int64_t>(0)) return false;
            if (!provablyEqual(r.ranges[d].extent, r.buffer->shape[d])) return false;
        }
        return true;
    }

    /// A fragment region (the destination preferred) of constant origin and extents (above 1 where the
    /// fragment's is, unless T.gemm fixes its layout or the copy is between two fragments) inside the
    /// fragment, not all of it (that is wholeFragment), or null.
    const Region *partialFragment(const std::vector<const Region *> &regions) const {
        const bool fragments = regions.size() > 1 && std::all_of(regions.begin(), regions.end(), [](const Region *r) {
            return r->buffer && r->buffer->scope == Scope::Fragment;
        });
        for (size_t i = regions.size(); i-- > 0;) {
            const Region &r = *regions[i];
            if (!r.buffer || r.buffer->scope != Scope::Fragment || r.ranges.size() != r.buffer->shape.size()) continue;
            // A single index (`f[k, :]`) keeps its own loop shape: inferLayouts links it as a slice. A T.gemm
            // operand's tensor-core layout links only nests over its whole shape, so there `acc_o[:1, :]`
            // (TileLang's decode with one head per group) runs over the whole fragment under a guard, as
            // `acc_o[:2, :]` does. So does a copy from one fragment into another (`T.copy(acc[4:30, 9:10],
            // f0[0:26, 3:4])`): the source is read at indices that are not the nest's own (a slice of neither
            // links, and one of fewer elements than a round of the block could not), which inferLayouts gives it
            // by holding copies of its elements where the destination's nest reads them.
            const bool whole = gemmFragments.count(r.buffer.get()) > 0 || fragments;
            bool fits = true;
            for (size_t d = 0; fits && d < r.ranges.size(); ++d) {
                auto m = constValue(r.ranges[d].min), e = constValue(r.ranges[d].extent), n = constValue(r.buffer->shape[d]);
                fits = m && e && n && *m >= 0 && (*e > 1 || *n == 1 || whole) && *m + *e <= *n;
            }
            if (fits) return &r;
        }
        return nullptr;
    }

    /// The loops over the extents every region shares once unit extents are dropped; over a whole
    /// fragment's full shape when one region is one (the destination preferred).
    std::optional<std::vector<Loop>> loopsFor(std::vector<const Region *> regions, const SourceRange &loc,
                                              const char *what) {
        std::vector<int64_t> extents;
        for (size_t i = 0; i < regions.size(); ++i) {
            bool constant = true;
            auto e = nonUnitExtents(*regions[i], constant);
            if (!constant) {
                diag_.error(regions[i]->loc.valid() ? regions[i]->loc : loc,
                            std::string(what) + " region extents must be compile-time constants");
                return std::nullopt;
            }
            if (i == 0) {
                extents = e;
            } else if (e != extents) {
                diag_.error(loc, std::string(what) + " between regions of shapes " + shapeText(extents) + " and " +
                                     shapeText(e) + " is not supported; the non-unit extents must agree in order");
                return std::nullopt;
            }
        }
        primary_ = nullptr;
        guard_ = nullptr;
        for (size_t i = regions.size(); i-- > 0 && !primary_;)
            if (wholeFragment(*regions[i])) primary_ = regions[i];
        std::vector<Loop> loops;
        if (primary_) {
            for (auto &x : primary_->buffer->shape)
                loops.push_back({makeVar("i" + std::to_string(counter_++), DType::Int32, loc), *constValue(x)});
        } else if (const Region *part = partialFragment(regions)) {
            // A constant part of a fragment (`acc_o[:4, :]`): the nest runs over the whole fragment, so its layout
            // is the fragment's, and only the iterations inside the part do the work.
            primary_ = part;
            for (size_t d = 0; d < part->ranges.size(); ++d) {
                int64_t m = *constValue(part->ranges[d].min), e = *constValue(part->ranges[d].extent);
                Loop l{makeVar("i" + std::to_string(counter_++), DType::Int32, loc), *constValue(part->buffer->shape[d]), m, e == 1};
                if (m != 0 || e != l.extent) {
                    Expr in = e == 1 ? binary(BinaryOp::EQ, l.var, intImm(m))
                                     : binary(BinaryOp::And, binary(BinaryOp::GE, l.var, intImm(m)),
                                              binary(BinaryOp::LT, l.var, intImm(m + e)));
                    guard_ = guard_ ? binary(BinaryOp::And, guard_, in) : in;
                }
                loops.push_back(l);
            }
        } else {
            for (int64_t e : extents) loops.push_back({makeVar("i" + std::to_string(counter_++), DType::Int32, loc), e});
        }
        return loops;
    }

    /// Per dimension of the region: its origin, plus the next loop variable for a non-unit extent (every
    /// loop variable in order for the primary region).
    std::vector<Expr> indicesOf(const Region &r, const std::vector<Loop> &loops) const {
        std::vector<Expr> idx;
        if (&r == primary_) {
            for (auto &l : loops) idx.push_back(l.var);
            return idx;
        }
        size_t k = 0;
        auto nextNonUnit = [&]() -> const Loop & {
            while (k < loops.size() && (loops[k].extent == 1 || loops[k].point) && primary_) ++k;
            TILEC_ASSERT(k < loops.size(), "region has more non-unit extents than loops");
            return loops[k++];
        };
        for (auto &range : r.ranges) {
            auto c = constValue(range.extent);
            if (c && *c == 1) {
                idx.push_back(range.min);
                continue;
            }
            const Loop &l = nextNonUnit();
            Expr v = l.offset ? binary(BinaryOp::Sub, l.var, intImm(l.offset)) : Expr(l.var);
            auto m = constValue(range.min);
            idx.push_back(m && *m == 0 ? simplify(v) : simplify(binary(BinaryOp::Add, range.min, v)));
        }
        return idx;
    }

    /// A global-to-shared copy of a 2-D tile into a whole shared T.gemm operand, rows along one dimension of
    /// the tensor and columns along its last (contiguous) one, of the same dtype (cp.async copies bytes; a
    /// converting copy, bfloat16 into float32, is a nest): a tile transfer rather than a nest. A whole 1-D tile
    /// that a T.Pipelined loop fills from a tensor's last dimension (attention's lse and delta rows, a row of
    /// scales) is one such row: pipelineLoops issues it into the ring with the 2-D tiles.
    bool tileTransfer(const Copy &c) const {
        const Buffer &src = c.src.buffer, &dst = c.dst.buffer;
        if (!src || !dst || src->scope != Scope::Global || dst->scope != Scope::Shared ||
            !(operands.count(dst.get()) || pipelined.count(dst.get())))
            return false;
        if (src->dtype != dst->dtype || kernel_.layoutOf(src.get())) return false; // a T.Layout: element by element
        const size_t nd = dst->shape.size();
        if ((nd != 2 && !(nd == 1 && pipelined.count(dst.get()))) || c.dst.ranges.size() != nd) return false;
        for (size_t d = 0; d < nd; ++d)
            if (constValue(c.dst.ranges[d].min) != std::optional<int64_t>(0) ||
                !provablyEqual(c.dst.ranges[d].extent, dst->shape[d]))
                return false;
        std::vector<size_t> dims;
        for (size_t d = 0; d < c.src.ranges.size(); ++d) {
            auto e = constValue(c.src.ranges[d].extent);
            if (!e) return false;
            if (*e != 1) dims.push_back(d);
        }
        if (nd == 1)
            return dims.size() == 1 && dims[0] + 1 == c.src.ranges.size() && provablyEqual(c.src.ranges[dims[0]].extent, dst->shape[0]);
        return dims.size() == 2 && dims[1] + 1 == c.src.ranges.size() &&
               provablyEqual(c.src.ranges[dims[0]].extent, dst->shape[0]) &&
               provablyEqual(c.src.ranges[dims[1]].extent, dst->shape[1]);
    }

    /// A global-to-shared copy whose rows (a 1-D tile: its one row) are whole 16-byte pieces from a tensor of
    /// constant row length and a column origin that keeps them aligned: one cp.async of 16 bytes per piece,
    /// whatever reads the tile.
    bool alignedTile(const Copy &c) const {
        const Buffer &src = c.src.buffer, &dst = c.dst.buffer;
        if (!src || !dst || src->scope != Scope::Global || dst->scope != Scope::Shared || src->dtype != dst->dtype)
            return false;
        const int64_t eb = src->dtype.bytes();
        auto inner = constValue(src->shape.back());
        auto cols = dst->shape.size() == 2 || dst->shape.size() == 1 ? constValue(dst->shape.back()) : std::nullopt;
        if (!inner || !cols || eb <= 0 || 16 % eb || (*inner * eb) % 16 || (*cols * eb) % 16) return false;
        return knownMultiple(c.src.ranges.back().min) % (16 / eb) == 0;
    }

    /// A copy or fill involving a thread's own buffer (alloc_local, alloc_var) is done by each thread for
    /// itself rather than shared out among the threads.
    static bool perThread(std::vector<const Region *> regions) {
        for (auto *r : regions)
            if (r->buffer && (r->buffer->scope == Scope::Local || r->buffer->scope == Scope::Var)) return true;
        return false;
    }

    /// A thread's own copy between its registers and memory moves independent elements, like a program's
    /// T.vectorized loop: its innermost loop is marked so (ProgramVectorized.h), and vectorizeAccesses makes
    /// its accesses vector ones where it proves them aligned (TileLang's sparse compressor: 32 float16 of a row
    /// into registers, as 2-byte loads before).
    static Stmt asProgramVectorized(const Stmt &s) {
        auto f = as<For>(s);
        if (!f) return s;
        if (as<For>(f->body)) {
            Stmt inner = asProgramVectorized(f->body);
            return For::make(f->var, f->min, f->extent, f->forKind, f->numStages, inner, f->loc);
        }
        return For::make(f->var, f->min, f->extent, f->forKind, kProgramVectorized, f->body, f->loc);
    }

    /// The loops around `body`. A tile statement of one element is still a T.Parallel nest (of one iteration),
    /// so that one thread, not every thread, stores it (or adds it, for atomics); with a per-thread operand
    /// every thread runs its own copy.
    Stmt nest(std::vector<Loop> loops, Stmt body, const SourceRange &loc, bool perThread = false) {
        ForKind k = perThread ? ForKind::Unrolled : ForKind::Parallel;
        if (guard_) body = IfThenElse::make(guard_, body, nullptr, loc);
        guard_ = nullptr;
        if (loops.empty() && !perThread) loops.push_back({makeVar("i" + std::to_string(counter_++), DType::Int32, loc), 1});
        for (size_t i = loops.size(); i-- > 0;) body = For::make(loops[i].var, intImm(0), intImm(loops[i].extent), k, 0, body, loc);
        return body;
    }
};

} // namespace

Program lowerTileOps(const Program &p, DiagnosticEngine &diag) {
    Program out;
    for (auto &k : p.kernels) {
        TileOpsToLoops m(*k, diag);
        struct Operands : IRVisitor {
            using IRVisitor::visit;
            std::set<const BufferNode *> *out, *fragments;
            void visit(const Gemm &op) override {
                for (auto *r : {&op.a, &op.b, &op.e}) // (e: T.gemm_sp's metadata; no buffer when dense)
                    if (r->buffer && r->buffer->scope == Scope::Shared) out->insert(r->buffer.get());
                for (auto *r : {&op.a, &op.c})
                    if (r->buffer && r->buffer->scope == Scope::Fragment) fragments->insert(r->buffer.get());
            }
        } ops;
        ops.out = &m.operands;
        ops.fragments = &m.gemmFragments;
        ops.visit(k->body);
        KernelP nk = m.mutate(k);
        if (!m.newAllocs.empty()) {
            auto copy = std::make_shared<Kernel>(*nk);
            for (auto &b : m.newAllocs) copy->allocs.push_back(b);
            nk = copy;
        }
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
