/* A stand-in for libcuda, for testing `tilec tune`'s control flow on a machine without a GPU (TILEC_LIBCUDA).
 * It is NOT a GPU: "device" memory is host memory from calloc, kernels do not run, and a launch advances a fake
 * clock by grid x block threads / 1e6 ms, which the events read, so a configuration's "time" is the number of
 * threads it launches. Its memset ignores the value 0xFF (the tuner's poison), so outputs stay zero and every
 * configuration agrees with the reference; FAKE_CUDA_POISON=1 honours it, and then no output is ever written. */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

static double fake_clock_ms;
static int fake_poison(void) { const char *p = getenv("FAKE_CUDA_POISON"); return p && *p == '1'; }

struct CUmod_st { int unused; };
struct CUfunc_st { char name[128]; };
struct CUevent_st { double at; };
struct CUstream_st { int unused; };
struct CUctx_st { int unused; };
static struct CUctx_st fake_ctx;
static CUcontext fake_current;

CUresult cuInit(unsigned flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int i) { *d = i; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
CUresult cuDeviceGetName(char *name, int len, CUdevice d) { (void)d; strncpy(name, "Fake GPU", len); return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 1 << 20; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    default: *v = 1000; break;
    }
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { (void)d; *c = &fake_ctx; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext c) { fake_current = c; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = fake_current; return CUDA_SUCCESS; }
CUresult cuCtxGetDevice(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
CUresult cuCtxGetId(CUcontext c, unsigned long long *id) { (void)c; *id = 1; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
CUresult cuMemAlloc(CUdeviceptr *p, size_t n) { *p = (CUdeviceptr)(uintptr_t)calloc(1, n); return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY; }
CUresult cuMemFree(CUdeviceptr p) { free((void *)(uintptr_t)p); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) { memcpy(dst, (void *)(uintptr_t)src, n); return CUDA_SUCCESS; }
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
    (void)s;
    if (v != 0xFF || fake_poison()) memset((void *)(uintptr_t)p, v, n);
    return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *s, unsigned flags) { (void)flags; *s = calloc(1, sizeof(struct CUstream_st)); return CUDA_SUCCESS; }
CUresult cuStreamQuery(CUstream s) { (void)s; return CUDA_SUCCESS; }
CUresult cuEventCreate(CUevent *e, unsigned flags) { (void)flags; *e = calloc(1, sizeof(struct CUevent_st)); return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent e, CUstream s) { (void)s; e->at = fake_clock_ms; return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { *ms = (float)(b->at - a->at); return CUDA_SUCCESS; }
CUresult cuModuleLoadData(CUmodule *m, const void *image) { (void)image; *m = calloc(1, sizeof(struct CUmod_st)); return CUDA_SUCCESS; }
CUresult cuModuleUnload(CUmodule m) { free(m); return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    (void)m;
    *f = calloc(1, sizeof(struct CUfunc_st));
    strncpy((*f)->name, name, sizeof (*f)->name - 1);
    return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) { (void)f; (void)a; (void)v; return CUDA_SUCCESS; }
static void fake_launch(CUfunction f, double threads) {
    if (strcmp(f->name, "tilec_tune_fill") != 0) fake_clock_ms += threads / 1e6;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void **params, void **extra) {
    (void)shared; (void)s; (void)params; (void)extra;
    fake_launch(f, (double)gx * gy * gz * bx * by * bz);
    return CUDA_SUCCESS;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
    (void)params; (void)extra;
    fake_launch(f, (double)c->gridDimX * c->gridDimY * c->gridDimZ * c->blockDimX * c->blockDimY * c->blockDimZ);
    return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult r, const char **s) { (void)r; *s = "fake error"; return CUDA_SUCCESS; }
