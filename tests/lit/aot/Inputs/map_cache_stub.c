/* map_cache_stub.test: binary mode's launcher of tensor_map_cache.tile against a stub CUDA driver (no GPU):
 * the driver functions the generated C calls, defined here, count the encodings of tensor maps and keep the
 * maps of the last launch of the TMA variant, so the test sees which maps a call encodes again and that the
 * launch gets the maps of the call's own arguments. */
#include "cached.h"

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- the stub driver ---- */
static int encodes;                   /* cuTensorMapEncodeTiled calls, all threads (pthread_join orders them) */
static CUtensorMap launched[3];       /* the maps of the last launch of the TMA variant */
static int tma_launches;
static int attribute_queries;         /* cuDeviceGetAttribute calls */
static const char *names[8];
static int functions;
#define ZERO_TILE ((CUdeviceptr)0x7770)
#define BAD_POINTER ((void *)0xbad0) /* 16-byte aligned, and the stub's encoder refuses it */

CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *ctx) { *ctx = (CUcontext)(uintptr_t)0x1000; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext ctx) { (void)ctx; return CUDA_SUCCESS; }
CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id) { (void)ctx; *id = 1; return CUDA_SUCCESS; }
CUresult cuCtxGetDevice(CUdevice *dev) { *dev = 0; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *dev, int ordinal) { *dev = ordinal; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) { (void)dev; return cuCtxGetCurrent(ctx); }
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice dev) {
    (void)dev;
    ++attribute_queries;
    *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 132 : 0;
    return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule *module, const void *image) { (void)image; *module = (CUmodule)(uintptr_t)0x2000; return CUDA_SUCCESS; }
CUresult cuModuleUnload(CUmodule module) { (void)module; return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name) {
    (void)module;
    if (functions == 8) return CUDA_ERROR_NOT_FOUND;
    names[functions] = name;
    *fn = (CUfunction)(uintptr_t)(++functions);
    return CUDA_SUCCESS;
}
CUresult cuModuleGetGlobal(CUdeviceptr *p, size_t *bytes, CUmodule module, const char *name) {
    (void)module, (void)name;
    *p = ZERO_TILE;
    *bytes = 128;
    return CUDA_SUCCESS;
}
CUresult cuFuncGetModule(CUmodule *module, CUfunction fn) { (void)fn; *module = (CUmodule)(uintptr_t)0x2000; return CUDA_SUCCESS; }
CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int v) { (void)fn, (void)a, (void)v; return CUDA_SUCCESS; }
CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction fn, const CUlaunchConfig *config) { (void)fn, (void)config; *n = 0; return CUDA_SUCCESS; }
/* The map records its inputs, so a launch shows which ones its maps came from. */
CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *base, const cuuint64_t *dims,
                                const cuuint64_t *strides, const cuuint32_t *box, const cuuint32_t *element_strides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                CUtensorMapFloatOOBfill fill) {
    (void)type, (void)element_strides, (void)interleave, (void)swizzle, (void)l2, (void)fill;
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
static CUresult launch(CUfunction fn, void **args) {
    /* the TMA variant (_v0): A, B, C, m, k, then its three maps */
    if (strstr(names[(uintptr_t)fn - 1], "_v0")) {
        int i;
        for (i = 0; i < 3; ++i) memcpy(&launched[i], args[5 + i], sizeof launched[i]);
        ++tma_launches;
    }
    return CUDA_SUCCESS;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction fn, void **args, void **extra) { (void)config, (void)extra; return launch(fn, args); }
CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        CUstream stream, void **args, void **extra) {
    (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)extra;
    return launch(fn, args);
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
    printf("device attribute queries: %d\n", attribute_queries);
    return 0;
}
