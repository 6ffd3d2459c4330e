/// \file
/// The shared-memory budget, described once: what a buffer takes, how buffers are aligned, what the system
/// reserves per block, and how many blocks' shared memory fits an SM. The planner (planSharedMemory) places
/// the buffers; the passes that decide before it (warp roles, epilogue staging, reduction scratch), the
/// checker, the resource report and the code generator estimate and compare with these.
#pragma once

#include "tilec/IR.h"
#include "tilec/Target.h"

#include <cstdint>

namespace tilec::smem {

/// Bytes the system reserves in an SM's shared memory for each resident block (CUDA C Programming Guide,
/// "Compute Capabilities"): blocks share Target::sharedPerSM less this per block.
inline constexpr int64_t kReservedPerBlock = 1024;
/// Alignment of a TMA tile (the 128-byte swizzle repeats every 1024 bytes, and TMA asks for it) and of any
/// other shared buffer (128: the widest vector access and ldmatrix rows stay in one bank cycle).
inline constexpr int64_t kTmaTileAlignment = 1024;
inline constexpr int64_t kBufferAlignment = 128;
/// Dynamic shared memory a launch gets without opting in to more (cudaFuncAttributeMaxDynamicSharedMemorySize).
inline constexpr int64_t kWithoutOptIn = 48 * 1024;

/// `bytes` rounded up to a multiple of `align`.
inline int64_t roundUp(int64_t bytes, int64_t align) { return (bytes + align - 1) / align * align; }

/// The bytes a shared buffer's elements take (0 for a shape that is not constant, a null buffer or one that is
/// not shared).
int64_t sharedBytes(const ir::BufferNode *b);

/// Where a buffer may start: 1024 for a TMA tile, 8 for 8-byte integers (mbarriers), 128 for the rest.
int64_t bufferAlignment(const ir::BufferNode &b, bool tmaTile);

/// The shared memory a kernel's buffers take before planSharedMemory has placed them, at its worst: each
/// buffer rounded up to a TMA tile's alignment, plus that alignment once (the base rounded up).
int64_t estimatedBytes(const ir::Kernel &k);

/// Blocks of `bytesPerBlock` shared memory each that fit one SM of `t` by shared memory alone.
inline int64_t blocksPerSm(const Target &t, int64_t bytesPerBlock) {
    return t.sharedPerSM / (bytesPerBlock + kReservedPerBlock);
}

/// Whether `blocks` blocks of `bytesPerBlock` each fit one SM's shared memory.
inline bool fitsSm(const Target &t, int64_t bytesPerBlock, int64_t blocks) {
    return blocks * (bytesPerBlock + kReservedPerBlock) <= t.sharedPerSM;
}

/// Whether one block may have `bytesPerBlock` (the opt-in limit) and `blocks` of them fit one SM.
inline bool fits(const Target &t, int64_t bytesPerBlock, int64_t blocks) {
    return bytesPerBlock <= t.maxSharedPerBlock && fitsSm(t, bytesPerBlock, blocks);
}

} // namespace tilec::smem
