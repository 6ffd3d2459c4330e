/// \file
/// TileLang's intrinsics-level GEMM layer (0.1.13's tilelang.cuda.intrinsics), evaluated natively:
///   - `TensorCoreIntrinEmitter(a_dtype, b_dtype, accum_dtype, a_transposed, b_transposed, block_row_warps,
///     block_col_warps, warp_row_tiles, warp_col_tiles, chunk, reduce_k, num_elems_per_byte, is_m_first,
///     thread_var)` (tilelang.cuda.intrinsics.macro.mma_macro_generator): an object with TileLang's
///     attributes (micro_size_x/y/k, local_size_a/b/out, warp_rows, warp_cols, ...) whose methods write one
///     warp's mma.sync tiles as per-thread statements: ldmatrix_a / ldmatrix_b fill a thread's registers (a
///     T.alloc_local array) with exactly the elements of mma.sync's A / B fragment (the PTX ISA's "Matrix
///     Fragments for mma.m16n8k*": what TileLang's ldmatrix gives each lane; by tilec.ldmatrix where TileLang
///     uses ldmatrix, ldmatrixFits), mma / mma_atom issue
///     tilec.mma_sync on those registers (one m16n8kK instruction per 16 x 8 tile), stmatrix stores the
///     accumulator fragment.
///   BitBLAS's emitter (bitblas.tl.mma_macro_generator), which TileLang's came from, is this class with the
///   thread index an argument of ldmatrix_a / ldmatrix_b / stmatrix (`thread_bindings`) and n_dim always 16.
///   The modules that hold it, and TileLang's swizzle layouts, are TileLangMmaModules.cpp.
/// The registers of thread t hold, for warp tile (i, j) of its warp (warp_m, warp_n) = TileLang's
/// extract_thread_binding(t), the fragment elements in register order; the layouts are the hardware's, so a
/// program that reads or rewrites the registers between the calls (dequantizing B) sees what it sees on
/// TileLang.
#include "eval/TileLangMmaEmitter.h"
#include "eval/InterpImpl.h"
#include "eval/TileLang.h"

#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"

namespace tilec::eval {

namespace {

using tl::Operand;

ir::Expr add(ir::Expr a, ir::Expr b, const SourceRange &at) {
    return ir::binary(ir::BinaryOp::Add, a, b, at);
}
ir::Expr mul(ir::Expr a, int64_t b, const SourceRange &at) {
    return ir::binary(ir::BinaryOp::Mul, a, tl::constIndex(b), at);
}
ir::Expr idiv(ir::Expr a, int64_t b, const SourceRange &at) {
    return ir::binary(ir::BinaryOp::FloorDiv, a, tl::constIndex(b), at);
}
ir::Expr imod(ir::Expr a, int64_t b, const SourceRange &at) {
    return ir::binary(ir::BinaryOp::FloorMod, a, tl::constIndex(b), at);
}
ir::Expr num(int64_t v) {
    return tl::constIndex(v);
}

} // namespace

namespace mma {

Regs regsArg(Interp &in, const Arg &a, const std::string &what, int64_t need, const Emitter &e) {
    Operand op = tl::operandArg(in, a, e.name + " " + what);
    if (op.buffer->scope != ir::Scope::Local)
        in.fail(a.range, e.name + "'s " + what + " is a thread's registers, a T.alloc_local array; '" +
                             op.buffer->name + "' is " + ir::toString(op.buffer->scope) +
                             " (tilec lays out T.alloc_fragment buffers itself)");
    if (op.buffer->shape.size() != 1)
        in.fail(a.range, e.name + "'s " + what + " '" + op.buffer->name + "' must have one dimension");
    Regs r{op.buffer, op.whole ? num(0) : op.mins[0]};
    auto n = ir::constInt(op.buffer->shape[0]), at = ir::constInt(r.base);
    if (n && at && *at + need > *n)
        in.fail(a.range, e.name + " uses " + std::to_string(need) + " elements of '" + op.buffer->name +
                             "' from index " + std::to_string(*at) + ", which has " + std::to_string(*n));
    return r;
}

/// (lane, warp_n, warp_m) of the thread: TileLang's extract_thread_binding.
std::array<ir::Expr, 3> threadBinding(Interp &in, const Emitter &e, const SourceRange &at, std::optional<bool> mFirst) {
    TraceState *t = in.trace();
    ir::Expr tid = e.threadVar;
    if (!tid) {
        (void)tl::threadCoordinate(*t, 0, at);
        tid = t->kernel->threadIdx;
    }
    ir::Expr lane = imod(tid, 32, at);
    if (mFirst.value_or(e.mFirst))
        return {lane, imod(idiv(tid, 32, at), e.colWarps, at),
                imod(idiv(tid, 32 * e.colWarps, at), e.rowWarps, at)};
    return {lane, imod(idiv(tid, 32 * e.rowWarps, at), e.colWarps, at),
            imod(idiv(tid, 32, at), e.rowWarps, at)};
}

} // namespace mma

namespace {

using mma::Emitter;
using mma::Regs;
using mma::regsArg;
using mma::threadBinding;

/// BitBLAS's methods take the thread index (`thread_bindings`): the emitter with it as thread_var, or with
/// none where it is the kernel's own thread index (T.thread_binding or T.get_thread_binding(0) of one
/// dimension of threads), whose lanes are the hardware's.
Emitter withThreads(Interp &in, const Emitter &e, const Arg &tid) {
    Emitter with = e;
    with.threadVar = tl::intExprArg(in, tid, "thread_bindings");
    TraceState *t = in.trace();
    if (t && t->kernel->threadIdx && with.threadVar.get() == ir::Expr(t->kernel->threadIdx).get())
        with.threadVar = nullptr;
    return with;
}

/// A shared operand: its buffer, the minimum of each dimension before the last two, and the origin of the
/// last two.
struct Tile {
    ir::Buffer buf;
    std::vector<ir::Expr> outer;
    ir::Expr r0, c0;
};

Tile tileArg(Interp &in, const Arg &a, const std::string &what, const Emitter &e) {
    Operand op = tl::operandArg(in, a, e.name + " " + what);
    if (op.buffer->shape.size() < 2)
        in.fail(a.range, e.name + "'s " + what + " '" + op.buffer->name + "' needs at least two dimensions");
    Tile t{op.buffer, {}, num(0), num(0)};
    if (op.whole) {
        t.outer.assign(op.buffer->shape.size() - 2, num(0));
        return t;
    }
    t.outer.assign(op.mins.begin(), op.mins.end() - 2);
    t.r0 = op.mins[op.mins.size() - 2];
    t.c0 = op.mins.back();
    return t;
}

ir::Expr loadTile(const Tile &t, ir::Expr r, ir::Expr c, const SourceRange &at) {
    std::vector<ir::Expr> idx = t.outer;
    idx.push_back(add(t.r0, r, at));
    idx.push_back(add(t.c0, c, at));
    return ir::Load::make(t.buf, idx, at);
}

ir::Stmt storeReg(const Regs &r, int64_t off, ir::Expr v, const SourceRange &at) {
    if (v->dtype != r.buf->dtype)
        v = ir::cast(r.buf->dtype, v, at);
    return ir::Store::make(r.buf, {ir::simplify(add(r.base, num(off), at))}, v, at);
}

/// Element `e` of one m16n8kK operand fragment of a lane, as (spatial, reduction) coordinates in the tile:
/// A's 16 x K (rows, k) or B's 8 x K (n, k) per n8 half. 32 / bits elements share a 32-bit register; A has
/// four registers (row group + 8 for odd ones, k + 4 registers' worth for the upper two), B two (k upper for
/// the second).
std::pair<ir::Expr, ir::Expr> fragmentElement(ir::Expr lane, int64_t e, int bits, bool isA,
                                              const SourceRange &at) {
    const int64_t per = 32 / bits, reg = e / per, j = e % per;
    ir::Expr s = idiv(lane, 4, at), k = add(mul(imod(lane, 4, at), per, at), num(j), at);
    if (isA) {
        if (reg % 2)
            s = add(s, num(8), at);
        if (reg / 2)
            k = add(k, num(4 * per), at);
    } else if (reg) {
        k = add(k, num(4 * per), at);
    }
    return {s, k};
}

/// Whether one ldmatrix per warp tile can fill the fragment registers, as TileLang's own ldmatrix_a / ldmatrix_b
/// do: registers of the shared tile's type starting at a 32-bit boundary, the kernel's own thread index (the
/// hardware's lanes), the 8 elements of a matrix row one aligned 16-byte chunk (rows of whole chunks, the tile's
/// column origin on a chunk), and a transposed read of 16-bit elements only (ldmatrix.trans moves 16-bit ones).
bool ldmatrixFits(const Emitter &e, const Regs &regs, const Tile &t, bool trans, int bits) {
    if (e.threadVar || regs.buf->dtype != t.buf->dtype || t.buf->scope != ir::Scope::Shared || (trans && bits != 16))
        return false;
    const int64_t chunk = 128 / bits;
    auto base = ir::constInt(regs.base), cols = ir::constInt(t.buf->shape.back()), c0 = ir::constInt(t.c0);
    return base && (*base * bits) % 32 == 0 && cols && *cols % chunk == 0 && c0 && *c0 % chunk == 0;
}

/// The fragments of warp tile (spatial origin ws, k origin wk) by one tilec.ldmatrix: A's four matrices are (rows
/// +0 / +8) x (k chunk 0 / 1), B's (n +0 / +8 where n_dim is 16) x (k chunk 0 / 1), each lane addressing row
/// lane % 8 of matrix lane / 8. Stored with K along the rows (trans), a matrix's rows are 8 k and ldmatrix.trans
/// hands each lane its column.
ir::Stmt ldmatrixTile(const Emitter &e, const Regs &regs, int64_t off, const Tile &t, bool isA, bool trans, int bits,
                      ir::Expr lane, ir::Expr ws, ir::Expr wk, const SourceRange &at) {
    const int64_t count = isA || e.nDim == 16 ? 4 : 2, chunk = trans ? 8 : 128 / bits;
    ir::Expr m = count == 4 ? idiv(lane, 8, at) : imod(idiv(lane, 8, at), 2, at), row = imod(lane, 8, at);
    ir::Expr sOff = mul(isA ? imod(m, 2, at) : idiv(m, 2, at), 8, at),
             kOff = mul(isA ? idiv(m, 2, at) : imod(m, 2, at), chunk, at);
    ir::Expr s = add(ws, sOff, at), k = add(wk, kOff, at);
    if (trans)
        k = add(k, row, at);
    else
        s = add(s, row, at);
    std::vector<ir::Expr> idx = t.outer;
    idx.push_back(ir::simplify(add(t.r0, trans ? k : s, at)));
    idx.push_back(ir::simplify(add(t.c0, trans ? s : k, at)));
    return passes::lib::stmt(passes::lib::Fn::LdMatrix,
                             {num(count), num(trans ? 1 : 0),
                              passes::addressOf(regs.buf, {ir::simplify(add(regs.base, num(off), at))}),
                              passes::addressOf(t.buf, idx)},
                             at);
}

/// ldmatrix_a / ldmatrix_b: the thread's fragment registers of k-step ki of every warp tile along M (A) or N
/// (B); element by element where ldmatrix cannot read them (ldmatrixFits).
Value loadFragments(InterpImpl &in, const Emitter &e0, CallArgs &args, bool isA) {
    if (e0.ladder())
        return mma::ladderLoad(in, e0, args, isA);
    const std::string fname = e0.name + (isA ? ".ldmatrix_a" : ".ldmatrix_b");
    std::vector<std::string> params = {isA ? "A_local_buf" : "B_local_buf",
                                       isA ? "A_shared_buf" : "B_shared_buf", "ki", "rk?"};
    if (e0.bitblas)
        params.insert(params.begin() + 3, "thread_bindings");
    auto a = bindArgs(in, args, fname, params);
    tl::requireLaunch(in, args, fname);
    const Emitter e = e0.bitblas ? withThreads(in, e0, *a[3]) : e0;
    if (e.bitblas)
        a.erase(a.begin() + 3);
    const int64_t tiles = isA ? e.warpRows : e.warpCols, local = isA ? e.localA : e.localB;
    Regs regs = regsArg(in, *a[0], isA ? "A_local_buf" : "B_local_buf", tiles * local, e);
    Tile t = tileArg(in, *a[1], isA ? "A_shared_buf" : "B_shared_buf", e);
    ir::Expr ki = tl::intExprArg(in, *a[2], "ki"), rk = a[3] ? tl::intExprArg(in, *a[3], "rk") : num(0);
    const SourceRange &at = args.call;
    auto [lane, warpN, warpM] = threadBinding(in, e, at);
    const int bits = (isA ? e.a : e.b).bits();
    const bool trans = isA ? e.aT : !e.bT; // whether the stored rows run along K
    if (e.bitblas && bits == 8 && trans)
        in.fail(args.call,
                fname + ": BitBLAS's ldmatrix reads 8-bit operands stored with K along the columns only "
                        "(A not transposed, B transposed)");
    ir::Expr wk = add(mul(rk, e.chunk, at), mul(ki, e.kDim, at), at);
    std::vector<ir::Stmt> out;
    const bool ldmatrix = ldmatrixFits(e, regs, t, trans, bits);
    for (int64_t i = 0; i < tiles; ++i) {
        ir::Expr ws = add(isA ? mul(warpM, e.rowTiles, at) : mul(warpN, e.colTiles, at),
                          num(i * (isA ? 16 : e.nDim)), at);
        if (ldmatrix) {
            out.push_back(ldmatrixTile(e, regs, i * local, t, isA, trans, bits, lane, ws, wk, at));
            continue;
        }
        for (int64_t x = 0; x < local; ++x) {
            // B with n_dim 16 holds two n8 halves, one after the other
            const int64_t half = isA || e.nDim == 8 ? 0 : x / (local / 2),
                          el = isA || e.nDim == 8 ? x : x % (local / 2);
            auto [s, k] = fragmentElement(lane, el, bits, isA, at);
            s = add(add(ws, s, at), num(8 * half), at);
            k = add(wk, k, at);
            out.push_back(
                storeReg(regs, i * local + x, trans ? loadTile(t, k, s, at) : loadTile(t, s, k, at), at));
        }
    }
    in.emit(ir::Seq::make(std::move(out), at));
    return Value::none();
}

/// Whether mma.sync has an m16n8kK instruction for these register types (stdlib/tilec/mma_frag.cuh's mma_op).
bool mmaSupported(DType a, DType b, DType c) {
    auto is8 = [](DType t) { return t.kind == DType::Int8 || t.kind == DType::UInt8; };
    auto isF8 = [](DType t) { return t.kind == DType::Float8E4M3 || t.kind == DType::Float8E5M2; };
    if (a.kind == DType::Float16 && b.kind == DType::Float16)
        return c.kind == DType::Float32 || c.kind == DType::Float16;
    if (a.kind == DType::BFloat16 && b.kind == DType::BFloat16)
        return c.kind == DType::Float32;
    if (a.kind == DType::Float32 && b.kind == DType::Float32)
        return c.kind == DType::Float32;
    if (is8(a) && is8(b))
        return c.kind == DType::Int32;
    return isF8(a) && isF8(b) && c.kind == DType::Float32;
}

/// One m16n8 instruction tile per call (two when n_dim is 16): tilec.mma_sync on the registers at the
/// offsets.
void mmaTile(InterpImpl &in, const Emitter &e, const Regs &A, const Regs &B, const Regs &C, ir::Expr aOff,
             ir::Expr bOff, ir::Expr cOff, const SourceRange &at) {
    if (!mmaSupported(A.buf->dtype, B.buf->dtype, C.buf->dtype))
        in.fail(at, e.name + ": mma.sync has no m16n8k" + std::to_string(e.kDim) +
                        " instruction for registers of " + std::string(A.buf->dtype.name()) + " x " +
                        std::string(B.buf->dtype.name()) + " -> " + std::string(C.buf->dtype.name()) +
                        " (float16 -> float32/float16, bfloat16 -> float32, float32 (tf32), int8/uint8 -> "
                        "int32, float8 -> float32)");
    if (A.buf->dtype.isFloat8() && in.smVersion() < 89)
        in.fail(at, e.name + ": mma.sync on float8 registers needs sm_89 or newer; sm_" +
                        std::to_string(in.smVersion()) + " has no float8 tensor cores");
    auto addr = [&](const Regs &r, ir::Expr off) {
        return passes::addressOf(r.buf, {ir::simplify(add(r.base, off, at))});
    };
    for (int64_t h = 0; h < (e.nDim == 16 ? 2 : 1); ++h)
        in.emit(passes::lib::stmt(passes::lib::Fn::MmaSync,
                                  {addr(A, aOff), addr(B, add(bOff, num(h * e.localB / 2), at)),
                                   addr(C, add(cOff, num(h * e.localOut / 2), at))},
                                  at));
}

Value mmaAll(InterpImpl &in, const Emitter &e, CallArgs &args, bool atom) {
    const std::string fname = e.name + (atom ? ".mma_atom" : ".mma");
    // the ladder emitter's own mma has no k_inner (its mma_atom is TensorCoreIntrinEmitter's)
    auto a =
        atom ? bindArgs(in, args, fname,
                        {"A_local_buf", "B_local_buf", "C_local_buf", "inst_m_idx", "inst_n_idx", "k_inner?"})
        : e.ladder() ? bindArgs(in, args, fname, {"A_local_buf", "B_local_buf", "C_local_buf"})
                     : bindArgs(in, args, fname, {"A_local_buf", "B_local_buf", "C_local_buf", "k_inner?"});
    a.resize(atom ? 6 : 4);
    tl::requireLaunch(in, args, fname);
    Regs A = regsArg(in, *a[0], "A_local_buf", e.warpRows * e.localA, e),
         B = regsArg(in, *a[1], "B_local_buf", e.warpCols * e.localB, e);
    Regs C = regsArg(in, *a[2], "C_local_buf", e.warpRows * e.warpCols * e.localOut, e);
    // k_inner strides only T.alloc_fragment operands in TileLang; the registers here are T.alloc_local arrays
    const size_t kIdx = atom ? 5 : 3;
    if (a[kIdx])
        (void)tl::intExprArg(in, *a[kIdx], "k_inner");
    auto tileOf = [&](int64_t i, int64_t j) {
        mmaTile(in, e, A, B, C, num(i * e.localA), num(j * e.localB), num((i * e.warpCols + j) * e.localOut),
                args.call);
    };
    if (!atom) {
        for (int64_t i = 0; i < e.warpRows; ++i)
            for (int64_t j = 0; j < e.warpCols; ++j)
                tileOf(i, j);
        return Value::none();
    }
    ir::Expr i = tl::intExprArg(in, *a[3], "inst_m_idx"), j = tl::intExprArg(in, *a[4], "inst_n_idx");
    mmaTile(in, e, A, B, C, mul(i, e.localA, args.call), mul(j, e.localB, args.call),
            add(mul(i, e.warpCols * e.localOut, args.call), mul(j, e.localOut, args.call), args.call),
            args.call);
    return Value::none();
}

/// stmatrix(C_local, C_buf, pid_m=None, pid_n=None): the accumulator fragments into a 2-D (rows, cols) or 4-D
/// (tile row, tile col, 16, n_dim) buffer; with pid_m and pid_n, into the block (pid_m, pid_n) of a global C.
Value storeFragments(InterpImpl &in, const Emitter &e0, CallArgs &args) {
    const std::string fname = e0.name + ".stmatrix";
    std::vector<std::string> params = {"C_local_buf", "C_buf", "pid_m?", "pid_n?"};
    if (e0.bitblas)
        params.insert(params.begin() + 2, "thread_bindings");
    auto a = bindArgs(in, args, fname, params);
    tl::requireLaunch(in, args, fname);
    const Emitter e = e0.bitblas ? withThreads(in, e0, *a[2]) : e0;
    if (e.bitblas)
        a.erase(a.begin() + 2);
    Regs C = regsArg(in, *a[0], "C_local_buf", e.warpRows * e.warpCols * e.localOut, e);
    Operand dst = tl::operandArg(in, *a[1], fname + " C_buf");
    const size_t dims = dst.buffer->shape.size();
    if (dims != 2 && dims != 4)
        in.fail(a[1]->range, fname + "'s C_buf must have 2 or 4 dimensions, '" + dst.buffer->name + "' has " +
                                 std::to_string(dims));
    const bool global = a[2] && a[3] && !a[2]->value.is(VK::None) && !a[3]->value.is(VK::None);
    if (global && dims != 2)
        in.fail(a[1]->range, fname + " into a block of a global C needs a 2-dimensional C_buf");
    if (e.bitblas && !global && dims != 4)
        in.fail(a[1]->range,
                fname + " stores into a 4-dimensional (tile row, tile column, 16, 16) C_buf, or with "
                        "pid_m and pid_n into a block of a 2-dimensional global C");
    const SourceRange &at = args.call;
    auto [lane, warpN, warpM] = threadBinding(in, e, at);
    ir::Expr rowBase = mul(warpM, e.warpRows, at), colBase = mul(warpN, e.warpCols, at);
    if (global) {
        rowBase = add(mul(tl::intExprArg(in, *a[2], "pid_m"), e.rowWarps * e.warpRows, at), rowBase, at);
        colBase = add(mul(tl::intExprArg(in, *a[3], "pid_n"), e.colWarps * e.warpCols, at), colBase, at);
    }
    std::vector<ir::Stmt> out;
    for (int64_t i = 0; i < e.warpRows; ++i)
        for (int64_t j = 0; j < e.warpCols; ++j)
            for (int64_t x = 0; x < e.localOut; ++x) {
                // the C fragment: (row group + 8 for the second pair, columns 2 * (lane % 4) + x % 2 of n8
                // half x / 4)
                ir::Expr row = add(idiv(lane, 4, at), num(8 * (x % 4 / 2)), at);
                ir::Expr col = add(mul(imod(lane, 4, at), 2, at), num(8 * (x / 4) + x % 2), at);
                ir::Expr ti = add(rowBase, num(i), at), tj = add(colBase, num(j), at);
                std::vector<ir::Expr> idx = dims == 4
                                                ? std::vector<ir::Expr>{ti, tj, row, col}
                                                : std::vector<ir::Expr>{add(mul(ti, 16, at), row, at),
                                                                        add(mul(tj, e.nDim, at), col, at)};
                ir::Expr v = ir::Load::make(
                    C.buf, {ir::simplify(add(C.base, num((i * e.warpCols + j) * e.localOut + x), at))}, at);
                if (v->dtype != dst.buffer->dtype)
                    v = ir::cast(dst.buffer->dtype, v, at);
                out.push_back(ir::Store::make(dst.buffer, idx, v, at));
            }
    in.emit(ir::Seq::make(std::move(out), at));
    return Value::none();
}

/// The emitter's sizes from its configuration (TileLang's _initialize_*), with its checks as located errors.
void derive(InterpImpl &in, Emitter &e, const SourceRange &at) {
    if (e.ladder())
        return mma::deriveLadder(in, e, at);
    const int bits = e.a.bits();
    // BitBLAS's K is the operand's 32 bytes whatever the chunk; its ldmatrix offsets, of 16- and 8-bit types
    e.kDim = e.bitblas ? 256 / std::max(bits, 1) : std::min<int64_t>(256 / std::max(bits, 1), e.chunk);
    if (e.bitblas && ((bits != 16 && bits != 8) || e.chunk < e.kDim))
        in.fail(
            at,
            e.name + " for " + std::string(e.a.name()) + " operands with chunk " + std::to_string(e.chunk) +
                ": BitBLAS's emitter loads 16- and 8-bit operands, with chunk at least its micro_size_k (" +
                std::to_string(e.kDim) + ")");
    if (e.bitblas && e.colTiles % 16)
        in.fail(at, e.name + ": warp_col_tiles must be a multiple of 16 (BitBLAS's N_DIM), got " +
                        std::to_string(e.colTiles));
    const bool known =
        (bits == 16 && e.kDim == 16) || (bits == 8 && e.kDim == 32) || (bits == 32 && e.kDim == 8);
    if (!known)
        in.fail(at, e.name + " for " + std::string(e.a.name()) + " operands with chunk " +
                        std::to_string(e.chunk) + " needs an m16n8k" + std::to_string(e.kDim) +
                        " mma.sync that tilec does not emit (it has m16n8k16 for 16-bit, m16n8k32 for 8-bit "
                        "and m16n8k8 for "
                        "float32 operands; chunk at least that K)");
    if (e.rowTiles < 16 || e.rowTiles % 16)
        in.fail(at, e.name + ": warp_row_tiles must be a multiple of 16, got " + std::to_string(e.rowTiles));
    if (e.colTiles < 8 || e.colTiles % 8)
        in.fail(at, e.name + ": warp_col_tiles must be a multiple of 8, got " + std::to_string(e.colTiles));
    e.warpRows = e.rowTiles / 16;
    e.nDim = e.colTiles % 16 == 0 ? 16 : 8;
    e.warpCols = e.colTiles / e.nDim;
    e.localA = 16 * e.kDim / 32;
    e.localB = e.nDim * e.kDim / 32;
    e.localOut = 16 * e.nDim / 32;
}

std::string prefixOf(int64_t k) {
    return "m16n8k" + std::to_string(k);
}

Value emitterObject(std::shared_ptr<Emitter> e) {
    std::map<std::string, Value> m;
    auto I = [](int64_t v) { return Value::integer(v); };
    m["a_dtype"] = Value::ofDType(e->a);
    m["b_dtype"] = Value::ofDType(e->b);
    m["accum_dtype"] = Value::ofDType(e->acc);
    m["a_transposed"] = Value::boolean(e->aT);
    m["b_transposed"] = Value::boolean(e->bT);
    m["is_m_first"] = Value::boolean(e->mFirst);
    for (auto [k, v] : {std::pair<const char *, int64_t>{"block_row_warps", e->rowWarps},
                        {"block_col_warps", e->colWarps},
                        {"warp_row_tiles", e->rowTiles},
                        {"warp_col_tiles", e->colTiles},
                        {"chunk", e->chunk},
                        {"reduce_k", e->reduceK},
                        {"num_elems_per_byte", e->elemsPerByte},
                        {"k_dim", e->kDim},
                        {"micro_size_k", e->kDim},
                        {"M_DIM", 16},
                        {"micro_size_x", 16},
                        {"n_dim", e->nDim},
                        {"micro_size_y", e->nDim},
                        {"warp_rows", e->warpRows},
                        {"warp_cols", e->warpCols},
                        {"mma_num_inst_m", e->warpRows},
                        {"mma_num_inst_n", e->warpCols},
                        {"local_size_a", e->localA},
                        {"local_size_b", e->localB},
                        {"local_size_out", e->localOut},
                        {"WARP_SIZE", 32},
                        {"threads", 32 * e->rowWarps * e->colWarps * e->reduceK}})
        m[k] = I(v);
    m["mma_prefix"] = Value::str(prefixOf(e->kDim));
    m["thread_var"] = e->threadVar ? Value::ofExpr(e->threadVar) : Value::none();
    if (e->ladder()) {
        m["transform_kind_a"] = I(e->kindA);
        m["transform_kind_b"] = I(e->kindB);
    }
    const std::string n = e->name;
    m["ldmatrix_a"] = builtinFunction(
        n + ".ldmatrix_a", [e](InterpImpl &in, CallArgs &a) { return loadFragments(in, *e, a, true); });
    m["ldmatrix_b"] = builtinFunction(
        n + ".ldmatrix_b", [e](InterpImpl &in, CallArgs &a) { return loadFragments(in, *e, a, false); });
    m["mma"] =
        builtinFunction(n + ".mma", [e](InterpImpl &in, CallArgs &a) { return mmaAll(in, *e, a, false); });
    m["mma_atom"] = builtinFunction(n + ".mma_atom",
                                    [e](InterpImpl &in, CallArgs &a) { return mmaAll(in, *e, a, true); });
    m["stmatrix"] = builtinFunction(n + ".stmatrix",
                                    [e](InterpImpl &in, CallArgs &a) { return storeFragments(in, *e, a); });
    m["get_thread_binding"] = builtinFunction(n + ".get_thread_binding", [e](InterpImpl &in, CallArgs &a) {
        bindArgs(in, a, e->name + ".get_thread_binding", {});
        TraceState &t = tl::requireLaunch(in, a, e->name + ".get_thread_binding");
        if (e->threadVar)
            return Value::ofExpr(e->threadVar);
        (void)tl::threadCoordinate(t, 0, a.call);
        return Value::ofExpr(t.kernel->threadIdx);
    });
    m["extract_thread_binding"] =
        builtinFunction(n + ".extract_thread_binding", [e](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, e->name + ".extract_thread_binding", {"thread_id", "is_m_first?"});
            Emitter with = *e;
            with.threadVar = tl::intExprArg(in, *x[0], "thread_id");
            std::optional<bool> first;
            if (x[1] && !x[1]->value.is(VK::None))
                first = in.toBool(*x[1], "is_m_first");
            auto [l, wn, wm] = threadBinding(in, with, a.call, first);
            return Value::tuple({Value::ofExpr(l), Value::ofExpr(wn), Value::ofExpr(wm)});
        });
    return partlyKnownModule(n + "(...)", std::move(m));
}

/// TensorCoreIntrinEmitter(...): TileLang's parameters and defaults.
Value makeEmitter(InterpImpl &in, CallArgs &args, const std::string &cls, bool bitblas, bool ladder) {
    std::vector<std::string> params = {"a_dtype?",         "b_dtype?",        "accum_dtype?",
                                       "a_transposed?",    "b_transposed?",   "block_row_warps?",
                                       "block_col_warps?", "warp_row_tiles?", "warp_col_tiles?",
                                       "chunk?",           "reduce_k?",       "num_elems_per_byte?",
                                       "is_m_first?",      "thread_var?"};
    if (bitblas || ladder)
        params.pop_back(); // BitBLAS's methods take the thread index instead; the ladder emitter has none
    if (ladder)
        params.insert(params.end(), {"transform_kind_a?", "transform_kind_b?"});
    auto a = bindArgs(in, args, cls, params);
    std::vector<std::optional<Arg>> kinds;
    if (ladder)
        kinds.assign(a.end() - 2, a.end()), a.resize(13);
    a.resize(14);
    auto e = std::make_shared<Emitter>();
    e->name = cls;
    e->bitblas = bitblas;
    if (ladder) {
        // TransformKind(k) of an int or a TransformKind member (an int here); TileLang's assertion that it is 0 .. 3
        for (int i = 0; i < 2; ++i) {
            int64_t k = kinds[i] && !kinds[i]->value.is(VK::None)
                            ? in.toInt(*kinds[i], i ? "transform_kind_b" : "transform_kind_a")
                            : 0;
            if (k < 0 || k > 3)
                in.fail(kinds[i]->range, cls + ": " + (i ? "transform_kind_b" : "transform_kind_a") +
                                             " is a TransformKind, 0 to 3 (NonTransform, InterWarpTransform, "
                                             "IntraWarpTransform, LDMatrixTransform), got " + std::to_string(k));
            (i ? e->kindB : e->kindA) = (int)k;
        }
    }
    auto given = [&](size_t i) { return a[i] && !a[i]->value.is(VK::None); };
    e->a = given(0) ? in.toDType(*a[0], "a_dtype") : DType(DType::Float16);
    e->b = given(1) ? in.toDType(*a[1], "b_dtype") : DType(DType::Float16);
    e->acc = given(2) ? in.toDType(*a[2], "accum_dtype") : DType(DType::Float16);
    if (given(3))
        e->aT = in.toBool(*a[3], "a_transposed");
    if (given(4))
        e->bT = in.toBool(*a[4], "b_transposed");
    int64_t *ints[] = {&e->rowWarps, &e->colWarps, &e->rowTiles,    &e->colTiles,
                       &e->chunk,    &e->reduceK,  &e->elemsPerByte};
    const char *names[] = {"block_row_warps", "block_col_warps", "warp_row_tiles",    "warp_col_tiles",
                           "chunk",           "reduce_k",        "num_elems_per_byte"};
    for (size_t i = 0; i < 7; ++i)
        if (given(5 + i))
            *ints[i] = in.toInt(*a[5 + i], names[i]);
    if (given(12))
        e->mFirst = in.toBool(*a[12], "is_m_first");
    if (given(13))
        e->threadVar = in.toExpr(*a[13], "thread_var");
    if (e->a.bits() != e->b.bits())
        in.fail(args.call, cls + " with a_dtype " + std::string(e->a.name()) + " and b_dtype " +
                               std::string(e->b.name()) + ": mma.sync's operands have one width");
    if (e->reduceK != 1)
        in.fail(a[10]->range, cls + " with reduce_k " + std::to_string(e->reduceK) +
                                  ": tilec emits the warp tiles of reduce_k 1 only");
    if (e->rowWarps <= 0 || e->colWarps <= 0)
        in.fail(args.call, cls + " needs at least one warp along each of M and N");
    derive(in, *e, args.call);
    return emitterObject(e);
}

} // namespace

Value mmaEmitterClass(const std::string &cls, bool bitblas) {
    return builtinFunction(
        cls, [cls, bitblas](InterpImpl &in, CallArgs &a) { return makeEmitter(in, a, cls, bitblas, false); });
}

Value ladderEmitterClass(const std::string &cls) {
    return builtinFunction(cls, [cls](InterpImpl &in, CallArgs &a) { return makeEmitter(in, a, cls, false, true); });
}

} // namespace tilec::eval
