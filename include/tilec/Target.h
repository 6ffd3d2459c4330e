/// \file
/// Compilation targets (-arch) and their limits.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tilec {

struct Target {
    std::string name = "sm_90a"; ///< as given: sm_80, sm_86, sm_89, sm_90, sm_90a
    int sm = 90;                 ///< compute capability times ten
    bool archSpecific = true;    ///< the `a` suffix (wgmma, setmaxnreg)
    int maxSharedPerBlock = 232448; ///< opt-in dynamic shared memory per block, bytes
    int registersPerThread = 255;
    int registersPerSM = 65536;
    /// Per SM (CUDA C Programming Guide, "Compute Capabilities"): resident threads and blocks, and the shared
    /// memory blocks can share (each block also takes 1 KiB the system reserves).
    int threadsPerSM = 2048, blocksPerSM = 32;
    int sharedPerSM = 228 * 1024;
    /// Lowering switches (command line, or the cp.async variant lowered beside a TMA one): TMA tile loads
    /// and warp specialization where the target has them.
    bool tma = true;
    bool warpSpecialize = true;
    bool persistent = true; ///< warp-specialized kernels walk several output tiles per block (--no-persistent)
    /// Where the output tiles differ in work (the loop's trip count depends on one block index: causal
    /// attention), the persistent walk takes that index in groups of this many consecutive values, the group
    /// slowest, the position in it fastest (Kernel::walkGroup; 1: that index slowest); 0: such tiles one block
    /// each (--walk-group). 7, prime to the H200's 132 SMs, measured best (docs/PERFORMANCE.md, session 9).
    int walkGroup = 7;
    bool clusters = true;   ///< persistent warp-role kernels in clusters of two sharing a tile (--no-cluster)
    bool pingPong = false;  ///< two consumer warpgroups take turns at their attention loop's wgmmas (--pingpong)
    bool intraOverlap = false; ///< attention's next QK^T issued before this block's softmax (--intra-overlap)
    /// Staging buffers per consumer warpgroup for the TMA-store epilogue of wgmma accumulators (1: each piece
    /// waits for the previous store; 2: stmatrix into one while the other is stored), 0: no TMA stores
    /// (--epilogue-buffers).
    int epilogueBuffers = 2;
    /// Lowering switch (the driver's wide variant): a tile transfer whose tensor's row length is a run-time
    /// value gets the access its row length and base pointer would need to be at their widest, recorded in
    /// Kernel::assumptions for the launcher to check.
    bool assumeAlignedRows = false;
    bool hasTma() const { return sm >= 90 && tma; }
    bool hasWgmma() const { return sm == 90 && archSpecific; }
    /// What a build-time GPU query (`get_num_sms()`, `multi_processor_count`) answers: the SM count of the
    /// target's usual data-centre GPU (A100 108, A10 72, L40S 142, H100/H200 132); --num-sms overrides it.
    int numSms = 132;

    /// Parses one -arch value; nullopt for unknown names.
    static std::optional<Target> parse(std::string_view name);
};

} // namespace tilec
