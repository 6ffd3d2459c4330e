// tilec device runtime: the tensor-map (CUtensorMap) type as device code sees it. Part of tilec; embedded
// into generated code, which must compile on its own (nvcc or NVRTC).
//
// NVRTC cannot include <cuda.h>, so device code declares the type itself: 128 opaque bytes, 64-byte aligned,
// exactly what the host's cuTensorMapEncodeTiled writes. A kernel takes it as a `const __grid_constant__`
// parameter and hands its address to cp.async.bulk.tensor (Hopper's TMA); the host launcher (either mode)
// builds the map and passes it by value.
#ifndef TILEC_STDLIB_TENSOR_MAP_CUH
#define TILEC_STDLIB_TENSOR_MAP_CUH

namespace tilec {

struct alignas(64) tensor_map {
    unsigned long long opaque[16];
};
static_assert(sizeof(tensor_map) == 128, "a CUtensorMap is 128 bytes");
static_assert(alignof(tensor_map) == 64, "a CUtensorMap is 64-byte aligned");

} // namespace tilec

#endif // TILEC_STDLIB_TENSOR_MAP_CUH
