/// \file
/// One compilation from options to outputs: what the `tilec` command runs after parsing its command line.
#pragma once

#include "tilec/LoweringOptions.h"
#include "tilec/Target.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace tilec {

/// Exit codes of the tilec command (docs/INTERFACE.md).
enum ExitCode { ExitOk = 0, ExitInputError = 1, ExitUsage = 2, ExitInternal = 3 };

struct DriverOptions {
    std::string input;                     ///< the .tile file ("-" reads standard input)
    std::vector<std::string> archs{Target::kDefaultName};
    std::string output;                    ///< -o
    std::string header;                    ///< -H
    std::vector<std::string> emit;         ///< --emit kinds
    std::vector<std::string> defines;      ///< -D NAME=VALUE, as written
    std::vector<std::string> importDirs;   ///< -I DIR: where imports look after the input's folder (then TILEC_PATH)
    std::vector<std::string> exports;      ///< --export NAME=CALL, as written
    std::vector<std::string> kernels;      ///< --kernel
    std::string prefix;                    ///< --prefix
    bool depfile = false;                  ///< -MD
    std::string depfilePath, depTarget;    ///< -MF, -MT
    bool depPhony = false;                 ///< -MP: an empty rule per prerequisite in the depfile
    std::string dumpAfter;                 ///< --dump-after=PASS ("all" for every pass)
    bool timePasses = false;
    bool verbose = false;
    int errorLimit = 20;
    int numSms = 0;                        ///< --num-sms: what build-time SM-count queries answer (0: the target's)
    bool werror = false, noWarnings = false;
    std::string color = "auto";            ///< --color=auto|always|never
    std::string diagnosticsFormat = "text"; ///< -fdiagnostics-format=text|json|sarif
    bool resourceUsage = false;
    std::vector<std::string> ptxasOptions; ///< -Xptxas OPTS, one option per entry (passed to ptxas through NVRTC)
    bool lineInfo = false;                 ///< -lineinfo: line tables in PTX and cubins (they then hold absolute paths)
    std::string ccbin;                     ///< --ccbin: the C compiler for -o x.o (default $CC, else cc)
    bool noTma = false;                    ///< --no-tma: no TMA (and so no warp specialization) on any target
    bool noWarpSpecialize = false;         ///< --no-warp-specialize: keep the cp.async pipelines on sm_90a
    int epilogueBuffers = 2;               ///< --epilogue-buffers: TMA-store staging per warpgroup (0: none)
    bool oneBlockBounds = true;            ///< --no-one-block-bounds: (threads, 1) only where loads need it
    int boundBlocks = 0;                   ///< --bound-blocks: the blocks per SM of those bounds (0: not given)
    bool occupancyBounds = true;           ///< --no-occupancy-bounds: 1 block per SM where --bound-blocks is not given
    bool sharedReuseBlocks = true;         ///< --no-shared-reuse-blocks: shared bytes reused only where the plan does not fit
    bool opaqueVectorStores = false;       ///< --opaque-vector-stores: every global vector store one PTX store
    bool bulkStoreRows = false;            ///< --bulk-store-rows: a tile of strided rows as one bulk copy a row
    bool noBulkStores = false;             ///< --no-bulk-stores: closing tile copies as per-thread stores on sm_90
    bool noStmatrixCopies = false;         ///< --no-stmatrix-copies: fragments into 16-bit shared tiles per thread
    bool broadcastLoadWidths = true;       ///< --no-broadcast-load-widths: shared loads narrow vectors by element bytes
    bool selectTestLoads = false;          ///< --select-test-loads: shared loads of a select's test as vectors
    bool bankVectorLoads = true;           ///< --no-bank-vector-loads: not even where their elements conflict
    bool noPersistent = false;             ///< --no-persistent: one output tile per block on the Hopper path
    int walkGroup = 7;                     ///< --walk-group: tiles of unequal work walked in groups (0: not persistent)
    /// --pingpong / --no-pingpong: consumer warpgroups take turns at attention's wgmmas (Auto: by head dimension)
    Choice pingPong = Choice::Auto;
    /// --intra-overlap / --no-intra-overlap: attention's next QK^T under this block's softmax (Auto: by head dimension)
    Choice intraOverlap = Choice::Auto;
    bool noCluster = false;                ///< --no-cluster: no thread-block clusters (no TMA multicast)
    int clusterBlocks = 2;                 ///< --cluster-blocks: blocks per cluster tilec forms itself (2 or 4)
    bool noSparseWgmma = false;            ///< --no-sparse-wgmma: T.gemm_sp on mma.sp also on sm_90a
    /// --sparse-warp-roles (All) / --no-sparse-warp-roles (Off): T.gemm_sp loops on sm_90a's warp roles
    LoweringOptions::SparseWarpRoles sparseWarpRoles = LoweringOptions::SparseWarpRoles::TmaMetadata;
    bool mixedWarpRoles = true;            ///< --no-mixed-warp-roles: no warp roles for wgmma beside mma.sync products
    /// --mma-warp-roles (All) / --no-mma-warp-roles (Off): warp roles for loops of mma.sync products alone
    LoweringOptions::MmaWarpRoles mmaWarpRoles = LoweringOptions::MmaWarpRoles::RegisterA;
    bool noSplitConditions = false;        ///< --no-split-conditions: loops keep uniform element-wise conditions
    bool perElementSplits = true;          ///< --no-per-element-splits: split loops on once-an-iteration tests too
    bool skipUnitRescales = false;         ///< --skip-unit-rescales: in-place rescales under a warp vote
    bool zeroInitWgmma = true;             ///< --no-zero-init-wgmma: cleared wgmma accumulators zeroed by the threads
    bool noSplitK = false;                 ///< --no-split-k: no split-K launches for GEMMs that leave the GPU idle
    bool widenGemmTiles = false;           ///< --widen-gemm-tiles: one-warpgroup 128x128 GEMM tiles two to a block
    bool fastMath = false;                 ///< --use_fast_math: CUDA's fast float intrinsics (nvcc's meaning)
    bool noNarrowExp2Flush = false;        ///< --no-narrow-exp2-flush: CodegenOptions::flushNarrowExp2 off
    bool hoistWgmmaDescriptors = true;     ///< --no-hoist-wgmma-descriptors: CodegenOptions::hoistWgmmaA off
    std::vector<std::string> tuned;        ///< --tuned FILE.tune.json (repeatable): build what `tilec tune` chose
    std::vector<std::string> filePrefixMaps; ///< --file-prefix-map OLD=NEW, as written (the last match wins)
};

/// Runs the compilation: reads the input, runs the front end and the pipeline, writes outputs. `out`
/// receives outputs that go to standard output (--emit=ast without -o, dumps), `err` diagnostics.
/// Never throws; returns an ExitCode.
int runCompiler(const DriverOptions &opts, std::ostream &out, std::ostream &err);

/// `tilec --version`'s text: `tilec VERSION (REVISION)` (no parentheses when `revision` is empty), then the
/// NVRTC, CUDA headers and CUDA driver found at run time, each with its version, or where it was looked for.
std::string versionReport(const std::string &version, const std::string &revision);

} // namespace tilec
