// Issue 27's launch-cost benchmark: µs per launch of a small TMA GEMM and of a small element-wise kernel,
// each through its generated launch function and bare (<<<>>> with arguments built once), 50 000 launches
// each. Compiled by launch_cost.sh with the generated launch_cost.cu included (one translation unit, so the
// kernels' file-local symbols are in reach: TMA_KERNEL and ADD_KERNEL name them).
//
// Two numbers per row: "loop" = the wall time of N launches and one final synchronization, over N (what a
// decode loop sees; bounded below by the kernel's own time on the GPU); "host" = the time of the calls alone,
// issued in batches of 128 with a synchronization between batches that is not counted (the launch queue
// never fills, so the GPU never pushes back). It also checks that both launches compute the same product
// (and the reference), and that a launch captured in a CUDA graph keeps its own tensor maps after the launch
// function has been called with other pointers.
#include GENERATED

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                                             \
    do {                                                                                                     \
        cudaError_t e_ = (x);                                                                                \
        if (e_ != cudaSuccess) {                                                                             \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
            std::exit(1);                                                                                    \
        }                                                                                                    \
    } while (0)
#define CHECK_TILEC(x)                                                                                       \
    do {                                                                                                     \
        tilec_status s_ = (x);                                                                               \
        if (s_ != TILEC_SUCCESS) {                                                                           \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, tilec_status_string(s_));       \
            std::exit(1);                                                                                    \
        }                                                                                                    \
    } while (0)

namespace {

constexpr int M = 128, N = 128, K = 256;   // gemm_small in launch_cost.tile
constexpr int AM = 64, AN = 256;           // add_small
constexpr int kLaunches = 50000, kBatch = 128;

double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F> void timeLaunches(const char *name, cudaStream_t stream, F launch) {
    for (int i = 0; i < 2000; ++i) launch();
    CHECK(cudaStreamSynchronize(stream));
    double t0 = now_us();
    for (int i = 0; i < kLaunches; ++i) launch();
    CHECK(cudaStreamSynchronize(stream));
    const double loop = (now_us() - t0) / kLaunches;
    double host = 0;
    for (int b = 0; b < kLaunches / kBatch; ++b) {
        t0 = now_us();
        for (int i = 0; i < kBatch; ++i) launch();
        host += now_us() - t0;
        CHECK(cudaStreamSynchronize(stream));
    }
    host /= (kLaunches / kBatch) * kBatch;
    CHECK(cudaGetLastError());
    std::printf("%-44s loop %7.3f us/launch   host %7.3f us/call\n", name, loop, host);
}

/// One tensor map as gemm_small's launcher encodes it (2-D float16, 64x64 boxes, 128-byte swizzle).
tilec::tensor_map encode(const void *base, cuuint64_t inner, cuuint64_t outer) {
    tilec_map_cache cache;
    std::memset(&cache, 0, sizeof cache);
    CUtensorMap map;
    const cuuint64_t dims[] = {inner, outer}, strides[] = {inner * 2};
    const cuuint32_t box[] = {64, 64};
    CHECK_TILEC(tilec_encode_tiled(&cache, &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base, dims, strides, box,
                                   CU_TENSOR_MAP_SWIZZLE_128B));
    tilec::tensor_map t;
    std::memcpy(&t, &map, sizeof t);
    return t;
}

bool sameAsReference(const std::vector<__half> &a, const std::vector<__half> &b, const __half *dc, const char *what) {
    std::vector<__half> c((size_t)M * N);
    CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(__half), cudaMemcpyDeviceToHost));
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double ref = 0;
            for (int k = 0; k < K; ++k) ref += (double)__half2float(a[(size_t)i * K + k]) * __half2float(b[(size_t)k * N + j]);
            const double got = __half2float(c[(size_t)i * N + j]);
            if (std::fabs(got - ref) > 1e-2 + 1e-2 * std::fabs(ref)) {
                std::printf("%s: C[%d, %d] = %g, reference %g: FAIL\n", what, i, j, got, ref);
                return false;
            }
        }
    return true;
}

} // namespace

int main() {
    int dev = 0, major = 0, minor = 0, sms = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const int sm = major * 10 + minor;
    if (sm != 90) {
        std::printf("launch_cost: needs an sm_90 device (this is sm_%d): SKIP\n", sm);
        return 0;
    }
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<__half> a((size_t)M * K), b((size_t)K * N);
    for (size_t i = 0; i < a.size(); ++i) a[i] = __float2half((float)((i * 7 + 3) % 17) / 17.0f - 0.5f);
    for (size_t i = 0; i < b.size(); ++i) b[i] = __float2half((float)((i * 5 + 1) % 13) / 13.0f - 0.5f);
    __half *dA, *dB, *dC, *dC2, *x, *y, *z;
    CHECK(cudaMalloc(&dA, a.size() * sizeof(__half)));
    CHECK(cudaMalloc(&dB, b.size() * sizeof(__half)));
    CHECK(cudaMalloc(&dC, (size_t)M * N * sizeof(__half)));
    CHECK(cudaMalloc(&dC2, (size_t)M * N * sizeof(__half)));
    CHECK(cudaMalloc(&x, (size_t)AM * AN * sizeof(__half)));
    CHECK(cudaMalloc(&y, (size_t)AM * AN * sizeof(__half)));
    CHECK(cudaMalloc(&z, (size_t)AM * AN * sizeof(__half)));
    CHECK(cudaMemcpy(dA, a.data(), a.size() * sizeof(__half), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, b.data(), b.size() * sizeof(__half), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(x, 0, (size_t)AM * AN * sizeof(__half)));
    CHECK(cudaMemset(y, 0, (size_t)AM * AN * sizeof(__half)));

    // The bare launch of the TMA kernel: its maps encoded once, its shared memory raised once.
    const int threads = gemm_small_threads(sm);
    const size_t shared = gemm_small_shared_bytes(sm);
    CHECK_TILEC(gemm_small_load());
    CHECK(cudaFuncSetAttribute(TMA_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    const tilec::tensor_map mA = encode(dA, K, M), mB = encode(dB, N, K), mC = encode(dC, N, M);
    const int tiles = (M / 64) * (N / 64), blocks = tiles < 2 * sms ? tiles : 2 * sms;
    auto bareGemm = [&] { TMA_KERNEL<<<blocks, threads, shared, stream>>>(dA, dB, dC, mA, mB, mC); };
    auto tilecGemm = [&] { CHECK_TILEC(gemm_small(dA, dB, dC, stream)); };

    bool ok = true;
    CHECK(cudaMemset(dC, 0, (size_t)M * N * sizeof(__half)));
    bareGemm();
    CHECK(cudaStreamSynchronize(stream));
    ok &= sameAsReference(a, b, dC, "bare launch");
    CHECK(cudaMemset(dC, 0, (size_t)M * N * sizeof(__half)));
    tilecGemm();
    CHECK(cudaStreamSynchronize(stream));
    ok &= sameAsReference(a, b, dC, "launch function");

    // Graph capture: the captured launch keeps the maps of its call (C), whatever later calls encode (C2).
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CHECK_TILEC(gemm_small(dA, dB, dC, stream));
    CHECK(cudaStreamEndCapture(stream, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_TILEC(gemm_small(dA, dB, dC2, stream));
    CHECK(cudaMemset(dC, 0, (size_t)M * N * sizeof(__half)));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    ok &= sameAsReference(a, b, dC, "graph replay after a call with another C");
    ok &= sameAsReference(a, b, dC2, "the call with another C");
    std::printf("correctness (bare, launch function, graph capture): %s\n", ok ? "PASS" : "FAIL");

    std::printf("%d launches each, %d SMs\n", kLaunches, sms);
    timeLaunches("TMA GEMM (gemm_small), bare <<<>>>", stream, bareGemm);
    timeLaunches("TMA GEMM (gemm_small), launch function", stream, tilecGemm);
    bool flip = false;
    timeLaunches("TMA GEMM, launch function, C alternating", stream, [&] {
        flip = !flip;
        CHECK_TILEC(gemm_small(dA, dB, flip ? dC : dC2, stream));
    });
    const int addThreads = add_small_threads(sm);
    const dim3 addGrid((AN + 255) / 256, (AM + 31) / 32);
    timeLaunches("element-wise (add_small), bare <<<>>>", stream, [&] { ADD_KERNEL<<<addGrid, addThreads, 0, stream>>>(x, y, z); });
    timeLaunches("element-wise (add_small), launch function", stream, [&] { CHECK_TILEC(add_small(x, y, z, stream)); });
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    return ok ? 0 : 1;
}
