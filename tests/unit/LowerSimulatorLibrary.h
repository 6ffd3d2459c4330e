/// \file
/// The simulator's model of the device library calls lowered kernels make (stdlib/tilec): tile transfers
/// (cp.async with commit groups and waits), the tensor-core GEMMs and the shared-tile swizzle. The model is
/// deliberately pessimistic about asynchrony: a transfer's destination is claimed (written, for the race
/// check) and poisoned with NaN when it is issued, and receives its values only when a wait completes its
/// group, so a read that is not ordered after the wait and a barrier shows up as a race or a NaN.
#pragma once

namespace tilec::simtest {

inline std::pair<const ir::BufferNode *, int64_t> Simulator::addressOf(const ir::Expr &e, int t) {
    const ir::Load *l = passes::addressedLoad(e);
    if (!l || l->indices.size() != 1) throw SimError("library call without an address");
    return {l->buffer.get(), (int64_t)eval(l->indices[0], t)};
}

inline void Simulator::library(const ir::Call &c, const std::vector<char> &mask) {
    const std::string &n = c.name;
    const int first = (int)(std::find(mask.begin(), mask.end(), 1) - mask.begin());
    auto arg = [&](size_t i) { return (int64_t)eval(c.args.at(i), first); };
    if (n == "tilec.cp_async_commit") {
        pending_.push_back(std::move(open_));
        open_.clear();
        return;
    }
    if (n == "tilec.cp_async_wait") {
        size_t keep = (size_t)arg(0);
        while (pending_.size() > keep) {
            for (auto &w : pending_.front()) shared_.at(w.buffer)[w.index] = w.value;
            pending_.erase(pending_.begin());
        }
        return;
    }
    if (n == "tilec.copy_g2s" || n == "tilec.copy_g2s_wait") {
        if (std::count(mask.begin(), mask.end(), 1) != T_) throw SimError("a tile transfer issued by only some threads");
        const int64_t R = arg(0), C = arg(1), vec = arg(2), threads = arg(3), swz = arg(4);
        auto [dst, d0] = addressOf(c.args[5], first);
        auto [src, s0] = addressOf(c.args[6], first);
        const int64_t ldg = arg(7), vr = arg(8), vc = arg(9);
        auto &from = storage(src, first);
        auto &to = storage(dst, first);
        const int64_t eb = dst->dtype.bytes(), tile = R * C;
        // What the device library requires of its caller (tilec/cp_async.cuh): every vector it reads starts
        // on a multiple of Vec elements (tensors start aligned here), and no vector straddles the tensor's edge.
        if (vc > 0 && vc < C && vc % vec) throw SimError("a tile transfer of " + std::to_string(vec) + "-element vectors with " +
                                                           std::to_string(vc) + " valid columns");
        for (int64_t r = 0; r < std::min(R, vr); ++r)
            if ((s0 + r * ldg) % vec) throw SimError("a tile transfer of " + std::to_string(vec) + "-element vectors from a misaligned row of " + src->name);
        for (int64_t r = 0; r < R; ++r)
            for (int64_t col = 0; col < C; ++col) {
                int64_t chunk = (r * C + col) / vec;
                int writer = (int)(chunk % threads);
                int64_t at = d0 + (swz ? swizzled(C, eb, tile, r * C + col) : r * C + col);
                if (at < 0 || at >= (int64_t)to.size()) throw SimError("tile transfer out of " + dst->name);
                double v = 0;
                if (r < vr && col < vc) {
                    int64_t from_at = s0 + r * ldg + col;
                    if (from_at < 0 || from_at >= (int64_t)from.size()) throw SimError("tile transfer reads out of " + src->name);
                    v = from[from_at];
                }
                touch(dst, (size_t)at, writer, true);
                to[at] = std::nan("");
                open_.push_back({dst, (size_t)at, roundTo(dst->dtype, v)});
            }
        if (n == "tilec.copy_g2s_wait") { // commit, then wait for every group
            pending_.push_back(std::move(open_));
            open_.clear();
            for (auto &g : pending_)
                for (auto &w : g) shared_.at(w.buffer)[w.index] = w.value;
            pending_.clear();
        }
        return;
    }
    if (n == "tilec.gemm_ss" || n == "tilec.gemm_rs") {
        if (std::count(mask.begin(), mask.end(), 1) != T_) throw SimError("a T.gemm run by only some threads");
        const bool rs = n == "tilec.gemm_rs";
        const int64_t M = arg(0), N = arg(1), K = arg(2), wm = arg(3), wn = arg(4);
        const bool ta = rs ? false : arg(5) != 0, tb = arg(rs ? 5 : 6) != 0;
        const size_t ai = rs ? 6 : 7;
        // The whole A and B, read as the threads' ldmatrix / register reads would.
        std::vector<double> A(M * K), B(K * N);
        if (rs) {
            passes::Layout la = passes::Layout::mma({M, K}, T_, (int)wm, 1);
            for (int t = 0; t < T_; ++t) {
                auto [regs, r0] = addressOf(c.args[ai], t);
                auto &s = storage(regs, t);
                for (int64_t slot = 0; slot < la.slotsPerThread(); ++slot) A[passes::elementOf(la, t, slot)] = s.at(r0 + slot);
            }
        } else {
            auto [buf, a0] = addressOf(c.args[ai], first);
            const int64_t cols = ta ? M : K;
            for (int64_t i = 0; i < M; ++i)
                for (int64_t k = 0; k < K; ++k) {
                    int64_t o = ta ? k * M + i : i * K + k;
                    size_t at = (size_t)(a0 + swizzled(cols, buf->dtype.bytes(), M * K, o));
                    touch(buf, at, (int)(i % T_), false);
                    A[i * K + k] = storage(buf, first).at(at);
                }
        }
        auto [bbuf, b0] = addressOf(c.args[ai + 1], first);
        const int64_t bcols = tb ? K : N;
        for (int64_t k = 0; k < K; ++k)
            for (int64_t j = 0; j < N; ++j) {
                int64_t o = tb ? j * K + k : k * N + j;
                size_t at = (size_t)(b0 + swizzled(bcols, bbuf->dtype.bytes(), K * N, o));
                touch(bbuf, at, (int)(j % T_), false);
                B[k * N + j] = storage(bbuf, first).at(at);
            }
        passes::Layout lc = passes::Layout::mma({M, N}, T_, (int)wm, (int)wn);
        for (int t = 0; t < T_; ++t) {
            auto [regs, c0] = addressOf(c.args[ai + 2], t);
            auto &s = storage(regs, t);
            for (int64_t slot = 0; slot < lc.slotsPerThread(); ++slot) {
                int64_t e = passes::elementOf(lc, t, slot), i = e / N, j = e % N;
                double acc = s.at(c0 + slot);
                for (int64_t k = 0; k < K; ++k) acc += A[i * K + k] * B[k * N + j];
                s.at(c0 + slot) = roundTo(regs->dtype, acc);
            }
        }
        return;
    }
    throw SimError("no simulation of " + n);
}

} // namespace tilec::simtest
