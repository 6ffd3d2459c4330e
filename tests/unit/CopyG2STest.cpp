/// \file
/// The device library's tile copy (tilec::copy_g2s, stdlib/tilec/cp_async.cuh), compiled here as host C++ with
/// cp.async modelled (TILEC_HOST_CP_ASYNC: copy the source bytes, zero the rest), run for every thread of the
/// block: every element of the tile lands where its layout puts it (row-major, swz<Cols, sizeof(T)>, the panel
/// layout), exactly once, zero outside the valid rows and columns, and no copy reads outside them. The column walk
/// (threads a whole number of rows wide) forms one shared address per phase of the row XOR and reaches the other
/// rows by the instruction's immediate offset: row steps of 1 to 16 and 3 (phases 8, 4, 2, 1 and 8 again), tiles
/// whose rows the step does not divide, 16-, 8- and 4-byte chunks, and a consumer group's threads (First).
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {
struct HostDim3 {
    unsigned x = 0, y = 0, z = 0;
};
HostDim3 threadIdx;                 // the thread running copy_g2s
std::vector<unsigned char> gShared; // the block's shared memory
struct Read {
    const unsigned char *at;
    int bytes;
};
std::vector<Read> gReads;              // the global bytes each copy read
std::vector<int> gWrites;              // how many copies wrote each shared byte
size_t hostCvta(const void *p) { return (size_t)((const unsigned char *)p - gShared.data()); }
int gOutside = 0;                      // copies that would have written past the block's shared memory
void hostCpAsync(unsigned dst, const void *gmem, int bytes, int srcBytes) {
    if ((size_t)dst + (size_t)bytes > gShared.size()) {
        ++gOutside;
        return;
    }
    for (int b = 0; b < bytes; ++b) {
        gShared[dst + (unsigned)b] = b < srcBytes ? ((const unsigned char *)gmem)[b] : 0;
        ++gWrites[dst + (unsigned)b];
    }
    if (srcBytes) gReads.push_back({(const unsigned char *)gmem, srcBytes});
}
} // namespace

#define __host__
#define __device__
#define __forceinline__ inline
#define __cvta_generic_to_shared(p) hostCvta(p)
#define TILEC_HOST_CP_ASYNC(dst, gmem, bytes, srcBytes) hostCpAsync(dst, gmem, bytes, srcBytes)
#include "tilec/cp_async.cuh"
#undef __host__
#undef __device__
#undef __forceinline__
#undef __cvta_generic_to_shared
#undef TILEC_HOST_CP_ASYNC

#include <gtest/gtest.h>

namespace {

/// The copy of a Rows x Cols tile of T from a (validRows + 3) x ldg tensor (distinct values) by Threads threads
/// starting at First, checked element by element against the layout's map.
/// The byte offset of element (r, c) of a Rows-row tile in panels of Span bytes as TMA's and wgmma's swizzle mode
/// of that span stores them (PTX: address bits 4.. XOR bits 7.., 3, 2 or 1 of them, on a base aligned to the
/// pattern; panels of Rows rows one after another): the reference the library's panel layout must equal, written
/// without it.
template <int Rows, int Span, int EB> int hardwarePanelByte(int r, int c) {
    const int W = Span / EB, a = (c / W) * Rows * Span + r * Span + (c % W) * EB;
    return a ^ (((a >> 7) & (Span / 16 - 1)) << 4);
}

template <int Rows, int Cols, int Vec, int Threads, int Layout, int First, typename T>
void expectTileCopied(int validRows, int validCols, long long ldg) {
    SCOPED_TRACE(std::to_string(Rows) + "x" + std::to_string(Cols) + " of " + std::to_string(sizeof(T)) + "-byte, Vec " +
                 std::to_string(Vec) + ", " + std::to_string(Threads) + " threads from " + std::to_string(First) +
                 ", layout " + std::to_string(Layout) + ", valid " + std::to_string(validRows) + "x" + std::to_string(validCols));
    std::vector<T> g((size_t)((validRows + 3) * ldg));
    for (size_t i = 0; i < g.size(); ++i) g[i] = (T)(i * 7 + 1);
    gShared.assign((size_t)Rows * Cols * sizeof(T) + 64, 0xcd);
    gWrites.assign(gShared.size(), 0);
    gReads.clear();
    gOutside = 0;
    T *smem = reinterpret_cast<T *>(gShared.data());
    for (int t = 0; t < First + Threads + 32; ++t) {
        threadIdx.x = (unsigned)t;
        tilec::copy_g2s<Rows, Cols, Vec, Threads, Layout, First>(smem, g.data(), ldg, validRows, validCols);
    }
    ASSERT_EQ(gOutside, 0) << "copies past the tile's shared memory";
    std::set<int> seen;
    for (int r = 0; r < Rows; ++r)
        for (int c = 0; c < Cols; ++c) {
            int at = r * Cols + c;
            if constexpr (Layout == tilec::g2s_swizzled) at = tilec::swz<Cols, (int)sizeof(T)>(at);
            constexpr int Span = tilec::g2s_panel_span<Layout, Cols * (int)sizeof(T)>();
            if constexpr (Span > 0) at = hardwarePanelByte<Rows, Span, (int)sizeof(T)>(r, c) / (int)sizeof(T);
            ASSERT_TRUE(seen.insert(at).second) << "the layout maps two elements to " << at;
            const T want = r < validRows && c < validCols ? g[(size_t)(r * ldg + c)] : (T)0;
            T got;
            std::memcpy(&got, gShared.data() + (size_t)at * sizeof(T), sizeof(T));
            ASSERT_EQ(got, want) << "element (" << r << ", " << c << ")";
            for (size_t b = 0; Vec * sizeof(T) >= 4 && b < sizeof(T); ++b) // (narrower copies are plain stores)
                ASSERT_EQ(gWrites[(size_t)at * sizeof(T) + b], 1) << "element (" << r << ", " << c << ") written "
                                                                  << gWrites[(size_t)at * sizeof(T) + b] << " times";
        }
    for (size_t b = (size_t)Rows * Cols * sizeof(T); b < gShared.size(); ++b)
        ASSERT_EQ(gWrites[b], 0) << "a byte past the tile written";
    for (const Read &rd : gReads) {
        const long long first = (long long)(rd.at - (const unsigned char *)g.data()) / (long long)sizeof(T);
        const long long last = first + rd.bytes / (long long)sizeof(T) - 1;
        ASSERT_TRUE(first / ldg < validRows && first % ldg < validCols && last / ldg == first / ldg && last % ldg < validCols)
            << "a copy read elements " << first << " to " << last << " outside the valid region";
    }
}

TEST(CopyG2S, ColumnWalkLandsEveryElementOnceInEveryLayout) {
    using bf16 = uint16_t;
    // pre_norm_fn_fwd_mul's two tiles: 32 x 256 bfloat16 (row step 4, two phases), 32 x 256 float with 24 valid
    // rows (row step 2, four phases), both swizzled, 128 threads.
    expectTileCopied<32, 256, 8, 128, tilec::g2s_swizzled, 0, bf16>(32, 256, 28672);
    expectTileCopied<32, 256, 8, 128, tilec::g2s_swizzled, 0, bf16>(5, 256, 304);
    expectTileCopied<32, 256, 4, 128, tilec::g2s_swizzled, 0, float>(24, 256, 28672);
    // Row steps 1 (8 phases), 8 and 16 (one), 3 (eight, not a power of two), a step that does not divide the rows.
    expectTileCopied<16, 64, 8, 8, tilec::g2s_swizzled, 0, bf16>(16, 64, 64);
    expectTileCopied<64, 64, 8, 64, tilec::g2s_swizzled, 0, bf16>(61, 64, 72);
    expectTileCopied<64, 32, 4, 128, tilec::g2s_swizzled, 0, float>(64, 32, 40);
    expectTileCopied<20, 64, 8, 24, tilec::g2s_swizzled, 0, bf16>(19, 64, 64);
    expectTileCopied<10, 64, 8, 32, tilec::g2s_swizzled, 0, bf16>(10, 64, 64);
    // Rows of 64 and 32 bytes (the XOR of (r / 2) % 4 and (r / 4) % 2), valid columns cut by whole chunks.
    expectTileCopied<32, 32, 8, 16, tilec::g2s_swizzled, 0, bf16>(32, 24, 32);
    expectTileCopied<32, 16, 8, 32, tilec::g2s_swizzled, 0, bf16>(30, 16, 16);
    // Plain rows, 8- and 4-byte chunks, and a consumer group's threads (First).
    expectTileCopied<16, 48, 4, 48, tilec::g2s_plain, 0, bf16>(13, 48, 52);
    expectTileCopied<16, 64, 2, 64, tilec::g2s_swizzled, 0, float>(16, 64, 64);
    expectTileCopied<16, 64, 1, 128, tilec::g2s_plain, 0, float>(9, 61, 64);
    expectTileCopied<64, 64, 8, 128, tilec::g2s_swizzled, 128, bf16>(64, 64, 64);
    // The panel layout: rows of two 128-byte panels (wgmma's operand when the rows are wider than one span).
    expectTileCopied<64, 128, 8, 128, tilec::g2s_panels, 0, bf16>(64, 128, 128);
    expectTileCopied<16, 64, 4, 64, tilec::g2s_panels, 0, float>(11, 64, 64);
    // Panels narrower than the rows' widest (the layout is the span): a B whose warpgroups split it at 32 columns
    // (kda chunk_o's 64 x 64 bfloat16, 64-byte panels), at 16 (32-byte panels), and 256-byte rows in four.
    expectTileCopied<64, 64, 8, 256, 64, 0, bf16>(64, 64, 128);
    expectTileCopied<32, 32, 8, 256, 32, 0, bf16>(32, 32, 32);
    expectTileCopied<64, 128, 8, 128, 64, 0, bf16>(50, 128, 128);
    expectTileCopied<16, 64, 4, 64, 32, 0, float>(11, 64, 64);
}

TEST(CopyG2S, OtherWalksLandEveryElementOnce) {
    using bf16 = uint16_t;
    // Several iterations per row, the general walk, more than 32 iterations, and 2-byte synchronous copies.
    expectTileCopied<4, 512, 8, 32, tilec::g2s_swizzled, 0, bf16>(4, 512, 512);
    expectTileCopied<24, 40, 8, 128, tilec::g2s_plain, 0, bf16>(23, 40, 40);
    expectTileCopied<256, 64, 8, 8, tilec::g2s_swizzled, 0, bf16>(250, 64, 64);
    expectTileCopied<8, 30, 1, 32, tilec::g2s_plain, 0, bf16>(8, 29, 30);
}

} // namespace
