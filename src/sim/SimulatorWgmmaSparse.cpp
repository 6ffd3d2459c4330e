/// \file
/// The simulator's model of T.gemm_sp on Hopper, tilec.wgmma_sp_ss (stdlib/tilec/sm90_wgmma_sp.cuh; Simulator.h),
/// in two layers kept apart, so that a wrong metadata mapping in either shows as wrong numbers:
///
/// What the library loads (wgmmaSpMetadata, at the issue: each thread's generic reads of the metadata tile): thread
/// t, in warp w = t / 32 % 4 of its warpgroup, lane l, holds for k-step ks and m-tile mi the register
/// E(r, 2 ks + l % 2) | E(r + 8, 2 ks + l % 2) << 16, r = wgm * Mw + mi * 64 + 16 w + l / 4, where E(r, j) is the
/// (M, K/16) tile's element at swz<K/16, 2>(r * K/16 + j) from the operand's address (swizzle.cuh).
///
/// How the hardware reads them (wgmmaSpRows, the PTX ISA's wgmma.mma_async.sp for 16-bit types, m64nNk32, sparsity
/// selector 0, independent of the library): in warp w of the warpgroup, lanes 4g and 4g + 1 of each quad supply the
/// metadata of rows 16 w + g and 16 w + g + 8 of the instruction's 64: lane 4g + c's bits 16 h + 4 q .. 16 h + 4 q + 3
/// describe row 16 w + g + 8 h, chunk 4 c + q of the k-step's eight chunks of four K columns, whose two kept values
/// are the compressed row's elements 2 (4c + q) and 2 (4c + q) + 1 of the k-step's 16: bits 0-1 the position in the
/// chunk of the first, bits 2-3 of the second. Lanes 4g + 2 and 4g + 3 are not read. Positions not in increasing
/// order are an error (0b0000, 0b0101, 0b1010 and 0b1111 are undefined in the PTX ISA; TileLang's compress writes
/// the first below the second), unless both values are zero (a partial tile's zero padding).
#include "sim/Simulator.h"

#include <cmath>

namespace tilec::simtest {

std::vector<uint32_t> Simulator::wgmmaSpMetadata(const ir::Call &c, int t, int64_t Mw, int64_t wgm) {
    using passes::lib::Fn;
    auto num = [&](const char *n) { return (int64_t)eval(passes::lib::arg(c, Fn::WgmmaSpSS, n), t); };
    const int64_t M = num("M"), K = num("K"), EC = K / 16, MT = Mw / 64;
    auto [buf, base] = addressOf(passes::lib::arg(c, Fn::WgmmaSpSS, "e"), t);
    if (buf->scope != ir::Scope::Shared || buf->dtype.bytes() != 2) throw SimError("wgmma_sp metadata " + buf->name + " is not a 16-bit shared tile");
    const int64_t lane = t % 32, warp = t / 32 % 4;
    auto element = [&](int64_t r, int64_t j) {
        const size_t at = (size_t)(base + swizzled(EC, 2, M * EC, r * EC + j));
        auto &v = storage(buf, t);
        if (base < 0 || at >= v.size()) throw SimError("wgmma_sp reads metadata outside " + buf->name);
        touch(buf, at, t, false);
        if (std::isnan(v[at])) throw SimError("wgmma_sp reads metadata of " + buf->name + " that was never written");
        return (uint32_t)(uint16_t)(int64_t)v[at];
    };
    std::vector<uint32_t> regs;
    for (int64_t ks = 0; ks < K / 32; ++ks)
        for (int64_t mi = 0; mi < MT; ++mi) {
            const int64_t r = wgm * Mw + mi * 64 + 16 * warp + lane / 4, j = 2 * ks + lane % 2;
            regs.push_back(element(r, j) | element(r + 8, j) << 16);
        }
    return regs;
}

void Simulator::wgmmaSpRows(std::vector<double> &A, int64_t Mw, int64_t K, const std::vector<std::vector<uint32_t>> &meta,
                            const std::function<double(int64_t, int64_t)> &compressed) {
    const int64_t MT = Mw / 64;
    std::fill(A.begin(), A.end(), 0.0);
    for (int64_t i = 0; i < Mw; ++i) {
        const int64_t mi = i / 64, w = i % 64 / 16, g = i % 8, h = i % 16 / 8;
        for (int64_t ks = 0; ks < K / 32; ++ks)
            for (int64_t chunk = 0; chunk < 8; ++chunk) {
                const int64_t lane = 4 * g + chunk / 4, q = chunk % 4;
                const uint32_t reg = meta.at((size_t)(32 * w + lane)).at((size_t)(ks * MT + mi));
                const int nibble = (int)(reg >> (16 * h + 4 * q)) & 0xF, p0 = nibble & 3, p1 = nibble >> 2;
                const double v0 = compressed(i, ks * 16 + 2 * chunk), v1 = compressed(i, ks * 16 + 2 * chunk + 1);
                const int64_t k0 = ks * 32 + 4 * chunk;
                if (p0 >= p1 && (v0 != 0 || v1 != 0))
                    throw SimError("wgmma.sp metadata of row " + std::to_string(i) + " of the warpgroup, K columns " +
                                   std::to_string(k0) + ".." + std::to_string(k0 + 3) + " names positions " + std::to_string(p0) +
                                   " and " + std::to_string(p1) + ", not two in increasing order");
                if (p0 < p1) A[(size_t)(i * K + k0 + p0)] = v0, A[(size_t)(i * K + k0 + p1)] = v1;
            }
    }
}

} // namespace tilec::simtest
