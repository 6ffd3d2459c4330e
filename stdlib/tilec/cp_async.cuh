// tilec device runtime: asynchronous global-to-shared copies (cp.async, sm_80+) and the tile copy built
// on them. Part of tilec; embedded into generated code, which must compile on its own (nvcc or NVRTC).
#ifndef TILEC_STDLIB_CP_ASYNC_CUH
#define TILEC_STDLIB_CP_ASYNC_CUH

#include <stdint.h>
#include <type_traits>

#include "swizzle.cuh"

namespace tilec {

/// Starts copying Bytes (4, 8 or 16) from global `gmem` to shared `smem`, both aligned to Bytes. When
/// `valid` is false nothing is read (the source size is 0) and the destination is zero-filled; `gmem` is then
/// never dereferenced (it may point past the tensor). 16-byte copies bypass L1 (.cg): tiles are read once per block.
template <int Bytes> __device__ __forceinline__ void cp_async(void *smem, const void *gmem, bool valid) {
    static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    const int srcBytes = valid ? Bytes : 0;
#ifdef TILEC_HOST_CP_ASYNC
    TILEC_HOST_CP_ASYNC(dst, gmem, Bytes, srcBytes);
#else
    if constexpr (Bytes == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(srcBytes)
                     : "memory");
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(Bytes),
                     "r"(srcBytes)
                     : "memory");
    }
#endif
}

/// Closes the group of the cp.async copies this thread issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Waits until at most N of this thread's committed groups are still in flight. Other threads' copies
/// become visible only after a barrier (__syncthreads) that follows the wait in every thread.
template <int N> __device__ __forceinline__ void cp_async_wait() {
    static_assert(N >= 0, "cp.async.wait_group takes a non-negative count");
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/// cp.async.mbarrier.arrive (sm_80): the mbarrier at `bar` (shared memory) counts one more pending arrival now,
/// which the hardware makes once every cp.async this thread issued before it has landed. The phase thus cannot
/// complete before those copies are visible to whoever waits on it; the thread's own arrival (mbarrier_arrive,
/// a release of its other writes) follows it, so the barrier's expected count is unchanged. (The .noinc form,
/// which would count the hardware's arrival as the thread's, is not documented to release the thread's own
/// stores.)
__device__ __forceinline__ void cp_async_mbarrier_arrive(uint64_t *bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.mbarrier.arrive.shared.b64 [%0];\n" ::"r"((unsigned)__cvta_generic_to_shared(bar)) : "memory");
#else
    (void)bar;
#endif
}

/// How copy_g2s stores a tile: row-major; row-major with swz<Cols, sizeof(T)>; the panel layout of
/// swz_panels<Cols, sizeof(T), Rows * Cols> (what wgmma reads when the rows are wider than one swizzle span), in
/// panels of the row's widest span (g2s_panels) or of 32, 64 or 128 bytes (the layout's value is the span: the
/// compiler's narrower choice for a tile whose warpgroups split it at narrower columns).
enum : int { g2s_plain = 0, g2s_swizzled = 1, g2s_panels = 2 };

/// The panel span of copy_g2s's Layout for rows of RowBytes bytes, 0 where Layout is not a panel layout.
template <int Layout, int RowBytes> __host__ __device__ constexpr int g2s_panel_span() {
    return Layout == g2s_panels ? panel_span<RowBytes>() : Layout == 32 || Layout == 64 || Layout == 128 ? Layout : 0;
}

namespace g2s_detail {

// One Vec-element chunk: tile element (r, c) to shared memory, or zeros when (r, c) is outside the valid
// region (cp.async then reads nothing; the synchronous path does not load). Layout as copy_g2s's.
template <int Rows, int Cols, int Vec, int Layout, typename T>
__device__ __forceinline__ void copy_chunk(T *smem, const T *gmem, long long ldg, int r, int c, bool valid) {
    constexpr int Bytes = Vec * (int)sizeof(T);
    int dst = r * Cols + c;
    if constexpr (Layout == g2s_swizzled)
        dst = r * Cols + (c ^ swz_row_xor<Cols, (int)sizeof(T)>(r));
    else if constexpr (g2s_panel_span<Layout, Cols * (int)sizeof(T)>() > 0)
        dst = panel_offset<Rows, Cols, (int)sizeof(T), g2s_panel_span<Layout, Cols * (int)sizeof(T)>()>(r, c);
    if constexpr (Bytes >= 4) {
        // The address is formed even for an invalid chunk: cp.async with a source size of 0 reads nothing,
        // and selecting a 64-bit fallback per chunk doubled the instructions of a tile transfer.
        cp_async<Bytes>(smem + dst, gmem + (long long)r * ldg + c, valid);
    } else {
        // Narrower than cp.async: an ordinary load and store of 1 or 2 bytes.
        using V = typename std::conditional<Bytes == 1, unsigned char, unsigned short>::type;
        V v = 0;
        if (valid)
            v = *reinterpret_cast<const V *>(gmem + (long long)r * ldg + c);
        *reinterpret_cast<V *>(smem + dst) = v;
    }
}

// cp.async of Bytes (4 to 16) to shared address `dst` + Off: the offset is the instruction's own immediate, so
// the rows of a column walk share one address register per swizzle phase (copy_rows).
template <int Bytes, int Off>
__device__ __forceinline__ void cp_async_at(unsigned dst, const void *gmem, bool valid) {
    const int srcBytes = valid ? Bytes : 0;
#ifdef TILEC_HOST_CP_ASYNC // a host build of this file (tests/unit/CopyG2STest.cpp) models the instruction
    TILEC_HOST_CP_ASYNC(dst + (unsigned)Off, gmem, Bytes, srcBytes);
#else
    if constexpr (Bytes == 16) {
        asm volatile("cp.async.cg.shared.global [%0+%3], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(srcBytes), "n"(Off)
                     : "memory");
    } else {
        asm volatile("cp.async.ca.shared.global [%0+%4], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(Bytes),
                     "r"(srcBytes), "n"(Off)
                     : "memory");
    }
#endif
}

// Iterations It .. Iters - 1 of copy_g2s's column walk by cp.async: row r0 + It * RowStep of the thread's column.
// The layout's row XOR repeats every 8 rows, so every P-th iteration (P = 8 / gcd(RowStep, 8), or fewer when the
// walk is shorter) lands at the same column: `at[It % P]` is that phase's shared address of row r0 + (It % P) *
// RowStep, and the rows further on are a constant number of bytes away (RowBytes: the layout's row stride). The
// global address is the column's start `g` plus whole rows. Before, each chunk formed both addresses from its row
// (a 64-bit multiply-add, the swizzle XOR, a generic-to-shared conversion: about 7 instructions per 16-byte copy;
// TileKernels' pre_norm_fn_fwd_mul had 1035 a stage where now 951, and a register for every row held across the
// pipeline, 252 where now 225).
template <int Rows, int RowStep, int Iters, int P, int RowBytes, int Bytes, int It = 0, typename T>
__device__ __forceinline__ void copy_rows(const unsigned (&at)[P], const T *g, long long ldg, int r0, bool colValid,
                                          int validRows) {
    const int r = r0 + It * RowStep;
    if (Rows % RowStep == 0 || r < Rows)
        cp_async_at<Bytes, (It - It % P) * RowStep * RowBytes>(at[It % P], g + (long long)(It * RowStep) * ldg,
                                                               colValid && r < validRows);
    if constexpr (It + 1 < Iters)
        copy_rows<Rows, RowStep, Iters, P, RowBytes, Bytes, It + 1>(at, g, ldg, r0, colValid, validRows);
}

} // namespace g2s_detail

/// Threads First .. First + Threads - 1 of the block (the first Threads; a consumer warp group's of explicit
/// warp roles, whose code is laid out over its own threads) copy the Rows x Cols tile whose element (r, c) is gmem[r * ldg + c]
/// into `smem` at logical offset r * Cols + c, stored as Layout says (g2s_plain, g2s_swizzled: swizzled by
/// swz<Cols, sizeof(T)>, g2s_panels or a span of 32, 64 or 128: the panel layout; a bool converts to the first two); elements
/// with r >= validRows or c >= validCols become zero. Vec elements move per access, consecutive threads
/// taking consecutive chunks of a row. Accesses of 4 to 16 bytes are cp.async (issued, not committed);
/// narrower ones are synchronous. The caller guarantees Cols % Vec == 0, that validCols % Vec == 0 or
/// validCols >= Cols, and that gmem and ldg are aligned for Vec elements.
template <int Rows, int Cols, int Vec, int Threads, int Layout, int First = 0, typename T>
__device__ __forceinline__ void copy_g2s(T *smem, const T *gmem, long long ldg, int validRows,
                                         int validCols) {
    constexpr int Bytes = Vec * (int)sizeof(T);
    static_assert(Bytes == 1 || Bytes == 2 || Bytes == 4 || Bytes == 8 || Bytes == 16,
                  "a tile copy moves 1, 2, 4, 8 or 16 bytes per access");
    static_assert(Rows > 0 && Cols > 0 && Threads > 0 && Cols % Vec == 0, "bad tile copy shape");
    static_assert(Layout == g2s_plain || Layout == g2s_swizzled || g2s_panel_span<Layout, Cols * (int)sizeof(T)>() > 0,
                  "an unknown tile layout");
    constexpr int Lay = Layout == g2s_swizzled && !swz_active<Cols, (int)sizeof(T)>() ? g2s_plain : Layout;
    constexpr int ChunksPerRow = Cols / Vec;
    constexpr int Chunks = Rows * ChunksPerRow;
    // Loops of at most this many iterations are unrolled completely; longer ones by a few.
    constexpr int FullUnroll = 32;

    const int tid = (int)threadIdx.x - First;
    if constexpr (First != 0) { // (a test of First == 0 changes ptxas' schedule of the whole copy)
        if (tid < 0)
            return;
    }
    if (tid >= Threads)
        return;

    if constexpr (Threads % ChunksPerRow == 0) {
        // Each thread keeps one column and walks down the rows: the column test and the swizzle's row
        // phase (when the row step is a multiple of 8) are the same in every iteration.
        constexpr int RowStep = Threads / ChunksPerRow;
        constexpr int Iters = (Rows + RowStep - 1) / RowStep;
        const int r0 = tid / ChunksPerRow;
        const int c = (tid % ChunksPerRow) * Vec;
        const bool colValid = c < validCols;
        if constexpr (Iters <= FullUnroll && Bytes >= 4) {
            // One shared address per phase of the row XOR, the rows of a phase at immediate offsets from it.
            constexpr int Low = RowStep & -RowStep;
            constexpr int Period = Low >= 8 ? 1 : 8 / Low;
            constexpr int P = Period < Iters ? Period : Iters;
            constexpr int Span = g2s_panel_span<Lay, Cols * (int)sizeof(T)>();
            constexpr int RowElems = Span ? Span / (int)sizeof(T) : Cols;
            const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
            unsigned at[P];
#pragma unroll
            for (int p = 0; p < P; ++p) {
                const int r = r0 + p * RowStep;
                int dst = r * Cols + c;
                if constexpr (Lay == g2s_swizzled)
                    dst = r * Cols + (c ^ swz_row_xor<Cols, (int)sizeof(T)>(r));
                else if constexpr (Span > 0)
                    dst = panel_offset<Rows, Cols, (int)sizeof(T), Span>(r, c);
                at[p] = base + (unsigned)dst * (unsigned)sizeof(T);
            }
            g2s_detail::copy_rows<Rows, RowStep, Iters, P, RowElems * (int)sizeof(T), Bytes>(
                at, gmem + (long long)r0 * ldg + c, ldg, r0, colValid, validRows);
        } else if constexpr (Iters <= FullUnroll) {
#pragma unroll
            for (int it = 0; it < Iters; ++it) {
                const int r = r0 + it * RowStep;
                if (Rows % RowStep == 0 || r < Rows)
                    g2s_detail::copy_chunk<Rows, Cols, Vec, Lay>(smem, gmem, ldg, r, c, colValid && r < validRows);
            }
        } else {
#pragma unroll 4
            for (int r = r0; r < Rows; r += RowStep)
                g2s_detail::copy_chunk<Rows, Cols, Vec, Lay>(smem, gmem, ldg, r, c, colValid && r < validRows);
        }
    } else if constexpr (ChunksPerRow % Threads == 0) {
        // Several iterations per row: the row of every iteration is a compile-time constant.
        constexpr int PerRow = ChunksPerRow / Threads;
        constexpr int Iters = Rows * PerRow;
        if constexpr (Iters <= FullUnroll) {
#pragma unroll
            for (int it = 0; it < Iters; ++it) {
                const int r = it / PerRow;
                const int c = ((it % PerRow) * Threads + tid) * Vec;
                g2s_detail::copy_chunk<Rows, Cols, Vec, Lay>(smem, gmem, ldg, r, c, r < validRows && c < validCols);
            }
        } else {
#pragma unroll 4
            for (int it = 0; it < Iters; ++it) {
                const int r = it / PerRow;
                const int c = ((it % PerRow) * Threads + tid) * Vec;
                g2s_detail::copy_chunk<Rows, Cols, Vec, Lay>(smem, gmem, ldg, r, c, r < validRows && c < validCols);
            }
        }
    } else {
        constexpr int Iters = (Chunks + Threads - 1) / Threads;
        if constexpr (Iters <= FullUnroll) {
#pragma unroll
            for (int it = 0; it < Iters; ++it) {
                const int i = it * Threads + tid;
                const int r = i / ChunksPerRow;
                const int c = (i % ChunksPerRow) * Vec;
                if (Chunks % Threads == 0 || i < Chunks)
                    g2s_detail::copy_chunk<Rows, Cols, Vec, Lay>(smem, gmem, ldg, r, c,
                                                           r < validRows && c < validCols);
            }
        } else {
#pragma unroll 4
            for (int i = tid; i < Chunks; i += Threads) {
                const int r = i / ChunksPerRow;
                const int c = (i % ChunksPerRow) * Vec;
                g2s_detail::copy_chunk<Rows, Cols, Vec, Lay>(smem, gmem, ldg, r, c, r < validRows && c < validCols);
            }
        }
    }
}

} // namespace tilec

#endif // TILEC_STDLIB_CP_ASYNC_CUH
