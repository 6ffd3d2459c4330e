/// \file
/// The calls of the device library (stdlib/tilec) that lowering emits as `Call` nodes, and where their
/// arguments are: one place for the passes that make them (pipelineLoops, lowerGemm), the passes and code
/// generation that read them (insertSyncs, swizzleShared, codegen), and the CPU simulator.
///
/// Leading integer arguments are template arguments of the C++ function (codegen prints them as such).
/// - `tilec.copy_g2s(Rows, Cols, Vec, Threads, Swizzle, dst, src, ldg, validRows, validCols)`: a tile transfer
///   issued (pipelined; ordered by pipelineLoops' own waits and barriers); `tilec.copy_g2s_wait(...)`, same
///   arguments: issued, committed and waited for (an ordinary shared-memory write for insertSyncs).
/// - `tilec.gemm_ss(M, N, K, WarpsM, WarpsN, TransA, TransB, a, b, c)` and
///   `tilec.gemm_rs(M, N, K, WarpsM, WarpsN, TransB, a, b, c)`.
/// - `tilec.cp_async_commit()`, `tilec.cp_async_wait(N)`, `tilec.swz(Cols, ElemBytes, TileElems, offset)`.
/// Buffer arguments are `tilec.address_of(Load(buffer, index))`.
#pragma once

#include "tilec/IR.h"

#include <string>
#include <vector>

namespace tilec::passes {

namespace libcall {
constexpr size_t kTransferVec = 2, kTransferDst = 5, kTransferSrc = 6;
constexpr size_t kGemmSsA = 7, kGemmSsB = 8, kGemmRsB = 7;
} // namespace libcall

/// `tilec.address_of(Load(b, idx))`.
ir::Expr addressOf(const ir::Buffer &b, std::vector<ir::Expr> idx);

/// The load an address argument names, or null when `e` is not `tilec.address_of(Load(...))`.
const ir::Load *addressedLoad(const ir::Expr &e);

/// Whether a call is a tile transfer (either form).
bool isTileTransfer(const ir::Call &c);

/// The shared buffers a library call hands over as swizzled tiles: a transfer's destination, a GEMM's
/// shared operands (with the Load of each, for its index).
std::vector<const ir::Load *> swizzledOperands(const ir::Call &c);

} // namespace tilec::passes
