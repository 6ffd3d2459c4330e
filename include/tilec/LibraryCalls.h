/// \file
/// The registry of the device library (stdlib/tilec) calls that lowering emits as `Call` nodes: for each, its
/// IR name, the C++ function codegen prints, how many leading arguments are template arguments (and which of
/// those are booleans), every argument's name, its memory effects and which threads issue it. The passes that
/// make calls (pipelineLoops, specializeWarps, lowerGemm, ...), the passes and code generation that read them
/// (insertSyncs, swizzleShared, codegen) and the CPU simulator all consult this one table: an argument is
/// found by its name, never by a position written down elsewhere.
///
/// Buffer arguments are `tilec.address_of(Load(buffer, index))`.
#pragma once

#include "tilec/IR.h"

#include <string>
#include <vector>

namespace tilec::passes {

namespace lib {

enum class Fn {
    AddressOf,     ///< &buffer[index]: the one expression form of a buffer argument
    Sync,          ///< __syncthreads(): every thread of the block (of the role, inside WarpRoles)
    NamedSync,     ///< bar.sync id, threads: a barrier of some threads (a role's)
    NamedArrive,   ///< bar.arrive id, threads: an arrival on such a barrier without waiting (ping-pong turns)
    ShflXor,       ///< __shfl_xor_sync over the warp
    Shfl,          ///< __shfl_sync: `value` of lane `lane` within groups of `width` lanes (T.tvm_warp_shuffle)
    WarpAny,       ///< __any_sync over the warp: whether `pred` holds in any of its 32 lanes (skipUnitRescales)
    Swz,           ///< the element offset of a swizzled shared tile (swizzle.cuh)
    SwzPanels,     ///< the element offset of a shared tile in the panel layout (swizzle.cuh: swz_panels)
    SwzSplit,      ///< Swz of `runtime + fixed`, the part unrolled loops fix kept apart (swizzle.cuh: swz_split)
    SwzPanelsSplit, ///< SwzPanels likewise (swizzle.cuh: swz_panels_split)
    CopyG2S,       ///< cp.async tile transfer, issued (completed by CpAsyncWait)
    CopyG2SWait,   ///< the same, committed and waited for
    CpAsyncCommit, CpAsyncWait,
    GemmSS, GemmRS, ///< mma.sync warp-tile GEMMs (mma.cuh)
    GemmSSPanels, GemmRSPanels, ///< the same over TMA-filled shared tiles in the panel layout (sm_90: TMA, no wgmma)
    // Hopper (sm90_*.cuh)
    MbarrierInit, MbarrierInitFence, MbarrierArrive, MbarrierArriveExpectTx, MbarrierWait,
    TmaLoadTile,   ///< cp.async.bulk.tensor boxes of one tile, completing on an mbarrier
    WgmmaSS,       ///< a warpgroup GEMM over shared tiles: fence, wgmma.mma_async..., commit
    WgmmaWait,     ///< wgmma.wait_group
    FenceProxyAsync,
    WgmmaWaitAcc,  ///< wgmma.wait_group, then the accumulators count as written there (before reading them)
    WgmmaClear,    ///< zero accumulators and pin them, so no zeroing sinks into the wgmma pipeline
    WgmmaSSInit,   ///< WgmmaSS overwriting its accumulators: scale-d 0 in its first k-step (zeroInitWgmma)
    // Thread-block clusters (sm90_barrier.cuh, sm90_tma.cuh)
    TmaLoadTileMulticast, ///< this CTA's share of a tile that the cluster's CTAs load together, multicast to all
    MbarrierArriveCluster, ///< one arrival on the barrier at this address in each of the cluster's first `ctas` CTAs
    ClusterSync,   ///< barrier.cluster arrive + wait: every thread of every CTA of the cluster
    ClusterRank,   ///< this CTA's rank in its cluster (a value)
    // The Hopper GEMM epilogue (sm90_store.cuh)
    StmatrixTile,  ///< a warpgroup's accumulators of one 64-row piece into a swizzled shared panel (stmatrix)
    TmaStoreTile,  ///< cp.async.bulk.tensor of a shared panel to a global box, committed as a bulk group
    TmaStoreWait,  ///< cp.async.bulk.wait_group.read: the issuing thread's stores no longer read shared memory
    WgmmaRS,       ///< a warpgroup GEMM with A a 16-bit fragment in registers, B a shared tile (asynchronous)
    WgmmaFenceOperands, ///< registers a wgmma read or wrote count as used here (nothing touching them moves across)
    // Explicit warp roles (T.ws, T.alloc_barrier, T.barrier_*, T.tma_copy; lowerWarpRoles)
    MbarrierExpectTx,   ///< expect_tx without an arrival (T.tma_copy's own announcement of its bytes)
    MbarrierArriveEach, ///< T.barrier_arrive: one arrival by every thread of the role that reaches it; `noinc` 1:
                        ///< T.cp_async_barrier_noinc's (the front end's mark; asyncPtxCopies removes it)
    WarpGroup,     ///< front end only: the condition of a `with T.ws(group)` block (lowerWarpRoles removes it)
    TmaCopyOn,     ///< front end only: the condition over a T.tma_copy's Copy, naming its mbarrier
    Reducer,       ///< front end only: T.alloc_reducer's buffer and its ReduceKind (lowerReducers removes it)
    FinalizeReducer, ///< front end only: T.finalize_reducer's buffer (lowerReducers combines the threads' parts there)
    // TileLang's warp-level API (T.shfl_xor, T.shfl_down, T.shfl_up, T.sync_warp, T.thread_return)
    ShflXorSync,   ///< __shfl_xor_sync(mask, value, delta, width)
    ShflDownSync,  ///< __shfl_down_sync(mask, value, delta, width)
    ShflUpSync,    ///< __shfl_up_sync(mask, value, delta, width)
    SyncWarp,      ///< __syncwarp(mask): the lanes of mask wait for each other
    ThreadReturn,  ///< `return`: the thread leaves the kernel (T.thread_return)
    GridSync,      ///< T.sync_grid: every thread of every block of the grid (a cooperative launch)
    GemmSpSS,      ///< T.gemm_sp: the 2:4 sparse warp-tile GEMM on mma.sp, A compressed + metadata E (mma_sp.cuh)
    // TileLang's intrinsics-level GEMM (tilelang.cuda.intrinsics' emitter; src/eval/TileLangMmaEmitter.cpp)
    MmaSync,       ///< one m16n8kK mma.sync of the warp on its threads' registers: c += a * b, fragments in PTX order
    LdMatrix,      ///< ldmatrix of the warp: `count` 8x8 matrices of 16-byte shared rows (lane l: row l % 8 of matrix l / 8) into registers
    RoleThread,    ///< threadIdx.x (a value) in a warp role of threads first .. first + count - 1, which analyses know
    // Conversions (stdlib/tilec/fp4.cuh)
    Fp4Code,       ///< the fp4 (e2m1) code 0 .. 15 of a float (int32): nearest, ties to even, saturating, NaN to 0
    Fp4x2Code,     ///< the byte of two fp4 codes, `lo` in bits 0-3 and `hi` in bits 4-7 (int32 0 .. 255)
    TmaLoadTileRows, ///< a tile's TMA boxes of boxRows rows that start below row `live` (sm90_tma.cuh)
    WgmmaSpSS,     ///< T.gemm_sp on wgmma.mma_async.sp: A compressed and B panel tiles, E row-swizzled (sm90_wgmma_sp.cuh)
    CpAsyncChunk,  ///< one thread's cp.async of `bytes` (4, 8, 16) into shared memory, zero-filled where not `valid` (a gathered fill)
    AsyncCopyOn,   ///< front end only: the condition over a T.async_copy's Copy, its loop_layout's row-blocked map
                   ///< (rowThreads threads a row, runs of `run` elements; 0, 0: none) (lowerAsyncCopies removes it)
    CpAsyncCopy,   ///< one thread's cp.async of a T.async_copy: writes `dst` from its issue until the CpAsyncWait
                   ///< that retires its group (insertSyncs orders both ends; lowerAsyncCopies proves the waits)
    AsyncLanded,   ///< after a CpAsyncWait: T.async_copy chunks into `buffer` may land there (lowerAsyncCopies says
                   ///< which; insertSyncs orders later readers after it and removes it)
    CpAsyncArrive, ///< cp.async.mbarrier.arrive: the issuing thread's earlier cp.async copies hold `bar`'s phase open
                   ///< until they land (a plain arrival of the thread follows it: asyncPtxCopies)
    MaxNregInc,    ///< setmaxnreg.inc: the warpgroup's register limit raised to `regs` (T.set_max_nreg(n, 1); every
                   ///< thread of the warpgroup executes it: keepMaxNreg keeps it only where that holds)
    MaxNregDec,    ///< setmaxnreg.dec: the warpgroup's register limit lowered to `regs` (T.set_max_nreg(n, 0))
    BulkStore,     ///< cp.async.bulk.global.shared::cta of `bytes` contiguous bytes (a multiple of 16, both ends 16-byte
                   ///< aligned) from shared `src` to global `dst`, committed as a bulk group: reads `src` until the
                   ///< issuing thread's TmaStoreWait retires the group (bulkStores; sm90_store.cuh's bulk_store)
    Stmatrix,      ///< stmatrix of the warp (sm_90): `count` 8x8 matrices of 16-bit elements from the lanes' registers
                   ///< (`src`: 2 * count elements) to 16-byte shared rows (lane l: row l % 8 of matrix l / 8), the
                   ///< reverse of LdMatrix (storeMatrices: a tensor-core fragment's copy into a shared tile)
};

/// Hardware barrier ids of warp-specialized kernels (bar.sync; 0 is __syncthreads'): the consumer role's
/// barrier, and the first of the per-warpgroup barriers of the epilogue (consumer warpgroup g uses
/// kWarpgroupBarrier + g).
constexpr int kRoleBarrier = 1;
constexpr int kWarpgroupBarrier = 2;
/// The first of the two ping-pong barriers of pingPongConsumers (consumer warpgroup g waits on
/// kPingPongBarrier + g for its turn at the tensor cores): after the epilogue's (two warpgroups: 2 and 3).
constexpr int kPingPongBarrier = 4;
/// The first of the barriers insertSyncs gives the branches of `if`s on the thread index that hold for whole warps
/// (one id per branch, up to 15: bar.sync id, count among that branch's threads).
constexpr int kFirstPartialBarrier = 6;

/// One row of an 8x8 matrix of 16-bit elements: what an ldmatrix or stmatrix lane addresses (16 contiguous, aligned
/// bytes, which every swizzle of shared tiles keeps whole).
constexpr int64_t kMatrixRowBytes = 16;

/// What a call does to memory, for barrier placement and the simulator.
enum Effect : unsigned {
    kNone = 0,
    kReadsShared = 1u << 0,
    kWritesShared = 1u << 1,
    kAsync = 1u << 2,   ///< completes later (ordered by its own waits, not by program order)
    kBarrier = 1u << 3, ///< orders the issuing threads' accesses
    kPure = 1u << 4,    ///< an expression: no effect at all
};

/// Which threads execute a call: every thread of the role that reaches it, one elected thread, or the
/// consumer warpgroups together (wgmma).
enum class Issuers { All, One, Warpgroups };

struct Info {
    Fn fn;
    const char *name;           ///< IR name, "tilec.copy_g2s"
    const char *cxx;            ///< the device function, "tilec::copy_g2s"
    int templateArgs;           ///< leading arguments printed as template arguments
    std::vector<int> boolArgs;  ///< template arguments printed as true / false
    std::vector<const char *> args; ///< every argument's name, template ones first
    unsigned effects;
    Issuers issuers;
    const char *minTarget;      ///< the oldest target whose library has it ("sm_80", "sm_90", "sm_90a")
    size_t optionalArgs = 0;    ///< trailing arguments a call may leave out (the device function's defaults)
};

const Info &info(Fn f);
/// The entry of an IR name, or null when the call is not a library call (math intrinsics).
const Info *find(const std::string &irName);
/// Whether `c` is a call of f.
bool is(const ir::Call &c, Fn f);
bool is(const ir::Expr &e, Fn f);
/// The position of f's argument `name` (an internal error when f has none of that name).
size_t argIndex(Fn f, const char *name);
/// c's argument `name`.
const ir::Expr &arg(const ir::Call &c, Fn f, const char *name);
/// c's argument `name` where f's trailing optional one may be left out: null when c leaves it out.
const ir::Expr *optionalArg(const ir::Call &c, Fn f, const char *name);
/// A call of f with exactly its arguments (checked against the registry); `type` for the calls that are values
/// (ShflXor, Swz).
ir::Expr call(Fn f, std::vector<ir::Expr> args, SourceRange loc = {}, DType type = DType::Void);
/// The same as a statement.
ir::Stmt stmt(Fn f, std::vector<ir::Expr> args, SourceRange loc = {});

/// The `swizzle` argument of a tile transfer (cp_async.cuh's g2s_plain, g2s_swizzled, g2s_panels): how it
/// stores the tile, row-major, in the row swizzle (swz), or in the panel layout (swz_panels).
/// The panel layout's default span (kTransferPanels) is the row's widest (swizzle.cuh's panel_span); a narrower
/// one that the plan recorded (TileLayout::swizzleBytes) is the `swizzle` argument itself (32 or 64 bytes).
enum TransferLayout : int { kTransferPlain = 0, kTransferSwizzled = 1, kTransferPanels = 2 };

/// The widest panel span (128, 64 or 32 bytes) dividing rows of `rowBytes`, 0 where none does: swizzle.cuh's
/// panel_span, the default of the library's panel-layout templates.
int widestPanelSpan(int64_t rowBytes);
/// The `swizzle` argument of a transfer storing rows of `rowBytes` in panels of `span` bytes.
int transferPanels(int span, int64_t rowBytes);
/// The panel span a transfer's `swizzle` argument stores rows of `rowBytes` in, 0 for the plain and row-swizzled
/// layouts (cp_async.cuh's g2s_panel_span).
int transferPanelSpan(int64_t swizzle, int64_t rowBytes);

} // namespace lib

/// The block barrier (`tilec.sync`, __syncthreads) as a statement.
ir::Stmt syncThreads(SourceRange loc = {});

/// `tilec.address_of(Load(b, idx))`.
ir::Expr addressOf(const ir::Buffer &b, std::vector<ir::Expr> idx);

/// The load an address argument names, or null when `e` is not `tilec.address_of(Load(...))`.
const ir::Load *addressedLoad(const ir::Expr &e);

/// The call a statement evaluates (`Evaluate(Call)`), or null; whether it is a call of f.
const ir::Call *callOf(const ir::Stmt &s);
bool isCall(const ir::Stmt &s, lib::Fn f);

/// Whether a call is a cp.async tile transfer (either form).
bool isTileTransfer(const ir::Call &c);
/// Whether a call issues a wgmma product (dense SS or RS, the SS that overwrites its accumulators, sparse SS): the
/// asynchronous tensor-core group a wgmma wait retires. A new variant is added here, not at each user.
bool isWgmmaProduct(const ir::Call &c);

/// The shared buffers a library call hands over as swizzled tiles (with the Load of each, for its index): a
/// transfer's destination, a GEMM's shared operands (T.gemm_sp's metadata among them), an ldmatrix's source (whose
/// lanes' row addresses swizzleShared maps itself). The mma.sync GEMMs and the transfers use the row swizzle
/// of swizzle.cuh (a transfer may be told the panel layout instead); wgmma and gemm_*_panels operands are in
/// the panel layout (panelSharedOperands), which is that row swizzle when the rows are 32, 64 or 128 bytes.
std::vector<const ir::Load *> swizzledOperands(const ir::Call &c);

/// The shared operands of a wgmma call (tilec.wgmma_ss and tilec.wgmma_sp_ss: A and B; tilec.wgmma_rs: B) that it
/// reads through the async proxy, in the panel layout; empty for other calls (wgmma_sp_ss's metadata tile is read
/// by the threads themselves, in the row swizzle).
std::vector<const ir::Load *> wgmmaSharedOperands(const ir::Call &c);

/// The shared operands a call reads in the panel layout (sm90_tma.cuh, swizzle.cuh's swz_panels): a wgmma's,
/// and those of the mma.sync GEMMs over panels (tilec.gemm_ss_panels: A and B; tilec.gemm_rs_panels: B).
std::vector<const ir::Load *> panelSharedOperands(const ir::Call &c);

} // namespace tilec::passes
