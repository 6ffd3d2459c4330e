/// \file
/// T.cumsum: inclusive prefix (or suffix) sums of a shared or global buffer along one dimension.
#include "eval/TileLang.h"

#include <vector>

namespace tilec::eval::tl {

namespace {

using ir::BinaryOp;

/// What one scan works on: the buffers, the shape, the scanned dimension and direction.
struct Scan {
    ir::Buffer src, dst;
    std::vector<int64_t> shape;
    int64_t dim = 0;
    bool reverse = false;
    SourceRange at;

    ir::Expr c(int64_t v) const { return ir::intImm(v, DType::Int32, at); }
    int64_t length() const { return shape[(size_t)dim]; }
    int64_t lines() const {
        int64_t n = 1;
        for (size_t d = 0; d < shape.size(); ++d) n *= d == (size_t)dim ? 1 : shape[d];
        return n;
    }
};

/// The serial form: a T.Parallel nest over the other dimensions, each line scanned by one thread:
/// dst[k] = src[k] + dst[k - 1] (k + 1 with reverse), right in place too.
ir::Stmt serialScan(const Scan &s) {
    const SourceRange &at = s.at;
    const int64_t rank = (int64_t)s.shape.size(), n = s.length();
    std::vector<ir::Var> vars;
    std::vector<ir::Expr> idx, prev;
    ir::Var t = ir::makeVar("t", DType::Int32, at);
    ir::Expr k = s.reverse ? ir::binary(BinaryOp::Sub, s.c(n - 1), t, at) : ir::Expr(t);
    for (int64_t d = 0; d < rank; ++d) {
        if (d == s.dim) {
            idx.push_back(k);
            prev.push_back(ir::binary(s.reverse ? BinaryOp::Add : BinaryOp::Sub, k, s.c(1), at));
            continue;
        }
        vars.push_back(ir::makeVar("i" + std::to_string(d), DType::Int32, at));
        idx.push_back(vars.back());
        prev.push_back(vars.back());
    }
    ir::Expr cur = ir::Load::make(s.src, idx, at);
    ir::Expr carried = ir::select(ir::binary(BinaryOp::GT, t, s.c(0), at), ir::Load::make(s.dst, prev, at),
                                  ir::cast(s.src->dtype, s.c(0)), at);
    ir::Stmt body = ir::Store::make(s.dst, idx, ir::cast(s.dst->dtype, ir::binary(BinaryOp::Add, cur, carried, at), at), at);
    body = ir::For::make(t, s.c(0), s.c(n), ir::ForKind::Serial, 0, body, at);
    for (size_t i = vars.size(); i-- > 0;) {
        int64_t d = (int64_t)i < s.dim ? (int64_t)i : (int64_t)i + 1;
        body = ir::For::make(vars[i], s.c(0), s.c(s.shape[(size_t)d]), ir::ForKind::Parallel, 0, body, at);
    }
    if (vars.empty()) // a 1-D scan: one line, a nest of one iteration around it
        body = ir::For::make(ir::makeVar("i", DType::Int32, at), s.c(0), s.c(1), ir::ForKind::Parallel, 0, body, at);
    return body;
}

/// One step of the parallel form: a T.Parallel nest over the whole buffer, to[k] = from[k] + from[k - step]
/// (k + step with reverse; from[k] alone where that is outside the line). `step` 0: a plain copy.
ir::Stmt scanStep(const Scan &s, const ir::Buffer &from, const ir::Buffer &to, int64_t step) {
    const SourceRange &at = s.at;
    std::vector<ir::Var> vars;
    std::vector<ir::Expr> idx, other;
    for (size_t d = 0; d < s.shape.size(); ++d) {
        vars.push_back(ir::makeVar("i" + std::to_string(d), DType::Int32, at));
        idx.push_back(vars.back());
        other.push_back(d == (size_t)s.dim ? ir::binary(s.reverse ? BinaryOp::Add : BinaryOp::Sub, vars.back(), s.c(step), at)
                                           : ir::Expr(vars.back()));
    }
    ir::Expr value = ir::Load::make(from, idx, at);
    if (step > 0) {
        const ir::Expr &k = vars[(size_t)s.dim];
        ir::Expr inside = s.reverse ? ir::binary(BinaryOp::LT, k, s.c(s.length() - step), at)
                                    : ir::binary(BinaryOp::GE, k, s.c(step), at);
        ir::Expr zero = ir::cast(from->dtype, s.c(0));
        value = ir::binary(BinaryOp::Add, value, ir::select(inside, ir::Load::make(from, other, at), zero, at), at);
    }
    ir::Stmt body = ir::Store::make(to, idx, ir::cast(to->dtype, value, at), at);
    for (size_t i = vars.size(); i-- > 0;)
        body = ir::For::make(vars[i], s.c(0), s.c(s.shape[i]), ir::ForKind::Parallel, 0, body, at);
    return body;
}

/// The parallel form (Hillis and Steele): ceil(log2 n) steps over the whole buffer, alternating between dst and
/// a shared scratch buffer so that no step reads what it writes; the barriers between steps are placed as for
/// any tile statements. The last step writes dst; in place, where the first step would write src, a copy into
/// the scratch buffer goes first.
std::vector<ir::Stmt> parallelScan(const Scan &s, ir::Kernel &k) {
    int64_t steps = 0;
    while ((int64_t{1} << steps) < s.length()) ++steps;
    std::vector<ir::Expr> shape;
    for (int64_t e : s.shape) shape.push_back(ir::intImm(e));
    auto scratch = ir::makeBuffer(uniqueBufferName(k, s.dst->name + "_scan"), ir::Scope::Shared, s.dst->dtype, shape, s.at);
    k.allocs.push_back(scratch);
    auto target = [&](int64_t r) { return (steps - 1 - r) % 2 == 0 ? s.dst : scratch; };
    std::vector<ir::Stmt> out;
    ir::Buffer from = s.src;
    if (s.src.get() == s.dst.get() && target(0).get() == s.dst.get()) {
        out.push_back(scanStep(s, s.src, scratch, 0));
        from = scratch;
    }
    for (int64_t r = 0; r < steps; ++r) {
        out.push_back(scanStep(s, from, target(r), int64_t{1} << r));
        from = target(r);
    }
    return out;
}

/// Whether the parallel form pays: a scan of few lines leaves most threads idle for n dependent steps, where
/// the parallel form takes log2(n) steps with every thread busy. Shared scans only (a global buffer's scan
/// would need the grid's threads), with a scratch buffer of at most 16 KiB.
bool parallelPays(const Scan &s, const ir::Kernel &k) {
    if (s.dst->scope != ir::Scope::Shared || s.src->scope != ir::Scope::Shared) return false;
    const int64_t n = s.length(), lines = s.lines();
    const int64_t bytes = lines * n * (int64_t)s.dst->dtype.bytes();
    return n >= 16 && lines * 4 <= (int64_t)k.threads && bytes <= 16 * 1024;
}

/// T.cumsum(src, dst=None, dim=0, reverse=False): the inclusive prefix sums of a shared (or global) buffer
/// along `dim` (suffix sums with reverse), into dst (src itself by default, same shape). Fragments are an error
/// (their elements along `dim` are spread over the threads).
Value cumsum(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.cumsum", {"src", "dst?", "dim?", "reverse?"});
    TraceState &tr = requireLaunch(in, args, "T.cumsum");
    Operand src = operandArg(in, *a[0], "T.cumsum source");
    Operand dst = a[1] && !a[1]->value.is(VK::None) ? operandArg(in, *a[1], "T.cumsum destination") : src;
    for (const Operand *op : {&src, &dst}) {
        if (!op->whole) in.fail(op->range, "T.cumsum scans a whole buffer; a slice or an element of '" + op->buffer->name + "' is not supported");
        if (op->buffer->scope == ir::Scope::Fragment)
            in.fail(op->range, "T.cumsum of fragment '" + op->buffer->name + "' is not supported: its elements along the scanned "
                               "dimension are spread over the threads; scan a shared buffer (T.copy it there first)");
        if (op->buffer->scope != ir::Scope::Shared && op->buffer->scope != ir::Scope::Global)
            in.fail(op->range, std::string("T.cumsum scans a shared or global buffer, not ") + ir::toString(op->buffer->scope) + " '" + op->buffer->name + "'");
    }
    Scan s{src.buffer, dst.buffer, {}, 0, false, args.call};
    if (s.src->shape.size() != s.dst->shape.size())
        in.fail(args.call, "T.cumsum's source and destination must have the same shape");
    for (size_t i = 0; i < s.src->shape.size(); ++i) {
        auto e = ir::constInt(s.src->shape[i]), f = ir::constInt(s.dst->shape[i]);
        if (!e || !f || *e != *f) in.fail(args.call, "T.cumsum's source and destination must have the same constant shape");
        s.shape.push_back(*e);
    }
    int64_t rank = (int64_t)s.shape.size();
    s.dim = a[2] ? constIntArg(in, *a[2], "dim") : 0;
    if (s.dim < -rank || s.dim >= rank)
        in.fail(a[2]->range, "dim=" + std::to_string(s.dim) + " is out of range for a " + std::to_string(rank) + "-D buffer");
    if (s.dim < 0) s.dim += rank;
    s.reverse = a[3] && boolArg(in, *a[3], "reverse");
    if (parallelPays(s, *tr.kernel)) {
        for (auto &st : parallelScan(s, *tr.kernel)) in.emit(st);
    } else {
        in.emit(serialScan(s));
    }
    return Value::none();
}

} // namespace

void addScanPrimitives(Attrs &attrs) { def(attrs, "cumsum", cumsum); }

} // namespace tilec::eval::tl
