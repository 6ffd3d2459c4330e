/// \file
/// The plan of a reduction of a distributed source (include/tilec/passes/ReductionPlan.h).
#include "tilec/passes/ReductionPlan.h"

namespace tilec::passes::reduction {

Plan Reducer::plan() const {
    Plan p;
    const int64_t S = l_.slotsPerThread(); // rounds() * V_ when distributed
    // Result of each slot in each thread (copies of an element in several threads, Layout::copies, alike).
    std::vector<std::vector<int64_t>> out(S, std::vector<int64_t>(T_, -1));
    for (int64_t s = 0; s < S; ++s)
        for (int64_t t = 0; t < T_; ++t)
            if (int64_t e = elementOf(l_, t, s); e >= 0) out[s][t] = outIndex(e);
    // Slots whose results agree wherever both are valid share a partial.
    p.slotClass.assign(S, -1);
    for (int64_t s = 0; s < S; ++s) {
        bool any = false;
        for (auto x : out[s]) any |= x >= 0;
        if (!any) continue;
        for (int c = 0; c < p.classes && p.slotClass[s] < 0; ++c) {
            bool ok = true;
            for (int t = 0; ok && t < T_; ++t)
                ok = out[s][t] < 0 || p.outOf[c][t] < 0 || out[s][t] == p.outOf[c][t];
            if (!ok) continue;
            p.slotClass[s] = c;
            for (int t = 0; t < T_; ++t)
                if (out[s][t] >= 0) p.outOf[c][t] = out[s][t];
        }
        if (p.slotClass[s] < 0) {
            p.slotClass[s] = p.classes++;
            p.outOf.push_back(out[s]);
        }
    }
    // One partial per result in each thread.
    for (int t = 0; t < T_; ++t) {
        std::vector<char> seen(nOut_, 0);
        for (int c = 0; c < p.classes; ++c) {
            int64_t o = p.outOf[c][t];
            if (o < 0) continue;
            if (seen[o]) return staged();
            seen[o] = 1;
        }
    }
    bool invariant = true;
    for (int c = 0; c < p.classes && invariant; ++c) {
        int64_t first = -1;
        for (int t = 0; t < T_ && invariant; ++t) {
            if (p.outOf[c][t] < 0) continue;
            if (first < 0) first = p.outOf[c][t];
            invariant = p.outOf[c][t] == first;
        }
    }
    bool pow2 = (T_ & (T_ - 1)) == 0;
    if (invariant && !pow2) {
        p.mode = Plan::Invariant;
        p.laneBits = 31;
        p.allWarps = true;
        return p;
    }
    if (!pow2) return staged();
    // Bits of the thread index that never change a result: the threads to combine differ only there. Threads
    // holding copies of the same elements are not combined (each copy would count again).
    int64_t bits = 0;
    const int64_t copies = l_.copyBits();
    for (int b = 0; (1 << b) < T_; ++b) {
        bool free = !(copies >> b & 1);
        for (int c = 0; c < p.classes && free; ++c)
            for (int t = 0; t < T_ && free; ++t) {
                int64_t x = p.outOf[c][t], y = p.outOf[c][t ^ (1 << b)];
                free = x < 0 || y < 0 || x == y;
            }
        if (free) bits |= int64_t(1) << b;
    }
    // Every result must come from threads that agree outside those bits.
    std::vector<int64_t> owner(nOut_, -1);
    for (int c = 0; c < p.classes; ++c)
        for (int t = 0; t < T_; ++t) {
            int64_t o = p.outOf[c][t];
            if (o < 0) continue;
            int64_t key = t & ~(bits | copies);
            if (owner[o] >= 0 && owner[o] != key) return staged();
            owner[o] = key;
        }
    p.laneBits = bits & 31;
    p.warpBits = bits & ~int64_t(31);
    if (invariant) {
        p.mode = Plan::Invariant;
        return p;
    }
    // Broadcast: the thread with those bits clear publishes each of its results, exactly once each.
    p.mode = Plan::Broadcast;
    std::vector<int> writes(nOut_, 0);
    for (int c = 0; c < p.classes; ++c) {
        int rep = -1;
        for (int64_t s = 0; s < S && rep < 0; ++s) {
            if (p.slotClass[s] != c) continue;
            bool ok = true;
            for (int t = 0; ok && t < T_; ++t)
                if ((t & (bits | copies)) == 0 && p.outOf[c][t] >= 0) ok = out[s][t] == p.outOf[c][t];
            if (ok) rep = (int)s;
        }
        if (rep < 0) return staged();
        p.repSlot.push_back(rep);
        for (int t = 0; t < T_; ++t)
            if ((t & (bits | copies)) == 0 && p.outOf[c][t] >= 0) ++writes[p.outOf[c][t]];
    }
    for (int w : writes)
        if (w != 1) return staged();
    return p;
}

/// Per class of the plan, the slot of a distributed destination that holds, in every thread, the result that
/// thread's partial of the class combines; none unless every slot of every thread is one of them.
std::optional<std::vector<int64_t>> directSlots(const Plan &p, const Layout &dst) {
    if (dst.kind != Layout::Distributed || p.mode == Plan::Staged) return std::nullopt;
    const int64_t slots = dst.slotsPerThread();
    std::vector<int64_t> chosen;
    std::vector<char> covered(slots, 0);
    for (int c = 0; c < p.classes; ++c) {
        int64_t pick = -1;
        for (int64_t s = 0; s < slots && pick < 0; ++s) {
            bool ok = !covered[s];
            for (int t = 0; ok && t < dst.threads; ++t) ok = elementOf(dst, t, s) == p.outOf[c][t];
            if (ok) pick = s;
        }
        if (pick < 0) return std::nullopt;
        covered[pick] = 1;
        chosen.push_back(pick);
    }
    for (char c : covered)
        if (!c) return std::nullopt;
    return chosen;
}

} // namespace tilec::passes::reduction
