/* hand_add.h: the C interface of gpu/handwritten/hand_add.cu, written by hand in the shape docs/INTERFACE.md gives
 * the headers tilec generates, so the GPU harness can be proven on a known-good kernel before it judges
 * generated ones. Compiles as C11 and as C++; includes only CUDA headers. */
#ifndef TILEC_HAND_ADD_H
#define TILEC_HAND_ADD_H

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
    TILEC_ERROR_CUDA = 3           /* see tilec_last_cuda_error() */
} tilec_status;

/* A short English description of a status. */
const char *tilec_status_string(tilec_status status);
/* The CUDA error behind the last TILEC_ERROR_CUDA returned on this thread. */
cudaError_t tilec_last_cuda_error(void);

/* add_8192: C = A + B. A, B, C: float16[8192, 8192], row-major. */
tilec_status add_8192(const void *A, const void *B, void *C, cudaStream_t stream);
int add_8192_threads(int sm);
size_t add_8192_shared_bytes(int sm);

/* add_odd: C = A + B. A, B, C: float16[1000, 3000], row-major. */
tilec_status add_odd(const void *A, const void *B, void *C, cudaStream_t stream);
int add_odd_threads(int sm);
size_t add_odd_shared_bytes(int sm);

/* add_dyn: C = A + B. A, B, C: float16[m, n], row-major; m and n as for T.dynamic symbols. */
tilec_status add_dyn(const void *A, const void *B, void *C, int64_t m, int64_t n, cudaStream_t stream);
int add_dyn_threads(int sm);
size_t add_dyn_shared_bytes(int sm);

#ifdef __cplusplus
}
#endif
#endif /* TILEC_HAND_ADD_H */
