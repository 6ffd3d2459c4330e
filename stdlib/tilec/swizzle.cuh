// tilec device runtime: the XOR swizzle of 2-D shared-memory tiles.
// Part of tilec; embedded into generated code, which must compile on its own (nvcc or NVRTC).
//
// A tile with Cols elements per row is stored row-major, but the 16-byte chunks of each row are permuted
// by XOR with a few bits of the row index. Eight consecutive rows read at the same logical chunk (what one
// ldmatrix 8x8 matrix reads, and what a warp's cp.async writes of consecutive chunks touch) then land in
// eight different 16-byte bank groups, so neither side has bank conflicts. The XOR only changes chunk bits
// 0..2, so an access of at most 16 bytes aligned to its size stays contiguous.
//
// Rows of 128 bytes or a multiple of it XOR the chunk with row % 8; rows of 64 bytes (two rows per 128-byte
// bank cycle) with (row / 2) % 4; rows of 32 bytes (four per cycle) with (row / 4) % 2. Other row sizes,
// and rows that are not a whole number of chunks, are not swizzled.
#ifndef TILEC_STDLIB_SWIZZLE_CUH
#define TILEC_STDLIB_SWIZZLE_CUH

namespace tilec {

/// Whether swz<Cols, ElemBytes> permutes anything.
template <int Cols, int ElemBytes> __host__ __device__ constexpr bool swz_active() {
    return ElemBytes > 0 && 16 % ElemBytes == 0 && Cols > 0 && Cols % (16 / ElemBytes) == 0 &&
           ((Cols * ElemBytes) % 128 == 0 || Cols * ElemBytes == 64 || Cols * ElemBytes == 32);
}

/// The value (in elements, a multiple of the chunk size) that row `row` XORs its column with. It depends on
/// row % 8 only, and is below the period (8, 4 or 2 chunks) that divides Cols, so the XOR stays in the row.
template <int Cols, int ElemBytes> __host__ __device__ __forceinline__ constexpr int swz_row_xor(int row) {
    if constexpr (!swz_active<Cols, ElemBytes>()) {
        return 0;
    } else {
        constexpr int E = 16 / ElemBytes;
        constexpr int RowBytes = Cols * ElemBytes;
        if constexpr (RowBytes % 128 == 0)
            return (row & 7) * E;
        else if constexpr (RowBytes == 64)
            return ((row >> 1) & 3) * E;
        else
            return ((row >> 2) & 1) * E;
    }
}

/// The physical element offset of logical row-major offset `offset` (non-negative) in a tile of Cols
/// elements per row. Because an active swizzle's period divides Cols and the XOR stays below it, XOR-ing
/// the whole offset equals XOR-ing the column: row * Cols + (col ^ x) == offset ^ x.
template <int Cols, int ElemBytes> __host__ __device__ __forceinline__ constexpr int swz(int offset) {
    if constexpr (!swz_active<Cols, ElemBytes>()) {
        return offset;
    } else {
        // Unsigned, so that the division by a constant is a multiply-high (a shift for powers of two).
        const int row = (int)((unsigned)offset / (unsigned)Cols);
        return offset ^ swz_row_xor<Cols, ElemBytes>(row);
    }
}

/// The chunk bits (in elements) that swz<Cols, ElemBytes>'s row XOR may change: the union of its XOR values.
template <int Cols, int ElemBytes> __host__ __device__ constexpr int swz_chunk_bits() {
    if constexpr (!swz_active<Cols, ElemBytes>()) {
        return 0;
    } else {
        constexpr int RowBytes = Cols * ElemBytes;
        return (RowBytes % 128 == 0 ? 7 : RowBytes == 64 ? 3 : 1) * (16 / ElemBytes);
    }
}

/// swz<Cols, ElemBytes> of consecutive tiles of TileElems elements (pipeline stages): a tile whose rows are not
/// a multiple of 8 starts its swizzle pattern afresh.
template <int Cols, int ElemBytes, int TileElems>
__host__ __device__ __forceinline__ constexpr int swz_in_tiles(int offset) {
    if constexpr ((TileElems / Cols) % 8 == 0) {
        return swz<Cols, ElemBytes>(offset);
    } else {
        const unsigned u = (unsigned)offset, in = u % (unsigned)TileElems;
        return (int)(u - in) + swz<Cols, ElemBytes>((int)in);
    }
}

/// swz_in_tiles<Cols, ElemBytes, TileElems>(a + b) written so that an unrolled loop's accesses cost an addition
/// of constants: `b` is the part of the offset that unrolled loops fix (a constant once unrolled), `a` the rest
/// (the thread's part, computed once). The caller (tilec's splitSwizzles) has proved that a and b are
/// non-negative and share no set bit below the swizzle's period (8 rows; the tile where its rows are fewer or not
/// a multiple of 8), and, where that period is not a power of two, that a + b stays below it. Cols is a power of
/// two, so the map is bitwise: the row bits of a + b are those of a and of b together, its XOR values XOR, and
/// its chunk bits are a's chunk bits XOR b's. Everything but the chunk bits adds, so the element's offset is
/// swz(a) with its chunk bits XORed by those of swz(b) (one of at most 8 values per thread, CSE'd by nvcc),
/// plus the rest of swz(b) (an immediate of the shared-memory access).
template <int Cols, int ElemBytes, int TileElems>
__host__ __device__ __forceinline__ constexpr int swz_split(int a, int b) {
    constexpr int K = swz_chunk_bits<Cols, ElemBytes>();
    const int sb = swz_in_tiles<Cols, ElemBytes, TileElems>(b);
    return (swz_in_tiles<Cols, ElemBytes, TileElems>(a) ^ (sb & K)) + (sb & ~K);
}

/// The default span of the panel layout for rows of RowBytes bytes: the widest of 128, 64 and 32 that divides
/// them (0: none does). A narrower one that divides them is the compiler's choice (swz_panels' Span).
template <int RowBytes> __host__ __device__ constexpr int panel_span() {
    return RowBytes % 128 == 0 ? 128 : RowBytes % 64 == 0 ? 64 : RowBytes % 32 == 0 ? 32 : 0;
}

/// The physical element offset of element (row, col) of a Rows x Cols tile stored in the panel layout that
/// TMA writes and wgmma's descriptors read (sm90_tma.cuh): column panels of Span bytes (128, 64 or 32 dividing a
/// row: the compiler's choice, recorded on its IR; by default panel_span, the widest), panel p holding columns
/// [p * W, (p + 1) * W), W = Span / ElemBytes, as the tile's rows of Span bytes one after another, the 16-byte
/// chunks of row r XORed with swz_row_xor<W, ElemBytes>(r) (TMA's swizzle of that span). With one panel (rows of
/// Span bytes) it is swz<Cols, ElemBytes>. A chunk-aligned access of at most 16 bytes stays contiguous. The panels
/// start at multiples of 8 * Span bytes when the tile's rows are a multiple of 8, so a 1024-byte aligned base
/// gives TMA's and wgmma's absolute-address swizzle.
template <int Rows, int Cols, int ElemBytes, int Span = panel_span<Cols * ElemBytes>()>
__host__ __device__ __forceinline__ constexpr int panel_offset(int row, int col) {
    static_assert((Span == 128 || Span == 64 || Span == 32) && (Cols * ElemBytes) % Span == 0 && 16 % ElemBytes == 0,
                  "the panel layout needs rows of a multiple of its span, 32, 64 or 128 bytes");
    constexpr int W = Span / ElemBytes;
    return (col / W) * (Rows * W) + row * W + ((col % W) ^ swz_row_xor<W, ElemBytes>(row));
}

/// The physical element offset of logical row-major offset `offset` (non-negative) in consecutive tiles of
/// TileElems elements (pipeline stages), each a TileElems / Cols x Cols tile in the panel layout of Span bytes.
template <int Cols, int ElemBytes, int TileElems, int Span = panel_span<Cols * ElemBytes>()>
__host__ __device__ __forceinline__ constexpr int swz_panels(int offset) {
    static_assert(TileElems % Cols == 0, "a tile of whole rows");
    // Unsigned, so that the divisions by constants are multiplies (shifts for powers of two).
    const unsigned u = (unsigned)offset, in = u % (unsigned)TileElems;
    return (int)(u - in) +
           panel_offset<TileElems / Cols, Cols, ElemBytes, Span>((int)(in / (unsigned)Cols), (int)(in % (unsigned)Cols));
}

/// swz_panels<Cols, ElemBytes, TileElems, Span>(a + b) in swz_split's form, on swz_split's conditions: the panel
/// layout moves whole bit fields (column panel, row, in-panel column: Cols and the panel's width are powers of
/// two) and XORs the in-panel chunk bits with the row's, so again only the chunk bits do not add.
template <int Cols, int ElemBytes, int TileElems, int Span = panel_span<Cols * ElemBytes>()>
__host__ __device__ __forceinline__ constexpr int swz_panels_split(int a, int b) {
    constexpr int K = swz_chunk_bits<Span / ElemBytes, ElemBytes>();
    const int sb = swz_panels<Cols, ElemBytes, TileElems, Span>(b);
    return (swz_panels<Cols, ElemBytes, TileElems, Span>(a) ^ (sb & K)) + (sb & ~K);
}

} // namespace tilec

#endif // TILEC_STDLIB_SWIZZLE_CUH
