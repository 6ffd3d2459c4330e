/// \file
/// `T.reshape(buf, shape)` and `T.view(buf, shape, dtype)`: a buffer's elements under another shape, in
/// row-major order, sharing its memory. A view is indexed element by element: `v[i, j]` is the element of the
/// buffer at the same row-major position, so each access becomes an access of the viewed buffer (its indices
/// split and merged between the dimensions the two shapes group alike). Tile primitives take a whole view of a
/// fragment (recorded in Kernel::fragmentViews: its layout is the fragment's over the view's shape); on a view of
/// shared or global memory, or on a region of a view, they are located errors: a region of a view need not be a
/// region of the buffer. A view to another dtype (of as many bits) reads the buffer's bytes, at its elements'
/// row-major byte positions. Of a shared buffer it is a buffer of its own dtype over the same bytes
/// (tilec/SharedAliases.h: its own typed pointer, native loads, stores and atomics, which the vectorizers widen;
/// lowering places and swizzles it as its base and orders its accesses against the base's). Of local or fragment
/// memory each of its elements is a value joined from (or sliced out of) the buffer's elements, and a store
/// writes those elements; a narrower store, whose neighbours other threads may write, is a located error.
#include "eval/TileLang.h"

#include "tilec/IRVisitor.h"
#include "tilec/SharedAliases.h"

#include <algorithm>
#include <set>

namespace tilec::eval::tl {

namespace {

ir::Expr product(const std::vector<ir::Expr> &dims, size_t from, size_t to) {
    ir::Expr p = ir::intImm(1);
    for (size_t d = from; d < to; ++d) p = ir::simplify(ir::binary(ir::BinaryOp::Mul, p, dims[d]));
    return p;
}

/// Consecutive dimensions of the view ([v0, v1)) and of the buffer ([b0, b1)) that hold the same elements.
struct Group {
    size_t v0, v1, b0, b1;
};

/// The finest grouping of the two shapes into runs of equal element counts, scanning from the innermost
/// dimension; one group of everything when the runs cannot be proven equal (symbolic sizes).
std::vector<Group> groupDims(const std::vector<ir::Expr> &view, const std::vector<ir::Expr> &base) {
    std::vector<Group> out;
    size_t v = view.size(), b = base.size(), vEnd = v, bEnd = b;
    while (vEnd > 0 || bEnd > 0) { // the outermost group closes once both scans reach 0
        ir::Expr pv = product(view, v, vEnd), pb = product(base, b, bEnd);
        auto cv = ir::constValue(pv), cb = ir::constValue(pb);
        bool same = cv && cb ? *cv == *cb : ir::provablyEqual(pv, pb); // constants of any integer type
        if ((v < vEnd || b < bEnd) && same) {
            out.push_back({v, vEnd, b, bEnd});
            vEnd = v, bEnd = b;
            continue;
        }
        if (v == 0 && b == 0) break;
        bool takeView = b == 0 || (v > 0 && (cv && cb ? *cv <= *cb : vEnd - v <= bEnd - b));
        if (takeView) --v;
        else --b;
    }
    if (vEnd != 0 || bEnd != 0) return {{0, view.size(), 0, base.size()}};
    return out;
}

/// The buffer's indices of view element `idx` (one per view dimension).
std::vector<ir::Expr> baseIndices(const std::vector<ir::Expr> &view, const std::vector<ir::Expr> &base,
                                  const std::vector<ir::Expr> &idx) {
    std::vector<ir::Expr> out(base.size());
    for (auto &g : groupDims(view, base)) {
        ir::Expr flat = ir::intImm(0);
        for (size_t d = g.v0; d < g.v1; ++d)
            flat = ir::binary(ir::BinaryOp::Add, ir::binary(ir::BinaryOp::Mul, flat, view[d]), idx[d]);
        for (size_t d = g.b0; d < g.b1; ++d) {
            ir::Expr e = flat;
            if (d + 1 < g.b1) e = ir::binary(ir::BinaryOp::FloorDiv, e, product(base, d + 1, g.b1));
            if (d > g.b0) e = ir::binary(ir::BinaryOp::FloorMod, e, base[d]);
            out[d] = ir::simplify(e);
        }
    }
    return out;
}

std::string shapeText(const std::vector<ir::Expr> &s) { return tupleText(s); }

// ---- T.view to another dtype: the view's elements are the buffer's bytes, in the buffer's row-major order ----

/// The bits of a view of `dt` over `shape` equal the buffer's, or a located error that says how many elements
/// the view needs (or that the buffer's bits are no whole number of them).
void checkReinterpretedSize(Interp &in, const SourceRange &at, const std::string &fname, const ir::Buffer &base, DType dt,
                            const std::vector<ir::Expr> &shape) {
    ir::Expr n = product(shape, 0, shape.size()), m = product(base->shape, 0, base->shape.size());
    ir::Expr bits = ir::simplify(ir::binary(ir::BinaryOp::Mul, n, ir::intImm(dt.bits())));
    ir::Expr baseBits = ir::simplify(ir::binary(ir::BinaryOp::Mul, m, ir::intImm(base->dtype.bits())));
    if (ir::provablyEqual(bits, baseBits)) return;
    std::string what = fname + " of '" + base->name + "' " + shapeText(base->shape) + " " + std::string(base->dtype.name()) +
                       " as " + std::string(dt.name()) + ": a view to another dtype keeps the buffer's " + exprText(baseBits) + " bits, ";
    auto cb = ir::constValue(baseBits);
    if (cb && *cb % dt.bits() != 0)
        in.fail(at, what + "which are no whole number of " + std::string(dt.name()) + " elements");
    ir::Expr want = ir::simplify(ir::binary(ir::BinaryOp::FloorDiv, baseBits, ir::intImm(dt.bits())));
    in.fail(at, what + "so its shape must hold " + exprText(want) + " elements; " + shapeText(shape) + " holds " + exprText(n));
}

/// Piece `part` (0 .. r-1) of element `idx` of a view r times wider than `base`: the view's innermost dimension
/// counted in `base`'s elements, then mapped as a same-dtype view (so a view that keeps the rows keeps their
/// indices).
std::vector<ir::Expr> widePiece(const ir::Buffer &base, const ir::Buffer &view, const std::vector<ir::Expr> &idx, int r, int part) {
    std::vector<ir::Expr> shape = view->shape, at = idx;
    shape.back() = ir::simplify(ir::binary(ir::BinaryOp::Mul, shape.back(), ir::intImm(r)));
    at.back() = ir::simplify(ir::binary(ir::BinaryOp::Add, ir::binary(ir::BinaryOp::Mul, at.back(), ir::intImm(r)), ir::intImm(part)));
    return baseIndices(shape, base->shape, at);
}

/// The element of `base` that holds element `idx` of a view r times narrower, and the view element's slice of it
/// (0 .. r-1, lowest bits first).
std::pair<std::vector<ir::Expr>, ir::Expr> narrowHolder(const ir::Buffer &base, const ir::Buffer &view,
                                                        const std::vector<ir::Expr> &idx, int r) {
    std::vector<ir::Expr> shape = view->shape, at = idx;
    ir::Expr last = idx.back();
    auto inner = ir::constValue(shape.back());
    if (!inner || *inner % r != 0) { // the view's rows split the holders: count in the flattened view
        ir::Expr flat = ir::intImm(0);
        for (size_t d = 0; d < shape.size(); ++d)
            flat = ir::binary(ir::BinaryOp::Add, ir::binary(ir::BinaryOp::Mul, flat, shape[d]), idx[d]);
        shape = {product(view->shape, 0, view->shape.size())};
        last = ir::simplify(flat);
        at = {last};
    }
    shape.back() = ir::simplify(ir::binary(ir::BinaryOp::FloorDiv, shape.back(), ir::intImm(r)));
    at.back() = ir::simplify(ir::binary(ir::BinaryOp::FloorDiv, last, ir::intImm(r)));
    return {baseIndices(shape, base->shape, at), ir::simplify(ir::binary(ir::BinaryOp::FloorMod, last, ir::intImm(r)))};
}

DType bitsType(int bits) {
    switch (bits) {
    case 8: return DType::UInt8;
    case 16: return DType::UInt16;
    case 32: return DType::UInt32;
    default: return DType::UInt64;
    }
}

/// `x`'s bits as the unsigned integer of its width.
ir::Expr asBits(const ir::Expr &x) {
    DType u = bitsType(x->dtype.bits());
    return x->dtype == u ? x : ir::Call::make(u, "reinterpret", {x}, x->loc);
}

/// Unsigned bits `u` read as `t` (of the same width).
ir::Expr fromBits(DType t, const ir::Expr &u) { return t == u->dtype ? u : ir::Call::make(t, "reinterpret", {u}, u->loc); }

ir::Expr typed(int64_t v, DType t, const SourceRange &at) { return ir::intImm(v, t, at); }

/// Element `idx` of `view`, a T.view of `base` to a dtype of another width (or kind): a wider element joins
/// the bits of consecutive elements of `base` (the first the lowest, as in memory on the GPU); a narrower one
/// is its slice of the element of `base` that holds it.
ir::Expr reinterpretedLoad(const ir::Buffer &base, const ir::Buffer &view, const std::vector<ir::Expr> &idx,
                           const SourceRange &at) {
    const int vb = view->dtype.bits(), bb = base->dtype.bits();
    const DType uv = bitsType(vb), ub = bitsType(bb);
    if (vb == bb) return ir::Call::make(view->dtype, "reinterpret", {ir::Load::make(base, widePiece(base, view, idx, 1, 0), at)}, at);
    if (vb > bb) {
        ir::Expr word;
        for (int j = 0; j < vb / bb; ++j) {
            ir::Expr part = ir::cast(uv, asBits(ir::Load::make(base, widePiece(base, view, idx, vb / bb, j), at)), at);
            if (j > 0) part = ir::binary(ir::BinaryOp::Shl, part, typed(j * bb, uv, at), at);
            word = word ? ir::binary(ir::BinaryOp::BitOr, word, part, at) : part;
        }
        return fromBits(view->dtype, word);
    }
    auto [holder, slice] = narrowHolder(base, view, idx, bb / vb);
    ir::Expr bits = asBits(ir::Load::make(base, holder, at));
    ir::Expr shift = ir::binary(ir::BinaryOp::Mul, ir::cast(ub, slice, at), typed(vb, ub, at), at);
    return fromBits(view->dtype, ir::cast(uv, ir::binary(ir::BinaryOp::Shr, bits, shift, at), at));
}

/// Whether a view of `base` as `view` (another dtype, as many bytes) is a shared alias (tilec/SharedAliases.h), a
/// buffer of its own over the same bytes: a shared buffer of whole bytes viewed as whole bytes of at most 16 (so
/// that each of its elements lies in one 16-byte chunk, which every swizzle of shared memory moves whole). A
/// view of local or fragment memory is expanded element by element (reinterpretedLoad / reinterpretedStore).
bool aliasable(const ir::BufferNode &base, const ir::BufferNode &view) {
    const int vb = view.dtype.bits(), bb = base.dtype.bits();
    return base.scope == ir::Scope::Shared && view.dtype != base.dtype && vb % 8 == 0 && bb % 8 == 0 && vb <= 128 &&
           bb <= 128 && base.constElements() > 0 && view.constElements() > 0;
}

Value makeView(Interp &in, CallArgs &args, const std::string &fname, const std::optional<Arg> &src,
               const std::optional<Arg> &shapeArg, const std::optional<Arg> &dtypeArgument) {
    TraceState &t = requireLaunch(in, args, fname);
    if (!src->value.is(VK::Buffer))
        in.fail(src->range, fname + " takes a buffer, got " + std::string(typeName(src->value.kind)));
    ir::Buffer base = src->value.buffer;
    if (auto k = t.subByte.find(base.get()); k != t.subByte.end())
        in.fail(src->range, fname + " of '" + base->name + "', whose " + subByteName(k->second) +
                                " elements are no whole bytes, is not supported");
    if (auto it = t.views.find(base.get()); it != t.views.end()) base = it->second; // a view of a view
    if (base->scope == ir::Scope::Var)
        in.fail(src->range, fname + " of '" + base->name + "', a T.alloc_var: it holds one value, with no shape to change");
    DType dt = src->value.buffer->dtype;
    if (dtypeArgument && !dtypeArgument->value.is(VK::None)) dt = dtypeArg(in, *dtypeArgument);
    if (dt != base->dtype && (dt.isBool() || base->dtype.isBool()))
        in.fail(args.call, fname + " of '" + base->name + "' (" + std::string(base->dtype.name()) + ") as " +
                               std::string(dt.name()) + ": a bool has no bit pattern to reinterpret");
    std::vector<ir::Expr> shape = src->value.buffer->shape;
    if (shapeArg && !shapeArg->value.is(VK::None)) {
        shape.clear();
        auto dims = in.toSequence(*shapeArg, "shape");
        if (dims.empty()) in.fail(shapeArg->range, fname + " needs at least one dimension");
        for (size_t i = 0; i < dims.size(); ++i) {
            ir::Expr e = intExprArg(in, dims[i], "dimension " + std::to_string(i) + " of the shape");
            if (auto c = ir::constValue(e); c && *c <= 0)
                in.fail(dims[i].range, "dimension " + std::to_string(i) + " of the shape is " + std::to_string(*c) +
                                           "; dimensions must be positive");
            shape.push_back(ir::simplify(e));
        }
    }
    ir::Expr n = product(shape, 0, shape.size()), m = product(base->shape, 0, base->shape.size());
    if (dt != base->dtype) {
        checkReinterpretedSize(in, args.call, fname, base, dt, shape);
    } else if (!ir::provablyEqual(n, m)) {
        in.fail(args.call, fname + ": the shape " + shapeText(shape) + " has " + exprText(n) + " elements but '" +
                               base->name + "' " + shapeText(base->shape) + " has " + exprText(m));
    }
    std::string name = in.assignTargetName();
    auto view = ir::makeBuffer(uniqueBufferName(*t.kernel, name.empty() ? base->name + "_view" : name), base->scope,
                               dt, std::move(shape), args.call);
    t.views[view.get()] = base;
    if (aliasable(*base, *view)) t.kernel->allocs.push_back(view), t.kernel->fragmentViews.push_back({view, base});
    return Value::ofBuffer(view);
}

/// The views a statement mentions, each with the first place.
struct ViewUse : ir::IRVisitor {
    using ir::IRVisitor::visit;
    const std::map<const ir::BufferNode *, ir::Buffer> *views = nullptr;
    std::vector<std::pair<ir::Buffer, SourceRange>> found;
    std::set<const ir::BufferNode *> regions; ///< taken whole, or as a region (a tile primitive's operand)
    void note(const ir::Buffer &b, const SourceRange &r) {
        if (!b || !views->count(b.get())) return;
        for (auto &f : found)
            if (f.first == b) return;
        found.push_back({b, r});
    }
    void visitRegion(const ir::Region &r) override {
        // (an element T.atomic_add updates is an element access, whose region is that element)
        if (std::any_of(r.ranges.begin(), r.ranges.end(), [](auto &x) { return ir::constInt(x.extent) != std::optional<int64_t>(1); }))
            regions.insert(r.buffer.get());
        note(r.buffer, r.loc), ir::IRVisitor::visitRegion(r);
    }
    void visit(const ir::Load &op) override { note(op.buffer, op.loc), ir::IRVisitor::visit(op); }
    void visit(const ir::Store &op) override { note(op.buffer, op.loc), ir::IRVisitor::visit(op); }
    void visit(const ir::Reduce &op) override {
        regions.insert(op.src.get()), regions.insert(op.dst.get());
        note(op.src, op.loc), note(op.dst, op.loc), ir::IRVisitor::visit(op);
    }
};

} // namespace

Value viewAccess(Interp &in, const ir::Buffer &base, const AccessObj &acc) {
    if (!acc.isPoint()) {
        in.fail(acc.range, "'" + acc.buffer->name + "' is a T.reshape / T.view of '" + base->name +
                               "': index it element by element (a slice of it need not be a region of '" + base->name + "')");
    }
    if (TraceState *t = in.trace(); t && ir::storageOf(*t->kernel, acc.buffer.get()) != acc.buffer.get())
        return Value::object(VK::Access, std::make_shared<AccessObj>(acc)); // a shared alias: a buffer of its own
    auto out = std::make_shared<AccessObj>(acc);
    out->buffer = base;
    out->view = acc.buffer;
    std::vector<ir::Expr> idx;
    for (auto &i : acc.indices) idx.push_back(i.min);
    if (acc.buffer->dtype != base->dtype) // a value, not an element: nothing can write or take a region of it
        return Value::ofExpr(reinterpretedLoad(base, acc.buffer, idx, acc.range));
    auto mapped = baseIndices(acc.buffer->shape, base->shape, idx);
    out->indices.clear();
    for (auto &e : mapped) out->indices.push_back({e, nullptr, acc.range});
    return Value::object(VK::Access, out);
}

ir::Buffer reinterpretedBase(const TraceState &t, const ir::Buffer &view) {
    if (t.subByte.count(view.get())) return nullptr; // its elements are not bytes: TileLangSubByte.cpp
    if (ir::storageOf(*t.kernel, view.get()) != view.get()) return nullptr; // a shared alias: stored as itself
    auto it = t.views.find(view.get());
    return it != t.views.end() && it->second->dtype != view->dtype ? it->second : nullptr;
}

ir::Stmt reinterpretedStore(Interp &in, const ir::Buffer &base, const ir::Buffer &view, const std::vector<ir::Expr> &idx,
                            const ir::Expr &value, const SourceRange &at) {
    const int vb = view->dtype.bits(), bb = base->dtype.bits();
    if (vb < bb)
        in.fail(at, "storing into '" + view->name + "', a T.view of '" + base->name + "' (" + std::string(base->dtype.name()) +
                        ") as the narrower " + std::string(view->dtype.name()) + ", is not supported: it would rewrite part of a " +
                        std::string(base->dtype.name()) + " that other threads may be writing; store whole " +
                        std::string(base->dtype.name()) + " elements of '" + base->name + "' instead");
    const DType ub = bitsType(bb);
    ir::Expr bits = asBits(ir::cast(view->dtype, value, at));
    std::vector<ir::Stmt> stores;
    for (int j = 0; j < vb / bb; ++j) {
        ir::Expr part = j > 0 ? ir::binary(ir::BinaryOp::Shr, bits, typed(j * bb, bits->dtype, at), at) : bits;
        stores.push_back(ir::Store::make(base, widePiece(base, view, idx, vb / bb, j), fromBits(base->dtype, ir::cast(ub, part, at)), at));
    }
    return ir::Seq::make(std::move(stores), at);
}

void noteViews(Interp &in, TraceState &t, const ir::Stmt &s) {
    if (t.views.empty()) return;
    ViewUse u;
    u.views = &t.views;
    u.visit(s);
    for (auto &[view, at] : u.found) {
        const ir::Buffer &base = t.views.at(view.get());
        if (ir::storageOf(*t.kernel, view.get()) != view.get() && !u.regions.count(view.get())) continue; // a shared alias's elements
        if (auto k = t.subByte.find(view.get()); k != t.subByte.end())
            in.fail(at.valid() ? at : s->loc, "'" + view->name + "' holds " + subByteName(k->second) +
                                                  " elements (a sub-byte type): only its element accesses and T.copy take it");
        if (base->scope == ir::Scope::Fragment && base->dtype == view->dtype) { // same elements in the same threads: inferLayouts
            auto &fv = t.kernel->fragmentViews;
            if (std::none_of(fv.begin(), fv.end(), [&](auto &p) { return p.first == view; })) fv.push_back({view, base});
            continue;
        }
        in.fail(at.valid() ? at : s->loc,
                "'" + view->name + "' is a T.reshape / T.view of '" + base->name + "', which only element accesses (" +
                    view->name + "[i, ...]) can use; tile primitives take '" + base->name + "' itself");
    }
}

void addViewPrimitives(Attrs &attrs) {
    def(attrs, "reshape", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.reshape", {"src", "shape"});
        return makeView(in, args, "T.reshape", a[0], a[1], std::nullopt);
    });
    def(attrs, "view", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.view", {"src", "shape?", "dtype?"});
        return makeView(in, args, "T.view", a[0], a[1], a[2]);
    });
}

} // namespace tilec::eval::tl
