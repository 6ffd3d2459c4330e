/// \file
/// The tile computations on on-chip buffers: T.gemm (with T.GemmWarpPolicy) and the T.reduce_* family.
/// Operand scopes, shapes (with transpose_A / transpose_B, with the reduced dimension) and dtypes are
/// checked here, so later passes can rely on a well-formed C (+)= op(A) @ op(B) and dst = reduce(src).
#include "eval/TileLang.h"
#include "tilec/passes/HonourProgramWaits.h"

namespace tilec::eval::tl {

namespace {

struct GemmOperand {
    Operand op;
    ir::Region region;
    int64_t rows = 0, cols = 0; ///< the last two extents
    std::string name;
};

/// A gemm operand: a buffer or a slice region of an on-chip buffer, 2-D once leading extents of 1 are
/// dropped, with constant extents.
GemmOperand gemmOperand(Interp &in, const Arg &a, const char *which) {
    GemmOperand g;
    std::string what = std::string("T.gemm operand ") + which;
    g.op = operandArg(in, a, what);
    if (g.op.origin)
        in.fail(a.range, what + " must be a buffer or a slice region, not a single element; write the region "
                                "with slices (start:stop)");
    g.region = explicitRegion(g.op);
    g.name = g.op.whole ? g.op.buffer->name : regionText(g.region);
    ir::Scope s = g.op.buffer->scope;
    if (TraceState *t = in.trace(); t && t->subByte.count(g.op.buffer.get())) {
        // On chip an int4 element is a byte holding its value, sign-extended (TileLangSubByte.cpp): the product of
        // int4 tiles is the int8 product of those bytes. uint4 and fp4 bytes hold codes, no operand type.
        SubByte k = t->subByte.at(g.op.buffer.get());
        const ir::Buffer &bytes = t->views.at(g.op.buffer.get());
        if (k != SubByte::Int4 || bytes->scope == ir::Scope::Global)
            in.fail(a.range, what + " '" + g.op.buffer->name + "' holds " + subByteName(k) +
                                 " elements: of the sub-byte types only int4 tiles on chip multiply (as int8)");
        g.region = ir::Region{bytes, g.region.ranges, g.region.loc};
    }
    bool isC = which[0] == 'C';
    if (isC && s != ir::Scope::Fragment)
        in.fail(a.range, "T.gemm accumulator C must be a fragment (T.alloc_fragment), but '" +
                             g.op.buffer->name + "' is " + ir::toString(s));
    if (!isC && s != ir::Scope::Shared && s != ir::Scope::Fragment)
        in.fail(a.range, what + " must be in shared memory or a fragment, but '" + g.op.buffer->name +
                             "' is " + ir::toString(s) + "; copy it to a T.alloc_shared buffer first");
    checkInBounds(in, g.region, a.range);
    auto ext = extentsOf(g.region);
    if (ext.size() < 2)
        in.fail(a.range, what + " must be 2-dimensional, but " + g.name + " is " + tupleText(ext));
    for (size_t i = 0; i + 2 < ext.size(); ++i)
        if (!isUnit(ext[i]))
            in.fail(a.range, what + " must be 2-dimensional, but " + g.name + " is " + tupleText(ext) +
                                 " (leading dimensions must be 1)");
    g.rows = *ir::constValue(ext[ext.size() - 2]); // constant: checkInBounds saw an on-chip buffer
    g.cols = *ir::constValue(ext.back());
    return g;
}

std::string shapeText(const GemmOperand &g) {
    return "(" + std::to_string(g.rows) + ", " + std::to_string(g.cols) + ")";
}

bool gemmInput(DType t) {
    return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Int8 ||
           t.isFloat8();
}

void checkDTypes(Interp &in, const CallArgs &args, const GemmOperand &A, const GemmOperand &B,
                 const GemmOperand &C) {
    DType ta = A.op.buffer->dtype, tb = B.op.buffer->dtype, tc = C.op.buffer->dtype;
    auto nm = [](DType t) { return std::string(t.name()); };
    if (!gemmInput(ta))
        in.fail(args.call, "T.gemm does not take " + nm(ta) + " inputs (" + A.name +
                               "); tensor cores take "
                               "float16, bfloat16, float32 (as tf32), int8 and float8");
    bool bothF8 = ta.isFloat8() && tb.isFloat8(); // e4m3 x e5m2 is a valid mixed fp8 product
    if (ta != tb && !bothF8)
        in.fail(args.call,
                "gemm dtypes do not agree: " + A.name + " is " + nm(ta) + " but " + B.name + " is " + nm(tb));
    bool ok =
        ta == DType::Int8 ? tc == DType::Int32 : (tc == DType::Float32 || (ta == DType::Float16 && tc == ta));
    if (!ok) {
        std::string want = ta == DType::Int8      ? "int32"
                           : ta == DType::Float16 ? "float32 (or float16)"
                                                  : "float32";
        in.fail(args.call, "gemm accumulator " + C.name + " is " + nm(tc) + ", but " + nm(ta) +
                               " inputs accumulate in " + want);
    }
}

/// T.gemm, or (`fname` "T.wgmma_gemm") TileLang's explicitly asynchronous Hopper product, whose wait the program
/// places itself with T.wait_wgmma: the product followed by the mark that says so (honourProgramWaits; on
/// mma.sync it is complete when the next statement starts, docs/LANGUAGE.md 4.17).
Value gemmAs(Interp &in, CallArgs &args, const std::string &fname) {
    std::vector<std::string> params{"A", "B", "C", "transpose_A?", "transpose_B?", "policy?", "clear_accum?"};
    if (fname == "T.gemm") params.insert(params.end(), {"k_pack?", "wg_wait?"});
    auto a = bindArgs(in, args, fname, params);
    a.resize(9);
    requireLaunch(in, args, fname);
    GemmOperand A = gemmOperand(in, *a[0], "A"), B = gemmOperand(in, *a[1], "B"),
                C = gemmOperand(in, *a[2], "C");
    bool tA = a[3] && boolArg(in, *a[3], "transpose_A");
    bool tB = a[4] && boolArg(in, *a[4], "transpose_B");
    // clear_accum known only at run time (`clear_accum=(j == 0)` in a loop over K tiles): C = A @ B where it
    // holds, C += A @ B elsewhere, i.e. C cleared under that condition, then accumulated into.
    ir::Expr clearWhen;
    if (a[6] && isScalarOperand(a[6]->value)) {
        clearWhen = in.toExpr(*a[6], "clear_accum");
        if (auto c = ir::constInt(clearWhen)) clearWhen = *c ? ir::intImm(1) : nullptr;
    } else if (a[6] && boolArg(in, *a[6], "clear_accum")) {
        clearWhen = ir::intImm(1);
    }
    bool clear = clearWhen && ir::constInt(clearWhen);

    ir::GemmPolicy policy = ir::GemmPolicy::Auto;
    if (a[5] && !a[5]->value.is(VK::None)) {
        auto p = constOf(a[5]->value);
        if (!p || a[5]->value.is(VK::Bool) || *p < 0 || *p > 2)
            in.fail(a[5]->range, "policy must be T.GemmWarpPolicy.Square, FullRow or FullCol");
        policy = *p == 0   ? ir::GemmPolicy::Square
                 : *p == 1 ? ir::GemmPolicy::FullRow
                           : ir::GemmPolicy::FullCol;
    }
    if (a[7]) {
        int64_t k = constIntArg(in, *a[7], "k_pack");
        if (k != 1 && k != 2)
            in.fail(a[7]->range, "k_pack must be 1 or 2");
    }
    if (a[8])
        (void)constIntArg(in, *a[8], "wg_wait");

    // A is (M, K), or (K, M) transposed; B is (K, N), or (N, K) transposed; C is (M, N).
    auto tag = [](const GemmOperand &g, bool t, const char *flag) {
        return g.name + (t ? std::string(" (") + flag + "=True)" : std::string());
    };
    int64_t mA = tA ? A.cols : A.rows, kA = tA ? A.rows : A.cols;
    int64_t kB = tB ? B.cols : B.rows, nB = tB ? B.rows : B.cols;
    auto mismatch = [&](const std::string &x, const GemmOperand &gx, int64_t vx, const std::string &y,
                        const GemmOperand &gy, int64_t vy, const char *dim) {
        in.fail(args.call, "gemm shapes do not agree: " + x + " is " + shapeText(gx) + " so " + dim + " = " +
                               std::to_string(vx) + ", but " + y + " is " + shapeText(gy) + " so " + dim +
                               " = " + std::to_string(vy));
    };
    if (kA != kB)
        mismatch(tag(A, tA, "transpose_A"), A, kA, tag(B, tB, "transpose_B"), B, kB, "K");
    if (mA != C.rows)
        mismatch(tag(A, tA, "transpose_A"), A, mA, C.name, C, C.rows, "M");
    if (nB != C.cols)
        mismatch(tag(B, tB, "transpose_B"), B, nB, C.name, C, C.cols, "N");
    checkDTypes(in, args, A, B, C);

    if (clearWhen && !clear) {
        ir::Stmt zero = ir::Fill::make(C.region, ir::cast(C.region.buffer->dtype, ir::intImm(0), args.call), args.call);
        in.emit(ir::IfThenElse::make(clearWhen, zero, nullptr, args.call));
    }
    in.emit(ir::Gemm::make(A.region, B.region, C.region, tA, tB, clear, policy, args.call));
    if (fname == "T.wgmma_gemm") in.emit(passes::programWaitsMark(args.call));
    return Value::none();
}

/// T.gemm_sp: C (+)= A @ B with A 2:4 structured-sparse along K, given as A_sparse (A's two kept values of each
/// group of four consecutive K elements, in order: (M, K/2)) and E, the metadata TileLang's sparse_utils.compress
/// writes in its natural row-major layout: E[m, j] holds the groups 4j .. 4j+3 of row m (K columns 16j ..
/// 16j+15) in its 4-bit nibbles from the lowest, each nibble the positions in its group of the two kept values
/// (bits 0-1 the first, bits 2-3 the second). One form is supported, the one mma.sp runs from it: 16-bit
/// operands (float16 or bfloat16) accumulating in float32, 16-bit metadata, A and E not transposed.
Value gemmSp(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.gemm_sp",
                      {"A_sparse", "E", "B", "C", "transpose_A?", "transpose_E?", "transpose_B?", "policy?", "clear_accum?",
                       "k_pack?", "wg_wait?"});
    a.resize(11);
    requireLaunch(in, args, "T.gemm_sp");
    GemmOperand A = gemmOperand(in, *a[0], "A_sparse"), E = gemmOperand(in, *a[1], "E"), B = gemmOperand(in, *a[2], "B"),
                C = gemmOperand(in, *a[3], "C");
    for (auto [g, i] : {std::pair{&A, 0}, {&E, 1}, {&B, 2}})
        if (g->op.buffer->scope != ir::Scope::Shared)
            in.fail(a[i]->range, "T.gemm_sp operand " + g->name + " must be in shared memory (T.alloc_shared); tilec's "
                                 "mma.sp reads A_sparse, E and B from shared tiles");
    for (auto [i, flag] : {std::pair{4, "transpose_A"}, {5, "transpose_E"}})
        if (a[i] && boolArg(in, *a[i], flag))
            in.fail(a[i]->range, std::string("T.gemm_sp with ") + flag + "=True is not supported: tilec reads A_sparse "
                                 "as (M, K/2) and E as (M, K/16), the layouts sparse_utils.compress writes");
    const bool tB = a[6] && boolArg(in, *a[6], "transpose_B");
    if (a[9] && constIntArg(in, *a[9], "k_pack") != 1) in.fail(a[9]->range, "T.gemm_sp takes k_pack=1 only");
    if (a[10]) (void)constIntArg(in, *a[10], "wg_wait");
    DType ta = A.op.buffer->dtype, tb = B.op.buffer->dtype, tc = C.op.buffer->dtype, te = E.op.buffer->dtype;
    auto nm = [](DType t) { return std::string(t.name()); };
    if ((ta != DType::Float16 && ta != DType::BFloat16) || tb != ta || tc != DType::Float32)
        in.fail(args.call, "T.gemm_sp of " + nm(ta) + " x " + nm(tb) + " into " + nm(tc) + " is not supported: tilec's "
                           "sparse products take float16 or bfloat16 operands (both alike) accumulating in float32");
    if (te != DType::Int16 && te != DType::UInt16)
        in.fail(a[1]->range, "T.gemm_sp metadata " + E.name + " is " + nm(te) + ", but tilec takes 16-bit metadata "
                             "(int16 or uint16: one element per 16 K columns) for " + nm(ta) + " operands");
    const int64_t M = C.rows, N = C.cols, K = 2 * A.cols;
    const int64_t kB = tB ? B.cols : B.rows, nB = tB ? B.rows : B.cols;
    auto shapes = [&](const std::string &what) { in.fail(args.call, "T.gemm_sp shapes do not agree: " + what); };
    if (A.rows != M)
        shapes(A.name + " is " + shapeText(A) + " so M = " + std::to_string(A.rows) + ", but " + C.name + " is " + shapeText(C));
    if (kB != K)
        shapes(A.name + " is " + shapeText(A) + " so K = 2 * " + std::to_string(A.cols) + " = " + std::to_string(K) + ", but " +
               B.name + (tB ? " (transpose_B=True)" : "") + " is " + shapeText(B) + " so K = " + std::to_string(kB));
    if (nB != N)
        shapes(B.name + (tB ? " (transpose_B=True)" : "") + " is " + shapeText(B) + " so N = " + std::to_string(nB) +
               ", but " + C.name + " is " + shapeText(C));
    if (K % 32)
        in.fail(args.call, "T.gemm_sp's K = " + std::to_string(K) + " must be a multiple of 32 (mma.sp's K for " +
                               nm(ta) + " operands)");
    if (E.rows != M || E.cols * 16 != K)
        shapes("the metadata " + E.name + " is " + shapeText(E) + ", but M = " + std::to_string(M) + " and K = " +
               std::to_string(K) + " need (" + std::to_string(M) + ", " + std::to_string(K / 16) + ")");
    ir::GemmPolicy policy = ir::GemmPolicy::Auto;
    if (a[7] && !a[7]->value.is(VK::None)) {
        auto p = constOf(a[7]->value);
        if (!p || a[7]->value.is(VK::Bool) || *p < 0 || *p > 2)
            in.fail(a[7]->range, "policy must be T.GemmWarpPolicy.Square, FullRow or FullCol");
        policy = *p == 0 ? ir::GemmPolicy::Square : *p == 1 ? ir::GemmPolicy::FullRow : ir::GemmPolicy::FullCol;
    }
    const bool clear = a[8] && boolArg(in, *a[8], "clear_accum");
    ir::Stmt g = ir::Gemm::make(A.region, B.region, C.region, false, tB, clear, policy, args.call);
    in.emit(ir::as<ir::Gemm>(g)->withMetadata(E.region));
    return Value::none();
}

// ---- reductions ----

ir::Buffer reduceBuffer(Interp &in, const Arg &a, const std::string &fname, const char *which) {
    if (!a.value.is(VK::Buffer)) {
        if (a.value.is(VK::Access))
            in.fail(a.range, fname + " takes whole buffers; pass '" + a.value.as<AccessObj>().buffer->name +
                                 "' without a subscript");
        in.fail(a.range, fname + " " + which + " must be a buffer, got " + typeName(a.value.kind));
    }
    const ir::Buffer &b = a.value.buffer;
    if (b->scope != ir::Scope::Fragment && b->scope != ir::Scope::Shared)
        in.fail(a.range, fname + " " + which + " must be a fragment or in shared memory, but '" + b->name +
                             "' is " + ir::toString(b->scope));
    return b;
}

Value reduce(Interp &in, CallArgs &args, ir::ReduceKind kind, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"buffer", "out", "dim?", "clear?"});
    requireLaunch(in, args, fname);
    ir::Buffer src = reduceBuffer(in, *a[0], fname, "source");
    ir::Buffer dst = reduceBuffer(in, *a[1], fname, "destination");
    int64_t ndim = (int64_t)src->shape.size();
    int64_t dim = a[2] ? constIntArg(in, *a[2], "dim") : -1;
    if (dim < -ndim || dim >= ndim)
        in.fail(a[2]->range, "dim=" + std::to_string(dim) + " is out of range for '" + src->name +
                                 "', which has " + std::to_string(ndim) + " dimension" +
                                 (ndim == 1 ? "" : "s"));
    if (dim < 0)
        dim += ndim;
    bool clear = a[3] ? boolArg(in, *a[3], "clear") : true;

    // The destination is the source's shape without `dim`, or with 1 there (as TileLang accepts); a 1-D
    // source reduces to a (1,) destination.
    std::vector<ir::Expr> dropped, kept;
    for (int64_t d = 0; d < ndim; ++d) {
        if (d != dim)
            dropped.push_back(src->shape[d]);
        kept.push_back(d == dim ? ir::intImm(1) : src->shape[d]);
    }
    if (!ir::provablyEqual(dst->shape, dropped) && !ir::provablyEqual(dst->shape, kept)) {
        std::string want = dropped.empty() ? "(1,)" : tupleText(dropped);
        in.fail(a[1]->range, fname + " destination '" + dst->name + "' is " + tupleText(dst->shape) +
                                 ", but '" + src->name + "' " + tupleText(src->shape) + " reduced over dim " +
                                 std::to_string(dim) + " is " + want);
    }
    DType ts = src->dtype, td = dst->dtype;
    // An integer source into a float destination (TileLang accepts it: each element converted, then reduced); a
    // float source into an integer destination stays refused (which it rounds, each element or the result, is
    // not pinned down).
    if (ts.isBool() || td.isBool() || (ts.isFloat() && !td.isFloat()))
        in.fail(args.call, fname + " cannot reduce " + std::string(ts.name()) + " '" + src->name + "' into " +
                               std::string(td.name()) + " '" + dst->name + "'");
    in.emit(ir::Reduce::make(kind, src, dst, (int)dim, clear, args.call));
    return Value::none();
}

} // namespace

void addGemmPrimitives(Attrs &attrs) {
    def(attrs, "gemm", [](Interp &in, CallArgs &args) { return gemmAs(in, args, "T.gemm"); });
    def(attrs, "wgmma_gemm", [](Interp &in, CallArgs &args) { return gemmAs(in, args, "T.wgmma_gemm"); });
    def(attrs, "gemm_sp", gemmSp);
    // TileLang's GemmWarpPolicy is an IntEnum, so the integers 0, 1, 2 are accepted as well.
    auto p = std::make_shared<ModuleObj>();
    p->name = "T.GemmWarpPolicy";
    p->attrs["Square"] = Value::integer(0);
    p->attrs["FullRow"] = Value::integer(1);
    p->attrs["FullCol"] = Value::integer(2);
    attrs["GemmWarpPolicy"] = Value::object(VK::Module, p);
}

void addReducePrimitives(Attrs &attrs) {
    static const std::pair<const char *, ir::ReduceKind> kinds[] = {
        {"reduce_max", ir::ReduceKind::Max},       {"reduce_min", ir::ReduceKind::Min},
        {"reduce_sum", ir::ReduceKind::Sum},       {"reduce_abssum", ir::ReduceKind::AbsSum},
        {"reduce_absmax", ir::ReduceKind::AbsMax},
    };
    for (auto &[name, kind] : kinds) {
        std::string fname = std::string("T.") + name;
        ir::ReduceKind k = kind;
        def(attrs, name, [fname, k](Interp &in, CallArgs &args) { return reduce(in, args, k, fname); });
    }
}

} // namespace tilec::eval::tl
