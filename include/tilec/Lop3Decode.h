/// \file
/// BitBLAS's decoders of 4-bit integers to float16 (bitblas.gpu.intrin.lop3's `decode_i4_to_f16`, the C++ source a
/// kernel takes as its prelude and calls by T.call_extern), as tilec provides them: its own device source of the
/// functions BitBLAS's defines (the value of that name in tilec's model of the module, src/eval/TileLangMmaModules.cpp)
/// and what they compute, for the CPU simulator (src/sim), which runs the calls of a kernel whose sources hold this
/// text.
///
/// decode_i4{u,s,b}_to_f16(src, dst, n = 8): the 32-bit word w of src's first four bytes (little-endian) becomes n
/// float16s, pair i (i < n / 2) from w >> 4 i: dst[2 i] its bits 0-3, dst[2 i + 1] its bits 16-19 (BitBLAS's lop3
/// layout: nibble i and nibble i + 4 of the word side by side), each minus 8 for the signed decoder (i4s) and as they
/// are for the unsigned one (i4u). Bits shifted past the word are 0.
#pragma once

#include <cstdint>

namespace tilec {

inline const char *lop3DecodeI4ToF16Source() {
    return R"(// BitBLAS's decode_i4_to_f16 decoders (bitblas.gpu.intrin.lop3), as tilec provides them: the 32-bit word of
// src's first 4 bytes becomes n float16s, pair i from word >> 4 i (bits 0-3 and 16-19), minus 8 where signed.
template <typename T1, typename T2, bool isSigned = false>
__device__ __forceinline__ void decode_i4b_to_f16(T1 *src, T2 *dst, const int n = 8) {
    const unsigned char *bytes = reinterpret_cast<const unsigned char *>(src);
    const unsigned word = (unsigned)bytes[0] | (unsigned)bytes[1] << 8 | (unsigned)bytes[2] << 16 | (unsigned)bytes[3] << 24;
    // float16 1024 + v is 0x6400 | v: two nibbles or'ed into 0x64006400 are 1024 + each, less 1024 (1032 signed)
    const __half2 bias = __half2half2(__ushort_as_half(isSigned ? 0x6408 : 0x6400));
#pragma unroll
    for (int i = 0; i < n / 2; ++i) {
        const unsigned pair = ((i < 8 ? word >> (4 * i) : 0u) & 0x000f000fu) | 0x64006400u;
        const __half2 v = __hsub2(__halves2half2(__ushort_as_half((unsigned short)(pair & 0xffffu)),
                                                 __ushort_as_half((unsigned short)(pair >> 16))), bias);
        dst[2 * i] = __low2half(v);
        dst[2 * i + 1] = __high2half(v);
    }
}
template <typename T1, typename T2> __device__ __forceinline__ void decode_i4s_to_f16(T1 *src, T2 *dst, const int n = 8) {
    decode_i4b_to_f16<T1, T2, true>(src, dst, n);
}
template <typename T1, typename T2> __device__ __forceinline__ void decode_i4u_to_f16(T1 *src, T2 *dst, const int n = 8) {
    decode_i4b_to_f16<T1, T2, false>(src, dst, n);
}
)";
}

/// Element e of what decode_i4{u,s}_to_f16 makes of the word w.
inline double lop3DecodeI4ToF16(uint32_t w, int e, bool isSigned) {
    const int i = e / 2;
    const uint32_t shifted = i < 8 ? w >> (4 * i) : 0;
    const uint32_t nibble = (e % 2 ? shifted >> 16 : shifted) & 15u;
    return (double)nibble - (isSigned ? 8 : 0);
}

} // namespace tilec
