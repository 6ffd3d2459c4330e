/// \file
/// Hopper's producer/consumer pipeline for T.Pipelined loops (TMA rings guarded by mbarriers, wgmma).
#pragma once

#include "tilec/IR.h"
#include "tilec/LoweringOptions.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace tilec {
class DiagnosticEngine;
}

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
/// below; never from a tensor that has a T.Layout in `k`).
std::optional<TmaTile> planTmaTile(const ir::Copy &c, const ir::Kernel &k);

/// Why TMA's rules (TensorMap::kAlignment) can hold for no arguments of global tensor `tensor`: a byte stride
/// that is a compile-time constant not a multiple of it, or a constant dimension past 2^31 - 1 (TMA's 32-bit
/// coordinates cannot reach its far elements); empty when they may hold. A variant with a tensor map
/// of it would always be rejected at launch, so the passes do not make one.
std::string tmaNeverHolds(const ir::Buffer &tensor);

/// The index of `m` in `k`'s tensor maps, added at the end where no equal map is there yet: one map per distinct
/// (tensor, box, swizzle), in the order the passes first need them.
int internTensorMap(ir::Kernel &k, const ir::TensorMap &m);

/// Whether `g` reads operand A from a fragment (registers).
bool aInRegisters(const ir::Gemm &g);

/// Whether wgmma can compute `g` with its shared operands among `tiles` and `warpgroups` consumer
/// warpgroups splitting the accumulator (SS, or RS with A a 16-bit fragment); `rowsOnly`: every product of
/// the loop must split by rows (one of them reads A from another's accumulator).
bool wgmmaCan(const ir::Gemm &g, const std::map<const ir::BufferNode *, const TmaTile *> &tiles, int warpgroups,
              bool rowsOnly = false);

/// Whether mma.sync can compute `g` reading its shared operands in TMA's panel layout straight from `tiles`
/// (sm_90 without the `a`: B, and A unless it is a 16-bit fragment, are such tiles of whole 8-row periods).
bool mmaPanelsCan(const ir::Gemm &g, const std::map<const ir::BufferNode *, const TmaTile *> &tiles);

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
/// or a reduction's source) are collected there and do not count: only writes and other products do.
bool tilesUsedOtherwise(const std::vector<ir::Stmt> &stmts, const std::map<const ir::BufferNode *, const TmaTile *> &tiles,
                        int warpgroups, bool rowsOnly, bool mma,
                        const std::map<const ir::BufferNode *, const TmaTile *> *operands = nullptr,
                        std::set<const ir::BufferNode *> *reads = nullptr);

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
/// the panel layout where `mma`); `registerAOnMma` is set where one with A from registers stays on mma.sync.
ir::Stmt markWgmma(const ir::Stmt &s, const std::map<const ir::BufferNode *, const TmaTile *> &tiles, int warpgroups,
                   bool rowsOnly, bool mma, bool &registerAOnMma);

/// On targets with TMA and wgmma (sm_90a), rewrites a kernel whose top level holds a T.Pipelined loop of
/// tile loads feeding T.gemm into warp-specialized code:
///
/// - the loop's hoistable global-to-shared copies (see Staging.h) that TMA can move (a 2-D box of the source
///   tensor: rows along one dimension, whole rows of at most 256 elements per box, the row a multiple of
///   32 bytes) become `tilec.tma_load_tile` calls into a ring of `num_stages` copies of their buffers, stored
///   in the panel layout of the TMA swizzle (128, 64 or 32 bytes: the widest dividing the row), each source
///   described by a tensor map (Kernel::tensorMaps) the launcher encodes;
/// - a top-level copy before the loop whose shared destination only the loop uses (FlashAttention's Q) is
///   such a tile too, loaded once by the producer before its loop onto a barrier of its own, which the
///   consumers wait for where the copy was;
/// - every T.gemm of the loop whose shared operands are both such tiles (SS), or whose A is a 16-bit
///   fragment and B such a tile (RS: attention's P.V, the consumer warpgroups then splitting the rows of every
///   product of the loop), is marked wgmma (its accumulator, and an RS product's A, then take wgmma's layout,
///   inferLayouts); when a loop has a tile TMA cannot move, a ring buffer written in the loop or read by a
///   T.gemm wgmma cannot take, nothing changes and the loop keeps the cp.async pipeline of pipelineLoops;
/// - on sm_90a (issue 25) the consumers may also read ring tiles with their own loads (element-wise work,
///   copies into fragments: those loads take TMA's panel layout, swizzleShared), a group of tiles so read being
///   released by every consumer thread after a proxy fence (its empty barrier counts the consumer threads);
///   a copy into a whole 1-D shared buffer (a row of the source's innermost dimension, a multiple of 128 bytes,
///   rowCopies) is an unswizzled TMA box; a product may read a shared operand the consumers fill themselves
///   (operandTile), and where the loop needed any of these, the products outside it run on wgmma too, or the
///   loop keeps cp.async;
/// - a producer warpgroup (128 threads) is added after the kernel's own threads (Kernel::producerThreads);
///   in WarpRoles, its first thread walks the loop issuing each stage's loads after waiting for the stage's
///   `empty` mbarrier and announcing the bytes on its `full` mbarrier (expect_tx covers every tile of the
///   stage); the consumers run the rest of the kernel, each iteration waiting on `full[stage]` and arriving
///   on `empty[stage]` (phase parity = pass over the ring & 1). The tiles first used by different statements
///   of the body (attention's K by QK^T, V by P.V) have a full/empty pair each (group g at 2 g S ...): the
///   consumers wait for a group right before its first use and release it right after its last (placeWgmmaWaits
///   puts the wgmma wait between); a GEMM's tiles form one group, waited for at the top and released at the
///   end of the iteration. setmaxnreg moves registers from
///   the producer to the consumers, planned for two blocks per SM where two blocks' shared memory fits and
///   the consumers' fragments still fit their registers (Kernel::minBlocksPerSM, the launch bound), else
///   one; thread 0 initializes the mbarriers (2 * num_stages per group, one for the once-loaded tiles) before
///   a block barrier. A kernel with once-loaded tiles is not persistent.
/// On sm_90 (TMA and mbarriers, but neither wgmma nor setmaxnreg) the same roles and rings, with two changes:
/// the T.gemms reading the ring tiles are marked GemmInstr::MmaPanels (mma.sync, ldmatrix addressing TMA's
/// panel layout: gemm_ss_panels / gemm_rs_panels) and keep mma.sync's layouts; and the producer is one warp
/// (32 threads) instead of a warpgroup, since without setmaxnreg every thread keeps the registers the launch
/// bound gives it (no cluster, no register moving).
/// T.ClusterKernel's cluster_dims (Kernel::clusterDims) ask for clusters: two blocks along one grid dimension
/// are planned as above (whatever the waves), and what cannot be honoured is an error in `diag` at the
/// argument (another cluster shape, a target other than sm_90a, a kernel that gets no persistent one-group
/// warp roles, no tile to share along that dimension); the variant without TMA and --no-cluster launch
/// without clusters (a -v note).
/// Under -v (spdlog's debug level) it says, per T.Pipelined loop, which path it took and why, located in
/// `diag`'s sources when given.
ir::Program specializeWarps(const ir::Program &p, const Variant &v, DiagnosticEngine *diag = nullptr);

} // namespace tilec::passes
