/// \file
/// Which tiles TMA can load and which T.gemms the Hopper instructions can compute from them: the operand rules
/// that specializeWarps, lowerWarpRoles and cpAsyncWgmma share, and the one interning of tensor maps (they and
/// stageEpilogue add maps), and the panel-layout tiles they record. Defined in src/lower/HopperOperands.cpp
/// (registerOperandTied in CpAsyncWgmma.cpp, clearsAllRegisters in PlaceWgmmaWaits.cpp).
#pragma once

#include "tilec/IR.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes {

/// One tile load TMA can do: a box of the source tensor whose innermost dimension is the tile's columns and
/// one other dimension its rows.
struct TmaTile {
    const ir::Copy *copy = nullptr;
    int rank = 0;
    int rowDim = 0;             ///< the rows' dimension in the map's order (innermost first)
    int64_t rows = 0, cols = 0;
    int elemBytes = 0, swizzle = 0;
    ir::TensorMap map;
    std::vector<ir::Expr> coords; ///< the tile's origin, innermost first
    int64_t bytes() const { return rows * cols * elemBytes; }
};

/// The TMA load of a global-to-shared copy into a whole 2-D shared buffer of kernel `k`, if TMA can do it (see
/// below; never from a tensor that has a T.Layout in `k`). `span`: the panel span of the tile the destination is
/// a part of (panelPart), which the load keeps; 0: the destination's own (panelSwizzleBytes of its rows).
std::optional<TmaTile> planTmaTile(const ir::Copy &c, const ir::Kernel &k, int span = 0);

/// The TMA load of T.gemm_sp's metadata tile E (copy `c`, a whole 2-D shared buffer) stored as
/// sm90_wgmma_sp.cuh reads it, under the row swizzle swz<K/16, 2>: rows of 32, 64 or 128 bytes in TMA's swizzle
/// of that span (the same XOR of the row's 16-byte chunks), rows of 16 bytes dense (an unswizzled box of
/// whole rows, swizzle 0, 2-D); none for other rows (8 or 4 bytes: below TMA's 16-byte box; over 128 bytes:
/// TMA's panels are not the row swizzle's order).
std::optional<TmaTile> planTmaMetadata(const ir::Copy &c, const ir::Kernel &k);

/// The metadata tiles E of the T.gemm_sp among `stmts`.
std::set<const ir::BufferNode *> sparseMetadataTiles(const std::vector<ir::Stmt> &stmts);

/// Whether a warp-role producer's threads can copy T.gemm_sp metadata tile `c` themselves (rows of 2 to 8 bytes,
/// below TMA's box): a box of the global tensor, its columns along the innermost dimension, its rows along one
/// other (every other extent 1), into a whole 2-D shared buffer.
bool metadataThreadCopyable(const ir::Copy &c);

/// A part of a shared tile stored in the panel layout of `span`-byte panels (each row cut into panels of `span`
/// bytes, a panel's rows one after another: panel p of an R-row tile is the R * span bytes from p * R * span on)
/// that is a tile in that layout itself: one element of each leading dimension (a ring's stage), every row, and
/// the columns [c, c + n) of whole panels (c a known multiple of a panel's span / element-size columns, n a
/// constant one). TMA loads such a part in its own boxes and wgmma reads it through its own descriptors: it is
/// the tile of R rows and n columns at its first panel.
struct PanelPart {
    int64_t rows = 0, cols = 0;
    /// Indices whose address (tilec.address_of) is its first panel's: the leading dimensions' own, then 0 and
    /// c * R, the panel's offset from the stage's first element (flattening is linear); {stage, 0, 0} for a
    /// whole stage, the address a whole tile always had.
    std::vector<ir::Expr> at;
};
/// Region `r`'s part of its buffer in panels of `span` bytes (0: unswizzled, the whole buffer only), or, with
/// `why` set (worded to follow "the region"), none.
std::optional<PanelPart> panelPart(const ir::Region &r, int span, std::string *why = nullptr);

/// The tile a T.gemm operand `r` reads of `whole`, its buffer's tile in the panel layout: `whole` with the part's
/// columns, where the region is a PanelPart of it (nothing else is a tile wgmma can read).
std::optional<TmaTile> operandPart(const ir::Region &r, const TmaTile &whole);

/// Why TMA's rules (TensorMap::kAlignment) can hold for no arguments of global tensor `tensor`: a byte stride
/// that is a compile-time constant not a multiple of it, or a constant dimension past 2^31 - 1 (TMA's 32-bit
/// coordinates cannot reach its far elements); empty when they may hold. A variant with a tensor map
/// of it would always be rejected at launch, so the passes do not make one.
std::string tmaNeverHolds(const ir::Buffer &tensor);

/// The index of `m` in `k`'s tensor maps, added at the end where no equal map is there yet: one map per distinct
/// (tensor, box, swizzle), in the order the passes first need them.
int internTensorMap(ir::Kernel &k, const ir::TensorMap &m);

/// Records (Kernel::recordTileLayout) the shared operands of `k`'s T.gemms that run on wgmma or on mma.sync over
/// panels as tiles in the panel layout: of the span `spans` gives a buffer (the plan's narrower choice), else of
/// their rows' widest (a TMA tile keeps its own record, of that span too): what the pass that chose those
/// instructions leaves for lowerGemm, swizzleShared and planSharedMemory, which read the span from there.
void recordPanelOperands(ir::Kernel &k, const std::map<const ir::BufferNode *, int> &spans = {});

/// Whether `s` is a nest of unrolled loops storing zero into every one of the `count` registers of `regs` (a
/// lowered T.clear of an accumulator, which wgmma code replaces by `tilec.wgmma_clear`; placeWgmmaWaits and
/// overlapScores read it; PlaceWgmmaWaits.cpp).
bool clearsAllRegisters(const ir::Stmt &s, const ir::BufferNode *regs, int64_t count);

/// Whether `g` reads operand A from a fragment (registers).
bool aInRegisters(const ir::Gemm &g);

/// Whether wgmma can compute `g` with its shared operands among `tiles` (each the whole or a PanelPart of its
/// buffer's tile: operandPart) and `warpgroups` consumer
/// warpgroups splitting the accumulator (SS, or RS with A a 16-bit or float8 fragment; float8 with B K-major); `rowsOnly`: every product of
/// the loop must split by rows (one of them reads A from another's accumulator).
bool wgmmaCan(const ir::Gemm &g, const std::map<const ir::BufferNode *, const TmaTile *> &tiles, int warpgroups,
              bool rowsOnly = false);

/// Whether wgmma can compute a T.gemm of `stmts` (wgmmaCan, with `tiles`, `warpgroups` and `rowsOnly`).
bool anyWgmmaCan(const std::vector<ir::Stmt> &stmts, const std::map<const ir::BufferNode *, const TmaTile *> &tiles, int warpgroups,
                 bool rowsOnly);

/// Whether mma.sync can compute `g` reading its shared operands in TMA's panel layout straight from `tiles`
/// (sm_90 without the `a`: B, and A unless it is a 16-bit fragment, are such tiles of whole 8-row periods, or
/// PanelParts of them). `anyA`: A may be a fragment of any type mma.sync takes (tf32 too: sm_90a's mma warp roles).
bool mmaPanelsCan(const ir::Gemm &g, const std::map<const ir::BufferNode *, const TmaTile *> &tiles, bool anyA = false);

/// Whether any T.gemm in `stmts` reads A from a fragment.
bool anyRegisterOperand(const std::vector<ir::Stmt> &stmts);
/// Whether a T.gemm in `s` reads A from a fragment that element-wise work, a reduction or a copy between
/// fragments ties to a T.gemm's accumulator (FlashAttention's P cast from its scores; A being an accumulator
/// itself): that fragment and the accumulator then share one layout, so the products must split the rows only.
/// An A fragment filled otherwise (from shared memory: MLA decoding's split P) takes wgmma's A layout alone, a
/// copy in each warpgroup column. (CpAsyncWgmma.cpp)
bool registerOperandTied(const ir::Stmt &s);

/// Whether `stmts` use a buffer of `tiles` other than as the shared operands of a T.gemm that wgmma (with
/// `warpgroups` and `rowsOnly` as for wgmmaCan; mma.sync over the panel layout where `mma`) can compute from
/// `operands` (default: `tiles`). Where `reads` is given, the tiles read otherwise (element-wise loads, a copy's
/// or a reduction's source) are collected there and do not count: only writes and other products do. `mixed`:
/// a product wgmma cannot take counts as a T.gemm of the tiles too where mma.sync can read its operands as
/// panels (mmaPanelsCan; --mixed-warp-roles). `anyA` (with `mma`): as mmaPanelsCan's.
bool tilesUsedOtherwise(const std::vector<ir::Stmt> &stmts, const std::map<const ir::BufferNode *, const TmaTile *> &tiles,
                        int warpgroups, bool rowsOnly, bool mma,
                        const std::map<const ir::BufferNode *, const TmaTile *> *operands = nullptr,
                        std::set<const ir::BufferNode *> *reads = nullptr, bool mixed = false, bool anyA = false);

/// A T.Pipelined loop's body (its top-level statements, or those of a condition around them) with each
/// T.Parallel loop that fills a whole 1-D shared buffer from a run of a global tensor's innermost dimension
/// (what lowerTileOps makes of such a T.copy) as that Copy again, for planTmaTile; `body` itself when none
/// is (HopperOperands.cpp). `originals` maps each such Copy to the loop it stands for (what the consumers
/// run where the producer cannot hoist it).
ir::Stmt rowCopies(const ir::Stmt &body, std::map<const ir::StmtNode *, ir::Stmt> &originals);

/// The tile a shared operand `r` of a product is when wgmma can read it from a buffer the threads fill
/// themselves (stored in the panel layout: rows of a multiple of 32 bytes, in whole 8-row periods, read whole);
/// why not otherwise (CpAsyncWgmma.cpp).
std::string operandTile(const ir::Region &r, TmaTile &out);

/// `s` with each T.gemm that can read its shared operands from `tiles` marked to run on wgmma (mma.sync over
/// the panel layout where `mma`, or where `mixed` for those wgmma cannot take and mma.sync can read as panels);
/// `registerAOnMma` is set where one with A from registers stays on mma.sync. `anyA` (with `mma`): as mmaPanelsCan's.
ir::Stmt markWgmma(const ir::Stmt &s, const std::map<const ir::BufferNode *, const TmaTile *> &tiles, int warpgroups,
                   bool rowsOnly, bool mma, bool &registerAOnMma, bool mixed = false, bool anyA = false);

} // namespace tilec::passes
