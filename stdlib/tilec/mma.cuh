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

__device__ __forceinline__ uint32_t bits8(int8_t x) {
    return (uint8_t)x;
}
__device__ __forceinline__ uint32_t bits8(uint8_t x) {
    return x;
}
__device__ __forceinline__ uint32_t bits8(__nv_fp8_e4m3 x) {
    return x.__x;
}
__device__ __forceinline__ uint32_t bits8(__nv_fp8_e5m2 x) {
    return x.__x;
}

// The A fragment of k-step kk, m-tile mi, from registers in the accumulator order of an M x K fragment (K / 8
// column tiles of 4 values per thread: (h, c) = (row g + 8h, k 2t + c), g = lane / 4, t = lane % 4).
// 16-bit: the m16n8k16 fragment is exactly tiles (mi, 2kk) and (mi, 2kk + 1) in that order. 32-bit (tf32) and
// 8-bit elements are not: their fragments hold k (t, t + 4) and (4t..4t+3, 16+4t..) where a thread's registers
// have k (2t, 2t + 1) of each 8-column tile. The product does not depend on the order of k, so these take the
// thread's own values and let the instruction's k stand for the columns they are (rs_k): tf32 k t and t + 4
// are columns 2t and 2t + 1 of tile kk; 8-bit k 4t + j and 16 + 4t + j are columns (j / 2) * 8 + 2t + j % 2
// of tiles 4kk and 4kk + 2. B is read with the same order (b_rs_loader).
// OpA: a 32-bit A in the tf32 operand order instead (Layout::opCols in include/tilec/passes/Layout.h: columns in
// groups of 4, slot (mi * nQ + q) * 2 + h of lane l holding (row g + 8h, column 4q + t)): the k-step's four
// registers are the instruction's a0..a3 in order, and B is read in the instruction's own k order (b_smem_loader).
// ExactA: a float A holds tf32 values only (tilec proved it: include/tilec/passes/Tf32Values.h), so its bits go to
// the instruction as they are even where to_tf32 rounds (-DTILEC_TF32_ROUND; cvt.rna.tf32 leaves such a value
// unchanged).
template <int KT, bool OpA, bool ExactA, class TA> __device__ __forceinline__ void rs_a_fragment(const TA *Areg, int mi, int kk, uint32_t *a) {
    constexpr int EB = (int)sizeof(TA);
    static_assert(!OpA || EB == 4, "the operand order is for 32-bit A");
    const TA *src = Areg + (mi * KT + kk * (4 / EB)) * 4; // the first of the k-step's 8-column tiles
    if constexpr (OpA) {
#pragma unroll
        for (int r = 0; r < 4; ++r) // slots (q = 2kk, h 0), (2kk, 1), (2kk + 1, 0), (2kk + 1, 1): a0..a3
            a[r] = ExactA ? __float_as_uint(src[r]) : to_tf32(__float_as_uint(src[r]));
    } else if constexpr (EB == 2) {
#pragma unroll
        for (int r = 0; r < 4; ++r)
            a[r] = pack16(bits16(src[2 * r]), bits16(src[2 * r + 1]));
    } else if constexpr (EB == 4) {
        static_assert(std::is_same<TA, float>::value, "32-bit A in registers is float (tf32)");
#pragma unroll
        for (int r = 0; r < 4; ++r) // a0 (g, 2t), a1 (g+8, 2t), a2 (g, 2t+1), a3 (g+8, 2t+1): slots 0, 2, 1, 3
            a[r] = ExactA ? __float_as_uint(src[(r & 1) * 2 + (r >> 1)]) : to_tf32(__float_as_uint(src[(r & 1) * 2 + (r >> 1)]));
    } else {
#pragma unroll
        for (int r = 0; r < 4; ++r) { // tiles 2 * (r / 2) and the next, row half r % 2: slots (h, 0), (h, 1)
            const TA *t0 = src + (r >> 1) * 8 + (r & 1) * 2, *t1 = t0 + 4;
            a[r] = bits8(t0[0]) | (bits8(t0[1]) << 8) | (bits8(t1[0]) << 16) | (bits8(t1[1]) << 24);
        }
    }
}

// The B fragments of one k-step for the NT n-tiles of a warp whose columns start at n0, with k in the order
// rs_a_fragment gives A's for 32-bit and 8-bit elements: the column k of (K, N) B, or of (N, K) when Trans,
// read from the swizzled tile (row layout, or TMA's panels of Panel bytes). The k of one thread come in pairs
// (2t, 2t + 1): stored (N, K), a pair is two adjacent elements of one 16-byte chunk (the swizzle moves whole
// chunks), so it is one load (64 bits for tf32, 16 for 8-bit); stored (K, N) it is two rows, read one by one.
template <int N, int K, bool Trans, class T, int NT, int Panel> struct b_rs_loader {
    static constexpr int EB = (int)sizeof(T);
    static constexpr int Inner = Trans ? K : N, Rows = Trans ? N : K;
    static constexpr int RB = row_bytes<Panel, Inner, EB>(), SC = swz_cols<Panel, Inner, EB>();
    static_assert(EB == 1 || EB == 4, "b_rs_loader is for 8-bit and 32-bit operands");
    uint32_t base;
    int n, t;

    __device__ __forceinline__ b_rs_loader(const T *s, int n0, int lane) : base(smem_addr(s)), n(n0 + lane / 4), t(lane % 4) {}

    // The shared address of B element (k, n).
    __device__ __forceinline__ uint32_t at(int k, int col) const {
        const int r = Trans ? col : k, c = Trans ? k : col;
        return base + (uint32_t)(r * RB) + col_bytes<Panel, EB, Rows>(c ^ swz_row_xor<SC, EB>(r));
    }

    __device__ __forceinline__ void load(uint32_t (*b)[2], int kk) const {
#pragma unroll
        for (int ni = 0; ni < NT; ++ni) {
            const int col = n + ni * 8;
            if constexpr (EB == 4 && Trans) {
                uint32_t lo, hi;
                lds32x2(lo, hi, at(kk * 8 + 2 * t, col));
                b[ni][0] = to_tf32(lo);
                b[ni][1] = to_tf32(hi);
            } else if constexpr (EB == 4) {
                const int k = kk * 8 + 2 * t;
                b[ni][0] = to_tf32(lds32(at(k, col)));
                b[ni][1] = to_tf32(lds32(at(k + 1, col)));
            } else if constexpr (Trans) {
#pragma unroll
                for (int r = 0; r < 2; ++r) { // bytes (2t, 2t + 1) and (8 + 2t, 8 + 2t + 1) of the 16-byte half r
                    const int k = kk * 32 + r * 16 + 2 * t;
                    b[ni][r] = lds16(at(k, col)) | (lds16(at(k + 8, col)) << 16);
                }
            } else {
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    uint32_t v = 0;
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        v |= lds8(at(kk * 32 + r * 16 + (j >> 1) * 8 + 2 * t + (j & 1), col)) << (8 * j);
                    b[ni][r] = v;
                }
            }
        }
    }
};

// A from registers (rs_a_fragment), B from shared memory through lb.
template <class Op, int MT, int NT, int KS, int KT, bool OpA, bool ExactA, class TA, class LB, class Acc>
__device__ __forceinline__ void gemm_rs_core(const TA *Areg, const LB &lb, Acc *acc) {
    uint32_t b[2][NT][2];
    lb.load(b[0], 0);
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
        if (kk + 1 < KS)
            lb.load(b[(kk + 1) & 1], kk + 1);
        uint32_t a[MT][4];
#pragma unroll
        for (int mi = 0; mi < MT; ++mi)
            rs_a_fragment<KT, OpA, ExactA>(Areg, mi, kk, a[mi]);
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
    const int warp = (int)(threadIdx.x / 32 % (unsigned)(WarpsM * WarpsN)), lane = (int)threadIdx.x % 32; // of those laid out
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
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransB, int PanelB, bool OpA, bool ExactA, typename TA,
          typename TB, typename TC>
__device__ __forceinline__ void gemm_rs_panels(const TA *Areg, const TB *Bs, TC *C) {
    using Op = mma_detail::mma_op<TA, TB, TC>;
    static_assert(Op::supported, "T.gemm: unsupported combination of operand and accumulator types");
    static_assert(WarpsM > 0 && WarpsN > 0 && M % (16 * WarpsM) == 0 && N % (8 * WarpsN) == 0,
                  "the warp tiles must be whole multiples of 16 x 8");
    static_assert(K > 0 && K % Op::kK == 0, "K must be a multiple of the mma instruction's K");
    static_assert(PanelB == 0 || PanelB == 32 || PanelB == 64 || PanelB == 128, "panels of 128, 64 or 32 bytes");
    constexpr int MT = M / WarpsM / 16, WTN = N / WarpsN, NT = WTN / 8, KS = K / Op::kK, KT = K / 8;
    const int warp = (int)(threadIdx.x / 32 % (unsigned)(WarpsM * WarpsN)), lane = (int)threadIdx.x % 32; // of those laid out
    using LB = std::conditional_t<sizeof(TB) == 2 || OpA, mma_detail::b_smem_loader<N, K, TransB, TB, NT, PanelB>,
                                  mma_detail::b_rs_loader<N, K, TransB, TB, NT, PanelB>>;
    const LB lb(Bs, warp / WarpsM * WTN, lane);
    if constexpr (std::is_same<TC, __half>::value) {
        uint32_t acc[MT * NT * 2];
        mma_detail::pack_acc<MT * NT * 4>(C, acc);
        mma_detail::gemm_rs_core<Op, MT, NT, KS, KT, OpA, ExactA>(Areg, lb, acc);
        mma_detail::unpack_acc<MT * NT * 4>(acc, C);
    } else {
        mma_detail::gemm_rs_core<Op, MT, NT, KS, KT, OpA, ExactA>(Areg, lb, C);
    }
}

/// C += A * B with A in registers: Areg is the thread's M x K fragment in the accumulator order above, laid
/// out for WarpsM warps by rows (K / 8 column tiles), the form a previous gemm's accumulator has, or (OpA, float
/// A only) in the tf32 operand order (rs_a_fragment); where the warps also split the columns (WarpsN > 1), warp w
/// holds the rows of warp w % WarpsM (a copy per warp column) and computes columns (w / WarpsM) * N / WarpsN
/// onwards. B is in shared memory as for gemm_ss. The type combinations of gemm_ss (float A is rounded to tf32 as
/// it is read, unless ExactA says its values are tf32 already).
template <int M, int N, int K, int WarpsM, int WarpsN, bool TransB, bool OpA = false, bool ExactA = false, typename TA,
          typename TB, typename TC>
__device__ __forceinline__ void gemm_rs(const TA *Areg, const TB *Bs, TC *C) {
    static_assert(!ExactA || std::is_same<TA, float>::value, "ExactA is for a float (tf32) A");
    gemm_rs_panels<M, N, K, WarpsM, WarpsN, TransB, 0, OpA, ExactA>(Areg, Bs, C);
}

namespace mma_detail {

// A thread's fragment elements packed into R 32-bit registers, the lowest element in the lowest bits (the PTX
// ISA's order); float elements become tf32.
template <int R, class T> __device__ __forceinline__ void pack_regs(const T *e, uint32_t *r) {
    constexpr int Per = 4 / (int)sizeof(T);
#pragma unroll
    for (int i = 0; i < R; ++i) {
        if constexpr (sizeof(T) == 4) {
            r[i] = to_tf32(__float_as_uint(e[i]));
        } else if constexpr (sizeof(T) == 2) {
            r[i] = pack16(bits16(e[2 * i]), bits16(e[2 * i + 1]));
        } else {
            uint32_t v = 0;
#pragma unroll
            for (int j = 0; j < Per; ++j)
                v |= bits8(e[Per * i + j]) << (8 * j);
            r[i] = v;
        }
    }
}

} // namespace mma_detail

/// One mma.sync m16n8kK of the warp (K = 32 bytes of the operand type) on its threads' registers, the
/// intrinsics-level GEMM of TileLang's emitter: a is the thread's A fragment (four registers' worth of elements),
/// b its B fragment (two), c its four accumulators, each in the PTX ISA's fragment order ("Matrix Fragments for
/// mma.m16n8k*"); c += a * b. Every lane of the warp calls it together.
template <class TA, class TB, class TC> __device__ __forceinline__ void mma_sync(const TA *a, const TB *b, TC *c) {
    using Op = mma_detail::mma_op<TA, TB, TC>;
    static_assert(Op::supported, "no mma.sync for this combination of operand and accumulator types");
    uint32_t ra[4], rb[2];
    mma_detail::pack_regs<4>(a, ra);
    mma_detail::pack_regs<2>(b, rb);
    if constexpr (std::is_same<TC, __half>::value) {
        uint32_t acc[2];
        mma_detail::pack_acc<4>(c, acc);
        Op::run(acc, ra, rb);
        mma_detail::unpack_acc<4>(acc, c);
    } else {
        Op::run(c, ra, rb);
    }
}

/// ldmatrix of the warp, TileLang's emitter's ldmatrix_a / ldmatrix_b: Count (2 or 4) 8x8 matrices of 16-byte rows
/// from shared memory into the thread's registers. Lane l gives the address of row l % 8 of matrix l / 8 (a
/// 16-byte aligned chunk; with Count 2, lanes 16..31 give copies of lanes 0..15's); the thread's register r (the
/// 4 bytes at dst + r * 4 / sizeof(T)) receives word l % 4 of row l / 4 of matrix r, or with Trans (16-bit
/// elements) the matrix transposed: elements (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4). Every lane of the
/// warp calls it together.
template <int Count, bool Trans, class T> __device__ __forceinline__ void ldmatrix(T *dst, const T *src) {
    static_assert(Count == 2 || Count == 4, "ldmatrix of 2 or 4 matrices");
    static_assert(!Trans || sizeof(T) == 2, "ldmatrix.trans moves 16-bit elements");
    uint32_t r[4];
    const uint32_t addr = mma_detail::smem_addr(src);
    if constexpr (Count == 4)
        mma_detail::ldsm_x4<Trans>(r[0], r[1], r[2], r[3], addr);
    else
        mma_detail::ldsm_x2<Trans>(r, addr);
#pragma unroll
    for (int i = 0; i < Count; ++i)
        memcpy(reinterpret_cast<char *>(dst) + 4 * i, &r[i], 4); // (CUDA's device memcpy: NVRTC lacks the builtin)
}

} // namespace tilec

#endif // TILEC_STDLIB_MMA_CUH
