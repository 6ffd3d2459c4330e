/// \file
/// The Hopper device library (stdlib/tilec/sm90_*.cuh) instantiated the ways generated code will use it:
/// every wgmma type family, both majors of the 16-bit types, several swizzles, N split into instructions,
/// two warpgroups along M and along N, the sparse form (T.gemm_sp); the mbarrier / TMA / setmaxnreg calls of a producer and a consumer.
/// Compiled (never run) for sm_80, sm_90 and sm_90a after every stdlib file (tests/gpu/CMakeLists.txt
/// writes the includes), and its sm_90a cubin checked by check_hopper_sass.sh: no wgmma serialization, no
/// spills. tests/unit/DeviceCompilerTest.cpp compiles the same file through NVRTC. Clusters and multicast too.

template <int M, int N, int K, int WgM, int WgN, bool TA_, bool TB_, int SA, int SB, class TA, class TB, class TC>
__global__ void __launch_bounds__(128 * WgM * WgN, 1) gemm_probe(TC *out, int kBlocks) {
    extern __shared__ __align__(1024) unsigned char smem[];
    constexpr int C = tilec::wgmma_acc_count<M, N, WgM, WgN>();
    alignas(4) TC acc[C]; // __half accumulators are read in 32-bit pairs
    tilec::wgmma_clear<C>(acc);
    for (int k = 0; k < kBlocks; ++k) {
        tilec::wgmma_gemm_ss<M, N, K, WgM, WgN, TA_, TB_, SA, SB, M>(reinterpret_cast<const TA *>(smem),
                                                                  reinterpret_cast<const TB *>(smem + 65536), acc);
        tilec::wgmma_wait<1>();
    }
    tilec::wgmma_wait<0, C>(acc);
#pragma unroll
    for (int i = 0; i < C; ++i) out[threadIdx.x * C + i] = acc[i];
}

// 16-bit, both majors, 128/64/32-byte swizzles, warpgroups along M and N, odd widths (192 = 128 + 64, 96, 248)
template __global__ void gemm_probe<128, 256, 64, 2, 1, false, false, 128, 128, __half, __half, float>(float *, int);
template __global__ void gemm_probe<128, 128, 64, 1, 1, false, true, 128, 128, __nv_bfloat16, __nv_bfloat16, float>(float *, int);
template __global__ void gemm_probe<64, 192, 64, 1, 1, true, false, 64, 128, __half, __half, float>(float *, int);
template __global__ void gemm_probe<64, 96, 32, 1, 1, true, false, 32, 64, __half, __half, __half>(__half *, int);
template __global__ void gemm_probe<64, 256, 64, 1, 2, false, false, 128, 128, __half, __half, float>(float *, int);
// K-major only: tf32, float8 (mixed), int8 (mixed signedness)
template __global__ void gemm_probe<64, 248, 32, 1, 1, false, true, 128, 128, float, float, float>(float *, int);
template __global__ void gemm_probe<128, 128, 128, 1, 1, false, true, 128, 128, __nv_fp8_e4m3, __nv_fp8_e5m2, float>(float *, int);
template __global__ void gemm_probe<64, 64, 64, 1, 1, false, true, 64, 64, int8_t, uint8_t, int32_t>(int32_t *, int);

/// wgmma_gemm_ss_init: each block's product overwrites the accumulators (scale-d 0 in its first k-step, no
/// clear), as attention's QK^T each key block; the same products accumulating after it.
template <int M, int N, int K, int WgM, int WgN, bool TA_, bool TB_, int SA, int SB, class TA, class TB, class TC>
__global__ void __launch_bounds__(128 * WgM * WgN, 1) gemm_init_probe(TC *out, int kBlocks) {
    extern __shared__ __align__(1024) unsigned char smem[];
    constexpr int C = tilec::wgmma_acc_count<M, N, WgM, WgN>();
    alignas(4) TC acc[C];
    TC sum = TC(0);
    for (int k = 0; k < kBlocks; ++k) {
        tilec::wgmma_gemm_ss_init<M, N, K, WgM, WgN, TA_, TB_, SA, SB, M>(reinterpret_cast<const TA *>(smem),
                                                                       reinterpret_cast<const TB *>(smem + 65536), acc);
        tilec::wgmma_gemm_ss<M, N, K, WgM, WgN, TA_, TB_, SA, SB, M>(reinterpret_cast<const TA *>(smem),
                                                                  reinterpret_cast<const TB *>(smem + 65536), acc);
        tilec::wgmma_wait<0, C>(acc);
#pragma unroll
        for (int i = 0; i < C; ++i) sum += acc[i];
    }
    out[threadIdx.x] = sum;
}

template __global__ void gemm_init_probe<128, 128, 64, 2, 1, false, true, 128, 128, __half, __half, float>(float *, int);
template __global__ void gemm_init_probe<64, 64, 64, 1, 1, false, true, 64, 64, __nv_fp8_e4m3, __nv_fp8_e4m3, float>(float *, int);

/// A's descriptor made once before the loop (wgmma_a_descriptor, what tilec hoists for attention's Q) and passed to
/// both overwriting and accumulating products of the loop.
template <int M, int N, int K, int WgM, int WgN, bool TA_, bool TB_, int SA, int SB, class TA, class TB, class TC>
__global__ void __launch_bounds__(128 * WgM * WgN, 1) gemm_hoisted_probe(TC *out, int kBlocks) {
    extern __shared__ __align__(1024) unsigned char smem[];
    constexpr int C = tilec::wgmma_acc_count<M, N, WgM, WgN>();
    alignas(4) TC acc[C];
    TC sum = TC(0);
    const TA *a = reinterpret_cast<const TA *>(smem);
    const tilec::wgmma_a_operand da = tilec::wgmma_a_descriptor<M, N, K, WgM, WgN, TA_, TB_, SA, SB>(a);
    for (int k = 0; k < kBlocks; ++k) {
        const TB *b = reinterpret_cast<const TB *>(smem + 65536 + (k % 2) * 32768);
        tilec::wgmma_gemm_ss_init<M, N, K, WgM, WgN, TA_, TB_, SA, SB, M>(a, b, acc, da);
        tilec::wgmma_gemm_ss<M, N, K, WgM, WgN, TA_, TB_, SA, SB, M>(a, b, acc, da);
        tilec::wgmma_wait<0, C>(acc);
#pragma unroll
        for (int i = 0; i < C; ++i) sum += acc[i];
    }
    out[threadIdx.x] = sum;
}

template __global__ void gemm_hoisted_probe<128, 128, 128, 2, 1, false, true, 128, 128, __half, __half, float>(float *, int);
template __global__ void gemm_hoisted_probe<64, 128, 64, 1, 2, true, false, 128, 128, __nv_bfloat16, __nv_bfloat16, float>(float *, int);

/// A producer warpgroup loading one stage by TMA for a consumer warpgroup.
__global__ void __launch_bounds__(256, 1) pipeline_probe(const __grid_constant__ tilec::tensor_map map, int x, int y,
                                                         int *out) {
    __shared__ alignas(1024) unsigned char tile[2][128 * 64 * 2];
    __shared__ alignas(8) uint64_t full[2], empty[2];
    if (threadIdx.x == 0) {
        for (int s = 0; s < 2; ++s) {
            tilec::mbarrier_init(&full[s], 1);
            tilec::mbarrier_init(&empty[s], 4);
        }
        tilec::mbarrier_init_fence();
    }
    __syncthreads();
    if (threadIdx.x >= 128) {
        tilec::setmaxnreg_dec<40>();
        if (threadIdx.x < 160 && tilec::elect_one()) {
            for (int k = 0; k < 4; ++k) {
                tilec::mbarrier_wait(&empty[k % 2], ((k / 2) & 1) ^ 1);
                tilec::mbarrier_arrive_expect_tx(&full[k % 2], sizeof tile[0]);
                tilec::tma_load_tile<2, 1, 64, 128, 2, 128>(tile[k % 2], &map, &full[k % 2], x, y + 64 * k);
            }
        }
    } else {
        tilec::setmaxnreg_inc<232>();
        int sum = 0;
        for (int k = 0; k < 4; ++k) {
            tilec::mbarrier_wait(&full[k % 2], (k / 2) & 1);
            sum += tile[k % 2][threadIdx.x];
            tilec::named_barrier_sync(1, 128);
            if ((threadIdx.x & 31) == 0) tilec::mbarrier_arrive(&empty[k % 2]);
        }
        tilec::fence_proxy_async_shared();
        out[threadIdx.x] = sum;
    }
}

/// Two CTAs of a cluster sharing a tile by TMA multicast, releasing it on both CTAs' empty barriers. The
/// cluster shape is given at launch (cudaLaunchAttributeClusterDimension): __cluster_dims__ does not compile
/// for sm_80, and the same text is compiled for every target.
__global__ void __launch_bounds__(256, 1)
    cluster_probe(const __grid_constant__ tilec::tensor_map map, int x, int y, int *out) {
    __shared__ alignas(1024) unsigned char tile[256 * 64 * 2];
    __shared__ alignas(8) uint64_t full, empty;
    const unsigned rank = tilec::cluster_ctarank();
    if (threadIdx.x == 0) {
        tilec::mbarrier_init(&full, 1);
        tilec::mbarrier_init(&empty, 2 * 4);
        tilec::mbarrier_init_fence();
    }
    tilec::cluster_sync();
    if (threadIdx.x >= 128) {
        tilec::setmaxnreg_dec<40>();
        if (threadIdx.x == 128) {
            tilec::mbarrier_wait(&empty, 1);
            tilec::mbarrier_arrive_expect_tx(&full, sizeof tile);
            tilec::tma_load_tile_multicast<2, 1, 256, 64, 2, 128, 128, 2>(tile, &map, &full, 3, (int)rank, x, y);
        }
    } else {
        tilec::setmaxnreg_inc<232>();
        tilec::mbarrier_wait(&full, 0);
        out[threadIdx.x] = tile[threadIdx.x];
        if ((threadIdx.x & 31) == 0)
            for (unsigned r = 0; r < 2; ++r) tilec::mbarrier_arrive_cluster(&empty, r);
    }
    tilec::cluster_sync();
}

/// A from registers (RS): the previous product's accumulators packed in pairs become A (attention's P V).
template <int M, int N, int K, int WgM, int WgN, bool TB_, int SB, class T, class TC>
__global__ void __launch_bounds__(128 * WgM * WgN, 1) gemm_rs_probe(const uint32_t *in, TC *out, int kBlocks) {
    extern __shared__ __align__(1024) unsigned char smem[];
    constexpr int C = tilec::wgmma_acc_count<M, N, WgM, WgN>();
    constexpr int A = (M / WgM / 64) * (K / 16) * 4;
    uint32_t a[A];
#pragma unroll
    for (int i = 0; i < A; ++i) a[i] = in[threadIdx.x * A + i];
    alignas(4) TC acc[C]; // __half accumulators are read in 32-bit pairs
    tilec::wgmma_clear<C>(acc);
    for (int k = 0; k < kBlocks; ++k) {
        tilec::wgmma_gemm_rs<M, N, K, WgM, WgN, TB_, SB, T>(a, reinterpret_cast<const T *>(smem), acc);
        tilec::wgmma_wait<1>();
    }
    tilec::wgmma_wait<0, C>(acc);
#pragma unroll
    for (int i = 0; i < C; ++i) out[threadIdx.x * C + i] = acc[i];
}
template __global__ void gemm_rs_probe<128, 256, 64, 2, 1, false, 128, __half, float>(const uint32_t *, float *, int);
template __global__ void gemm_rs_probe<64, 128, 64, 1, 1, true, 128, __nv_bfloat16, float>(const uint32_t *, float *, int);
template __global__ void gemm_rs_probe<64, 64, 32, 1, 1, false, 64, __half, __half>(const uint32_t *, __half *, int);

/// T.gemm_sp on wgmma.mma_async.sp (sm90_wgmma_sp.cuh): the compressed A and B panel tiles, the metadata tile read
/// into registers before the fence; two warpgroups along M (n256), one with B K-major, two along N.
template <int M, int N, int K, int WgM, int WgN, bool TB_, int SA, int SB, class T>
__global__ void __launch_bounds__(128 * WgM * WgN, 1) gemm_sp_probe(float *out, int kBlocks) {
    extern __shared__ __align__(1024) unsigned char smem[];
    constexpr int C = tilec::wgmma_acc_count<M, N, WgM, WgN>();
    float acc[C];
    tilec::wgmma_clear<C>(acc);
    for (int k = 0; k < kBlocks; ++k) {
        tilec::wgmma_sp_gemm_ss<M, N, K, WgM, WgN, TB_, SA, SB>(reinterpret_cast<const T *>(smem),
                                                              reinterpret_cast<const int16_t *>(smem + 32768),
                                                              reinterpret_cast<const T *>(smem + 65536), acc);
        tilec::wgmma_wait<0>();
    }
    tilec::wgmma_wait<0, C>(acc);
#pragma unroll
    for (int i = 0; i < C; ++i) out[threadIdx.x * C + i] = acc[i];
}
template __global__ void gemm_sp_probe<128, 256, 128, 2, 1, false, 128, 128, __half>(float *, int);
template __global__ void gemm_sp_probe<64, 128, 64, 1, 1, true, 64, 128, __nv_bfloat16>(float *, int);
template __global__ void gemm_sp_probe<64, 128, 32, 1, 2, true, 32, 64, __half>(float *, int);

// The GEMM epilogue (sm90_store.cuh): one warpgroup's 64 x 128 accumulators through two 64 x 64 staging
// pieces, stmatrix then a TMA store each, the second piece's buffer waited for as StageEpilogue does.
template <class TO, class TC>
__global__ void __launch_bounds__(128, 1) epilogue_probe(const __grid_constant__ tilec::tensor_map map, int x, int y) {
    extern __shared__ __align__(1024) unsigned char smem[];
    alignas(4) TC acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = (TC)(float)(threadIdx.x + i);
    TO *stage = reinterpret_cast<TO *>(smem);
#pragma unroll
    for (int p = 0; p < 2; ++p) {
        if (threadIdx.x == 0) tilec::tma_store_wait(p == 0 ? 0 : 1);
        tilec::named_barrier_sync(2, 128);
        tilec::stmatrix_tile<64, 128>(stage + p * 4096, acc + p * 32);
        tilec::fence_proxy_async_shared();
        tilec::named_barrier_sync(2, 128);
        if (threadIdx.x == 0) tilec::tma_store_tile<64, 64, 2, 128>(stage + p * 4096, &map, x + 64 * p, y);
    }
    if (threadIdx.x == 0) tilec::tma_store_wait(0);
}
template __global__ void epilogue_probe<__half, float>(const __grid_constant__ tilec::tensor_map, int, int);
template __global__ void epilogue_probe<__nv_bfloat16, float>(const __grid_constant__ tilec::tensor_map, int, int);
template __global__ void epilogue_probe<__half, __half>(const __grid_constant__ tilec::tensor_map, int, int);
