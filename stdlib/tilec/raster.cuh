// tilec device runtime: block rasterization for T.use_swizzle(panel_size=P). Part of tilec; embedded into
// generated code, which must compile on its own (nvcc or NVRTC); host code may include it too (tests).
#ifndef TILEC_STDLIB_RASTER_CUH
#define TILEC_STDLIB_RASTER_CUH

namespace tilec {

/// The tile (x, y) that launch-order block (bx, by) of a gx x gy grid computes: consecutive blocks walk down
/// a column of `panel` block rows before moving one column right, so the blocks running together share the
/// operand tiles of a few columns and rows, which then stay in L2. The last panel may have fewer rows. The
/// map is a bijection of the grid onto itself (tests/cuda/raster_test.cu checks it).
__host__ __device__ __forceinline__ void rasterize(int panel, int bx, int by, int gx, int gy, int &x, int &y) {
    const int linear = bx + by * gx;
    const int p = linear / (panel * gx);
    const int left = gy - p * panel;
    const int rows = left < panel ? left : panel;
    const int in = linear - p * panel * gx;
    x = in / rows;
    y = p * panel + in % rows;
}

} // namespace tilec

#endif // TILEC_STDLIB_RASTER_CUH
