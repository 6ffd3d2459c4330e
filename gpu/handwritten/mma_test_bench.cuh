/// \file
/// `mma_test bench`: gemm_ss in a loop on tiles that stay in shared memory (no global traffic, no
/// pipeline), so the figure is the ceiling of the fragment loads plus mma.sync that T.gemm lowers to.
/// Included at the end of mma_test.cu.
#pragma once

namespace mma_bench {

/// Every block fills its tiles once, then runs `iters` gemms of M x N x K into the same accumulators.
template <int M, int N, int K, int WM, int WN, bool TrA, bool TrB, class TA, class TB, class TC>
__global__ void __launch_bounds__(32 * WM * WN) bench_ss_kernel(int iters, TC *out) {
    extern __shared__ __align__(128) unsigned char smem[];
    TA *As = reinterpret_cast<TA *>(smem);
    TB *Bs = reinterpret_cast<TB *>(smem + M * K * sizeof(TA));
    for (int i = threadIdx.x; i < M * K; i += blockDim.x)
        As[i] = cast<TA>((i % 7) - 3);
    for (int i = threadIdx.x; i < N * K; i += blockDim.x)
        Bs[i] = cast<TB>((i % 5) - 2);
    __syncthreads();
    constexpr int Regs = (M / WM / 16) * (N / WN / 8) * 4;
    TC acc[Regs];
#pragma unroll
    for (int i = 0; i < Regs; ++i)
        acc[i] = cast<TC>(0);
    if constexpr (mma_test::kDeviceHasFp8 || !(is_fp8<TA>::value || is_fp8<TB>::value)) {
        for (int it = 0; it < iters; ++it)
            gemm_ss<M, N, K, WM, WN, TrA, TrB>(As, Bs, acc);
    }
    float s = 0;
#pragma unroll
    for (int i = 0; i < Regs; ++i)
        s += cast<float>(acc[i]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = cast<TC>(s);
}

/// The same for gemm_rs, A in registers (a constant fragment).
template <int M, int N, int K, int WM, bool TrB, class T, class TC>
__global__ void __launch_bounds__(32 * WM) bench_rs_kernel(int iters, TC *out) {
    extern __shared__ __align__(128) unsigned char smem[];
    T *Bs = reinterpret_cast<T *>(smem);
    for (int i = threadIdx.x; i < N * K; i += blockDim.x)
        Bs[i] = cast<T>((i % 5) - 2);
    __syncthreads();
    constexpr int ARegs = (M / WM / 16) * (K / 8) * 4, Regs = (M / WM / 16) * (N / 8) * 4;
    T a[ARegs];
#pragma unroll
    for (int i = 0; i < ARegs; ++i)
        a[i] = cast<T>((int)(threadIdx.x + i) % 3 - 1);
    TC acc[Regs];
#pragma unroll
    for (int i = 0; i < Regs; ++i)
        acc[i] = cast<TC>(0);
    for (int it = 0; it < iters; ++it)
        gemm_rs<M, N, K, WM, 1, TrB>(a, Bs, acc);
    float s = 0;
#pragma unroll
    for (int i = 0; i < Regs; ++i)
        s += cast<float>(acc[i]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = cast<TC>(s);
}

/// Launches `kern` on enough blocks for several waves, times it with events and prints TFLOP/s (TOP/s for
/// integers): 2 * M * N * K per gemm.
template <class TC, class Kernel>
void time_kernel(const char *name, Kernel kern, int threads, int shared, double flopPerGemm) {
    cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    int sms = 0, perSm = 0, dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kern, threads, shared);
    if (perSm <= 0) {
        std::printf("BENCH %-44s does not fit on an SM\n", name);
        return;
    }
    const int blocks = sms * perSm * 4, iters = 1000;
    mma_test::DevBuf<TC> out((size_t)blocks * threads);
    kern<<<blocks, threads, shared>>>(10, out.p); // warm-up
    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    cudaEventRecord(t0);
    kern<<<blocks, threads, shared>>>(iters, out.p);
    cudaEventRecord(t1);
    cudaEventSynchronize(t1);
    float ms = 0;
    cudaEventElapsedTime(&ms, t0, t1);
    if (!mma_test::last_error_ok())
        return;
    const double tflops = flopPerGemm * iters * blocks / (ms * 1e-3) / 1e12;
    std::printf("BENCH %-44s %4d blocks x %3d threads (%d/SM)  %8.1f T%sOP/s\n", name, blocks, threads, perSm,
                tflops, std::is_integral<TC>::value ? "" : "FL");
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
}

template <int M, int N, int K, int WM, int WN, bool TrA, bool TrB, class TA, class TB, class TC>
void bench_ss(const char *name) {
    time_kernel<TC>(name, bench_ss_kernel<M, N, K, WM, WN, TrA, TrB, TA, TB, TC>, 32 * WM * WN,
                    (M + N) * K * (int)sizeof(TA), 2.0 * M * N * K);
}

template <int M, int N, int K, int WM, bool TrB, class T, class TC> void bench_rs(const char *name) {
    time_kernel<TC>(name, bench_rs_kernel<M, N, K, WM, TrB, T, TC>, 32 * WM, N * K * (int)sizeof(T),
                    2.0 * M * N * K);
}

} // namespace mma_bench

int run_bench(const mma_test::Summary &sum) {
    using namespace mma_bench;
    bench_ss<128, 128, 64, 2, 2, false, true, __half, __half, float>("gemm_ss f16->f32 NT 128x128x64 w2x2");
    bench_ss<128, 128, 64, 2, 2, false, false, __half, __half, float>("gemm_ss f16->f32 NN 128x128x64 w2x2");
    bench_ss<128, 128, 64, 2, 2, true, false, __half, __half, float>("gemm_ss f16->f32 TN 128x128x64 w2x2");
    bench_ss<128, 128, 64, 2, 4, false, false, __half, __half, float>("gemm_ss f16->f32 NN 128x128x64 w2x4");
    bench_ss<128, 128, 64, 4, 2, false, false, __half, __half, float>("gemm_ss f16->f32 NN 128x128x64 w4x2");
    bench_ss<128, 256, 32, 2, 4, false, false, __half, __half, float>("gemm_ss f16->f32 NN 128x256x32 w2x4");
    bench_ss<128, 128, 64, 2, 2, false, false, __nv_bfloat16, __nv_bfloat16, float>(
        "gemm_ss bf16->f32 NN 128x128x64 w2x2");
    bench_ss<128, 128, 64, 2, 2, false, false, __half, __half, __half>("gemm_ss f16->f16 NN 128x128x64 w2x2");
    bench_ss<128, 128, 32, 2, 2, false, true, float, float, float>("gemm_ss tf32 NT 128x128x32 w2x2");
    bench_ss<128, 128, 32, 2, 2, false, false, float, float, float>("gemm_ss tf32 NN 128x128x32 w2x2");
    bench_ss<128, 128, 64, 2, 2, false, true, int8_t, int8_t, int32_t>("gemm_ss s8->s32 NT 128x128x64 w2x2");
    bench_ss<128, 128, 64, 2, 2, false, false, int8_t, int8_t, int32_t>("gemm_ss s8->s32 NN 128x128x64 w2x2");
    if (sum.arch >= 890)
        bench_ss<128, 128, 64, 2, 2, false, true, __nv_fp8_e4m3, __nv_fp8_e4m3, float>(
            "gemm_ss e4m3->f32 NT 128x128x64 w2x2");
    bench_rs<128, 128, 64, 4, false, __half, float>("gemm_rs f16->f32 N 128x128x64 w4x1");
    bench_rs<128, 128, 64, 8, false, __half, float>("gemm_rs f16->f32 N 128x128x64 w8x1");
    return mma_test::last_error_ok() ? 0 : 1;
}
