/// \file
/// libcuda through dlopen (src/tune/CudaDriver.h).
#include "tune/CudaDriver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <mutex>

namespace tilec::tune {

namespace {

template <class F> bool bind(void *h, F &fn, std::initializer_list<const char *> names, std::string &missing) {
    for (const char *n : names)
        if (void *p = dlsym(h, n)) {
            fn = reinterpret_cast<F>(p);
            return true;
        }
    missing = *names.begin();
    return false;
}

} // namespace

const CudaDriver *CudaDriver::get(std::string *why) {
    static std::once_flag once;
    static std::unique_ptr<CudaDriver> instance;
    static std::string problem;
    std::call_once(once, [] {
        const char *env = std::getenv("TILEC_LIBCUDA");
        std::string lib = env && *env ? env : "libcuda.so.1";
        void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (!h) {
            const char *e = dlerror();
            problem = "cannot open the CUDA driver " + lib + " (" + (e ? e : "?") + ")";
            return;
        }
        auto d = std::make_unique<CudaDriver>();
        std::string missing;
        // The _v2 names are what cuda.h's macros select; the versioned ones of CUDA 13 come first.
        bool ok = bind(h, d->init, {"cuInit"}, missing) && bind(h, d->driverGetVersion, {"cuDriverGetVersion"}, missing) &&
                  bind(h, d->deviceGet, {"cuDeviceGet"}, missing) &&
                  bind(h, d->deviceGetCount, {"cuDeviceGetCount"}, missing) &&
                  bind(h, d->deviceGetName, {"cuDeviceGetName"}, missing) &&
                  bind(h, d->deviceGetAttribute, {"cuDeviceGetAttribute"}, missing) &&
                  bind(h, d->primaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing) &&
                  bind(h, d->ctxSetCurrent, {"cuCtxSetCurrent"}, missing) &&
                  bind(h, d->ctxSynchronize, {"cuCtxSynchronize"}, missing) &&
                  bind(h, d->memAlloc, {"cuMemAlloc_v2"}, missing) && bind(h, d->memFree, {"cuMemFree_v2"}, missing) &&
                  bind(h, d->memcpyDtoH, {"cuMemcpyDtoH_v2"}, missing) &&
                  bind(h, d->memsetD8Async, {"cuMemsetD8Async"}, missing) &&
                  bind(h, d->streamCreate, {"cuStreamCreate"}, missing) &&
                  bind(h, d->streamQuery, {"cuStreamQuery"}, missing) &&
                  bind(h, d->eventCreate, {"cuEventCreate"}, missing) &&
                  bind(h, d->eventRecord, {"cuEventRecord"}, missing) &&
                  bind(h, d->eventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing) &&
                  bind(h, d->moduleLoadData, {"cuModuleLoadData"}, missing) &&
                  bind(h, d->moduleUnload, {"cuModuleUnload"}, missing) &&
                  bind(h, d->moduleGetFunction, {"cuModuleGetFunction"}, missing) &&
                  bind(h, d->launchKernel, {"cuLaunchKernel"}, missing) &&
                  bind(h, d->getErrorString, {"cuGetErrorString"}, missing);
        if (!ok) {
            problem = lib + " lacks " + missing;
            return;
        }
        instance = std::move(d);
    });
    if (why) *why = problem;
    return instance.get();
}

std::string CudaDriver::describe(const std::string &call, CUresult r) const {
    const char *s = nullptr;
    if (getErrorString) getErrorString(r, &s);
    return call + ": " + (s ? s : "unknown error") + " (" + std::to_string(r) + ")";
}

} // namespace tilec::tune
