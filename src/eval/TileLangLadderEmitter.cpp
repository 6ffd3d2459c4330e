/// \file
/// TileLang's TensorCoreIntrinEmitterWithLadderTransform (tilelang.cuda.intrinsics.macro.mma_macro_generator, from
/// BitBLAS): the MMA emitter of TileLangMmaEmitter.cpp for operands that BitBLAS's ladder transform laid out
/// ahead of time. Its sizes (deriveLadder): K is 32 bytes of a_dtype (m16n8k16 for 16-bit, m16n8k32 for 8-bit
/// operands), n_dim 16. Its ldmatrix_a / ldmatrix_b read the shared operand in the layout of its transform kind
/// (ladderLoad), exactly as TileLang's do; mma, mma_atom and stmatrix are TensorCoreIntrinEmitter's:
///   - 0 (NonTransform): a 2-D tile (rows, K), ldmatrix x4 (not transposed) at TileLang's get_ldmatrix_offset;
///   - 1 (InterWarpTransform): 4-D (row tile, k tile, 16, K), the same ldmatrix inside the tile;
///   - 2 (IntraWarpTransform): 4-D, lane l's ldmatrix row the 16 bytes at l * local_size of the tile (the
///     transform put each lane's row there);
///   - 3 (LDMatrixTransform): 4-D, the lane's fragment the local_size elements at l * local_size of the tile
///     (local_size / num_elems_per_byte storage elements of a packed B), read by plain loads.
/// One divergence: TileLang's class leaves warp_rows and warp_cols at the base class's 1 (its
/// _initialize_micro_size override does not set them), so its methods cover one 16 x 16 tile per warp whatever
/// warp_row_tiles and warp_col_tiles say; tilec derives them as BitBLAS's emitter does (warp_row_tiles / 16,
/// warp_col_tiles / 16), which is what the programs that use it (their register arrays, their stores) assume.
#include "eval/TileLangMmaEmitter.h"
#include "eval/TileLang.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

namespace tilec::eval::mma {

namespace {

using B = ir::BinaryOp;

ir::Expr num(int64_t v) {
    return tl::constIndex(v);
}
ir::Expr op(B o, ir::Expr a, ir::Expr b, const SourceRange &at) {
    return ir::binary(o, a, b, at);
}
ir::Expr op(B o, ir::Expr a, int64_t b, const SourceRange &at) {
    return ir::binary(o, a, num(b), at);
}

/// TileLang's get_ldmatrix_offset(matrix, lane, 0, stride, dtype, transposed): (row, column) of the row lane l
/// addresses in a 16 x K tile; K-contiguous 8-bit operands only (A not transposed, B transposed).
std::pair<ir::Expr, ir::Expr> ldmatrixOffset(InterpImpl &in, const Emitter &e, bool isA, ir::Expr l,
                                             const SourceRange &at) {
    const int bits = (isA ? e.a : e.b).bits();
    const bool trans = isA ? e.aT : e.bT;
    if (bits == 16) {
        if (trans) // ldmatrix_trans_32x8_to_shared_16x16_layout
            return {op(B::Add, op(B::Mul, op(B::FloorDiv, l, 16, at), 8, at), op(B::FloorMod, l, 8, at), at),
                    op(B::Mul, op(B::FloorDiv, op(B::FloorMod, l, 16, at), 8, at), 8, at)};
        return {op(B::FloorMod, l, 16, at), op(B::Mul, op(B::FloorDiv, l, 16, at), 8, at)};
    }
    if (isA == trans)
        in.fail(at, e.name + (isA ? ".ldmatrix_a" : ".ldmatrix_b") +
                        ": TileLang's ldmatrix offsets of 8-bit operands exist for A not transposed and B "
                        "transposed only");
    if (isA) // ldmatrix_32x16_to_shared_16x32_layout_a
        return {op(B::FloorMod, l, 16, at), op(B::Mul, op(B::FloorDiv, l, 16, at), 16, at)};
    // ldmatrix_32x16_to_shared_16x32_layout_b
    return {op(B::Add, op(B::Mul, op(B::FloorDiv, l, 16, at), 8, at), op(B::FloorMod, l, 8, at), at),
            op(B::Mul, op(B::FloorDiv, op(B::FloorMod, l, 16, at), 8, at), 16, at)};
}

/// The shared operand: the buffer itself (TileLang indexes it directly), of 2 dimensions for kind 0 and 4 for
/// the others.
ir::Buffer sharedArg(InterpImpl &in, const Arg &a, const std::string &fname, int kind) {
    tl::Operand o = tl::operandArg(in, a, fname + " shared buffer");
    const size_t dims = kind == 0 ? 2 : 4;
    if (!o.whole)
        in.fail(a.range, fname + " takes the shared buffer itself (it indexes it), not a region of '" +
                             o.buffer->name + "'");
    if (o.buffer->shape.size() != dims)
        in.fail(a.range, fname + " with transform kind " + std::to_string(kind) + " reads a " +
                             std::to_string(dims) + "-dimensional shared buffer" +
                             (kind ? " (row tile, k tile, row, k)" : " (rows, k)") + "; '" + o.buffer->name +
                             "' has " + std::to_string(o.buffer->shape.size()) + " dimensions");
    return o.buffer;
}

/// One ldmatrix x4 (not transposed) of the warp into registers regs + off, each lane's row at `idx`: ldmatrix moves
/// 16-byte rows, so the buffer's rows must be whole 16-byte chunks and the registers the shared tile's type.
ir::Stmt ldmatrixAt(InterpImpl &in, const std::string &fname, const Regs &regs, int64_t off, const ir::Buffer &s,
                    std::vector<ir::Expr> idx, const SourceRange &at) {
    if (regs.buf->dtype != s->dtype)
        in.fail(at, fname + ": ldmatrix moves the shared tile's elements unchanged; the registers '" +
                        regs.buf->name + "' (" + std::string(regs.buf->dtype.name()) + ") must have the type of '" +
                        s->name + "' (" + std::string(s->dtype.name()) + ")");
    auto cols = ir::constInt(s->shape.back());
    if (!cols || (*cols * s->dtype.bits()) % 128)
        in.fail(at, fname + ": ldmatrix reads 16-byte rows; the rows of '" + s->name + "' (" +
                        tl::exprText(s->shape.back()) + " elements of " + std::string(s->dtype.name()) +
                        ") are not a multiple of 16 bytes");
    for (auto &x : idx)
        x = ir::simplify(x);
    return passes::lib::stmt(passes::lib::Fn::LdMatrix,
                             {num(4), num(0), passes::addressOf(regs.buf, {ir::simplify(op(B::Add, regs.base, off, at))}),
                              passes::addressOf(s, idx)},
                             at);
}

} // namespace

void deriveLadder(InterpImpl &in, Emitter &e, const SourceRange &at) {
    const int bits = e.a.bits();
    if (bits != 16 && bits != 8)
        in.fail(at, e.name + " for " + std::string(e.a.name()) + " operands: its mma is m16n8k16 (16-bit) or " +
                        "m16n8k32 (8-bit operands); TileLang's has no m16n8k" + std::to_string(256 / std::max(bits, 1)));
    if (e.rowTiles < 16 || e.rowTiles % 16 || e.colTiles < 16 || e.colTiles % 16)
        in.fail(at, e.name + ": warp_row_tiles and warp_col_tiles must be multiples of 16 (its tiles are 16 x 16), "
                             "got " + std::to_string(e.rowTiles) + " and " + std::to_string(e.colTiles));
    if (e.kindB == 3 && (e.elemsPerByte <= 0 || (256 / bits) % e.elemsPerByte))
        in.fail(at, e.name + ": num_elems_per_byte " + std::to_string(e.elemsPerByte) + " does not divide K (" +
                        std::to_string(256 / bits) + ")");
    e.kDim = 256 / bits;
    e.nDim = 16;
    e.warpRows = e.rowTiles / 16;
    e.warpCols = e.colTiles / 16;
    e.localA = 16 * e.kDim / 32;
    e.localB = 16 * e.kDim / 32;
    e.localOut = 8;
}

Value ladderLoad(InterpImpl &in, const Emitter &e, CallArgs &args, bool isA) {
    const std::string fname = e.name + (isA ? ".ldmatrix_a" : ".ldmatrix_b");
    auto a = bindArgs(in, args, fname,
                      {isA ? "A_local_buf" : "B_local_buf", isA ? "A_shared_buf" : "B_shared_buf", "ki", "rk?"});
    tl::requireLaunch(in, args, fname);
    const SourceRange &at = args.call;
    const int kind = isA ? e.kindA : e.kindB;
    ir::Buffer s = sharedArg(in, *a[1], fname, kind);
    const int64_t tiles = isA ? e.warpRows : e.warpCols, local = isA ? e.localA : e.localB;
    // kind 3 reads a packed B's storage elements: local_size / num_elems_per_byte of them per tile
    const int64_t perTile = kind == 3 && !isA ? local / e.elemsPerByte : local;
    const int64_t need = kind == 3 ? tiles * perTile : (tiles - 1) * local + 128 / s->dtype.bits();
    Regs regs = regsArg(in, *a[0], isA ? "A_local_buf" : "B_local_buf", need, e);
    ir::Expr ki = tl::intExprArg(in, *a[2], "ki"), rk = a[3] ? tl::intExprArg(in, *a[3], "rk") : num(0);
    auto [lane, warpN, warpM] = threadBinding(in, e, at);
    ir::Expr warp = isA ? warpM : warpN;
    std::vector<ir::Stmt> out;
    for (int64_t i = 0; i < tiles; ++i) {
        if (kind == 3) {
            // tile (warp * tiles + i, rk * chunk / K + ki), the lane's elements from l * perTile on
            const int64_t rowLen = e.kDim / (isA ? 1 : e.elemsPerByte);
            for (int64_t x = 0; x < perTile; ++x) {
                ir::Expr flat = op(B::Add, op(B::Mul, lane, perTile, at), num(x), at);
                std::vector<ir::Expr> idx = {op(B::Add, op(B::Mul, warp, tiles, at), num(i), at),
                                             op(B::Add, op(B::Mul, rk, e.chunk / e.kDim, at), ki, at),
                                             op(B::FloorDiv, flat, rowLen, at), op(B::FloorMod, flat, rowLen, at)};
                for (auto &y : idx)
                    y = ir::simplify(y);
                ir::Expr v = ir::Load::make(s, idx, at);
                if (v->dtype != regs.buf->dtype)
                    v = ir::cast(regs.buf->dtype, v, at);
                out.push_back(ir::Store::make(
                    regs.buf, {ir::simplify(op(B::Add, regs.base, i * perTile + x, at))}, v, at));
            }
            continue;
        }
        // the tile's origin: rows warp * warp_tiles + 16 i, k rk * chunk + ki * K
        ir::Expr ri = op(B::Add, op(B::Mul, warp, isA ? e.rowTiles : e.colTiles, at), num(16 * i), at);
        ir::Expr rj = op(B::Add, op(B::Mul, rk, e.chunk, at), op(B::Mul, ki, e.kDim, at), at);
        ir::Expr rowOff, colOff;
        if (kind == 2) { // the lane's 16 bytes at l * local_size of the 16 x K tile
            ir::Expr flat = op(B::Mul, lane, local, at);
            rowOff = op(B::FloorDiv, flat, s->shape.back(), at);
            colOff = op(B::FloorMod, flat, s->shape.back(), at);
        } else {
            std::tie(rowOff, colOff) = ldmatrixOffset(in, e, isA, lane, at);
        }
        std::vector<ir::Expr> idx;
        if (kind == 0)
            idx = {op(B::Add, ri, rowOff, at), op(B::Add, rj, colOff, at)};
        else
            idx = {op(B::FloorDiv, ri, 16, at), op(B::FloorDiv, rj, e.kDim, at),
                   op(B::Add, op(B::FloorMod, ri, 16, at), rowOff, at),
                   op(B::Add, op(B::FloorMod, rj, e.kDim, at), colOff, at)};
        out.push_back(ldmatrixAt(in, fname, regs, i * local, s, std::move(idx), at));
    }
    in.emit(ir::Seq::make(std::move(out), at));
    return Value::none();
}

} // namespace tilec::eval::mma
