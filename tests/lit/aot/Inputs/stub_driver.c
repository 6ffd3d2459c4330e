/* A stub CUDA driver for binary mode's launchers on a machine without a GPU (alignment_doc.test,
 * map_cache_stub.test): every call succeeds, the device has compute capability STUB_SM (environment, e.g. 90 or
 * 80; default 90) and 132 SMs, module globals live at STUB_GLOBAL, and each launch records the kernel it ran.
 * A test that looks closer sets the hooks below. */
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>

#define STUB_FUNCTIONS 64
#define STUB_GLOBAL ((CUdeviceptr)0x7770)
static const char *names[STUB_FUNCTIONS];
static int functions;
const char *stub_launched;    /* the __global__ function of the last launch (NULL before any) */
int stub_attribute_queries;   /* cuDeviceGetAttribute calls */
/* Called by cuTensorMapEncodeTiled after the driver's own 16-byte rule passes: its result is the call's. */
CUresult (*stub_encode_hook)(CUtensorMap *map, cuuint32_t rank, void *base, const cuuint64_t *dims,
                             const cuuint64_t *strides, const cuuint32_t *box);
/* Called by every launch with the kernel's name and its argument array. */
void (*stub_launch_hook)(const char *kernel, void **args);

static int stub_sm(void) {
    const char *s = getenv("STUB_SM");
    return s ? atoi(s) : 90;
}

CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }
CUresult cuCtxGetCurrent(CUcontext *ctx) { *ctx = (CUcontext)(uintptr_t)0x1000; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext ctx) { (void)ctx; return CUDA_SUCCESS; }
CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id) { (void)ctx; *id = 1; return CUDA_SUCCESS; }
CUresult cuCtxGetDevice(CUdevice *dev) { *dev = 0; return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *dev, int ordinal) { *dev = ordinal; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) { (void)dev; return cuCtxGetCurrent(ctx); }
CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice dev) {
    (void)dev;
    ++stub_attribute_queries;
    *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? stub_sm() / 10
         : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? stub_sm() % 10
         : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT     ? 132
                                                             : 0;
    return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule *module, const void *image) { (void)image; *module = (CUmodule)(uintptr_t)0x2000; return CUDA_SUCCESS; }
CUresult cuModuleUnload(CUmodule module) { (void)module; return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name) {
    (void)module;
    if (functions == STUB_FUNCTIONS) return CUDA_ERROR_NOT_FOUND;
    names[functions] = name;
    *fn = (CUfunction)(uintptr_t)(++functions);
    return CUDA_SUCCESS;
}
CUresult cuModuleGetGlobal(CUdeviceptr *p, size_t *bytes, CUmodule module, const char *name) {
    (void)module, (void)name;
    *p = STUB_GLOBAL;
    *bytes = 256;
    return CUDA_SUCCESS;
}
CUresult cuFuncGetModule(CUmodule *module, CUfunction fn) { (void)fn; *module = (CUmodule)(uintptr_t)0x2000; return CUDA_SUCCESS; }
CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int v) { (void)fn, (void)a, (void)v; return CUDA_SUCCESS; }
CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction fn, const CUlaunchConfig *config) { (void)fn, (void)config; *n = 0; return CUDA_SUCCESS; }
CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *base, const cuuint64_t *dims,
                                const cuuint64_t *strides, const cuuint32_t *box, const cuuint32_t *element_strides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                CUtensorMapFloatOOBfill fill) {
    (void)type, (void)element_strides, (void)interleave, (void)swizzle, (void)l2, (void)fill;
    /* the driver's own rule: a map's base is 16-byte aligned */
    if ((uintptr_t)base % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
    if (stub_encode_hook) return stub_encode_hook(map, rank, base, dims, strides, box);
    map->opaque[0] = (cuuint64_t)(uintptr_t)base;
    return CUDA_SUCCESS;
}
static CUresult launch(CUfunction fn, void **args) {
    stub_launched = names[(uintptr_t)fn - 1];
    if (stub_launch_hook) stub_launch_hook(stub_launched, args);
    return CUDA_SUCCESS;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction fn, void **args, void **extra) {
    (void)config, (void)extra;
    return launch(fn, args);
}
CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        CUstream stream, void **args, void **extra) {
    (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared, (void)stream, (void)extra;
    return launch(fn, args);
}
