// tilec device runtime: T.gemm_sp on Hopper's sparse warpgroup matrix multiply (wgmma.mma_async.sp, sm_90a).
// Part of tilec; embedded into generated code, which must compile on its own (nvcc or NVRTC) for every target.
//
// The operands are mma_sp.cuh's, stored as wgmma reads them: A 2:4 sparse along K, handed over compressed as the
// (M, K/2) tile As (the two kept values of each group of four K columns, in K order) in the panel layout of
// sm90_wgmma.cuh, K-major (SwzA-byte panels); B as for wgmma_gemm_ss ((K, N) N-major, or (N, K) K-major when
// TransB); the metadata Es (M, K/16) of 16-bit elements in its natural order under the row swizzle swz<K/16, 2>
// (swizzle.cuh), element (m, j) holding the groups 4j .. 4j+3 of row m in its nibbles from the lowest, each
// nibble the positions (0..3) of the first kept value (bits 0-1) and of the second (bits 2-3): what TileLang's
// sparse_utils.compress writes and mma.sp::ordered_metadata reads.
//
// One wgmma.mma_async.sp m64nNk32 per (64-row m-tile, 32-wide k-step, N width): A's descriptor at the k-step's
// 16 compressed columns (32 bytes of a K-major panel row), B's at its 32 K (two dense k16 steps). The metadata
// operand (sparsity selector 0) is, per the PTX ISA's sparse wgmma metadata layout for 16-bit types (CUTLASS's
// ELayout_64x32 says the same), in warp w of the warpgroup the register of lanes 4g and 4g+1 of each quad: lane
// 4g + c holds the 16 bits of row 16w + g (low half) and of row 16w + g + 8 (high half) covering K columns
// 16c .. 16c+15 of the k-step -- in each warp the m16n8k32 mma.sp metadata of its 16 rows, i.e. Es's elements
// (row, 2 ks + c) themselves (mma_sp_detail::metadata; lanes 4g+2, 4g+3, which selector 0 does not read, load
// the same). The metadata registers are loaded before the wgmma.fence and passed by value, as CUTLASS does (the
// instruction reads them at the issue; they are not fenced).
//
// Warpgroups, accumulators and ordering: those of wgmma_gemm_ss (sm90_wgmma.cuh): fence, every instruction,
// commit, no wait.
#ifndef TILEC_STDLIB_SM90_WGMMA_SP_CUH
#define TILEC_STDLIB_SM90_WGMMA_SP_CUH

#include <stdint.h>
#include <type_traits>

#include "mma_sp.cuh"
#include "sm90_wgmma.cuh"

namespace tilec {

/// C(M x N) += A B over the consumer warpgroups, A 2:4 sparse given as the compressed panel tile As (M, K/2)
/// and the metadata Es (M, K/16) (the file's comment), B a panel tile as for wgmma_gemm_ss. (TA, TB): (half,
/// half) or (bfloat16, bfloat16) into float; TE 16 bits wide; K % 32 == 0; a K-major B in panels of at least 32
/// elements (SwzB >= 64: an instruction's 32 K lie in one panel).
template <int M, int N, int K, int WgM, int WgN, bool TransB, int SwzA, int SwzB, class TA, class TE, class TB,
          class TC>
__device__ __forceinline__ void wgmma_sp_gemm_ss(const TA *a, const TE *e, const TB *b, TC *acc) {
    using namespace wgmma_detail;
    constexpr Kind K_ = kind<TA, TB, TC>();
    static_assert(K_ == Kind::F16F32 || K_ == Kind::BF16F32, "T.gemm_sp on wgmma: f16 or bf16 operands into float");
    static_assert(sizeof(TE) == 2, "T.gemm_sp: 16-bit metadata");
    constexpr int ES = 2, KA = K / 2, EC = K / 16;
    constexpr int Mw = M / WgM, Nw = N / WgN, MT = Mw / 64, KS = K / 32;
    static_assert(M % WgM == 0 && Mw % 64 == 0, "each consumer warpgroup owns a multiple of 64 rows");
    static_assert(N % WgN == 0 && Nw % 8 == 0 && Nw <= 256, "each warpgroup owns 8..256 columns, a multiple of 8");
    static_assert(K > 0 && K % 32 == 0, "K is a whole number of wgmma.sp's k32");
    constexpr int Wa = SwzA / ES, Wb = SwzB / ES;
    static_assert(KA % Wa == 0, "the compressed A tile is a whole number of panels (K / 2 * 2 % SwzA == 0)");
    static_assert(!TransB || (K % Wb == 0 && Wb % 32 == 0), "a K-major B: whole panels of at least 32 elements");
    static_assert(TransB || N % Wb == 0, "an N-major B tile is a whole number of panels");
    static_assert(TransB || WgN == 1 || Nw % Wb == 0, "an N-major B splits between warpgroups at panel bounds");
    constexpr unsigned APanel = M * SwzA, BPanel = (TransB ? N : K) * SwzB;
    const unsigned wg = WgM * WgN == 1 ? 0 : warpgroup_index();
    const unsigned wgm = WgM == 1 ? 0 : wg % WgM, wgn = WgN == 1 ? 0 : wg / WgM;
    const unsigned bOff = TransB ? wgn * Nw * SwzB : (wgn * Nw / Wb) * BPanel;
    const uint64_t da0 = descriptor<SwzA>(reinterpret_cast<const unsigned char *>(a) + wgm * Mw * SwzA, 16, 8 * SwzA);
    const uint64_t db0 = descriptor<SwzB>(reinterpret_cast<const unsigned char *>(b) + bOff, TransB ? 16 : BPanel,
                                          8 * SwzB);
    // This thread's metadata registers of every (k-step, m-tile), read from Es before the fence.
    const int lane = (int)(threadIdx.x % 32), warp = (int)(threadIdx.x / 32 % 4);
    uint32_t meta[KS][MT];
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
        for (int mi = 0; mi < MT; ++mi)
            meta[ks][mi] = mma_sp_detail::metadata<EC>(e, (int)wgm * Mw + mi * 64 + warp * 16, ks, lane);
    constexpr int Count = MT * Nw / 2;
    fence_operands<Count>(acc);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
        const int kA = ks * 16, kB = ks * 32;
        const unsigned kaOff = (kA / Wa) * APanel + (kA % Wa) * ES;
        const unsigned kbOff = TransB ? (kB / Wb) * BPanel + (kB % Wb) * ES : kB * SwzB;
#pragma unroll
        for (int mi = 0; mi < MT; ++mi)
            mma_row<Nw, 0, K_, 0, TransB ? 0 : 1, Wb, !TransB, BPanel, SwzB>(
                acc + mi * (Nw / 2), SparseA{descriptor_plus(da0, (kaOff + mi * 64 * SwzA) >> 4), meta[ks][mi]},
                descriptor_plus(db0, kbOff >> 4));
    }
    wgmma_commit();
    fence_operands<Count>(acc);
}

} // namespace tilec

#endif // TILEC_STDLIB_SM90_WGMMA_SP_CUH
