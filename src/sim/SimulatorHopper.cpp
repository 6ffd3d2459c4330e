/// \file
/// The simulator's model of the Hopper library calls (stdlib/tilec/sm90_*.cuh; Simulator.h).
///
/// mbarriers as PTX defines them: init sets the expected arrival count of each phase; an arrival decrements
/// the pending count, expect_tx raises the transaction count, a TMA load's complete_tx lowers it (it may go
/// below zero first); the phase completes when both reach zero, and the next starts with the expected count.
/// try_wait.parity P succeeds once the phase of parity P has completed, i.e. while the current phase's parity
/// differs from P (a fresh barrier satisfies parity 1 at once).
///
/// Alignment: a TMA destination on 128 bytes; a wgmma operand on the period of its swizzle pattern (8 rows of
/// the span: 1024, 512, 256 bytes), which its descriptor's base offset of 0 assumes (sm90_tma.cuh asks for
/// 1024 throughout; a ring's later stages of a 64B- or 32B-swizzled tile start on their own period only).
///
/// TMA: tma_load_tile issues the library's boxes (one per 16-byte-chunked panel and 256 rows; tma_load_tile_rows
/// those of its box height that start below its `live` row, the rest of the stage keeping its values); each lands at
/// a point the scheduler picks, copying the tensor map's box from the global tensor (zero outside the
/// tensor), at addresses swizzled on their absolute bits by the map's swizzle mode, and completes the box's
/// bytes on the mbarrier. The destination reads as NaN from the issue until the landing.
///
/// wgmma: wgmma_ss reads its shared operands in the panel layout of sm90_wgmma.cuh (the same absolute-address
/// swizzle), at the latest moment allowed, when a wait retires its group, so a stage released or overwritten
/// before that wait is a race (and a wrong value). The accumulators read as NaN from the issue until the wait
/// that retires the last group writing them.
///
/// The epilogue (sm90_store.cuh; modelled in SimulatorStores.cpp): stmatrix_tile writes each thread's accumulators of a piece to their places
/// in the swizzled panel (wgmma's accumulator order), through the generic proxy: an element counts as
/// unfenced until its writer runs fence_proxy_async, and a TMA store issued over an unfenced element is an
/// error. tma_store_tile reads its piece at the latest moment allowed, when a tma_store_wait of the issuing
/// thread retires it (or never: a block exiting with a store not retired is an error), as a component of its
/// own that knows what the issuer knew at the issue, and as the issuing thread at the wait, so an overwrite
/// of the buffer before that wait, or after it without a barrier, is a race (and a wrong value); it then
/// writes the global box, clipped to the tensor.
/// wgmma_sp_ss (SimulatorWgmmaSparse.cpp) reads each thread's metadata from its tile at the issue, its compressed A
/// and B as wgmma_ss does, and rebuilds A's rows from them as the PTX ISA defines sparse wgmma.
/// wgmma_rs reads its A from the issuing threads' registers (the m64k16 fragment order of sm90_wgmma.cuh, tf32's
/// m64k8 one; independent of the compiler's layouts) when the wait retires its group; registers changed between
/// the issue and that wait are an error (the hardware reads them asynchronously).
#include "sim/Simulator.h"
#include "sim/ConsumerGroups.h"
#include "tilec/IRVisitor.h"

namespace tilec::simtest {

struct Simulator::WgmmaGroup {
    int64_t M = 0, N = 0, K = 0, wgM = 1, wgN = 1, swzA = 0, swzB = 0;
    int64_t rows = 0; ///< SS: the tile's rows whose 64-row panels are issued (Gemm::liveRows; M for all)
    bool transA = false, transB = false;
    bool rs = false;                   ///< wgmma_rs: A in the registers of `a` from each thread's aRegs0
    bool sparse = false;               ///< wgmma_sp_ss: `a` compressed, A rebuilt from it and each thread's `meta`
    std::vector<std::vector<uint32_t>> meta; ///< sparse: each thread's metadata registers, loaded at the issue
    const ir::BufferNode *a = nullptr, *b = nullptr, *acc = nullptr;
    int64_t a0 = 0, b0 = 0;
    std::vector<int64_t> aRegs0;       ///< rs: each thread's first A register
    std::vector<std::vector<double>> aAtIssue; ///< rs: each thread's A registers when the group was issued
    int wg = 0, first = 0;             ///< the warpgroup (of its role) and its first thread
    std::vector<int64_t> acc0;         ///< each of its 128 threads' first accumulator
    int64_t count = 0;                 ///< accumulators per thread
    std::shared_ptr<std::vector<std::vector<double>>> shadow; ///< the accumulators' true values, per thread
    Clock issued; ///< what the issuing warpgroup knew at the issue (the earliest its reads can happen)
};

Simulator::Mbarrier &Simulator::mbarrier(std::pair<const ir::BufferNode *, int64_t> at, const char *use) {
    Mbarrier &b = bars_[at];
    if (!b.initialised) throw SimError(std::string(use) + " " + at.first->name + "[" + std::to_string(at.second) + "], an mbarrier never initialised");
    return b;
}

std::string Simulator::describe(std::pair<const ir::BufferNode *, int64_t> at) {
    const Mbarrier &b = bars_[at];
    return at.first->name + "[" + std::to_string(at.second) + "] (" + std::to_string(b.phases) + " phases completed; " +
           std::to_string(b.pending) + " of " + std::to_string(b.expected) + " arrivals and " + std::to_string(b.tx) +
           " transaction bytes pending)";
}

void Simulator::complete(Mbarrier &b) {
    if (b.pending != 0 || b.tx != 0) return;
    ++b.phases;
    b.pending = b.expected;
    b.released.join(b.gathered);
    b.gathered = Clock{};
}

int64_t Simulator::sharedByte(const ir::BufferNode *b, int64_t index) {
    auto off = k_.shared.offsetOf(b);
    if (!off) throw SimError("internal error in the simulator: no shared-memory offset planned for " + b->name);
    return *off + index * b->dtype.bytes();
}

void Simulator::land(TmaLoad &l) {
    if (l.landed) return;
    l.landed = true;
    if (l.map < 0 || l.map >= (int64_t)k_.tensorMaps.size()) throw SimError("a TMA load of tensor map " + std::to_string(l.map) + ", which the kernel does not have");
    const ir::TensorMap &map = k_.tensorMaps[(size_t)l.map];
    const std::vector<int64_t> &dims = mapDims_[(size_t)l.map];
    const int eb = l.elemBytes;
    if ((int)map.box.size() != l.rank || (int)dims.size() != l.rank) throw SimError("a TMA load of rank " + std::to_string(l.rank) + " through a map of rank " + std::to_string(map.box.size()));
    if (map.tensor->dtype.bytes() != eb || l.dst->dtype.bytes() != eb) throw SimError("a TMA load whose element size differs from its tensor's or its destination's");
    // An unswizzled load (swizzle 0) is one dense row in boxes of the map's width, placed one after another, or
    // a dense row-major tile one box wide (T.gemm_sp's metadata of 16-byte rows) in boxes of its rows.
    if (map.swizzleBytes != l.swizzle) throw SimError("a TMA load whose swizzle differs from its tensor map's");
    if (l.swizzle && map.box[0] * eb > map.swizzleBytes) throw SimError("tensor map " + std::to_string(l.map) + "'s inner box is wider than its swizzle span");
    if (!l.swizzle && ((l.rows != 1 && map.box[0] != l.cols) || map.box[0] * eb % 16))
        throw SimError("an unswizzled TMA load of more than one row not one box wide, or of boxes not a multiple of 16 bytes");
    const int W = l.swizzle ? l.swizzle / eb : (int)map.box[0], boxRows = l.boxRows ? l.boxRows : std::min(l.rows, 256);
    if ((l.swizzle || l.rows != 1) && map.box[(size_t)l.rowDim] != boxRows)
        throw SimError("a TMA load in boxes of " + std::to_string(boxRows) + " rows through a map whose box has " +
                       std::to_string(map.box[(size_t)l.rowDim]));
    const int64_t panelBytes = l.swizzle ? l.swizzle : (int64_t)W * eb;
    if (W <= 0 || l.cols % W || l.rows % boxRows) throw SimError("a TMA tile that is not whole panels and boxes");
    const int64_t base = sharedByte(l.dst, l.dstIndex), bufBase = sharedByte(l.dst, 0);
    if (base % 128 || k_.shared.alignment < 128) throw SimError("a TMA tile in " + l.dst->name + " not 128-byte aligned");
    auto &from = *tensors_.at(map.tensor->name);
    auto &to = shared_.at(l.dst);
    int64_t boxElems = 1;
    for (auto e : map.box) boxElems *= e;
    int64_t bytes = 0;
    for (int p = 0; p < l.cols / W; ++p)
        for (int q = 0; q < (l.boxRows ? l.issuedRows : l.rows) / boxRows; ++q) {
            std::array<int64_t, 5> c = l.coords;
            c[0] += p * W;
            c[(size_t)l.rowDim] += q * boxRows;
            const int64_t boxBase = base + ((int64_t)p * l.rows + (int64_t)q * boxRows) * panelBytes;
            for (int64_t e = 0; e < boxElems; ++e) {
                int64_t rest = e, at = 0, stride = 1;
                bool inside = true;
                for (int d = 0; d < l.rank; ++d) {
                    int64_t g = c[(size_t)d] + rest % map.box[(size_t)d];
                    rest /= map.box[(size_t)d];
                    inside &= g >= 0 && g < dims[(size_t)d];
                    at += g * stride;
                    stride *= dims[(size_t)d];
                }
                const int64_t addr = swizzleAddress(boxBase + e * eb, map.swizzleBytes) - bufBase;
                if (addr < 0 || addr / eb >= (int64_t)to.size()) throw SimError("a TMA box lands outside " + l.dst->name);
                double v = 0;
                if (inside && !zeroTile_[(size_t)l.map]) {
                    if (at >= (int64_t)from.size()) throw SimError("a TMA box reads outside the data of " + map.tensor->name);
                    v = from[(size_t)at];
                }
                touchAs(l.comp, l.dst, (size_t)(addr / eb), -1, true);
                to[(size_t)(addr / eb)] = roundTo(l.dst->dtype, v);
            }
            bytes += boxElems * eb;
        }
    Mbarrier &b = mbarrier(l.bar, "a TMA load completes on");
    b.gathered.join(comps_[(size_t)l.comp].clock);
    b.tx -= bytes;
    complete(b);
}

void Simulator::wgmmaIssue(const ir::Call &c, const std::vector<char> &mask) {
    // In a warp role, its warpgroup issues; outside roles (the cp.async path) every warpgroup of the block does.
    if (agent_) {
        if (!wholeScope(mask)) throw SimError("a wgmma issued outside a whole warpgroup of a warp role");
        return wgmmaIssueGroup(c, agent_->first, inConsumerGroup ? 0 : (agent_->first - roleFirst_[agent_->role]) / 128);
    }
    if (!wholeScope(mask) || T_ % 128) throw SimError("a wgmma issued by only some threads, or not by whole warpgroups");
    for (int first = 0; first < T_; first += 128) wgmmaIssueGroup(c, first, first / 128);
}

void Simulator::wgmmaIssueGroup(const ir::Call &c, int first, int wg) {
    using passes::lib::Fn;
    const Fn fn = passes::lib::find(c.name)->fn; // wgmma_ss (_init), wgmma_rs or wgmma_sp_ss
    auto num = [&](const char *n) { return (int64_t)eval(passes::lib::arg(c, fn, n), first); };
    auto g = std::make_shared<WgmmaGroup>();
    g->rs = fn == Fn::WgmmaRS;
    g->sparse = fn == Fn::WgmmaSpSS;
    g->M = num("M"), g->N = num("N"), g->K = num("K"), g->wgM = num("wgM"), g->wgN = num("wgN");
    g->transB = num("transB") != 0, g->swzB = num("swzB");
    if (!g->rs) g->transA = !g->sparse && num("transA") != 0, g->swzA = num("swzA");
    g->rows = g->rs || g->sparse ? g->M : num("rows");
    // live rows at run time: each warpgroup's panels that start at or past them are not issued
    if (const ir::Expr *live = fn != Fn::WgmmaSS ? nullptr : passes::lib::optionalArg(c, fn, "live"))
        g->rows = std::min(g->rows, (int64_t)eval(*live, first));
    std::tie(g->a, g->a0) = addressOf(passes::lib::arg(c, fn, "a"), first);
    std::tie(g->b, g->b0) = addressOf(passes::lib::arg(c, fn, "b"), first);
    g->wg = wg;
    g->first = first;
    if (g->wgM <= 0 || g->wgN <= 0 || g->wg >= g->wgM * g->wgN) throw SimError("wgmma warpgroup " + std::to_string(g->wg) + " beyond its " + std::to_string(g->wgM) + " x " + std::to_string(g->wgN));
    const int64_t Mw = g->M / g->wgM, Nw = g->N / g->wgN;
    if (Mw % 64 || Nw % 8 || g->M % g->wgM || g->N % g->wgN) throw SimError("a wgmma split the library cannot do");
    g->count = Mw / 64 * Nw / 2;
    if (g->sparse) {
        if (g->K % 32 || g->a->dtype.bytes() != 2 || g->b->dtype != g->a->dtype) throw SimError("a wgmma_sp_ss the library cannot do");
        for (int t = first; t < first + 128; ++t) g->meta.push_back(wgmmaSpMetadata(c, t, Mw, g->wg % g->wgM));
    }
    std::vector<std::tuple<const ir::BufferNode *, int64_t, int64_t>> shared{{g->b, g->b0, g->swzB}};
    if (!g->rs) shared.push_back({g->a, g->a0, g->swzA});
    for (auto [op, at, span] : shared)
        if (op->scope != ir::Scope::Shared) throw SimError("a wgmma shared operand outside shared memory");
    if (g->rs) {
        // each warpgroup reads its own A registers: with wgN > 1 every warpgroup column holds a copy of its rows
        // float8: the same accumulator-order fragment (the library shuffles it into wgmma's m64k32 registers);
        // tf32: m64k8's four registers a step, one float each
        const bool tf32 = g->a->dtype.bytes() == 4 && g->a->dtype.isFloat();
        if (g->a->dtype.isFloat8() || tf32 ? g->K % (tf32 ? 8 : 32) || !g->transB : g->a->dtype.bytes() != 2 || g->K % 16)
            throw SimError("a wgmma_rs the library cannot do");
        const int64_t n = tf32 ? Mw / 64 * (g->K / 8) * 4 : Mw / 64 * (g->K / 16) * 8;
        for (int t = first; t < first + 128; ++t) {
            auto [regs, r0] = addressOf(passes::lib::arg(c, fn, "a"), t);
            auto &v = storage(regs, t);
            if (regs != g->a || r0 < 0 || r0 + n > (int64_t)v.size()) throw SimError("wgmma_rs A registers outside " + regs->name);
            g->aRegs0.push_back(r0);
            g->aAtIssue.emplace_back(v.begin() + r0, v.begin() + r0 + n);
        }
    }
    // The descriptors' base offset is 0: each operand starts on a period of its swizzle pattern (8 rows).
    for (auto [buf, at, span] : shared)
        if (sharedByte(buf, at) % (8 * span) || k_.shared.alignment < 8 * span)
            throw SimError("a wgmma operand in " + buf->name + " not aligned to its swizzle period of " + std::to_string(8 * span) + " bytes");
    // Chain onto the in-flight group writing the same accumulators, else start from the registers.
    auto &flight = comps_[(size_t)cur_].wgmma;
    for (int t = first; t < first + 128; ++t) {
        auto [acc, a0] = addressOf(passes::lib::arg(c, fn, "c"), t);
        g->acc = acc;
        g->acc0.push_back(a0);
    }
    for (auto &o : flight)
        if (o->acc == g->acc && o->acc0 == g->acc0 && o->first == g->first) g->shadow = o->shadow;
    if (fn == Fn::WgmmaSSInit) {
        // scale-d 0: the old values are never read; a group in flight on them would race with the overwrite
        if (g->shadow) throw SimError("wgmma_ss_init over accumulators a wgmma group in flight writes");
        if (g->rows != g->M) throw SimError("wgmma_ss_init of only some panels (the rest would keep stale values)");
        g->shadow = std::make_shared<std::vector<std::vector<double>>>(128, std::vector<double>((size_t)g->count, 0.0));
        for (int t = first; t < first + 128; ++t) {
            const int64_t a0 = g->acc0[(size_t)(t - first)];
            if (a0 < 0 || a0 + g->count > (int64_t)storage(g->acc, t).size()) throw SimError("wgmma accumulators outside " + g->acc->name);
        }
    }
    if (!g->shadow) {
        g->shadow = std::make_shared<std::vector<std::vector<double>>>();
        for (int t = first; t < first + 128; ++t) {
            auto &regs = storage(g->acc, t);
            const int64_t a0 = g->acc0[(size_t)(t - first)];
            if (a0 < 0 || a0 + g->count > (int64_t)regs.size()) throw SimError("wgmma accumulators outside " + g->acc->name);
            g->shadow->emplace_back(regs.begin() + a0, regs.begin() + a0 + g->count);
        }
    }
    for (int t = first; t < first + 128; ++t) {
        auto &regs = storage(g->acc, t);
        std::fill(regs.begin() + g->acc0[(size_t)(t - first)], regs.begin() + g->acc0[(size_t)(t - first)] + g->count, std::nan(""));
    }
    g->issued = comps_[(size_t)cur_].clock;
    flight.push_back(std::move(g));
}

void Simulator::wgmmaRetire(int64_t keep) {
    auto &flight = comps_[(size_t)cur_].wgmma;
    while ((int64_t)flight.size() > keep) {
        std::shared_ptr<WgmmaGroup> g = flight.front();
        flight.erase(flight.begin());
        const int64_t M = g->M, N = g->N, K = g->K, Mw = M / g->wgM, Nw = N / g->wgN;
        const int64_t wgm = g->wg % g->wgM, wgn = g->wg / g->wgM, nT = Nw / 8;
        // the operand element (r, c) of a rows x cols panel-layout tile
        auto element = [&](const ir::BufferNode *buf, int64_t base, int64_t rows, int64_t r, int64_t col, int64_t span) {
            const int64_t eb = buf->dtype.bytes(), W = span / eb;
            int64_t byte = sharedByte(buf, base) + col / W * rows * span + r * span + col % W * eb;
            size_t at = (size_t)((swizzleAddress(byte, (int)span) - sharedByte(buf, 0)) / eb);
            if (at >= shared_.at(buf).size()) throw SimError("a wgmma reads outside " + buf->name);
            touchAs(cur_, buf, at, g->first, false, &g->issued);
            return shared_.at(buf)[at];
        };
        std::vector<double> A((size_t)(Mw * K)), B((size_t)(K * Nw));
        const bool tf32 = g->rs && g->a->dtype.bytes() == 4 && g->a->dtype.isFloat();
        if (g->rs) // register r of lane l, warp w: two elements of row mi*64 + w*16 + (j%2)*8 + l/4, columns
                   // ki*16 + (j/2)*8 + (l%4)*2 + {0, 1}, with r = (mi*KT + ki)*4 + j (tf32: one, below)
            for (int lt = 0; lt < 128; ++lt) {
                auto &now = storage(g->a, g->first + lt);
                const auto &then = g->aAtIssue[(size_t)lt];
                const int64_t lane = lt % 32, warp = lt / 32, KT = K / 16;
                for (size_t e = 0; e < then.size(); ++e) {
                    double v = now.at((size_t)g->aRegs0[(size_t)lt] + e);
                    if (!(v == then[e]) && !(std::isnan(v) && std::isnan(then[e])))
                        throw SimError("the A registers " + g->a->name + " of a wgmma_rs in flight changed in thread " +
                                       std::to_string(g->first + lt) + " before the wait that retires it");
                    if (tf32) { // register r: row mi*64 + w*16 + (j%2)*8 + l/4, column ki*8 + (j/2)*4 + l%4
                        const int64_t r = (int64_t)e, KT8 = K / 8, mi = r / (KT8 * 4), ki = r / 4 % KT8, j = r % 4;
                        const int64_t row = mi * 64 + warp * 16 + j % 2 * 8 + lane / 4;
                        A[(size_t)(row * K + ki * 8 + j / 2 * 4 + lane % 4)] = v;
                        continue;
                    }
                    const int64_t r = (int64_t)e / 2, mi = r / (KT * 4), ki = r / 4 % KT, j = r % 4;
                    const int64_t row = mi * 64 + warp * 16 + j % 2 * 8 + lane / 4;
                    const int64_t col = ki * 16 + j / 2 * 8 + lane % 4 * 2 + (int64_t)e % 2;
                    A[(size_t)(row * K + col)] = v;
                }
            }
        else if (g->sparse) // the compressed (M, K/2) tile in the panel layout, expanded by the metadata registers
            wgmmaSpRows(A, Mw, K, g->meta, [&](int64_t i, int64_t col) { return element(g->a, g->a0, M, wgm * Mw + i, col, g->swzA); });
        else for (int64_t i = 0; i < Mw; ++i)
            for (int64_t k = 0; k < K && wgm * Mw + i / 64 * 64 < g->rows; ++k) { // the issued panels' rows only
                int64_t row = wgm * Mw + i;
                A[(size_t)(i * K + k)] = g->transA ? element(g->a, g->a0, K, k, row, g->swzA) : element(g->a, g->a0, M, row, k, g->swzA);
            }
        for (int64_t k = 0; k < K; ++k)
            for (int64_t j = 0; j < Nw; ++j) {
                int64_t col = wgn * Nw + j;
                B[(size_t)(k * Nw + j)] = g->transB ? element(g->b, g->b0, N, col, k, g->swzB) : element(g->b, g->b0, K, k, col, g->swzB);
            }
        for (int lt = 0; lt < 128; ++lt) {
            const int lane = lt % 32, warp = lt / 32;
            auto &acc = (*g->shadow)[(size_t)lt];
            for (int64_t slot = 0; slot < g->count; ++slot) {
                const int64_t cc = slot % 2, h = slot / 2 % 2, ni = slot / 4 % nT, mi = slot / 4 / nT;
                if (wgm * Mw + mi * 64 >= g->rows) continue; // a panel not issued: its accumulators stay
                const int64_t i = mi * 64 + warp * 16 + h * 8 + lane / 4, j = ni * 8 + lane % 4 * 2 + cc;
                double sum = acc[(size_t)slot];
                for (int64_t k = 0; k < K; ++k) sum += A[(size_t)(i * K + k)] * B[(size_t)(k * Nw + j)];
                acc[(size_t)slot] = roundTo(g->acc->dtype, sum);
            }
        }
        bool last = std::none_of(flight.begin(), flight.end(), [&](auto &o) { return o->shadow == g->shadow; });
        if (last)
            for (int lt = 0; lt < 128; ++lt) {
                auto &regs = storage(g->acc, g->first + lt);
                std::copy((*g->shadow)[(size_t)lt].begin(), (*g->shadow)[(size_t)lt].end(), regs.begin() + g->acc0[(size_t)lt]);
            }
    }
}

/// A TMA tile load issued by thread `t`: its destination reads as NaN until the load lands, which it does as
/// a component of its own (the issuer's knowledge at the issue).
void Simulator::tmaLoadIssue(const ir::Call &c, const passes::lib::Info &info, int t) {
    auto bar = [&]() { return addressOf(passes::lib::arg(c, info.fn, "bar"), t); };
    auto num = [&](const char *n) { return (int64_t)eval(passes::lib::arg(c, info.fn, n), t); };
    TmaLoad l;
    l.rank = (int)num("rank"), l.rowDim = (int)num("rowDim"), l.rows = (int)num("rows");
    l.cols = (int)num("cols"), l.elemBytes = (int)num("elemBytes"), l.swizzle = (int)num("swizzle");
    std::tie(l.dst, l.dstIndex) = addressOf(passes::lib::arg(c, info.fn, "dst"), t);
    l.map = num("map");
    l.bar = bar();
    const char *coord[5] = {"c0", "c1", "c2", "c3", "c4"};
    for (int d = 0; d < 5; ++d) l.coords[(size_t)d] = num(coord[d]);
    const bool row = l.swizzle == 0 && l.rows == 1 && l.rowDim == 0; // an unswizzled 1-D load
    if (l.rank < 1 || l.rank > 5 || (!row && (l.rowDim < 1 || l.rowDim >= l.rank))) throw SimError("a TMA load of rank " + std::to_string(l.rank) + ", row dimension " + std::to_string(l.rowDim));
    auto &to = shared_.at(l.dst);
    if (l.dstIndex < 0 || l.dstIndex + (int64_t)l.rows * l.cols > (int64_t)to.size()) throw SimError("a TMA tile outside " + l.dst->name);
    if (info.fn == passes::lib::Fn::TmaLoadTileRows) {
        // boxes of boxRows rows from the tile's top while they start below `live`; the rest keep what they held
        l.boxRows = (int)num("boxRows");
        const int64_t live = num("live");
        if (l.boxRows <= 0 || l.rows % l.boxRows || !l.swizzle) throw SimError("a TMA load in boxes that do not tile its rows");
        l.issuedRows = (int)std::min<int64_t>(l.rows, live <= 0 ? 0 : (live + l.boxRows - 1) / l.boxRows * l.boxRows);
        const int64_t W = l.swizzle / l.elemBytes;
        for (int64_t p = 0; p < l.cols / W; ++p)
            std::fill(to.begin() + l.dstIndex + p * l.rows * W, to.begin() + l.dstIndex + (p * l.rows + l.issuedRows) * W, std::nan(""));
    } else {
        std::fill(to.begin() + l.dstIndex, to.begin() + l.dstIndex + (int64_t)l.rows * l.cols, std::nan(""));
    }
    l.comp = (int)comps_.size();
    Comp tc;
    tc.name = "the TMA load #" + std::to_string(tma_.size()) + " into " + l.dst->name + " issued by " + who(cur_, t);
    tc.clock = comps_[(size_t)cur_].clock;
    tc.clock.set((size_t)l.comp, 0);
    comps_.push_back(std::move(tc));
    tma_.push_back(l);
    // The load knows what its issuer did before the issue, not after: the issuer's later accesses (a producer
    // thread's own stores into the stage, T.gemm_sp's metadata) are not ordered before the load's barrier by it.
    Comp &issuer = comps_[(size_t)cur_];
    issuer.clock.set((size_t)cur_, issuer.clock.at((size_t)cur_) + 1);
}

void Simulator::hopper(const ir::Call &c, const passes::lib::Info &info, const std::vector<char> &mask) {
    using passes::lib::Fn;
    const int first = (int)(std::find(mask.begin(), mask.end(), 1) - mask.begin());
    auto bar = [&](int t) { return addressOf(passes::lib::arg(c, info.fn, "bar"), t); };
    auto num = [&](const char *n, int t) { return (int64_t)eval(passes::lib::arg(c, info.fn, n), t); };
    switch (info.fn) {
    case Fn::MbarrierInit:
        for (int t = 0; t < T_; ++t)
            if (mask[t]) {
                Mbarrier &b = bars_[bar(t)];
                b = Mbarrier{};
                b.initialised = true;
                b.expected = b.pending = num("arrivals", t);
                if (b.expected < 1) throw SimError("an mbarrier initialised for " + std::to_string(b.expected) + " arrivals");
            }
        return;
    case Fn::MbarrierInitFence:
    case Fn::WgmmaFenceOperands: return; // compiler-only: no effect on the values
    case Fn::FenceProxyAsync:
        for (int t = 0; t < T_; ++t)
            if (mask[t]) {
                for (auto &e : unfencedBy_[t])
                    if (auto it = unfenced_.find(e); it != unfenced_.end() && it->second == t) unfenced_.erase(it);
                unfencedBy_[t].clear();
            }
        return;
    case Fn::MbarrierExpectTx:
        for (int t = 0; t < T_; ++t)
            if (mask[t]) mbarrier(bar(t), "an expect_tx on").tx += num("bytes", t);
        return maybeSwitch();
    case Fn::MbarrierArrive:
    case Fn::MbarrierArriveEach:
    case Fn::MbarrierArriveExpectTx:
        for (int t = 0; t < T_; ++t)
            if (mask[t]) {
                auto at = bar(t);
                Mbarrier &b = mbarrier(at, "an arrival on");
                if (info.fn == Fn::MbarrierArriveExpectTx) b.tx += num("bytes", t);
                if (b.pending <= 0) throw SimError("more arrivals on " + describe(at) + " than it expects");
                release(b.gathered);
                --b.pending;
                complete(b);
            }
        return maybeSwitch();
    case Fn::MbarrierWait: {
        maybeSwitch();
        auto at = bar(first);
        const int64_t parity = num("parity", first);
        for (int t = 0; t < T_; ++t)
            if (mask[t] && (bar(t) != at || num("parity", t) != parity)) throw SimError("an mbarrier wait that differs between the threads of " + comps_[(size_t)cur_].name);
        Mbarrier &b = mbarrier(at, "a wait on");
        waitUntil([&b, parity] { return (b.phases & 1) != (parity & 1); },
                  [this, at, parity, loc = c.loc] {
                      return describe(at) + " for the phase of parity " + std::to_string(parity) +
                             (loc.valid() ? " (the wait at line " + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ")" : "");
                  });
        acquire(b.released);
        return;
    }
    case Fn::TmaLoadTile:
    case Fn::TmaLoadTileRows:
        for (int t = 0; t < T_; ++t)
            if (mask[t]) tmaLoadIssue(c, info, t);
        return maybeSwitch();
    case Fn::WgmmaSS:
    case Fn::WgmmaSSInit:
    case Fn::WgmmaRS:
    case Fn::WgmmaSpSS:
        wgmmaIssue(c, mask);
        return maybeSwitch();
    case Fn::WgmmaWait:
    case Fn::WgmmaWaitAcc:
        if (!wholeScope(mask)) throw SimError("a wgmma wait outside a whole warpgroup of a warp role, or by only some threads");
        maybeSwitch();
        wgmmaRetire(num("pending", first));
        return;
    case Fn::WgmmaClear:
        for (int t = 0; t < T_; ++t)
            if (mask[t]) {
                auto [acc, a0] = addressOf(passes::lib::arg(c, info.fn, "acc"), t);
                for (auto &g : comps_[(size_t)cur_].wgmma)
                    if (g->acc == acc) throw SimError("wgmma_clear of accumulators a wgmma group in flight writes");
                auto &regs = storage(acc, t);
                const int64_t n = num("count", t);
                if (a0 < 0 || a0 + n > (int64_t)regs.size()) throw SimError("wgmma_clear outside " + acc->name);
                std::fill(regs.begin() + a0, regs.begin() + a0 + n, 0.0);
            }
        return;
    case Fn::StmatrixTile: return stmatrix(c, mask);
    case Fn::TmaStoreTile:
        for (int t = 0; t < T_; ++t)
            if (mask[t]) tmaStoreIssue(c, info, t);
        return maybeSwitch();
    case Fn::BulkStore:
        for (int t = 0; t < T_; ++t)
            if (mask[t]) bulkStoreIssue(c, t);
        return maybeSwitch();
    case Fn::TmaStoreWait:
        for (int t = 0; t < T_; ++t)
            if (mask[t]) {
                auto &list = stores_[t];
                const int64_t keep = num("pending", t);
                while ((int64_t)list.size() > keep) {
                    TmaStore s = list.front();
                    list.erase(list.begin());
                    retireStore(s);
                }
            }
        return;
    case Fn::MaxNregInc:
    case Fn::MaxNregDec: return maxNreg(c, mask);
    default: throw SimError(std::string("no simulation of ") + info.name);
    }
}

/// setmaxnreg (.sync.aligned): no effect on the values, but every thread of a warp group that runs it runs it
/// together (all 128 threads of the warp group, none of which may be missing from the block), at a count PTX takes.
void Simulator::maxNreg(const ir::Call &c, const std::vector<char> &mask) {
    const bool inc = passes::lib::is(c, passes::lib::Fn::MaxNregInc);
    const int first = (int)(std::find(mask.begin(), mask.end(), 1) - mask.begin());
    const std::string at = c.loc.valid() ? " (line " + std::to_string(c.loc.line) + ":" + std::to_string(c.loc.col) + ")" : "";
    const int64_t regs = (int64_t)eval(passes::lib::arg(c, inc ? passes::lib::Fn::MaxNregInc : passes::lib::Fn::MaxNregDec, "regs"), first);
    if (regs < 24 || regs > 256 || regs % 8) throw SimError("setmaxnreg " + std::to_string(regs) + " outside 24..256 in steps of 8" + at);
    for (int w = 0; w * 128 < T_; ++w) {
        const int end = std::min(T_, w * 128 + 128);
        const int n = (int)std::count(mask.begin() + w * 128, mask.begin() + end, 1);
        if (n && n != 128)
            throw SimError("setmaxnreg" + at + " run by " + std::to_string(n) + " of the 128 threads of warp group " + std::to_string(w) +
                           " (every thread of the warp group must run it together)");
    }
}

} // namespace tilec::simtest
