// tilec device runtime: vector loads and stores of 1 to 16 bytes. The compiler only emits them for
// addresses it has proven aligned to their size (the launcher checks tensor base pointers).
#ifndef TILEC_STDLIB_MEMORY_CUH
#define TILEC_STDLIB_MEMORY_CUH

namespace tilec {

template <int Bytes> struct vector_of;
template <> struct vector_of<1> { using type = unsigned char; };
template <> struct vector_of<2> { using type = unsigned short; };
template <> struct vector_of<4> { using type = unsigned int; };
template <> struct vector_of<8> { using type = uint2; };
template <> struct vector_of<16> { using type = uint4; };

template <int Bytes, class T> __device__ __forceinline__ void copy_vector(T *dst, const T *src) {
    using V = typename vector_of<Bytes>::type;
    *reinterpret_cast<V *>(dst) = *reinterpret_cast<const V *>(src);
}

// A store of 8 or 16 bytes of registers as one PTX st.v2.b32 / st.v4.b32, default cache policy (.wb): through
// a generic address (a pointer table's tensor), or with Global through a tensor parameter's (st.global, as
// CUDA's __stwb). copy_vector's uint4 copy reaches NVVM as four 4-byte stores that its load/store vectorizer must
// join again, and under some index forms it does not (session 38: multilayer_recompute's 10 ST.E.128 became
// 40 ST.E once the block width was assumed); an asm statement is never taken apart. "memory": NVVM orders it
// like any store of unknown address. Its cost: the address is one register, so nvcc folds no unrolled offset
// into it (session 39).
template <int Bytes, bool Global = false, class T> __device__ __forceinline__ void store_vector(T *dst, const T *src) {
    static_assert(Bytes == 8 || Bytes == 16, "store_vector stores 8 or 16 bytes");
    if constexpr (Bytes == 16) {
        const uint4 v = *reinterpret_cast<const uint4 *>(src);
        if constexpr (Global)
            asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
        else
            asm volatile("st.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    } else {
        const uint2 v = *reinterpret_cast<const uint2 *>(src);
        if constexpr (Global)
            asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(dst), "r"(v.x), "r"(v.y) : "memory");
        else
            asm volatile("st.v2.b32 [%0], {%1, %2};" ::"l"(dst), "r"(v.x), "r"(v.y) : "memory");
    }
}

// A load that reads nothing when `inside` is false and then yields zeros (tiles past a tensor's edge).
template <int Bytes, class T> __device__ __forceinline__ void copy_vector_or_zero(T *dst, const T *src, bool inside) {
    using V = typename vector_of<Bytes>::type;
    V v{};
    if (inside) v = *reinterpret_cast<const V *>(src);
    *reinterpret_cast<V *>(dst) = v;
}

// Adds N consecutive floats of global memory atomically: one vector atomic on sm_90 and later (the address
// aligned to its size), N scalar ones before. (The scalar loop is the last branch, not code after a return:
// nvcc warns of an unreachable loop there, #128-D.)
template <int N> __device__ __forceinline__ void atomic_add_vector(float *dst, const float *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (N == 4) {
        atomicAdd(reinterpret_cast<float4 *>(dst), make_float4(src[0], src[1], src[2], src[3]));
    } else if constexpr (N == 2) {
        atomicAdd(reinterpret_cast<float2 *>(dst), make_float2(src[0], src[1]));
    } else
#endif
    {
        for (int i = 0; i < N; ++i) atomicAdd(dst + i, src[i]);
    }
}

// The same with the N floats in shared memory (aligned to their size), read as one vector first.
template <int N> __device__ __forceinline__ void atomic_add_vector_shared(float *dst, const float *src) {
    alignas(16) float v[N];
    copy_vector<N * 4>(v, src);
    atomic_add_vector<N>(dst, v);
}

} // namespace tilec

#endif // TILEC_STDLIB_MEMORY_CUH
