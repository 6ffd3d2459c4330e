/// \file
/// Kernels with T.sync_grid (a barrier of every thread of the grid): the device function the barrier prints as,
/// through CUDA's cooperative groups, and the launch they need, cooperative (cudaLaunchCooperativeKernel; in
/// binary mode cuLaunchCooperativeKernel): all blocks resident at once, checked before the launch, since a
/// grid the device cannot hold at once would wait at the barrier forever (the launch returns
/// TILEC_ERROR_GRID_TOO_LARGE instead, launching nothing).
#include "codegen/CodegenHostParts.h"

#include "tilec/IRUses.h"
#include "tilec/LibraryCalls.h"

namespace tilec::codegen {

bool syncsGrid(const ir::Kernel &k) { return k.body && ir::callsAny(k.body, {passes::lib::Fn::GridSync}); }

std::string gridSyncDevice() {
    return "// ---- T.sync_grid: the grid barrier of a cooperative launch ----\n"
           "#include <cooperative_groups.h>\n"
           "namespace tilec {\n"
           "__device__ __forceinline__ void grid_sync() { cooperative_groups::this_grid().sync(); }\n"
           "} // namespace tilec\n\n";
}

std::string printCooperativeLaunch(bool cxx) {
    if (cxx)
        return R"tl(/* A kernel with T.sync_grid: launched cooperatively, every block resident at once; a grid the device cannot
 * hold at once (its blocks would wait at the grid barrier forever) is TILEC_ERROR_GRID_TOO_LARGE, not launched. */
[[maybe_unused]] static tilec_status tilec_launch_cooperative(const void *fn, dim3 grid, dim3 block, void **args,
                                                              size_t shared, cudaStream_t stream) {
    int dev = 0, cooperative = 0, sms = 0, per_sm = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, (int)(block.x * block.y * block.z), shared);
    if (e != cudaSuccess) return tilec_cuda_failure(e);
    if (!cooperative) return TILEC_ERROR_NO_DEVICE;
    if ((unsigned long long)grid.x * grid.y * grid.z > (unsigned long long)per_sm * (unsigned long long)sms)
        return TILEC_ERROR_GRID_TOO_LARGE;
    e = cudaLaunchCooperativeKernel(fn, grid, block, args, shared, stream);
    return e == cudaSuccess ? TILEC_SUCCESS : tilec_cuda_failure(e);
}

)tl";
    return R"tl(/* A kernel with T.sync_grid: launched cooperatively, every block resident at once; a grid the device cannot
 * hold at once (its blocks would wait at the grid barrier forever) is TILEC_ERROR_GRID_TOO_LARGE, not launched. */
__attribute__((unused)) static tilec_status tilec_launch_cooperative(CUfunction fn, int64_t gx, int64_t gy, int64_t gz,
                                                                     unsigned threads, unsigned shared,
                                                                     cudaStream_t stream, void **args) {
    CUdevice dev;
    int cooperative = 0, sms = 0, per_sm = 0;
    CUresult r = cuCtxGetDevice(&dev);
    if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(&cooperative, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev);
    if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    if (r == CUDA_SUCCESS) r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, (int)threads, shared);
    if (r != CUDA_SUCCESS) return tilec_driver_failure(r);
    if (!cooperative) return TILEC_ERROR_NO_DEVICE;
    if (gx * gy * gz > (int64_t)per_sm * sms) return TILEC_ERROR_GRID_TOO_LARGE;
    r = cuLaunchCooperativeKernel(fn, (unsigned)gx, (unsigned)gy, (unsigned)gz, threads, 1, 1, shared, stream, args);
    return r == CUDA_SUCCESS ? TILEC_SUCCESS : tilec_driver_failure(r);
}

)tl";
}

} // namespace tilec::codegen
