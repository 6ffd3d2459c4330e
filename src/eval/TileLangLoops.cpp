/// \file
/// The frames `with` and `for` take: T.Kernel (the launch) and the loop primitives T.Parallel,
/// T.Pipelined, T.serial, T.unroll, T.vectorized; plus what belongs to the launch (T.get_thread_binding,
/// T.use_swizzle). The interpreter turns the frames into the launch and For statements.
#include "eval/TileLang.h"

#include <algorithm>

namespace tilec::eval::tl {

namespace {

/// T.Kernel, or (`cluster`) T.ClusterKernel: the same launch with TileLang's keyword cluster_dims (an integer
/// x for (x, 1, 1), or 1 to 3 extents), the thread-block clusters asked for (honoured or refused when lowered).
Value launchFrame(Interp &in, CallArgs &args, bool cluster) {
    const std::string fname = cluster ? "T.ClusterKernel" : "T.Kernel";
    auto kw = cluster ? keywords(in, args, fname, {"threads", "prelude", "is_cpu", "cluster_dims"})
                      : keywords(in, args, fname, {"threads", "prelude", "is_cpu"});
    TraceState *t = in.trace();
    if (!t)
        in.fail(args.call, fname + " can only be used inside a @T.prim_func");
    if (t->inLaunch)
        in.fail(args.call, fname + " cannot be nested inside another T.Kernel");
    // No extent at all (`with T.Kernel(threads=...):`) is TileLang's launch of one block, with no block index.
    if (args.pos.size() > 3)
        in.fail(args.call, fname + " takes 0 to 3 grid extents, got " + std::to_string(args.pos.size()));

    auto f = std::make_shared<FrameObj>();
    f->kind = FrameObj::Kernel;
    f->range = args.call;
    static const char *axis[] = {"x", "y", "z"};
    for (size_t i = 0; i < args.pos.size(); ++i) {
        const Arg &a = args.pos[i];
        ir::Expr e = intExprArg(in, a, "grid extent");
        if (auto c = ir::constValue(e)) {
            if (*c < 1)
                in.fail(a.range, "grid extent must be at least 1, got " + std::to_string(*c));
            // CUDA allows 2^31 - 1 blocks along x, 65535 along y and z: past 65535, y and z are folded into x
            // when the launch is traced (foldGrid)
            if (*c > INT32_MAX)
                in.fail(a.range, "grid extent " + std::to_string(*c) + " exceeds the " + std::to_string(INT32_MAX) +
                                     " blocks CUDA allows in dimension " + axis[i]);
            e = constIndex(*c, a.range);
        }
        f->grid.push_back(e);
    }

    if (auto it = kw.find("threads"); it != kw.end()) {
        const Arg &a = it->second;
        int64_t v = 1;
        if (a.value.is(VK::Tuple) || a.value.is(VK::List)) {
            // threads=(x, y, z): one block of x*y*z threads; T.get_thread_binding(d) takes the block's
            // linear thread index apart, x fastest, as CUDA numbers the threads of a 3-D block.
            auto elts = in.toSequence(a, "threads");
            if (elts.empty() || elts.size() > 3)
                in.fail(a.range, "threads takes 1 to 3 extents, got " + std::to_string(elts.size()));
            for (auto &e : elts) {
                int64_t d = constIntArg(in, e, "threads extent");
                if (d < 1 || d > 1024) in.fail(e.range, "threads extent " + std::to_string(d) + " is not in 1..1024");
                v *= d;
                if (v > 1024) break;
                f->threadDims.push_back((int)d);
            }
            if (f->threadDims.size() == 1) f->threadDims.clear();
        } else {
            v = constIntArg(in, a, "threads");
        }
        std::string shown = "threads=" + std::to_string(v);
        if (v < 1)
            in.fail(a.range, shown + " is not a positive number of threads");
        if (v > 1024)
            in.fail(a.range, shown + " exceeds the 1024 threads a block can have");
        f->threads = (int)v;
    }
    if (auto it = kw.find("is_cpu"); it != kw.end() && boolArg(in, it->second, "is_cpu"))
        in.fail(it->second.range, "CPU kernels are not supported; tilec generates CUDA");
    // prelude: C++ source (device functions) the kernel's T.call_extern calls, emitted before it as
    // T.import_source's is (TileLang's pragma_import_c)
    if (auto it = kw.find("prelude"); it != kw.end() && !it->second.value.is(VK::None)) {
        if (!it->second.value.is(VK::Str))
            in.fail(it->second.range, fname + "'s prelude is C++ source, a str; got " +
                                          std::string(typeName(it->second.value.kind)) +
                                          " (a value tilec does not have the source of?)");
        auto &srcs = t->kernel->importedSources; // the launch's kernel (execLaunch hands them on to a later launch's)
        if (std::find(srcs.begin(), srcs.end(), it->second.value.s) == srcs.end())
            srcs.push_back(it->second.value.s);
    }
    if (cluster) {
        auto it = kw.find("cluster_dims");
        if (it == kw.end())
            in.fail(args.call, "T.ClusterKernel needs cluster_dims=(x, y, z) (or an integer x for (x, 1, 1))");
        const Arg &a = it->second;
        std::vector<Arg> elts{a};
        if (a.value.is(VK::Tuple) || a.value.is(VK::List)) elts = in.toSequence(a, "cluster_dims");
        if (elts.empty() || elts.size() > 3)
            in.fail(a.range, "cluster_dims takes 1 to 3 extents, got " + std::to_string(elts.size()));
        for (size_t i = 0; i < elts.size(); ++i) {
            int64_t d = constIntArg(in, elts[i], "cluster_dims extent");
            if (d < 1 || d > 16) in.fail(elts[i].range, "cluster_dims extent " + std::to_string(d) + " is not in 1..16");
            f->clusterDims[i] = (int)d;
        }
        f->clusterLoc = a.range;
    }
    return Value::object(VK::Frame, f);
}

} // namespace

std::array<ir::Expr, 3> foldGrid(Interp &in, ir::Kernel &k, const SourceRange &at) {
    std::array<ir::Expr, 3> coords = {k.blockIdx[0], k.blockIdx[1], k.blockIdx[2]};
    bool fold[3] = {false, false, false};
    for (int d = 1; d < 3; ++d)
        if (auto c = ir::constValue(k.grid[d])) fold[d] = *c > 65535;
    if (!fold[1] && !fold[2]) return coords;
    if (k.clusterDims[0] * k.clusterDims[1] * k.clusterDims[2] > 1)
        in.fail(k.clusterLoc.valid() ? k.clusterLoc : at,
                "a grid dimension past the 65535 blocks CUDA allows along y and z is folded into x, which thread-block "
                "clusters cannot follow: tilec does not fold a clustered launch");
    // The launched block's x walks x fastest, then each folded dimension: block (x, y, z) of the program is
    // launched block x + gx * y (+ gx * gy * z), so every coordinate still runs exactly once.
    ir::Var linear = ir::makeVar("block", DType::Int32, at);
    ir::Expr stride = k.grid[0];
    const int last = fold[2] ? 2 : 1;
    coords[0] = ir::constValue(k.grid[0]) == 1 ? ir::intImm(0) : ir::binary(ir::BinaryOp::FloorMod, linear, k.grid[0], at);
    for (int d = 1; d < 3; ++d) {
        if (!fold[d]) continue;
        ir::Expr c = ir::binary(ir::BinaryOp::FloorDiv, linear, stride, at);
        coords[(size_t)d] = d == last ? ir::simplify(c) : ir::binary(ir::BinaryOp::FloorMod, ir::simplify(c), k.grid[d], at);
        stride = ir::simplify(ir::binary(ir::BinaryOp::Mul, stride, k.grid[d], at));
        k.grid[d] = ir::intImm(1);
        k.blockIdx[d] = ir::makeVar(k.blockIdx[d]->name + "_folded", DType::Int32, at);
    }
    if (auto total = ir::constValue(stride); total && *total > INT32_MAX)
        in.fail(at, "the grid has " + std::to_string(*total) + " blocks along x once its y and z past 65535 are folded "
                    "into x, more than the " + std::to_string(INT32_MAX) + " CUDA allows");
    k.grid[0] = stride;
    k.blockIdx[0] = linear;
    int dims = 1; // the launch's dimensions: up to the last one given and not folded
    for (int d = 1; d < k.gridDims; ++d)
        if (!fold[d]) dims = d + 1;
    k.gridDims = dims;
    return coords;
}

namespace {

Value kernelFrame(Interp &in, CallArgs &args) { return launchFrame(in, args, false); }
Value clusterKernelFrame(Interp &in, CallArgs &args) { return launchFrame(in, args, true); }

/// `(stop)` or `(start, stop)` as a loop's min and extent (a None stop is absent, as in TileLang).
/// `needConst`: the extent must be a compile-time constant.
void bounds(Interp &in, const std::optional<Arg> &first, const std::optional<Arg> &second, FrameObj &f,
            const std::string &fname, bool needConst) {
    ir::Expr start = ir::intImm(0), extent;
    if (!second || second->value.is(VK::None)) {
        extent = intExprArg(in, *first, fname + " extent");
        if (needConst && !ir::constValue(extent))
            (void)constIntArg(in, *first, fname + " extent");
    } else {
        start = intExprArg(in, *first, fname + " start");
        ir::Expr stop = intExprArg(in, *second, fname + " stop");
        extent = ir::simplify(ir::binary(ir::BinaryOp::Sub, stop, start));
        if (needConst && !ir::constValue(extent)) {
            const Arg &culprit = ir::constValue(stop) ? *first : *second;
            in.fail(culprit.range, fname + " extent must be a compile-time constant; '" + exprText(extent) +
                                       "' is only known at run time");
        }
    }
    if (auto c = ir::constValue(extent))
        extent = constIndex(std::max<int64_t>(*c, 0));
    f.mins.push_back(start);
    f.extents.push_back(extent);
}

std::shared_ptr<FrameObj> loopFrame(const CallArgs &args, ir::ForKind k) {
    auto f = std::make_shared<FrameObj>();
    f->kind = FrameObj::Loop;
    f->range = args.call;
    f->forKind = k;
    return f;
}

Value parallel(Interp &in, CallArgs &args) {
    keywords(in, args, "T.Parallel", {"coalesced_width", "loop_layout", "prefer_async", "annotations"});
    requireLaunch(in, args, "T.Parallel");
    if (args.pos.empty())
        in.fail(args.call, "T.Parallel needs at least one extent");
    auto f = loopFrame(args, ir::ForKind::Parallel);
    for (auto &a : args.pos) {
        int64_t n = constIntArg(in, a, "T.Parallel extent");
        if (n < 1)
            in.fail(a.range, "T.Parallel extent must be positive, got " + std::to_string(n));
        f->mins.push_back(ir::intImm(0));
        f->extents.push_back(constIndex(n, a.range));
    }
    return Value::object(VK::Frame, f);
}

/// T.parallel(stop) / T.parallel(0, stop): TVM's parallel loop of one variable, the loop kind T.Parallel makes,
/// so nested T.parallel loops form one T.Parallel nest. A start other than 0 is a located error.
Value parallelTir(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.parallel", {"start", "stop?", "annotations?"});
    requireLaunch(in, args, "T.parallel");
    if (a[1] && !a[1]->value.is(VK::None)) {
        if (int64_t start = constIntArg(in, *a[0], "T.parallel start"); start != 0)
            in.fail(a[0]->range, "T.parallel starting at " + std::to_string(start) +
                                     " is not supported; start at 0 and add the offset to the index");
    }
    const Arg &stop = a[1] && !a[1]->value.is(VK::None) ? *a[1] : *a[0];
    CallArgs extent;
    extent.call = args.call;
    extent.callee = args.callee;
    extent.pos.push_back(stop);
    return parallel(in, extent);
}

Value pipelined(Interp &in, CallArgs &args) {
    auto a =
        bindArgs(in, args, "T.Pipelined",
                 {"start", "stop?", "num_stages?", "order?", "stage?", "sync?", "group?", "annotations?"});
    requireLaunch(in, args, "T.Pipelined");
    int64_t stages = a[2] ? constIntArg(in, *a[2], "num_stages") : 0;
    if (stages < 0 || stages > 32)
        in.fail(a[2]->range, "num_stages=" + std::to_string(stages) + " is out of range (0 to 32)");
    // TileLang: num_stages=0 disables pipelining, so the loop is a plain serial loop.
    auto f = loopFrame(args, stages > 0 ? ir::ForKind::Pipelined : ir::ForKind::Serial);
    f->numStages = (int)stages;
    bounds(in, a[0], a[1], *f, "T.Pipelined", false);
    static const char *manual[] = {"order", "stage", "sync", "group"};
    for (int i = 0; i < 4; ++i)
        if (a[3 + i] && !a[3 + i]->value.is(VK::None))
            in.warn(a[3 + i]->range, std::string("T.Pipelined ") + manual[i] +
                                         "= is ignored; tilec schedules the pipeline itself");
    return Value::object(VK::Frame, f);
}

/// T.serial / T.unroll: (stop) or (start, stop[, step]). A step other than 1 (a compile-time constant, negative
/// too) counts the iterations, ceil((stop - start) / step), and binds the name to start + i * step.
Value serialLike(Interp &in, CallArgs &args, const std::string &fname, ir::ForKind k) {
    std::vector<std::string> params = {"start", "stop?", "step?", "annotations?"};
    if (k == ir::ForKind::Unrolled) {
        params.push_back("explicit?");
        params.push_back("unroll_factor?");
    }
    auto a = bindArgs(in, args, fname, params);
    requireLaunch(in, args, fname);
    int64_t step = 1;
    if (a[2] && !a[2]->value.is(VK::None)) {
        step = constIntArg(in, *a[2], fname + " step");
        if (step == 0)
            in.fail(a[2]->range, fname + " step must not be zero");
    }
    auto f = loopFrame(args, k);
    bounds(in, a[0], a[1], *f, fname, false);
    if (step != 1) {
        using ir::BinaryOp;
        auto op = [&](BinaryOp o, ir::Expr x, ir::Expr y) { return ir::simplify(ir::binary(o, std::move(x), std::move(y), args.call)); };
        bool two = a[1] && !a[1]->value.is(VK::None);
        ir::Expr start = two ? intExprArg(in, *a[0], fname + " start") : ir::intImm(0);
        ir::Expr stop = intExprArg(in, two ? *a[1] : *a[0], fname + " stop");
        ir::Expr span = step < 0 ? op(BinaryOp::Sub, start, stop) : op(BinaryOp::Sub, stop, start);
        int64_t s = step < 0 ? -step : step;
        ir::Expr count = op(BinaryOp::FloorDiv, op(BinaryOp::Add, span, constIndex(s - 1)), constIndex(s));
        f->loopVar = ir::makeVar("i", DType::Int32, args.call);
        f->mins = {ir::intImm(0)};
        f->extents = {op(BinaryOp::Max, count, ir::intImm(0))};
        f->coords = {op(BinaryOp::Add, start, op(BinaryOp::Mul, f->loopVar, constIndex(step)))};
    }
    return Value::object(VK::Frame, f);
}

/// `for bx, by in T.Persistent([m_blocks, n_blocks], wave_size, block_id, group_size=8)`: TileLang's persistent
/// tile loop (src/ir.cc, PersistentFor). Block `index` visits tile `w * wave_size + index` of wave w, the tiles
/// numbered over the domain with its last dimension split into groups of `group_size` (outermost, the group;
/// then the other dimensions; innermost, the position in the group), so that consecutive tiles share rows of
/// the first operand; a tile past the end of the last dimension is skipped.
Value persistent(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.Persistent", {"domain", "wave_size", "index", "group_size?"});
    requireLaunch(in, args, "T.Persistent");
    auto dims = in.toSequence(*a[0], "domain");
    if (dims.empty()) in.fail(a[0]->range, "T.Persistent needs a domain of at least one extent");
    std::vector<ir::Expr> domain;
    for (auto &d : dims) domain.push_back(intExprArg(in, d, "a T.Persistent domain extent"));
    ir::Expr wave = intExprArg(in, *a[1], "wave_size"), index = intExprArg(in, *a[2], "index");
    ir::Expr group = a[3] && !a[3]->value.is(VK::None) ? intExprArg(in, *a[3], "group_size") : ir::intImm(8);
    using ir::BinaryOp;
    auto op = [&](BinaryOp o, ir::Expr x, ir::Expr y) { return ir::simplify(ir::binary(o, std::move(x), std::move(y), args.call)); };
    auto ceilDiv = [&](ir::Expr x, ir::Expr y) { return op(BinaryOp::FloorDiv, op(BinaryOp::Sub, op(BinaryOp::Add, x, y), ir::intImm(1)), y); };
    ir::Expr last = domain.back();
    group = op(BinaryOp::Max, ir::intImm(1), op(BinaryOp::Min, group, last));
    std::vector<ir::Expr> grouped = {ceilDiv(last, group)};
    grouped.insert(grouped.end(), domain.begin(), domain.end() - 1);
    grouped.push_back(group);
    ir::Expr padded = grouped[0];
    for (size_t i = 1; i < grouped.size(); ++i) padded = op(BinaryOp::Mul, padded, grouped[i]);
    auto f = loopFrame(args, ir::ForKind::Serial);
    f->loopVar = ir::makeVar("w", DType::Int32, args.call);
    f->mins.push_back(ir::intImm(0));
    f->extents.push_back(ceilDiv(padded, wave));
    ir::Expr rem = op(BinaryOp::Add, op(BinaryOp::Mul, f->loopVar, wave), index);
    std::vector<ir::Expr> idx(grouped.size());
    for (size_t i = grouped.size() - 1; i >= 1; --i) {
        idx[i] = op(BinaryOp::FloorMod, rem, grouped[i]);
        rem = op(BinaryOp::FloorDiv, rem, grouped[i]);
    }
    idx[0] = rem;
    ir::Expr lastCoord = op(BinaryOp::Add, op(BinaryOp::Mul, idx[0], group), idx.back());
    f->coords.assign(idx.begin() + 1, idx.end() - 1);
    f->coords.push_back(lastCoord);
    f->guard = op(BinaryOp::LT, lastCoord, last);
    return Value::object(VK::Frame, f);
}

Value vectorized(Interp &in, CallArgs &args, const std::string &fname) {
    auto a = bindArgs(in, args, fname, {"start", "stop?", "annotations?"});
    requireLaunch(in, args, fname);
    auto f = loopFrame(args, ir::ForKind::Vectorized);
    bounds(in, a[0], a[1], *f, fname, true);
    return Value::object(VK::Frame, f);
}

Value threadBinding(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.get_thread_binding", {"dim?"});
    TraceState &t = requireLaunch(in, args, "T.get_thread_binding");
    int64_t d = a[0] ? constIntArg(in, *a[0], "dim") : 0;
    size_t dims = std::max<size_t>(t.threadDims.size(), 1);
    if (d < 0 || d > 2)
        in.fail(a[0]->range, "dim=" + std::to_string(d) + " does not exist: a thread block has dimensions 0, 1 and 2");
    // TileLang binds threadIdx.x, .y and .z in every launch; those past the block's extents are 1 wide, their index 0
    if (d >= (int64_t)dims)
        return Value::ofExpr(ir::intImm(0));
    return Value::ofExpr(threadCoordinate(t, d, args.call));
}

Value useSwizzle(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.use_swizzle", {"panel_size", "order?", "enable?"});
    TraceState &t = requireLaunch(in, args, "T.use_swizzle");
    int64_t panel = constIntArg(in, *a[0], "panel_size");
    if (panel < 1 || panel > 65535)
        in.fail(a[0]->range, "panel_size=" + std::to_string(panel) + " is out of range (1 to 65535)");
    if (a[1]) {
        std::string order = in.toStr(*a[1], "order");
        if (order != "row")
            in.fail(a[1]->range, "T.use_swizzle order '" + order.substr(0, 40) +
                                     "' is not supported; "
                                     "tilec swizzles by rows (order='row')");
    }
    if (a[2] && !boolArg(in, *a[2], "enable"))
        return Value::none();
    if (t.kernel->swizzlePanel != 0) {
        in.diag().error(args.call, "T.use_swizzle is given twice in this kernel");
        in.note(t.kernel->swizzleLoc, "first given here");
        throw EvalAbort{};
    }
    t.kernel->swizzlePanel = (int)panel;
    t.kernel->swizzleLoc = args.call;
    return Value::none();
}

} // namespace

ir::Expr threadCoordinate(TraceState &t, int64_t d, const SourceRange &at) {
    if (!t.kernel->threadIdx)
        t.kernel->threadIdx = ir::makeVar("tx", DType::Int32, t.kernel->launchLoc);
    ir::Expr tx = t.kernel->threadIdx;
    size_t dims = std::max<size_t>(t.threadDims.size(), 1);
    if (dims == 1) return tx;
    int64_t below = 1;
    for (int64_t i = 0; i < d; ++i) below *= t.threadDims[(size_t)i];
    ir::Expr e = below == 1 ? tx : ir::binary(ir::BinaryOp::FloorDiv, tx, constIndex(below), at);
    if ((size_t)d + 1 < dims) e = ir::binary(ir::BinaryOp::FloorMod, e, constIndex(t.threadDims[(size_t)d]), at);
    return e;
}

void addLoopPrimitives(Attrs &attrs) {
    def(attrs, "Kernel", kernelFrame);
    def(attrs, "ClusterKernel", clusterKernelFrame);
    def(attrs, "Parallel", parallel);
    def(attrs, "parallel", parallelTir);
    def(attrs, "Pipelined", pipelined);
    def(attrs, "Persistent", persistent);
    for (const char *n : {"serial", "Serial"})
        def(attrs, n, [n](Interp &in, CallArgs &args) {
            return serialLike(in, args, std::string("T.") + n, ir::ForKind::Serial);
        });
    for (const char *n : {"unroll", "Unroll"})
        def(attrs, n, [n](Interp &in, CallArgs &args) {
            return serialLike(in, args, std::string("T.") + n, ir::ForKind::Unrolled);
        });
    for (const char *n : {"vectorized", "Vectorized"})
        def(attrs, n,
            [n](Interp &in, CallArgs &args) { return vectorized(in, args, std::string("T.") + n); });
    def(attrs, "get_thread_binding", threadBinding);
    def(attrs, "use_swizzle", useSwizzle);
}

} // namespace tilec::eval::tl
