/// \file
/// specializeWarps' cost test: warp roles or the cp.async pipeline for a loop whose consumers do more than
/// issue wgmma (include/tilec/passes/WarpRoleCost.h).
#include "tilec/passes/WarpRoleCost.h"

#include "tilec/SharedMemory.h"

#include "tilec/passes/Staging.h"

#include <algorithm>
#include <set>

namespace tilec::passes {

using namespace ir;

namespace {

/// Registers ptxas keeps beside the fragments: addresses, loop counters, predicates and the element-wise
/// temporaries. ptxas -v on sm_90a against the fragment words live at once (session 18, the cp.async
/// variants): chunk_scaled_dot_kkt 80 registers for 64 words, convolution 64x128 58 for 32, wy_fast 68 for 32.
/// Kernels heavy in temporaries take more (MHA backward 255 and spills for 192 words, convolution 128x256 200 for
/// 128); their blocks are bounded by shared memory or by the warp roles' side of the test anyway.
constexpr int kRegisterRoom = 24;

/// `n` / `g` stages as a decimal ("2.75").
std::string stages(int64_t n, int64_t g) {
    std::string s = std::to_string(n / g);
    if (n % g == 0) return s;
    std::string frac = std::to_string((n % g) * 100 / g + 100).substr(1);
    while (frac.back() == '0') frac.pop_back();
    return s + "." + frac;
}

} // namespace

int estimatedRegisters(int64_t words) {
    const int64_t r = (words + kRegisterRoom + 7) / 8 * 8;
    return (int)std::min<int64_t>(r, 1 << 20);
}

int residentBlocks(int threads, int registers, int64_t sharedBytes, const Target &t) {
    if (threads <= 0) return 0;
    const int64_t warps = (threads + 31) / 32;
    // Registers are allocated per warp; a thread asking for more than the architecture's limit spills down to it.
    const int64_t perThread = std::min<int64_t>(std::max(registers, 1), t.registersPerThread);
    int64_t blocks = std::min<int64_t>(t.blocksPerSM, t.threadsPerSM / (warps * 32));
    blocks = std::min<int64_t>(blocks, t.registersPerSM / (warps * 32 * perThread));
    if (sharedBytes > 0) blocks = std::min<int64_t>(blocks, smem::blocksPerSm(t, sharedBytes));
    return (int)std::max<int64_t>(blocks, 0);
}

PipelineWeights weighPipelines(const PipelineFacts &f, const Target &t) {
    PipelineWeights w;
    w.warpRoleBlocks = f.warpRoleBlocks;
    w.cpAsyncRegisters = estimatedRegisters(f.registerWords);
    // The shared-memory estimate places every buffer apart (no reuse): where it exceeds an SM, the planner's
    // reuse still fits the one block the warp roles were planned beside.
    w.cpAsyncBlocks = std::max(1, residentBlocks(f.consumers, w.cpAsyncRegisters, f.sharedBytes, t));
    const int64_t trips = f.trips ? std::max<int64_t>(*f.trips, 1) : f.stages, G = std::max(f.groups, 1);
    w.groups = (int)G;
    w.warpRoleInFlight = (int64_t)w.warpRoleBlocks * (std::min<int64_t>(f.stages, trips) * G + G - 1);
    w.cpAsyncInFlight = (int64_t)w.cpAsyncBlocks * std::max<int64_t>(1, std::min<int64_t>(f.stages - 1, trips)) * G;
    const std::string figures = stages(w.warpRoleInFlight, G) + " stage loads in flight per SM with warp roles (" +
                                std::to_string(w.warpRoleBlocks) + " block(s) per SM" +
                                (G > 1 ? ", " + std::to_string(G) + " barrier groups" : "") + ") against " +
                                stages(w.cpAsyncInFlight, G) + " on the cp.async pipeline (" +
                                std::to_string(w.cpAsyncBlocks) + " block(s) per SM of about " +
                                std::to_string(w.cpAsyncRegisters) + " registers and " + std::to_string(f.sharedBytes) +
                                " bytes of shared memory)";
    if (!f.consumerWork) {
        w.why = "the consumers only issue wgmma on the staged tiles";
        return w;
    }
    // A cp.async kernel whose registers would spill keeps warp roles, whose consumers setmaxnreg raises.
    const bool spills = w.cpAsyncRegisters > t.registersPerThread;
    w.warpRoles = spills || w.warpRoleInFlight > w.cpAsyncInFlight;
    w.why = figures + (spills ? ", whose registers would spill" : "");
    return w;
}

int64_t peakRegisterWords(const std::vector<Stmt> &top, const std::vector<Buffer> &allocs, int threads) {
    // Each register buffer's live range: the first and the last top-level statement that mentions it.
    struct Range {
        size_t first, last;
        int64_t words;
    };
    std::vector<std::set<const BufferNode *>> mentions;
    for (auto &s : top) mentions.push_back(mentionedBuffers(s, nullptr));
    std::vector<Range> ranges;
    for (auto &b : allocs) {
        if (!b || (b->scope != Scope::Fragment && b->scope != Scope::Local)) continue;
        const int64_t bytes = std::max<int64_t>(0, b->constElements()) * b->dtype.bytes();
        const int64_t words = (b->scope == Scope::Fragment ? bytes / std::max(threads, 1) : bytes) / 4;
        size_t first = top.size(), last = 0;
        for (size_t i = 0; i < top.size(); ++i)
            if (mentions[i].count(b.get())) first = std::min(first, i), last = i;
        if (first < top.size() && words > 0) ranges.push_back({first, last, words});
    }
    int64_t peak = 0;
    for (size_t i = 0; i < top.size(); ++i) {
        int64_t live = 0;
        for (auto &r : ranges)
            if (r.first <= i && i <= r.last) live += r.words;
        peak = std::max(peak, live);
    }
    return peak;
}

} // namespace tilec::passes
