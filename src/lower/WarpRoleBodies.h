/// \file
/// What specializeWarps decides about one T.Pipelined loop (its Plan), and the code of the two roles it
/// builds from it: the producer's TMA loads, the consumers' waits and releases around the kernel's own code,
/// and the barriers' initialisation (WarpRoleBodies.cpp); its clusters (WarpRolePlan.cpp). Private to
/// src/lower/SpecializeWarps.cpp.
#pragma once

#include "tilec/IR.h"
#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/LoweringOptions.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/HopperOperands.h"
#include "tilec/passes/TileWalks.h"
#include "tilec/passes/WarpRolePlan.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilec::passes::warproles {

using namespace ir;

inline Expr intImm32(int64_t v) { return intImm(v, DType::Int32); }

/// The barrier groups: the ring's tiles first used by the same statement of the loop's body.
struct Group {
    size_t first = 0, last = 0;
    std::vector<size_t> tiles;
    int64_t bytes = 0;
    bool generic = false; ///< the consumers read a tile of it through the generic proxy (loads, not only wgmma)
};

/// What specialize() has decided about one T.Pipelined loop so far, filled step by step. Its byBuffer
/// points into tiles and once: a plan is neither copied nor moved.
struct Plan {
    Plan() = default;
    Plan(const Plan &) = delete;
    Plan &operator=(const Plan &) = delete;

    const For *loop = nullptr;
    size_t at = 0;                    ///< the loop's position among the kernel's top-level statements
    SourceRange loc;                  ///< the loop's
    bool mma = false;                 ///< sm_90 (no wgmma): mma.sync consumers and one producer warp
    int S = 0, C = 0, P = 0;          ///< stages, consumer threads, producer threads
    std::vector<TmaTile> tiles, once; ///< the ring's tiles and those loaded once before the loop
    std::vector<size_t> onceAt;       ///< where the once tiles' copies stand among the top-level statements
    std::map<const BufferNode *, const TmaTile *> byBuffer;
    std::vector<TmaTile> views;                           ///< shared operands the consumers fill themselves, as wgmma reads them
    std::vector<const BufferNode *> viewOf;               ///< ... and their buffers
    std::map<const BufferNode *, const TmaTile *> operands; ///< what a wgmma may read: byBuffer and views
    std::set<const BufferNode *> genericReads;            ///< TMA tiles the consumers also read through the generic proxy
    bool onceGeneric = false;                             ///< ... a tile loaded once among them
    bool rowsOnly = false;                              ///< a T.gemm reads A from registers
    std::vector<Stmt> rest;                             ///< the body without the hoisted copies, T.gemm marked for wgmma
    std::vector<std::set<const BufferNode *>> mentions; ///< the buffers each statement of rest mentions
    std::vector<Group> groups;
    int G = 0;
    std::map<const BufferNode *, Buffer> ring; ///< each staged buffer's ring of S stages
    Expr gridTiles;                            ///< the grid's tile count
    std::optional<int64_t> constTiles;
    int uneven = 0, unevenAxis = -1; ///< how many grid dimensions the loop's work depends on; the one, if one
    bool persistent = false;
    /// The consumers pass a barrier of theirs right after the loop, so that the buffers they use only after it
    /// may share memory with the rings and once tiles (planSharedMemory's warpRoleReuse): where the buffers
    /// do not fit apart.
    bool consumerBarrier = false;
    Buffer mbar;
    int blocks = 0; ///< planned blocks per SM
    ClusterPlan cluster;
    int CM = 1; ///< blocks per cluster
    int clusterMinWaves = 0; ///< Kernel::clusterMinWaves: clustered for a tile count known only at run time
    std::vector<int> ringMap, onceMap; ///< each tile's tensor map
    /// Per ring tile, null or the rows R (Gemm::liveRowsAt) from which on its only readers, wgmma A operands,
    /// skip the block's panels: the producer loads it in boxes of kLiveBoxRows rows, those starting below R.
    std::vector<Expr> liveRows;
    Expr tileCount;                    ///< persistent: the tiles the roles walk
    Var producerTile, consumerTile;
    Buffer ringBase; ///< where the trip count varies by tile: the iterations of the block's earlier tiles
    Expr baseNow;
    Expr onceBar, onceEmpty; ///< the once tiles' full barrier, and (persistent) their empty one
    const TileWalk *walk = nullptr;     ///< the kernel's own walk over output tiles around the loop, if any
    const std::vector<Stmt> *outer = nullptr; ///< ... the kernel's top-level statements
    size_t walkAt = 0;                  ///< ... and the walk's position among them
    std::vector<Stmt> replay; ///< statements ahead of the loop the producer runs first: the scalars it reads (KernelScalars::replay)
    /// T.gemm_sp metadata tiles of rows below TMA's 16-byte box (planTmaMetadata): every producer thread copies
    /// its rows with plain loads and stores and arrives on its group's full barrier (1 + P arrivals), and the
    /// whole producer warpgroup runs the producer's loop (its TMA loads by its first thread).
    std::vector<const Copy *> threadTiles;
    std::vector<int> threadTileGroup; ///< ... and each one's barrier group
    Expr guard;      ///< the condition each iteration's body runs under (block-sparse `if mask[...]:`), if any
    Stmt unguarded;  ///< ... and the loop with the guarded body as its body (`loop` points to it)

    Expr barrier(const Expr &index) const { return addressOf(mbar, {simplify(index)}); }
    Expr full(int g, const Expr &stage) const { return barrier(binary(BinaryOp::Add, intImm32(2 * g * S), stage)); }
    Expr empty(int g, const Expr &stage) const { return barrier(binary(BinaryOp::Add, intImm32(2 * g * S + S), stage)); }
    Stmt resetBase() const { return Store::make(ringBase, {intImm32(0)}, intImm32(0), loc); }
    Stmt advanceBase() const {
        if (guard) return Seq::make({}, loc); // advanced by each iteration that runs (advanceOne)
        return Store::make(ringBase, {intImm32(0)}, simplify(binary(BinaryOp::Add, baseNow, binary(BinaryOp::Max, loop->extent, intImm32(0)))), loc);
    }
    Stmt advanceOne() const { return Store::make(ringBase, {intImm32(0)}, simplify(binary(BinaryOp::Add, baseNow, intImm32(1))), loc); }
    /// The body of one iteration, under the guard where there is one (then the ring moves on one stage).
    Stmt iteration(std::vector<Stmt> body, const VarMap &vars) const {
        if (!guard) return Seq::make(std::move(body), loc);
        body.push_back(advanceOne());
        return IfThenElse::make(substitute(guard, vars), Seq::make(std::move(body), loc), nullptr, loc);
    }
    /// The ring stage and phase of iteration `ko` (of output tile `tile` where persistent); with a guard,
    /// of the next iteration that runs. Where a constant trip count times the tiles may pass 32 bits (a grid
    /// that follows a run-time size), both come from the position modulo 2S, formed from the tile modulo 2S
    /// (floormod(a b + c, m) = floormod(floormod(a, m) floormod(b, m) + c, m)): widenIndices would otherwise
    /// compute every shared index that reads the stage in 64 bits, out of splitSwizzles' reach (a tile the
    /// consumers read element by element: TileKernels' pre_norm_fn_fwd_mul, whose grid follows its token count).
    std::pair<Expr, Expr> stageOf(const Var &ko, const Var &tile) const {
        Expr k0 = simplify(binary(BinaryOp::Sub, ko, loop->min));
        if (guard) k0 = baseNow;
        else if (ringBase) k0 = simplify(binary(BinaryOp::Add, baseNow, k0));
        else if (auto trips = constInt(loop->extent); tile && trips && (!constTiles || *constTiles * *trips >= (int64_t(1) << 31))) {
            const Expr ring = intImm32(2 * S), low = binary(BinaryOp::FloorMod, tile, ring);
            k0 = simplify(binary(BinaryOp::FloorMod, binary(BinaryOp::Add, binary(BinaryOp::Mul, low, intImm32(*trips % (2 * S))), k0), ring));
        } else if (tile) k0 = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, tile, loop->extent), k0));
        return std::pair{simplify(binary(BinaryOp::FloorMod, k0, intImm32(S))),
                         simplify(binary(BinaryOp::FloorMod, binary(BinaryOp::FloorDiv, k0, intImm32(S)), intImm32(2)))};
    }
};

/// The box height of a tile loaded in part (Plan::liveRows): wgmma's panel.
constexpr int64_t kLiveBoxRows = 64;

/// One TMA load of a tile; boxRows > 0: this block's share of a tile the cluster loads together, multicast to
/// every block of it; live: the tile's boxes of kLiveBoxRows rows that start below it (Plan::liveRows).
Stmt tmaLoad(const Plan &p, const TmaTile &t, int map, const Expr &dst, const Expr &bar, const VarMap &vars, int64_t boxRows,
             const Expr &live = nullptr);

/// Plan::liveRows: the ring tiles of wgmma's A operands whose rows past the block's live rows no one reads
/// anywhere in the kernel's `body` (the wgmma skip those rows' panels).
void planLiveRowBoxes(Plan &p, const Stmt &body);

/// Each of p's thread tiles joins the barrier group of the TMA tiles first used where it is (a T.gemm_sp's A_sparse
/// and B), which every consumer thread then releases (they read it with their own loads); false (`why`) where
/// no group's tiles are first used there.
bool joinThreadTiles(Plan &p, std::string &why);

/// Producer: one thread loads the once tiles, then walks the loop, filling each group's part of a stage once
/// its consumers have released it.
Stmt producerRole(const Plan &p, const Kernel &k);

/// Consumers: the kernel's own code (its top-level statements `top`); each group's stage waited for before its
/// first use and released after its last.
Stmt consumerRole(const std::vector<Stmt> &top, const Plan &p, const Kernel &k, const LoweringOptions &o);

/// Clusters (src/lower/WarpRolePlan.cpp): p.cluster and p.CM for the planned loop. Persistent GEMMs with one
/// barrier group walk cluster units, two or four blocks sharing a tile, where each block walks at least two
/// waves of tiles; T.ClusterKernel's clusters where they can be honoured, else `clusterWhy` says why not.
void chooseCluster(Plan &p, const Kernel &k, const Target &t, const LoweringOptions &o, std::string &clusterWhy);

/// Thread 0 initialises every barrier: full (one arrival: the producer's) and empty (the consumers').
Stmt initBarriers(const Plan &p, const Kernel &k);

} // namespace tilec::passes::warproles
