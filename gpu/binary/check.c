/* The binary-mode check on the GPU (gpu/binary/run.sh): a plain C program, built with cc and linked with
 * -lcuda only, that calls kernels tilec compiled in binary mode (-o FILE.c) and checks:
 *  - the first call with no context on the thread adopts device 0's primary context, as the CUDA runtime does;
 *  - an element-wise kernel with a run-time size and a scalar: every element, odd sizes, argument errors;
 *  - the seed GEMM (float16, 96 KiB of shared memory: the raised limit) from its sm_90a cubin, and again from
 *    PTX the driver JIT-compiles (a file compiled for sm_80 only), against a float64 reference;
 *  - "no code for this device" from a file whose images fit no device;
 *  - eight threads without a context launching at once into a fresh module (the lazy, locked load);
 *  - unload and reload; a second context of its own;
 *  - a clustered persistent GEMM (cluster.tile): the launcher asks cuOccupancyMaxActiveClusters at each launch
 *    and starts that many clusters (no more than the work's cluster units), the planned SMs / 2 where the query
 *    fails. check.c defines cuOccupancyMaxActiveClusters and cuLaunchKernelEx itself, so the generated code
 *    calls these: they forward to the driver's (dlsym, RTLD_NEXT), record the driver's answer and the grid of
 *    clustered launches, and on request make the query fail or answer 3.
 * Prints one line per check and "binary mode: N checks, M failed"; exit status 1 when one failed. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include "cluster.h"
#include "cluster_plan.h"
#include "gemm.h"
#include "gemm_jit.h"
#include "gemm_none.h"
#include "kernels.h"

#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int checks, failed;

static void check(int ok, const char *what, const char *detail) {
    ++checks;
    if (!ok) ++failed;
    printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail && *detail ? ": " : "", detail ? detail : "");
}

static void checkStatus(tilec_status got, tilec_status want, const char *what) {
    char d[160];
    snprintf(d, sizeof d, "status %d (%s), want %d, tilec_last_cuda_error %d", (int)got, tilec_status_string(got),
             (int)want, (int)tilec_last_cuda_error());
    check(got == want, what, d);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* float16 <-> float, round to nearest even (host side only). */
static uint16_t toHalf(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int exp = (int)((x >> 23) & 0xff) - 127 + 15;
    if (exp <= 0) return (uint16_t)sign; /* the inputs never need subnormals */
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return (uint16_t)h;
}
static double fromHalf(uint16_t h) {
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v = exp == 0 ? ldexp(mant, -24) : ldexp(1024 + mant, exp - 25);
    return (h & 0x8000u) ? -v : v;
}

static float uniform(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

/* ---- the element-wise kernel ---- */
static int axpbyOnce(int64_t n, float alpha, CUstream stream, const char *what) {
    size_t bytes = (size_t)n * 4;
    float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
    unsigned seed = (unsigned)n;
    for (int64_t i = 0; i < n; ++i) x[i] = uniform(&seed), y[i] = uniform(&seed);
    CUdeviceptr dx, dy, dz;
    cuMemAlloc(&dx, bytes), cuMemAlloc(&dy, bytes), cuMemAlloc(&dz, bytes);
    cuMemcpyHtoD(dx, x, bytes), cuMemcpyHtoD(dy, y, bytes), cuMemsetD8(dz, 0xff, bytes);
    tilec_status s = axpby_f32((const float *)dx, (const float *)dy, (float *)dz, alpha, n, stream);
    if (s == TILEC_SUCCESS) cuStreamSynchronize(stream);
    cuMemcpyDtoH(z, dz, bytes);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += z[i] != fmaf(alpha, x[i], y[i]) && z[i] != alpha * x[i] + y[i];
    char d[160];
    snprintf(d, sizeof d, "n=%lld, status %d, %lld wrong elements", (long long)n, (int)s, (long long)bad);
    check(s == TILEC_SUCCESS && bad == 0, what, d);
    cuMemFree(dx), cuMemFree(dy), cuMemFree(dz);
    free(x), free(y), free(z);
    return s == TILEC_SUCCESS && bad == 0;
}

/* C = A B in float64 (row-major, A m x k, B k x n), and sum_k |a_ik b_kj| for the bound. */
static void reference(const uint16_t *a, const uint16_t *b, int m, int n, int k, double *ref, double *mag) {
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) ref[(size_t)i * n + j] = 0, mag[(size_t)i * n + j] = 0;
        for (int q = 0; q < k; ++q) {
            double x = fromHalf(a[(size_t)i * k + q]);
            for (int j = 0; j < n; ++j) {
                double p = x * fromHalf(b[(size_t)q * n + j]);
                ref[(size_t)i * n + j] += p, mag[(size_t)i * n + j] += fabs(p);
            }
        }
    }
}

/* The elements of a float16 C outside docs/INTERFACE.md's GEMM bound (u = 2^-11): |C - R| <= 4 u mag + u |R|. */
static long outside(const uint16_t *c, const double *ref, const double *mag, size_t n) {
    const double u = ldexp(1.0, -11);
    long bad = 0;
    for (size_t i = 0; i < n; ++i) bad += !(fabs(fromHalf(c[i]) - ref[i]) <= 4 * u * mag[i] + u * fabs(ref[i]));
    return bad;
}

/* ---- the GEMM (C = A B, 256 x 256 x 256, float16, float accumulation) ---- */
enum { GM = 256, GN = 256, GK = 256 };
typedef tilec_status (*gemm_fn)(const void *, const void *, void *, cudaStream_t);

static void gemmOnce(gemm_fn fn, const char *what, tilec_status want) {
    static uint16_t a[GM * GK], b[GK * GN], c[GM * GN];
    unsigned seed = 7;
    for (int i = 0; i < GM * GK; ++i) a[i] = toHalf(uniform(&seed));
    for (int i = 0; i < GK * GN; ++i) b[i] = toHalf(uniform(&seed));
    CUdeviceptr da, db, dc;
    cuMemAlloc(&da, sizeof a), cuMemAlloc(&db, sizeof b), cuMemAlloc(&dc, sizeof c);
    cuMemcpyHtoD(da, a, sizeof a), cuMemcpyHtoD(db, b, sizeof b), cuMemsetD8(dc, 0xff, sizeof c);
    double t0 = now();
    tilec_status s = fn((const void *)da, (const void *)db, (void *)dc, 0);
    if (s == TILEC_SUCCESS) cuCtxSynchronize();
    double ms = (now() - t0) * 1e3;
    if (want != TILEC_SUCCESS) {
        checkStatus(s, want, what);
    } else {
        cuMemcpyDtoH(c, dc, sizeof c);
        static double ref[GM * GN], mag[GM * GN];
        reference(a, b, GM, GN, GK, ref, mag);
        int bad = (int)outside(c, ref, mag, GM * GN);
        char d[160];
        snprintf(d, sizeof d, "status %d, %d of %d elements outside the bound, first call %.1f ms", (int)s, bad,
                 GM * GN, ms);
        check(s == TILEC_SUCCESS && bad == 0, what, d);
    }
    cuMemFree(da), cuMemFree(db), cuMemFree(dc);
}

/* ---- the clustered GEMM: the launch's clusters are the driver's occupancy answer ---- */
static int occupancyMode;             /* 0: the driver's answer; -1: the query fails; n > 0: answer n */
static int queries, lastActive;       /* queries made; the driver's last answer (-1: it failed) */
static unsigned lastGrid, lastCluster; /* the last clustered launch (only the single-threaded part has any) */

CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config) {
    CUresult (*real)(int *, CUfunction, const CUlaunchConfig *) = NULL;
    void *p = dlsym(RTLD_NEXT, "cuOccupancyMaxActiveClusters");
    memcpy(&real, &p, sizeof p);
    CUresult r = real ? real(numClusters, func, config) : CUDA_ERROR_NOT_FOUND;
    ++queries;
    lastActive = r == CUDA_SUCCESS ? *numClusters : -1;
    if (occupancyMode < 0) return CUDA_ERROR_NOT_SUPPORTED;
    if (occupancyMode > 0 && r == CUDA_SUCCESS) *numClusters = occupancyMode;
    return r;
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    CUresult (*real)(const CUlaunchConfig *, CUfunction, void **, void **) = NULL;
    void *p = dlsym(RTLD_NEXT, "cuLaunchKernelEx");
    memcpy(&real, &p, sizeof p);
    for (unsigned i = 0; i < config->numAttrs; ++i)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            lastGrid = config->gridDimX, lastCluster = config->attrs[i].value.clusterDim.x;
    return real ? real(config, f, kernelParams, extra) : CUDA_ERROR_NOT_FOUND;
}

/* cluster_g's shape and tiles as gpu/binary/cluster.tile makes it: 32 x 8 tiles of 128 x 256, in pairs */
enum { CM = 4096, CN = 2048, CK = 128, CUNITS = (CM / 128) * (CN / 256) / 2 };

static void clusterChecks(int sms) {
    size_t na = (size_t)CM * CK, nb = (size_t)CK * CN, nc = (size_t)CM * CN;
    uint16_t *a = malloc(na * 2), *b = malloc(nb * 2), *c = malloc(nc * 2);
    double *ref = malloc(nc * sizeof(double)), *mag = malloc(nc * sizeof(double));
    unsigned seed = 11;
    for (size_t i = 0; i < na; ++i) a[i] = toHalf(uniform(&seed));
    for (size_t i = 0; i < nb; ++i) b[i] = toHalf(uniform(&seed));
    reference(a, b, CM, CN, CK, ref, mag);
    CUdeviceptr da, db, dc;
    cuMemAlloc(&da, na * 2), cuMemAlloc(&db, nb * 2), cuMemAlloc(&dc, nc * 2);
    cuMemcpyHtoD(da, a, na * 2), cuMemcpyHtoD(db, b, nb * 2);
    /* SMs / 2 at the planned blocks per SM, what the launcher falls back to */
    const int fallback = sms * CLUSTER_BLOCKS_PER_SM / 2;
    const struct { int mode; const char *what; } runs[] = {
        {0, "clustered gemm: the driver's cuOccupancyMaxActiveClusters"},
        {0, "clustered gemm again: asked again (nothing cached)"},
        {3, "clustered gemm, the query answering 3: 3 clusters walk every unit"},
        {-1, "clustered gemm, the query failing: SMs / 2 clusters"},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; ++r) {
        occupancyMode = runs[r].mode;
        lastGrid = lastCluster = 0, lastActive = -2;
        int before = queries;
        cuMemsetD8(dc, 0xff, nc * 2);
        tilec_status s = cluster_g((const void *)da, (const void *)db, (void *)dc, 0);
        if (s == TILEC_SUCCESS) cuCtxSynchronize();
        cuMemcpyDtoH(c, dc, nc * 2);
        long bad = outside(c, ref, mag, nc);
        int active = runs[r].mode > 0 ? runs[r].mode : runs[r].mode < 0 ? fallback : lastActive;
        unsigned want = 2u * (unsigned)(CUNITS < active ? CUNITS : active);
        char d[240];
        snprintf(d, sizeof d, "status %d, %ld of %ld elements outside the bound, %d quer%s (driver: %d), grid %u in "
                 "clusters of %u, want %u (%d units, %d SMs)", (int)s, bad, (long)nc, queries - before,
                 queries - before == 1 ? "y" : "ies", lastActive, lastGrid, lastCluster, want, CUNITS, sms);
        /* the driver itself must answer (else the first runs would test the fallback only) */
        check(s == TILEC_SUCCESS && bad == 0 && queries - before == 1 && lastCluster == 2 && lastGrid == want &&
                  (runs[r].mode != 0 || lastActive > 0),
              runs[r].what, d);
    }
    occupancyMode = 0;
    cuMemFree(da), cuMemFree(db), cuMemFree(dc);
    free(a), free(b), free(c), free(ref), free(mag);
}

/* ---- threads without a context, launching into a module not loaded yet ---- */
enum { THREADS = 8, N_THREAD = 100003 };
static CUdeviceptr tx, ty, tz[THREADS];
static tilec_status threadStatus[THREADS];

static void *launcher(void *arg) {
    int t = (int)(intptr_t)arg;
    CUcontext ctx = NULL;
    cuCtxGetCurrent(&ctx);
    threadStatus[t] = ctx ? TILEC_ERROR_CUDA : TILEC_SUCCESS; /* a new thread has no context */
    for (int i = 0; i < 20 && threadStatus[t] == TILEC_SUCCESS; ++i)
        threadStatus[t] = axpby_f32((const float *)tx, (const float *)ty, (float *)tz[t], (float)(t + 1), N_THREAD, 0);
    cuCtxSynchronize();
    return NULL;
}

int main(void) {
    /* No context yet: loading adopts device 0's primary context on this thread. */
    checkStatus(axpby_f32_load(), TILEC_SUCCESS, "load without a context");
    CUcontext primary = NULL;
    cuCtxGetCurrent(&primary);
    check(primary != NULL, "the primary context is current afterwards", "");
    CUdevice dev;
    int major = 0, minor = 0;
    cuCtxGetDevice(&dev);
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    printf("device compute capability %d.%d\n", major, minor);

    CUstream stream;
    cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    axpbyOnce(1000003, 1.5f, stream, "axpby, odd size, own stream");
    axpbyOnce(1, -2.0f, 0, "axpby, one element");
    axpbyOnce(512 * 4, 0.25f, 0, "axpby, whole blocks");
    checkStatus(axpby_f32(NULL, (const float *)16, (float *)16, 1.0f, 10, 0), TILEC_ERROR_NULL_POINTER, "null pointer");
    check(tilec_last_error_argument() == 0, "null pointer names argument 0", "");
    /* A size of 0 is an empty batch: success, nothing launched (the pointers are never touched). */
    checkStatus(axpby_f32((const float *)16, (const float *)16, (float *)16, 1.0f, 0, 0), TILEC_SUCCESS, "size 0");
    checkStatus(axpby_f32((const float *)16, (const float *)16, (float *)16, 1.0f, -1, 0), TILEC_ERROR_BAD_SIZE,
                "size -1");
    check(tilec_last_error_argument() == 4, "size -1 names argument 4", "");
    check(axpby_f32_threads(90) == 128 && axpby_f32_shared_bytes(90) == 0, "queries", "");

    gemmOnce(g, "gemm from its sm_90a cubin (96 KiB shared)", TILEC_SUCCESS);
    gemmOnce(jit_g, "gemm from PTX (compute_80) JIT-compiled by the driver", TILEC_SUCCESS);
    gemmOnce(none_g, "a file without code for this device", TILEC_ERROR_NO_DEVICE_CODE);
    /* sm_90a answers with the TMA variant: 128 threads and a producer warpgroup; 96 KiB of ring, six mbarriers
     * and the slack that lets the kernel align its tiles to 1024 bytes. */
    check(g_shared_bytes(90) == 108416 && g_threads(90) == 256, "gemm queries: the TMA variant (108416 bytes, 256 threads)", "");
    int sms = 0;
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    if (major * 10 + minor == 90) clusterChecks(sms);
    else printf("SKIP clustered gemm: compiled for sm_90a only\n");

    /* Unload everything of kernels.c, then eight context-less threads race to load it again. */
    checkStatus(axpby_f32_unload(), TILEC_SUCCESS, "unload");
    checkStatus(axpby_f32_unload(), TILEC_SUCCESS, "unload again (nothing loaded)");
    size_t bytes = (size_t)N_THREAD * 4;
    float *hx = malloc(bytes), *hy = malloc(bytes), *hz = malloc(bytes);
    unsigned seed = 3;
    for (int i = 0; i < N_THREAD; ++i) hx[i] = uniform(&seed), hy[i] = uniform(&seed);
    cuMemAlloc(&tx, bytes), cuMemAlloc(&ty, bytes);
    cuMemcpyHtoD(tx, hx, bytes), cuMemcpyHtoD(ty, hy, bytes);
    for (int t = 0; t < THREADS; ++t) cuMemAlloc(&tz[t], bytes);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; ++t) pthread_create(&th[t], NULL, launcher, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; ++t) pthread_join(th[t], NULL);
    int threadBad = 0;
    for (int t = 0; t < THREADS; ++t) {
        cuMemcpyDtoH(hz, tz[t], bytes);
        threadBad += threadStatus[t] != TILEC_SUCCESS;
        for (int i = 0; i < N_THREAD; ++i) threadBad += hz[i] != fmaf((float)(t + 1), hx[i], hy[i]) && hz[i] != (float)(t + 1) * hx[i] + hy[i];
    }
    char d[96];
    snprintf(d, sizeof d, "%d threads x 20 launches, %d failures", THREADS, threadBad);
    check(threadBad == 0, "concurrent first launches from threads without a context", d);

    /* A context of the application's own: the file loads a second module there. */
    CUcontext own;
#if CUDA_VERSION >= 13000
    cuCtxCreate(&own, NULL, 0, dev);
#else
    cuCtxCreate(&own, 0, dev);
#endif
    axpbyOnce(777, 3.0f, 0, "axpby in a second context");
    gemmOnce(g, "gemm in a second context", TILEC_SUCCESS);
    cuCtxDestroy(own);
    cuCtxSetCurrent(primary);
    axpbyOnce(4099, 0.5f, 0, "axpby back in the primary context");

    printf("binary mode: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
