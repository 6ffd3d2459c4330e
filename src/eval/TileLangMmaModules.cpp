/// \file
/// The modules of TileLang's intrinsics-level GEMM layer that tilec evaluates: 0.1.13's
/// tilelang.cuda.intrinsics (its macro.mma_macro_generator and layout.mma_layout) and 0.1.9's
/// tilelang.intrinsics (mma_macro_generator, mma_layout), with the emitter class of TileLangMmaEmitter.cpp
/// and TileLang's swizzle layouts:
///   - `get_swizzle_layout(row, col, row_size, dtype, swizzle_bytes=None)`: the 16-byte-chunk XOR swizzle of
///     rows of row_size elements, as (column tile, row, swizzled column); 0.1.9's returns (row, swizzled
///     column) of its own swizzle; `make_mma_swizzle_layout(buf)`: that swizzle as a T.Layout of a shared
///     buffer (a hint in tilec, TileLangLayout.cpp).
#include "eval/InterpImpl.h"
#include "eval/TileLang.h"

#include "tilec/IROperator.h"
#include "tilec/Lop3Decode.h"

namespace tilec::eval {

Value mmaEmitterClass(const std::string &cls, bool bitblas = false); // TileLangMmaEmitter.cpp
Value ladderEmitterClass(const std::string &cls);                    // TileLangMmaEmitter.cpp

namespace {

const std::string kGen = "tilelang.cuda.intrinsics.macro.mma_macro_generator";
const std::string kLayout = "tilelang.cuda.intrinsics.layout.mma_layout";
const std::string kLegacy = "tilelang.intrinsics"; ///< TileLang 0.1.9's name of the package

ir::Expr num(int64_t v) {
    return tl::constIndex(v);
}

/// get_swizzle_layout(row_idx, col_idx, row_size, dtype, swizzle_bytes=None): rows of row_size elements in
/// 16-byte chunks, `chunks` (swizzle_bytes / 16, swizzle_bytes the row's bytes up to 128) to a swizzle group.
/// TileLang 0.1.13 (tilelang.cuda.intrinsics): row r's chunk c moves to c XOR ((r % 8) / (8 / chunks)) within
/// its group, returned as (group, row, swizzled column within the group). TileLang 0.1.9
/// (tilelang.intrinsics, `legacy`): the chunk index XOR (r % chunks), returned as (row, swizzled column).
Value swizzleLayout(InterpImpl &in, CallArgs &args, bool legacy) {
    const std::string fname = (legacy ? kLegacy : kLayout) + ".get_swizzle_layout";
    auto a = bindArgs(in, args, fname, {"row_idx", "col_idx", "row_size", "dtype", "swizzle_bytes?"});
    const SourceRange &at = args.call;
    ir::Expr row = tl::intExprArg(in, *a[0], "row_idx"), col = tl::intExprArg(in, *a[1], "col_idx");
    const int64_t rowSize = in.toInt(*a[2], "row_size");
    const DType t = in.toDType(*a[3], "dtype");
    const int64_t rowBytes = t.bits() * rowSize / 8;
    if (rowBytes % 32)
        in.fail(a[2]->range, "get_swizzle_layout: rows of " + std::to_string(rowBytes) +
                                 " bytes; the row size must be a multiple of 32 bytes");
    int64_t swz = a[4] && !a[4]->value.is(VK::None) ? in.toInt(*a[4], "swizzle_bytes")
                                                    : std::min<int64_t>(128, rowBytes);
    const int64_t per16 = 128 / t.bits(), vecs = swz / 16;
    if (vecs != 2 && vecs != 4 && vecs != 8)
        in.fail(a[4]->range,
                "get_swizzle_layout: swizzle_bytes is 32, 64 or 128, got " + std::to_string(swz));
    auto v = [](ir::Expr x) {
        x = ir::simplify(x);
        auto c = ir::constInt(x);
        return c ? Value::integer(*c) : Value::ofExpr(x);
    };
    using B = ir::BinaryOp;
    auto f = [&](B o, ir::Expr x, int64_t c) { return ir::binary(o, x, num(c), at); };
    auto xorOf = [&](ir::Expr x, ir::Expr y) { return ir::binary(B::BitXor, x, y, at); };
    // the swizzled chunk back to an element column: chunk * per16 + the column's place in its chunk
    auto column = [&](ir::Expr c) {
        return ir::binary(B::Add, f(B::Mul, c, per16), f(B::FloorMod, col, per16), at);
    };
    ir::Expr chunk = f(B::FloorDiv, col, per16);
    if (legacy)
        return Value::tuple({v(row), v(column(xorOf(chunk, f(B::FloorMod, row, vecs))))});
    ir::Expr src = f(B::FloorDiv, f(B::FloorMod, row, 8), 8 / vecs);
    return Value::tuple(
        {v(f(B::FloorDiv, chunk, vecs)), v(row), v(column(xorOf(f(B::FloorMod, chunk, vecs), src)))});
}

/// BitBLAS's get_swizzle_layout(row_idx, col_idx, row_size, dtype) (bitblas.tl.utils), the swizzle TileLang's
/// came from: with e the elements of 16 bytes, chunk col / e of a row of a multiple of 128 bytes moves to
/// chunk XOR (row % e), of a row of a multiple of 64 bytes to chunk XOR ((row % e) / (elements of 4 bytes));
/// returned as (row, swizzled column). Other rows are BitBLAS's assertion, a located error.
Value bitblasSwizzleLayout(InterpImpl &in, CallArgs &args) {
    const std::string fname = "bitblas.tl.utils.get_swizzle_layout";
    auto a = bindArgs(in, args, fname, {"row_idx", "col_idx", "row_size", "dtype"});
    const SourceRange &at = args.call;
    ir::Expr row = tl::intExprArg(in, *a[0], "row_idx"), col = tl::intExprArg(in, *a[1], "col_idx");
    const DType t = in.toDType(*a[3], "dtype");
    const int64_t bits = t.bits(), rowBits = bits * in.toInt(*a[2], "row_size");
    if (bits > 32 || rowBits % 512)
        in.fail(a[2]->range, fname + ": rows of " + std::to_string(rowBits) + " bits of " +
                                 std::string(t.name()) + "; BitBLAS swizzles rows of a multiple of 512 bits");
    const int64_t per16 = 128 / bits;
    using B = ir::BinaryOp;
    auto f = [&](B o, ir::Expr x, int64_t c) { return ir::binary(o, x, num(c), at); };
    ir::Expr by = f(B::FloorMod, row, per16);
    if (rowBits % 1024)
        by = f(B::FloorDiv, by, 32 / bits);
    ir::Expr chunk = ir::binary(B::BitXor, f(B::FloorDiv, col, per16), by, at);
    ir::Expr swizzled =
        ir::simplify(ir::binary(B::Add, f(B::Mul, chunk, per16), f(B::FloorMod, col, per16), at));
    auto v = [](ir::Expr x) {
        auto c = ir::constInt(x);
        return c ? Value::integer(*c) : Value::ofExpr(x);
    };
    return Value::tuple({v(ir::simplify(row)), v(swizzled)});
}

/// make_mma_swizzle_layout(shared_buf, is_smooth=False): get_swizzle_layout on the last two dimensions when a
/// row is a multiple of 64 bytes, else the identity; a T.Layout of the buffer's shape.
Value mmaSwizzleLayout(InterpImpl &in, CallArgs &args, bool legacy) {
    const std::string fname = (legacy ? kLegacy : kLayout) + ".make_mma_swizzle_layout";
    auto a = bindArgs(in, args, fname, {"shared_buf", "is_smooth?"});
    if (!a[0]->value.is(VK::Buffer))
        in.fail(a[0]->range, fname + " takes a buffer");
    const ir::Buffer &b = a[0]->value.buffer;
    auto obj = std::make_shared<LayoutObj>();
    obj->range = args.call;
    obj->shape = b->shape;
    for (size_t d = 0; d < b->shape.size(); ++d)
        obj->vars.push_back(ir::makeVar("i" + std::to_string(d), DType::Int32, args.call));
    auto last = ir::constInt(b->shape.back());
    const bool smooth = a[1] && in.toBool(*a[1], "is_smooth");
    if (smooth || b->shape.size() < 2 || !last || (*last * b->dtype.bits()) % 512) {
        obj->forward.assign(obj->vars.begin(), obj->vars.end());
        return Value::object(VK::Layout, obj);
    }
    CallArgs call;
    call.call = args.call;
    call.callee = args.callee;
    size_t n = obj->vars.size();
    for (ir::Expr x : {ir::Expr(obj->vars[n - 2]), ir::Expr(obj->vars[n - 1])})
        call.pos.push_back({Value::ofExpr(x), args.call});
    call.pos.push_back({Value::integer(*last), args.call});
    call.pos.push_back({Value::ofDType(b->dtype), args.call});
    Value s = swizzleLayout(in, call, legacy);
    obj->forward.assign(obj->vars.begin(), obj->vars.end() - 2);
    for (const Value &x : s.as<TupleObj>().elts)
        obj->forward.push_back(x.is(VK::Int) ? num(x.i) : x.expr);
    return Value::object(VK::Layout, obj);
}

Value layoutFunctions(bool legacy, std::map<std::string, Value> m = {}) {
    const std::string n = legacy ? kLegacy + ".mma_layout" : kLayout;
    m["get_swizzle_layout"] =
        builtinFunction(n + ".get_swizzle_layout",
                        [legacy](InterpImpl &in, CallArgs &a) { return swizzleLayout(in, a, legacy); });
    m["make_mma_swizzle_layout"] =
        builtinFunction(n + ".make_mma_swizzle_layout",
                        [legacy](InterpImpl &in, CallArgs &a) { return mmaSwizzleLayout(in, a, legacy); });
    return partlyKnownModule(n, std::move(m));
}

/// The emitter module: TileLang's classes (TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform),
/// its TransformKind (the members as their ints), and the module's other names opaque. It is closed: a name
/// TileLang's module does not define (INT4TensorCoreIntrinEmitter, which 0.1.13 no longer has) is Python's
/// ImportError.
Value generatorModule(const std::string &dotted) {
    std::map<std::string, Value> m;
    m["TensorCoreIntrinEmitter"] = mmaEmitterClass("TensorCoreIntrinEmitter");
    m["TensorCoreIntrinEmitterWithLadderTransform"] = ladderEmitterClass("TensorCoreIntrinEmitterWithLadderTransform");
    m["TransformKind"] = partlyKnownModule(dotted + ".TransformKind", {{"NonTransform", Value::integer(0)},
                                                                      {"InterWarpTransform", Value::integer(1)},
                                                                      {"IntraWarpTransform", Value::integer(2)},
                                                                      {"LDMatrixTransform", Value::integer(3)}});
    for (const char *o : {"lift",
                          "T",
                          "DataType",
                          "tirx",
                          "tvm",
                          "Range",
                          "PrimExpr",
                          "IndexMap",
                          "Buffer",
                          "Var",
                          "BufferRegion",
                          "BufferLoad",
                          "convert",
                          "Literal",
                          "Callable",
                          "IntEnum",
                          "annotations",
                          "is_fragment",
                          "get_buffer_region_from_load",
                          "mma_store_index_map",
                          "mma_store_index_map_fp64",
                          "get_ldmatrix_offset"})
        m[o] = makeOpaque(dotted + "." + o, dotted.substr(0, dotted.find('.')));
    Value v = partlyKnownModule(dotted, std::move(m));
    v.as<ModuleObj>().opaque = false;
    return v;
}

/// BitBLAS's tile-language layer (bitblas.tl, TileLang's origin; its examples import `tvm` from `bitblas`):
/// its TensorCoreIntrinEmitter (TileLangMmaEmitter.cpp's, BitBLAS's flavour) and get_swizzle_layout; and
/// bitblas.gpu.intrin.lop3's decode_i4_to_f16, the C++ source of its decoders of 4-bit integers to float16 (a
/// kernel's prelude), as tilec provides it (include/tilec/Lop3Decode.h). The modules are open: BitBLAS's other
/// names are opaque.
std::optional<Value> bitblasModule(InterpImpl &in, const std::string &dotted) {
    if (dotted == "bitblas")
        return partlyKnownModule(dotted, {{"tvm", *in.knownModule("tvm")},
                                          {"tl", *in.knownModule("bitblas.tl")},
                                          {"gpu", *in.knownModule("bitblas.gpu")}});
    if (dotted == "bitblas.gpu")
        return partlyKnownModule(dotted, {{"intrin", *in.knownModule("bitblas.gpu.intrin")}});
    if (dotted == "bitblas.gpu.intrin")
        return partlyKnownModule(dotted, {{"lop3", *in.knownModule("bitblas.gpu.intrin.lop3")}});
    if (dotted == "bitblas.gpu.intrin.lop3")
        return partlyKnownModule(dotted, {{"decode_i4_to_f16", Value::str(lop3DecodeI4ToF16Source())}});
    if (dotted == "bitblas.tl")
        return partlyKnownModule(dotted,
                                 {{"mma_macro_generator", *in.knownModule(dotted + ".mma_macro_generator")},
                                  {"utils", *in.knownModule(dotted + ".utils")}});
    if (dotted == "bitblas.tl.utils")
        return partlyKnownModule(
            dotted,
            {{"get_swizzle_layout", builtinFunction(dotted + ".get_swizzle_layout", bitblasSwizzleLayout)}});
    if (dotted != "bitblas.tl.mma_macro_generator")
        return std::nullopt;
    Value v = generatorModule(dotted);
    auto &m = v.as<ModuleObj>();
    m.attrs.at("TensorCoreIntrinEmitter") = mmaEmitterClass("TensorCoreIntrinEmitter", true);
    m.opaque = true;
    return v;
}

} // namespace

std::optional<Value> mmaIntrinsicsModule(InterpImpl &in, const std::string &dotted) {
    if (dotted == "bitblas" || dotted.rfind("bitblas.", 0) == 0)
        return bitblasModule(in, dotted);
    if (dotted == kGen)
        return generatorModule(dotted);
    if (dotted == kLayout)
        return layoutFunctions(false);
    if (dotted == "tilelang.cuda.intrinsics.macro")
        return partlyKnownModule(dotted, {{"mma_macro_generator", *in.knownModule(kGen)}});
    if (dotted == "tilelang.cuda.intrinsics.layout") {
        auto &l = in.knownModule(kLayout)->as<ModuleObj>().attrs;
        return partlyKnownModule(dotted, {{"mma_layout", *in.knownModule(kLayout)},
                                          {"get_swizzle_layout", l.at("get_swizzle_layout")},
                                          {"make_mma_swizzle_layout", l.at("make_mma_swizzle_layout")}});
    }
    // TileLang 0.1.9's names: the same emitter, the older swizzle (swizzleLayout's `legacy`)
    if (dotted == kLegacy + ".mma_macro_generator")
        return generatorModule(dotted);
    if (dotted == kLegacy + ".mma_layout")
        return layoutFunctions(true);
    if (dotted == kLegacy) {
        auto &l = in.knownModule(kLegacy + ".mma_layout")->as<ModuleObj>().attrs;
        auto &g = in.knownModule(kLegacy + ".mma_macro_generator")->as<ModuleObj>().attrs;
        return partlyKnownModule(dotted,
                                 {{"mma_layout", *in.knownModule(kLegacy + ".mma_layout")},
                                  {"mma_macro_generator", *in.knownModule(kLegacy + ".mma_macro_generator")},
                                  {"get_swizzle_layout", l.at("get_swizzle_layout")},
                                  {"make_mma_swizzle_layout", l.at("make_mma_swizzle_layout")},
                                  {"TensorCoreIntrinEmitter", g.at("TensorCoreIntrinEmitter")},
                                  {"TensorCoreIntrinEmitterWithLadderTransform",
                                   g.at("TensorCoreIntrinEmitterWithLadderTransform")}});
    }
    return std::nullopt;
}

} // namespace tilec::eval
