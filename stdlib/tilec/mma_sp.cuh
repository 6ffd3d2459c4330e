// tilec device runtime: the 2:4 structured-sparse warp-tile GEMM on mma.sp (sm_80+), the lowering of T.gemm_sp.
// Part of tilec; embedded into generated code, which must compile on its own (nvcc or NVRTC).
//
// A is 2:4 sparse along K: of each group of four consecutive K elements of a row at most two are nonzero. It is
// handed over compressed, As holding (M, K/2): the two kept values of group g of row m at columns 2g and 2g+1,
// in K order. Es holds the metadata (M, K/16) of 16-bit elements: element (m, j) covers the groups 4j .. 4j+3
// of row m, group 4j+q in its bits 4q .. 4q+3, whose low two bits are the position (0..3) of the first kept
// value in its group and whose high two bits that of the second (the order TileLang's sparse_utils.compress
// writes, mma.sp::ordered_metadata's: the first below the second). Both tiles, and B as for gemm_ss, are
// stored row-major and swizzled with swz<inner extent, element size> (swizzle.cuh), as the tile transfers
// that fill them store them.
//
// One m16n8k32 mma.sp per (m-tile, n-tile, 32-wide k-step): its A operand is the 16 x 16 compressed tile, in
// the register order of the dense m16n8k16 A fragment (so a_smem_loader over the (M, K/2) tile loads it); its
// B operand is the two dense k16 B fragments of the k-step; its metadata register, with sparsity selector 0,
// is read by lanes 4g and 4g+1 of each quad: lane 4g + c holds the 16 bits of row g (low half) and of row
// g + 8 (high half) covering K columns 16c .. 16c+15 of the k-step, which is Es's natural element (row, 2s + c)
// itself. The accumulators are in mma.cuh's order.
#ifndef TILEC_STDLIB_MMA_SP_CUH
#define TILEC_STDLIB_MMA_SP_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "mma_frag.cuh"
#include "swizzle.cuh"

namespace tilec {

namespace mma_sp_detail {

// d += a * b over one m16n8k32 tile with metadata e (selector 0), float32 accumulators.
template <class T> __device__ __forceinline__ void mma_sp_16832(float *d, const uint32_t *a, const uint32_t *b0,
                                                                const uint32_t *b1, uint32_t e) {
    if constexpr (std::is_same<T, __half>::value) {
        asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0[0]), "r"(b0[1]), "r"(b1[0]), "r"(b1[1]),
                       "r"(e));
    } else {
        asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0[0]), "r"(b0[1]), "r"(b1[0]), "r"(b1[1]),
                       "r"(e));
    }
}

// The metadata register of lane `lane` for the m-tile whose rows start at m0 and k-step ks: Es's elements
// (m0 + lane/4, 2ks + lane%2) and (m0 + 8 + lane/4, 2ks + lane%2) in its low and high halves. The lanes 4g+2
// and 4g+3, which selector 0 does not read, load the same.
template <int EC, class TE>
__device__ __forceinline__ uint32_t metadata(const TE *Es, int m0, int ks, int lane) {
    const unsigned short *e = reinterpret_cast<const unsigned short *>(Es);
    const int row = m0 + lane / 4, col = 2 * ks + lane % 2;
    const uint32_t lo = e[swz<EC, 2>(row * EC + col)], hi = e[swz<EC, 2>((row + 8) * EC + col)];
    return lo | (hi << 16);
}

} // namespace mma_sp_detail

/// C += A * B for the block's M x N tile, A 2:4 sparse given as As (M, K/2) and Es (M, K/16) (file comment),
/// B in shared memory as (K, N), or (N, K) when TransB, as for gemm_ss; C the thread's float accumulators in
/// mma.cuh's order. The block has exactly 32 * WarpsM * WarpsN threads, M % (16 * WarpsM) == 0,
/// N % (8 * WarpsN) == 0, K % 32 == 0. (TA, TB): (half, half) or (bfloat16, bfloat16); TE 16 bits wide.
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransB, typename TA, typename TE, typename TB>
__device__ __forceinline__ void gemm_sp_ss(const TA *As, const TE *Es, const TB *Bs, float *C) {
    static_assert(std::is_same<TA, TB>::value && (std::is_same<TA, __half>::value || std::is_same<TA, __nv_bfloat16>::value),
                  "T.gemm_sp: float16 or bfloat16 operands");
    static_assert(sizeof(TE) == 2, "T.gemm_sp: 16-bit metadata");
    static_assert(WarpsM > 0 && WarpsN > 0 && M % (16 * WarpsM) == 0 && N % (8 * WarpsN) == 0,
                  "the warp tiles must be whole multiples of 16 x 8");
    static_assert(K > 0 && K % 32 == 0, "K must be a multiple of mma.sp's 32");
    constexpr int WTM = M / WarpsM, WTN = N / WarpsN, MT = WTM / 16, NT = WTN / 8, KS = K / 32, EC = K / 16;
    const int warp = (int)(threadIdx.x / 32 % (unsigned)(WarpsM * WarpsN)), lane = (int)threadIdx.x % 32; // of those laid out
    const int wm = warp % WarpsM, wn = warp / WarpsM;
    const mma_detail::a_smem_loader<M, K / 2, false, TA, MT, 0> la(As, wm * WTM, lane);
    const mma_detail::b_smem_loader<N, K, TransB, TB, NT, 0> lb(Bs, wn * WTN, lane);
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
        uint32_t a[MT][4], b0[NT][2], b1[NT][2];
        la.load(a, ks);
        lb.load(b0, 2 * ks);
        lb.load(b1, 2 * ks + 1);
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
            const uint32_t e = mma_sp_detail::metadata<EC>(Es, wm * WTM + mi * 16, ks, lane);
#pragma unroll
            for (int ni = 0; ni < NT; ++ni)
                mma_sp_detail::mma_sp_16832<TA>(C + (mi * NT + ni) * 4, a[mi], b0[ni], b1[ni], e);
        }
    }
}

} // namespace tilec

#endif // TILEC_STDLIB_MMA_SP_CUH
