// tilec device runtime: warp-level tensor-core GEMM on mma.sync (sm_80+), the lowering of T.gemm.
// Part of tilec; embedded into generated code, which must compile on its own (nvcc or NVRTC).
//
// The block's warps split the M x N output into WarpsM x WarpsN warp tiles; warp w owns tile
// (w % WarpsM, w / WarpsM) of WTM x WTN elements, mT = WTM / 16 by nT = WTN / 8 instruction tiles. A thread's
// accumulator array holds, for tile (mi, ni), the m16n8 C fragment of mma.sync:
//     C[((mi * nT + ni) * 2 + h) * 2 + c]  is element  (wm * WTM + mi * 16 + h * 8 + lane / 4,
//                                                       wn * WTN + ni * 8 + (lane % 4) * 2 + c).
// Shared operands are stored row-major and swizzled with swz<inner extent, element size> (swizzle.cuh).
// The fragment loaders (ldmatrix and shared loads) and the mma.sync instructions are in mma_frag.cuh.
#ifndef TILEC_STDLIB_MMA_CUH
#define TILEC_STDLIB_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "mma_frag.cuh"

namespace tilec {

namespace mma_detail {

// The mT x nT instruction tiles of one k-step. Odd rows of tiles walk the columns backwards, so that
// consecutive mma instructions share an operand register.
template <class Op, int MT, int NT, class Acc>
__device__ __forceinline__ void mma_tiles(Acc *acc, const uint32_t (*a)[4], const uint32_t (*b)[2]) {
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int ni = (mi & 1) ? NT - 1 - j : j;
            Op::run(acc + (mi * NT + ni) * Op::kAccPerTile, a[mi], b[ni]);
        }
    }
}

// Both operands from shared memory. Fragments are double-buffered: the loads of k-step kk + 1 are issued
// before the mma instructions of k-step kk, so their latency hides behind the tensor cores.
template <class Op, int MT, int NT, int KS, class LA, class LB, class Acc>
__device__ __forceinline__ void gemm_ss_core(const LA &la, const LB &lb, Acc *acc) {
    uint32_t a[2][MT][4];
    uint32_t b[2][NT][2];
    la.load(a[0], 0);
    lb.load(b[0], 0);
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
        if (kk + 1 < KS) {
            la.load(a[(kk + 1) & 1], kk + 1);
            lb.load(b[(kk + 1) & 1], kk + 1);
        }
        mma_tiles<Op, MT, NT>(acc, a[kk & 1], b[kk & 1]);
    }
}

__device__ __forceinline__ unsigned short bits16(__half x) {
    return __half_as_ushort(x);
}
__device__ __forceinline__ unsigned short bits16(__nv_bfloat16 x) {
    return __bfloat16_as_ushort(x);
}

__device__ __forceinline__ uint32_t pack16(unsigned short lo, unsigned short hi) {
    return (uint32_t)lo | ((uint32_t)hi << 16);
}

// A from registers in the accumulator order of an M x K fragment (WarpsN = 1, K / 8 column tiles). The
// m16n8k16 A fragment of k-step kk, tile mi, is exactly the 8 elements of accumulator tiles (mi, 2kk) and
// (mi, 2kk + 1) in order: {a0,a1} = (row g, k 2t..), {a2,a3} = (row g+8, k 2t..),
// {a4,a5} = (row g, k 8+2t..), {a6,a7} = (row g+8, k 8+2t..), the C fragment's (h, c) order of both tiles.
template <class Op, int MT, int NT, int KS, class TA, class LB, class Acc>
__device__ __forceinline__ void gemm_rs_core(const TA *Areg, const LB &lb, Acc *acc) {
    uint32_t b[2][NT][2];
    lb.load(b[0], 0);
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
        if (kk + 1 < KS)
            lb.load(b[(kk + 1) & 1], kk + 1);
        uint32_t a[MT][4];
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
            const TA *src = Areg + (mi * (2 * KS) + 2 * kk) * 4;
#pragma unroll
            for (int r = 0; r < 4; ++r)
                a[mi][r] = pack16(bits16(src[2 * r]), bits16(src[2 * r + 1]));
        }
        mma_tiles<Op, MT, NT>(acc, a, b[kk & 1]);
    }
}

// Half accumulators go to the f16 mma packed two to a register (its C operand), and back afterwards;
// float and int32 accumulators are used as they are.
template <int Count> __device__ __forceinline__ void pack_acc(const __half *C, uint32_t *acc) {
#pragma unroll
    for (int i = 0; i < Count / 2; ++i)
        acc[i] = pack16(bits16(C[2 * i]), bits16(C[2 * i + 1]));
}
template <int Count> __device__ __forceinline__ void unpack_acc(const uint32_t *acc, __half *C) {
#pragma unroll
    for (int i = 0; i < Count / 2; ++i) {
        C[2 * i] = __ushort_as_half((unsigned short)(acc[i] & 0xffffu));
        C[2 * i + 1] = __ushort_as_half((unsigned short)(acc[i] >> 16));
    }
}

} // namespace mma_detail

/// gemm_ss (below) over operands stored in the row layout (PanelA / PanelB == 0) or in TMA's panel layout
/// of that many bytes (128, 64 or 32; sm90_tma.cuh: what tma_load_tile writes, 1024-byte aligned): the
/// sm_90 path, where TMA fills the tiles and mma.sync reads them.
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransA, bool TransB, int PanelA, int PanelB, typename TA,
          typename TB, typename TC>
__device__ __forceinline__ void gemm_ss_panels(const TA *As, const TB *Bs, TC *C) {
    using Op = mma_detail::mma_op<TA, TB, TC>;
    static_assert(Op::supported, "T.gemm: unsupported combination of operand and accumulator types");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
    static_assert(!Op::kNeedsSm89, "float8 mma.sync needs sm_89 or newer");
#endif
    static_assert(WarpsM > 0 && WarpsN > 0 && M % (16 * WarpsM) == 0 && N % (8 * WarpsN) == 0,
                  "the warp tiles must be whole multiples of 16 x 8");
    static_assert(K > 0 && K % Op::kK == 0, "K must be a multiple of the mma instruction's K");
    static_assert((PanelA == 0 || PanelA == 32 || PanelA == 64 || PanelA == 128) &&
                      (PanelB == 0 || PanelB == 32 || PanelB == 64 || PanelB == 128),
                  "panels of 128, 64 or 32 bytes");
    constexpr int WTM = M / WarpsM, WTN = N / WarpsN;
    constexpr int MT = WTM / 16, NT = WTN / 8, KS = K / Op::kK;
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    const int wm = warp % WarpsM, wn = warp / WarpsM;
    const mma_detail::a_smem_loader<M, K, TransA, TA, MT, PanelA> la(As, wm * WTM, lane);
    const mma_detail::b_smem_loader<N, K, TransB, TB, NT, PanelB> lb(Bs, wn * WTN, lane);
    if constexpr (std::is_same<TC, __half>::value) {
        uint32_t acc[MT * NT * 2];
        mma_detail::pack_acc<MT * NT * 4>(C, acc);
        mma_detail::gemm_ss_core<Op, MT, NT, KS>(la, lb, acc);
        mma_detail::unpack_acc<MT * NT * 4>(acc, C);
    } else {
        mma_detail::gemm_ss_core<Op, MT, NT, KS>(la, lb, C);
    }
}

/// C += A * B for the block's M x N tile, A (M x K) and B (K x N) in shared memory: As holds A as (M, K)
/// row-major, or as (K, M) when TransA; Bs holds B as (K, N), or as (N, K) when TransB; each swizzled by
/// swz<its inner extent, sizeof(element)>. C is the thread's accumulator array (order in the file comment).
/// The block has exactly 32 * WarpsM * WarpsN threads, M % (16 * WarpsM) == 0, N % (8 * WarpsN) == 0 and
/// K is a multiple of the instruction's K (16 for 16-bit types, 8 for tf32, 32 for 8-bit types).
/// Supported (TA, TB, TC): (half, half, float), (bfloat16, bfloat16, float), (half, half, half),
/// (float, float, float) as tf32 (operands rounded to tf32), int8/uint8 with int32, float8 e4m3/e5m2 with
/// float (sm_89 and newer).
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransA, bool TransB, typename TA, typename TB,
          typename TC>
__device__ __forceinline__ void gemm_ss(const TA *As, const TB *Bs, TC *C) {
    gemm_ss_panels<M, N, K, WarpsM, WarpsN, TransA, TransB, 0, 0>(As, Bs, C);
}

/// gemm_rs (below) with B in the row layout (PanelB == 0) or TMA's panel layout of PanelB bytes (gemm_ss_panels).
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransB, int PanelB, typename TA, typename TB, typename TC>
__device__ __forceinline__ void gemm_rs_panels(const TA *Areg, const TB *Bs, TC *C) {
    using Op = mma_detail::mma_op<TA, TB, TC>;
    static_assert(Op::supported, "T.gemm: unsupported combination of operand and accumulator types");
    static_assert(sizeof(TA) == 2 && sizeof(TB) == 2, "gemm with A in registers takes 16-bit operands");
    static_assert(WarpsN == 1, "gemm with A in registers needs the warps to split the rows only");
    static_assert(WarpsM > 0 && M % (16 * WarpsM) == 0 && N % 8 == 0,
                  "the warp tiles must be whole multiples of 16 x 8");
    static_assert(K > 0 && K % Op::kK == 0, "K must be a multiple of the mma instruction's K");
    static_assert(PanelB == 0 || PanelB == 32 || PanelB == 64 || PanelB == 128, "panels of 128, 64 or 32 bytes");
    constexpr int MT = M / WarpsM / 16, NT = N / 8, KS = K / Op::kK;
    const int lane = (int)threadIdx.x % 32;
    const mma_detail::b_smem_loader<N, K, TransB, TB, NT, PanelB> lb(Bs, 0, lane);
    if constexpr (std::is_same<TC, __half>::value) {
        uint32_t acc[MT * NT * 2];
        mma_detail::pack_acc<MT * NT * 4>(C, acc);
        mma_detail::gemm_rs_core<Op, MT, NT, KS>(Areg, lb, acc);
        mma_detail::unpack_acc<MT * NT * 4>(acc, C);
    } else {
        mma_detail::gemm_rs_core<Op, MT, NT, KS>(Areg, lb, C);
    }
}

/// C += A * B with A in registers: Areg is the thread's M x K fragment in the accumulator order above, laid
/// out for WarpsM warps by rows (K / 8 column tiles), the form a previous gemm's accumulator has. B is in
/// shared memory as for gemm_ss. 16-bit A and B only; the warps must split the rows only (WarpsN == 1).
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransB, typename TA, typename TB, typename TC>
__device__ __forceinline__ void gemm_rs(const TA *Areg, const TB *Bs, TC *C) {
    gemm_rs_panels<M, N, K, WarpsM, WarpsN, TransB, 0>(Areg, Bs, C);
}

} // namespace tilec

#endif // TILEC_STDLIB_MMA_CUH
