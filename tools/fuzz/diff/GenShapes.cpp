/// \file
/// Two classes of run-time shapes drawn on top of a program (Gen.h: decorateStepped, decorateBatched), each from
/// a stream of its own so the base programs of a seed stay what they were:
/// - stepped T.serial loops whose start is read at run time: `st = T.cast(P[..] * 4.0, "int32") + c`, then
///   `for q in T.serial(st + tx, end, threads)` (TileKernels' MoE routing: `T.serial(start + lane, end, 32)`),
///   per thread, under a lane guard, or in one thread with a small step (negative too); starts from -11 to 23
///   and ends that are constants, `st + K` or read from P too, so that loops run 0 times or start past their end
///   in some threads; the body indexes V and P with the loop variable and may change st (the start and the end
///   are read once, before the loop). Block-level T.serial loops of tile statements get such starts and steps;
/// - 3-D and 4-D tensors X (input) and Q (output) whose batch and heads dimensions are T.dynamic sizes, 0
///   included: the batch is the grid's third dimension (bz over T.dynamic("nb"): 0 is an empty launch) or a
///   T.serial loop over T.dynamic("xb"), the heads a T.serial loop over T.dynamic("xh").
#include "Gen.h"

#include "Check.h"

#include <cctype>
#include <cmath>
#include <functional>
#include <sstream>

namespace tilec::difffuzz {

namespace {

GExprP text(std::string t, std::set<std::string> reads = {}) {
    auto e = std::make_shared<GExpr>();
    e->leaf = std::move(t);
    e->reads = std::move(reads);
    return e;
}

GExprP plus(GExprP a, GExprP b) {
    auto e = std::make_shared<GExpr>();
    e->op = "+", e->kids = {std::move(a), std::move(b)};
    return e;
}

/// An int32 read from P (4 floats, multiples of 1/4 in [-2, 2]): an integer in [-8, 8]; index -1 is `bx % 4`.
std::string readP(int64_t index) {
    return "T.cast(P[" + (index < 0 ? std::string("bx % 4") : std::to_string(index)) + "] * 4.0, \"int32\")";
}

std::string signedTerm(int64_t k) { return k ? (k > 0 ? " + " : " - ") + std::to_string(k < 0 ? -k : k) : ""; }

/// One stepped loop per thread whose start reads an alloc_var set from memory, storing into V's elements `vb`
/// onwards of its block's chunk; `vb` grows past them.
GOp stepped(Rng &r, const GProgram &p, int64_t &vb) {
    GOp o;
    o.kind = GOp::Stepped;
    o.dst = "st";
    GOp::StepSpec &sp = o.spec;
    sp.pIndex = r.coin(0.5) ? -1 : r.in(0, 3);
    sp.off = r.in(-3, 3);
    o.startInit = readP(sp.pIndex) + signedTerm(sp.off);
    const int64_t stLo = -8 + sp.off, stHi = 8 + sp.off;
    sp.mode = r.in(0, 2);
    if (sp.mode == 0) o.start = "st + tx", o.step = p.threads;
    else if (sp.mode == 1) o.start = "st + tx % 32", o.step = 32, o.h = 32; // lanes of the first warp
    else sp.plus = r.in(0, 1), o.start = "st" + signedTerm(sp.plus), o.step = r.pick(std::vector<int64_t>{1, 2, 3, 5}), o.h = 1;
    sp.endKind = r.in(0, 2);
    int64_t endHi = 0;
    if (sp.endKind == 0) sp.endK = r.in(-4, 24), o.end = std::to_string(sp.endK), endHi = sp.endK;
    else if (sp.endKind == 1) sp.endK = r.in(-2, 30), o.end = "st" + signedTerm(sp.endK), endHi = stHi + sp.endK;
    else {
        sp.endPIndex = r.coin(0.5) ? -1 : r.in(0, 3), sp.endK = r.in(0, 24);
        o.end = readP(sp.endPIndex) + signedTerm(sp.endK), endHi = 8 + sp.endK;
    }
    // Each loop its own span of V's elements per block (two loops' threads would store the same one in no order):
    // q + w >= 0 for every q >= st, q < end <= endHi.
    o.w = -stLo;
    int64_t span = endHi + o.w;
    if (sp.mode == 2 && r.coin(0.4)) { // a negative step: from st + plus down to past the end, qLo <= q <= stHi + plus
        o.step = -r.in(1, 3);
        sp.plus = r.in(0, 12), o.start = "st" + signedTerm(sp.plus);
        sp.endKind = r.in(0, 1);
        int64_t qLo = 0;
        if (sp.endKind == 0) sp.endK = r.in(-12, 8), o.end = std::to_string(sp.endK), qLo = sp.endK + 1;
        else sp.endK = r.in(-12, 2), o.end = "st" + signedTerm(sp.endK), qLo = stLo + sp.endK + 1;
        o.w = -qLo, span = stHi + sp.plus + o.w + 1;
    }
    o.r0 = vb;
    vb += std::max<int64_t>(span, 1);
    o.twice = r.coin(0.3);                        // `st = st + 1` in the body: the loop's start stays as read
    if (!p.dynamic && r.coin(0.4)) {
        GExprP a = text("A[tx % " + std::to_string(std::max<int64_t>(p.ra, 1)) + ", bx]");
        const std::string b = r.coin(0.5) ? "s0" : "s1";
        o.value = r.coin(0.5) ? a : plus(a, text(b + "[tx % BM, 0]", {b}));
    }
    return o;
}

} // namespace

void decorateStepped(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x57e9)};
    if (p.batch >= 0) return; // blocks differing only in bz would write the same elements of V
    int64_t vb = 0;
    // Block-level T.serial loops of tile statements: a start read from P (through an alloc_var), a step.
    std::function<void(std::vector<GOp> &, int)> walk = [&](std::vector<GOp> &ops, int depth) {
        for (auto &o : ops) {
            if (o.kind == GOp::Serial && r.coin(0.3)) {
                o.dst = "sb" + std::to_string(depth);
                o.startInit = "T.cast(P[" + std::to_string(r.in(0, 3)) + "] * 2.0, \"int32\")"; // -4 .. 4
                o.start = o.dst + (o.start.empty() ? "" : " + " + o.start);
                o.step = r.in(1, 3);
                o.twice = r.coin(0.3); // `sbN = sbN + 1` at the end of the body: the bounds stay as read
            }
            walk(o.kids, depth + (o.kind == GOp::Serial)), walk(o.elseKids, depth);
        }
    };
    walk(p.ops, 0);
    // Any loop given a start from P at any depth (sb0, sb1, ...) needs P: testing sb0 alone left programs whose
    // only such loop was nested reading an undefined P (seed 70000222: rejected, so never checked).
    bool blockLevel = false;
    for (auto &name : p.buffersUsed())
        if (name.size() > 2 && name.compare(0, 2, "sb") == 0 && std::isdigit((unsigned char)name[2])) blockLevel = true;
    if (r.coin(0.2)) {
        for (int64_t i = r.in(1, 2); i > 0; --i)
            p.ops.insert(p.ops.end() - 1, stepped(r, p, vb));
    }
    if (vb > 0 || blockLevel) p.vb = std::max<int64_t>(vb, 1), p.vn = p.vb * p.gx * p.gy;
}

void decorateBatched(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0xba7c)};
    if (!r.coin(0.15)) return;
    p.xrank = r.coin(0.5) ? 3 : 4;
    p.xb = r.coin(0.3) ? 0 : r.in(1, 2);
    p.xh = p.xrank == 4 ? (r.coin(0.3) ? 0 : r.in(1, 3)) : 0;
    p.xr = r.in(p.bm, p.gy * p.bm + 6);
    p.xc = r.in(p.bn, p.gx * p.bn + 6);
    if (r.coin(0.3)) p.xType = "float16";
    std::vector<std::string> tiles{"s0", "s1", "f0", "f1"};
    for (int64_t i = r.in(1, 2); i > 0; --i) {
        GOp o;
        o.kind = GOp::Batched;
        o.dst = r.pick(tiles);
        o.scale = r.pick(std::vector<double>{0.5, 2.0, -1.0, 0.25});
        // direct (slice): X's elements read in the T.Parallel itself, Q's stored there, under a bounds guard
        o.slice = r.coin(0.3);
        const std::string at = std::string(p.xrank == 4 ? "xi, hi, " : "xi, ") + "by * BM + i, bx * BN + j";
        GExprP self = o.slice ? text("X[" + at + "]") : text(o.dst + "[i, j]", {o.dst});
        auto times = std::make_shared<GExpr>();
        std::ostringstream c;
        c << o.scale;
        times->op = "*", times->kids = {self, text(c.str().find('.') == std::string::npos ? c.str() + ".0" : c.str())};
        o.value = plus(times, text(p.xrank == 4 ? "T.cast(xi * 3 + hi, \"float32\")" : "T.cast(xi, \"float32\")"));
        if (r.coin(0.4)) {
            const bool row = r.coin(0.5);
            o.value = plus(o.value, row ? text("rm[i]", {"rm"}) : text("rn[j]", {"rn"}));
        }
        p.ops.insert(p.ops.end() - 1, o);
    }
}

namespace {

/// V as the stepped loops store it (no element of a loop whose value reads more than P: NaN there).
std::vector<double> steppedV(const GProgram &p, uint64_t dataSeed) {
    std::vector<double> v((size_t)p.vn, std::nan("")), pv = inputTensor("P", 4, dataSeed);
    for (auto &o : p.ops) {
        if (o.kind != GOp::Stepped || o.value) continue;
        const GOp::StepSpec &sp = o.spec;
        for (int64_t by = 0; by < p.gy; ++by)
            for (int64_t bx = 0; bx < p.gx; ++bx) {
                auto readP = [&](int64_t i) { return (int64_t)std::trunc(pv[(size_t)(i < 0 ? bx % 4 : i)] * 4); };
                const int64_t st = readP(sp.pIndex) + sp.off;
                const int64_t end = sp.endKind == 0 ? sp.endK : sp.endKind == 1 ? st + sp.endK : readP(sp.endPIndex) + sp.endK;
                for (int64_t tx = 0; tx < (o.h > 0 ? o.h : p.threads); ++tx) {
                    const int64_t start = st + (sp.mode == 0 ? tx : sp.mode == 1 ? tx % 32 : sp.plus);
                    for (int64_t q = start; o.step > 0 ? q < end : q > end; q += o.step) {
                        const int64_t at = (by * p.gx + bx) * p.vb + o.r0 + o.w + q;
                        if (at >= 0 && at < p.vn) v[(size_t)at] = (double)q + pv[(size_t)((q + o.w) % 4)];
                    }
                }
            }
    }
    return v;
}

/// Q as the last batched statement leaves it, where that statement's value is X's element times its factor
/// plus the batch (and head) index, through a float32 tile; NaN elsewhere.
std::vector<double> batchedQ(const GProgram &p, uint64_t dataSeed) {
    const int64_t lead = p.batch >= 0 ? p.batch : p.xb, heads = p.xrank == 4 ? p.xh : 1;
    const size_t n = (size_t)(lead * heads * p.xr * p.xc);
    std::vector<double> q(n, std::nan("")), x = inputElements("X", p.shapeOf("X"), p.stridesOf("X"), dataSeed);
    const GOp *last = nullptr;
    for (auto &o : p.ops)
        if (o.kind == GOp::Batched) last = &o;
    if (!last) return q;
    const bool first = last->dst == "s0" || last->dst == "f0";
    const std::string text = last->value->print();
    if ((!last->slice && (first ? p.tileType : p.tileType1) != "float32") || text.find("rm[") != std::string::npos ||
        text.find("rn[") != std::string::npos)
        return q;
    const int64_t rows = std::min(p.xr, p.gy * p.bm), cols = std::min(p.xc, p.gx * p.bn);
    for (int64_t b = 0; b < lead; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t c = 0; c < cols; ++c) {
                    const size_t at = (size_t)(((b * heads + h) * p.xr + r) * p.xc + c);
                    q[at] = x[at] * last->scale + (double)(p.xrank == 4 ? b * 3 + h : b);
                }
    return q;
}

} // namespace

std::map<std::string, std::vector<double>> expectedShapes(const GProgram &p, uint64_t dataSeed) {
    std::map<std::string, std::vector<double>> e;
    if (p.vn > 0) e["V"] = steppedV(p, dataSeed);
    if (p.xrank > 0) e["Q"] = batchedQ(p, dataSeed);
    return e;
}

} // namespace tilec::difffuzz
