/// \file
/// Buffer regions as tile primitives take them, T.copy and T.atomic_add.
///
/// A subscript of plain indices (`A[by * 128, k * 64]`) names only a region's origin; its extents come from
/// the other operand, aligned to the right as TileLang does. TileLang then silently reads out of bounds
/// when the right-aligned region exceeds the tensor (FlashAttention's `Q[bz, bx * 64, by, 0]` with a
/// (64, 64) tile would span the 8 heads). tilec instead looks for the in-order placements of the tile's
/// non-unit extents that fit the tensor: exactly one is taken with a warning, none or several are an error,
/// both with the slice form that says what is meant.
#include "eval/TileLang.h"

#include "tilec/LibraryCalls.h"
#include "tilec/passes/Arith.h"

#include <set>

namespace tilec::eval::tl {

bool isUnit(const ir::Expr &e) {
    return ir::constValue(e) == std::optional<int64_t>(1);
}

Operand operandArg(Interp &in, const Arg &a, const std::string &what) {
    Operand op;
    op.range = a.range;
    if (a.value.is(VK::Buffer)) {
        op.buffer = a.value.buffer;
        op.whole = true;
        for (auto &d : op.buffer->shape) {
            op.mins.push_back(ir::intImm(0));
            op.extents.push_back(d);
        }
        return op;
    }
    if (!a.value.is(VK::Access))
        in.fail(a.range, what + " must be a buffer or a buffer region, got " + typeName(a.value.kind));
    const AccessObj &acc = a.value.as<AccessObj>();
    if (acc.view) // its indices are the buffer's element, not the corner of a region of it
        in.fail(acc.range, "'" + acc.view->name + "' is a T.reshape / T.view of '" + acc.buffer->name +
                               "': tile primitives take '" + acc.buffer->name + "' itself, not an element of a view");
    op.buffer = acc.buffer;
    op.range = acc.range.valid() ? acc.range : a.range;
    size_t ndim = op.buffer->shape.size();
    if (acc.indices.size() != ndim)
        in.fail(op.range, "buffer '" + op.buffer->name + "' has " + std::to_string(ndim) + " dimension" +
                              (ndim == 1 ? "" : "s") + " but is indexed with " +
                              std::to_string(acc.indices.size()) + " ind" +
                              (acc.indices.size() == 1 ? "ex" : "ices"));
    op.origin = true;
    for (auto &ix : acc.indices)
        op.origin = op.origin && !ix.extent;
    for (size_t d = 0; d < ndim; ++d) {
        const AccessIndex &ix = acc.indices[d];
        SourceRange r = ix.range.valid() ? ix.range : op.range;
        if (!ix.min || !ix.min->dtype.isInt())
            in.fail(r, "index " + std::to_string(d) + " of '" + op.buffer->name + "' must be an integer");
        op.mins.push_back(ix.min);
        op.indexRanges.push_back(r);
        if (op.origin)
            continue;
        ir::Expr ext = ix.extent ? ix.extent : ir::intImm(1);
        if (auto c = ir::constValue(ext); c && *c <= 0)
            in.fail(r, "the slice of '" + op.buffer->name + "' in dimension " + std::to_string(d) +
                           " is empty (" + std::to_string(*c) + " elements)");
        op.extents.push_back(ext);
    }
    return op;
}

ir::Region explicitRegion(const Operand &op) {
    TILEC_ASSERT(!op.origin, "explicitRegion of an origin");
    ir::Region r{op.buffer, {}, op.range};
    for (size_t d = 0; d < op.mins.size(); ++d)
        r.ranges.push_back({op.mins[d], op.extents[d]});
    return r;
}

std::vector<ir::Expr> extentsOf(const ir::Region &r) {
    std::vector<ir::Expr> out;
    for (auto &rg : r.ranges)
        out.push_back(rg.extent);
    return out;
}

namespace {

/// `min:min + extent`, or the point `min` when the extent is 1.
std::string rangeText(const ir::Expr &min, const ir::Expr &ext) {
    if (isUnit(ext))
        return exprText(min);
    auto m = ir::constValue(min), e = ir::constValue(ext);
    if (m && e)
        return std::to_string(*m) + ":" + std::to_string(*m + *e);
    if (m && *m == 0)
        return "0:" + exprText(ext);
    return exprText(min) + ":" + exprText(ir::simplify(ir::binary(ir::BinaryOp::Add, min, ext)));
}

/// Whether `ext` starting at `min` provably does not fit a dimension of size `size`.
bool exceeds(const ir::Expr &min, const ir::Expr &ext, const ir::Expr &size) {
    auto e = ir::constValue(ext), s = ir::constValue(size), m = ir::constValue(min);
    if (!e || !s)
        return false;
    return *e > *s || (m && (*m < 0 || *m + *e > *s));
}

std::string dimsText(const std::vector<size_t> &dims) {
    if (dims.size() == 1)
        return "dim " + std::to_string(dims[0]);
    std::string s = "dims ";
    for (size_t i = 0; i < dims.size(); ++i)
        s += (i == 0 ? "" : i + 1 == dims.size() ? " and " : ", ") + std::to_string(dims[i]);
    return s;
}

/// In-order placements of `exts` into the dimensions of `op` that provably fit; stops at `limit`.
struct Placer {
    const Operand &op;
    const std::vector<ir::Expr> &exts;
    std::vector<std::vector<char>> reach; // reach[d][j]: exts[j..] can be placed into dims d..
    std::vector<std::vector<size_t>> found;
    std::vector<size_t> cur;

    bool fits(size_t d, size_t j) const { return !exceeds(op.mins[d], exts[j], op.buffer->shape[d]); }

    void run(size_t limit) {
        size_t n = op.mins.size(), k = exts.size();
        reach.assign(n + 1, std::vector<char>(k + 1, 0));
        for (size_t d = 0; d <= n; ++d)
            reach[d][k] = 1;
        for (size_t d = n; d-- > 0;)
            for (size_t j = k; j-- > 0;)
                reach[d][j] = reach[d + 1][j] || (fits(d, j) && reach[d + 1][j + 1]);
        if (reach[0][0])
            walk(0, 0, limit);
    }
    // Every step keeps a completion possible (reach), so finding `limit` placements costs O(limit * n * k);
    // the depth is at most k, the tile's rank.
    void walk(size_t d0, size_t j, size_t limit) {
        if (j == exts.size()) {
            found.push_back(cur);
            return;
        }
        for (size_t d = d0; d < op.mins.size() && found.size() < limit; ++d) {
            if (!fits(d, j) || !reach[d + 1][j + 1])
                continue;
            cur.push_back(d);
            walk(d + 1, j + 1, limit);
            cur.pop_back();
        }
    }
};

ir::Region placedRegion(const Operand &op, const std::vector<ir::Expr> &exts,
                        const std::vector<size_t> &dims) {
    ir::Region r{op.buffer, {}, op.range};
    for (size_t d = 0; d < op.mins.size(); ++d)
        r.ranges.push_back({op.mins[d], ir::intImm(1)});
    for (size_t j = 0; j < dims.size(); ++j)
        r.ranges[dims[j]].extent = exts[j];
    return r;
}

} // namespace

std::string regionText(const ir::Region &r) {
    std::string s = r.buffer->name + "[";
    for (size_t d = 0; d < r.ranges.size(); ++d)
        s += (d ? ", " : "") + rangeText(r.ranges[d].min, r.ranges[d].extent);
    return s + "]";
}

ir::Region resolveRegion(Interp &in, const Operand &op, const std::vector<ir::Expr> &extents, bool writes) {
    if (!op.origin)
        return explicitRegion(op);
    size_t n = op.mins.size(), m = extents.size();
    ir::Region r{op.buffer, {}, op.range};
    std::optional<size_t> bad;
    for (size_t d = 0; d < n; ++d) {
        ir::Expr ext = d + m >= n ? extents[d + m - n] : ir::intImm(1);
        if (!bad && exceeds(op.mins[d], ext, op.buffer->shape[d]))
            bad = d;
        r.ranges.push_back({op.mins[d], ext});
    }
    // A tile of the tensor's rank has one placement: where it passes the end of a global tensor (a 64-row
    // tile of a 16-row matrix) it is a partial tile, which the lowering bounds like any ragged edge.
    if (!bad || (m >= n && op.buffer->scope == ir::Scope::Global))
        return r;

    std::vector<ir::Expr> nonUnit;
    for (auto &e : extents)
        if (!isUnit(e))
            nonUnit.push_back(e);
    // A single element out of bounds: no placement changes that (on-chip buffers fail checkInBounds).
    if (nonUnit.empty())
        return r;
    Placer p{op, nonUnit, {}, {}, {}};
    // Deep tensors are not searched: the walk is cheap, but the message would not help anyone either.
    if (n <= 32)
        p.run(2);

    const std::string &name = op.buffer->name;
    std::vector<size_t> span;
    for (size_t d = m >= n ? 0 : n - m; d < n; ++d)
        span.push_back(d);
    std::string spanText = span.size() == 1
                               ? "dim " + std::to_string(span[0])
                               : "dims " + std::to_string(span.front()) + "-" + std::to_string(span.back());
    std::string reading = "right-aligned, the " + tupleText(extents) + " tile would span " + spanText +
                          " (dim " + std::to_string(*bad) + " has size " + exprText(op.buffer->shape[*bad]) +
                          ") and " + (writes ? "write" : "read") + " out of bounds";
    if (p.found.size() == 1) {
        ir::Region placed = placedRegion(op, nonUnit, p.found[0]);
        in.warn(op.range, "region of '" + name + "' is ambiguous: " + reading + "; using " +
                              dimsText(p.found[0]) + " instead");
        in.note(op.range, "write " + regionText(placed) + " to say so");
        return placed;
    }
    if (p.found.empty()) {
        in.diag().error(op.range, "region of '" + name + "' does not fit: " + reading +
                                      ", and no other placement of the tile fits either");
        in.note(op.range, "write the region with slices (start:stop) in the dimensions it spans");
    } else {
        in.diag().error(op.range, "region of '" + name + "' is ambiguous: " + reading +
                                      ", and the tile fits " + dimsText(p.found[0]) + " as well as " +
                                      dimsText(p.found[1]));
        in.note(op.range, "write " + regionText(placedRegion(op, nonUnit, p.found[0])) +
                              " (or slice the other " + "dimensions) to say which");
    }
    throw EvalAbort{};
}

void checkInBounds(Interp &in, const ir::Region &r, const SourceRange &at) {
    if (r.buffer->scope == ir::Scope::Global)
        return; // global accesses are guarded at run time
    for (size_t d = 0; d < r.ranges.size(); ++d) {
        if (!ir::constValue(r.ranges[d].extent))
            in.fail(at, "region " + regionText(r) + " of on-chip buffer '" + r.buffer->name +
                            "' must have constant extents; '" + exprText(r.ranges[d].extent) +
                            "' is only known at run time");
        if (exceeds(r.ranges[d].min, r.ranges[d].extent, r.buffer->shape[d]))
            in.fail(at, "region " + regionText(r) + " lies outside '" + r.buffer->name +
                            "', whose shape is " + tupleText(r.buffer->shape) + " (dimension " +
                            std::to_string(d) + ")");
    }
}

namespace {

std::string describe(const Operand &op, const ir::Region &r) {
    if (op.whole)
        return op.buffer->name;
    if (!op.origin)
        return regionText(r);
    std::string s = op.buffer->name + "[";
    for (size_t d = 0; d < op.mins.size(); ++d)
        s += (d ? ", " : "") + exprText(op.mins[d]);
    return s + "]";
}

/// The extents of two regions must agree once extents of 1 are dropped (a (1, 64) row copies to (64,)).
bool extentsMatch(const ir::Region &a, const ir::Region &b) {
    std::vector<ir::Expr> x, y;
    for (auto &r : a.ranges)
        if (!isUnit(r.extent))
            x.push_back(r.extent);
    for (auto &r : b.ranges)
        if (!isUnit(r.extent))
            y.push_back(r.extent);
    return ir::provablyEqual(x, y);
}

/// Resolves a pair of operands (at most one of them an origin) to regions and checks them.
std::pair<ir::Region, ir::Region> regionPair(Interp &in, const CallArgs &args, const Operand &s,
                                             const Operand &d, const char *srcWord, const char *dstWord,
                                             const std::string &fname) {
    ir::Region sr, dr;
    if (s.origin) {
        dr = explicitRegion(d);
        sr = resolveRegion(in, s, extentsOf(dr), false);
    } else {
        sr = explicitRegion(s);
        dr = resolveRegion(in, d, extentsOf(sr), true);
    }
    if (!extentsMatch(sr, dr))
        in.fail(args.call, fname + " extents do not match: " + srcWord + " " + describe(s, sr) + " is " +
                               tupleText(extentsOf(sr)) + " but " + dstWord + " " + describe(d, dr) + " is " +
                               tupleText(extentsOf(dr)));
    checkInBounds(in, sr, s.range);
    checkInBounds(in, dr, d.range);
    return {sr, dr};
}

/// A copy of two single elements, which TileLang lowers to a plain store: emits it and says so.
bool elementCopy(Interp &in, CallArgs &args, const Operand &s, const Operand &d) {
    if (!s.origin || !d.origin) return false;
    ir::Expr v = ir::Load::make(s.buffer, s.mins, s.range);
    in.emit(ir::Store::make(d.buffer, d.mins, ir::cast(d.buffer->dtype, v, args.call), args.call));
    return true;
}

Value copy(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.copy",
                      {"src", "dst", "coalesced_width?", "disable_tma?", "eviction_policy?", "annotations?",
                       "loop_layout?"});
    requireLaunch(in, args, "T.copy");
    Operand s = operandArg(in, *a[0], "T.copy source"), d = operandArg(in, *a[1], "T.copy destination");
    if (elementCopy(in, args, s, d)) return Value::none();
    auto [sr, dr] = regionPair(in, args, s, d, "source", "destination", "copy");
    TraceState &t = *in.trace();
    if (t.subByte.count(sr.buffer.get()) || t.subByte.count(dr.buffer.get())) subByteCopy(in, t, sr, dr, args.call);
    else in.emit(ir::Copy::make(sr, dr, args.call));
    return Value::none();
}

/// A T.async_copy's loop_layout (a T.Fragment over the copied region (R, C)) as the row-blocked thread map it
/// is: thread i * T + (j / V) % T holds element (i, j) (TileKernels' engram: 64 threads a row, runs of 8), so
/// (T, V); (0, 0) for any other layout. Its forward_fn is traced with one variable per dimension and evaluated
/// at every element.
std::pair<int64_t, int64_t> rowBlocked(Interp &in, const Arg &layout) {
    const std::pair<int64_t, int64_t> none{0, 0};
    if (!layout.value.is(VK::Layout)) return none;
    const LayoutObj &l = layout.value.as<LayoutObj>();
    if (!l.fragment || l.forwardFn.is(VK::None) || l.shape.size() != 2) return none;
    auto R = ir::constInt(l.shape[0]), C = ir::constInt(l.shape[1]);
    if (!R || !C || *R <= 0 || *C <= 0 || *R * *C > (1 << 20)) return none;
    CallArgs call;
    call.call = l.range;
    call.callee = l.range;
    std::vector<ir::Var> vars{ir::makeVar("i", DType::Int32, l.range), ir::makeVar("j", DType::Int32, l.range)};
    for (auto &v : vars) call.pos.push_back({Value::ofExpr(v), l.range});
    Value out = in.callValue(l.forwardFn, call);
    if (!out.is(VK::Tuple) && !out.is(VK::List)) return none;
    std::vector<Arg> idx = in.toSequence(Arg{out, l.range}, "T.Fragment's output");
    if (idx.empty()) return none;
    ir::Expr thread = intExprArg(in, idx[0], "T.Fragment's thread");
    auto at = [&](int64_t i, int64_t j) { return passes::evalInt(thread, {{vars[0].get(), i}, {vars[1].get(), j}}); };
    int64_t V = 1;
    while (V < *C && at(0, V) == at(0, 0)) ++V;
    std::set<int64_t> row0;
    for (int64_t j = 0; j < *C; ++j) row0.insert(at(0, j).value_or(-1));
    const int64_t T = (int64_t)row0.size();
    if (*C % (T * V)) return none;
    for (int64_t i = 0; i < *R; ++i)
        for (int64_t j = 0; j < *C; ++j)
            if (at(i, j) != std::optional<int64_t>(i * T + (j / V) % T)) return none;
    return {T, V};
}

/// T.async_copy(src, dst): TileLang's explicitly asynchronous global-to-shared copy, issued as cp.async copies
/// closed into a group of their own and never waited for by itself (the program waits with T.ptx_wait_group).
/// Emitted as the Copy under an AsyncCopyOn condition followed by the group's commit: lowerAsyncCopies makes it
/// per-thread cp.async where it proves the program's waits cover every use of the destination, else the
/// synchronous copy it also is (the schedule in which every group finished at issue). A copy of one element is a
/// plain store, its group empty.
Value asyncCopy(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.async_copy", {"src", "dst", "coalesced_width?", "annotations?", "loop_layout?"});
    requireLaunch(in, args, "T.async_copy");
    Operand s = operandArg(in, *a[0], "T.async_copy source"), d = operandArg(in, *a[1], "T.async_copy destination");
    ir::Stmt commit = passes::lib::stmt(passes::lib::Fn::CpAsyncCommit, {}, args.call);
    if (elementCopy(in, args, s, d)) {
        in.emit(commit);
        return Value::none();
    }
    if (s.buffer->scope != ir::Scope::Global || d.buffer->scope != ir::Scope::Shared)
        in.fail(args.call, "T.async_copy copies from global to shared memory (cp.async); this one copies " +
                               std::string(ir::toString(s.buffer->scope)) + " to " + ir::toString(d.buffer->scope));
    auto [sr, dr] = regionPair(in, args, s, d, "source", "destination", "async_copy");
    auto [rowThreads, run] = a[4] ? rowBlocked(in, *a[4]) : std::pair<int64_t, int64_t>{0, 0};
    ir::Expr on = passes::lib::call(passes::lib::Fn::AsyncCopyOn, {ir::intImm(rowThreads, DType::Int32), ir::intImm(run, DType::Int32)},
                                    args.call, DType::Bool);
    in.emit(ir::IfThenElse::make(on, ir::Copy::make(sr, dr, args.call), nullptr, args.call));
    in.emit(commit);
    return Value::none();
}

/// T.ptx_commit_group() / T.ptx_wait_group(n): cp.async.commit_group and cp.async.wait_group n, kept where the
/// program's T.async_copy are asynchronous (lowerAsyncCopies), dropped where they are synchronous.
Value ptxCommitGroup(Interp &in, CallArgs &args) {
    bindArgs(in, args, "T.ptx_commit_group", {});
    requireLaunch(in, args, "T.ptx_commit_group");
    in.emit(passes::lib::stmt(passes::lib::Fn::CpAsyncCommit, {}, args.call));
    return Value::none();
}

Value ptxWaitGroup(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.ptx_wait_group", {"num"});
    requireLaunch(in, args, "T.ptx_wait_group");
    int64_t n = constIntArg(in, *a[0], "num");
    if (n < 0) in.fail(a[0]->range, "T.ptx_wait_group takes the number of groups left in flight, 0 or more; got " + std::to_string(n));
    in.emit(passes::lib::stmt(passes::lib::Fn::CpAsyncWait, {ir::intImm(n, DType::Int32)}, args.call));
    return Value::none();
}

/// T.tma_copy(src, dst, barrier=): a tile load by TMA whose bytes complete on `barrier` (the user waits for
/// it); lowerWarpRoles makes it a TMA load. Stores (shared to global) are not supported.
Value tmaCopy(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.tma_copy", {"src", "dst", "barrier?", "eviction_policy?", "annotations?"});
    requireLaunch(in, args, "T.tma_copy");
    Operand s = operandArg(in, *a[0], "T.tma_copy source"), d = operandArg(in, *a[1], "T.tma_copy destination");
    if (s.buffer->scope != ir::Scope::Global || d.buffer->scope != ir::Scope::Shared)
        in.fail(args.call, "T.tma_copy is supported from global to shared memory (a TMA load); this one copies " +
                               std::string(ir::toString(s.buffer->scope)) + " to " + ir::toString(d.buffer->scope));
    if (!a[2] || a[2]->value.is(VK::None))
        in.fail(args.call, "T.tma_copy needs barrier=: the mbarrier its bytes complete on");
    if (a[4] && !a[4]->value.is(VK::None))
        in.fail(a[4]->range, "T.tma_copy(annotations=...) is not supported");
    ir::Expr bar = barrierAddress(in, *a[2], "T.tma_copy");
    auto [sr, dr] = regionPair(in, args, s, d, "source", "destination", "tma_copy");
    ir::Expr on = passes::lib::call(passes::lib::Fn::TmaCopyOn, {bar}, args.call, DType::Bool);
    in.emit(ir::IfThenElse::make(on, ir::Copy::make(sr, dr, args.call), nullptr, args.call));
    return Value::none();
}

bool atomicDType(DType t) {
    switch (t.kind) {
    case DType::Int32:
    case DType::UInt32:
    case DType::Int64:
    case DType::UInt64:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
    case DType::Float64:
        return true;
    default:
        return false;
    }
}

Value atomicAdd(Interp &in, CallArgs &args) {
    auto a =
        bindArgs(in, args, "T.atomic_add", {"dst", "value", "memory_order?", "return_prev?", "use_tma?"});
    requireLaunch(in, args, "T.atomic_add");
    bool prev = a[3] && boolArg(in, *a[3], "return_prev");
    Operand d = operandArg(in, *a[0], "T.atomic_add destination");
    if (d.buffer->scope != ir::Scope::Global && d.buffer->scope != ir::Scope::Shared)
        in.fail(a[0]->range, "T.atomic_add destination must be in global or shared memory; '" +
                                 d.buffer->name + "' is " + ir::toString(d.buffer->scope));
    if (!atomicDType(d.buffer->dtype))
        in.fail(a[0]->range, "T.atomic_add does not support " + std::string(d.buffer->dtype.name()) +
                                 " (int32, uint32, int64, uint64, float16, bfloat16, float32, float64 do)");
    const Value &v = a[1]->value;
    bool regionValue = v.is(VK::Buffer) || (v.is(VK::Access) && !v.as<AccessObj>().isPoint());
    if (prev) { // the element's value before the addition: CUDA's atomicAdd, whose result is that value
        if (regionValue || !d.origin)
            in.fail(a[3]->range, "T.atomic_add(return_prev=True) adds to one element and returns its previous value; "
                                 "the destination and the value must be single elements");
        if (d.buffer->dtype == DType::Int64)
            in.fail(a[0]->range, "T.atomic_add(return_prev=True) of int64 is not supported (CUDA's atomicAdd has no "
                                 "signed 64-bit form); use uint64");
        ir::Expr value = ir::cast(d.buffer->dtype, in.toExpr(*a[1], "value"), args.call);
        return Value::ofExpr(ir::Call::make(d.buffer->dtype, "extern:atomicAdd", {passes::addressOf(d.buffer, d.mins), value}, args.call));
    }
    if (regionValue) {
        Operand s = operandArg(in, *a[1], "T.atomic_add value");
        auto [sr, dr] = regionPair(in, args, s, d, "value", "destination", "atomic_add");
        in.emit(ir::AtomicAdd::make(dr, sr, nullptr, args.call));
        return Value::none();
    }
    if (!d.origin)
        in.fail(a[1]->range, "adding a single value needs a single element as destination, like " +
                                 d.buffer->name +
                                 "[i, j]; for a region, pass a buffer or a region as the value");
    std::vector<ir::Expr> ones(d.mins.size(), ir::intImm(1));
    ir::Region dr = resolveRegion(in, d, ones, true);
    ir::Expr value = ir::cast(d.buffer->dtype, in.toExpr(*a[1], "value"), args.call);
    in.emit(ir::AtomicAdd::make(dr, std::nullopt, value, args.call));
    return Value::none();
}

/// T.atomic_addx2 / T.atomic_addx4(dst, value): `lanes` consecutive elements along the last dimension from the
/// elements dst and value name (TileLang's vector atomics): `for k in T.vectorized(lanes)` of one element's atomic
/// addition each, the loop the program would write. Code generation adds a float32 loop's lanes with one vector
/// atomic (VectorizeAccesses.h, AtomicVector: red.global.add.v4.f32 on sm_90, as TileLang's AtomicAddx4); unrolled
/// into single additions where it cannot (other types, a start not aligned to the lanes).
Value atomicAddLanes(Interp &in, CallArgs &args, int lanes) {
    const std::string fname = "T.atomic_addx" + std::to_string(lanes);
    auto a = bindArgs(in, args, fname, {"dst", "value", "return_prev?"});
    requireLaunch(in, args, fname);
    if (a[2] && boolArg(in, *a[2], "return_prev"))
        in.fail(a[2]->range, fname + "(return_prev=True) is not supported; use T.atomic_add(..., return_prev=True) per element");
    Operand d = operandArg(in, *a[0], fname + " destination"), s = operandArg(in, *a[1], fname + " value");
    for (const Operand *op : {&d, &s})
        if (!op->origin) in.fail(op->range, fname + " takes the first of the elements, like " + op->buffer->name + "[i, j]");
    if (d.buffer->scope != ir::Scope::Global && d.buffer->scope != ir::Scope::Shared)
        in.fail(a[0]->range, fname + " destination must be in global or shared memory");
    if (!atomicDType(d.buffer->dtype))
        in.fail(a[0]->range, fname + " does not support " + std::string(d.buffer->dtype.name()));
    ir::Var k = ir::makeVar("k", DType::Int32, args.call);
    auto di = d.mins, si = s.mins;
    di.back() = ir::simplify(ir::binary(ir::BinaryOp::Add, di.back(), k, args.call));
    si.back() = ir::simplify(ir::binary(ir::BinaryOp::Add, si.back(), k, args.call));
    ir::Region dr{d.buffer, {}, args.call};
    for (auto &i : di) dr.ranges.push_back({i, ir::intImm(1)});
    ir::Expr value = ir::cast(d.buffer->dtype, ir::Load::make(s.buffer, si, args.call), args.call);
    ir::Stmt add = ir::AtomicAdd::make(dr, std::nullopt, value, args.call);
    in.emit(ir::For::make(k, ir::intImm(0), ir::intImm(lanes), ir::ForKind::Vectorized, 0, add, args.call));
    return Value::none();
}

/// T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad) (T.c2d_im2col before TileLang 0.1.13):
/// the im2col tile of a 2-D convolution. `img` is an (N, H, W, C) global tensor, `col` a (pixels, columns) shared
/// tile; col[p, q] is the image element that output pixel m = nhw_step * pixels + p (in N, OH, OW order) meets
/// at column k = c_step * columns + q (in KH, KW, C order), 0 where that falls into the padding or past the end.
/// TileLang issues a TMA im2col load; tilec emits the element-wise nest TileLang's own examples give as the
/// equivalent (a T.Parallel over col), which the usual lowering turns into per-thread loads.
Value im2col(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"img", "col", "nhw_step", "c_step", "kernel", "stride", "dilation", "pad",
                                        "eviction_policy?"});
    requireLaunch(in, args, fname);
    Operand img = operandArg(in, *a[0], fname + " image"), col = operandArg(in, *a[1], fname + " column tile");
    if (!img.whole || img.buffer->scope != ir::Scope::Global || img.buffer->shape.size() != 4)
        in.fail(a[0]->range, fname + " needs the whole image tensor, a global (N, H, W, C) tensor");
    if (!col.whole || col.buffer->scope != ir::Scope::Shared || col.buffer->shape.size() != 2)
        in.fail(a[1]->range, fname + " needs a whole 2-D shared buffer as the column tile");
    if (col.buffer->dtype != img.buffer->dtype)
        in.fail(a[1]->range, fname + ": the column tile's dtype (" + std::string(col.buffer->dtype.name()) +
                                 ") differs from the image's (" + std::string(img.buffer->dtype.name()) + ")");
    ir::Expr nhw = intExprArg(in, *a[2], "nhw_step"), cStep = intExprArg(in, *a[3], "c_step");
    int64_t kernel = constIntArg(in, *a[4], "kernel"), stride = constIntArg(in, *a[5], "stride");
    int64_t dilation = constIntArg(in, *a[6], "dilation"), pad = constIntArg(in, *a[7], "pad");
    if (kernel < 1 || stride < 1 || dilation < 1 || pad < 0)
        in.fail(args.call, fname + ": kernel, stride and dilation must be positive and pad not negative");
    using ir::BinaryOp;
    auto c = [](int64_t v) { return ir::intImm(v); };
    auto op = [&](BinaryOp o, ir::Expr x, ir::Expr y) { return ir::binary(o, std::move(x), std::move(y), args.call); };
    const auto &shape = img.buffer->shape;
    ir::Expr n = shape[0], h = shape[1], w = shape[2], ch = shape[3];
    // Output extents, as TileLang computes them: (H + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1.
    auto outDim = [&](const ir::Expr &d) {
        return op(BinaryOp::Add, op(BinaryOp::FloorDiv, op(BinaryOp::Sub, op(BinaryOp::Add, d, c(2 * pad)), c(dilation * (kernel - 1) + 1)), c(stride)), c(1));
    };
    ir::Expr oh = outDim(h), ow = outDim(w);
    int64_t pixels = *ir::constInt(col.buffer->shape[0]), columns = *ir::constInt(col.buffer->shape[1]);
    ir::Var i = ir::makeVar("i", DType::Int32, args.call), j = ir::makeVar("j", DType::Int32, args.call);
    ir::Expr m = op(BinaryOp::Add, op(BinaryOp::Mul, nhw, c(pixels)), i);
    ir::Expr k = op(BinaryOp::Add, op(BinaryOp::Mul, cStep, c(columns)), j);
    ir::Expr ohw = op(BinaryOp::Mul, oh, ow);
    ir::Expr ih = op(BinaryOp::Add, op(BinaryOp::Mul, op(BinaryOp::FloorDiv, op(BinaryOp::FloorMod, m, ohw), ow), c(stride)),
                     op(BinaryOp::Sub, op(BinaryOp::Mul, op(BinaryOp::FloorDiv, k, op(BinaryOp::Mul, c(kernel), ch)), c(dilation)), c(pad)));
    ir::Expr iw = op(BinaryOp::Add, op(BinaryOp::Mul, op(BinaryOp::FloorMod, m, ow), c(stride)),
                     op(BinaryOp::Sub, op(BinaryOp::Mul, op(BinaryOp::FloorMod, op(BinaryOp::FloorDiv, k, ch), c(kernel)), c(dilation)), c(pad)));
    ir::Expr in_ = op(BinaryOp::FloorDiv, m, ohw);
    ir::Expr inside = ir::boolImm(true);
    for (ir::Expr cond : {op(BinaryOp::LT, in_, n), op(BinaryOp::LT, k, op(BinaryOp::Mul, c(kernel * kernel), ch)),
                          op(BinaryOp::GE, ih, c(0)), op(BinaryOp::LT, ih, h), op(BinaryOp::GE, iw, c(0)), op(BinaryOp::LT, iw, w)})
        inside = op(BinaryOp::And, inside, cond);
    ir::Expr value = ir::Load::make(img.buffer, {in_, ih, iw, op(BinaryOp::FloorMod, k, ch)}, args.call);
    ir::Expr zero = img.buffer->dtype.isFloat() ? ir::floatImm(0, img.buffer->dtype) : ir::intImm(0, img.buffer->dtype);
    ir::Stmt body = ir::Store::make(col.buffer, {i, j}, ir::select(inside, value, zero, args.call), args.call);
    body = ir::For::make(j, c(0), c(columns), ir::ForKind::Parallel, 0, body, args.call);
    in.emit(ir::For::make(i, c(0), c(pixels), ir::ForKind::Parallel, 0, body, args.call));
    return Value::none();
}

} // namespace

void addCopyPrimitives(Attrs &attrs) {
    def(attrs, "copy", copy);
    def(attrs, "tma_copy", tmaCopy);
    def(attrs, "async_copy", asyncCopy);
    def(attrs, "ptx_commit_group", ptxCommitGroup);
    def(attrs, "ptx_wait_group", ptxWaitGroup);
    def(attrs, "atomic_add", atomicAdd);
    def(attrs, "atomic_addx2", [](Interp &in, CallArgs &args) { return atomicAddLanes(in, args, 2); });
    def(attrs, "atomic_addx4", [](Interp &in, CallArgs &args) { return atomicAddLanes(in, args, 4); });
    def(attrs, "im2col", [](Interp &in, CallArgs &args) { return im2col(in, args, "T.im2col"); });
    def(attrs, "c2d_im2col", [](Interp &in, CallArgs &args) { return im2col(in, args, "T.c2d_im2col"); });
}

} // namespace tilec::eval::tl
