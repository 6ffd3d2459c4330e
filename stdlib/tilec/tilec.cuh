// tilec device runtime: the whole library, each file after the files it uses. Generated code embeds the
// files in this order (src/codegen/Stdlib.cpp follows these includes, each file once, its own includes of
// tilec/ files dropped), so it compiles on its own (nvcc or NVRTC); code outside tilec may include this file
// or any one file of tilec/, which includes what it uses.
#ifndef TILEC_STDLIB_TILEC_CUH
#define TILEC_STDLIB_TILEC_CUH

// Element types, conversions (fp4 by arithmetic), narrow-float arithmetic; vector loads and stores.
#include "types.cuh"
#include "fp4.cuh"
#include "memory.cuh"

// sm_80 and later: swizzled shared tiles, cp.async tile copies, mma.sync GEMMs, block rasterization.
#include "swizzle.cuh"
#include "cp_async.cuh"
#include "mma_frag.cuh"
#include "mma.cuh"
#include "mma_sp.cuh"
#include "raster.cuh"

// sm_90: tensor maps, mbarriers and fences, TMA loads, the TMA-store epilogue, wgmma (dense and sparse).
#include "tensor_map.cuh"
#include "sm90_barrier.cuh"
#include "sm90_tma.cuh"
#include "sm90_store.cuh"
#include "sm90_wgmma.cuh"
#include "sm90_wgmma_sp.cuh"

#endif // TILEC_STDLIB_TILEC_CUH
