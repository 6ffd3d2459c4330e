/// \file
/// What insertSyncs (src/lower/InsertSyncs.cpp) knows about a statement before it places barriers: the shared
/// buffers and global tensors it reads and writes (and which thread touches which element), whether it is a
/// tile statement every thread takes part in, which values are the same in every thread, and whether what is
/// pending since the last barrier conflicts with it.
#pragma once

#include "SyncElements.h"
#include "ThreadOwners.h"
#include "tilec/IR.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"
#include "tilec/SharedAliases.h"

#include <functional>
#include <set>
#include <vector>

namespace tilec::passes::syncs {

/// Shared buffers, and reductions standing for the shared scratch their lowering uses.
using BufferSet = std::set<const void *>;

/// What is pending since the last barrier. `reads` / `writes`: by tile statements (and shared memory by any
/// statement); `threadReads` / `threadWrites`: global tensors accessed by per-thread statements (a store
/// `B[tx * 2 + p] = ...` outside any tile statement), which conflict only with tile statements: as in
/// TileLang, threads that exchange data through global memory with per-thread code order it themselves
/// (T.sync_threads), and a thread's own accesses are in program order.
struct Pending {
    BufferSet reads, writes, threadReads, threadWrites;
    /// The buffers of `reads` / `writes` that tile statements touched (tilec chose which thread touches which
    /// element): under tl.disable_thread_storage_sync the author's per-thread statements are ordered against
    /// these only (authorView), never against each other.
    BufferSet tileReads, tileWrites;
    /// Shared buffers atomically updated: atomics commute with each other, not with plain reads and writes.
    BufferSet atomics;
    /// Which thread touched each element of a shared buffer in `reads` / `writes`, where every pending access
    /// to it is known (ThreadOwners); a buffer without an entry was touched in unknown ways.
    OwnerMap readOwners, writeOwners;
    /// The index expressions of the per-thread statements' loads and stores of a shared buffer in `reads` /
    /// `writes`, where every pending access to it is one of those (SyncElements.h); none for tile statements.
    SiteMap readSites, writeSites;
    void merge(const Pending &o);
    void clear() { *this = Pending{}; }
    void erase(const void *b);
    /// The variables `vars` may hold other values from now on (a loop's next iteration, or its exit).
    void forget(const std::set<const ir::VarNode *> &vars);
};

bool intersects(const BufferSet &a, const BufferSet &b);

/// A read-after-write, write-after-write or write-after-read between `p` and what is pending: tile
/// statements' and shared-memory accesses against everything pending, per-thread global accesses against
/// tile statements' only.
/// A shared buffer whose every element both sides touch is touched by one thread, the same on both sides
/// (ThreadOwners: a tile staged in shared memory and read back in its own layout), needs no barrier; nor do
/// atomic updates of a shared buffer between themselves (they commute: TileKernels' expert histograms); nor
/// does one whose per-thread accesses on both sides provably touch no element from two different threads
/// (sitesThreadPrivate: each thread's own elements, or disjoint ones).
bool conflicts(const Pending &p, const Pending &st, const ElementContext &cx);

/// What pending accesses a per-thread statement of a kernel under tl.disable_thread_storage_sync is ordered
/// against: the tile statements' only. The author's T.sync_threads order the author's own per-thread accesses,
/// but the threads tilec gives a tile statement's elements (a T.copy's, a T.async_copy's, a T.Parallel's) are
/// not TileLang's, so an exchange between such a statement and per-thread code gets tilec's barrier (TileKernels'
/// engram_gate_bwd read tiles of its T.async_copy from other threads than tilec's copy wrote them with).
Pending authorView(const Pending &st);

/// A block barrier: T.sync_threads (named or not) or T.sync_grid.
bool isSync(const ir::Stmt &s);

/// The ids of the named barriers (bar.sync and bar.arrive) that `s` uses, wherever they are.
std::set<int64_t> namedBarrierIds(const ir::Stmt &s);

/// The shared buffers and global tensors a statement reads and writes (global atomics commute: not counted).
struct Accesses : ir::IRVisitor {
    using IRVisitor::visit;
    /// `k`: whose shared aliases (tilec/SharedAliases.h) count as accesses of their bases' bytes.
    Accesses(const KernelLayouts &l, bool sharedScratch, const ir::Kernel &k) : layouts(l), sharedScratch(sharedScratch), kernel(k) {}
    const KernelLayouts &layouts;
    bool sharedScratch; ///< the kernel's reductions exchange through one scratch (reductionsShareScratch)
    Pending p;
    void visit(const ir::Load &op) override;
    void visit(const ir::Store &op) override;
    void visit(const ir::AtomicAdd &op) override;
    void visit(const ir::Gemm &op) override;
    void visit(const ir::Call &op) override;
    void visit(const ir::Reduce &op) override;

  private:
    const ir::Kernel &kernel;
    void note(BufferSet &set, const ir::BufferNode *b) { set.insert(ir::storageOf(kernel, b)); }
};

/// `p`, the accesses of statement `s`, with what it knows of the elements of shared aliases (ThreadOwners: the
/// thread of each element of the view) moved to their bases' elements, byte by byte (a base element whose bytes
/// several threads touch is kSeveral's), and combined with the base's own where `s` touches both; what
/// SyncElements knows of them (index expressions of a buffer's own elements) is dropped.
void foldAliasedElements(Pending &p, const ir::Kernel &k, const ir::Stmt &s);

/// Which values are equal in every thread of the block, on tile-level IR. The lowered level asks
/// laneUniformity (include/tilec/passes/LaneUniformity.h), whose code shows each thread's values; here a
/// T.Parallel loop and a fragment are spread over the threads or not by their layouts (Kernel::layouts), which
/// the code does not show, so this level keeps its own walk and shares the rules for calls (callSpread).
/// Thread-dependent are the thread index, the variables
/// of T.Parallel loops (spread over the threads) and fragments; an alloc_var / alloc_local buffer is too once
/// any store to it is (a thread-dependent value or index, or a store under thread-dependent control). A load
/// of shared or global memory at a uniform index is uniform. A replicated fragment (every thread holds all of
/// it) is like an alloc_local: the nests over it run whole in every thread, so their variables are uniform, and
/// its elements are uniform until a thread-dependent store (or a reduction) writes it (issue 24: `if
/// block_mask[k]:` of a bool fragment copied from a tensor, around a T.copy and a T.gemm).
class Uniformity : ir::IRVisitor {
  public:
    Uniformity(const ir::Kernel &k, const KernelLayouts &layouts);
    bool uniform(const ir::Expr &e) const;
    bool uniformVar(const ir::VarNode *v) const { return !vars_.count(v); }

  private:
    using IRVisitor::visit;
    const KernelLayouts &layouts_;
    std::set<const ir::VarNode *> vars_;
    std::set<const ir::BufferNode *> buffers_;
    int divergent_ = 0; ///< inside control flow that depends on the thread
    int wholeNest_ = 0; ///< inside a T.Parallel nest that runs whole in every thread

    bool replicated(const ir::BufferNode *b) const;
    void visit(const ir::For &f) override;
    void visit(const ir::Reduce &r) override;
    void visit(const ir::IfThenElse &i) override;
    void visit(const ir::While &w) override;
    void visit(const ir::Store &st) override;
};

/// The statements that every thread of the block takes part in: T.Parallel nests (their iterations are
/// spread over the threads), reductions, T.gemm, tile transfers and barriers. What it is, for a diagnostic;
/// null for another statement.
const char *tileStatement(const ir::Stmt &s);

/// Whether `s` is or contains a tile statement (one every thread of the block takes part in).
bool containsTileStatement(const ir::Stmt &s);
/// Whether `s` or a statement inside it (through sequences, loops, branches) satisfies `pred`.
bool containsStatement(const ir::Stmt &s, const std::function<bool(const ir::Stmt &)> &pred);

/// The accesses of one buffer in a loop's body: the indices of its plain loads and stores; any other
/// use (a tile region, an address handed to the device library) makes them opaque.
struct TensorAccesses : ir::IRVisitor {
    using IRVisitor::visit;
    explicit TensorAccesses(const ir::BufferNode *b) : buffer(b) {}
    const ir::BufferNode *buffer;
    std::vector<const std::vector<ir::Expr> *> indices;
    std::set<const ir::VarNode *> bound; ///< the loop variables of the body (T.Parallel's included)
    RangeMap boundRanges;                ///< those of them whose bounds are known (addLoopRange)
    bool opaque = false;
    void visitRegion(const ir::Region &r) override;
    void visit(const ir::Load &op) override;
    void visit(const ir::Store &op) override;
    void visit(const ir::For &op) override;
    void visit(const ir::Call &op) override;
};

} // namespace tilec::passes::syncs
