/* map_cache_stub.test: binary mode's launcher of tensor_map_cache.tile against a stub CUDA driver (no GPU):
 * the driver (stub_driver.c) calls hooks defined here that count the encodings of tensor maps and keep the
 * maps of the last launch of the TMA variant, so the test sees which maps a call encodes again and that the
 * launch gets the maps of the call's own arguments. */
#include "cached.h"

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- the stub driver (stub_driver.c) and what this test records through its hooks ---- */
extern const char *stub_launched;
extern int stub_attribute_queries;
extern CUresult (*stub_encode_hook)(CUtensorMap *, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *, const cuuint32_t *);
extern void (*stub_launch_hook)(const char *, void **);
static int encodes;                   /* cuTensorMapEncodeTiled calls, all threads (pthread_join orders them) */
static CUtensorMap launched[3];       /* the maps of the last launch of the TMA variant */
static int tma_launches;
#define ZERO_TILE ((CUdeviceptr)0x7770) /* stub_driver.c's STUB_GLOBAL */
#define BAD_POINTER ((void *)0xbad0) /* 16-byte aligned, and the encoder below refuses it */

/* The map records its inputs, so a launch shows which ones its maps came from. */
static CUresult encode(CUtensorMap *map, cuuint32_t rank, void *base, const cuuint64_t *dims, const cuuint64_t *strides,
                       const cuuint32_t *box) {
    ++encodes;
    if (base == BAD_POINTER) return CUDA_ERROR_INVALID_VALUE;
    memset(map, 0, sizeof *map);
    map->opaque[0] = (cuuint64_t)(uintptr_t)base;
    map->opaque[1] = dims[0];
    map->opaque[2] = rank > 1 ? dims[1] : 0;
    map->opaque[3] = rank > 1 ? strides[0] : 0;
    map->opaque[4] = box[0];
    return CUDA_SUCCESS;
}
static void launch(const char *kernel, void **args) {
    /* the TMA variant (_v0): A, B, C, m, k, then its three maps */
    if (strstr(kernel, "_v0")) {
        int i;
        for (i = 0; i < 3; ++i) memcpy(&launched[i], args[5 + i], sizeof launched[i]);
        ++tma_launches;
    }
}

/* ---- the test ---- */
#define P(x) ((void *)(uintptr_t)(x))

/* Calls the launcher and prints the encodings it made and whether the launch got the maps of these arguments. */
static void call(const char *what, void *a, void *b, void *c, int64_t m, int64_t k) {
    const int before = encodes, launches = tma_launches;
    tilec_status s = cached(a, b, c, m, k, 0);
    const uint64_t za = k == 0 ? (uint64_t)ZERO_TILE : (uint64_t)(uintptr_t)a, zb = k == 0 ? (uint64_t)ZERO_TILE : (uint64_t)(uintptr_t)b;
    const uint64_t ek = k == 0 ? 1 : (uint64_t)k, em = k == 0 ? 1 : (uint64_t)m;
    int match = tma_launches == launches + 1 && launched[0].opaque[0] == za && launched[0].opaque[1] == ek &&
                launched[0].opaque[2] == (k == 0 ? 1 : (uint64_t)m) && launched[1].opaque[0] == zb &&
                launched[1].opaque[2] == ek && launched[2].opaque[0] == (uint64_t)(uintptr_t)c && launched[2].opaque[2] == (uint64_t)m;
    (void)em;
    printf("%s: status %d, encoded %d, launched maps %s\n", what, (int)s, encodes - before,
           s != TILEC_SUCCESS ? "none" : match ? "match" : "DIFFER");
}

static void *other_thread(void *unused) {
    (void)unused;
    call("thread 2, first call", P(0x10000), P(0x20000), P(0x30000), 128, 256);
    call("thread 2, same", P(0x10000), P(0x20000), P(0x30000), 128, 256);
    return NULL;
}

int main(void) {
    pthread_t t;
    stub_encode_hook = encode;
    stub_launch_hook = launch;
    call("first call", P(0x10000), P(0x20000), P(0x30000), 128, 256);
    call("same", P(0x10000), P(0x20000), P(0x30000), 128, 256);
    call("A moved", P(0x11000), P(0x20000), P(0x30000), 128, 256);
    call("C moved", P(0x11000), P(0x20000), P(0x31000), 128, 256);
    call("m changed", P(0x11000), P(0x20000), P(0x31000), 64, 256);
    call("k changed", P(0x11000), P(0x20000), P(0x31000), 64, 128);
    call("same", P(0x11000), P(0x20000), P(0x31000), 64, 128);
    call("k = 0", P(0x11000), P(0x20000), P(0x31000), 64, 0);
    call("k = 0, other A and B", P(0x12000), P(0x22000), P(0x31000), 64, 0);
    call("back to k = 128", P(0x11000), P(0x20000), P(0x31000), 64, 128);
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    call("thread 1 after thread 2", P(0x11000), P(0x20000), P(0x31000), 64, 128);
    call("A refused by the driver", BAD_POINTER, P(0x20000), P(0x31000), 64, 128);
    call("A refused again", BAD_POINTER, P(0x20000), P(0x31000), 64, 128);
    call("A as before the failure", P(0x11000), P(0x20000), P(0x31000), 64, 128);
    call("same", P(0x11000), P(0x20000), P(0x31000), 64, 128);
    printf("device attribute queries: %d\n", stub_attribute_queries);
    return 0;
}
