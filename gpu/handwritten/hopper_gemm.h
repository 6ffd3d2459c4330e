/* hopper_gemm.h: the C interface of gpu/handwritten/hopper_gemm.cu, hand-written warp-specialized sm_90a GEMMs
 * (TMA -> mbarrier ring -> wgmma, setmaxnreg) on the device library stdlib/tilec/sm90_*.cuh, in the shape
 * docs/INTERFACE.md gives the headers tilec generates. Compiles as C11 and as C++; includes only CUDA headers.
 * Run-time sizes m, n, k (int64_t, as for T.dynamic symbols). TMA needs 16-byte aligned tensors and row
 * pitches (k and, for B (k, n), n a multiple of 8 for 16-bit types, 16 for float8) and k > 0: otherwise
 * TILEC_ERROR_UNSUPPORTED (a generated launcher would take its cp.async variant). Hopper (sm 90) only. */
#ifndef TILEC_HOPPER_GEMM_H
#define TILEC_HOPPER_GEMM_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#define TILEC_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tilec_status {
    TILEC_SUCCESS = 0,
    TILEC_ERROR_NULL_ARGUMENT = 1, /* a tensor pointer is null */
    TILEC_ERROR_BAD_SIZE = 2,      /* a run-time size is negative or too large for the grid */
    TILEC_ERROR_CUDA = 3,          /* see tilec_last_cuda_error() */
    TILEC_ERROR_UNSUPPORTED = 4    /* TMA's alignment rules are not met */
} tilec_status;

/* A short English description of a status. */
const char *tilec_status_string(tilec_status status);
/* The CUDA error behind the last TILEC_ERROR_CUDA returned on this thread. */
cudaError_t tilec_last_cuda_error(void);

/* hopper_gemm_f16_128x128: C = A @ op(B), float16, 128x128x64 tiles, 1 consumer warpgroup (256 threads), 4 stages; B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x128(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x128_threads(int sm);
size_t hopper_gemm_f16_128x128_shared_bytes(int sm);

/* hopper_gemm_f16_128x128_nt: C = A @ op(B), float16, 128x128x64, 1 consumer warpgroup, 4 stages; B stored (n, k).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x128_nt(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x128_nt_threads(int sm);
size_t hopper_gemm_f16_128x128_nt_shared_bytes(int sm);

/* hopper_gemm_f16_128x256: C = A @ op(B), float16, 128x256x64 tiles, 2 consumer warpgroups (384 threads), 4 stages; B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x256(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x256_threads(int sm);
size_t hopper_gemm_f16_128x256_shared_bytes(int sm);

/* hopper_gemm_f16_128x256_nt: C = A @ op(B), float16, 128x256x64, 2 consumer warpgroups, 4 stages; B stored (n, k).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x256_nt(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x256_nt_threads(int sm);
size_t hopper_gemm_f16_128x256_nt_shared_bytes(int sm);

/* hopper_gemm_f16_128x256_s3: C = A @ op(B), float16, 128x256x64, 2 consumer warpgroups, 3 stages; B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x256_s3(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x256_s3_threads(int sm);
size_t hopper_gemm_f16_128x256_s3_shared_bytes(int sm);

/* hopper_gemm_f16_128x128_2cta: C = A @ op(B), float16, 128x128x64, 1 consumer warpgroup, 3 stages, two blocks per SM; B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x128_2cta(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x128_2cta_threads(int sm);
size_t hopper_gemm_f16_128x128_2cta_shared_bytes(int sm);

/* hopper_gemm_f16_128x256_p: C = A @ op(B), float16, 128x256x64, 2 consumer warpgroups, 4 stages, persistent (one block per SM walks the tiles); B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x256_p(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x256_p_threads(int sm);
size_t hopper_gemm_f16_128x256_p_shared_bytes(int sm);

/* hopper_gemm_f16_128x256_pc2: C = A @ op(B), float16, 128x256x64, 2 consumer warpgroups, 4 stages, persistent, clusters of 2 CTAs along m sharing B by TMA multicast; B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x256_pc2(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x256_pc2_threads(int sm);
size_t hopper_gemm_f16_128x256_pc2_shared_bytes(int sm);

/* hopper_gemm_f16_128x256_nt_pc2: C = A @ op(B), float16, as hopper_gemm_f16_128x256_pc2 with B stored (n, k).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x256_nt_pc2(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x256_nt_pc2_threads(int sm);
size_t hopper_gemm_f16_128x256_nt_pc2_shared_bytes(int sm);

/* hopper_gemm_f16_128x128_p: C = A @ op(B), float16, 128x128x64, 1 consumer warpgroup, 4 stages, persistent; B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x128_p(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x128_p_threads(int sm);
size_t hopper_gemm_f16_128x128_p_shared_bytes(int sm);

/* hopper_gemm_bf16_128x256_pc2: C = A @ op(B), bfloat16, 128x256x64, 2 consumer warpgroups, 4 stages, persistent, clusters of 2 along m (B multicast); B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_bf16_128x256_pc2(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_bf16_128x256_pc2_threads(int sm);
size_t hopper_gemm_bf16_128x256_pc2_shared_bytes(int sm);

/* hopper_gemm_f16_128x256_rs: C = A @ op(B), float16, 128x256x64, 2 consumer warpgroups, 4 stages, persistent, A read from shared memory into registers and multiplied by wgmma with A from registers (RS); B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_f16_128x256_rs(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_f16_128x256_rs_threads(int sm);
size_t hopper_gemm_f16_128x256_rs_shared_bytes(int sm);

/* hopper_gemm_bf16_128x128_nt_rs: C = A @ op(B), bfloat16, 128x128x64, 1 consumer warpgroup, 4 stages, persistent, A from registers (RS); B stored (n, k).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_bf16_128x128_nt_rs(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_bf16_128x128_nt_rs_threads(int sm);
size_t hopper_gemm_bf16_128x128_nt_rs_shared_bytes(int sm);

/* hopper_gemm_bf16_128x128: C = A @ op(B), bfloat16, 128x128x64, 1 consumer warpgroup, 4 stages; B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_bf16_128x128(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_bf16_128x128_threads(int sm);
size_t hopper_gemm_bf16_128x128_shared_bytes(int sm);

/* hopper_gemm_bf16_128x128_nt: C = A @ op(B), bfloat16, 128x128x64, 1 consumer warpgroup, 4 stages; B stored (n, k).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_bf16_128x128_nt(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_bf16_128x128_nt_threads(int sm);
size_t hopper_gemm_bf16_128x128_nt_shared_bytes(int sm);

/* hopper_gemm_bf16_128x256: C = A @ op(B), bfloat16, 128x256x64, 2 consumer warpgroups, 4 stages; B (k, n).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_bf16_128x256(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_bf16_128x256_threads(int sm);
size_t hopper_gemm_bf16_128x256_shared_bytes(int sm);

/* hopper_gemm_bf16_128x256_nt: C = A @ op(B), bfloat16, 128x256x64, 2 consumer warpgroups, 4 stages; B stored (n, k).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_bf16_128x256_nt(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_bf16_128x256_nt_threads(int sm);
size_t hopper_gemm_bf16_128x256_nt_shared_bytes(int sm);

/* hopper_gemm_e4m3_128x256_nt: C = A @ op(B), float8 e4m3 in, bfloat16 out, 128x256x128, 2 consumer warpgroups, 4 stages; B stored (n, k).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_e4m3_128x256_nt(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_e4m3_128x256_nt_threads(int sm);
size_t hopper_gemm_e4m3_128x256_nt_shared_bytes(int sm);

/* hopper_gemm_e4m3_128x256_nt_pc2: C = A @ op(B), float8 e4m3 in, bfloat16 out, 128x256x128, 2 consumer warpgroups, 4 stages, persistent,
 * clusters of 2 along m (B multicast); B stored (n, k).
 * A: [m, k] row-major, C: [m, n] row-major, float32 accumulation. */
tilec_status hopper_gemm_e4m3_128x256_nt_pc2(const void *A, const void *B, void *C, int64_t m, int64_t n, int64_t k, cudaStream_t stream);
int hopper_gemm_e4m3_128x256_nt_pc2_threads(int sm);
size_t hopper_gemm_e4m3_128x256_nt_pc2_shared_bytes(int sm);

#ifdef __cplusplus
}
#endif
#endif /* TILEC_HOPPER_GEMM_H */
