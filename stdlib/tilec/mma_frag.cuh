// tilec device runtime: mma.sync operand fragments loaded from swizzled shared memory, and the mma.sync
// instructions per type. Part of tilec; embedded into generated code, which must compile on its own (nvcc
// or NVRTC). Used by mma.cuh.
//
// A k-step of the instruction covers two 16-byte chunks of K (kK = 2 * 16 / sizeof(T) for every type), so
// an operand stored with K innermost ("natural": A as (M, K), B as (N, K)) is read with ldmatrix, each 8x8
// b16 matrix being 8 rows of one chunk: the thread receives word lane % 4 of row lane / 4, which is the
// mma fragment for 16-bit, 32-bit (one tf32) and 8-bit (four bytes) elements alike. Stored the other way,
// 16-bit operands use ldmatrix.trans; 32-bit and 8-bit ones cannot be transposed by ldmatrix and are read
// with plain shared loads. The 8 rows of every ldmatrix start at a multiple of 8 and read one logical chunk,
// so the swizzle puts them in 8 different bank groups.
#ifndef TILEC_STDLIB_MMA_FRAG_CUH
#define TILEC_STDLIB_MMA_FRAG_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

#include "swizzle.cuh"

namespace tilec {

namespace mma_detail {

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

// Volatile, so that the compiler keeps the loads after the barrier that publishes the tile.
template <bool Trans>
__device__ __forceinline__ void ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                        uint32_t addr) {
    if constexpr (Trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                     : "r"(addr));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                     : "r"(addr));
}

// Two matrices; the addresses of lanes 0..15 are used.
template <bool Trans> __device__ __forceinline__ void ldsm_x2(uint32_t *r, uint32_t addr) {
    if constexpr (Trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1])
                     : "r"(addr));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1])
                     : "r"(addr));
}

__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
    uint32_t v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
}

// Two consecutive 32-bit words at an 8-byte aligned address, in one load.
__device__ __forceinline__ void lds32x2(uint32_t &lo, uint32_t &hi, uint32_t addr) {
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n" : "=r"(lo), "=r"(hi) : "r"(addr));
}

// Two consecutive bytes at a 2-byte aligned address, in one load (low byte first).
__device__ __forceinline__ uint32_t lds16(uint32_t addr) {
    unsigned short v;
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr));
    return v;
}

__device__ __forceinline__ uint32_t lds8(uint32_t addr) {
    unsigned short v;
    asm volatile("ld.shared.u8 %0, [%1];\n" : "=h"(v) : "r"(addr));
    return v;
}

// A float (as bits) as an mma.sync tf32 operand. By default its bits as they are: the tensor core reads tf32's
// sign, exponent and 10 fraction bits and ignores the low 13 (a truncation toward zero), as TileLang's code and
// tilec's wgmma path hand float operands over (docs/LANGUAGE.md, T.gemm). Compiled with -DTILEC_TF32_ROUND, the
// operand is rounded to nearest, ties away from zero (cvt.rna.tf32.f32: two instructions per element on sm_90).
__device__ __forceinline__ uint32_t to_tf32(uint32_t bits) {
#ifdef TILEC_TF32_ROUND
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(bits)));
    return r;
#else
    return bits;
#endif
}

template <class T, int N> __device__ __forceinline__ void round_tf32(uint32_t *r) {
    if constexpr (std::is_same<T, float>::value) {
#pragma unroll
        for (int i = 0; i < N; ++i)
            r[i] = to_tf32(r[i]);
    }
}

// The byte offset, from its row's start, of physical column c (the logical column after the swizzle XOR) of
// a stored tile of Rows rows. Panel == 0: the row layout of swizzle.cuh (rows of the tile's full width).
// Panel > 0: TMA's panel layout (sm90_tma.cuh): column panels of Panel bytes, each Rows rows of Panel bytes,
// so the columns past the first panel sit whole panels (Rows * Panel bytes) further on.
template <int Panel, int EB, int Rows> __device__ __forceinline__ uint32_t col_bytes(int c) {
    if constexpr (Panel == 0) {
        return (uint32_t)(c * EB);
    } else {
        constexpr unsigned W = Panel / EB;
        return ((unsigned)c % W) * EB + ((unsigned)c / W) * (unsigned)(Rows * Panel);
    }
}

// The stored row length in bytes (the address step from one row to the next) and the row length in elements
// that the swizzle XOR is computed for: the tile's width, or one panel's.
template <int Panel, int Inner, int EB> __host__ __device__ constexpr int row_bytes() { return Panel ? Panel : Inner * EB; }
template <int Panel, int Inner, int EB> __host__ __device__ constexpr int swz_cols() { return Panel ? Panel / EB : Inner; }

// Four bytes of consecutive K (k, k+1, k+2, k+3 at rowAddr, rowAddr + rowBytes, ...), packed low to high;
// xr[j] is the swizzle of row k + j, col the logical column.
template <int Panel, int Rows>
__device__ __forceinline__ uint32_t lds8x4(const uint32_t *rowAddr, uint32_t offset, int col, const int *xr) {
    uint32_t v = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j)
        v |= lds8(rowAddr[j] + offset + col_bytes<Panel, 1, Rows>(col ^ xr[j])) << (8 * j);
    return v;
}

/// The A fragments of one k-step for the MT m-tiles of a warp whose rows start at m0. A is M x K, stored
/// (M, K) or, when Trans, (K, M), in the row layout (Panel == 0) or TMA's panel layout of Panel bytes.
template <int M, int K, bool Trans, class T, int MT, int Panel> struct a_smem_loader {
    static constexpr int EB = (int)sizeof(T);
    static constexpr int E = 16 / EB;           // elements per 16-byte chunk
    static constexpr int Inner = Trans ? M : K; // the stored row length
    static constexpr int Rows = Trans ? K : M;  // the stored rows
    static constexpr int RB = row_bytes<Panel, Inner, EB>(), SC = swz_cols<Panel, Inner, EB>();
    static constexpr bool Plain = Trans && EB != 2;
    static_assert(EB == 1 || EB == 2 || EB == 4, "mma operands are 8, 16 or 32 bits wide");

    uint32_t rowAddr[4]; // shared byte address of the lane's row(s) of the tile
    int col;             // the lane's logical column (elements)
    int xr[4];           // the swizzle XOR of those rows

    __device__ __forceinline__ a_smem_loader(const T *s, int m0, int lane) {
        const uint32_t base = smem_addr(s);
        if constexpr (!Trans) {
            // ldmatrix.x4: lanes 0..15 address rows 0..15 of chunk 0, lanes 16..31 of chunk 1 (a0..a3).
            const int row = m0 + lane % 16;
            rowAddr[0] = base + (uint32_t)(row * RB);
            col = (lane / 16) * E;
            xr[0] = swz_row_xor<SC, EB>(row);
        } else if constexpr (EB == 2) {
            // ldmatrix.x4.trans of the (K, M) tile: matrices (k 0-7, m 0-7), (k 0-7, m 8-15),
            // (k 8-15, m 0-7), (k 8-15, m 8-15) transpose into a0..a3.
            const int j = lane / 8, krow = lane % 8 + (j >> 1) * 8;
            rowAddr[0] = base + (uint32_t)(krow * RB);
            col = m0 + (j & 1) * 8;
            xr[0] = swz_row_xor<SC, EB>(krow);
        } else {
            // Plain loads: tf32 a0 = (m g, k t), a1 = (g+8, t), a2 = (g, t+4), a3 = (g+8, t+4); 8-bit
            // a0 = (g, 4t..4t+3), a1 = (g+8, ..), a2 = (g, 16+4t..), a3 = (g+8, 16+4t..).
            const int t = lane % 4;
            col = m0 + lane / 4;
            constexpr int Rows = EB == 4 ? 2 : 4;
#pragma unroll
            for (int r = 0; r < Rows; ++r) {
                const int krow = EB == 4 ? t + 4 * r : 4 * t + r;
                rowAddr[r] = base + (uint32_t)(krow * RB);
                xr[r] = swz_row_xor<SC, EB>(krow);
            }
        }
    }

    __device__ __forceinline__ void load(uint32_t (*a)[4], int kk) const {
        if constexpr (!Trans) {
            const uint32_t c = col_bytes<Panel, EB, Rows>((col + kk * 2 * E) ^ xr[0]);
#pragma unroll
            for (int mi = 0; mi < MT; ++mi) {
                const uint32_t addr = rowAddr[0] + (uint32_t)(mi * 16 * RB) + c;
                ldsm_x4<false>(a[mi][0], a[mi][1], a[mi][2], a[mi][3], addr);
            }
        } else if constexpr (!Plain) {
            const uint32_t r = rowAddr[0] + (uint32_t)(kk * 16 * RB);
#pragma unroll
            for (int mi = 0; mi < MT; ++mi) {
                const uint32_t addr = r + col_bytes<Panel, EB, Rows>((col + mi * 16) ^ xr[0]);
                ldsm_x4<true>(a[mi][0], a[mi][1], a[mi][2], a[mi][3], addr);
            }
        } else if constexpr (EB == 4) {
            const uint32_t k = (uint32_t)(kk * 8 * RB);
#pragma unroll
            for (int mi = 0; mi < MT; ++mi) {
                const int m = col + mi * 16;
                a[mi][0] = lds32(rowAddr[0] + k + col_bytes<Panel, EB, Rows>(m ^ xr[0]));
                a[mi][1] = lds32(rowAddr[0] + k + col_bytes<Panel, EB, Rows>((m + 8) ^ xr[0]));
                a[mi][2] = lds32(rowAddr[1] + k + col_bytes<Panel, EB, Rows>(m ^ xr[1]));
                a[mi][3] = lds32(rowAddr[1] + k + col_bytes<Panel, EB, Rows>((m + 8) ^ xr[1]));
            }
        } else {
            const uint32_t k = (uint32_t)(kk * 32 * RB), k16 = k + (uint32_t)(16 * RB);
#pragma unroll
            for (int mi = 0; mi < MT; ++mi) {
                const int m = col + mi * 16;
                a[mi][0] = lds8x4<Panel, Rows>(rowAddr, k, m, xr);
                a[mi][1] = lds8x4<Panel, Rows>(rowAddr, k, m + 8, xr);
                a[mi][2] = lds8x4<Panel, Rows>(rowAddr, k16, m, xr);
                a[mi][3] = lds8x4<Panel, Rows>(rowAddr, k16, m + 8, xr);
            }
        }
#pragma unroll
        for (int mi = 0; mi < MT; ++mi)
            round_tf32<T, 4>(a[mi]);
    }
};

/// The B fragments of one k-step for the NT n-tiles of a warp whose columns start at n0. B is K x N,
/// stored (K, N) or, when Trans, (N, K) (the natural orientation of mma's column-major B), in the row layout
/// (Panel == 0) or TMA's panel layout of Panel bytes.
template <int N, int K, bool Trans, class T, int NT, int Panel> struct b_smem_loader {
    static constexpr int EB = (int)sizeof(T);
    static constexpr int E = 16 / EB;
    static constexpr int Inner = Trans ? K : N;
    static constexpr int Rows = Trans ? N : K;
    static constexpr int RB = row_bytes<Panel, Inner, EB>(), SC = swz_cols<Panel, Inner, EB>();
    static constexpr bool Plain = !Trans && EB != 2;
    static_assert(EB == 1 || EB == 2 || EB == 4, "mma operands are 8, 16 or 32 bits wide");

    uint32_t rowAddr[4];
    int col;
    int xr[4];

    __device__ __forceinline__ b_smem_loader(const T *s, int n0, int lane) {
        const uint32_t base = smem_addr(s);
        if constexpr (Trans) {
            // ldmatrix.x4 over two n-tiles: matrices (n 0-7, chunk 0), (n 0-7, chunk 1), (n 8-15, chunk 0),
            // (n 8-15, chunk 1) are b0, b1 of tile 2p and of tile 2p + 1.
            const int row = n0 + lane % 8 + (lane / 16) * 8;
            rowAddr[0] = base + (uint32_t)(row * RB);
            col = ((lane / 8) & 1) * E;
            xr[0] = swz_row_xor<SC, EB>(row);
        } else if constexpr (EB == 2) {
            // ldmatrix.x4.trans of the (K, N) tile: matrices (k 0-7, n 0-7), (k 8-15, n 0-7),
            // (k 0-7, n 8-15), (k 8-15, n 8-15).
            const int j = lane / 8, krow = lane % 8 + (j & 1) * 8;
            rowAddr[0] = base + (uint32_t)(krow * RB);
            col = n0 + (j >> 1) * 8;
            xr[0] = swz_row_xor<SC, EB>(krow);
        } else {
            // Plain loads: tf32 b0 = (k t, n g), b1 = (t+4, g); 8-bit b0 = (4t..4t+3, g), b1 = (16+4t.., g).
            const int t = lane % 4;
            col = n0 + lane / 4;
            constexpr int Rows = EB == 4 ? 2 : 4;
#pragma unroll
            for (int r = 0; r < Rows; ++r) {
                const int krow = EB == 4 ? t + 4 * r : 4 * t + r;
                rowAddr[r] = base + (uint32_t)(krow * RB);
                xr[r] = swz_row_xor<SC, EB>(krow);
            }
        }
    }

    __device__ __forceinline__ void load(uint32_t (*b)[2], int kk) const {
        if constexpr (Trans) {
            const uint32_t c = col_bytes<Panel, EB, Rows>((col + kk * 2 * E) ^ xr[0]);
#pragma unroll
            for (int p = 0; p < NT / 2; ++p) {
                const uint32_t addr = rowAddr[0] + (uint32_t)(p * 16 * RB) + c;
                ldsm_x4<false>(b[2 * p][0], b[2 * p][1], b[2 * p + 1][0], b[2 * p + 1][1], addr);
            }
            if constexpr (NT % 2 != 0)
                ldsm_x2<false>(b[NT - 1], rowAddr[0] + (uint32_t)((NT - 1) * 8 * RB) + c);
        } else if constexpr (!Plain) {
            const uint32_t r = rowAddr[0] + (uint32_t)(kk * 16 * RB);
#pragma unroll
            for (int p = 0; p < NT / 2; ++p) {
                const uint32_t addr = r + col_bytes<Panel, EB, Rows>((col + p * 16) ^ xr[0]);
                ldsm_x4<true>(b[2 * p][0], b[2 * p][1], b[2 * p + 1][0], b[2 * p + 1][1], addr);
            }
            if constexpr (NT % 2 != 0)
                ldsm_x2<true>(b[NT - 1], r + col_bytes<Panel, EB, Rows>((col + (NT - 1) * 8) ^ xr[0]));
        } else if constexpr (EB == 4) {
            const uint32_t k = (uint32_t)(kk * 8 * RB);
#pragma unroll
            for (int ni = 0; ni < NT; ++ni) {
                const int n = col + ni * 8;
                b[ni][0] = lds32(rowAddr[0] + k + col_bytes<Panel, EB, Rows>(n ^ xr[0]));
                b[ni][1] = lds32(rowAddr[1] + k + col_bytes<Panel, EB, Rows>(n ^ xr[1]));
            }
        } else {
            const uint32_t k = (uint32_t)(kk * 32 * RB), k16 = k + (uint32_t)(16 * RB);
#pragma unroll
            for (int ni = 0; ni < NT; ++ni) {
                const int n = col + ni * 8;
                b[ni][0] = lds8x4<Panel, Rows>(rowAddr, k, n, xr);
                b[ni][1] = lds8x4<Panel, Rows>(rowAddr, k16, n, xr);
            }
        }
#pragma unroll
        for (int ni = 0; ni < NT; ++ni)
            round_tf32<T, 2>(b[ni]);
    }
};

// The mma.sync instructions, one specialization of mma_op per (A, B, accumulator) type combination. Each
// is m16n8kK with A row-major and B column-major ("row.col"): per thread A is four 32-bit registers, B two,
// and the accumulator four 32-bit values (two f16x2 registers for half accumulation), in the fragment
// layouts of the PTX ISA ("Matrix Fragments for mma.m16n8k*"). kK is the instruction's K; run() takes
// kAccPerTile accumulator values per m16n8 tile; kNeedsSm89 marks the float8 instructions.
template <class TA, class TB, class TC> struct mma_op {
    static constexpr bool supported = false;
    static constexpr bool kNeedsSm89 = false;
    static constexpr int kK = 1;
};

// Four float (or int32) accumulators read and written in place: {%0..%3} is both C and D.
#define TILEC_MMA_4ACC(TA_, TB_, TC_, K_, SM89_, CON_, PTX_)                                                 \
    template <> struct mma_op<TA_, TB_, TC_> {                                                               \
        static constexpr bool supported = true;                                                              \
        static constexpr bool kNeedsSm89 = SM89_;                                                            \
        static constexpr int kK = K_;                                                                        \
        static constexpr int kAccPerTile = 4;                                                                \
        __device__ static __forceinline__ void run(TC_ *d, const uint32_t *a, const uint32_t *b) {           \
            TILEC_MMA_ASM_##SM89_(PTX_, CON_);                                                               \
        }                                                                                                    \
    };

#define TILEC_MMA_ASM(PTX_, CON_)                                                                            \
    asm("mma.sync.aligned." PTX_ " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"        \
        : CON_(d[0]), CON_(d[1]), CON_(d[2]), CON_(d[3])                                                     \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
#define TILEC_MMA_ASM_false(PTX_, CON_) TILEC_MMA_ASM(PTX_, CON_)
// float8 mma exists from sm_89 on: gemm_ss rejects it at compile time before; this keeps ptxas away from it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
#define TILEC_MMA_ASM_true(PTX_, CON_) __trap()
#else
#define TILEC_MMA_ASM_true(PTX_, CON_) TILEC_MMA_ASM(PTX_, CON_)
#endif

TILEC_MMA_4ACC(__half, __half, float, 16, false, "+f", "m16n8k16.row.col.f32.f16.f16.f32")
TILEC_MMA_4ACC(__nv_bfloat16, __nv_bfloat16, float, 16, false, "+f", "m16n8k16.row.col.f32.bf16.bf16.f32")
// float operands go through tf32: the fragment loaders hand them over by to_tf32 (their bits; rounded with
// -DTILEC_TF32_ROUND).
TILEC_MMA_4ACC(float, float, float, 8, false, "+f", "m16n8k8.row.col.f32.tf32.tf32.f32")
TILEC_MMA_4ACC(int8_t, int8_t, int32_t, 32, false, "+r", "m16n8k32.row.col.s32.s8.s8.s32")
TILEC_MMA_4ACC(int8_t, uint8_t, int32_t, 32, false, "+r", "m16n8k32.row.col.s32.s8.u8.s32")
TILEC_MMA_4ACC(uint8_t, int8_t, int32_t, 32, false, "+r", "m16n8k32.row.col.s32.u8.s8.s32")
TILEC_MMA_4ACC(uint8_t, uint8_t, int32_t, 32, false, "+r", "m16n8k32.row.col.s32.u8.u8.s32")
TILEC_MMA_4ACC(__nv_fp8_e4m3, __nv_fp8_e4m3, float, 32, true, "+f", "m16n8k32.row.col.f32.e4m3.e4m3.f32")
TILEC_MMA_4ACC(__nv_fp8_e4m3, __nv_fp8_e5m2, float, 32, true, "+f", "m16n8k32.row.col.f32.e4m3.e5m2.f32")
TILEC_MMA_4ACC(__nv_fp8_e5m2, __nv_fp8_e4m3, float, 32, true, "+f", "m16n8k32.row.col.f32.e5m2.e4m3.f32")
TILEC_MMA_4ACC(__nv_fp8_e5m2, __nv_fp8_e5m2, float, 32, true, "+f", "m16n8k32.row.col.f32.e5m2.e5m2.f32")

#undef TILEC_MMA_4ACC
#undef TILEC_MMA_ASM
#undef TILEC_MMA_ASM_false
#undef TILEC_MMA_ASM_true

// Half accumulation: C and D are two f16x2 registers, {c0, c1} (row g) and {c2, c3} (row g + 8).
template <> struct mma_op<__half, __half, __half> {
    static constexpr bool supported = true;
    static constexpr bool kNeedsSm89 = false;
    static constexpr int kK = 16;
    static constexpr int kAccPerTile = 2;
    __device__ static __forceinline__ void run(uint32_t *d, const uint32_t *a, const uint32_t *b) {
        asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, "
            "%1};\n"
            : "+r"(d[0]), "+r"(d[1])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

} // namespace mma_detail
} // namespace tilec

#endif // TILEC_STDLIB_MMA_FRAG_CUH
