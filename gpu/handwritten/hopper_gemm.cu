/// \file
/// Warp-specialized Hopper GEMMs written by hand, exactly as tilec is to emit them for sm_90a, on the device
/// library of stdlib/tilec/sm90_*.cuh (see hopper_gemm.h for the C interface). They prove the library on the
/// H200 (gpu/tests/hopper.py: correctness and the benchmark against cuBLAS) before generated code uses it.
///
/// Structure of every kernel: the block is WgM consumer warpgroups plus one producer warpgroup (the last),
/// __launch_bounds__(threads, MinBlocks) so that setmaxnreg applies.
///   - one thread initialises a ring of Stages full/empty mbarriers; full[s] expects 1 arrival plus the bytes
///     of the stage's A and B tiles, empty[s] one arrival per consumer warp (lane 0 after its warpgroup's wait);
///   - producer: setmaxnreg_dec; one thread loops over the k-blocks: wait empty[s] (parity ((k/S)&1)^1),
///     arrive_expect_tx(full[s], A + B bytes), TMA loads of the A and B tiles (128-byte swizzled panels);
///   - consumers: setmaxnreg_inc; clear the accumulators; loop: wait full[s] (parity (k/S)&1), wgmma_gemm_ss
///     of the stage, wgmma_wait<1> (the previous k-block's group has retired), release the previous stage;
///     after the loop wgmma_wait<0>; epilogue: bounds-checked stores straight from the accumulators, column
///     pairs as 4-byte stores.
/// Tiles the shape does not divide are zero-filled by TMA (loads) and masked (stores).
/// Variants (Config): Persistent (a grid of at most one block per SM walks the tiles with one ring position over
/// all of them; the last stage of a tile is released before its epilogue so the producer refills meanwhile);
/// ClusterM = 2 (two CTAs along M share B: each loads half of it with tma_load_tile_multicast, consumers
/// release a stage on both CTAs' empty barriers, whose count is then 2 x the consumer warps; cluster_sync
/// after the barriers' initialisation and before exit); RS (A read from the stage into registers, then
/// wgmma_gemm_rs, with wgmma_wait<0> before the next reload of those registers).
///
/// Host side: the tensor maps are encoded at each call, on the stack, with cuTensorMapEncodeTiled reached
/// through cudaGetDriverEntryPointByVersion (no -lcuda), and passed as const __grid_constant__ parameters.
#include "hopper_gemm.h"

#include "../../stdlib/tilec/raster.cuh"
#include "../../stdlib/tilec/sm90_barrier.cuh"
#include "../../stdlib/tilec/sm90_tma.cuh"
#include "../../stdlib/tilec/sm90_wgmma.cuh"
#include "../../stdlib/tilec/tensor_map.cuh"

#include <cuda.h> // CUtensorMap and its enums only: the encoder comes through the runtime's entry-point query
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace {

thread_local cudaError_t lastError = cudaSuccess;

constexpr int kSwizzle = 128; // every tile: 128-byte panels
constexpr int kRasterPanel = 8; // block rows per rasterization panel (T.use_swizzle's order)

/// One kernel's configuration. Persistent: a grid of at most one cluster per SM group walking the tiles (the
/// producer fills the next tile's stages while the consumers store the last one); ClusterM: CTAs per cluster
/// along M, which share their B tile (each loads 1 / ClusterM of it and multicasts it to all).
template <class TIn, class TOut, int BM_, int BN_, int BK_, int WgM_, int Stages_, bool TransB_, int MinBlocks_,
          bool Persistent_ = false, int ClusterM_ = 1, bool RS_ = false>
struct Config {
    /// RS: the consumers read their A fragments out of the stage into registers and issue wgmma_gemm_rs (the
    /// proof of the RS path; an A that is already in registers, attention's P, skips the reads).
    static constexpr bool RS = RS_;
    using In = TIn;
    using Out = TOut;
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WgM = WgM_, Stages = Stages_, MinBlocks = MinBlocks_;
    static constexpr bool TransB = TransB_, Persistent = Persistent_;
    static constexpr int ClusterM = ClusterM_;
    static_assert(ClusterM == 1 || ClusterM == 2, "clusters of 1 or 2 CTAs along M");
    // B's TMA box: the tile's whole rows (<= 256) or, multicast, the rows of one CTA's share
    static constexpr int BRows = TransB ? BN : BK;
    static constexpr int BBoxRows = (TransB && ClusterM > 1) ? BRows / ClusterM : (BRows < 256 ? BRows : 256);
    static constexpr int Consumers = 128 * WgM;
    static constexpr int Threads = Consumers + 128;
    static constexpr int ABytes = BM * BK * (int)sizeof(TIn), BBytes = BK * BN * (int)sizeof(TIn);
    static constexpr int StageBytes = ABytes + BBytes;
    // 1024 bytes of slack to align the ring (swizzled tiles need 1024-byte alignment), then the barriers
    static constexpr int SharedBytes = 1024 + Stages * StageBytes + 2 * Stages * 8;
    static constexpr int Acc = tilec::wgmma_acc_count<BM, BN, WgM, 1>();
    // registers per thread after setmaxnreg: the whole file (65536) split between the roles
    static constexpr int ProducerRegs = 40;
    static constexpr int ConsumerRegs =
        ((65536 / MinBlocks / 128 - ProducerRegs) / WgM / 8 * 8) > 240 ? 240
                                                                     : ((65536 / MinBlocks / 128 - ProducerRegs) / WgM / 8 * 8);
    static_assert(StageBytes % 1024 == 0, "every tile stays 1024-byte aligned");
    static_assert(SharedBytes <= 227 * 1024, "shared memory of one block");
};

template <class T> __device__ __forceinline__ uint32_t pack2(float a, float b);
template <> __device__ __forceinline__ uint32_t pack2<__half>(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float a, float b) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t *>(&h);
}
template <class T> __device__ __forceinline__ T from_f(float a);
template <> __device__ __forceinline__ __half from_f<__half>(float a) { return __float2half_rn(a); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float a) { return __float2bfloat16_rn(a); }

/// The thread's m64k16 A fragments (wgmma_gemm_rs's order) of its warpgroup's rows of a K-major stage tile in
/// the 128-byte panel layout: a[(mi * KT + ki) * 4 + j] = A(row, col..col + 1), row = wgm * Mw + mi * 64 +
/// (warp % 4) * 16 + (j % 2) * 8 + lane / 4, col = ki * 16 + (j / 2) * 8 + (lane % 4) * 2.
template <int BM, int BK, int Mw, class T>
__device__ __forceinline__ void load_a_fragments(const T *tile, int wgm, int warp, int lane, uint32_t *a) {
    constexpr int W = kSwizzle / (int)sizeof(T), KT = BK / 16;
    const unsigned char *base = reinterpret_cast<const unsigned char *>(tile);
#pragma unroll
    for (int mi = 0; mi < Mw / 64; ++mi)
#pragma unroll
        for (int ki = 0; ki < KT; ++ki)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int row = wgm * Mw + mi * 64 + (warp % 4) * 16 + (j % 2) * 8 + lane / 4;
                const int col = ki * 16 + (j / 2) * 8 + (lane % 4) * 2;
                const int byte = (col % W) * (int)sizeof(T);
                a[(mi * KT + ki) * 4 + j] = *reinterpret_cast<const uint32_t *>(
                    base + (col / W) * BM * kSwizzle + row * kSwizzle + (((byte / 16) ^ (row % 8)) * 16) + byte % 16);
            }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::Threads, Cfg::MinBlocks)
    gemm_kernel(const __grid_constant__ tilec::tensor_map mapA, const __grid_constant__ tilec::tensor_map mapB,
                typename Cfg::Out *__restrict__ C, int M, int N, int K) {
    using In = typename Cfg::In;
    using Out = typename Cfg::Out;
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::Stages, ES = (int)sizeof(In);
    extern __shared__ unsigned char smemRaw[];
    unsigned char *smem = smemRaw + ((1024 - ((unsigned)__cvta_generic_to_shared(smemRaw) & 1023)) & 1023);
    In *sA = reinterpret_cast<In *>(smem);
    In *sB = reinterpret_cast<In *>(smem + S * Cfg::ABytes);
    uint64_t *full = reinterpret_cast<uint64_t *>(smem + S * Cfg::StageBytes);
    uint64_t *empty = full + S;

    constexpr int CM = Cfg::ClusterM;
    const unsigned rank = CM > 1 ? tilec::cluster_ctarank() : 0;
    // tiles in cluster units: unit u is the CM tiles of one N column and CM consecutive M rows
    const int gx = (N + BN - 1) / BN, gyc = ((M + BM - 1) / BM + CM - 1) / CM;
    const int units = gx * gyc, firstUnit = blockIdx.x / CM, unitStride = gridDim.x / CM;
    const int kBlocks = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < S; ++s) {
            tilec::mbarrier_init(&full[s], 1);
            tilec::mbarrier_init(&empty[s], CM * Cfg::Consumers / 32);
        }
        tilec::mbarrier_init_fence();
    }
    if constexpr (CM > 1) tilec::cluster_sync();
    else __syncthreads();

    if (threadIdx.x >= Cfg::Consumers) {
        // producer warpgroup: one thread issues every TMA load
        tilec::setmaxnreg_dec<Cfg::ProducerRegs>();
        if (threadIdx.x == Cfg::Consumers) {
            int it = 0; // k-blocks loaded so far, over all tiles: the ring position and phase
            for (int u = firstUnit; u < units; u += unitStride) {
                int tx, tyc;
                tilec::rasterize(kRasterPanel, u % gx, u / gx, gx, gyc, tx, tyc);
                const int m0 = (tyc * CM + (int)rank) * BM, n0 = tx * BN;
                for (int k = 0; k < kBlocks; ++k, ++it) {
                    const int s = it % S;
                    tilec::mbarrier_wait(&empty[s], ((it / S) & 1) ^ 1);
                    tilec::mbarrier_arrive_expect_tx(&full[s], Cfg::StageBytes);
                    tilec::tma_load_tile<2, 1, BM, BK, ES, kSwizzle>(sA + s * (BM * BK), &mapA, &full[s], k * BK, m0);
                    In *b = sB + s * (BK * BN);
                    if constexpr (CM > 1) {
                        constexpr uint16_t all = (1u << CM) - 1;
                        if constexpr (Cfg::TransB)
                            tilec::tma_load_tile_multicast<2, 1, BN, BK, ES, kSwizzle, Cfg::BBoxRows, CM>(
                                b, &mapB, &full[s], all, (int)rank, k * BK, n0);
                        else
                            tilec::tma_load_tile_multicast<2, 1, BK, BN, ES, kSwizzle, Cfg::BBoxRows, CM>(
                                b, &mapB, &full[s], all, (int)rank, n0, k * BK);
                    } else if constexpr (Cfg::TransB) {
                        tilec::tma_load_tile<2, 1, BN, BK, ES, kSwizzle>(b, &mapB, &full[s], k * BK, n0);
                    } else {
                        tilec::tma_load_tile<2, 1, BK, BN, ES, kSwizzle>(b, &mapB, &full[s], n0, k * BK);
                    }
                }
            }
        }
    } else {
        tilec::setmaxnreg_inc<Cfg::ConsumerRegs>();
        const bool laneZero = (threadIdx.x & 31) == 0;
        // a stage is released to the producer of every CTA that multicasts into it
        auto release = [&](int s) {
            if (!laneZero) return;
            if constexpr (CM > 1) {
#pragma unroll
                for (int r = 0; r < CM; ++r) tilec::mbarrier_arrive_cluster(&empty[s], r);
            } else {
                tilec::mbarrier_arrive(&empty[s]);
            }
        };
        constexpr int Mw = BM / Cfg::WgM, MT = Mw / 64, nT = BN / 8;
        const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
        const int wgm = threadIdx.x / 128;
        const bool pairs = (N % 2) == 0; // rows of C are then 4-byte aligned
        float acc[Cfg::Acc];
        int it = 0;
        for (int u = firstUnit; u < units; u += unitStride) {
            int tx, tyc;
            tilec::rasterize(kRasterPanel, u % gx, u / gx, gx, gyc, tx, tyc);
            const int m0 = (tyc * CM + (int)rank) * BM, n0 = tx * BN;
            tilec::wgmma_clear<Cfg::Acc>(acc);
            for (int k = 0; k < kBlocks; ++k, ++it) {
                const int s = it % S;
                tilec::mbarrier_wait(&full[s], (it / S) & 1);
                if constexpr (Cfg::RS) {
                    uint32_t a[MT * (BK / 16) * 4];
                    load_a_fragments<BM, BK, Mw>(sA + s * (BM * BK), wgm, warp, lane, a);
                    tilec::wgmma_gemm_rs<BM, BN, BK, Cfg::WgM, 1, Cfg::TransB, kSwizzle, In>(a, sB + s * (BK * BN), acc);
                } else {
                    tilec::wgmma_gemm_ss<BM, BN, BK, Cfg::WgM, 1, false, Cfg::TransB, kSwizzle, kSwizzle, BM>(
                        sA + s * (BM * BK), sB + s * (BK * BN), acc);
                }
                if constexpr (Cfg::RS) {
                    // the A registers of this group must keep their values until it retires: the next k-block
                    // reloads them (ptxas does not protect them: with wgmma_wait<1> here the results were wrong)
                    tilec::wgmma_wait<0>();
                } else {
                    tilec::wgmma_wait<1>();
                }
                if (k > 0) release((it - 1) % S);
            }
            tilec::wgmma_wait<0, Cfg::Acc>(acc);
            release((it - 1) % S); // the last stage too: the producer refills it during the stores below

            // epilogue: acc[((mi * nT + ni) * 2 + h) * 2 + c] -> C(row, col), pairs of columns as 4-byte stores
            const int rowBase = m0 + wgm * Mw + (warp % 4) * 16 + lane / 4;
            const int colBase = n0 + (lane % 4) * 2;
#pragma unroll
            for (int mi = 0; mi < MT; ++mi) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = rowBase + mi * 64 + h * 8;
                    if (row >= M) continue;
                    Out *crow = C + (long long)row * N;
#pragma unroll
                    for (int ni = 0; ni < nT; ++ni) {
                        const int col = colBase + ni * 8;
                        const float v0 = acc[((mi * nT + ni) * 2 + h) * 2], v1 = acc[((mi * nT + ni) * 2 + h) * 2 + 1];
                        if (pairs) {
                            if (col < N) *reinterpret_cast<uint32_t *>(crow + col) = pack2<Out>(v0, v1);
                        } else {
                            if (col < N) crow[col] = from_f<Out>(v0);
                            if (col + 1 < N) crow[col + 1] = from_f<Out>(v1);
                        }
                    }
                }
            }
        }
    }
    // a peer CTA may still arrive on this CTA's barriers (or multicast into it) until every CTA is here
    if constexpr (CM > 1) tilec::cluster_sync();
}

// ------------------------------------------------------------------------------------------------ host
using EncodeTiled = CUresult (*)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                 const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/// cuTensorMapEncodeTiled through the runtime (resolved once; thread-safe static initialisation).
EncodeTiled encoder() {
    static const EncodeTiled fn = [] {
        void *p = nullptr;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            return (EncodeTiled) nullptr;
        return reinterpret_cast<EncodeTiled>(p);
    }();
    return fn;
}

template <class T> constexpr CUtensorMapDataType tmaType();
template <> constexpr CUtensorMapDataType tmaType<__half>() { return CU_TENSOR_MAP_DATA_TYPE_FLOAT16; }
template <> constexpr CUtensorMapDataType tmaType<__nv_bfloat16>() { return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; }
template <> constexpr CUtensorMapDataType tmaType<__nv_fp8_e4m3>() { return CU_TENSOR_MAP_DATA_TYPE_UINT8; }

/// The map of a row-major rows x cols matrix read in boxes of (128 bytes of columns) x boxRows, 128-byte
/// swizzle, zero fill out of bounds.
template <class T>
tilec_status encode(tilec::tensor_map &out, const void *base, int64_t rows, int64_t cols, int boxRows) {
    EncodeTiled fn = encoder();
    if (!fn) {
        lastError = cudaErrorNotSupported;
        return TILEC_ERROR_CUDA;
    }
    CUtensorMap map;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)cols * sizeof(T)};
    const cuuint32_t box[2] = {(cuuint32_t)(kSwizzle / sizeof(T)), (cuuint32_t)boxRows};
    const cuuint32_t elem[2] = {1, 1};
    CUresult r = fn(&map, tmaType<T>(), 2, const_cast<void *>(base), dims, strides, box, elem,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        lastError = cudaErrorInvalidValue;
        return TILEC_ERROR_CUDA;
    }
    static_assert(sizeof(map) == sizeof(out), "CUtensorMap and tilec::tensor_map are both 128 bytes");
    std::memcpy(&out, &map, sizeof(map));
    return TILEC_SUCCESS;
}

tilec_status fail(cudaError_t e) {
    lastError = e;
    return TILEC_ERROR_CUDA;
}

template <class Cfg>
tilec_status launch(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream) {
    using In = typename Cfg::In;
    if (!A || !B || !C) return TILEC_ERROR_NULL_ARGUMENT;
    if (m < 0 || n < 0 || k < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX) return TILEC_ERROR_BAD_SIZE;
    if (m == 0 || n == 0) return TILEC_SUCCESS;
    // TMA: 16-byte aligned bases and row pitches (the generated launcher falls back to cp.async instead)
    if (((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B)) & 15) != 0 || (k * sizeof(In)) % 16 != 0 ||
        (!Cfg::TransB && (n * sizeof(In)) % 16 != 0) || k == 0)
        return TILEC_ERROR_UNSUPPORTED;
    const int64_t gx = (n + Cfg::BN - 1) / Cfg::BN, gyc = ((m + Cfg::BM - 1) / Cfg::BM + Cfg::ClusterM - 1) / Cfg::ClusterM;
    if (gx * gyc * Cfg::ClusterM > INT_MAX) return TILEC_ERROR_BAD_SIZE;
    int device = 0, major = 0, sms = 0;
    if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return fail(e);
    if (cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device); e != cudaSuccess)
        return fail(e);
    if (major != 9) return fail(cudaErrorNoKernelImageForDevice);
    if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess)
        return fail(e);
    int64_t clusters = gx * gyc;
    if (Cfg::Persistent) clusters = std::min<int64_t>(clusters, std::max(1, sms * Cfg::MinBlocks / Cfg::ClusterM));

    tilec::tensor_map mapA, mapB;
    if (tilec_status s = encode<In>(mapA, A, m, k, Cfg::BM); s != TILEC_SUCCESS) return s;
    tilec_status s = Cfg::TransB ? encode<In>(mapB, B, n, k, Cfg::BBoxRows) : encode<In>(mapB, B, k, n, Cfg::BBoxRows);
    if (s != TILEC_SUCCESS) return s;
    auto kernel = gemm_kernel<Cfg>;
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SharedBytes);
        e != cudaSuccess)
        return fail(e);
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3((unsigned)(clusters * Cfg::ClusterM));
    config.blockDim = dim3(Cfg::Threads);
    config.dynamicSmemBytes = Cfg::SharedBytes;
    config.stream = stream;
    cudaLaunchAttribute cluster[1];
    cluster[0].id = cudaLaunchAttributeClusterDimension;
    cluster[0].val.clusterDim.x = Cfg::ClusterM;
    cluster[0].val.clusterDim.y = 1;
    cluster[0].val.clusterDim.z = 1;
    config.attrs = cluster;
    config.numAttrs = Cfg::ClusterM > 1 ? 1 : 0;
    if (cudaError_t e = cudaLaunchKernelEx(&config, kernel, mapA, mapB, static_cast<typename Cfg::Out *>(C), (int)m,
                                           (int)n, (int)k);
        e != cudaSuccess)
        return fail(e);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return fail(e);
    return TILEC_SUCCESS;
}

using F16_128x128 = Config<__half, __half, 128, 128, 64, 1, 4, false, 1>;
using F16_128x128_NT = Config<__half, __half, 128, 128, 64, 1, 4, true, 1>;
using F16_128x256 = Config<__half, __half, 128, 256, 64, 2, 4, false, 1>;
using F16_128x256_NT = Config<__half, __half, 128, 256, 64, 2, 4, true, 1>;
using F16_128x256_S3 = Config<__half, __half, 128, 256, 64, 2, 3, false, 1>;
using F16_128x128_2CTA = Config<__half, __half, 128, 128, 64, 1, 3, false, 2>;
using F16_128x256_P = Config<__half, __half, 128, 256, 64, 2, 4, false, 1, true>;
using F16_128x256_PC2 = Config<__half, __half, 128, 256, 64, 2, 4, false, 1, true, 2>;
using F16_128x256_NT_PC2 = Config<__half, __half, 128, 256, 64, 2, 4, true, 1, true, 2>;
using F16_128x128_P = Config<__half, __half, 128, 128, 64, 1, 4, false, 1, true>;
using BF16_128x256_PC2 = Config<__nv_bfloat16, __nv_bfloat16, 128, 256, 64, 2, 4, false, 1, true, 2>;
using F16_128x256_RS = Config<__half, __half, 128, 256, 64, 2, 4, false, 1, true, 1, true>;
using BF16_128x128_NT_RS = Config<__nv_bfloat16, __nv_bfloat16, 128, 128, 64, 1, 4, true, 1, true, 1, true>;
using BF16_128x128 = Config<__nv_bfloat16, __nv_bfloat16, 128, 128, 64, 1, 4, false, 1>;
using BF16_128x128_NT = Config<__nv_bfloat16, __nv_bfloat16, 128, 128, 64, 1, 4, true, 1>;
using BF16_128x256 = Config<__nv_bfloat16, __nv_bfloat16, 128, 256, 64, 2, 4, false, 1>;
using BF16_128x256_NT = Config<__nv_bfloat16, __nv_bfloat16, 128, 256, 64, 2, 4, true, 1>;
using E4M3_128x256_NT = Config<__nv_fp8_e4m3, __nv_bfloat16, 128, 256, 128, 2, 4, true, 1>;
using E4M3_128x256_NT_PC2 = Config<__nv_fp8_e4m3, __nv_bfloat16, 128, 256, 128, 2, 4, true, 1, true, 2>;

} // namespace

extern "C" {

const char *tilec_status_string(tilec_status status) {
    switch (status) {
    case TILEC_SUCCESS: return "success";
    case TILEC_ERROR_NULL_ARGUMENT: return "a tensor pointer is null";
    case TILEC_ERROR_BAD_SIZE: return "a size is negative or too large";
    case TILEC_ERROR_CUDA: return "CUDA error (see tilec_last_cuda_error)";
    case TILEC_ERROR_UNSUPPORTED: return "TMA needs 16-byte aligned tensors and rows, and k > 0";
    }
    return "unknown status";
}

cudaError_t tilec_last_cuda_error(void) { return lastError; }

#define HOPPER_GEMM_ENTRY(NAME, CFG)                                                                           \
    tilec_status NAME(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream) { \
        return launch<CFG>(A, B, C, m, n, k, stream);                                                          \
    }                                                                                                          \
    int NAME##_threads(int sm) { return sm == 90 ? CFG::Threads : 0; }                                         \
    size_t NAME##_shared_bytes(int sm) { return sm == 90 ? (size_t)CFG::SharedBytes : 0; }

HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x128, F16_128x128)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x128_nt, F16_128x128_NT)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x256, F16_128x256)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x256_nt, F16_128x256_NT)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x256_s3, F16_128x256_S3)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x128_2cta, F16_128x128_2CTA)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x256_p, F16_128x256_P)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x256_pc2, F16_128x256_PC2)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x256_nt_pc2, F16_128x256_NT_PC2)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x128_p, F16_128x128_P)
HOPPER_GEMM_ENTRY(hopper_gemm_bf16_128x256_pc2, BF16_128x256_PC2)
HOPPER_GEMM_ENTRY(hopper_gemm_f16_128x256_rs, F16_128x256_RS)
HOPPER_GEMM_ENTRY(hopper_gemm_bf16_128x128_nt_rs, BF16_128x128_NT_RS)
HOPPER_GEMM_ENTRY(hopper_gemm_bf16_128x128, BF16_128x128)
HOPPER_GEMM_ENTRY(hopper_gemm_bf16_128x128_nt, BF16_128x128_NT)
HOPPER_GEMM_ENTRY(hopper_gemm_bf16_128x256, BF16_128x256)
HOPPER_GEMM_ENTRY(hopper_gemm_bf16_128x256_nt, BF16_128x256_NT)
HOPPER_GEMM_ENTRY(hopper_gemm_e4m3_128x256_nt, E4M3_128x256_NT)
HOPPER_GEMM_ENTRY(hopper_gemm_e4m3_128x256_nt_pc2, E4M3_128x256_NT_PC2)

} // extern "C"
