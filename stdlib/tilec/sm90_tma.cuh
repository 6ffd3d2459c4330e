// tilec device runtime: Hopper TMA (cp.async.bulk.tensor) tile loads into the "panel layout" that
// sm90_wgmma.cuh's descriptors read. Part of tilec; embedded into generated code, which must compile on its
// own (nvcc or NVRTC) for every target.
//
// Panel layout. A Rows x Cols tile of ElemBytes-byte elements with swizzle span SwizzleBytes (128, 64 or 32)
// is stored as P = Cols * ElemBytes / SwizzleBytes column panels. Panel p holds columns [p * W, (p + 1) * W),
// W = SwizzleBytes / ElemBytes, as Rows rows of SwizzleBytes bytes: row r of panel p starts at byte
//   p * Rows * SwizzleBytes + r * SwizzleBytes,
// and inside it the 16-byte chunks are permuted by TMA's swizzle of that span, an XOR of address bits:
//   128B: chunk j (0..7) of row r lies at chunk j ^ (r % 8);
//   64B:  chunk j (0..3) at j ^ ((r / 2) % 4)     (address bits 4-5 ^= bits 7-8);
//   32B:  chunk j (0..1) at j ^ ((r / 4) % 2)     (address bit 4 ^= bit 7).
// The tile's shared base must be 1024-byte aligned (the swizzle is computed on absolute address bits; the
// panels then start at multiples of 8 * SwizzleBytes because Rows % 8 == 0).
//
// The tensor map (cuTensorMapEncodeTiled on the host, rank Rank, dims innermost first, the swizzle mode of
// SwizzleBytes) has the box {W, 1.., min(Rows, 256), 1..}: W in dim 0, min(Rows, 256) in dim RowDim, 1 in every
// other dim. tma_load_tile issues P * ceil(Rows / 256) loads, all completing on one mbarrier.
//
// cp.async.bulk.tensor is inline PTX, not CCCL's cuda::ptx::cp_async_bulk_tensor: see sm90_barrier.cuh (the
// tag objects of <cuda/ptx> made NVRTC's PTX depend on the file name). sm_90 and later only (multicast:
// sm_90a); on other targets these functions compile to nothing (generated code calls them only on the Hopper
// path).
#ifndef TILEC_STDLIB_SM90_TMA_CUH
#define TILEC_STDLIB_SM90_TMA_CUH

#include <stdint.h>

#include "tensor_map.cuh"

namespace tilec {

namespace tma_detail {

/// Box (p, q) of a tile: panel p (columns p * W..), rows q * BoxRows..; multicast to ctaMask when Multicast.
template <int Rank, int RowDim, int Rows, int W, int BoxRows, int SwizzleBytes, bool Multicast>
__device__ __forceinline__ void box(unsigned char *base, const tensor_map *map, uint64_t *bar, const int (&given)[5],
                                    int p, int q, uint16_t ctaMask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    int c[5] = {given[0], given[1], given[2], given[3], given[4]};
    c[0] += p * W;
    c[RowDim] += q * BoxRows;
    const unsigned dst = (unsigned)__cvta_generic_to_shared(base + (p * Rows + q * BoxRows) * SwizzleBytes);
    const unsigned mbar = (unsigned)__cvta_generic_to_shared(bar);
    // one operand list for both forms (the plain one ignores %3, the mask), so one ladder over the rank
#define TILEC_TMA(SUFFIX, MASK)                                                                                \
    if constexpr (Rank == 1) TILEC_TMA_ASM(SUFFIX, MASK, "1d", "%4", "r"(c[0]));                                \
    else if constexpr (Rank == 2) TILEC_TMA_ASM(SUFFIX, MASK, "2d", "%4, %5", "r"(c[0]), "r"(c[1]));            \
    else if constexpr (Rank == 3) TILEC_TMA_ASM(SUFFIX, MASK, "3d", "%4, %5, %6", "r"(c[0]), "r"(c[1]), "r"(c[2])); \
    else if constexpr (Rank == 4)                                                                              \
        TILEC_TMA_ASM(SUFFIX, MASK, "4d", "%4, %5, %6, %7", "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));        \
    else TILEC_TMA_ASM(SUFFIX, MASK, "5d", "%4, %5, %6, %7, %8", "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]));
#define TILEC_TMA_ASM(SUFFIX, MASK, DIMS, COORDS, ...)                                                         \
    asm volatile("cp.async.bulk.tensor." DIMS ".shared::cluster.global.mbarrier::complete_tx::bytes" SUFFIX       \
                 " [%0], [%1, {" COORDS "}], [%2]" MASK ";\n" ::"r"(dst), "l"(map), "r"(mbar), "h"(ctaMask),        \
                 __VA_ARGS__                                                                                   \
                 : "memory")
    if constexpr (Multicast) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        TILEC_TMA(".multicast::cluster", ", %3")
#endif
    } else {
        TILEC_TMA("", "")
    }
#undef TILEC_TMA_ASM
#undef TILEC_TMA
#else
    (void)base;
    (void)map;
    (void)bar;
    (void)given;
    (void)p;
    (void)q;
    (void)ctaMask;
#endif
}

} // namespace tma_detail

/// Loads the Rows x Cols tile whose first element has coordinates (c0, c1, ...) (dims innermost first, element
/// units; out-of-range elements are zero-filled by the TMA unit) into `smem` in the panel layout above.
/// Issued by ONE thread. Completes on `bar`, on which the caller (or another thread, before or after) did
/// mbarrier_arrive_expect_tx with the bytes of every tile of the stage; each tile adds Rows * Cols * ElemBytes.
/// The tile's column dimension is dim 0 of the map, its row dimension dim RowDim.
//
// SwizzleBytes == 0: a row (Rows == 1, RowDim 0) of Cols elements along dim 0, stored densely (no swizzle), in
// boxes of min(Cols, 256) elements (the map's box {min(Cols, 256), 1, ...}, CU_TENSOR_MAP_SWIZZLE_NONE); each
// box a multiple of 16 bytes, the destination 128-byte aligned. Or (Rows > 1, RowDim >= 1) a dense row-major
// tile of rows of Cols * ElemBytes bytes (a multiple of 16, at most 256 elements: one box wide), in boxes of
// min(Rows, 256) rows (the map's box {Cols, .., min(Rows, 256), ..}): T.gemm_sp's metadata of 16-byte rows.
template <int Rank, int RowDim, int Rows, int Cols, int ElemBytes, int SwizzleBytes>
__device__ __forceinline__ void tma_load_tile(void *smem, const tensor_map *map, uint64_t *bar, int c0, int c1,
                                              int c2 = 0, int c3 = 0, int c4 = 0) {
    if constexpr (SwizzleBytes == 0 && Rows > 1) {
        static_assert(Rank >= 2 && Rank <= 5 && RowDim >= 1 && RowDim < Rank, "the row dimension is one of dims 1..Rank-1");
        static_assert(Cols <= 256 && Cols * ElemBytes % 16 == 0, "an unswizzled tile is one box of a multiple of 16 bytes wide");
        static_assert(Rows <= 256 || Rows % 256 == 0, "a tile of more than 256 rows is loaded in boxes of 256 rows");
        constexpr int BoxRows = Rows < 256 ? Rows : 256;
        unsigned char *base = static_cast<unsigned char *>(smem);
        const int given[5] = {c0, c1, c2, c3, c4};
#pragma unroll
        for (int q = 0; q < Rows / BoxRows; ++q)
            tma_detail::box<Rank, RowDim, Rows, Cols, BoxRows, Cols * ElemBytes, false>(base, map, bar, given, 0, q, 0);
    } else if constexpr (SwizzleBytes == 0) {
        static_assert(Rank >= 1 && Rank <= 5 && Rows == 1 && RowDim == 0, "an unswizzled TMA load is one row along dim 0");
        constexpr int W = Cols < 256 ? Cols : 256;
        static_assert(Cols % W == 0 && W * ElemBytes % 16 == 0, "rows of whole boxes of a multiple of 16 bytes");
        unsigned char *base = static_cast<unsigned char *>(smem); // box() compiles to nothing before sm_90
        const int given[5] = {c0, c1, c2, c3, c4};
#pragma unroll
        for (int p = 0; p < Cols / W; ++p)
            tma_detail::box<Rank, 0, 1, W, 1, W * ElemBytes, false>(base, map, bar, given, p, 0, 0);
    } else {
        static_assert(Rank >= 1 && Rank <= 5, "a TMA tensor has 1 to 5 dimensions");
        static_assert(RowDim >= 1 && RowDim < Rank, "the row dimension is one of dims 1..Rank-1");
        static_assert(SwizzleBytes == 128 || SwizzleBytes == 64 || SwizzleBytes == 32,
                      "the panel layout swizzles 128, 64 or 32 bytes");
        static_assert(ElemBytes == 1 || ElemBytes == 2 || ElemBytes == 4, "elements of 1, 2 or 4 bytes");
        constexpr int W = SwizzleBytes / ElemBytes;
        static_assert(Cols % W == 0, "a tile is a whole number of panels (Cols * ElemBytes % SwizzleBytes == 0)");
        static_assert(Rows % 8 == 0, "a tile has a multiple of 8 rows (one swizzle period)");
        static_assert(Rows <= 256 || Rows % 256 == 0, "a tile of more than 256 rows is loaded in boxes of 256 rows");
        constexpr int P = Cols / W;
        constexpr int BoxRows = Rows < 256 ? Rows : 256;
        constexpr int Q = Rows / BoxRows;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        unsigned char *base = static_cast<unsigned char *>(smem);
        const int given[5] = {c0, c1, c2, c3, c4};
#pragma unroll
        for (int p = 0; p < P; ++p) {
#pragma unroll
            for (int q = 0; q < Q; ++q)
                tma_detail::box<Rank, RowDim, Rows, W, BoxRows, SwizzleBytes, false>(base, map, bar, given, p, q, 0);
        }
#else
        (void)smem;
        (void)map;
        (void)bar;
        (void)c0;
        (void)c1;
        (void)c2;
        (void)c3;
        (void)c4;
        (void)P;
        (void)Q;
#endif
    }
}

/// tma_load_tile in boxes of BoxRows rows (the map's box {W, BoxRows}), issuing only the boxes that start
/// below row `live` of the tile (the same in every thread; the block's rows past it are never observed): the
/// mbarrier's expect_tx must count P * min(max(ceil(live / BoxRows), 0), Rows / BoxRows) boxes of BoxRows *
/// SwizzleBytes bytes, and the stage's rows from the first box not issued on keep what they held.
template <int Rank, int RowDim, int Rows, int Cols, int ElemBytes, int SwizzleBytes, int BoxRows>
__device__ __forceinline__ void tma_load_tile_rows(void *smem, const tensor_map *map, uint64_t *bar, int live, int c0,
                                                   int c1, int c2 = 0, int c3 = 0, int c4 = 0) {
    static_assert(Rank >= 2 && Rank <= 5 && RowDim >= 1 && RowDim < Rank, "dims as for tma_load_tile");
    static_assert(SwizzleBytes == 128 || SwizzleBytes == 64 || SwizzleBytes == 32, "128, 64 or 32-byte panels");
    constexpr int W = SwizzleBytes / ElemBytes;
    static_assert(Cols % W == 0 && BoxRows % 8 == 0 && BoxRows <= 256 && Rows % BoxRows == 0,
                  "whole panels in boxes of 8..256 rows that tile the rows");
    constexpr int P = Cols / W, Q = Rows / BoxRows;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    unsigned char *base = static_cast<unsigned char *>(smem);
    const int given[5] = {c0, c1, c2, c3, c4};
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        if (q * BoxRows >= live) break;
#pragma unroll
        for (int p = 0; p < P; ++p)
            tma_detail::box<Rank, RowDim, Rows, W, BoxRows, SwizzleBytes, false>(base, map, bar, given, p, q, 0);
    }
#else
    (void)smem;
    (void)map;
    (void)bar;
    (void)live;
    (void)c0;
    (void)c1;
    (void)c2;
    (void)c3;
    (void)c4;
    (void)P;
    (void)Q;
#endif
}

/// The share `part` (0..Parts-1) of a tile that Parts CTAs of a cluster load together, each multicasting its
/// share to every CTA in `ctaMask` (bit i: cluster rank i): same panel layout, smem offset and mbarrier
/// offset in every destination CTA, each of whose full barriers must expect the whole tile's bytes. The map's
/// box is {W, BoxRows} (BoxRows divides Rows, at most 256); the tile's P * Rows / BoxRows boxes are dealt out
/// in order, Parts consecutive shares. Needs sm_90a (multicast); compiles to nothing elsewhere.
template <int Rank, int RowDim, int Rows, int Cols, int ElemBytes, int SwizzleBytes, int BoxRows, int Parts>
__device__ __forceinline__ void tma_load_tile_multicast(void *smem, const tensor_map *map, uint64_t *bar,
                                                        uint16_t ctaMask, int part, int c0, int c1, int c2 = 0,
                                                        int c3 = 0, int c4 = 0) {
    static_assert(Rank >= 1 && Rank <= 5 && RowDim >= 1 && RowDim < Rank, "dims as for tma_load_tile");
    static_assert(SwizzleBytes == 128 || SwizzleBytes == 64 || SwizzleBytes == 32, "128, 64 or 32-byte panels");
    constexpr int W = SwizzleBytes / ElemBytes;
    static_assert(Cols % W == 0 && Rows % 8 == 0, "a whole number of panels of whole swizzle periods");
    static_assert(BoxRows <= 256 && BoxRows % 8 == 0 && Rows % BoxRows == 0, "boxes of 8..256 rows tile the rows");
    constexpr int P = Cols / W, Q = Rows / BoxRows, Boxes = P * Q;
    static_assert(Parts >= 1 && Boxes % Parts == 0, "the boxes split evenly between the CTAs");
    constexpr int Share = Boxes / Parts;
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    unsigned char *base = static_cast<unsigned char *>(smem);
    const int given[5] = {c0, c1, c2, c3, c4};
#pragma unroll
    for (int j = 0; j < Share; ++j) {
        const int i = part * Share + j;
        tma_detail::box<Rank, RowDim, Rows, W, BoxRows, SwizzleBytes, true>(base, map, bar, given, i / Q, i % Q,
                                                                            ctaMask);
    }
#else
    (void)smem;
    (void)map;
    (void)bar;
    (void)ctaMask;
    (void)part;
    (void)c0;
    (void)c1;
    (void)c2;
    (void)c3;
    (void)c4;
    (void)Share;
#endif
}

} // namespace tilec

#endif // TILEC_STDLIB_SM90_TMA_CUH
