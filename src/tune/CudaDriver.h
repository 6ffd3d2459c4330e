/// \file
/// Private to src/tune/: the few CUDA driver API functions `tilec tune` uses, from libcuda opened with dlopen
/// (tilec links no CUDA library; the declarations are here so that building tilec needs no CUDA headers).
///
/// libcuda is opened RTLD_GLOBAL: the binary-mode libraries the tuner loads afterwards call the driver API
/// and find its symbols in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tilec::tune {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

constexpr CUresult kCudaSuccess = 0;
constexpr CUresult kCudaNotReady = 600;

struct CudaDriver {
    CUresult (*init)(unsigned) = nullptr;
    CUresult (*driverGetVersion)(int *) = nullptr;
    CUresult (*deviceGet)(CUdevice *, int) = nullptr;
    CUresult (*deviceGetCount)(int *) = nullptr;
    CUresult (*deviceGetName)(char *, int, CUdevice) = nullptr;
    CUresult (*deviceGetAttribute)(int *, int, CUdevice) = nullptr;
    CUresult (*primaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
    CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
    CUresult (*ctxSynchronize)() = nullptr;
    CUresult (*memAlloc)(CUdeviceptr *, size_t) = nullptr;
    CUresult (*memFree)(CUdeviceptr) = nullptr;
    CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
    CUresult (*memsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
    CUresult (*streamCreate)(CUstream *, unsigned) = nullptr;
    CUresult (*streamQuery)(CUstream) = nullptr;
    CUresult (*eventCreate)(CUevent *, unsigned) = nullptr;
    CUresult (*eventRecord)(CUevent, CUstream) = nullptr;
    CUresult (*eventElapsedTime)(float *, CUevent, CUevent) = nullptr;
    CUresult (*moduleLoadData)(CUmodule *, const void *) = nullptr;
    CUresult (*moduleUnload)(CUmodule) = nullptr;
    CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
    CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **) = nullptr;
    CUresult (*getErrorString)(CUresult, const char **) = nullptr;

    /// Opens libcuda ($TILEC_LIBCUDA, else libcuda.so.1) and resolves every function; nullptr and `why` when
    /// that fails. Process-wide, opened once.
    static const CudaDriver *get(std::string *why);

    /// "cuMemAlloc: out of memory (2)".
    std::string describe(const std::string &call, CUresult r) const;
};

/// Device attributes used (CUdevice_attribute values of cuda.h).
enum : int {
    kAttrClockRate = 13,
    kAttrMultiprocessorCount = 16,
    kAttrMemoryClockRate = 36,
    kAttrL2CacheSize = 38,
    kAttrComputeCapabilityMajor = 75,
    kAttrComputeCapabilityMinor = 76,
};

} // namespace tilec::tune
