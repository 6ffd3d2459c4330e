/// \file
/// How lowerReductions combines a distributed source (src/lower/ReductionPlan.cpp): from evaluating the layout
/// numerically for every thread and slot, which result each slot feeds, which slots of a thread can share one
/// partial, and which bits of the thread index separate the threads that must be combined.
#pragma once

#include "tilec/passes/Layout.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace tilec::passes::reduction {

/// The plan for a distributed source, from evaluating the layout.
struct Plan {
    enum Mode { Invariant, Broadcast, Staged } mode = Staged;
    std::vector<int> slotClass;          ///< per slot (round * V + lane): its partial, -1 never valid
    std::vector<std::vector<int64_t>> outOf; ///< per class, per thread: the result, -1 none
    int classes = 0;
    int64_t laneBits = 0, warpBits = 0; ///< thread-index bits combined by shuffles / through shared memory
    bool allWarps = false;               ///< non-power-of-two block: every warp is a partner
    std::vector<int> repSlot;            ///< Broadcast: per class, the slot whose element names its result
};

class Reducer {
  public:
    Reducer(const Layout &src, int dim) : l_(src), dim_(dim) {
        T_ = l_.threads;
        V_ = l_.vec;
        N_ = l_.elements();
        for (size_t d = 0; d < l_.shape.size(); ++d)
            if ((int)d != dim_) outShape_.push_back(l_.shape[d]);
        nOut_ = 1;
        for (auto e : outShape_) nOut_ *= e;
    }

    int64_t outIndex(int64_t e) const {
        int64_t o = 0, stride = 1;
        for (size_t d = l_.shape.size(); d-- > 0;) {
            int64_t c = e % l_.shape[d];
            e /= l_.shape[d];
            if ((int)d == dim_) continue;
            o += c * stride;
            stride *= l_.shape[d];
        }
        return o;
    }

    /// Evaluates the layout for every thread and slot (see the file comment).
    Plan plan() const;

    const Layout &layout() const { return l_; }
    int64_t outputs() const { return nOut_; }
    int dim() const { return dim_; }

  private:
    Layout l_;
    int dim_;
    int T_ = 1, V_ = 1;
    int64_t N_ = 1, nOut_ = 1;
    std::vector<int64_t> outShape_;

    static Plan staged() {
        Plan p;
        p.mode = Plan::Staged;
        return p;
    }
};

/// Per class of the plan, the slot of a distributed destination that holds, in every thread, the result that
/// thread's partial of the class combines; none unless every slot of every thread is one of them.
std::optional<std::vector<int64_t>> directSlots(const Plan &p, const Layout &dst);

} // namespace tilec::passes::reduction

namespace tilec::passes {

/// What insertSyncs must know of lowerReductions' plan (both defined in src/lower/LowerReductions.cpp).

/// Whether the lowering of `r` exchanges values between threads through shared memory: not for a replicated
/// source, nor for rows of an mma accumulator whose warps do not split the columns (shuffles among the four
/// lanes of a row only: FlashAttention's row statistics); otherwise it may.
bool reductionUsesShared(const ir::Reduce &r, const KernelLayouts &layouts);

/// Whether the reductions of kernel `k` exchange between warps through one shared scratch buffer per dtype,
/// sized for the largest, rather than one each: where the kernel's shared buffers and the reductions' own
/// scratch together exceed what a block of `t` can have (TileLang's MLA decoding then fits), and never in a
/// kernel with warp roles, whose roles could reduce at the same time. insertSyncs then orders all of the
/// kernel's reductions that use shared memory as accesses of one buffer (a barrier between two of them).
bool reductionsShareScratch(const ir::Kernel &k, const KernelLayouts &layouts, const Target &t);

} // namespace tilec::passes
