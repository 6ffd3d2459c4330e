/// \file
/// T.async_copy drawn on top of a program (Gen.h: decorateAsync).
///
/// Some global-to-shared copies become `T.async_copy` (TileKernels' engram kernels), each closing a cp.async
/// group of its own, and the program waits with `T.ptx_wait_group(n)` as their authors write it: right after the
/// copy, a few statements later, with a count that leaves the copy in flight, at the top of a loop, never; an
/// extra `T.ptx_commit_group()` now and then. T.gemm's operand copies become asynchronous in serial and
/// T.Pipelined loops, waited for before the product or prefetched one K block ahead (the next block's copies
/// issued after the product, the first before the loop). Every such program has the synchronous program's
/// meaning: where tilec proves the waits cover every use of a copy's destination it issues cp.async, and
/// elsewhere it keeps the synchronous copies (docs/LANGUAGE.md), so the reference runs them as T.copy and the
/// simulator, which holds a cp.async's destination poisoned until the wait that retires its group, sees a wait
/// proved wrongly as a wrong value or a race.
#include "Gen.h"

#include <algorithm>

namespace tilec::difffuzz {

namespace {

bool sharedTile(const std::string &b) { return b == "s0" || b == "s1"; }

GOp waitOp(int64_t n) {
    GOp w;
    w.kind = GOp::AsyncWait;
    w.n = n;
    return w;
}

/// The wait (or none) for T.gemm's asynchronous operand copies: mostly 0, sometimes a count that leaves them in
/// flight (not provable: the copies stay synchronous), sometimes none at all.
int64_t gemmWait(Rng &r) { return r.coin(0.7) ? 0 : r.coin(0.5) ? r.in(1, 2) : -1; }

void decorateGemm(GOp &o, Rng &r) {
    if (!r.coin(0.6)) return;
    o.async = o.guarded == 0 && o.scalarBounds == 0 && r.coin(0.45) ? 2 : 1;
    o.asyncWait = gemmWait(r);
    o.asyncGuard = r.coin(0.6), o.asyncDrain = r.coin(0.5);
}

/// Async loads of `ops` (this list only) and the waits placed after each: (position, op) pairs to insert.
std::vector<std::pair<size_t, GOp>> placeWaits(std::vector<GOp> &ops, Rng &r) {
    std::vector<std::pair<size_t, GOp>> at;
    for (size_t i = 0; i < ops.size(); ++i) {
        GOp &o = ops[i];
        if (o.kind != GOp::Load || !sharedTile(o.dst) || !r.coin(0.6)) continue;
        o.async = 1;
        if (r.coin(0.15)) continue; // never waited for: its reads cannot be proved
        const int64_t n = r.coin(0.7) ? 0 : r.in(1, 2);
        const size_t pos = r.coin(0.5) ? i + 1 : (size_t)r.in((int64_t)i + 1, (int64_t)ops.size());
        at.push_back({pos, waitOp(n)});
    }
    if (!at.empty() && r.coin(0.1)) at.push_back({(size_t)r.in(0, (int64_t)ops.size()), waitOp(-1)});
    return at;
}

void decorateList(std::vector<GOp> &ops, Rng &r, bool loopBody) {
    for (auto &o : ops) {
        decorateList(o.kids, r, o.kind == GOp::Serial);
        decorateList(o.elseKids, r, false);
        if (o.kind == GOp::Gemm) decorateGemm(o, r);
    }
    auto at = placeWaits(ops, r);
    // a wait at the top of a loop whose body copies asynchronously: it retires the previous iteration's groups
    if (loopBody && !at.empty() && r.coin(0.3)) at.push_back({0, waitOp(0)});
    std::stable_sort(at.begin(), at.end(), [](auto &a, auto &b) { return a.first > b.first; });
    for (auto &[pos, w] : at) ops.insert(ops.begin() + (long)pos, w);
}

bool lateWgmmaWaits = true;

void wgmmaIn(std::vector<GOp> &ops, Rng &r, int threads) {
    for (auto &o : ops) {
        wgmmaIn(o.kids, r, threads), wgmmaIn(o.elseKids, r, threads);
        if (o.kind != GOp::Gemm || !r.coin(0.4)) continue;
        const bool late = threads <= 128 && o.stages == 0 && r.coin(0.6);
        o.wgmma = late && lateWgmmaWaits ? (int)r.in(2, 3) : 1;
    }
}

} // namespace

void setLateWgmmaWaits(bool on) { lateWgmmaWaits = on; }

void decorateWgmma(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0x36a3)};
    if (p.gemm && r.coin(0.5)) wgmmaIn(p.ops, r, p.threads);
}

void decorateAsync(GProgram &p) {
    Rng r{std::mt19937_64(p.seed * 0x9e3779b97f4a7c15ull + 0xa5c0)};
    if (!r.coin(0.3)) return;
    decorateList(p.ops, r, false);
}

} // namespace tilec::difffuzz
