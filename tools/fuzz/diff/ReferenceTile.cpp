/// \file
/// The reference's tile operations on regions: T.copy / region T.atomic_add, T.gemm, T.reduce_* (Reference.h).
#include "Reference.h"

#include "sim/ScalarSemantics.h"

#include <cmath>

namespace tilec::difffuzz {

using namespace ir;

namespace {

/// A region evaluated: per dimension its start and extent, and which dimensions have extents other than 1.
struct Box {
    std::vector<int64_t> lo, ext;
    std::vector<size_t> dims;
    int64_t count() const {
        int64_t n = 1;
        for (auto e : ext) n *= e;
        return n;
    }
    /// The element at position p (row-major over the extents other than 1).
    std::vector<int64_t> at(int64_t p) const {
        std::vector<int64_t> idx = lo;
        for (size_t k = dims.size(); k-- > 0;) {
            size_t d = dims[k];
            idx[d] += p % ext[d];
            p /= ext[d];
        }
        return idx;
    }
};

template <class Eval> Box boxOf(const Region &r, Eval &&eval) {
    Box b;
    for (size_t d = 0; d < r.ranges.size(); ++d) {
        b.lo.push_back((int64_t)eval(r.ranges[d].min));
        b.ext.push_back((int64_t)eval(r.ranges[d].extent));
        if (b.ext.back() != 1) b.dims.push_back(d);
    }
    return b;
}

} // namespace

void Reference::copyRegions(const Region &src, const Region &dst, bool add) {
    auto ev = [&](const Expr &e) { return eval(e, 0); };
    Box s = boxOf(src, ev), d = boxOf(dst, ev);
    if (s.dims.size() != d.dims.size()) throw RefError("regions of different ranks");
    for (size_t k = 0; k < s.dims.size(); ++k)
        if (s.ext[s.dims[k]] != d.ext[d.dims[k]]) throw RefError("regions of different extents");
    for (int64_t p = 0, n = d.count(); p < n; ++p) {
        double v = simtest::convertToDType(dst.buffer->dtype, src.buffer->dtype, load(*src.buffer, s.at(p), 0));
        store(*dst.buffer, d.at(p), v, 0, add);
    }
}

void Reference::gemm(const Gemm &g) {
    if (g.sparse()) throw RefError("T.gemm_sp is not modelled (the generator makes none)");
    auto ev = [&](const Expr &e) { return eval(e, 0); };
    Box a = boxOf(g.a, ev), b = boxOf(g.b, ev), c = boxOf(g.c, ev);
    auto dims2 = [](const Box &x, const char *what) {
        if (x.dims.size() > 2) throw RefError(std::string("T.gemm operand ") + what + " is not 2-D");
        std::pair<int64_t, int64_t> rc{1, 1};
        if (x.dims.size() == 2) rc = {x.ext[x.dims[0]], x.ext[x.dims[1]]};
        else if (x.dims.size() == 1) rc = {1, x.ext[x.dims[0]]};
        return rc;
    };
    auto [ar, ac] = dims2(a, "A");
    auto [br, bc] = dims2(b, "B");
    auto [M, N] = dims2(c, "C");
    int64_t K = g.transA ? ar : ac;
    if ((g.transA ? ac : ar) != M || (g.transB ? bc : br) != K || (g.transB ? br : bc) != N)
        throw RefError("T.gemm shapes do not agree");
    std::vector<double> A((size_t)(M * K)), B((size_t)(K * N));
    for (int64_t i = 0; i < M; ++i)
        for (int64_t k = 0; k < K; ++k) A[i * K + k] = load(*g.a.buffer, a.at(g.transA ? k * M + i : i * K + k), 0);
    for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) B[k * N + j] = load(*g.b.buffer, b.at(g.transB ? j * K + k : k * N + j), 0);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double acc = g.clearAccum ? 0.0 : load(*g.c.buffer, c.at(i * N + j), 0);
            for (int64_t k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
            store(*g.c.buffer, c.at(i * N + j), acc, 0);
        }
}

void Reference::reduce(const Reduce &r) {
    const auto &shape = shapeOf(*r.src);
    int dim = r.dim < 0 ? r.dim + (int)shape.size() : r.dim;
    if (dim < 0 || dim >= (int)shape.size()) throw RefError("reduction dimension out of range");
    const auto &dshape = shapeOf(*r.dst);
    bool keep = dshape.size() == shape.size(); // the destination keeps the reduced dimension as 1
    std::vector<int64_t> outer(shape.begin(), shape.begin() + dim), inner(shape.begin() + dim + 1, shape.end());
    int64_t no = 1, ni = 1;
    for (auto e : outer) no *= e;
    for (auto e : inner) ni *= e;
    for (int64_t o = 0; o < no; ++o)
        for (int64_t in = 0; in < ni; ++in) {
            std::vector<int64_t> idx(shape.size());
            int64_t q = o;
            for (int d = dim - 1; d >= 0; --d) idx[d] = q % shape[d], q /= shape[d];
            q = in;
            for (int d = (int)shape.size() - 1; d > dim; --d) idx[d] = q % shape[d], q /= shape[d];
            double acc = 0;
            bool first = true;
            for (int64_t k = 0; k < shape[dim]; ++k) {
                idx[dim] = k;
                double x = load(*r.src, idx, 0);
                if (r.reduceKind == ReduceKind::AbsSum || r.reduceKind == ReduceKind::AbsMax) x = std::fabs(x);
                if (first) acc = x, first = false;
                else if (r.reduceKind == ReduceKind::Max || r.reduceKind == ReduceKind::AbsMax) acc = std::fmax(acc, x);
                else if (r.reduceKind == ReduceKind::Min) acc = std::fmin(acc, x);
                else acc += x;
            }
            std::vector<int64_t> out;
            for (size_t d = 0; d < shape.size(); ++d)
                if ((int)d != dim) out.push_back(idx[d]);
                else if (keep) out.push_back(0);
            if (out.empty()) out.push_back(0); // a 1-D source reduces to (1,)
            if (!r.clear) {
                double old = load(*r.dst, out, 0);
                if (r.reduceKind == ReduceKind::Max || r.reduceKind == ReduceKind::AbsMax) acc = std::fmax(old, acc);
                else if (r.reduceKind == ReduceKind::Min) acc = std::fmin(old, acc);
                else acc += old;
            }
            store(*r.dst, out, acc, 0);
        }
}

} // namespace tilec::difffuzz
