/// \file
/// A float16 element-wise add written by hand in the C interface of docs/INTERFACE.md (see hand_add.h). The GPU
/// harness tests it first, through the same path as the generated elementwise_add, so a failure there is the
/// harness's fault, not the compiler's; its benchmark shows what a plain vectorized kernel reaches against the
/// copy bandwidth on the same machine.
#include "hand_add.h"

#include <cuda_fp16.h>

#include <climits>

namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;      // halves per 16-byte access
constexpr int kUnroll = 2;   // 16-byte accesses per thread: two loads of each input in flight

thread_local cudaError_t lastError = cudaSuccess;

/// Main body over whole 16-byte vectors; the few trailing elements go to addTail.
__global__ void __launch_bounds__(kThreads) addVec(const uint4 *__restrict__ a, const uint4 *__restrict__ b,
                                                   uint4 *__restrict__ c, int64_t nvec) {
    int64_t base = (int64_t(blockIdx.x) * kThreads * kUnroll) + threadIdx.x;
    uint4 va[kUnroll], vb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
        int64_t i = base + int64_t(u) * kThreads;
        if (i < nvec) {
            va[u] = a[i];
            vb[u] = b[i];
        }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
        int64_t i = base + int64_t(u) * kThreads;
        if (i < nvec) {
            uint4 r;
            const __half2 *x = reinterpret_cast<const __half2 *>(&va[u]);
            const __half2 *y = reinterpret_cast<const __half2 *>(&vb[u]);
            __half2 *z = reinterpret_cast<__half2 *>(&r);
#pragma unroll
            for (int k = 0; k < 4; ++k) z[k] = __hadd2(x[k], y[k]);
            c[i] = r;
        }
    }
}

/// Element by element from `first`: the tail after the vectors, or everything when a pointer is misaligned.
__global__ void __launch_bounds__(kThreads) addScalar(const __half *__restrict__ a, const __half *__restrict__ b,
                                                      __half *__restrict__ c, int64_t first, int64_t n) {
    int64_t i = first + int64_t(blockIdx.x) * kThreads + threadIdx.x;
    if (i < n) c[i] = __hadd(a[i], b[i]);
}

tilec_status fail(cudaError_t e) {
    lastError = e;
    return TILEC_ERROR_CUDA;
}

tilec_status launch(const void *A, const void *B, void *C, int64_t m, int64_t n, cudaStream_t stream) {
    if (!A || !B || !C) return TILEC_ERROR_NULL_ARGUMENT;
    if (m < 0 || n < 0 || (n > 0 && m > INT64_MAX / n)) return TILEC_ERROR_BAD_SIZE;
    int64_t total = m * n;
    if (total == 0) return TILEC_SUCCESS;
    bool aligned = ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) |
                     reinterpret_cast<uintptr_t>(C)) & 15) == 0;
    int64_t nvec = aligned ? total / kVec : 0;
    int64_t first = nvec * kVec;
    if (nvec > 0) {
        int64_t blocks = (nvec + int64_t(kThreads) * kUnroll - 1) / (int64_t(kThreads) * kUnroll);
        if (blocks > INT_MAX) return TILEC_ERROR_BAD_SIZE;
        addVec<<<unsigned(blocks), kThreads, 0, stream>>>(static_cast<const uint4 *>(A),
                                                          static_cast<const uint4 *>(B), static_cast<uint4 *>(C),
                                                          nvec);
        if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return fail(e);
    }
    if (first < total) {
        int64_t blocks = (total - first + kThreads - 1) / kThreads;
        if (blocks > INT_MAX) return TILEC_ERROR_BAD_SIZE;
        addScalar<<<unsigned(blocks), kThreads, 0, stream>>>(static_cast<const __half *>(A),
                                                             static_cast<const __half *>(B),
                                                             static_cast<__half *>(C), first, total);
        if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return fail(e);
    }
    return TILEC_SUCCESS;
}

} // namespace

extern "C" {

const char *tilec_status_string(tilec_status status) {
    switch (status) {
    case TILEC_SUCCESS: return "success";
    case TILEC_ERROR_NULL_ARGUMENT: return "a tensor pointer is null";
    case TILEC_ERROR_BAD_SIZE: return "a size is negative or too large";
    case TILEC_ERROR_CUDA: return "CUDA error (see tilec_last_cuda_error)";
    }
    return "unknown status";
}

cudaError_t tilec_last_cuda_error(void) { return lastError; }

tilec_status add_8192(const void *A, const void *B, void *C, cudaStream_t stream) {
    return launch(A, B, C, 8192, 8192, stream);
}
int add_8192_threads(int) { return kThreads; }
size_t add_8192_shared_bytes(int) { return 0; }

tilec_status add_odd(const void *A, const void *B, void *C, cudaStream_t stream) {
    return launch(A, B, C, 1000, 3000, stream);
}
int add_odd_threads(int) { return kThreads; }
size_t add_odd_shared_bytes(int) { return 0; }

tilec_status add_dyn(const void *A, const void *B, void *C, int64_t m, int64_t n, cudaStream_t stream) {
    return launch(A, B, C, m, n, stream);
}
int add_dyn_threads(int) { return kThreads; }
size_t add_dyn_shared_bytes(int) { return 0; }

} // extern "C"
