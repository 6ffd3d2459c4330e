/// \file
/// Blocks per SM for bandwidth-bound kernels from their shared memory and live local buffers
/// (include/tilec/passes/OccupancyBlocks.h).
#include "tilec/passes/OccupancyBlocks.h"

#include "tilec/IRVisitor.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/LoadBatchLaunchBounds.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// Registers a thread needs beyond its local buffers: a 16-byte vector on its way between memory and a buffer
/// (4), two 64-bit addresses (4), the thread's index and a loop's counter and bound (4).
constexpr int64_t kAddressRegisters = 12;
/// The fewest registers the rule leaves a thread: what ptxas takes on its own for the row kernels of the suites
/// without a bound (LoadBatchLaunchBounds' 64). Index arithmetic the buffers do not show can pass the estimate
/// (per_channel_cast_and_transpose: 24 registers of buffers, 46 taken by ptxas, 80 bytes of spill at 40).
constexpr int64_t kFewestRegisters = 64;

using Buffers = std::set<const BufferNode *>;

bool isLocal(const BufferNode *b) { return b->scope == Scope::Local || b->scope == Scope::Fragment || b->scope == Scope::Var; }

/// The 4-byte registers one thread's copy of a local buffer takes: an element of fewer bytes one of its own, as
/// ptxas holds a 16- or 8-bit value that the code reads alone (per_block_cast's 64 bfloat16 a thread: 128 registers
/// without a cap, 12 bytes of spill at 80).
int64_t words(const BufferNode *b) {
    const int64_t n = b->constElements();
    return n > 0 ? n * ((b->dtype.bytes() + 3) / 4) : 0;
}

/// The local buffers a statement reads or writes.
struct Uses : IRVisitor {
    using IRVisitor::visit;
    Buffers found;
    void note(const Buffer &b) {
        if (b && isLocal(b.get())) found.insert(b.get());
    }
    void visit(const Load &op) override {
        note(op.buffer);
        IRVisitor::visit(op);
    }
    void visit(const Store &op) override {
        note(op.buffer);
        IRVisitor::visit(op);
    }
    void visitRegion(const Region &r) override {
        note(r.buffer);
        IRVisitor::visitRegion(r);
    }
};

Buffers uses(const Stmt &s) {
    Uses u;
    if (s) u.visit(s);
    return u.found;
}

int64_t peak(const Stmt &s, const Buffers &counted);

/// The peak over statements run in order: a buffer used by several of them is live from the first to the last
/// (through all of them when they are a loop's body: the next iteration may read what the last wrote); one used by
/// a single statement is that statement's own.
int64_t peakOfSequence(const std::vector<Stmt> &items, bool loopBody, const Buffers &counted) {
    std::vector<Buffers> used;
    std::map<const BufferNode *, std::pair<size_t, size_t>> span; // first and last item
    for (size_t i = 0; i < items.size(); ++i) {
        used.push_back({});
        for (const BufferNode *b : uses(items[i])) {
            if (counted.count(b)) continue;
            used.back().insert(b);
            auto [it, fresh] = span.emplace(b, std::make_pair(i, i));
            if (!fresh) it->second.second = i;
        }
    }
    Buffers shared = counted;
    for (auto &[b, fl] : span)
        if (fl.first != fl.second) shared.insert(b);
    int64_t most = 0;
    for (size_t i = 0; i < items.size(); ++i) {
        int64_t live = 0;
        for (auto &[b, fl] : span)
            if (fl.first != fl.second && (loopBody || (fl.first <= i && i <= fl.second))) live += words(b);
        most = std::max(most, live + peak(items[i], shared));
    }
    return most;
}

/// The most registers of local buffers not in `counted` live at once inside `s`.
int64_t peak(const Stmt &s, const Buffers &counted) {
    if (!s) return 0;
    if (auto *q = as<Seq>(s)) return peakOfSequence(q->stmts, false, counted);
    // An unrolled loop's global loads may be in flight together (loadBatchRegisters): registers for all of them.
    if (auto *f = as<For>(s)) return std::max(peakOfSequence(Seq::items(f->body), true, counted), loadBatchRegisters(s));
    if (auto *w = as<While>(s)) return peakOfSequence(Seq::items(w->body), true, counted);
    if (auto *c = as<IfThenElse>(s)) return std::max(peak(c->then, counted), peak(c->otherwise, counted));
    int64_t own = 0;
    for (const BufferNode *b : uses(s))
        if (!counted.count(b)) own += words(b);
    return own;
}

} // namespace

int occupancyBlocks(const Kernel &k, const Target &t, std::string *why, int64_t sharedBytes) {
    const int64_t warps = (std::max(k.launchedThreads(), 1) + 31) / 32;
    const int64_t byThreads = std::min<int64_t>(t.blocksPerSM, t.threadsPerSM / (warps * 32));
    const int64_t shared = sharedBytes >= 0 ? sharedBytes : smem::estimatedBytes(k);
    const int64_t byShared = smem::blocksPerSm(t, shared);
    const int64_t buffers = peak(k.body, {});
    const int64_t unit = t.registerUnit;
    const int64_t registers = std::max(kFewestRegisters, (buffers + kAddressRegisters + unit - 1) / unit * unit);
    const int64_t byRegisters = registers > t.registersPerThread ? 1 : t.registersPerSM / (registers * warps * 32);
    const int blocks = (int)std::max<int64_t>(1, std::min({byThreads, byShared, byRegisters}));
    if (why)
        *why = std::to_string(blocks) + " block(s) per SM: " + std::to_string(byShared) + " by shared memory (" +
               std::to_string((shared + 1023) / 1024) + " KB a block), " + std::to_string(byRegisters) +
               " by an estimate of " + std::to_string(buffers + kAddressRegisters) + " registers a thread (" +
               std::to_string(buffers) + " of local buffers and loads in flight at once, " + std::to_string(kAddressRegisters) +
               " others; at least " + std::to_string(kFewestRegisters) + "), " + std::to_string(byThreads) + " by threads";
    return blocks;
}

} // namespace tilec::passes
