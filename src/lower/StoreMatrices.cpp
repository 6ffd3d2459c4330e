/// \file
/// Tensor-core fragments copied into 16-bit shared tiles with stmatrix (include/tilec/passes/StoreMatrices.h).
#include "tilec/passes/StoreMatrices.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/ParallelNest.h"

#include <optional>
#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }
Expr op(BinaryOp o, Expr a, Expr b) { return binary(o, std::move(a), std::move(b)); }

constexpr int64_t kChunkElems = lib::kMatrixRowBytes / 2; ///< the 16-bit elements of one matrix row

/// A nest `dst[indices] = value` over (i, j) whose value is a function of F[i, j] alone (a conversion, a scale by
/// a value the whole nest shares), in the form stmatrix stores.
struct MatrixCopy {
    Buffer frag, dst;
    Var i, j;
    std::vector<Expr> indices; ///< the store's, in i and j
    Expr value;                ///< the stored value, F[i, j] in it
    bool trans = false;        ///< the rows i, not the columns j, run along dst's innermost dimension
};

/// `value` with its loads of the fragment element F[i, j] replaced by `element`.
struct ReplaceElement : IRMutator {
    using IRMutator::visit;
    const BufferNode *frag;
    Expr element;
    ReplaceElement(const BufferNode *f, Expr e) : frag(f), element(std::move(e)) {}
    Expr visit(const std::shared_ptr<const Load> &op) override { return op->buffer.get() == frag ? element : IRMutator::visit(op); }
};

/// The fragment whose element (i, j) `value` reads, where that is the only fragment element it reads and it
/// otherwise depends on neither i nor j; null elsewhere.
Buffer elementSource(const Expr &value, const Var &i, const Var &j) {
    struct Find : IRVisitor {
        using IRVisitor::visit;
        const VarNode *i, *j;
        Buffer frag;
        bool ok = true;
        void visit(const Load &op) override {
            if (op.buffer && op.buffer->scope == Scope::Fragment) {
                ok = ok && (!frag || frag == op.buffer) && op.indices.size() == 2 && as<VarNode>(op.indices[0]) == i &&
                     as<VarNode>(op.indices[1]) == j;
                frag = op.buffer;
                return;
            }
            IRVisitor::visit(op);
        }
    } f;
    f.i = i.get(), f.j = j.get();
    f.visit(value);
    if (!f.ok || !f.frag) return nullptr;
    Expr rest = ReplaceElement(f.frag.get(), makeVar("element", f.frag->dtype)).mutate(value);
    return uses(rest, i.get()) || uses(rest, j.get()) ? nullptr : f.frag;
}

/// The nest at `outer`, of layout `l`, as a copy stmatrix stores; nullopt with `why` empty where it is no copy of
/// a fragment into a 16-bit shared tile at all, with `why` set where it is one that stmatrix cannot store.
std::optional<MatrixCopy> match(const For &outer, const Layout &l, const KernelLayouts &layouts, std::string &why) {
    if (l.kind != Layout::Mma || l.shape.size() != 2) return std::nullopt;
    const std::vector<const For *> loops = parallelNest(outer, 2);
    if (loops.size() != 2) return std::nullopt;
    Stmt body = loops[1]->body;
    if (auto q = as<Seq>(body); q && q->stmts.size() == 1) body = q->stmts[0];
    auto st = as<Store>(body);
    if (!st || !st->buffer || st->buffer->scope != Scope::Shared || st->buffer->dtype.bytes() != 2) return std::nullopt;
    MatrixCopy m{elementSource(st->value, loops[0]->var, loops[1]->var), st->buffer, loops[0]->var, loops[1]->var, st->indices, st->value};
    if (!m.frag) return std::nullopt; // an element-wise nest, not a copy of one fragment
    auto lay = layouts.fragments.find(m.frag.get());
    if (lay == layouts.fragments.end() || !(lay->second == l)) {
        why = "fragment '" + m.frag->name + "' is not laid out as the nest is";
        return std::nullopt;
    }
    if (l.opCols) {
        why = "the fragment is in the tf32 operand's column order";
        return std::nullopt;
    }
    // One of i, j runs along the innermost dimension with step 1 from a multiple of 8, the other one elsewhere.
    const size_t nd = m.indices.size();
    const Expr &inner = m.indices.back();
    auto shapeLast = nd ? constValue(m.dst->shape.back()) : std::nullopt;
    VarMap zero{{m.i.get(), i32(0)}, {m.j.get(), i32(0)}};
    const Expr origin = simplify(substitute(inner, zero));
    m.trans = !uses(inner, m.j.get());
    const Var &along = m.trans ? m.i : m.j, &across = m.trans ? m.j : m.i;
    bool ok = nd >= 2 && shapeLast && *shapeLast % kChunkElems == 0 && provablyEqual(simplify(op(BinaryOp::Sub, inner, origin)), along) &&
              knownMultiple(origin) % kChunkElems == 0;
    for (size_t d = 0; ok && d + 1 < nd; ++d) ok = !uses(m.indices[d], along.get());
    bool rows = false; // the other variable places the matrices' rows
    for (size_t d = 0; d + 1 < nd; ++d) rows = rows || uses(m.indices[d], across.get());
    if (!ok || !rows) {
        why = "neither the fragment's rows nor its columns run along 16-byte aligned pieces of '" + m.dst->name + "''s rows";
        return std::nullopt;
    }
    return m;
}

/// The per-warp stmatrix of copy `m` (layout `l`): for each 16-row tile mi of a warp and each group q of column
/// tiles (two 8-column tiles, x4: matrices (ni, h) in the order (2q, 0), (2q, 1), (2q + 1, 0), (2q + 1, 1), as
/// the accumulator's slots run; one tile, x2, where a warp has an odd number of them), the thread's registers
/// converted into `tmp` and one stmatrix. Lane l gives row l % 8 of matrix l / 8: the fragment's element
/// (row + l % 8, col) of that matrix's first row and column (row, col), or with .trans (row, col + l % 8).
Stmt lowerCopy(const MatrixCopy &m, const Layout &l, const Var &tid, const Buffer &regs, const Buffer &tmp, const SourceRange &loc) {
    const int64_t nT = l.tilesN(), perGroup = nT % 2 == 0 ? 2 : 1, count = 2 * perGroup;
    Var mi = makeVar("mi", DType::Int32, loc), q = makeVar("q", DType::Int32, loc);
    const Expr lane = op(BinaryOp::FloorMod, tid, i32(32));
    const Expr warpFirst = op(BinaryOp::Mul, op(BinaryOp::FloorDiv, tid, i32(32)), i32(32)); // lane 0 of the warp
    const Expr matrix = op(BinaryOp::FloorDiv, lane, i32(8)), rowInMatrix = op(BinaryOp::FloorMod, tid, i32(8));
    const Expr h = op(BinaryOp::FloorMod, matrix, i32(2));
    Expr ni = op(BinaryOp::Mul, q, i32(perGroup));
    if (perGroup == 2) ni = op(BinaryOp::Add, ni, op(BinaryOp::FloorDiv, matrix, i32(2)));
    Expr row = mmaRow(l, warpFirst, mi, h), col = mmaCol(l, warpFirst, ni, i32(0));
    if (m.trans) col = op(BinaryOp::Add, col, rowInMatrix);
    else row = op(BinaryOp::Add, row, rowInMatrix);
    VarMap at{{m.i.get(), simplify(row)}, {m.j.get(), simplify(col)}};
    std::vector<Expr> idx;
    for (auto &e : m.indices) idx.push_back(simplify(substitute(e, at)));
    std::vector<Stmt> body;
    for (int64_t r = 0; r < count; ++r)
        for (int64_t c = 0; c < 2; ++c) {
            // slot ((mi * nT + ni) * 2 + h) * 2 + c of matrix r's (ni, h) = (q * perGroup + r / 2, r % 2)
            Expr tile = op(BinaryOp::Add, op(BinaryOp::Mul, mi, i32(nT)), op(BinaryOp::Add, op(BinaryOp::Mul, q, i32(perGroup)), i32(r / 2)));
            Expr slot = simplify(op(BinaryOp::Add, op(BinaryOp::Mul, op(BinaryOp::Add, op(BinaryOp::Mul, tile, i32(2)), i32(r % 2)), i32(2)), i32(c)));
            body.push_back(Store::make(tmp, {i32(2 * r + c)}, ReplaceElement(m.frag.get(), Load::make(regs, {slot}, loc)).mutate(m.value), loc));
        }
    body.push_back(lib::stmt(lib::Fn::Stmatrix, {i32(count), i32(m.trans ? 1 : 0), addressOf(m.dst, idx), addressOf(tmp, {i32(0)})}, loc));
    Stmt s = For::make(q, i32(0), i32(nT / perGroup), ForKind::Unrolled, 0, Seq::make(std::move(body), loc), loc);
    s = For::make(mi, i32(0), i32(l.tilesM()), ForKind::Unrolled, 0, s, loc);
    if (l.warpCopies() > 1) // warps past the first warpsM x warpsN hold copies: the first ones store
        s = IfThenElse::make(op(BinaryOp::LT, tid, i32(32 * l.warpsM * l.warpsN)), s, nullptr, loc);
    return s;
}

class Rewrite : public IRMutator {
  public:
    using IRMutator::visit;
    Rewrite(const Kernel &k, const SourceManager *sources) : k_(k), layouts_(layoutsOf(k)), sources_(sources) {}
    std::vector<Buffer> temps;

    Stmt visit(const std::shared_ptr<const For> &f) override {
        auto it = f->forKind == ForKind::Parallel ? layouts_.loops.find(f->var.get()) : layouts_.loops.end();
        if (it == layouts_.loops.end()) return IRMutator::visit(f);
        std::string why;
        auto m = match(*f, it->second, layouts_, why);
        if (!m) {
            if (!why.empty())
                remark(sources_, f->loc, "kernel '" + k_.name + "': a copy of a fragment into a 16-bit shared tile keeps per-thread stores: " + why);
            return f;
        }
        auto regs = layouts_.registers.find(m->frag.get());
        TILEC_ASSERT(regs != layouts_.registers.end(), "fragment '" + m->frag->name + "' without registers");
        Buffer tmp = makeBuffer("stsm" + std::to_string(temps.size()), Scope::Local, m->dst->dtype, {i32(8)}, f->loc);
        temps.push_back(tmp);
        remark(sources_, f->loc, "kernel '" + k_.name + "': T.copy of '" + m->frag->name + "' to '" + m->dst->name + "' -> stmatrix" +
                                     (m->trans ? ".trans" : "") + " (" + (it->second.tilesN() % 2 ? "x2" : "x4") + ")");
        return lowerCopy(*m, it->second, k_.threadIdx, regs->second, tmp, f->loc);
    }

  private:
    const Kernel &k_;
    const KernelLayouts &layouts_;
    const SourceManager *sources_;
};

} // namespace

Program storeMatrices(const Program &p, const Variant &v, const SourceManager *sources) {
    if (!v.target.hasStmatrix() || !v.options.stmatrixCopies) return p;
    Program out;
    for (const KernelP &in : p.kernels) {
        KernelP k = withThreadIndex(in);
        Rewrite r(*k, sources);
        Stmt body = r.mutate(k->body);
        if (r.temps.empty()) {
            out.kernels.push_back(in);
            continue;
        }
        auto nk = std::make_shared<Kernel>(*k);
        nk->body = body;
        nk->allocs.insert(nk->allocs.end(), r.temps.begin(), r.temps.end());
        out.kernels.push_back(nk);
    }
    return out;
}

} // namespace tilec::passes
