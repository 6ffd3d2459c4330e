/// \file
/// TileLang's sub-byte element types: T.int4, T.uint4 and T.float4_e2m1fn (fp4: a sign bit, two exponent bits,
/// one mantissa bit). A buffer of them is a view (TraceState::views, ::subByte) of the bytes that hold them, the
/// only buffer the IR sees: in global memory (the tensors callers pass) two elements to a byte (element 2k in the
/// low nibble, 2k + 1 in the high one, as torch packs them: the last dimension is halved); on chip (shared memory,
/// registers), which the kernel alone sees, one to a byte (the 4-bit code in the low bits; int4 sign-extended, so
/// that a T.gemm of int4 tiles is the int8 T.gemm of their bytes), so that any thread may store any element there. The C function takes the bytes (int8 for int4 and fp4, as torch passes them; uint8 for
/// uint4). An element read is a shift and a mask (int4 sign-extended, fp4 decoded to float32); an element store on
/// chip encodes the value (int4: its low four bits; fp4: rounded to nearest, ties to even, saturating at +-6, the
/// sign of a negative value kept); T.copy copies bytes where both sides are stored alike, else it is an
/// element-wise T.Parallel nest that writes whole bytes into packed memory (pairs of elements, never half of a byte
/// another thread may be writing). An element store into a packed tensor is a located error for that reason, and
/// so is every other use of such a buffer by a tile primitive (noteViews).
#include "eval/TileLang.h"
#include "tilec/LibraryCalls.h"

#include <functional>

namespace tilec::eval::tl {

using ir::BinaryOp;

namespace {

ir::Expr i32(int64_t v, const SourceRange &at) { return ir::intImm(v, DType::Int32, at); }
ir::Expr bin(BinaryOp o, ir::Expr a, ir::Expr b, const SourceRange &at) { return ir::binary(o, std::move(a), std::move(b), at); }
ir::Expr f32(double v, const SourceRange &at) { return ir::floatImm(v, DType::Float32, at); }

bool packedScope(ir::Scope s) { return s == ir::Scope::Global; }

/// Whether integer `e` is even for every value of its variables (a product with an even factor, a sum of even
/// terms, a constant).
bool provablyEven(const ir::Expr &e) {
    if (auto c = ir::constValue(e)) return *c % 2 == 0;
    if (auto *c = ir::as<ir::Cast>(e)) return c->value->dtype.isInt() && c->dtype.bits() > 1 && provablyEven(c->value);
    if (auto *b = ir::as<ir::Binary>(e)) {
        switch (b->op) {
        case BinaryOp::Mul: return provablyEven(b->a) || provablyEven(b->b);
        case BinaryOp::Add:
        case BinaryOp::Sub: return provablyEven(b->a) && provablyEven(b->b);
        case BinaryOp::Shl: return provablyEven(b->a) || ir::constValue(b->b).value_or(0) >= 1;
        default: break;
        }
    }
    return ir::provablyEqual(ir::simplify(ir::binary(BinaryOp::FloorMod, e, ir::intImm(2, e->dtype))), ir::intImm(0, e->dtype));
}

ir::Expr half(const ir::Expr &e) { return ir::simplify(ir::binary(BinaryOp::FloorDiv, e, ir::intImm(2, e->dtype))); }

/// The 4-bit code (int32, 0 .. 15) of element `idx` of `storage`, two to a byte when `packed`.
ir::Expr codeAt(const ir::Buffer &storage, bool packed, std::vector<ir::Expr> idx, const SourceRange &at) {
    if (!packed)
        return bin(BinaryOp::BitAnd, ir::cast(DType::Int32, ir::Load::make(storage, std::move(idx), at), at), i32(15, at), at);
    ir::Expr last = idx.back();
    idx.back() = half(last);
    ir::Expr shift = ir::simplify(bin(BinaryOp::Mul, bin(BinaryOp::FloorMod, ir::cast(DType::Int32, last, at), i32(2, at), at), i32(4, at), at));
    ir::Expr byte = ir::cast(DType::Int32, ir::Load::make(storage, std::move(idx), at), at); // int8: sign-extended,
    return bin(BinaryOp::BitAnd, bin(BinaryOp::Shr, byte, shift, at), i32(15, at), at);        // the mask drops it
}

/// The value of code `c`: int4 sign-extended to int8, uint4 as uint8, fp4 as float32 (exactly).
ir::Expr decode(SubByte k, const ir::Expr &c, const SourceRange &at) {
    switch (k) {
    case SubByte::Int4: return ir::cast(DType::Int8, bin(BinaryOp::Sub, bin(BinaryOp::BitXor, c, i32(8, at), at), i32(8, at), at), at);
    case SubByte::UInt4: return ir::cast(DType::UInt8, c, at);
    default: break;
    }
    // fp4 e2m1: exponent e (bias 1) and mantissa m; twice the magnitude is m when e = 0 (subnormal: 0, 0.5),
    // else (2 + m) << (e - 1): 2, 3, 4, 6, 8, 12.
    ir::Expr e = bin(BinaryOp::Shr, bin(BinaryOp::BitAnd, c, i32(7, at), at), i32(1, at), at);
    ir::Expr m = bin(BinaryOp::BitAnd, c, i32(1, at), at);
    ir::Expr twice = ir::select(bin(BinaryOp::EQ, e, i32(0, at), at), m,
                                bin(BinaryOp::Shr, bin(BinaryOp::Shl, bin(BinaryOp::Add, m, i32(2, at), at), e, at), i32(1, at), at), at);
    ir::Expr sign = ir::select(bin(BinaryOp::NE, bin(BinaryOp::BitAnd, c, i32(8, at), at), i32(0, at), at), f32(-0.5, at), f32(0.5, at), at);
    return bin(BinaryOp::Mul, ir::cast(DType::Float32, twice, at), sign, at);
}

/// The code (int32, 0 .. 15) of value `v` as a `k` element. Integers keep their low four bits (a float is
/// truncated to an integer first, as a C cast); fp4 rounds |v| to the nearest of 0, 0.5, 1, 1.5, 2, 3, 4, 6 (ties
/// to the even code, larger values and infinity to 6, NaN to 0) and sets the sign bit when v < 0: the device
/// library's conversion (stdlib/tilec/fp4.cuh, by integer arithmetic on the float's bits).
ir::Expr encode(SubByte k, const ir::Expr &v, const SourceRange &at) {
    if (k != SubByte::Float4E2M1) {
        ir::Expr x = v->dtype == DType::Int32 ? v : ir::cast(DType::Int32, v, at);
        return bin(BinaryOp::BitAnd, x, i32(15, at), at);
    }
    ir::Expr x = v->dtype == DType::Float32 ? v : ir::cast(DType::Float32, v, at);
    return passes::lib::call(passes::lib::Fn::Fp4Code, {std::move(x)}, at, DType::Int32);
}

/// The byte (int32, 0 .. 255) of codes `lo` (bits 0-3) and `hi` (bits 4-7): two fp4 conversions are one call of
/// the pair conversion.
ir::Expr pairOf(const ir::Expr &lo, const ir::Expr &hi, const SourceRange &at) {
    using passes::lib::Fn;
    if (passes::lib::is(lo, Fn::Fp4Code) && passes::lib::is(hi, Fn::Fp4Code))
        return passes::lib::call(Fn::Fp4x2Code, {ir::as<ir::Call>(lo)->args[0], ir::as<ir::Call>(hi)->args[0]}, at, DType::Int32);
    return bin(BinaryOp::BitOr, lo, bin(BinaryOp::Shl, hi, i32(4, at), at), at);
}

/// The storage byte of code `c` (int32, 0 .. 15), or of a `pair` of codes (0 .. 255: an int8 wraps). A lone int4
/// element (on chip) is its value sign-extended, -8 .. 7, so that a T.gemm reads the bytes as int8 operands.
ir::Expr asByte(DType storage, const ir::Expr &c, const SourceRange &at, bool pair = false, SubByte k = SubByte::None) {
    if (k == SubByte::Int4 && !pair) return decode(k, c, at);
    if (storage == DType::UInt8 || !pair) return ir::cast(storage, c, at);
    return ir::cast(DType::Int8, bin(BinaryOp::Sub, bin(BinaryOp::BitXor, c, i32(128, at), at), i32(128, at), at), at);
}

/// One side of a T.copy: the buffer the IR sees and the element type (None: an ordinary buffer).
struct Side {
    ir::Buffer buffer; ///< the storage of a sub-byte view, else the buffer itself
    SubByte k = SubByte::None;
    bool packed = false;
};

Side sideOf(TraceState &t, const ir::Buffer &b) {
    auto it = t.subByte.find(b.get());
    if (it == t.subByte.end()) return {b, SubByte::None, false};
    const ir::Buffer &s = t.views.at(b.get());
    return {s, it->second, packedScope(s->scope)};
}

std::string what(const ir::Buffer &view, const Side &s) {
    return "'" + view->name + "' (" + subByteName(s.k) + ", two to a byte in " + ir::toString(s.buffer->scope) + " memory)";
}

/// Whether region `r` of a packed buffer covers whole bytes: its last dimension starts at an even index and
/// spans an even number of elements.
bool wholeBytes(const ir::Region &r) { return provablyEven(r.ranges.back().min) && provablyEven(r.ranges.back().extent); }

ir::Region bytesOf(const ir::Region &r, const Side &s) {
    ir::Region out{s.buffer, r.ranges, r.loc};
    if (s.packed) out.ranges.back() = {half(r.ranges.back().min), half(r.ranges.back().extent)};
    return out;
}

std::vector<size_t> nonUnitDims(const ir::Region &r) {
    std::vector<size_t> d;
    for (size_t i = 0; i < r.ranges.size(); ++i)
        if (ir::constValue(r.ranges[i].extent) != std::optional<int64_t>(1)) d.push_back(i);
    return d;
}

/// The indices of region `r` at loop position `vars` (one per non-unit dimension `dims`).
std::vector<ir::Expr> indexAt(const ir::Region &r, const std::vector<size_t> &dims, const std::vector<ir::Expr> &vars,
                              const SourceRange &at) {
    std::vector<ir::Expr> idx;
    for (auto &rg : r.ranges) idx.push_back(rg.min);
    for (size_t j = 0; j < dims.size(); ++j) idx[dims[j]] = ir::simplify(bin(BinaryOp::Add, idx[dims[j]], vars[j], at));
    return idx;
}

/// A T.Parallel nest over `extents` (one variable per extent, outermost first) around `body(variables)`.
void emitNest(Interp &in, const std::vector<ir::Expr> &extents, const std::function<ir::Stmt(const std::vector<ir::Expr> &)> &body,
              const SourceRange &at) {
    std::vector<ir::Var> vars;
    std::vector<ir::Expr> pos;
    for (size_t j = 0; j < extents.size(); ++j) {
        vars.push_back(ir::makeVar(std::string(1, char('i' + j % 16)), DType::Int32, at));
        pos.push_back(vars.back());
    }
    ir::Stmt s = body(pos);
    for (size_t j = vars.size(); j-- > 0;) s = ir::For::make(vars[j], i32(0, at), extents[j], ir::ForKind::Parallel, 0, s, at);
    in.emit(s);
}

using Reader = std::function<ir::Expr(const std::vector<ir::Expr> &)>;

/// Writes dst (whose non-unit dimensions are `dd`) from `read` (at a position of those dimensions: the code of a
/// sub-byte dst, else the value): an element per iteration, or into packed memory a byte, two elements.
void storeNest(Interp &in, const Side &D, const ir::Region &dst, const std::vector<size_t> &dd, const Reader &read,
               const SourceRange &at) {
    std::vector<ir::Expr> extents;
    for (size_t j = 0; j < dd.size(); ++j) {
        ir::Expr ext = ir::cast(DType::Int32, dst.ranges[dd[j]].extent, at);
        extents.push_back(D.packed && j + 1 == dd.size() ? half(ext) : ext);
    }
    emitNest(in, extents, [&](const std::vector<ir::Expr> &pos) {
        if (!D.packed) {
            ir::Expr v = read(pos);
            ir::Expr stored = D.k == SubByte::None ? ir::cast(D.buffer->dtype, v, at) : asByte(D.buffer->dtype, v, at, false, D.k);
            return ir::Store::make(D.buffer, indexAt(dst, dd, pos, at), stored, at);
        }
        std::vector<ir::Expr> lo = pos, hi = pos;
        lo.back() = bin(BinaryOp::Mul, pos.back(), i32(2, at), at);
        hi.back() = bin(BinaryOp::Add, lo.back(), i32(1, at), at);
        ir::Expr byte = pairOf(read(lo), read(hi), at);
        std::vector<ir::Expr> idx = indexAt(dst, dd, pos, at);
        idx.back() = ir::simplify(bin(BinaryOp::Add, half(dst.ranges.back().min), pos.back(), at));
        return ir::Store::make(D.buffer, std::move(idx), asByte(D.buffer->dtype, byte, at, true), at);
    }, at);
}

/// The element-wise copy: a T.Parallel nest over dst's non-unit dimensions. Into packed memory it writes pairs;
/// from registers, whose elements a nest reads only where it iterates (never two of them), the codes first go to a
/// shared buffer of one byte each, which the pairs then read.
void elementwiseCopy(Interp &in, TraceState &t, const ir::Region &src, const ir::Region &dst, const SourceRange &at) {
    Side S = sideOf(t, src.buffer), D = sideOf(t, dst.buffer);
    std::vector<size_t> sd = nonUnitDims(src), dd = nonUnitDims(dst);
    TILEC_ASSERT(sd.size() == dd.size(), "subByteCopy: regions of other extents");
    if (D.packed && (dd.empty() || dd.back() + 1 != dst.ranges.size() || !wholeBytes(dst)))
        in.fail(at, "T.copy into " + what(dst.buffer, D) + " writes whole bytes, pairs of elements along its last dimension: "
                        "the region must span the last dimension from an even index over an even number of elements, not " +
                        tupleText(extentsOf(dst)) + " from " + exprText(dst.ranges.back().min));
    Reader read = [&](const std::vector<ir::Expr> &p) { // the code (or value) of source element `p`
        std::vector<ir::Expr> idx = indexAt(src, sd, p, at);
        if (S.k == SubByte::None) {
            ir::Expr v = ir::Load::make(S.buffer, idx, at);
            return D.k == SubByte::None ? v : encode(D.k, v, at);
        }
        ir::Expr c = codeAt(S.buffer, S.packed, std::move(idx), at);
        if (S.k == D.k) return c; // the same type: the code itself (fp4's -0 stays -0)
        ir::Expr v = decode(S.k, c, at);
        return D.k == SubByte::None ? v : encode(D.k, v, at);
    };
    bool registers = S.buffer->scope == ir::Scope::Fragment || S.buffer->scope == ir::Scope::Local;
    if (!D.packed || !registers) return storeNest(in, D, dst, dd, read, at);
    if (t.kernel->allocs.size() >= 4096) in.fail(at, "T.copy: the kernel allocates more than 4096 buffers");
    std::vector<ir::Expr> shape;
    for (size_t d : dd) shape.push_back(ir::cast(DType::Int32, dst.ranges[d].extent, at));
    ir::Buffer codes = ir::makeBuffer(uniqueBufferName(*t.kernel, D.buffer->name + "_codes"), ir::Scope::Shared, DType::Int8, shape, at);
    t.kernel->allocs.push_back(codes);
    Side C{codes, D.k, false};
    ir::Region all = ir::Region::whole(codes, at);
    std::vector<size_t> cd(shape.size());
    for (size_t j = 0; j < cd.size(); ++j) cd[j] = j;
    storeNest(in, C, all, cd, read, at);
    storeNest(in, D, dst, dd, [&](const std::vector<ir::Expr> &p) { return codeAt(codes, false, p, at); }, at);
}

} // namespace

SubByte subByteArg(const Arg &a) {
    if (!a.value.is(VK::Str)) return SubByte::None;
    const std::string &s = a.value.s;
    if (s == "int4") return SubByte::Int4;
    if (s == "uint4") return SubByte::UInt4;
    if (s == "float4_e2m1fn") return SubByte::Float4E2M1;
    return SubByte::None;
}

const char *subByteName(SubByte k) {
    switch (k) {
    case SubByte::Int4: return "int4";
    case SubByte::UInt4: return "uint4";
    case SubByte::Float4E2M1: return "float4_e2m1fn";
    default: return "none";
    }
}

DType subByteStorage(SubByte k) { return k == SubByte::UInt4 ? DType::UInt8 : DType::Int8; }

std::vector<ir::Expr> subByteStorageShape(Interp &in, ir::Scope scope, const std::vector<ir::Expr> &shape,
                                          const std::string &name, SubByte k, const SourceRange &at) {
    if (!packedScope(scope)) return shape;
    std::vector<ir::Expr> out = shape;
    if (!provablyEven(shape.back()))
        in.fail(at, "'" + name + "' holds " + subByteName(k) + " elements two to a byte, so the last dimension of its shape " +
                        tupleText(shape) + " must be even; '" + exprText(shape.back()) + "' is " +
                        (ir::constValue(shape.back()) ? "odd" : "not provably even"));
    out.back() = half(shape.back());
    return out;
}

ir::Buffer subByteView(TraceState &t, const ir::Buffer &storage, SubByte k, std::vector<ir::Expr> shape) {
    DType value = k == SubByte::Int4 ? DType::Int8 : k == SubByte::UInt4 ? DType::UInt8 : DType::Float32;
    auto view = ir::makeBuffer(storage->name, storage->scope, value, std::move(shape), storage->loc);
    t.views[view.get()] = storage;
    t.subByte[view.get()] = k;
    return view;
}

ir::Expr subByteLoad(TraceState &t, const ir::Buffer &view, const std::vector<ir::Expr> &idx, const SourceRange &at) {
    const ir::Buffer &storage = t.views.at(view.get());
    return decode(t.subByte.at(view.get()), codeAt(storage, packedScope(storage->scope), idx, at), at);
}

ir::Stmt subByteStore(Interp &in, TraceState &t, const ir::Buffer &view, const std::vector<ir::Expr> &idx,
                      const ir::Expr &value, const SourceRange &at) {
    Side s = sideOf(t, view);
    if (s.packed)
        in.fail(at, "storing one element of " + what(view, s) + " is not supported: the other element of its byte may be "
                        "another thread's. Compute the elements into a T.alloc_fragment (or T.alloc_shared) of " + subByteName(s.k) +
                        " and T.copy it here (a copy writes whole bytes)");
    return ir::Store::make(s.buffer, idx, asByte(s.buffer->dtype, encode(s.k, value, at), at, false, s.k), at);
}

void subByteCopy(Interp &in, TraceState &t, const ir::Region &src, const ir::Region &dst, const SourceRange &at) {
    Side S = sideOf(t, src.buffer), D = sideOf(t, dst.buffer);
    bool sameBytes = S.k == D.k && S.packed == D.packed && nonUnitDims(src) == nonUnitDims(dst) &&
                     (!S.packed || (wholeBytes(src) && wholeBytes(dst) && !nonUnitDims(src).empty() &&
                                    nonUnitDims(src).back() + 1 == src.ranges.size()));
    if (sameBytes) return in.emit(ir::Copy::make(bytesOf(src, S), bytesOf(dst, D), at));
    elementwiseCopy(in, t, src, dst, at);
}

} // namespace tilec::eval::tl
