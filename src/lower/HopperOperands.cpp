/// \file
/// Which tiles TMA can load and which T.gemms the Hopper instructions can compute from them: the operand rules
/// that specializeWarps and lowerWarpRoles share, and the one interning of tensor maps (they and stageEpilogue
/// add maps), and a loop's 1-D rows as copies again (rowCopies) (include/tilec/passes/HopperOperands.h).
#include "tilec/passes/HopperOperands.h"

#include "tilec/IRMutator.h"
#include "tilec/IRUses.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/Staging.h"

#include <algorithm>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// The TMA load of a copy into a whole 1-D shared buffer: one run of `cols` elements along the source's
/// innermost dimension (every other extent 1), stored densely (no swizzle: elementwise readers index it as it
/// is), in boxes of at most 256 elements. Each ring stage must start at TMA's 128-byte alignment (the ring's
/// base is 1024-aligned), so the run is a multiple of 128 bytes.
std::optional<TmaTile> planTmaRow(const Copy &c) {
    const Buffer &src = c.src.buffer, &dst = c.dst.buffer;
    const int eb = src->dtype.bytes();
    auto C = constInt(dst->shape[0]);
    if (!C || c.dst.ranges.size() != 1 || constInt(c.dst.ranges[0].min) != std::optional<int64_t>(0) ||
        constInt(c.dst.ranges[0].extent) != C)
        return {};
    const size_t nd = c.src.ranges.size();
    if (nd < 1 || nd > 5 || src->shape.size() != nd || constInt(c.src.ranges[nd - 1].extent) != C) return {};
    for (size_t d = 0; d + 1 < nd; ++d)
        if (constInt(c.src.ranges[d].extent) != std::optional<int64_t>(1)) return {};
    if (*C * eb % 128 || (*C > 256 && *C % 256)) return {};
    TmaTile t;
    t.copy = &c;
    t.rank = (int)nd;
    t.rowDim = 0;
    t.rows = 1;
    t.cols = *C;
    t.elemBytes = eb;
    t.swizzle = 0;
    t.map.tensor = src;
    t.map.swizzleBytes = 0;
    t.map.box.assign(nd, 1);
    t.map.box[0] = std::min<int64_t>(*C, 256);
    for (size_t j = 0; j < nd; ++j) t.coords.push_back(simplify(cast(DType::Int32, c.src.ranges[nd - 1 - j].min)));
    return t;
}

/// The dimension of `c`'s global source that holds the rows of its whole 2-D shared destination (R x C, both
/// constant): the columns run along the source's innermost dimension, the rows along exactly one other, every
/// other extent 1 (a one-row tile takes the dimension next to the innermost). None where `c` is not such a box.
std::optional<int> boxRowDim(const Copy &c) {
    const Buffer &src = c.src.buffer, &dst = c.dst.buffer;
    if (!src || !dst || src->scope != Scope::Global || dst->scope != Scope::Shared || src->dtype != dst->dtype ||
        dst->shape.size() != 2 || c.dst.ranges.size() != 2)
        return {};
    auto R = constInt(dst->shape[0]), C = constInt(dst->shape[1]);
    if (!R || !C || *R < 1 || *C < 1) return {};
    for (size_t d = 0; d < 2; ++d)
        if (constInt(c.dst.ranges[d].min) != std::optional<int64_t>(0) || constInt(c.dst.ranges[d].extent) != constInt(dst->shape[d]))
            return {};
    const size_t nd = c.src.ranges.size();
    if (nd < 2 || src->shape.size() != nd || constInt(c.src.ranges[nd - 1].extent) != C) return {};
    int rowDim = -1;
    for (size_t d = 0; d + 1 < nd; ++d) {
        auto e = constInt(c.src.ranges[d].extent);
        if (!e) return {};
        if (*e == 1 && !(*R == 1 && d + 2 == nd)) continue;
        if (*e != *R || rowDim >= 0) return {};
        rowDim = (int)d;
    }
    if (rowDim < 0) return {};
    return rowDim;
}

} // namespace

std::optional<TmaTile> planTmaTile(const Copy &c, const Kernel &k, int span) {
    const Buffer &src = c.src.buffer, &dst = c.dst.buffer;
    if (!src || !dst || src->scope != Scope::Global || dst->scope != Scope::Shared || src->dtype != dst->dtype) return {};
    if (k.layoutOf(src.get())) return {}; // a T.Layout places its elements where no box of the tensor is
    if (k.addressOf(src.get())) return {}; // T.make_tensor: an address the host never sees, so no tensor map
    const int eb = src->dtype.bytes();
    if (eb != 1 && eb != 2 && eb != 4) return {};
    if (dst->shape.size() == 1) return planTmaRow(c);
    const size_t nd = c.src.ranges.size();
    auto rowDim = boxRowDim(c);
    if (!rowDim || nd > 5) return {}; // a tensor map has at most 5 dimensions
    auto R = constInt(dst->shape[0]), C = constInt(dst->shape[1]);
    const int64_t rowBytes = *C * eb;
    int sw = span ? span : panelSwizzleBytes(rowBytes);
    if (!sw || rowBytes % sw) return {};
    TmaTile t;
    t.copy = &c;
    t.rank = (int)nd;
    t.rowDim = (int)(nd - 1) - *rowDim;
    t.rows = *R;
    t.cols = *C;
    t.elemBytes = eb;
    t.swizzle = sw;
    t.map.tensor = src;
    t.map.swizzleBytes = sw;
    t.map.box.assign(nd, 1);
    t.map.box[0] = sw / eb;
    t.map.box[(size_t)t.rowDim] = std::min<int64_t>(*R, 256);
    for (size_t j = 0; j < nd; ++j) t.coords.push_back(simplify(cast(DType::Int32, c.src.ranges[nd - 1 - j].min)));
    return t;
}

std::optional<TmaTile> planTmaMetadata(const Copy &c, const Kernel &k) {
    const Buffer &dst = c.dst.buffer;
    if (!dst || dst->shape.size() != 2) return {};
    auto C = constInt(dst->shape[1]);
    const int64_t rowBytes = C ? *C * dst->dtype.bytes() : 0;
    // swz<K/16, 2> swizzles rows of 32, 64 and 128 bytes over the row, as TMA's swizzle of that span does
    if (rowBytes == 32 || rowBytes == 64 || rowBytes == 128) return planTmaTile(c, k, (int)rowBytes);
    if (rowBytes != 16) return {};
    // rows of 16 bytes: swz leaves them dense, as an unswizzled box of the whole row stores them
    auto t = planTmaTile(c, k, 16);
    if (!t) return {};
    t->swizzle = 0, t->map.swizzleBytes = 0;
    t->map.box[0] = t->cols;
    return t;
}

/// The metadata tiles E of the T.gemm_sp among `stmts`.
std::set<const BufferNode *> sparseMetadataTiles(const std::vector<Stmt> &stmts) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        std::set<const BufferNode *> found;
        void visit(const Gemm &g) override {
            if (g.sparse() && g.e.buffer) found.insert(g.e.buffer.get());
        }
    } v;
    for (auto &s : stmts) v.visit(s);
    return v.found;
}

/// Whether the producer's threads can copy `c` (a metadata tile of rows below 16 bytes): the box planTmaTile
/// would take (boxRowDim), only narrower than TMA's 16-byte rows.
bool metadataThreadCopyable(const Copy &c) {
    if (!boxRowDim(c)) return false;
    const Buffer &dst = c.dst.buffer;
    return *constInt(dst->shape[1]) * dst->dtype.bytes() < 16;
}

std::optional<PanelPart> panelPart(const Region &r, int span, std::string *why) {
    auto no = [&](std::string m) -> std::optional<PanelPart> {
        if (why) *why = std::move(m);
        return std::nullopt;
    };
    const Buffer &b = r.buffer;
    const size_t nd = b ? b->shape.size() : 0;
    if (nd < 2 || r.ranges.size() != nd) return no("is not part of a 2-D tile (or of one stage of a ring of them)");
    const std::string name = "'" + b->name + "'";
    auto R = constValue(b->shape[nd - 2]), C = constValue(b->shape[nd - 1]);
    if (!R || !C) return no("is part of " + name + ", whose shape is not constant");
    PanelPart p;
    for (size_t d = 0; d + 2 < nd; ++d) {
        if (constValue(r.ranges[d].extent) != std::optional<int64_t>(1))
            return no("takes more than one element of dimension " + std::to_string(d) + " of " + name + " (one stage [s, :, :] at most)");
        p.at.push_back(r.ranges[d].min);
    }
    const Range &rows = r.ranges[nd - 2], &cols = r.ranges[nd - 1];
    auto n = constValue(cols.extent);
    const bool allRows = constValue(rows.min) == std::optional<int64_t>(0) && constValue(rows.extent) == R;
    const bool allCols = constValue(cols.min) == std::optional<int64_t>(0) && n == C;
    if (!span && !(allRows && allCols))
        return no("is part of " + name + ", which is not stored in swizzle panels here (only the whole tile is read)");
    if (!allRows)
        return no("takes only some of the " + std::to_string(*R) + " rows of " + name +
                  " (a part of a tile in the panel layout holds all its rows)");
    p.rows = *R;
    if (allCols) {
        p.cols = *C;
        p.at.push_back(rows.min), p.at.push_back(cols.min);
        return p;
    }
    const int64_t W = span / b->dtype.bytes(); // a panel's columns
    if (W <= 0 || !n || *n % W)
        return no("takes " + (n ? std::to_string(*n) : std::string("a run not known at compile time of")) + " of the " +
                  std::to_string(*C) + " columns of " + name + ": a part of it must be whole panels of " + std::to_string(W) +
                  " columns (" + std::to_string(span) + " bytes, its swizzle span)");
    if (knownMultiple(cols.min) % W)
        return no("starts at a column of " + name + " not known to be a multiple of " + std::to_string(W) + " (the " +
                  std::to_string(span) + "-byte panels its rows are stored in)");
    p.cols = *n;
    p.at.push_back(intImm(0, rows.min->dtype));
    p.at.push_back(simplify(binary(BinaryOp::Mul, cols.min, intImm(*R, cols.min->dtype))));
    return p;
}

std::optional<TmaTile> operandPart(const Region &r, const TmaTile &whole) {
    auto p = panelPart(r, whole.swizzle);
    if (!p || p->rows != whole.rows) return std::nullopt;
    TmaTile t = whole;
    t.cols = p->cols;
    return t;
}

std::string tmaNeverHolds(const Buffer &tensor) {
    // cp.async.bulk.tensor takes 32-bit signed coordinates (PTX ISA): a box starting past 2^31 - 1 along a
    // dimension cannot be named, and the coordinate would wrap to another row.
    for (size_t d = 0; d < tensor->shape.size(); ++d)
        if (auto e = constInt(tensor->shape[d]); e && *e > INT32_MAX)
            return "'" + tensor->name + "' has " + std::to_string(*e) + " elements along dimension " + std::to_string(d) +
                   ", past 2^31 - 1: TMA's 32-bit coordinates cannot reach them";
    // Compact row-major: dimension d's stride is the element size times the extents inside it, constant as long
    // as they are.
    int64_t stride = tensor->dtype.bytes();
    for (size_t d = tensor->shape.size(); d-- > 1;) {
        auto e = constInt(tensor->shape[d]);
        if (!e || *e <= 0) break;
        stride *= *e;
        if (stride % TensorMap::kAlignment)
            return "'" + tensor->name + "' has a stride of " + std::to_string(stride) + " bytes (dimension " + std::to_string(d - 1) +
                   "), not a multiple of " + std::to_string(TensorMap::kAlignment) + ": TMA's rules can never hold for it";
    }
    return "";
}

namespace {

/// The K of one wgmma for the operand types, 0 when wgmma does not take them; `kMajorOnly` when the shared
/// operands must be K-major (every type but the 16-bit ones).
int wgmmaK(DType a, DType b, DType c, bool &kMajorOnly) {
    kMajorOnly = true;
    if (a.isFloat8() && b.isFloat8()) return c.kind == DType::Float32 ? 32 : 0;
    if (a.kind != b.kind) return 0;
    switch (a.kind) {
    case DType::Float16: kMajorOnly = false; return c.kind == DType::Float32 || c.kind == DType::Float16 ? 16 : 0;
    case DType::BFloat16: kMajorOnly = false; return c.kind == DType::Float32 ? 16 : 0;
    case DType::Float32: return c.kind == DType::Float32 ? 8 : 0;
    case DType::Int8:
    case DType::UInt8: return c.kind == DType::Int32 ? 32 : 0;
    default: return 0;
    }
}

} // namespace

int internTensorMap(Kernel &k, const TensorMap &m) {
    auto it = std::find(k.tensorMaps.begin(), k.tensorMaps.end(), m);
    if (it == k.tensorMaps.end()) it = k.tensorMaps.insert(k.tensorMaps.end(), m);
    return (int)(it - k.tensorMaps.begin());
}

void recordPanelOperands(Kernel &k, const std::map<const BufferNode *, int> &spans) {
    struct Operands : IRVisitor {
        using IRVisitor::visit;
        std::vector<Buffer> found;
        void visit(const Gemm &g) override {
            if (g.instr == GemmInstr::Auto) return;
            for (const Region *r : {&g.a, &g.b})
                if (r->buffer && r->buffer->scope == Scope::Shared) found.push_back(r->buffer);
        }
    } o;
    o.visit(k.body);
    for (const Buffer &b : o.found) {
        auto cols = constInt(b->shape.back());
        TILEC_ASSERT(cols, "a panel-layout operand '" + b->name + "' whose rows are not constant");
        auto chosen = spans.find(b.get());
        const int span = chosen != spans.end() ? chosen->second : panelSwizzleBytes(*cols * b->dtype.bytes());
        if (const TileLayout *t = k.tileLayoutOf(b.get()); t && t->tma && t->swizzleBytes == span) continue;
        k.recordTileLayout({b, span, false});
    }
}

bool aInRegisters(const Gemm &g) { return g.a.buffer && g.a.buffer->scope == Scope::Fragment; }

namespace {

/// Whether wgmma.mma_async.sp can compute the T.gemm_sp `g` (sm90_wgmma_sp.cuh) with A_sparse and B among `tiles`
/// (E stays the threads' row-swizzled tile): TileLang's conditions (float16 or bfloat16 into float32, K a multiple
/// of 32, whole warpgroups, each owning a multiple of 64 rows), and the compressed A (M, K/2) and a K-major B
/// (transpose_B) in panels that hold each instruction's K (32 compressed bytes of A, 32 elements of B).
bool sparseWgmmaCan(const Gemm &g, const std::map<const BufferNode *, const TmaTile *> &tiles, int warpgroups) {
    auto ta = tiles.find(g.a.buffer.get()), tb = tiles.find(g.b.buffer.get());
    if (aInRegisters(g) || ta == tiles.end() || tb == tiles.end() || !g.c.buffer || g.c.buffer->scope != Scope::Fragment ||
        g.c.buffer->shape.size() != 2 || g.transA)
        return false;
    auto M = constInt(g.c.buffer->shape[0]), N = constInt(g.c.buffer->shape[1]);
    const DType a = g.a.buffer->dtype;
    if (!M || !N || (a.kind != DType::Float16 && a.kind != DType::BFloat16) || g.b.buffer->dtype != a ||
        g.c.buffer->dtype.kind != DType::Float32)
        return false;
    const TmaTile &A = *ta->second, &B = *tb->second;
    const int64_t K = 2 * A.cols, bK = g.transB ? B.cols : B.rows, bN = g.transB ? B.rows : B.cols;
    if (A.rows != *M || bK != K || bN != *N || K % 32 || A.cols * A.elemBytes % A.swizzle) return false;
    if (g.transB && (B.swizzle / B.elemBytes) % 32) return false;
    auto [wgM, wgN] = wgmmaWarpgroups(*M, *N, warpgroups, 8, g.policy);
    if (wgN > 1 && !g.transB && B.swizzle && (*N / wgN) % (B.swizzle / B.elemBytes)) return false;
    return wgM > 0;
}

} // namespace

/// Whether wgmma can compute `g` with its shared operands among `tiles` and `warpgroups` consumer warpgroups
/// splitting the accumulator as its policy asks: SS with both operands tiles, or RS with A a whole 16-bit, float8 or
/// float32 (tf32) (M, K) fragment (its registers then take wgmma's m64k16, m64k32 or m64k8 order; warpgroups
/// splitting the columns each hold a copy of their rows). `rowsOnly`: an RS product's A is tied to another
/// product's accumulator (registerOperandTied), so every product splits by rows (the accumulator layouts must agree
/// with the A fragment's element for element); a tf32 A then stays on mma.sync (its operand order, Layout::opCols,
/// is no accumulator's).
bool wgmmaCan(const Gemm &g, const std::map<const BufferNode *, const TmaTile *> &tiles, int warpgroups, bool rowsOnly) {
    if (g.sparse()) return sparseWgmmaCan(g, tiles, warpgroups);
    const bool rs = aInRegisters(g);
    auto ta = tiles.find(g.a.buffer.get()), tb = tiles.find(g.b.buffer.get());
    if ((!rs && ta == tiles.end()) || tb == tiles.end() || !g.c.buffer || g.c.buffer->scope != Scope::Fragment) return false;
    if (g.c.buffer->shape.size() != 2) return false;
    auto M = constInt(g.c.buffer->shape[0]), N = constInt(g.c.buffer->shape[1]);
    if (!M || !N) return false;
    // the operands: their tiles, or the parts of them they read (whole panels)
    auto partB = operandPart(g.b, *tb->second);
    auto partA = rs ? std::nullopt : operandPart(g.a, *ta->second);
    if (!partB || (!rs && !partA)) return false;
    const TmaTile &B = *partB;
    int64_t aM = 0, K = 0;
    if (rs) {
        const Buffer &a = g.a.buffer;
        // 16-bit, or float8 (its m64k32 registers are a shuffle of the accumulator order: sm90_wgmma.cuh), or
        // tf32 in the operand order of a fragment no accumulator shares
        const bool tf32 = a->dtype.bytes() == 4 && a->dtype.isFloat();
        if (g.transA || a->shape.size() != 2 || (a->dtype.bytes() != 2 && !a->dtype.isFloat8() && !tf32)) return false;
        if (tf32 && rowsOnly) return false;
        auto am = constInt(a->shape[0]), ak = constInt(a->shape[1]);
        if (!am || !ak) return false;
        aM = *am, K = *ak;
    } else {
        const TmaTile &A = *partA;
        aM = g.transA ? A.cols : A.rows, K = g.transA ? A.rows : A.cols;
    }
    int64_t bK = g.transB ? B.cols : B.rows, bN = g.transB ? B.rows : B.cols;
    if (aM != *M || bN != *N || bK != K) return false;
    bool kMajorOnly = false;
    int kInst = wgmmaK(g.a.buffer->dtype, g.b.buffer->dtype, g.c.buffer->dtype, kMajorOnly);
    if (!kInst || K % kInst || (kMajorOnly && (g.transA || !g.transB))) return false;
    int step = g.a.buffer->dtype.kind == DType::Int8 || g.a.buffer->dtype.kind == DType::UInt8 ? 16 : 8;
    auto [wgM, wgN] = wgmmaWarpgroups(*M, *N, warpgroups, step, g.policy);
    if (rowsOnly && wgN != 1) return false;
    // An N-major B is read in panels of swizzle-width columns: warpgroups splitting N must split at panel bounds
    // (the device library's static_assert; the fuzzer's nvcc samples found a 64x32 tile over 2 warpgroups). The
    // cp.async plan narrows such a tile's span where that makes the split whole panels (narrowSplitPanels).
    if (wgN > 1 && !g.transB && B.swizzle && (*N / wgN) % (B.swizzle / B.elemBytes)) return false;
    return wgM > 0; // every policy: wgmmaWarpgroups splits as it asks (FullRow rows first, FullCol columns first)
}

/// Whether mma.sync can compute `g` reading its shared operands straight from the TMA tiles among `tiles`
/// (sm_90: TMA without wgmma): B and a shared A are such tiles (the panel layout, gemm_ss_panels), or A is a
/// fragment (RS: 16-bit, or of any type mma.sync takes where `anyA`); every tile has whole 8-row swizzle
/// periods, which the panel loaders assume.
bool mmaPanelsCan(const Gemm &g, const std::map<const BufferNode *, const TmaTile *> &tiles, bool anyA) {
    auto tileOf = [&](const Region &r) {
        auto it = r.buffer ? tiles.find(r.buffer.get()) : tiles.end();
        return it == tiles.end() || it->second->rows % 8 ? std::nullopt : operandPart(r, *it->second);
    };
    if (g.sparse() || !tileOf(g.b) || !g.c.buffer || g.c.buffer->scope != Scope::Fragment) return false;
    return aInRegisters(g) ? anyA || g.a.buffer->dtype.bytes() == 2 : tileOf(g.a).has_value();
}


bool anyWgmmaCan(const std::vector<Stmt> &stmts, const std::map<const BufferNode *, const TmaTile *> &tiles, int warpgroups,
                 bool rowsOnly) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        const std::map<const BufferNode *, const TmaTile *> *tiles = nullptr;
        int warpgroups = 1;
        bool rowsOnly = false, found = false;
        void visit(const Gemm &g) override { found |= wgmmaCan(g, *tiles, warpgroups, rowsOnly); }
    } v;
    v.tiles = &tiles, v.warpgroups = warpgroups, v.rowsOnly = rowsOnly;
    for (auto &s : stmts) v.visit(s);
    return v.found;
}

/// Whether any T.gemm in `stmts` reads A from a fragment.
bool anyRegisterOperand(const std::vector<Stmt> &stmts) {
    struct V : IRVisitor {
        using IRVisitor::visit;
        bool found = false;
        void visit(const Gemm &g) override { found |= aInRegisters(g); }
    } v;
    for (auto &s : stmts) v.visit(s);
    return v.found;
}

namespace {

/// Whether wgmma consumers can run product `g` on mma.sync beside their wgmma ones (--mixed-warp-roles): both
/// operands shared tiles mma.sync reads as panels. (A from registers would need mma.sync's fragment layout where
/// the products feeding it have wgmma's: such a loop keeps the cp.async path, StagedOperands' shared copy.)
bool mixedMmaCan(const Gemm &g, const std::map<const BufferNode *, const TmaTile *> &tiles) {
    return !aInRegisters(g) && mmaPanelsCan(g, tiles);
}

/// Uses of the ring buffers other than as the shared operands of a wgmma T.gemm (whose operands may be any of
/// `operands`). Where `reads` is given, reads (loads, a copy's or a reduction's source) are collected there
/// instead of counting as other uses: the consumers read those tiles through the generic proxy.
struct OtherUses : IRVisitor {
    using IRVisitor::visit;
    const std::map<const BufferNode *, const TmaTile *> *tiles = nullptr, *operands = nullptr;
    std::set<const BufferNode *> *reads = nullptr;
    int warpgroups = 1;
    bool rowsOnly = false;
    bool mma = false; ///< the consumers use mma.sync (sm_90), not wgmma
    bool anyA = false; ///< ... and take A from registers of any type (mmaPanelsCan)
    bool mixed = false; ///< wgmma consumers may run a product wgmma cannot take on mma.sync over the panels
    bool found = false;
    void use(const Buffer &b) { found |= b && tiles->count(b.get()); }
    void read(const Buffer &b) {
        if (!reads) return use(b);
        if (b && tiles->count(b.get())) reads->insert(b.get());
    }
    void visit(const Load &op) override { read(op.buffer), IRVisitor::visit(op); }
    void visit(const Store &op) override { use(op.buffer), IRVisitor::visit(op); }
    void visit(const Copy &op) override { read(op.src.buffer), use(op.dst.buffer), IRVisitor::visit(op); }
    void visit(const Fill &op) override { use(op.dst.buffer), IRVisitor::visit(op); }
    void visit(const Reduce &op) override { read(op.src), use(op.dst); }
    void visit(const AtomicAdd &op) override {
        use(op.dst.buffer);
        if (op.src) read(op.src->buffer);
        IRVisitor::visit(op);
    }
    void visit(const Gemm &op) override {
        use(op.c.buffer);
        // T.gemm_sp on wgmma.sp: A_sparse and B as wgmma operands, the metadata E read by the consumers' own
        // loads into their metadata registers (sm90_wgmma_sp.cuh), a generic read. On mma.sync: not taken.
        if (op.sparse()) {
            if (!mma && reads && wgmmaCan(op, *operands, warpgroups, rowsOnly)) return read(op.e.buffer);
            return use(op.e.buffer), use(op.a.buffer), use(op.b.buffer);
        }
        const bool can = mma ? mmaPanelsCan(op, *operands, anyA)
                             : wgmmaCan(op, *operands, warpgroups, rowsOnly) || (mixed && mixedMmaCan(op, *operands));
        if (!can) use(op.a.buffer), use(op.b.buffer);
    }
};

/// Marks the T.gemms of the loop body that run on wgmma.
struct MarkWgmma : IRMutator {
    using IRMutator::visit;
    const std::map<const BufferNode *, const TmaTile *> *tiles = nullptr;
    int warpgroups = 1;
    bool rowsOnly = false;
    bool mma = false;            ///< sm_90: mark mma.sync over the panel layout instead
    bool anyA = false;           ///< ... A from registers of any type (mmaPanelsCan)
    bool mixed = false;          ///< a product wgmma cannot take: mma.sync over the panel layout where it can
    bool registerAOnMma = false; ///< a T.gemm with A from registers stays on mma.sync
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        if (op->sparse() && mma) return op; // (OtherUses: mma.sync consumers keep a T.gemm_sp off the TMA path)
        if (mma) return mmaPanelsCan(*op, *tiles, anyA) ? op->withInstr(GemmInstr::MmaPanels) : op;
        if (wgmmaCan(*op, *tiles, warpgroups, rowsOnly)) return op->withInstr(GemmInstr::Wgmma);
        if (mixed && mixedMmaCan(*op, *tiles)) return op->withInstr(GemmInstr::MmaPanels);
        registerAOnMma |= aInRegisters(*op);
        return op;
    }
};

} // namespace

bool tilesUsedOtherwise(const std::vector<Stmt> &stmts, const std::map<const BufferNode *, const TmaTile *> &tiles, int warpgroups,
                        bool rowsOnly, bool mma, const std::map<const BufferNode *, const TmaTile *> *operands,
                        std::set<const BufferNode *> *reads, bool mixed, bool anyA) {
    OtherUses other;
    other.anyA = anyA;
    other.tiles = &tiles;
    other.operands = operands ? operands : &tiles;
    other.reads = reads;
    other.warpgroups = warpgroups;
    other.rowsOnly = rowsOnly;
    other.mma = mma;
    other.mixed = mixed;
    for (auto &s : stmts) other.visit(s);
    return other.found;
}

Stmt markWgmma(const Stmt &s, const std::map<const BufferNode *, const TmaTile *> &tiles, int warpgroups, bool rowsOnly, bool mma,
               bool &registerAOnMma, bool mixed, bool anyA) {
    MarkWgmma mark;
    mark.anyA = anyA;
    mark.mixed = mixed;
    mark.tiles = &tiles;
    mark.warpgroups = warpgroups;
    mark.rowsOnly = rowsOnly;
    mark.mma = mma;
    Stmt out = mark.mutate(s);
    registerAOnMma |= mark.registerAOnMma;
    return out;
}

/// The global-to-shared row copies of a T.Pipelined loop, given back their copy form for specializeWarps' TMA
/// planning: lowerTileOps turns a T.copy into a 1-D shared buffer into a T.Parallel loop of element stores (the
/// cp.async path moves such rows thread by thread); a TMA producer moves the whole row in one box instead.
namespace {

/// `s` as a Copy when it is `for i in parallel(C): dst[i] = src[e0, ..., base + i]`: a whole 1-D shared buffer
/// filled with a run of one global tensor's innermost dimension (same type, no conversion), every other index
/// free of i; null otherwise.
Stmt rowCopy(const Stmt &s) {
    auto f = as<For>(s);
    if (!f || f->forKind != ForKind::Parallel || constInt(f->min) != std::optional<int64_t>(0)) return nullptr;
    auto n = constInt(f->extent);
    auto st = as<Store>(f->body);
    if (!n || !st || st->buffer->scope != Scope::Shared || st->buffer->shape.size() != 1 || st->indices.size() != 1) return nullptr;
    if (constInt(st->buffer->shape[0]) != n) return nullptr;
    auto at = as<VarNode>(st->indices[0]);
    auto ld = as<Load>(st->value);
    if (!at || at != f->var.get() || !ld || ld->buffer->scope != Scope::Global || ld->buffer->dtype != st->buffer->dtype) return nullptr;
    if (ld->indices.size() != ld->buffer->shape.size() || ld->indices.empty()) return nullptr;
    Region src{ld->buffer, {}, s->loc};
    for (size_t d = 0; d + 1 < ld->indices.size(); ++d) {
        if (uses(ld->indices[d], f->var.get())) return nullptr;
        src.ranges.push_back({ld->indices[d], intImm(1, DType::Int32)});
    }
    auto lin = linearIn(ld->indices.back(), f->var.get());
    if (!lin || lin->second != 1) return nullptr;
    src.ranges.push_back({lin->first ? lin->first : intImm(0, DType::Int32), intImm(*n, DType::Int32)});
    return Copy::make(src, Region::whole(st->buffer, s->loc), s->loc);
}

} // namespace

Stmt rowCopies(const Stmt &body, std::map<const StmtNode *, Stmt> &originals) {
    if (auto c = as<IfThenElse>(body); c && !c->otherwise) {
        Stmt then = rowCopies(c->then, originals);
        return then == c->then ? body : IfThenElse::make(c->cond, then, nullptr, c->loc);
    }
    auto q = as<Seq>(body);
    if (!q) return body;
    std::vector<Stmt> out;
    bool changed = false;
    for (auto &s : q->stmts) {
        Stmt c = rowCopy(s);
        changed |= c != nullptr;
        if (c) originals[c.get()] = s;
        out.push_back(c ? c : s);
    }
    return changed ? Seq::make(std::move(out), q->loc) : body;
}

} // namespace tilec::passes
