/// \file
/// wgmma for the T.gemms of kernels that keep the cp.async path on sm_90a.
#pragma once

#include "tilec/Diagnostics.h"
#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

namespace tilec::passes {

/// On a target with wgmma (sm_90a), a kernel that specializeWarps left without warp roles (pass_configs
/// disabling warp specialization, --no-warp-specialize, the variant without TMA, loops TMA cannot feed) still
/// runs its T.gemms on wgmma where they can: shared operands whose rows are a multiple of 32 bytes in whole
/// 8-row periods, read whole, which swizzleShared then stores in the panel layout that wgmma's descriptors walk
/// (TMA's: column panels of the widest 128, 64 or 32 bytes dividing a row, each its rows one after another with
/// the 16-byte chunks XOR-swizzled; rows of 32, 64 or 128 bytes are one panel, the row swizzle of every
/// cp.async tile), the cp.async transfers writing that layout; A possibly a 16-bit fragment (RS); types and
/// majors wgmma takes; the accumulators split over the kernel's warpgroups (wgmmaCan). An N-major B whose
/// product's warpgroups split N inside such a panel (a 64x64 output at 256 threads: 32 columns each, 128-byte
/// rows) is stored in narrower panels instead, the widest of 64 or 32 bytes dividing one warpgroup's columns,
/// where the product then runs on wgmma: the span is recorded on the kernel (TileLayout::swizzleBytes), from
/// which swizzleShared, the transfers, lowerGemm's descriptors and the simulator take it. Products tied together
/// (an accumulator or A fragment in common, or fragments that element-wise work, a reduction or a copy
/// connects) take one instruction, since their fragments keep layouts of one kind: a group runs on wgmma when
/// all of its products can. The groups that cannot stay on mma.sync when their products read A from shared
/// memory, a product of them that reads a tile a wgmma reads in panels of rows wider than one panel reading
/// both its tiles as panels (GemmInstr::MmaPanels, gemm_ss_panels); otherwise the whole kernel stays on
/// mma.sync. The wgmmas are then issued and waited for at once (placeWgmmaWaits), their operand tiles placed
/// at 1024-byte boundaries (planSharedMemory) behind a proxy fence where threads wrote them. `-v` says per
/// kernel which it chose and why not.
ir::Program cpAsyncWgmma(const ir::Program &p, const Variant &v, const SourceManager *sources = nullptr);

} // namespace tilec::passes
