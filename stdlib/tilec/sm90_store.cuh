// tilec device runtime: the Hopper GEMM epilogue. wgmma accumulators go to a shared staging piece with
// stmatrix, and one thread per warpgroup stores the piece to global memory with a TMA store
// (cp.async.bulk.tensor shared -> global); and a single warp's stmatrix (a tensor-core fragment's copy into a
// 16-bit shared tile, stmatrix below). Part of tilec; embedded into generated code, which must compile on
// its own (nvcc or NVRTC) for every target.
//
// A piece is 64 rows x Cols columns of 2-byte elements (Cols = 16, 32 or 64), the rows of one wgmma m-tile
// of a warpgroup, stored as ONE panel of the panel layout of sm90_tma.cuh: row r at byte r * SwizzleBytes,
// SwizzleBytes = 2 * Cols, its 16-byte chunks permuted by TMA's swizzle of that span. The piece's base is
// 1024-byte aligned (the swizzle is computed on absolute address bits). Each stmatrix then writes 8 rows of
// one logical chunk, which the swizzle spreads over all 32 banks: no bank conflicts.
//
// The sequence per piece, run by every thread of the warpgroup (lowered by src/lower/StageEpilogue.cpp):
//   tma_store_wait(pending)   in the warpgroup's store thread: its earlier stores no longer read the buffer
//   named barrier             (the warpgroup's own)
//   stmatrix_tile             every thread: its accumulators of the piece, converted, into the buffer
//   fence_proxy_async_shared  every thread: the writes are visible to the async proxy (the TMA unit)
//   named barrier
//   tma_store_tile            the store thread: issue the store and commit it as one bulk async-group
// and, before the block exits, tma_store_wait(0) in each store thread (the stores' reads of shared memory
// must finish while the block still owns it). TMA clips the rows and columns outside the tensor: the bounds
// of partial tiles.
//
// The accumulator order is wgmma's (sm90_wgmma.cuh): with lane = threadIdx.x % 32, warp = threadIdx.x / 32,
// slot ((ni * 2 + h) * 2 + c) of `acc` (ni counted from the piece's first 8-column block) is element
// (warp % 4 * 16 + h * 8 + lane / 4, ni * 8 + lane % 4 * 2 + c) of the piece. That is exactly what
// stmatrix.m8n8.x4 takes: matrix i of one 16 x 16 block is register i, rows (i % 2) * 8.. and columns
// (i / 2) * 8.., each thread holding its row lane / 4 and column pair lane % 4; lane l gives the address of
// row l % 8 of matrix l / 8.
//
// stmatrix, the TMA store and its bulk-group waits are inline PTX (<cuda/ptx> has no stmatrix; see
// sm90_barrier.cuh for why the TMA instructions are not CCCL's). sm_90 and later; elsewhere these compile
// to nothing (generated code calls them only on the Hopper path).
#ifndef TILEC_STDLIB_SM90_STORE_CUH
#define TILEC_STDLIB_SM90_STORE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "tensor_map.cuh"

namespace tilec {

namespace store_detail {

/// Two accumulators as one 32-bit register of two TO values, the first in the low half.
template <class TO, class TC> __device__ __forceinline__ uint32_t pack2(const TC *acc) {
    static_assert(std::is_same_v<TO, __half> || std::is_same_v<TO, __nv_bfloat16>, "stmatrix stores 16-bit elements");
    uint32_t r;
    if constexpr (std::is_same_v<TC, TO>) {
        r = *reinterpret_cast<const uint32_t *>(acc);
    } else if constexpr (std::is_same_v<TO, __half>) {
        __half2 h = __floats2half2_rn((float)acc[0], (float)acc[1]);
        r = *reinterpret_cast<uint32_t *>(&h);
    } else {
        __nv_bfloat162 h = __floats2bfloat162_rn((float)acc[0], (float)acc[1]);
        r = *reinterpret_cast<uint32_t *>(&h);
    }
    return r;
}

/// The 16-byte chunk that logical chunk `chunk` of row `row` occupies under TMA's swizzle of SwizzleBytes.
template <int SwizzleBytes> __device__ __forceinline__ int swizzled_chunk(int row, int chunk) {
    if constexpr (SwizzleBytes == 128) return chunk ^ (row % 8);
    else if constexpr (SwizzleBytes == 64) return chunk ^ (row / 2 % 4);
    else return chunk ^ (row / 4 % 2);
}

} // namespace store_detail

/// Writes the calling thread's accumulators of one 64 x Cols piece (acc: its first slot of the piece, see
/// above) into `piece` in the swizzled panel layout. Called by all 128 threads of a warpgroup together.
template <int Cols, int SwizzleBytes, class TO, class TC>
__device__ __forceinline__ void stmatrix_tile(TO *piece, const TC *acc) {
    static_assert(sizeof(TO) == 2, "stmatrix stores 16-bit elements");
    static_assert(Cols == 16 || Cols == 32 || Cols == 64, "a piece is 16, 32 or 64 columns wide");
    static_assert(SwizzleBytes == Cols * 2, "a piece is one panel: its rows are one swizzle span");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4;
    const int matrix = lane / 8;
    const int row = warp * 16 + matrix % 2 * 8 + lane % 8;
    const unsigned base = (unsigned)__cvta_generic_to_shared(piece) + row * SwizzleBytes;
#pragma unroll
    for (int j = 0; j < Cols / 16; ++j) {
        // 8-column blocks 2j and 2j + 1; h = 0 (rows 0..7) and 1 (rows 8..15) of each
        const uint32_t r0 = store_detail::pack2<TO>(acc + (2 * j * 2 + 0) * 2);
        const uint32_t r1 = store_detail::pack2<TO>(acc + (2 * j * 2 + 1) * 2);
        const uint32_t r2 = store_detail::pack2<TO>(acc + ((2 * j + 1) * 2 + 0) * 2);
        const uint32_t r3 = store_detail::pack2<TO>(acc + ((2 * j + 1) * 2 + 1) * 2);
        const unsigned addr = base + store_detail::swizzled_chunk<SwizzleBytes>(row, 2 * j + matrix / 2) * 16;
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
                     "r"(r2), "r"(r3)
                     : "memory");
    }
#else
    (void)piece;
    (void)acc;
#endif
}

/// stmatrix of the warp, the reverse of ldmatrix (mma.cuh): Count (1, 2 or 4) 8x8 matrices of 16-bit elements from
/// the thread's registers into shared memory. The thread's register r is the elements src[2 r] (low half) and
/// src[2 r + 1] (src 4-byte aligned: generated code's alignas(16) register arrays): elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of matrix r (lane l = threadIdx.x % 32), a
/// tensor-core accumulator's order. Lane l gives the address of row l % 8 of matrix l / 8 in memory (a 16-byte
/// aligned chunk; the addresses of lanes from 8 Count on are not used): element (a, b) of the matrix is element b
/// of memory row a, or with Trans element a of memory row b. Every lane of the warp calls it together (lowered by
/// src/lower/StoreMatrices.cpp).
template <int Count, bool Trans, class T> __device__ __forceinline__ void stmatrix(T *dst, const T *src) {
    static_assert(sizeof(T) == 2, "stmatrix stores 16-bit elements");
    static_assert(Count == 1 || Count == 2 || Count == 4, "stmatrix of 1, 2 or 4 matrices");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t r[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < Count; ++i) r[i] = *reinterpret_cast<const uint32_t *>(src + 2 * i); // (NVRTC: no memcpy)
    const unsigned addr = (unsigned)__cvta_generic_to_shared(dst);
#define TILEC_STMATRIX(SHAPE, REGS, ...)                                                                       \
    asm volatile("stmatrix.sync.aligned.m8n8." SHAPE ".shared.b16 [%0], {" REGS "};\n" ::"r"(addr), __VA_ARGS__ : "memory")
    if constexpr (Count == 4 && Trans) TILEC_STMATRIX("x4.trans", "%1, %2, %3, %4", "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]));
    else if constexpr (Count == 4) TILEC_STMATRIX("x4", "%1, %2, %3, %4", "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]));
    else if constexpr (Count == 2 && Trans) TILEC_STMATRIX("x2.trans", "%1, %2", "r"(r[0]), "r"(r[1]));
    else if constexpr (Count == 2) TILEC_STMATRIX("x2", "%1, %2", "r"(r[0]), "r"(r[1]));
    else if constexpr (Trans) TILEC_STMATRIX("x1.trans", "%1", "r"(r[0]));
    else TILEC_STMATRIX("x1", "%1", "r"(r[0]));
#undef TILEC_STMATRIX
#else
    (void)dst;
    (void)src;
#endif
}

/// Stores the Rows x Cols piece at `piece` (one panel, as above) to the box of `map` whose first element has
/// coordinates `coords` (innermost first, one per dimension of the map: 1 to 5), clipped to the tensor, and
/// commits it as one bulk async-group of the calling thread. The map's box is {Cols, 1.., Rows, 1..}: Cols in
/// dim 0, Rows in one other dimension (the rows'), 1 in every other, so the box's elements in order are the
/// piece's rows. Issued by ONE thread, after the writers' fence_proxy_async_shared and a barrier.
template <int Rows, int Cols, int ElemBytes, int SwizzleBytes, class... Coords>
__device__ __forceinline__ void tma_store_tile(const void *piece, const tensor_map *map, Coords... coords) {
    static_assert(Cols * ElemBytes == SwizzleBytes, "a piece is one panel (the map's box is {Cols, .., Rows, ..})");
    static_assert(Rows >= 8 && Rows <= 256 && Rows % 8 == 0, "a box of 8..256 rows");
    constexpr int Rank = (int)sizeof...(Coords);
    static_assert(Rank >= 2 && Rank <= 5, "a TMA store's tensor has 2 to 5 dimensions");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const unsigned src = (unsigned)__cvta_generic_to_shared(piece);
    const int c[5] = {(int)coords...};
#define TILEC_TMA_STORE(DIMS, COORDS, ...)                                                                     \
    asm volatile("cp.async.bulk.tensor." DIMS ".global.shared::cta.bulk_group [%0, {" COORDS "}], [%1];\n" ::"l"(map), \
                 "r"(src), __VA_ARGS__                                                                         \
                 : "memory")
    if constexpr (Rank == 2) TILEC_TMA_STORE("2d", "%2, %3", "r"(c[0]), "r"(c[1]));
    else if constexpr (Rank == 3) TILEC_TMA_STORE("3d", "%2, %3, %4", "r"(c[0]), "r"(c[1]), "r"(c[2]));
    else if constexpr (Rank == 4) TILEC_TMA_STORE("4d", "%2, %3, %4, %5", "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    else TILEC_TMA_STORE("5d", "%2, %3, %4, %5, %6", "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]));
#undef TILEC_TMA_STORE
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#else
    (void)piece;
    (void)map;
    ((void)coords, ...);
#endif
}

/// Copies Bytes contiguous bytes of shared memory at `src` to global memory at `dst` (both 16-byte aligned, Bytes a
/// multiple of 16) with the TMA unit (cp.async.bulk.global.shared::cta) and commits it as one bulk async-group of
/// the calling thread, as TileLang's tl::tma_store of a contiguous tile. Issued by one thread, after the writers'
/// fence_proxy_async_shared and a barrier; tma_store_wait(0) before the block exits (the copy reads `src` until
/// then).
template <int Bytes> __device__ __forceinline__ void bulk_store(void *dst, const void *src) {
    static_assert(Bytes > 0 && Bytes % 16 == 0, "a bulk copy moves a positive multiple of 16 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst),
                 "r"((unsigned)__cvta_generic_to_shared(src)), "r"((unsigned)Bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#else
    (void)dst;
    (void)src;
#endif
}

/// Waits until at most `pending` (0..7) of the calling thread's bulk async-groups still read shared memory
/// (cp.async.bulk.wait_group.read): their buffers may be written again.
__device__ __forceinline__ void tma_store_wait(int pending) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TILEC_BULK_WAIT(N)                                                                                    \
    case N: asm volatile("cp.async.bulk.wait_group.read " #N ";\n" ::: "memory"); break;
    switch (pending) {
        TILEC_BULK_WAIT(1)
        TILEC_BULK_WAIT(2)
        TILEC_BULK_WAIT(3)
        TILEC_BULK_WAIT(4)
        TILEC_BULK_WAIT(5)
        TILEC_BULK_WAIT(6)
        TILEC_BULK_WAIT(7)
    default: asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); break;
    }
#undef TILEC_BULK_WAIT
#else
    (void)pending;
#endif
}

} // namespace tilec

#endif // TILEC_STDLIB_SM90_STORE_CUH
