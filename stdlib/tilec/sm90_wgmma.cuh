// tilec device runtime: Hopper warpgroup matrix multiply (wgmma.mma_async, sm_90a) over shared-memory tiles
// in the panel layout of sm90_tma.cuh. Part of tilec; embedded into generated code, which must compile on
// its own (nvcc or NVRTC) for every target.
//
// Operands. A shared tile is in the panel layout (see sm90_tma.cuh): Rows x Cols elements stored as column
// panels of SwizzleBytes-byte rows, 16-byte chunks XOR-swizzled, base 1024-byte aligned.
//   A is (M, K) when !TransA ("K-major": the panels' columns are K), (K, M) when TransA ("M-major").
//   B is (K, N) when !TransB ("N-major"), (N, K) when TransB ("K-major").
// Types: TA = TB = __half or __nv_bfloat16 into float, __half into __half: both majors. float (as tf32),
// __nv_fp8_e4m3 / __nv_fp8_e5m2 (any pair) into float, int8_t / uint8_t (any pair) into int32_t: K-major only
// (TransA false, TransB true). Every instruction's K is 32 bytes (k16, k8 tf32, k32 8-bit).
//
// Warpgroups. wgmma_gemm_ss is called by every thread of the consumer warpgroups, threads
// [0, 128 * WgM * WgN) of the block. Warpgroup g = threadIdx.x / 128 (wgm = g % WgM, wgn = g / WgM) computes
// rows [wgm * M / WgM, +M / WgM) and columns [wgn * N / WgN, +N / WgN) of C += op(A) op(B) with
// (M / WgM / 64) x (K / kInst) x (instructions per N / WgN) wgmma.mma_async. N / WgN is a multiple of 8 (16 for
// __half accumulators) up to 256, issued as the fewest power-of-two instructions n256, n128, ..., n8 (one for
// the usual 64, 128, 256).
//
// Accumulators. acc holds the thread's (M / WgM / 64) m-tiles of N / WgN / 2 elements each, in wgmma's D
// order; with nT = N / WgN / 8, lane = threadIdx.x % 32, warp = threadIdx.x / 32:
//   acc[((mi * nT + ni) * 2 + h) * 2 + c] is C(wgm * (M / WgM) + mi * 64 + (warp % 4) * 16 + h * 8 + lane / 4,
//                                             wgn * (N / WgN) + ni * 8 + (lane % 4) * 2 + c).
// Index acc only with compile-time constants (unrolled loops) so that it stays in registers; each element is
// its own asm operand (__half accumulators: each pair, element 2j in the low half, is one 32-bit operand;
// declare such an array alignas(4)). Any other instruction that touches the accumulators between a wgmma and
// the wait that retires it makes ptxas wait there (info C7514-C7519): touch them only after wgmma_wait.
//
// Ordering. wgmma_gemm_ss does wgmma.fence, issues every instruction (scale-d 1: it accumulates; clear acc
// with wgmma_clear<Count>(acc) before the first call: see there why a plain loop of zeros is not enough; or
// call wgmma_gemm_ss_init, whose first k-step overwrites acc: scale-d 0),
// then wgmma.commit_group; it does not wait. wgmma_wait<Pending>() waits until at
// most Pending groups of this warpgroup are in flight; wgmma_wait<Pending, Count>(acc) does the same and then
// tells the compiler that acc[0 .. Count) changed there, so that no read of the accumulators is scheduled
// before the wait (use it before the epilogue). Shared memory a group reads may be overwritten (the stage
// released) once a wait has retired that group.
//
// wgmma_gemm_rs is the same with A in registers (the m64k16 fragment, see there; float8: m64k32, tf32: m64k8,
// both with B K-major); wgmma_gemm_rs_fragment takes those registers as the array of a 16-bit or float (tf32)
// fragment, or of a float8 fragment in the accumulator order followed by room for its m64k32 image
// (float8_a_image: two shuffles per 32 columns).
//
// wgmma is inline PTX: <cuda/ptx> does not cover it. On targets other than sm_90a everything here compiles
// to nothing; generated code calls it only on the Hopper path.
#ifndef TILEC_STDLIB_SM90_WGMMA_CUH
#define TILEC_STDLIB_SM90_WGMMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

namespace tilec {

namespace wgmma_detail {

enum class Kind { F16F32, BF16F32, F16F16, TF32, E4E4, E4E5, E5E4, E5E5, S8S8, S8U8, U8S8, U8U8, None };

template <class TA, class TB, class TC> __host__ __device__ constexpr Kind kind() {
    using std::is_same_v;
    if constexpr (is_same_v<TA, __half> && is_same_v<TB, __half> && is_same_v<TC, float>) return Kind::F16F32;
    else if constexpr (is_same_v<TA, __nv_bfloat16> && is_same_v<TB, __nv_bfloat16> && is_same_v<TC, float>)
        return Kind::BF16F32;
    else if constexpr (is_same_v<TA, __half> && is_same_v<TB, __half> && is_same_v<TC, __half>) return Kind::F16F16;
    else if constexpr (is_same_v<TA, float> && is_same_v<TB, float> && is_same_v<TC, float>) return Kind::TF32;
    else if constexpr (is_same_v<TC, float> && is_same_v<TA, __nv_fp8_e4m3>)
        return is_same_v<TB, __nv_fp8_e4m3> ? Kind::E4E4 : is_same_v<TB, __nv_fp8_e5m2> ? Kind::E4E5 : Kind::None;
    else if constexpr (is_same_v<TC, float> && is_same_v<TA, __nv_fp8_e5m2>)
        return is_same_v<TB, __nv_fp8_e4m3> ? Kind::E5E4 : is_same_v<TB, __nv_fp8_e5m2> ? Kind::E5E5 : Kind::None;
    else if constexpr (is_same_v<TC, int32_t> && is_same_v<TA, int8_t>)
        return is_same_v<TB, int8_t> ? Kind::S8S8 : is_same_v<TB, uint8_t> ? Kind::S8U8 : Kind::None;
    else if constexpr (is_same_v<TC, int32_t> && is_same_v<TA, uint8_t>)
        return is_same_v<TB, int8_t> ? Kind::U8S8 : is_same_v<TB, uint8_t> ? Kind::U8U8 : Kind::None;
    else return Kind::None;
}

__host__ __device__ constexpr bool sixteen_bit(Kind k) { return k == Kind::F16F32 || k == Kind::BF16F32 || k == Kind::F16F16; }
__host__ __device__ constexpr bool float8(Kind k) { return k == Kind::E4E4 || k == Kind::E4E5 || k == Kind::E5E4 || k == Kind::E5E5; }

/// A 32-bit value as the code at this point takes it: through an empty asm the compiler cannot see through, so that
/// what is computed from it is computed here. descriptor() takes its operand's shared address so: without that,
/// nvcc hoists every descriptor of a product on a fixed tile (a loop-invariant address) out of the loop and holds
/// it there as a 64-bit value, a pair of registers per wgmma instruction, and a kernel of many such products
/// (FlashMLA's 160 wgmmas over 18 parts of its tiles) spilled them at 255 registers. What stays live is the
/// 32-bit address (the tile's base plus a constant, which ptxas rematerializes); the descriptor costs a few
/// uniform-datapath instructions at each product.
__device__ __forceinline__ unsigned at_use(unsigned v) {
    asm volatile("" : "+r"(v));
    return v;
}

/// The shared-memory matrix descriptor of wgmma: start address >> 4 (bits 0-13), leading-dimension byte
/// offset >> 4 (16-29), stride-dimension byte offset >> 4 (32-45), base offset 0 (tiles are 1024-byte
/// aligned), layout type (62-63: 1 = 128B, 2 = 64B, 3 = 32B swizzle). Offsets inside a tile are added to the
/// start-address field (in 16-byte units) of a descriptor made once.
template <int Swz> __device__ __forceinline__ uint64_t descriptor(const void *smem, unsigned lbo, unsigned sbo) {
    static_assert(Swz == 128 || Swz == 64 || Swz == 32, "wgmma operands swizzle 128, 64 or 32 bytes");
    constexpr uint64_t layout = Swz == 128 ? 1 : Swz == 64 ? 2 : 3;
    const unsigned addr = at_use((unsigned)__cvta_generic_to_shared(smem));
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | (layout << 62);
}

/// A descriptor `units` 16-byte units further into its tile: the sum of the start-address fields, as a 32-bit
/// add of the low word. The field stays below 2^14 (shared addresses are below 2^18), so nothing carries out
/// of it and this equals the 64-bit sum; unlike that sum, ptxas keeps it in uniform registers (one UIADD3
/// per instruction, no R2UR of a vector-register sum), as it does the base.
__device__ __forceinline__ uint64_t descriptor_plus(uint64_t desc, unsigned units) {
    return (desc & 0xFFFFFFFF00000000ull) | (uint32_t)((uint32_t)desc + units);
}

/// This thread's warpgroup among the consumers, threadIdx.x / 128, broadcast from lane 0 so that ptxas knows
/// it is uniform: the descriptors made from it are then computed in uniform registers.
__device__ __forceinline__ unsigned warpgroup_index() { return __shfl_sync(0xffffffffu, threadIdx.x / 128, 0); }

// Placeholder lists "%0, %1, ..." of 2..128 accumulator registers, and the seven operand numbers that follow
// them: SS: descriptor A, descriptor B, scale-d, trans-a, trans-b (two unused); RS: descriptor B, scale-d,
// trans-b, the four A registers.
#define TILEC_WG_L2 "%0, %1"
#define TILEC_WG_L4 TILEC_WG_L2 ", %2, %3"
#define TILEC_WG_L8 TILEC_WG_L4 ", %4, %5, %6, %7"
#define TILEC_WG_L16 TILEC_WG_L8 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define TILEC_WG_L32 TILEC_WG_L16 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define TILEC_WG_L64 TILEC_WG_L32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define TILEC_WG_L128 TILEC_WG_L64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define TILEC_WG_AT2(F, ...) F(TILEC_WG_L2, 2, 3, 4, 5, 6, 7, 8, __VA_ARGS__)
#define TILEC_WG_AT4(F, ...) F(TILEC_WG_L4, 4, 5, 6, 7, 8, 9, 10, __VA_ARGS__)
#define TILEC_WG_AT8(F, ...) F(TILEC_WG_L8, 8, 9, 10, 11, 12, 13, 14, __VA_ARGS__)
#define TILEC_WG_AT16(F, ...) F(TILEC_WG_L16, 16, 17, 18, 19, 20, 21, 22, __VA_ARGS__)
#define TILEC_WG_AT32(F, ...) F(TILEC_WG_L32, 32, 33, 34, 35, 36, 37, 38, __VA_ARGS__)
#define TILEC_WG_AT64(F, ...) F(TILEC_WG_L64, 64, 65, 66, 67, 68, 69, 70, __VA_ARGS__)
#define TILEC_WG_AT128(F, ...) F(TILEC_WG_L128, 128, 129, 130, 131, 132, 133, 134, __VA_ARGS__)

// Accumulator operands: Count consecutive elements of d from index i, as "+f" (float) or "+r" (32-bit).
#define TILEC_WG_F2(d, i) "+f"(d[(i)]), "+f"(d[(i) + 1])
#define TILEC_WG_F4(d, i) TILEC_WG_F2(d, i), TILEC_WG_F2(d, (i) + 2)
#define TILEC_WG_F8(d, i) TILEC_WG_F4(d, i), TILEC_WG_F4(d, (i) + 4)
#define TILEC_WG_F16(d, i) TILEC_WG_F8(d, i), TILEC_WG_F8(d, (i) + 8)
#define TILEC_WG_F32(d, i) TILEC_WG_F16(d, i), TILEC_WG_F16(d, (i) + 16)
#define TILEC_WG_F64(d, i) TILEC_WG_F32(d, i), TILEC_WG_F32(d, (i) + 32)
#define TILEC_WG_F128(d, i) TILEC_WG_F64(d, i), TILEC_WG_F64(d, (i) + 64)
#define TILEC_WG_R2(d, i) "+r"(d[(i)]), "+r"(d[(i) + 1])
#define TILEC_WG_R4(d, i) TILEC_WG_R2(d, i), TILEC_WG_R2(d, (i) + 2)
#define TILEC_WG_R8(d, i) TILEC_WG_R4(d, i), TILEC_WG_R4(d, (i) + 4)
#define TILEC_WG_R16(d, i) TILEC_WG_R8(d, i), TILEC_WG_R8(d, (i) + 8)
#define TILEC_WG_R32(d, i) TILEC_WG_R16(d, i), TILEC_WG_R16(d, (i) + 16)
#define TILEC_WG_R64(d, i) TILEC_WG_R32(d, i), TILEC_WG_R32(d, (i) + 32)
#define TILEC_WG_R128(d, i) TILEC_WG_R64(d, i), TILEC_WG_R64(d, (i) + 64)

// One instruction: 16-bit operands (with the transpose immediates), tf32 / float8 (scale immediates only),
// integers (no immediates). scale-d is the predicate p, from the "r" operand sd: 1 accumulates (D = A B + D), 0
// overwrites (D = A B, D's old values not read: the first k-step of wgmma_gemm_ss_init).
#define TILEC_WG_HEAD(SC) "{\n.reg .pred p;\nsetp.ne.b32 p, %" #SC ", 0;\n"
#define TILEC_WG_T16(LIST, DA, DB, SC, TA, TB, X1, X2, INST, ...)                                                    \
    asm volatile(TILEC_WG_HEAD(SC) INST " {" LIST "}, %" #DA ", %" #DB ", p, 1, 1, %" #TA ", %" #TB ";\n}\n"     \
                 : __VA_ARGS__                                                                                 \
                 : "l"(da), "l"(db), "r"(sd), "n"(TnspA), "n"(TnspB))
#define TILEC_WG_TS(LIST, DA, DB, SC, TA, TB, X1, X2, INST, ...)                                                    \
    asm volatile(TILEC_WG_HEAD(SC) INST " {" LIST "}, %" #DA ", %" #DB ", p, 1, 1;\n}\n"                        \
                 : __VA_ARGS__                                                                                 \
                 : "l"(da), "l"(db), "r"(sd))
#define TILEC_WG_TI(LIST, DA, DB, SC, TA, TB, X1, X2, INST, ...)                                                    \
    asm volatile(TILEC_WG_HEAD(SC) INST " {" LIST "}, %" #DA ", %" #DB ", p;\n}\n"                             \
                 : __VA_ARGS__                                                                                 \
                 : "l"(da), "l"(db), "r"(sd))

// RS (A from registers, 16-bit only): {d}, {a0, a1, a2, a3}, descriptor B, p, scale-a, scale-b, trans-b.
#define TILEC_WG_TRS(LIST, DB, SC, TB, A0, A1, A2, A3, INST, ...)                                              \
    asm volatile(TILEC_WG_HEAD(SC) INST " {" LIST "}, {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #DB            \
                 ", p, 1, 1, %" #TB ";\n}\n"                                                                   \
                 : __VA_ARGS__                                                                                 \
                 : "l"(db), "r"(sd), "n"(TnspB), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]))
// RS with float8 A (k32) or tf32 A (k8): no transpose immediate (8-bit and tf32 B are K-major only); the "n"
// operand is left unused.
#define TILEC_WG_TRS8(LIST, DB, SC, TB, A0, A1, A2, A3, INST, ...)                                             \
    asm volatile(TILEC_WG_HEAD(SC) INST " {" LIST "}, {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #DB            \
                 ", p, 1, 1;\n}\n"                                                                               \
                 : __VA_ARGS__                                                                                 \
                 : "l"(db), "r"(sd), "n"(TnspB), "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]))
#define TILEC_WG_WIDTH_RS(N, RF, RH)                                                                           \
    if constexpr (Width == N) {                                                                                \
        if constexpr (K == Kind::F16F32) TILEC_WG_AT##RF(TILEC_WG_TRS, TILEC_WG_OP(N, 16, "f32.f16.f16"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::BF16F32) TILEC_WG_AT##RF(TILEC_WG_TRS, TILEC_WG_OP(N, 16, "f32.bf16.bf16"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::F16F16) TILEC_WG_AT##RH(TILEC_WG_TRS, TILEC_WG_OP(N, 16, "f16.f16.f16"), TILEC_WG_R##RH(du, 0)); \
        else if constexpr (K == Kind::TF32) TILEC_WG_AT##RF(TILEC_WG_TRS8, TILEC_WG_OP(N, 8, "f32.tf32.tf32"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::E4E4) TILEC_WG_AT##RF(TILEC_WG_TRS8, TILEC_WG_OP(N, 32, "f32.e4m3.e4m3"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::E4E5) TILEC_WG_AT##RF(TILEC_WG_TRS8, TILEC_WG_OP(N, 32, "f32.e4m3.e5m2"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::E5E4) TILEC_WG_AT##RF(TILEC_WG_TRS8, TILEC_WG_OP(N, 32, "f32.e5m2.e4m3"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::E5E5) TILEC_WG_AT##RF(TILEC_WG_TRS8, TILEC_WG_OP(N, 32, "f32.e5m2.e5m2"), TILEC_WG_F##RF(df, 0)); \
    }

// Every type of one instruction width N: RF registers of float or int32 accumulators (N / 2), RH of packed
// __half ones (N / 4).
#define TILEC_WG_OP(N, K, TYPES) "wgmma.mma_async.sync.aligned.m64n" #N "k" #K "." TYPES
#define TILEC_WG_WIDTH(N, RF, RH)                                                                              \
    if constexpr (Width == N) {                                                                                \
        if constexpr (K == Kind::F16F32) TILEC_WG_AT##RF(TILEC_WG_T16, TILEC_WG_OP(N, 16, "f32.f16.f16"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::BF16F32) TILEC_WG_AT##RF(TILEC_WG_T16, TILEC_WG_OP(N, 16, "f32.bf16.bf16"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::F16F16) TILEC_WG_AT##RH(TILEC_WG_T16, TILEC_WG_OP(N, 16, "f16.f16.f16"), TILEC_WG_R##RH(du, 0)); \
        else if constexpr (K == Kind::TF32) TILEC_WG_AT##RF(TILEC_WG_TS, TILEC_WG_OP(N, 8, "f32.tf32.tf32"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::E4E4) TILEC_WG_AT##RF(TILEC_WG_TS, TILEC_WG_OP(N, 32, "f32.e4m3.e4m3"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::E4E5) TILEC_WG_AT##RF(TILEC_WG_TS, TILEC_WG_OP(N, 32, "f32.e4m3.e5m2"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::E5E4) TILEC_WG_AT##RF(TILEC_WG_TS, TILEC_WG_OP(N, 32, "f32.e5m2.e4m3"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::E5E5) TILEC_WG_AT##RF(TILEC_WG_TS, TILEC_WG_OP(N, 32, "f32.e5m2.e5m2"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::S8S8) TILEC_WG_AT##RF(TILEC_WG_TI, TILEC_WG_OP(N, 32, "s32.s8.s8"), TILEC_WG_R##RF(du, 0)); \
        else if constexpr (K == Kind::S8U8) TILEC_WG_AT##RF(TILEC_WG_TI, TILEC_WG_OP(N, 32, "s32.s8.u8"), TILEC_WG_R##RF(du, 0)); \
        else if constexpr (K == Kind::U8S8) TILEC_WG_AT##RF(TILEC_WG_TI, TILEC_WG_OP(N, 32, "s32.u8.s8"), TILEC_WG_R##RF(du, 0)); \
        else if constexpr (K == Kind::U8U8) TILEC_WG_AT##RF(TILEC_WG_TI, TILEC_WG_OP(N, 32, "s32.u8.u8"), TILEC_WG_R##RF(du, 0)); \
    }

// Sparse (wgmma.mma_async.sp, A 2:4 structured-sparse, K 32 for 16-bit types): {d}, descriptor A, descriptor B,
// the metadata register (the operand after the transposes), sparsity selector 0, p, scale-a, scale-b, trans-a, trans-b.
#define TILEC_WG_TSP(LIST, DA, DB, SC, TA, TB, E, X2, INST, ...)                                                   \
    asm volatile(TILEC_WG_HEAD(SC) INST " {" LIST "}, %" #DA ", %" #DB ", %" #E ", 0, p, 1, 1, %" #TA ", %" #TB  \
                 ";\n}\n"                                                                                      \
                 : __VA_ARGS__                                                                                 \
                 : "l"(da), "l"(db), "r"(sd), "n"(TnspA), "n"(TnspB), "r"(meta))
#define TILEC_WG_OPSP(N, TYPES) "wgmma.mma_async.sp.sync.aligned.m64n" #N "k32." TYPES
#define TILEC_WG_WIDTH_SP(N, RF, RH)                                                                           \
    if constexpr (Width == N) {                                                                                \
        if constexpr (K == Kind::F16F32) TILEC_WG_AT##RF(TILEC_WG_TSP, TILEC_WG_OPSP(N, "f32.f16.f16"), TILEC_WG_F##RF(df, 0)); \
        else if constexpr (K == Kind::BF16F32) TILEC_WG_AT##RF(TILEC_WG_TSP, TILEC_WG_OPSP(N, "f32.bf16.bf16"), TILEC_WG_F##RF(df, 0)); \
    }

// Every instruction width with its float / int32 (N / 2) and packed __half (N / 4) register counts.
#define TILEC_WG_WIDTHS(W) W(256, 128, 64) W(128, 64, 32) W(64, 32, 16) W(32, 16, 8) W(16, 8, 4) W(8, 4, 2)

/// The A operand of one sparse wgmma (wgmma.mma_async.sp): the compressed tile's descriptor and this thread's
/// metadata register (sm90_wgmma_sp.cuh).
struct SparseA {
    uint64_t desc;
    uint32_t meta;
};

/// One wgmma.mma_async m64 n`Width` of kind K: SS (AOp = uint64_t, A's descriptor), sparse SS (AOp = SparseA:
/// f16 / bf16 into float, k32) or RS (AOp = const uint32_t *, the thread's four A registers: 16-bit, float8 and
/// tf32 kinds). df: float accumulators; du: 32-bit ones (int32, or __half pairs packed low-first).
template <int Width, Kind K, int TnspA, int TnspB, class AOp>
__device__ __forceinline__ void mma(float *df, uint32_t *du, AOp a, uint64_t db, int sd = 1) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if constexpr (std::is_same_v<AOp, uint64_t>) {
        const uint64_t da = a;
        TILEC_WG_WIDTHS(TILEC_WG_WIDTH)
    } else if constexpr (std::is_same_v<AOp, SparseA>) {
        static_assert(K == Kind::F16F32 || K == Kind::BF16F32, "sparse wgmma: f16 / bf16 into float");
        const uint64_t da = a.desc;
        const uint32_t meta = a.meta;
        TILEC_WG_WIDTHS(TILEC_WG_WIDTH_SP)
    } else {
        TILEC_WG_WIDTHS(TILEC_WG_WIDTH_RS)
    }
#else
    (void)df;
    (void)du;
    (void)a;
    (void)db;
    (void)sd;
#endif
}

#undef TILEC_WG_WIDTHS
#undef TILEC_WG_WIDTH_SP
#undef TILEC_WG_OPSP
#undef TILEC_WG_TSP
#undef TILEC_WG_WIDTH_RS
#undef TILEC_WG_TRS
#undef TILEC_WG_TRS8
#undef TILEC_WG_WIDTH
#undef TILEC_WG_OP
#undef TILEC_WG_TI
#undef TILEC_WG_TS
#undef TILEC_WG_T16
#undef TILEC_WG_HEAD
#undef TILEC_WG_AT128
#undef TILEC_WG_AT16
#undef TILEC_WG_AT2
#undef TILEC_WG_AT32
#undef TILEC_WG_AT4
#undef TILEC_WG_AT64
#undef TILEC_WG_AT8
#undef TILEC_WG_F128
#undef TILEC_WG_F16
#undef TILEC_WG_F2
#undef TILEC_WG_F32
#undef TILEC_WG_F4
#undef TILEC_WG_F64
#undef TILEC_WG_F8
#undef TILEC_WG_L128
#undef TILEC_WG_L16
#undef TILEC_WG_L2
#undef TILEC_WG_L32
#undef TILEC_WG_L4
#undef TILEC_WG_L64
#undef TILEC_WG_L8
#undef TILEC_WG_R128
#undef TILEC_WG_R16
#undef TILEC_WG_R2
#undef TILEC_WG_R32
#undef TILEC_WG_R4
#undef TILEC_WG_R64
#undef TILEC_WG_R8

/// Tells the compiler that the Count registers of acc are read and written here, so that nothing touching
/// them moves across this point (wgmma writes them asynchronously, behind the compiler's back).
template <int Count, class T> __device__ __forceinline__ void fence_operands(T *acc) {
#pragma unroll
    for (int i = 0; i < Count; ++i) {
        if constexpr (std::is_same_v<T, float>) asm volatile("" : "+f"(acc[i])::"memory");
        else if constexpr (sizeof(T) == 2) { // __half or __nv_bfloat16: a pair to a 32-bit register
            if (i % 2 == 0) asm volatile("" : "+r"(*reinterpret_cast<uint32_t *>(&acc[i]))::"memory");
        } else if constexpr (sizeof(T) == 1) { // float8: four to a 32-bit register (Count a multiple of 4)
            if (i % 4 == 0) asm volatile("" : "+r"(*reinterpret_cast<uint32_t *>(&acc[i]))::"memory");
        } else asm volatile("" : "+r"(acc[i])::"memory");
    }
}

__host__ __device__ constexpr int largest_pow2_at_most(int n) { return n >= 256 ? 256 : n >= 128 ? 128 : n >= 64 ? 64 : n >= 32 ? 32 : n >= 16 ? 16 : 8; }

/// The instructions of one m64 x Nw x kInst step, from column n0 on: the largest power-of-two width that fits,
/// then the rest. acc points at the m-tile's first accumulator.
/// A is a descriptor (uint64_t: SS) or the thread's four A registers (const uint32_t *: RS).
template <int Nw, int N0, Kind K, int TnspA, int TnspB, int Wb, bool BNMajor, int BPanelBytes, int SwzB, class TC,
          class AOp>
__device__ __forceinline__ void mma_row(TC *acc, AOp da, uint64_t db, int sd = 1) {
    if constexpr (N0 < Nw) {
        constexpr int Width = largest_pow2_at_most(Nw - N0);
        // the B offset of columns N0..: N-major, whole panels (a start inside a panel is not allowed); K-major,
        // N0 rows down the tile
        static_assert(!BNMajor || N0 % Wb == 0 || Width == Nw,
                      "an N-major B is split into instructions at panel boundaries only (N / WgN % W == 0)");
        constexpr unsigned off = BNMajor ? (N0 / Wb) * BPanelBytes : N0 * SwzB;
        const uint64_t dbi = descriptor_plus(db, off >> 4);
        auto issue = [&](float *df, uint32_t *du) { mma<Width, K, TnspA, TnspB>(df, du, da, dbi, sd); };
        if constexpr (std::is_same_v<TC, float>) {
            issue(acc + N0 / 2, nullptr);
        } else {
            // int32, or __half accumulators as the 32-bit registers wgmma sees: pairs, element 2j in the low half
            // (copying them into packed registers around each instruction made ptxas wait between the wgmmas:
            // C7517 / C7519)
            issue(nullptr, reinterpret_cast<uint32_t *>(acc + N0 / 2));
        }
        mma_row<Nw, N0 + Width, K, TnspA, TnspB, Wb, BNMajor, BPanelBytes, SwzB>(acc, da, db, sd);
    }
}

/// The wgmma m64k32 A registers (4 per m-tile and 32 columns: rows g, g + 8 of columns 4t..4t+3, then of
/// 16 + 4t..16 + 4t + 3, g = lane / 4, t = lane % 4) of an MT x K float8 fragment held in the wgmma accumulator
/// order (each thread columns 2t, 2t + 1 of every 8: what T.copy of an accumulator gives). Per 32 columns and
/// row, lane t holds the column pairs H_b = (8b + 2t, +1), b = 0..3, and needs pairs t / 2 (its first word) and
/// 2 + t / 2 (its second) of lanes 2(t % 2) and 2(t % 2) + 1: two shuffles of the words X = (H_0, H_2) and
/// Y = (H_1, H_3), even lanes sending X in the first and Y in the second, odd lanes the other way round.
template <int MT, int K, class TA> __device__ __forceinline__ void float8_a_image(const TA *a, uint32_t *image) {
    const unsigned lane = threadIdx.x % 32, t = lane % 4;
    const bool even = (t & 1) == 0, low = t < 2; // low: lanes 0, 1 take the X words, 2, 3 the Y words
    const int srcA = (int)((lane & ~3u) | ((t & 1) << 1) | (t >> 1)), srcB = srcA ^ 1;
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
        for (int kc = 0; kc < K / 32; ++kc)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                uint32_t H[4];
#pragma unroll
                for (int b = 0; b < 4; ++b) {
                    // a pair, as cast_pair writes it (2-byte aligned: even element indices)
                    H[b] = *reinterpret_cast<const uint16_t *>(a + ((mi * (K / 8) + kc * 4 + b) * 2 + h) * 2);
                }
                const uint32_t X = H[0] | (H[2] << 16), Y = H[1] | (H[3] << 16);
                const uint32_t rA = __shfl_sync(0xffffffffu, even ? X : Y, srcA);
                const uint32_t rB = __shfl_sync(0xffffffffu, even ? Y : X, srcB);
                const uint32_t first = low ? rA : rB, second = low ? rB : rA; // lanes 2(t%2), 2(t%2) + 1
                uint32_t *r = image + (mi * (K / 32) + kc) * 4;
                r[h] = __byte_perm(first, second, 0x5410);     // columns 4t..4t+3
                r[2 + h] = __byte_perm(first, second, 0x7632); // columns 16 + 4t..
            }
}

} // namespace wgmma_detail

/// wgmma.fence: orders earlier register and shared-memory accesses of this warpgroup before the next wgmma.
__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

/// Closes the group of the wgmma.mma_async this warpgroup issued since the last commit.
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

/// Waits until at most Pending of this warpgroup's committed wgmma groups are still in flight.
template <int Pending> __device__ __forceinline__ void wgmma_wait() {
    static_assert(Pending >= 0 && Pending <= 7, "wgmma.wait_group takes 0..7");
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}

/// wgmma_wait<Pending>(), then the compiler is told that acc[0 .. Count) changed there: reads of the
/// accumulators (an epilogue) cannot be scheduled before the wait.
template <int Pending, int Count, class TC> __device__ __forceinline__ void wgmma_wait(TC *acc) {
    wgmma_wait<Pending>();
    wgmma_detail::fence_operands<Count>(acc);
}

/// Tells the compiler that acc[0 .. Count) are read and written here (no code touching them moves across).
template <int Count, class TC> __device__ __forceinline__ void wgmma_fence_operands(TC *acc) {
    wgmma_detail::fence_operands<Count>(acc);
}

/// Sets acc[0 .. Count) to zero and pins them there (wgmma_fence_operands). Without the pin the compiler may
/// sink the zeroing into each path into the k-loop (e.g. a separate one for zero trips) that then joins the
/// wgmma pipeline's open state, and ptxas serializes every wgmma of the kernel (info C7515, "non wgmma
/// instructions defining accumulator registers ... between start and end of the pipeline stage").
template <int Count, class TC> __device__ __forceinline__ void wgmma_clear(TC *acc) {
#pragma unroll
    for (int i = 0; i < Count; ++i) acc[i] = TC(0);
    wgmma_detail::fence_operands<Count>(acc);
}

/// The number of accumulator elements per thread of wgmma_gemm_ss<M, N, K, WgM, WgN, ...>.
template <int M, int N, int WgM, int WgN> __host__ __device__ constexpr int wgmma_acc_count() {
    return (M / WgM / 64) * (N / WgN / 2);
}

namespace wgmma_detail {

/// The descriptor of this warpgroup's first A instruction in wgmma_gemm_ss<M, N, K, WgM, WgN, TransA, ...>; the
/// others are descriptor_plus of it. Opaque: its address and high word through at_use (a value made once, before
/// a loop, stays one value: nvcc cannot fold the constant high word back in, and ptxas then keeps each of the
/// instructions' A descriptors in the uniform registers of its own operand quadruple across the loop, as
/// FlashAttention-3's Q; with the high word known, it rebuilt them at every instruction).
template <int M, int K, int WgM, int WgN, bool TransA, int SwzA, class TA>
__device__ __forceinline__ uint64_t a_descriptor(const TA *a, unsigned wg, bool opaque) {
    constexpr int Wa = SwzA / (int)sizeof(TA), Mw = M / WgM;
    constexpr unsigned APanel = (TransA ? K : M) * SwzA;
    const unsigned wgm = WgM == 1 ? 0 : wg % WgM;
    const unsigned aOff = TransA ? (wgm * Mw / Wa) * APanel : wgm * Mw * SwzA;
    const uint64_t d = descriptor<SwzA>(reinterpret_cast<const unsigned char *>(a) + aOff, TransA ? APanel : 16, 8 * SwzA);
    if (!opaque) return d;
    return (uint64_t)(uint32_t)d | ((uint64_t)at_use((uint32_t)(d >> 32)) << 32);
}

/// wgmma_gemm_ss's instructions for the first Issued 64-row panels of this warpgroup's rows (all: MT), fenced
/// and committed; the accumulators of the others are left as they are. init: the first k-step overwrites the
/// accumulators (scale-d 0) instead of adding to them. da0: A's first descriptor (a_descriptor); wg: the
/// warpgroup_index() (read where WgM * WgN > 1).
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int SwzA, int SwzB, int Issued, class TA,
          class TB, class TC>
__device__ __forceinline__ void ss_issue(uint64_t da0, unsigned wg, const TB *b, TC *acc, bool init) {
    constexpr Kind K_ = kind<TA, TB, TC>();
    static_assert(K_ != Kind::None, "wgmma types: f16/bf16 -> f32, f16 -> f16, tf32 (float) -> f32, "
                                    "fp8 e4m3/e5m2 -> f32, int8/uint8 -> int32");
    static_assert(sixteen_bit(K_) || (!TransA && TransB),
                  "tf32, float8 and int8 wgmma read K-major operands only (TransA false, TransB true)");
    constexpr int ES = (int)sizeof(TA);
    constexpr int KInst = 32 / ES;
    constexpr int Mw = M / WgM, Nw = N / WgN, MT = Mw / 64;
    static_assert(M % WgM == 0 && Mw % 64 == 0, "each consumer warpgroup owns a multiple of 64 rows");
    static_assert(N % WgN == 0 && Nw % 8 == 0 && Nw <= 256, "each warpgroup owns 8..256 columns, a multiple of 8");
    static_assert(!std::is_same_v<TC, __half> || Nw % 16 == 0, "__half accumulators: N / WgN a multiple of 16");
    static_assert(K % KInst == 0, "K is a whole number of instructions (16 for 16-bit types, 8 tf32, 32 8-bit)");
    static_assert(Issued >= 0 && Issued <= MT, "the panels issued are some of the warpgroup's");
    constexpr int Wa = SwzA / ES, Wb = SwzB / ES;
    // K-major operands: the tile's columns are K, whole panels; MN-major: the tile's rows are K.
    static_assert(TransA || K % Wa == 0, "a K-major A tile is a whole number of panels (K * sizeof % SwzA == 0)");
    static_assert(!TransB || K % Wb == 0, "a K-major B tile is a whole number of panels (K * sizeof % SwzB == 0)");
    static_assert(!TransA || M % Wa == 0, "an M-major A tile is a whole number of panels");
    static_assert(TransB || N % Wb == 0, "an N-major B tile is a whole number of panels");
    static_assert(TransB || WgN == 1 || Nw % Wb == 0, "an N-major B splits between warpgroups at panel bounds");
    // Descriptor strides. K-major: SBO = 8 rows of the panel, LBO unused (1). MN-major: SBO = 8 K-rows, LBO =
    // the next panel (the next SwzBytes of M or N).
    constexpr unsigned APanel = (TransA ? K : M) * SwzA, BPanel = (TransB ? N : K) * SwzB;
    const unsigned wgn = WgN == 1 ? 0 : wg / WgM;
    const unsigned bOff = TransB ? wgn * Nw * SwzB : (wgn * Nw / Wb) * BPanel;
    const uint64_t db0 = descriptor<SwzB>(reinterpret_cast<const unsigned char *>(b) + bOff, TransB ? 16 : BPanel,
                                          8 * SwzB);
    constexpr int Count = MT * Nw / 2;
    fence_operands<Count>(acc);
    wgmma_fence();
#pragma unroll
    for (int ki = 0; ki < K / KInst; ++ki) {
        // the instruction's 32 bytes of K: inside a panel's row (K-major) or 16 K-rows down (MN-major)
        const int kA = ki * KInst, kB = ki * KInst;
        const unsigned kaOff = TransA ? kA * SwzA : (kA / Wa) * APanel + (kA % Wa) * ES;
        const unsigned kbOff = TransB ? (kB / Wb) * BPanel + (kB % Wb) * ES : kB * SwzB;
#pragma unroll
        for (int mi = 0; mi < Issued; ++mi) {
            const unsigned maOff = TransA ? (mi * 64 / Wa) * APanel : mi * 64 * SwzA;
            mma_row<Nw, 0, K_, TransA ? 1 : 0, TransB ? 0 : 1, Wb, !TransB, BPanel, SwzB>(
                acc + mi * (Nw / 2), descriptor_plus(da0, (kaOff + maOff) >> 4), descriptor_plus(db0, kbOff >> 4),
                init && ki == 0 ? 0 : 1);
        }
    }
    wgmma_commit();
    fence_operands<Count>(acc);
}

/// ss_issue with A's descriptor made here, at the product.
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int SwzA, int SwzB, int Issued, class TA,
          class TB, class TC>
__device__ __forceinline__ void ss_panels(const TA *a, const TB *b, TC *acc, bool init = false) {
    const unsigned wg = WgM * WgN == 1 ? 0 : warpgroup_index();
    ss_issue<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, Issued, TA>(
        a_descriptor<M, K, WgM, WgN, TransA, SwzA>(a, wg, false), wg, b, acc, init);
}

/// The first `issued` panels (0..P) of this warpgroup: one straight sequence of instructions per count.
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int SwzA, int SwzB, int P, class TA,
          class TB, class TC>
__device__ __forceinline__ void ss_live(const TA *a, const TB *b, TC *acc, int issued) {
    if constexpr (P == 0) {
        ss_panels<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, 0>(a, b, acc);
    } else {
        if (issued >= P) ss_panels<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, P>(a, b, acc);
        else ss_live<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, P - 1>(a, b, acc, issued);
    }
}

} // namespace wgmma_detail

/// C(M x N) += op(A) op(B) over shared tiles by the consumer warpgroups (see the file's comment): fence,
/// every instruction, commit; no wait. Rows < M (one warpgroup only): the 64-row panels of C from row Rows on
/// are not issued and keep their values (rows the compiler proved no one observes: a skinny A in a tall tile).
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int SwzA, int SwzB, int Rows, class TA,
          class TB, class TC>
__device__ __forceinline__ void wgmma_gemm_ss(const TA *a, const TB *b, TC *acc) {
    static_assert(Rows == M || (WgM == 1 && Rows > 0 && Rows < M), "live rows: all, or some of one warpgroup's");
    constexpr int MT = M / WgM / 64;
    wgmma_detail::ss_panels<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, WgM == 1 ? (Rows + 63) / 64 : MT>(a, b, acc);
}

/// C(M x N) = op(A) op(B): wgmma_gemm_ss whose first k-step overwrites the accumulators (wgmma's scale-d 0)
/// instead of adding to them, so that no instruction zeroes them first (FlashAttention-3's QK^T, `zero_init`).
/// Every 64-row panel is issued (Rows == M). Equal to wgmma_clear then wgmma_gemm_ss but for the sign of an
/// exact zero sum (0 + -0 is +0).
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int SwzA, int SwzB, int Rows, class TA,
          class TB, class TC>
__device__ __forceinline__ void wgmma_gemm_ss_init(const TA *a, const TB *b, TC *acc) {
    static_assert(Rows == M, "an overwriting product issues every panel");
    wgmma_detail::ss_panels<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, M / WgM / 64>(a, b, acc, true);
}

/// A's first descriptor of a wgmma_gemm_ss made once, before the loop that issues the product (tilec hoists it for
/// an A tile at a fixed address, e.g. attention's Q: codegen's hoistedWgmmaA). Its own type, so that the overloads
/// taking it differ from the one taking `live`.
struct wgmma_a_operand {
    uint64_t desc;
};

/// The wgmma_a_operand of wgmma_gemm_ss<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, ...>(a, ...), made by the
/// consumer warpgroup's threads (its warpgroup's rows of a).
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int SwzA, int SwzB, class TA>
__device__ __forceinline__ wgmma_a_operand wgmma_a_descriptor(const TA *a) {
    return {wgmma_detail::a_descriptor<M, K, WgM, WgN, TransA, SwzA>(a, WgM == 1 ? 0 : wgmma_detail::warpgroup_index(), true)};
}

/// wgmma_gemm_ss with A's descriptor made before (wgmma_a_descriptor of the same a); `a` gives only its type.
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int SwzA, int SwzB, int Rows, class TA,
          class TB, class TC>
__device__ __forceinline__ void wgmma_gemm_ss(const TA *, const TB *b, TC *acc, wgmma_a_operand a) {
    static_assert(Rows == M || (WgM == 1 && Rows > 0 && Rows < M), "live rows: all, or some of one warpgroup's");
    constexpr int MT = M / WgM / 64;
    wgmma_detail::ss_issue<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, WgM == 1 ? (Rows + 63) / 64 : MT, TA>(
        a.desc, WgN == 1 ? 0 : wgmma_detail::warpgroup_index(), b, acc, false);
}

/// wgmma_gemm_ss_init with A's descriptor made before (wgmma_a_descriptor of the same a).
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int SwzA, int SwzB, int Rows, class TA,
          class TB, class TC>
__device__ __forceinline__ void wgmma_gemm_ss_init(const TA *, const TB *b, TC *acc, wgmma_a_operand a) {
    static_assert(Rows == M, "an overwriting product issues every panel");
    wgmma_detail::ss_issue<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, M / WgM / 64, TA>(
        a.desc, WgN == 1 ? 0 : wgmma_detail::warpgroup_index(), b, acc, true);
}

/// The same where the block's live rows are known at run time only (`live`, the same in every thread): each
/// warpgroup issues its panels that start below `live` (none where its rows all lie past it) and commits its
/// group either way, so that the waits count alike.
template <int M, int N, int K, int WgM, int WgN, bool TransA, bool TransB, int SwzA, int SwzB, int Rows, class TA,
          class TB, class TC>
__device__ __forceinline__ void wgmma_gemm_ss(const TA *a, const TB *b, TC *acc, int live) {
    static_assert(Rows == M, "live rows at run time, or a constant count: not both");
    constexpr int Mw = M / WgM, MT = Mw / 64;
    const int wgm = WgM == 1 ? 0 : (int)(wgmma_detail::warpgroup_index() % WgM);
    const int mine = live - wgm * Mw;
    const int issued = mine <= 0 ? 0 : (mine + 63) / 64;
    wgmma_detail::ss_live<M, N, K, WgM, WgN, TransA, TransB, SwzA, SwzB, MT>(a, b, acc, issued);
}

/// C(M x N) += A B with A in registers (RS), 16-bit types only, B a shared panel-layout tile as for
/// wgmma_gemm_ss. a holds the thread's A fragments, (M / WgM / 64) m-tiles x (K / 16) k-steps x 4 registers:
///   a[(mi * (K / 16) + ki) * 4 + j], each two elements of TA (low half first) at row
///   wgm * (M / WgM) + mi * 64 + (warp % 4) * 16 + (j % 2) * 8 + lane / 4, columns ki * 16 + (j / 2) * 8 +
///   (lane % 4) * 2 + {0, 1}
/// -- the m64k16 A fragment, which is the accumulator order of wgmma_gemm_ss with N = K packed in pairs: an
/// accumulator array acc of a previous product converts to a as a[i] = pack(acc[2i], acc[2i + 1]) (e.g. the
/// P = softmax(S) operand of attention). Warpgroups as for wgmma_gemm_ss (each has its own rows of A; WgN > 1
/// means several warpgroups hold the same rows). Fence, every instruction, commit; no wait. The registers a
/// are read asynchronously: they must keep their values until a wait has retired the group, and ptxas does not
/// see to it (it reloaded them under an in-flight group, H200 2026-12-01): before overwriting them, wait for
/// the group (wgmma_wait<0>, or alternate two register sets, each kept alive with wgmma_fence_operands after
/// the wait that retires its group).
template <int M, int N, int K, int WgM, int WgN, bool TransB, int SwzB, class TA, class TB, class TC>
__device__ __forceinline__ void wgmma_gemm_rs(const uint32_t *a, const TB *b, TC *acc) {
    using namespace wgmma_detail;
    constexpr Kind K_ = kind<TA, TB, TC>();
    static_assert(sixteen_bit(K_) || float8(K_) || K_ == Kind::TF32,
                  "wgmma with A in registers: f16/bf16 -> f32, f16 -> f16, fp8 -> f32, tf32 -> f32");
    static_assert(sixteen_bit(K_) || TransB, "float8 and tf32 wgmma read a K-major B only (TransB true)");
    constexpr int ES = (int)sizeof(TB), KInst = 32 / ES;
    constexpr int Mw = M / WgM, Nw = N / WgN, MT = Mw / 64, KT = K / KInst;
    static_assert(M % WgM == 0 && Mw % 64 == 0, "each consumer warpgroup owns a multiple of 64 rows");
    static_assert(N % WgN == 0 && Nw % 8 == 0 && Nw <= 256, "each warpgroup owns 8..256 columns, a multiple of 8");
    static_assert(!std::is_same_v<TC, __half> || Nw % 16 == 0, "__half accumulators: N / WgN a multiple of 16");
    static_assert(K % KInst == 0, "K is a whole number of instructions (k16 16-bit, k32 float8, k8 tf32)");
    constexpr int Wb = SwzB / ES;
    static_assert(!TransB || K % Wb == 0, "a K-major B tile is a whole number of panels (K * sizeof % SwzB == 0)");
    static_assert(TransB || N % Wb == 0, "an N-major B tile is a whole number of panels");
    static_assert(TransB || WgN == 1 || Nw % Wb == 0, "an N-major B splits between warpgroups at panel bounds");
    constexpr unsigned BPanel = (TransB ? N : K) * SwzB;
    const unsigned wgn = WgN == 1 ? 0 : warpgroup_index() / WgM;
    const unsigned bOff = TransB ? wgn * Nw * SwzB : (wgn * Nw / Wb) * BPanel;
    const uint64_t db0 = descriptor<SwzB>(reinterpret_cast<const unsigned char *>(b) + bOff, TransB ? 16 : BPanel,
                                          8 * SwzB);
    constexpr int Count = MT * Nw / 2;
    fence_operands<Count>(acc);
    wgmma_fence();
#pragma unroll
    for (int ki = 0; ki < KT; ++ki) {
        const int kB = ki * KInst;
        const unsigned kbOff = TransB ? (kB / Wb) * BPanel + (kB % Wb) * ES : kB * SwzB;
#pragma unroll
        for (int mi = 0; mi < MT; ++mi)
            mma_row<Nw, 0, K_, 0, TransB ? 0 : 1, Wb, !TransB, BPanel, SwzB>(acc + mi * (Nw / 2),
                                                                           a + (mi * KT + ki) * 4,
                                                                           descriptor_plus(db0, kbOff >> 4));
    }
    wgmma_commit();
    fence_operands<Count>(acc);
}

/// wgmma_gemm_rs with A as the fragment array of 16-bit elements that tilec keeps in registers: the thread's
/// elements in wgmma_gemm_rs's register order, two to a 32-bit register (element 2i in the low half), which is
/// the accumulator order of wgmma_gemm_ss for (M, K) (see wgmma_gemm_rs). The array must be 4-byte aligned
/// (tilec declares register arrays alignas(16)). Its registers are read asynchronously: keep them alive and
/// unchanged until the wait that retires the group, e.g. with wgmma_wait<0, Count>(a), which also pins them.
/// A float8 fragment (A in the accumulator order, which is not wgmma's 8-bit A order) is followed in its array
/// by as many bytes again, where the call writes the m64k32 registers it issues from (float8_a_image): pin all
/// 2 x Count bytes after the wait. A float fragment (tf32) is in the operand order of tilec's layouts (opCols in
/// wgmma rows): slots 4 (mi * K / 8 + ki) .. + 3 are m64k8 step ki's a0..a3, rows g, g + 8 of column t, then of
/// t + 4 (g = lane / 4, t = lane % 4), each float's bits as they are (the tensor core reads its tf32 part).
template <int M, int N, int K, int WgM, int WgN, bool TransB, int SwzB, class TA, class TB, class TC>
__device__ __forceinline__ void wgmma_gemm_rs_fragment(const TA *a, const TB *b, TC *acc) {
    static_assert(sizeof(TA) == 2 || sizeof(TA) == 1 || std::is_same_v<TA, float>,
                  "wgmma with A in registers takes a 16-bit, float8 or float (tf32) fragment");
    if constexpr (sizeof(TA) == 2 || sizeof(TA) == 4) {
        wgmma_gemm_rs<M, N, K, WgM, WgN, TransB, SwzB, TA>(reinterpret_cast<const uint32_t *>(a), b, acc);
    } else {
        // The m64k32 image follows the fragment in the same array (tilec allocates a float8 A of wgmma twice
        // its elements): its registers are read asynchronously and so must live as long as the fragment's.
        constexpr int Elems = (M / WgM / 64) * K / 2;
        uint32_t *image = reinterpret_cast<uint32_t *>(const_cast<TA *>(a) + Elems);
        wgmma_detail::float8_a_image<M / WgM / 64, K>(a, image);
        wgmma_gemm_rs<M, N, K, WgM, WgN, TransB, SwzB, TA>(image, b, acc);
    }
}

} // namespace tilec

#endif // TILEC_STDLIB_SM90_WGMMA_CUH
