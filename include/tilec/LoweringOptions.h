/// \file
/// How a program is lowered, apart from the hardware it is lowered for: the switches of the command line
/// (--no-tma, --pingpong, ...) with their defaults, the per-kernel view that TileLang's pass_configs narrow,
/// and a Variant: one target with one set of switches, what one run of the pipeline lowers for.
#pragma once

#include "tilec/Target.h"

#include <cstdint>

namespace tilec {

namespace ir {
struct Kernel;
}

/// A switch the user may set either way or leave to the lowering (Auto: the rule its field names).
enum class Choice : unsigned char { Auto, Off, On };

/// What an attention loop's schedule is: rotated (the next QK^T under this softmax) and / or in turns.
struct AttentionSchedule {
    bool overlap = false; ///< overlapScores rotates the loop
    bool turns = false;   ///< its wgmmas are issued in ping-pong turns (two consumer warpgroups)
    bool any() const { return overlap || turns; }
};

struct LoweringOptions {
    /// TMA tile loads and warp specialization where the target has them (--no-tma, --no-warp-specialize; the
    /// driver also lowers a variant without TMA for arguments that break its rules).
    bool tma = true;
    bool warpSpecialize = true;
    bool persistent = true; ///< warp-specialized kernels walk several output tiles per block (--no-persistent)
    /// Where the output tiles differ in work (the loop's trip count depends on one block index: causal
    /// attention), the persistent walk takes that index in groups of this many consecutive values, the group
    /// slowest, the position in it fastest (Kernel::walkGroup; 1: that index slowest); 0: such tiles one block
    /// each (--walk-group). 7, prime to the H200's 132 SMs, measured best (docs/PERFORMANCE.md, session 9).
    int walkGroup = 7;
    bool clusters = true;   ///< persistent warp-role kernels in clusters of two sharing a tile (--no-cluster)
    /// Blocks per cluster where tilec clusters a persistent walk of its own accord (--cluster-blocks, 2 or 4): four
    /// along one grid dimension load a shared tile once for four output tiles (a 128x128x64 GEMM's L2-to-SM bytes
    /// per K block 24 -> 20 KiB); 2 until timed on the GPU.
    int clusterBlocks = 2;
    /// Clusters for a persistent walk whose tile count is known only at run time (Kernel::clusterMinWaves): the
    /// driver lowers such a kernel once with them and once without (this switch off), for the launcher to choose.
    bool runtimeClusters = true;
    /// GEMMs whose output tiles fill at most half of the GPU split their K loop over extra blocks, the partials
    /// summed in a fixed order by a second launch (passes::splitK; --no-split-k).
    bool splitK = true;
    /// On sm_90a, a GEMM's 128x128 tiles on one warpgroup (threads=128, the seed's gemm.tile) computed two side by
    /// side in one block of two consumer warpgroups, 128x256 (passes::widenGemmTiles; --widen-gemm-tiles; off
    /// until timed on the GPU).
    bool widenGemmTiles = false;
    /// On sm_90a, T.gemm_sp on wgmma.mma_async.sp where cpAsyncWgmma can put it there (--no-sparse-wgmma: mma.sp).
    bool sparseWgmma = true;
    /// On sm_90a, a T.Pipelined loop of T.gemm_sp takes warp roles (A_sparse and B by TMA, the metadata by TMA
    /// or the producer's threads) instead of the cp.async ring. TmaMetadata (the default since session 42): only
    /// where every metadata tile is a TMA tile (H100, same seed: TileLang's gemm_sp 16384^3, E by TMA, 0.75 ->
    /// 1.07 of TileLang, right against its reference); All (--sparse-warp-roles) also where the producer's threads
    /// copy E's narrow rows (the 1024^2 example 0.87 -> 0.74); Off (--no-sparse-warp-roles).
    enum class SparseWarpRoles { Off, TmaMetadata, All };
    SparseWarpRoles sparseWarpRoles = SparseWarpRoles::TmaMetadata;
    /// On sm_90a, a T.Pipelined loop whose products run on wgmma but for some that wgmma cannot take (attention
    /// backward's dQ of 32 rows over two warpgroups) takes warp roles where mma.sync can read those from the TMA
    /// tiles' panels (mmaPanelsCan), instead of keeping the cp.async path (--no-mixed-warp-roles turns it off).
    /// On since session 40: the five attention-backward rows it changes ran right and 1.0-1.1x faster (H100).
    bool mixedWarpRoles = true;
    /// On sm_90a, a T.Pipelined loop none of whose products wgmma can take (a tf32 GEMM whose B is not K-major),
    /// each one mma.sync can run over the TMA tiles' panels (A a tile, or a fragment not tied to an accumulator),
    /// takes warp roles (TMA producer warpgroup, mma.sync consumers, as sm_90's path and TileLang's
    /// warp-specialized kernels run them) instead of the cp.async path. RegisterA (the default since session 42):
    /// only loops with a product whose A comes from registers (H100, same run: TileKernels' pre_norm_fn_fwd_mul
    /// 1.29x faster, mhc_pre_gemm_sqrsum 1.25x); All (--mma-warp-roles) also loops of products reading both
    /// operands from shared memory (visual_layout_inference's matmul 0.91x: left behind the switch); Off
    /// (--no-mma-warp-roles).
    enum class MmaWarpRoles { Off, RegisterA, All };
    MmaWarpRoles mmaWarpRoles = MmaWarpRoles::RegisterA;
    /// Serial loops whose element-wise conditions are uniform over the tile for a range of iterations (a causal
    /// mask below the diagonal) run those iterations without them (passes::splitUniformConditions;
    /// --no-split-conditions).
    bool splitConditions = true;
    /// With splitConditions, a loop is copied only where the interior drops a comparison its threads make more than
    /// once an iteration (one varying with a loop inside the body: a mask over a fragment's elements) or where the
    /// split points are constants (every copy keeps a constant trip count); a loop whose comparisons each thread
    /// makes once an iteration (the thread index against a loaded bound) at run-time points stays whole
    /// (--no-per-element-splits: split those too, as before session 43). On by default: fp8_lighting_indexer's
    /// clean_logits_ split kept 48 registers against TileLang's 32 and ran at 0.74x TileLang; unsplit, 32.
    bool perElementSplits = true;
    /// In-place multiplies of a thread's register elements by factors shared across elements (attention's output
    /// rescale) skipped where a warp vote finds every factor exactly 1 (passes::skipUnitRescales;
    /// --skip-unit-rescales). Off by default since session 44's H100 A/B: the seed's flash_d128 2.5 % faster,
    /// five of TileLang's attention examples 3-6 % slower (gqa_fwd_bshd, mha_fwd_varlen, mla_decode_ws).
    bool skipUnitRescales = false;
    /// A wgmma product right after a clear of its accumulators (attention's scores) issued with scale-d 0 in
    /// its first k-step instead of zeroing the registers (passes::zeroInitWgmma; --no-zero-init-wgmma).
    bool zeroInitWgmma = true;
    /// Hopper attention loops in FlashAttention-3's schedule: the next key block's QK^T issued before this
    /// block's softmax (--intra-overlap, --no-intra-overlap) and two consumer warpgroups taking turns at the
    /// tensor cores (--pingpong, --no-pingpong). At Auto the lowering decides per loop by its head dimension
    /// (attentionSchedule).
    Choice intraOverlap = Choice::Auto;
    Choice pingPong = Choice::Auto;
    /// Staging buffers per consumer warpgroup for the TMA-store epilogue of wgmma accumulators (1: each piece
    /// waits for the previous store; 2: stmatrix into one while the other is stored), 0: no TMA stores
    /// (--epilogue-buffers).
    int epilogueBuffers = 2;
    /// Every kernel without a launch bound of its own gets `__launch_bounds__(threads, 1)`, TileLang's bound
    /// (passes::loadBatchLaunchBounds; --no-one-block-bounds: only kernels whose batch of global loads needs it).
    /// On since session 40: every library it changes ran right and faster or tied on the H100 (layernorm 0.87 ->
    /// 0.94x TileLang).
    bool oneBlockBounds = true;
    /// The blocks per SM those bounds name (--bound-blocks=N, every such kernel; 0: not given): N > 1 caps a
    /// thread's registers at 65536 / (N x threads), an occupancy A/B for memory-bound kernels whose registers ptxas
    /// does not need (layernorm_fwd: 94 registers and 2 blocks per SM at 1, 79 and 3 at 3, TileLang's kernel 72 and 3).
    int boundBlocks = 0;
    /// Where --bound-blocks is not given, a kernel without tensor-core products takes the blocks per SM its shared
    /// memory and an estimate of its registers allow (passes::occupancyBlocks; session 44, untimed); the rest 1.
    /// --no-occupancy-bounds: 1 for every kernel, as before.
    bool occupancyBounds = true;
    /// A kernel without warp roles whose shared plan fits lets a buffer no longer used give its bytes to a later one,
    /// with a barrier between, where that raises the blocks per SM (passes::planSharedMemory; session 44, untimed;
    /// --no-shared-reuse-blocks: only where the plan does not fit, as before).
    bool sharedReuseBlocks = true;
    /// sm_90 and later: a kernel's closing shared-to-global tile copies as TMA bulk copies (cp.async.bulk) issued
    /// by single threads, as TileLang stores a tile (passes::bulkStores; --no-bulk-stores turns it off).
    bool bulkStores = true;
    /// With bulkStores, a tile whose rows lie at a stride in the tensor (a tile narrower than the tensor) as one
    /// bulk copy a row, each by its own thread (--bulk-store-rows). Off since session 42: TileLang stores such a
    /// tile with one 2-D tensor-map store, and the H100 ran elementwise_add's 32 bulk copies of 128 bytes at 0.75x
    /// TileLang (graph time) where its per-thread stores had run at 0.96x; a contiguous tile keeps its bulk copy.
    bool bulkStoreRows = false;
    /// sm_90 and later: a tensor-core fragment's copy into a 16-bit shared tile as stmatrix of each warp, as TileLang
    /// lowers `T.copy(C_local, C_shared)` (passes::storeMatrices; --no-stmatrix-copies: per-thread stores).
    bool stmatrixCopies = true;
    /// A global or shared load that several lanes of a T.Parallel nest share (`s[i, j // 32]`: one element for
    /// every 32 lanes) limits the nest's vector width by its bytes per lane, not by its element's bytes, so a
    /// 4-byte per-block scale leaves 1-byte tiles 16 lanes wide (passes::inferLayouts; --no-broadcast-load-widths:
    /// the element's bytes, as before session 43). On since session 43: per_block_cast_lossless 144 -> 65 registers
    /// under its one-block bound, 16-byte stores as TileLang's; cast_back takes TileLang's 8-wide layout.
    bool broadcastLoadWidths = true;
    /// A shared-memory load that the test of a select reads (every lane evaluates it) is loaded as a vector before
    /// the vectorized loop, and the same load in the select's arms reads that vector (passes::vectorizeAccesses;
    /// --select-test-loads). Off, untimed (session 43): per_block_cast_lossless's 4-bit decode then reads 4
    /// LDS.128 instead of 32 LDS.U16, but ptxas takes 65 registers instead of 59 under the one-block bound (3
    /// blocks of 256 threads per SM instead of 4); no other kernel of the suites changes its machine code.
    bool selectTestLoads = false;
    /// The same for a select's test whose shared-memory load conflicts in the banks read element by element (a lane's
    /// 16 bytes, lanes 16 bytes apart: 4 wavefronts a byte) where one vector of it a thread would not (4 wavefronts
    /// for all 16; passes::vectorizeAccesses, src/lower/BankConflicts.h; --no-bank-vector-loads). On, untimed
    /// (session 45): per_block_cast_lossless's 4-bit decode, whose 32 LDS.U16 Nsight counted at 1.38 M conflicts.
    bool bankVectorLoads = true;
    /// The driver's wide variant: a tile transfer whose tensor's row length is a run-time value gets the
    /// access its row length and base pointer would need to be at their widest, recorded in
    /// Kernel::assumptions for the launcher to check.
    bool assumeAlignedRows = false;

    /// The head dimension from which an attention loop of 16-bit operands gets FlashAttention-3's schedule at
    /// Auto, overlap and turns together: on the H200 (float16, docs/PERFORMANCE.md, session 19) both together
    /// gained 4.3 % (causal) and 7.9 % (full) at D = 128 and changed -1.2 / +2.3 % at D = 64, where turns alone
    /// lost 1-5 % everywhere. Float8 loops (P converted to e4m3 for P.V) were not timed so: in order at Auto.
    static constexpr int kAttentionOverlapHeadDim = 128;
    /// The schedule of one attention loop whose QK^T reduces over `headDim` with operands of `operandBits`,
    /// its K and V tiles loaded into rings of `stages`: what the switches ask, Auto by the head dimension, the
    /// width and the ring. Auto keeps a loop of one stage in order (T.Pipelined(num_stages=1)): rotated, V of
    /// block ko could load only once P.V of ko - 1 retired, and P.V of ko follows at once, so the load's
    /// latency would be waited for in every iteration (in order, it loads under QK^T of ko and the softmax).
    /// Turns only where the overlap also applies, unless --pingpong asks for them.
    AttentionSchedule attentionSchedule(int64_t headDim, int operandBits = 16, int64_t stages = 2) const;

    /// These switches as one kernel sees them: its pass_configs ("tl.disable_tma_lower",
    /// "tl.disable_warp_specialized": Kernel::noTma, noWarpSpecialize) turn TMA or warp specialization off.
    LoweringOptions forKernel(const ir::Kernel &k) const;
    bool operator==(const LoweringOptions &) const = default;
};

/// One lowering of a program: a target and the switches it is lowered with.
struct Variant {
    Target target;
    LoweringOptions options;
    /// TMA tile transfers: the target has the unit and the variant uses it.
    bool hasTma() const { return target.hasTmaUnit() && options.tma; }
    bool operator==(const Variant &) const = default;
};

} // namespace tilec
