/// \file
/// The simulator's model of the portable device library calls lowered kernels make (stdlib/tilec): tile
/// transfers (cp.async with commit groups and waits), the mma.sync GEMMs and the shared-tile swizzle; the
/// Hopper ones are in SimulatorHopper.cpp. The model is deliberately pessimistic about asynchrony: a
/// transfer's destination is claimed (written, for the race check) and poisoned with NaN when it is issued,
/// and receives its values only when a wait completes its group, so a read that is not ordered after the
/// wait and a barrier shows up as a race or a NaN. Commit groups are per component (the block, or an agent).
#include "sim/Simulator.h"
#include "sim/ConsumerGroups.h"

#include <cmath>
#include <cstring>
#include <tuple>

namespace tilec::simtest {

namespace {

/// C += A B (M x K times K x N, row-major) into the accumulators of the threads in `mask`, each thread's slots in
/// the order of `lc` (the mma accumulator layout), rounded to the accumulator type once. `regs(t)`: thread t's
/// (storage, offset of its first slot, type).
template <class Regs>
void accumulate(const std::vector<double> &A, const std::vector<double> &B, int64_t K, const passes::Layout &lc,
                const std::vector<char> &mask, int scopeFirst, Regs regs) {
    const int64_t N = lc.shape[1];
    for (int t = 0; t < (int)mask.size(); ++t) {
        if (!mask[(size_t)t]) continue;
        auto [s, c0, type] = regs(t);
        for (int64_t slot = 0; slot < lc.slotsPerThread(); ++slot) {
            int64_t e = passes::elementOf(lc, t - scopeFirst, slot), i = e / N, j = e % N;
            double acc = s->at(c0 + slot);
            for (int64_t k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
            s->at(c0 + slot) = roundToDType(type, acc);
        }
    }
}

/// Whether `v` is a float whose low 13 fraction bits are clear (tf32 represents it; cvt.rna.tf32 keeps it), or NaN
/// (an unwritten element, which rounding would not make right either).
bool tf32Value(double v) {
    if (std::isnan(v)) return true;
    const float f = (float)v;
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return (double)f == v && (bits & 0x1fffu) == 0;
}

/// The warps of a block of `threads` that run a warp instruction (`what`) under `mask`: fn(w) for each warp w with a
/// lane in the mask; an error where some but not all 32 lanes of a warp run it.
template <class F> void wholeWarps(const std::vector<char> &mask, int threads, const char *what, F fn) {
    for (int w = 0; w * 32 < threads; ++w) {
        int on = 0;
        for (int l = 0; l < 32 && w * 32 + l < threads; ++l) on += mask[(size_t)(w * 32 + l)] != 0;
        if (!on) continue;
        if (on != 32) throw SimError(std::string(what) + " run by " + std::to_string(on) + " lanes of a warp (all 32 must)");
        fn(w);
    }
}

} // namespace

std::pair<const ir::BufferNode *, int64_t> Simulator::addressOf(const ir::Expr &e, int t) {
    const ir::Load *l = passes::addressedLoad(e);
    if (!l || l->indices.size() != 1) throw SimError("library call without an address");
    return {l->buffer.get(), (int64_t)eval(l->indices[0], t)};
}

/// A thread's cp.async chunk (a gathered fill's, GatherTransfers.h): each issuing thread's own `bytes`, read where
/// `valid` (else zeros), landing at its group's wait.
void Simulator::cpAsyncChunk(const ir::Call &c, const passes::lib::Info &info, const std::vector<char> &mask) {
    Comp &me = comps_[(size_t)cur_];
    if (info.fn == passes::lib::Fn::CpAsyncArrive) {
        // cp.async.mbarrier.arrive: the phase cannot complete before the arriving threads' copies land, and the
        // thread's own arrival follows at once, so they land now (the latest moment any waiter can tell apart)
        auto mine = [&](const Landing &w) { return w.thread >= 0 && mask[(size_t)w.thread]; };
        auto take = [&](std::vector<Landing> &from) {
            for (auto &w : from)
                if (mine(w)) {
                    shared_.at(w.buffer)[w.index] = w.value;
                    forAliased(w.buffer, w.index, [&](const ir::BufferNode *o, size_t j) { shared_.at(o)[j] = std::nan(""); });
                }
            from.erase(std::remove_if(from.begin(), from.end(), mine), from.end());
        };
        take(me.open);
        for (auto &g : me.pending) take(g);
        return;
    }
    const int64_t bytes = (int64_t)eval(passes::lib::arg(c, info.fn, "bytes"), 0); // a constant
    for (int t = 0; t < T_; ++t) {
        if (!mask[(size_t)t]) continue;
        auto [dst, d0] = addressOf(passes::lib::arg(c, info.fn, "dst"), t);
        auto [src, s0] = addressOf(passes::lib::arg(c, info.fn, "src"), t);
        const bool valid = eval(passes::lib::arg(c, info.fn, "valid"), t) != 0;
        const int64_t n = bytes / dst->dtype.bytes();
        if (bytes != 4 && bytes != 8 && bytes != 16) throw SimError("a cp.async of " + std::to_string(bytes) + " bytes");
        if (d0 % n || (valid && s0 % n)) throw SimError("a cp.async chunk of " + std::to_string(n) + " elements misaligned in " + (d0 % n ? dst : src)->name);
        auto &to = storage(dst, t);
        for (int64_t e = 0; e < n; ++e) {
            if (d0 + e < 0 || d0 + e >= (int64_t)to.size()) throw SimError("cp.async chunk out of " + dst->name);
            double v = 0;
            if (valid) {
                auto &from = storage(src, t);
                if (s0 + e < 0 || s0 + e >= (int64_t)from.size()) throw SimError("cp.async chunk reads out of " + src->name);
                v = from[(size_t)(s0 + e)];
            }
            touch(dst, (size_t)(d0 + e), t, true);
            to[(size_t)(d0 + e)] = std::nan("");
            me.open.push_back({dst, (size_t)(d0 + e), roundTo(dst->dtype, v), t});
        }
    }
}

void Simulator::library(const ir::Call &c, const passes::lib::Info &info, const std::vector<char> &mask) {
    using passes::lib::Fn;
    const int first = (int)(std::find(mask.begin(), mask.end(), 1) - mask.begin());
    auto arg = [&](const char *n) { return (int64_t)eval(passes::lib::arg(c, info.fn, n), first); };
    Comp &me = comps_[(size_t)cur_];
    // the threads of the scope (the block, or the role of the running agent)
    const int scopeFirst = !agent_ ? 0 : inConsumerGroup ? agent_->first : roleFirst_[agent_->role],
              scopeThreads = !agent_ ? T_ : inConsumerGroup ? agent_->count : roleCount_[agent_->role];
    auto land = [&](std::vector<Landing> &group) {
        for (auto &w : group) {
            shared_.at(w.buffer)[w.index] = w.value;
            forAliased(w.buffer, w.index, [&](const ir::BufferNode *o, size_t j) { shared_.at(o)[j] = std::nan(""); });
        }
    };
    switch (info.fn) {
    case Fn::CpAsyncCommit:
        me.pending.push_back(std::move(me.open));
        me.open.clear();
        return;
    case Fn::CpAsyncWait: {
        size_t keep = (size_t)arg("pending");
        while (me.pending.size() > keep) {
            land(me.pending.front());
            me.pending.erase(me.pending.begin());
        }
        return;
    }
    case Fn::CopyG2S:
    case Fn::CopyG2SWait: {
        if (!wholeScope(mask)) throw SimError("a tile transfer issued by only some threads");
        const int64_t R = arg("rows"), C = arg("cols"), vec = arg("vec"), threads = arg("threads"), swz = arg("swizzle");
        auto [dst, d0] = addressOf(passes::lib::arg(c, info.fn, "dst"), first);
        auto [src, s0] = addressOf(passes::lib::arg(c, info.fn, "src"), first);
        const int64_t ldg = arg("ldg"), vr = arg("validRows"), vc = arg("validCols");
        auto &from = storage(src, first);
        auto &to = storage(dst, first);
        const int64_t eb = dst->dtype.bytes(), tile = R * C;
        // the panel span the layout names (cp_async.cuh's g2s_panel_span), 0 for the row-major and row-swizzled ones
        const int64_t span = passes::lib::transferPanelSpan(swz, C * eb);
        if (!span && swz != passes::lib::kTransferPlain && swz != passes::lib::kTransferSwizzled)
            throw SimError("a tile transfer of layout " + std::to_string(swz) + ", which no rows of " + std::to_string(C * eb) + " bytes take");
        // What the device library requires of its caller (tilec/cp_async.cuh): every vector it reads starts
        // on a multiple of Vec elements (tensors start aligned here), and no vector straddles the tensor's edge.
        if (vc > 0 && vc < C && vc % vec) throw SimError("a tile transfer of " + std::to_string(vec) + "-element vectors with " +
                                                           std::to_string(vc) + " valid columns");
        for (int64_t r = 0; r < std::min(R, vr); ++r)
            if ((s0 + r * ldg) % vec) throw SimError("a tile transfer of " + std::to_string(vec) + "-element vectors from a misaligned row of " + src->name);
        for (int64_t r = 0; r < R; ++r)
            for (int64_t col = 0; col < C; ++col) {
                int64_t chunk = (r * C + col) / vec;
                int writer = scopeFirst + (int)(chunk % threads);
                if (writer >= T_ || !mask[(size_t)writer]) continue; // another agent's share
                const int64_t o = r * C + col;
                int64_t at = d0 + (span ? panelled(C, eb, span, tile, o) : swz ? swizzled(C, eb, tile, o) : o);
                if (at < 0 || at >= (int64_t)to.size()) throw SimError("tile transfer out of " + dst->name);
                double v = 0;
                if (r < vr && col < vc) {
                    int64_t from_at = s0 + r * ldg + col;
                    if (from_at < 0 || from_at >= (int64_t)from.size()) throw SimError("tile transfer reads out of " + src->name);
                    v = from[from_at];
                }
                touch(dst, (size_t)at, writer, true);
                to[at] = std::nan("");
                me.open.push_back({dst, (size_t)at, roundTo(dst->dtype, v)});
            }
        if (info.fn == Fn::CopyG2SWait) { // commit, then wait for every group
            me.pending.push_back(std::move(me.open));
            me.open.clear();
            for (auto &g : me.pending) land(g);
            me.pending.clear();
        }
        return;
    }
    case Fn::CpAsyncChunk:
    case Fn::CpAsyncCopy:
    case Fn::CpAsyncArrive: return cpAsyncChunk(c, info, mask);
    case Fn::GemmSS:
    case Fn::GemmRS:
    case Fn::GemmSSPanels:
    case Fn::GemmRSPanels: {
        if (!wholeScope(mask)) throw SimError("a T.gemm run by only some threads");
        const bool rs = info.fn == Fn::GemmRS || info.fn == Fn::GemmRSPanels;
        const bool panels = info.fn == Fn::GemmSSPanels || info.fn == Fn::GemmRSPanels;
        const int64_t M = arg("M"), N = arg("N"), K = arg("K"), wm = arg("warpsM"), wn = arg("warpsN");
        const bool ta = rs ? false : arg("transA") != 0, tb = arg("transB") != 0;
        const int64_t swzA = panels && !rs ? arg("swzA") : 0, swzB = panels ? arg("swzB") : 0;
        // The element index of logical offset `o` of a rows x cols tile at `base`: the row swizzle of
        // swizzle.cuh, or (span > 0) TMA's panel layout of that span, swizzled on absolute address bits.
        auto stored = [&](const ir::BufferNode *buf, int64_t base, int64_t rows, int64_t cols, int64_t o, int64_t span) {
            const int64_t eb = buf->dtype.bytes();
            if (!span) return (size_t)(base + swizzled(cols, eb, rows * cols, o));
            const int64_t r = o / cols, col = o % cols, W = span / eb;
            if (cols % W) throw SimError("an mma.sync operand of " + std::to_string(cols) + " columns in panels of " + std::to_string(span) + " bytes");
            const int64_t byte = sharedByte(buf, base) + col / W * rows * span + r * span + col % W * eb;
            return (size_t)((swizzleAddress(byte, (int)span) - sharedByte(buf, 0)) / eb);
        };
        const int active = (int)std::count(mask.begin(), mask.end(), 1);
        // The whole A and B, read as the threads' ldmatrix / register reads would.
        std::vector<double> A(M * K, rs ? std::nan("") : 0.0), B(K * N);
        if (rs) {
            // A's registers in the layout the call names (the accumulator order, or the tf32 operand order: opA), the
            // running threads' only (another consumer warpgroup's may hold another stage's; each warp holds its rows)
            passes::Layout la = arg("opA") ? passes::Layout::mmaOperand({M, K}, scopeThreads, (int)wm)
                                           : passes::Layout::mma({M, K}, scopeThreads, (int)wm, 1);
            for (int t = scopeFirst; t < scopeFirst + scopeThreads; ++t) {
                if (!mask[(size_t)t]) continue;
                auto [regs, r0] = addressOf(passes::lib::arg(c, info.fn, "a"), t);
                auto &s = storage(regs, t);
                for (int64_t slot = 0; slot < la.slotsPerThread(); ++slot)
                    A[passes::elementOf(la, t - scopeFirst, slot)] = s.at(r0 + slot);
            }
            // exactA: the device hands A's bits to the tensor cores unrounded, right only for tf32 values
            if (arg("exactA"))
                for (double v : A)
                    if (!tf32Value(v))
                        throw SimError("T.gemm's A was proved to hold tf32 values only (exactA), but holds " +
                                       std::to_string(v) + ", which tf32 does not represent");
        } else {
            auto [buf, a0] = addressOf(passes::lib::arg(c, info.fn, "a"), first);
            const int64_t cols = ta ? M : K;
            for (int64_t i = 0; i < M; ++i)
                for (int64_t k = 0; k < K; ++k) {
                    int64_t o = ta ? k * M + i : i * K + k;
                    size_t at = stored(buf, a0, M * K / cols, cols, o, swzA);
                    touch(buf, at, first + (int)(i % active), false);
                    A[i * K + k] = storage(buf, first).at(at);
                }
        }
        auto [bbuf, b0] = addressOf(passes::lib::arg(c, info.fn, "b"), first);
        const int64_t bcols = tb ? K : N;
        for (int64_t k = 0; k < K; ++k)
            for (int64_t j = 0; j < N; ++j) {
                int64_t o = tb ? j * K + k : k * N + j;
                size_t at = stored(bbuf, b0, K * N / bcols, bcols, o, swzB);
                touch(bbuf, at, first + (int)(j % active), false);
                B[k * N + j] = storage(bbuf, first).at(at);
            }
        accumulate(A, B, K, passes::Layout::mma({M, N}, scopeThreads, (int)wm, (int)wn), mask, scopeFirst, [&](int t) {
            auto [regs, c0] = addressOf(passes::lib::arg(c, info.fn, "c"), t);
            return std::make_tuple(&storage(regs, t), c0, regs->dtype);
        });
        return;
    }
    case Fn::GemmSpSS: return gemmSparse(c, mask);
    case Fn::MmaSync: return mmaSync(c, mask);
    case Fn::LdMatrix: return ldmatrix(c, mask);
    case Fn::Stmatrix: return stmatrixWarp(c, mask);
    default: return hopper(c, info, mask);
    }
}

/// mma.sp as stdlib/tilec/mma_sp.cuh computes it: A rebuilt from its compressed tile and the metadata (the
/// kept values at the positions the nibbles name, zeros elsewhere), then the product of the dense A and B. A
/// group whose positions are not in increasing order is not mma.sp::ordered_metadata's (undefined there): an error,
/// unless both its values are zero (the zero padding of a partial tile, whose metadata is zero too; its rows
/// contribute nothing whatever the positions).
void Simulator::gemmSparse(const ir::Call &c, const std::vector<char> &mask) {
    using passes::lib::Fn;
    if (!wholeScope(mask)) throw SimError("a T.gemm_sp run by only some threads");
    const int first = (int)(std::find(mask.begin(), mask.end(), 1) - mask.begin());
    auto arg = [&](const char *n) { return (int64_t)eval(passes::lib::arg(c, Fn::GemmSpSS, n), first); };
    const int scopeFirst = !agent_ ? 0 : inConsumerGroup ? agent_->first : roleFirst_[agent_->role],
              scopeThreads = !agent_ ? T_ : inConsumerGroup ? agent_->count : roleCount_[agent_->role];
    const int64_t M = arg("M"), N = arg("N"), K = arg("K"), wm = arg("warpsM"), wn = arg("warpsN");
    const bool tb = arg("transB") != 0;
    const int active = (int)std::count(mask.begin(), mask.end(), 1);
    // Element (r, col) of a swizzled rows x cols tile at `base` (swizzle.cuh), read by the thread that loads it.
    auto read = [&](const char *name, int64_t rows, int64_t cols, int64_t r, int64_t col) {
        auto [buf, base] = addressOf(passes::lib::arg(c, Fn::GemmSpSS, name), first);
        const size_t at = (size_t)(base + swizzled(cols, buf->dtype.bytes(), rows * cols, r * cols + col));
        touch(buf, at, first + (int)((r + col) % active), false);
        return storage(buf, first).at(at);
    };
    std::vector<double> A(M * K, 0.0), B(K * N);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t g = 0; g < K / 4; ++g) {
            const auto word = (uint16_t)(int64_t)read("e", M, K / 16, i, g / 4);
            const int nibble = (word >> (4 * (g % 4))) & 0xF, p0 = nibble & 3, p1 = nibble >> 2;
            const double v0 = read("a", M, K / 2, i, 2 * g), v1 = read("a", M, K / 2, i, 2 * g + 1);
            if (p0 >= p1 && (v0 != 0 || v1 != 0))
                throw SimError("T.gemm_sp metadata of row " + std::to_string(i) + ", K columns " + std::to_string(4 * g) + ".." +
                               std::to_string(4 * g + 3) + " names positions " + std::to_string(p0) + " and " + std::to_string(p1) +
                               ", not two in increasing order");
            if (p0 < p1) A[i * K + 4 * g + p0] = v0, A[i * K + 4 * g + p1] = v1;
        }
    for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) B[k * N + j] = tb ? read("b", N, K, j, k) : read("b", K, N, k, j);
    accumulate(A, B, K, passes::Layout::mma({M, N}, scopeThreads, (int)wm, (int)wn), mask, scopeFirst, [&](int t) {
        auto [regs, c0] = addressOf(passes::lib::arg(c, Fn::GemmSpSS, "c"), t);
        return std::make_tuple(&storage(regs, t), c0, regs->dtype);
    });
}

/// tilec.mma_sync: one m16n8kK mma.sync per warp, K = 32 bytes of the operand type. Each lane's a, b and c
/// address its fragment registers in the PTX ISA's order: 32 / bits elements to a register; A's registers are
/// (row g, k), (g + 8, k), (g, k + 4 registers' worth), (g + 8, ...) for g = lane / 4 and k from (lane % 4) times a
/// register's elements; B's (k, n g) and (k + 4 registers' worth, g); the four accumulators (g, 2 (lane % 4) + 0, 1)
/// and (g + 8, ...). The whole warp must run it; the product accumulates in double and rounds once to c's type.
void Simulator::mmaSync(const ir::Call &c, const std::vector<char> &mask) {
    using passes::lib::Fn;
    auto operand = [&](const char *n) { return passes::lib::arg(c, Fn::MmaSync, n); };
    wholeWarps(mask, T_, "mma.sync", [&](int w) {
        const int bits = (int)addressOf(operand("a"), w * 32).first->dtype.bits(), per = 32 / bits, K = 8 * per;
        std::vector<double> A(16 * (size_t)K), B((size_t)K * 8);
        for (int l = 0; l < 32; ++l) {
            const int t = w * 32 + l, g = l / 4, k0 = (l % 4) * per;
            auto [ab, a0] = addressOf(operand("a"), t);
            auto [bb, b0] = addressOf(operand("b"), t);
            for (int e = 0; e < 4 * per; ++e) {
                const int reg = e / per, k = k0 + e % per + (reg / 2) * 4 * per;
                A[(size_t)((g + 8 * (reg % 2)) * K + k)] = storage(ab, t).at((size_t)(a0 + e));
            }
            for (int e = 0; e < 2 * per; ++e)
                B[(size_t)((k0 + e % per + (e / per) * 4 * per) * 8 + g)] = storage(bb, t).at((size_t)(b0 + e));
        }
        for (int l = 0; l < 32; ++l) {
            const int t = w * 32 + l;
            auto [cb, c0] = addressOf(operand("c"), t);
            for (int e = 0; e < 4; ++e) {
                const int i = l / 4 + 8 * (e / 2), j = 2 * (l % 4) + e % 2;
                double &acc = storage(cb, t).at((size_t)(c0 + e));
                double sum = acc;
                for (int k = 0; k < K; ++k) sum += A[(size_t)(i * K + k)] * B[(size_t)(k * 8 + j)];
                acc = roundTo(cb->dtype, sum);
            }
        }
    });
}

/// tilec.ldmatrix: per warp, `count` 8x8 matrices of 16-byte rows, row i of matrix m at the address of lane
/// 8 m + i. Lane l's register r (32 / bits elements from dst + r * 32 / bits) receives word l % 4 of row l / 4 of
/// matrix r; with trans (16-bit elements) elements (2 (l % 4) + j, l / 4) of it, j = 0, 1. The whole warp must run
/// it; the lane that gives a row's address reads it.
void Simulator::ldmatrix(const ir::Call &c, const std::vector<char> &mask) {
    using passes::lib::Fn;
    auto operand = [&](const char *n) { return passes::lib::arg(c, Fn::LdMatrix, n); };
    wholeWarps(mask, T_, "ldmatrix", [&](int w) {
        const int count = (int)eval(operand("count"), w * 32);
        const bool trans = eval(operand("trans"), w * 32) != 0;
        const int bits = (int)addressOf(operand("src"), w * 32).first->dtype.bits(), per = 32 / bits;
        if (trans && bits != 16) throw SimError("ldmatrix.trans of " + std::to_string(bits) + "-bit elements");
        // element (row, e) of matrix m: e counts elements of the 16-byte row
        auto element = [&](int m, int row, int e) {
            const int from = w * 32 + m * 8 + row;
            auto [buf, s0] = addressOf(operand("src"), from);
            if ((s0 * bits / 8) % 16) throw SimError("ldmatrix row address not 16-byte aligned");
            touch(buf, (size_t)(s0 + e), from, false);
            return storage(buf, from).at((size_t)(s0 + e));
        };
        std::vector<double> got((size_t)(32 * count * per));
        for (int l = 0; l < 32; ++l)
            for (int r = 0; r < count; ++r)
                for (int j = 0; j < per; ++j)
                    got[(size_t)((l * count + r) * per + j)] =
                        trans ? element(r, 2 * (l % 4) + j, l / 4) : element(r, l / 4, (l % 4) * per + j);
        for (int l = 0; l < 32; ++l) {
            auto [db, d0] = addressOf(operand("dst"), w * 32 + l);
            for (int e = 0; e < count * per; ++e)
                storage(db, w * 32 + l).at((size_t)(d0 + e)) = got[(size_t)(l * count * per + e)];
        }
    });
}

/// tilec.stmatrix (sm90_store.cuh's stmatrix): per warp, `count` 8x8 matrices of 16-bit elements, lane l's register r
/// (src + 2 r, two elements) being elements (l / 4, 2 (l % 4) + j) of matrix r, j = 0, 1; element (a, b) lands at
/// element b of the 16-byte row that lane 8 r + a addresses, or with trans at element a of lane 8 r + b's. The whole
/// warp must run it; the lane that gives a row's address writes it (its accesses are that lane's).
void Simulator::stmatrixWarp(const ir::Call &c, const std::vector<char> &mask) {
    using passes::lib::Fn;
    auto operand = [&](const char *n) { return passes::lib::arg(c, Fn::Stmatrix, n); };
    wholeWarps(mask, T_, "stmatrix", [&](int w) {
        const int count = (int)eval(operand("count"), w * 32);
        const bool trans = eval(operand("trans"), w * 32) != 0;
        if (count != 1 && count != 2 && count != 4) throw SimError("stmatrix of " + std::to_string(count) + " matrices");
        struct Write {
            const ir::BufferNode *buf;
            int64_t at;
            int lane;
            double value;
        };
        std::vector<Write> writes; // every lane's values read before any lands (one instruction)
        for (int l = 0; l < 32; ++l) {
            auto [src, s0] = addressOf(operand("src"), w * 32 + l);
            for (int r = 0; r < count; ++r)
                for (int j = 0; j < 2; ++j) {
                    const int a = l / 4, b = 2 * (l % 4) + j, row = trans ? b : a, e = trans ? a : b;
                    const int from = w * 32 + r * 8 + row;
                    auto [dst, d0] = addressOf(operand("dst"), from);
                    if (dst->dtype.bytes() != 2 || src->dtype.bytes() != 2) throw SimError("stmatrix of elements that are not 16-bit");
                    if (dst->scope != ir::Scope::Shared || d0 % 8) throw SimError("stmatrix row address not a 16-byte aligned shared one");
                    writes.push_back({dst, d0 + e, from, storage(src, w * 32 + l).at((size_t)(s0 + 2 * r + j))});
                }
        }
        for (auto &x : writes) {
            touch(x.buf, (size_t)x.at, x.lane, true);
            storage(x.buf, x.lane).at((size_t)x.at) = roundTo(x.buf->dtype, x.value);
            genericWrite(x.buf, (size_t)x.at, x.lane);
        }
    });
}

} // namespace tilec::simtest
