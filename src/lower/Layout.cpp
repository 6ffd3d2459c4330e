/// \file
/// Layout arithmetic: sizes, descriptions, and the per-thread element coordinates that the lowering of
/// T.Parallel nests and reductions is built from.
#include "tilec/passes/Layout.h"

#include "tilec/IROperator.h"

namespace tilec::passes {

using namespace ir;

Layout Layout::distributed(std::vector<int64_t> shape, int threads, int vec, int64_t copies) {
    TILEC_ASSERT(copies == 0 || ((threads & (threads - 1)) == 0 && (copies & ~int64_t(threads - 1)) == 0 && copies > 0),
                 "copies of a distributed layout must be bits of a power-of-two thread count");
    Layout l;
    l.copies = copies;
    l.kind = Distributed;
    l.shape = std::move(shape);
    l.threads = threads;
    l.vec = vec;
    return l;
}

Layout Layout::replicated(std::vector<int64_t> shape) {
    Layout l;
    l.kind = Replicated;
    l.shape = std::move(shape);
    return l;
}

Layout Layout::mma(std::vector<int64_t> shape, int threads, int warpsM, int warpsN, bool wgmma) {
    TILEC_ASSERT(shape.size() == 2 && shape[0] % (16 * warpsM) == 0 && shape[1] % (8 * warpsN) == 0 &&
                     threads % (warpsM * warpsN * 32) == 0 && (!wgmma || (warpsM % 4 == 0 && shape[0] % (16 * warpsM) == 0)),
                 "mma layout that does not tile its fragment");
    Layout l;
    l.kind = Mma;
    l.shape = std::move(shape);
    l.threads = threads;
    l.vec = 2;
    l.warpsM = warpsM;
    l.warpsN = warpsN;
    l.wgmma = wgmma;
    return l;
}

Layout Layout::mmaOperand(std::vector<int64_t> shape, int threads, int warpsM) {
    TILEC_ASSERT(shape.size() == 2 && shape[0] % (16 * warpsM) == 0 && shape[1] % 4 == 0 && threads % (warpsM * 32) == 0,
                 "operand-order mma layout that does not tile its fragment");
    Layout l;
    l.kind = Mma;
    l.shape = std::move(shape);
    l.threads = threads;
    l.vec = 1; // a lane's columns of one row are 4 apart
    l.warpsM = warpsM;
    l.opCols = true;
    return l;
}

Layout Layout::mmaRows(int64_t m, int threads, int warpsM, int warpsN, bool wgmma) {
    Layout l = mma({m, 8 * warpsN}, threads, warpsM, warpsN, wgmma);
    l.kind = MmaRows;
    l.shape = {m};
    l.vec = 1;
    return l;
}

Layout Layout::mmaCols(int64_t n, int threads, int warpsM, int warpsN, bool wgmma, std::vector<int64_t> shape) {
    Layout l = mma({16 * warpsM, n}, threads, warpsM, warpsN, wgmma);
    l.kind = MmaCols;
    l.shape = shape.empty() ? std::vector<int64_t>{n} : std::move(shape);
    TILEC_ASSERT(l.elements() == n, "an mmaCols shape whose elements are not the columns");
    l.vec = 1;
    return l;
}

const KernelLayouts &layoutsOf(const Kernel &k) {
    TILEC_ASSERT(k.layouts, "kernel '" + k.name + "' has no layouts: a pass that reads them runs before inferLayouts");
    return *k.layouts;
}

KernelP withThreadIndex(const KernelP &k) {
    if (!k || k->threadIdx) return k;
    auto out = std::make_shared<Kernel>(*k);
    out->threadIdx = makeVar("tx", DType::Int32, k->launchLoc);
    return out;
}

int64_t Layout::tileRow(int64_t wm, int64_t mi) const {
    const int64_t wtm = shape[0] / warpsM;
    if (!wgmma) return wm * wtm + mi * 16;
    return (wm / 4) * (wtm * 4) + mi * 64 + (wm % 4) * 16;
}

int64_t Layout::elements() const {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
}

int64_t Layout::columns() const {
    int64_t n = 1;
    for (size_t d = 1; d < shape.size(); ++d) n *= shape[d];
    return n;
}

int64_t Layout::copyBits() const {
    if (kind == Distributed) return copies;
    const int64_t held = 32 * (int64_t)warpsM * warpsN;
    auto pow2 = [](int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
    if (kind != Mma || warpCopies() <= 1 || !pow2(held) || !pow2(threads)) return 0;
    return (threads - 1) & ~(held - 1);
}

int Layout::vthreads() const { return threads >> __builtin_popcountll((unsigned long long)copies); }

int64_t Layout::rounds() const {
    if (kind != Distributed) return 1;
    int64_t tv = (int64_t)vthreads() * vec;
    return (elements() + tv - 1) / tv;
}

int64_t Layout::fullRounds() const {
    if (kind != Distributed) return 1;
    return elements() / ((int64_t)vthreads() * vec);
}

int64_t Layout::slotsPerThread() const {
    switch (kind) {
    case Replicated: return elements();
    case Mma: return opCols ? tilesM() * colGroups() * 2 : tilesM() * tilesN() * 4;
    case MmaRows: return tilesM() * 2;
    case MmaCols: return opCols ? colGroups() : tilesN() * 2;
    default: return rounds() * vec;
    }
}

std::string Layout::describe() const {
    std::string s;
    std::string warps = std::to_string(warpsM) + "x" + std::to_string(warpsN) + " warps";
    if (wgmma) warps += " (wgmma rows)";
    if (kind == Mma) {
        s = (opCols ? "mma operand (tf32 column order) over " : "mma accumulator over ") + warps;
        if (warpCopies() > 1)
            s += " in " + std::to_string(warpCopies()) + " copies (each " + (wgmma ? "warpgroup" : "warp") + std::string(" column holds one)");
    } else if (kind == MmaRows) {
        s = "rows of an mma accumulator over " + warps;
    } else if (kind == MmaCols) {
        s = (opCols ? "columns of an mma operand (tf32 column order) over " : "columns of an mma accumulator over ") + warps;
    } else if (kind == Replicated) {
        s = "replicated";
    } else {
        s = "distributed over " + std::to_string(vthreads()) + " threads, " + std::to_string(vec) + "-wide";
        if (copies) s += ", each held by " + std::to_string(threads / vthreads()) + " threads (copy bits " + std::to_string(copies) + ")";
        if (fullRounds() != rounds()) s += ", last round partial";
    }
    return s + ", " + std::to_string(slotsPerThread()) + " slots per thread";
}

namespace {
Expr i32(int64_t v) { return intImm(v, DType::Int32); }
Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, int64_t c) { return c == 1 ? a : binary(BinaryOp::Mul, std::move(a), i32(c)); }
Expr div(Expr a, int64_t c) { return c == 1 ? a : binary(BinaryOp::FloorDiv, std::move(a), i32(c)); }
Expr mod(Expr a, int64_t c) { return binary(BinaryOp::FloorMod, std::move(a), i32(c)); }
} // namespace

Expr virtualThread(const Layout &l, const Expr &tid) {
    if (l.kind != Layout::Distributed || !l.copies) return tid;
    // The bits of tid outside `copies`, packed: one term per run of such bits.
    Expr u;
    int64_t packed = 0;
    for (int b = 0; (int64_t(1) << b) < l.threads;) {
        if (l.copies >> b & 1) {
            ++b;
            continue;
        }
        int e = b;
        while ((int64_t(1) << e) < l.threads && !(l.copies >> e & 1)) ++e;
        Expr run = div(tid, int64_t(1) << b);
        if ((int64_t(1) << e) < l.threads) run = mod(run, int64_t(1) << (e - b));
        run = mul(run, int64_t(1) << packed);
        u = u ? add(u, run) : run;
        packed += e - b;
        b = e;
    }
    return u ? simplify(u) : i32(0);
}

int64_t virtualThreadOf(const Layout &l, int64_t t) {
    if (l.kind != Layout::Distributed || !l.copies) return t;
    int64_t u = 0, packed = 0;
    for (int b = 0; (int64_t(1) << b) < l.threads; ++b)
        if (!(l.copies >> b & 1)) u |= ((t >> b) & 1) << packed++;
    return u;
}

Expr firstHolder(const Layout &l, const Expr &tid) {
    if (l.kind != Layout::Distributed || !l.copies) return nullptr;
    return binary(BinaryOp::EQ, binary(BinaryOp::BitAnd, tid, i32(l.copies)), i32(0));
}

std::vector<Expr> elementCoords(const Layout &l, const Expr &round, const Expr &tid, const Expr &lane) {
    TILEC_ASSERT(l.kind == Layout::Distributed, "elementCoords of a replicated layout");
    const int64_t V = l.vec, TV = (int64_t)l.vthreads() * l.vec;
    const size_t k = l.shape.size();
    std::vector<Expr> coords(k);
    int64_t stride = 1;
    // With w = tid*V in [0, TV) and the round's base r*TV a multiple of TV, the element is r*TV + w + lane;
    // the lane only moves the innermost coordinate, because V divides the innermost extent.
    for (size_t i = k; i-- > 0;) {
        const int64_t E = l.shape[i], s = stride;
        const bool outermost = i == 0;
        Expr c;
        if (E == 1) {
            c = i32(0);
        } else if (s % TV == 0) {
            // Whole rounds per step of this coordinate: only the round matters.
            c = div(round, s / TV);
            if (!outermost) c = mod(c, E);
        } else if (TV % s == 0) {
            // Several steps per round: r*(TV/s) + tid/(s/V), the thread part below one round.
            Expr t = s >= V ? div(tid, s / V) : div(mul(tid, V), s);
            int64_t perRound = TV / s;
            if (outermost) {
                c = add(mul(round, perRound), t);
            } else if (perRound % E == 0) {
                c = mod(t, E);
            } else if (E % perRound == 0) {
                c = add(mul(mod(round, E / perRound), perRound), t);
            } else {
                c = mod(add(mul(round, perRound), t), E);
            }
        } else {
            Expr e = add(mul(round, TV), mul(tid, V));
            c = div(e, s);
            if (!outermost) c = mod(c, E);
        }
        if (i + 1 == k) c = add(c, lane);
        coords[i] = simplify(c);
        stride *= E;
    }
    return coords;
}

Expr mmaRow(const Layout &l, const Expr &tid, const Expr &mi, const Expr &h) {
    TILEC_ASSERT(l.isMma(), "mmaRow of a layout that is not mma");
    const int64_t wtm = l.shape[0] / l.warpsM;
    Expr wm = l.warpsM == 1 ? i32(0) : mod(div(tid, 32), l.warpsM);
    Expr lane = mod(tid, 32);
    Expr base = add(mul(wm, wtm), mul(mi, 16));
    if (l.wgmma) // see Layout::tileRow
        base = add(add(mul(div(wm, 4), wtm * 4), mul(mi, 64)), mul(mod(wm, 4), 16));
    return simplify(add(add(base, mul(h, 8)), div(lane, 4)));
}

Expr mmaCol(const Layout &l, const Expr &tid, const Expr &ni, const Expr &c) {
    TILEC_ASSERT((l.kind == Layout::Mma || l.kind == Layout::MmaCols) && !l.opCols,
                 "mmaCol of a layout that is not mma, or in the operand order (mmaGroupCol)");
    const bool cols = l.kind == Layout::MmaCols;
    const int64_t wtn = (cols ? l.elements() : l.columns()) / l.warpsN;
    Expr wn = l.warpsN == 1 ? i32(0) : div(div(tid, 32), l.warpsM);
    if (l.warpsN > 1 && (cols ? l.threads > 32 * l.warpsM * l.warpsN : l.warpCopies() > 1)) wn = mod(wn, l.warpsN);
    return simplify(add(add(mul(wn, wtn), mul(ni, 8)), add(mul(mod(tid, 4), 2), c)));
}

Expr mmaGroupCol(const Layout &l, const Expr &tid, const Expr &q) {
    TILEC_ASSERT((l.kind == Layout::Mma || l.kind == Layout::MmaCols) && l.opCols && l.warpsN == 1,
                 "mmaGroupCol of a layout not in the operand order");
    return simplify(add(mul(q, 4), mod(tid, 4)));
}

std::pair<Expr, Expr> mmaSlotRowCol(const Layout &l, const Expr &tid, int64_t slot) {
    TILEC_ASSERT(l.kind == Layout::Mma, "mmaSlotRowCol of a layout that is not mma");
    if (l.opCols) { // slot (mi*nQ + q)*2 + h
        const int64_t h = slot % 2, group = slot / 2, nQ = l.colGroups();
        return {mmaRow(l, tid, i32(group / nQ), i32(h)), mmaGroupCol(l, tid, i32(group % nQ))};
    }
    const int64_t c = slot % 2, h = slot / 2 % 2, tile = slot / 4, nT = l.tilesN();
    return {mmaRow(l, tid, i32(tile / nT), i32(h)), mmaCol(l, tid, i32(tile % nT), i32(c))};
}

std::vector<Expr> mmaViewCoords(const Layout &l, const Expr &row, const Expr &col) {
    TILEC_ASSERT(l.kind == Layout::Mma, "mmaViewCoords of a layout that is not mma");
    std::vector<Expr> coords(l.shape.size());
    coords[0] = row;
    int64_t stride = 1;
    for (size_t d = l.shape.size(); d-- > 1;) {
        Expr c = div(col, stride);
        if (d > 1) c = mod(c, l.shape[d]);
        coords[d] = simplify(c);
        stride *= l.shape[d];
    }
    return coords;
}

Expr mmaRowsOwner(const Layout &l, const Expr &tid) {
    Expr first = binary(BinaryOp::EQ, mod(tid, 4), i32(0));
    if (l.threads == 32 * l.warpsM) return first; // one warp column and no copies
    return binary(BinaryOp::And, first, binary(BinaryOp::LT, tid, i32(32 * l.warpsM)));
}

Expr mmaColsOwner(const Layout &l, const Expr &tid) {
    Expr first = binary(BinaryOp::LT, mod(tid, 32), i32(4));
    if (l.warpsM > 1) first = binary(BinaryOp::And, first, binary(BinaryOp::EQ, mod(div(tid, 32), l.warpsM), i32(0)));
    if (l.threads == 32 * l.warpsM * l.warpsN) return first;
    return binary(BinaryOp::And, first, binary(BinaryOp::LT, tid, i32(32 * l.warpsM * l.warpsN)));
}

int64_t elementOf(const Layout &l, int64_t t, int64_t slot) {
    if (slot < 0 || slot >= l.slotsPerThread() || t < 0 || t >= l.threads) return -1;
    switch (l.kind) {
    case Layout::Replicated: return slot;
    case Layout::Distributed: {
        int64_t e = (slot / l.vec) * l.vthreads() * l.vec + virtualThreadOf(l, t) * l.vec + slot % l.vec;
        return e < l.elements() ? e : -1;
    }
    default: break;
    }
    const int64_t w = t / 32, lane = t % 32, wm = w % l.warpsM, wn = w / l.warpsM % l.warpsN;
    if (l.kind == Layout::MmaRows) return l.tileRow(wm, slot / 2) + (slot % 2) * 8 + lane / 4;
    if (l.kind == Layout::MmaCols && l.opCols) return slot * 4 + lane % 4; // warpsN 1
    if (l.kind == Layout::MmaCols) return wn * (l.elements() / l.warpsN) + (slot / 2) * 8 + (lane % 4) * 2 + slot % 2;
    if (l.opCols) { // slot (mi*nQ + q)*2 + h: row of tile mi, half h; column q*4 + lane%4
        const int64_t h = slot % 2, q = slot / 2 % l.colGroups(), mi = slot / 2 / l.colGroups();
        return (l.tileRow(wm, mi) + h * 8 + lane / 4) * l.columns() + q * 4 + lane % 4;
    }
    const int64_t nT = l.tilesN(), wtn = l.columns() / l.warpsN;
    const int64_t c = slot % 2, h = (slot / 2) % 2, tile = slot / 4, mi = tile / nT, ni = tile % nT;
    int64_t row = l.tileRow(wm, mi) + h * 8 + lane / 4, col = wn * wtn + ni * 8 + (lane % 4) * 2 + c;
    return row * l.columns() + col;
}

std::pair<int, int> wgmmaWarpgroups(int64_t m, int64_t n, int warpgroups, int nStep, ir::GemmPolicy policy) {
    if (warpgroups < 1) return {0, 0};
    auto fits = [&](int wgM, int wgN) {
        return m % (64 * wgM) == 0 && n % wgN == 0 && (n / wgN) % nStep == 0 && n / wgN <= 256;
    };
    // FullCol: the most warpgroups along the columns that divide (TileLang's ComputeWgmmaWarpPartition).
    if (policy == ir::GemmPolicy::FullCol) {
        for (int wgN = warpgroups; wgN >= 1; --wgN)
            if (warpgroups % wgN == 0 && fits(warpgroups / wgN, wgN)) return {warpgroups / wgN, wgN};
        return {0, 0};
    }
    int wgM = 0;
    for (int d = warpgroups; d >= 1 && !wgM; --d)
        if (warpgroups % d == 0 && m % (64 * d) == 0) wgM = d;
    if (!wgM) return {0, 0};
    int wgN = warpgroups / wgM;
    if (!fits(wgM, wgN)) return {0, 0};
    return {wgM, wgN};
}

Expr flattenCoords(const std::vector<Expr> &coords, const std::vector<int64_t> &shape) {
    Expr flat;
    int64_t stride = 1;
    for (size_t i = coords.size(); i-- > 0;) {
        Expr term = mul(coords[i], stride);
        flat = flat ? add(term, flat) : term;
        stride *= shape[i];
    }
    return flat ? simplify(flat) : i32(0);
}

} // namespace tilec::passes
