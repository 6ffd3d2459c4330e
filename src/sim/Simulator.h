/// \file
/// Runs a lowered kernel (what lower() returns) on the CPU, so the lowering passes are checked for
/// numbers, not just shapes, without a GPU: every block, every thread, with divergence by masks.
///
/// Outside warp roles the block's threads run in lockstep, statement by statement (warp shuffles read the
/// partner's value as of the same statement). Inside ir::WarpRoles every warpgroup of each role is an agent
/// of its own (SimulatorAgents.cpp): its threads run in lockstep, agents do not; a scheduler seeded by
/// `seed` interleaves them at their synchronisation points (mbarriers, named barriers, TMA, wgmma), lands
/// TMA loads at arbitrary later points, and reports a deadlock (every live agent waiting) naming who waits
/// on what. The Hopper library calls (mbarriers with PTX's phase parity and transaction counts, TMA boxes
/// with zero fill and swizzle, wgmma with results undefined until their wait) are in SimulatorHopper.cpp.
///
/// Values are doubles (integers exact below 2^53); stores round to the buffer's type. Shared memory is
/// watched for races with vector clocks: an access to an element that another thread wrote (or, for writes,
/// read) is a race unless a barrier or an mbarrier phase orders the two. Buffers the shared-memory plan puts
/// over the same bytes are one memory for that check, and a write poisons the other's elements with NaN; a
/// block that exits with a cp.async transfer or a TMA load not awaited is an error. A barrier reached with some threads
/// of its scope inactive is reported too. Library calls are recognised through the registry
/// (tilec/LibraryCalls.h): by lib::Fn, arguments by name.
///
/// Limits. Threads of one agent (a warpgroup) stay in lockstep, so interleavings inside a warpgroup are not
/// explored, and an arrival by one of its threads releases the accesses of all of them. Global memory is not
/// watched for races (two tile statements storing the same global elements from different threads without a
/// barrier are a race the lockstep of the block hides). Not modelled: wgmma with A in registers, multicast,
/// clusters, and which thread an elect_one picks. The generic-to-async proxy fence is checked only for shared
/// memory that TMA stores and bulk copies read (stmatrix's pieces, bulk copies' sources).
#pragma once

#include "tilec/IR.h"
#include "tilec/passes/Layout.h"
#include "tilec/LibraryCalls.h"

#include "sim/ScalarSemantics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace tilec::simtest {

struct SimError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// tilec::swz<Cols, ElemBytes> of stdlib/tilec/swizzle.cuh, for tiles of `tileElems` elements.
inline int64_t swizzled(int64_t cols, int64_t eb, int64_t tileElems, int64_t off) {
    int64_t base = off / tileElems * tileElems, o = off % tileElems;
    int64_t per = 16 / eb;
    if (per == 0 || cols % per) return off;
    int64_t row = o / cols, col = o % cols, rowBytes = cols * eb, f = 0;
    if (rowBytes % 128 == 0) f = row & 7;
    else if (rowBytes == 64) f = (row >> 1) & 3;
    else if (rowBytes == 32) f = (row >> 2) & 1;
    return base + row * cols + (col ^ (f * per));
}

/// tilec::swz_panels<Cols, ElemBytes, TileElems, Span> of stdlib/tilec/swizzle.cuh: the panel layout of tiles of
/// `tileElems` elements (column panels of `span` bytes, the plan's choice of 128, 64 or 32 dividing a row, rows one
/// after another in a panel, 16-byte chunks XORed as swz does for rows of one panel).
inline int64_t panelled(int64_t cols, int64_t eb, int64_t span, int64_t tileElems, int64_t off) {
    const int64_t rowBytes = cols * eb;
    if ((span != 128 && span != 64 && span != 32) || rowBytes % span || tileElems % cols)
        throw SimError("the panel layout of " + std::to_string(span) + "-byte panels of rows of " + std::to_string(rowBytes) + " bytes");
    const int64_t W = span / eb, rows = tileElems / cols, base = off / tileElems * tileElems, o = off % tileElems;
    const int64_t row = o / cols, col = o % cols;
    return base + col / W * rows * W + swizzled(W, eb, rows * W, row * W + col % W);
}

/// swizzle.cuh's swz_chunk_bits<cols, eb>: the chunk bits (in elements) the row XOR may change.
inline int64_t swizzleChunkBits(int64_t cols, int64_t eb) {
    const int64_t per = eb > 0 && 16 % eb == 0 ? 16 / eb : 0, rowBytes = cols * eb;
    if (!per || cols % per) return 0;
    if (rowBytes % 128 == 0) return 7 * per;
    return rowBytes == 64 ? 3 * per : rowBytes == 32 ? per : 0;
}

/// tilec::swz_split / swz_panels_split of swizzle.cuh, as the device computes them: `map` (swizzled or panelled)
/// of `runtime`, its chunk bits XORed with those of map(fixed), plus the rest of map(fixed). The result must be
/// map(runtime + fixed), which splitSwizzles proved; a part that is negative or a sum that maps elsewhere is an
/// error (the proof was wrong).
/// `span`: the panel layout's (0: the row swizzle, swz_split).
inline int64_t splitSwizzled(int64_t span, int64_t cols, int64_t eb, int64_t tileElems, int64_t runtime, int64_t fixed) {
    auto map = [&](int64_t off) { return span ? panelled(cols, eb, span, tileElems, off) : swizzled(cols, eb, tileElems, off); };
    const int64_t k = span ? swizzleChunkBits(span / eb, eb) : swizzleChunkBits(cols, eb);
    if (runtime < 0 || fixed < 0) throw SimError("a negative part of a split swizzle offset");
    const int64_t sf = map(fixed), r = (map(runtime) ^ (sf & k)) + (sf & ~k);
    if (r != map(runtime + fixed))
        throw SimError("split swizzle offset " + std::to_string(runtime) + " + " + std::to_string(fixed) + " maps to " +
                       std::to_string(r) + ", not " + std::to_string(map(runtime + fixed)));
    return r;
}

/// The shared-memory byte address the TMA unit and wgmma's descriptors use for logical byte address `a` of a
/// buffer swizzled with span `span` (128, 64, 32; 0: none): address bits 4.. XOR bits 7.. (PTX's swizzle
/// modes, on absolute addresses).
inline int64_t swizzleAddress(int64_t a, int span) {
    switch (span) {
    case 128: return a ^ (((a >> 7) & 7) << 4);
    case 64: return a ^ (((a >> 7) & 3) << 4);
    case 32: return a ^ (((a >> 7) & 1) << 4);
    default: return a;
    }
}

/// A vector clock: entry i is the last event of component i known here (-1: none).
struct Clock {
    std::vector<int64_t> v;
    int64_t at(size_t i) const { return i < v.size() ? v[i] : -1; }
    void set(size_t i, int64_t x) {
        if (v.size() <= i) v.resize(i + 1, -1);
        v[i] = x;
    }
    void join(const Clock &o) {
        if (v.size() < o.v.size()) v.resize(o.v.size(), -1);
        for (size_t i = 0; i < o.v.size(); ++i) v[i] = std::max(v[i], o.v[i]);
    }
};

class Simulator {
  public:
    /// `tensors`: the data of each tensor parameter, row-major; `scalars`: scalar parameters and T.dynamic
    /// symbols by name; `seed` picks the interleaving of warp-role agents and TMA landings (0: each agent
    /// runs until it blocks, in order, and TMA loads land only when every agent waits).
    Simulator(const ir::Kernel &k, std::map<std::string, std::vector<double> *> tensors,
              std::map<std::string, double> scalars = {}, uint64_t seed = 0)
        : k_(k), tensors_(std::move(tensors)), scalars_(std::move(scalars)), seed_(seed), rng_(seed) {}
    ~Simulator() { stopAgents(); }
    Simulator(const Simulator &) = delete;
    Simulator &operator=(const Simulator &) = delete;

    /// Runs every block of the grid.
    void run() {
        if (k_.clusterSize > 1) throw SimError("thread-block clusters are not simulated (lower with LoweringOptions::clusters off)");
        int64_t g[3];
        for (int d = 0; d < 3; ++d) g[d] = (int64_t)evalUniform(k_.grid[d]);
        mapDims_.clear();
        zeroTile_.clear();
        for (auto &m : k_.tensorMaps) {
            std::vector<int64_t> dims; // innermost first
            for (size_t d = m.tensor->shape.size(); d-- > 0;) dims.push_back((int64_t)evalUniform(m.tensor->shape[d]));
            // As the launcher encodes it (src/codegen/CodegenHost.cpp): a map of a tensor with no elements over
            // the zero tile, every dimension 1 (the driver refuses a dimension of 0).
            const bool empty = std::find(dims.begin(), dims.end(), 0) != dims.end();
            if (empty) dims.assign(dims.size(), 1);
            zeroTile_.push_back(empty);
            mapDims_.push_back(std::move(dims));
        }
        for (int d = 0; d < 3; ++d) grid_[d] = g[d];
        planAliases();
        findBulkSources();
        if (k_.persistent) {
            // As the launcher does with a device of persistentBlocks SMs' worth of blocks: fewer blocks than
            // tiles, so that blocks walk several tiles (the ring running on across them).
            physicalBlocks_ = std::min<int64_t>(g[0] * g[1] * g[2], persistentBlocks);
            for (int64_t b = 0; b < physicalBlocks_; ++b) block({b, 0, 0});
            return;
        }
        std::vector<ir::Stmt> phases = gridPhases();
        if (phases.size() > 1) return runPhases(phases, g);
        for (int64_t z = 0; z < g[2]; ++z)
            for (int64_t y = 0; y < g[1]; ++y)
                for (int64_t x = 0; x < g[0]; ++x) block({x, y, z});
    }

    /// Blocks a persistent kernel is launched with (the launcher's min(tiles, SMs x blocks per SM)).
    int64_t persistentBlocks = 2;

    /// T.make_tensor tensors (ir::Kernel::addressedTensors): the data at each run-time address a test hands the
    /// kernel (the entries of its pointer tables); the other tensors are found by name.
    std::map<int64_t, std::vector<double> *> addresses;

    std::vector<std::string> races; ///< one line per detected race (the first few)
    int64_t agentSwitches = 0;      ///< how often the scheduler resumed an agent (all blocks)
    int64_t blockBarriers = 0;      ///< __syncthreads() passed by whole blocks outside warp roles (all blocks)
    /// Elements stored to the shared buffer named `name` (all threads, all blocks): how often a copy ran.
    int64_t sharedStores(const std::string &name) const {
        int64_t n = 0;
        for (auto &[b, c] : sharedStores_)
            if (b->name == name) n += c;
        return n;
    }

  private:
    std::map<const ir::BufferNode *, int64_t> sharedStores_;
    const ir::Kernel &k_;
    std::map<std::string, std::vector<double> *> tensors_;
    /// tensors_ by buffer, filled as storage() meets them (every global access asked tensors_ by name)
    std::unordered_map<const ir::BufferNode *, std::vector<double> *> byBuffer_;
    std::map<std::string, double> scalars_;
    uint64_t seed_;
    std::mt19937_64 rng_;
    std::vector<std::vector<int64_t>> mapDims_; ///< each tensor map's tensor dimensions, innermost first
    std::vector<bool> zeroTile_;                ///< per tensor map: encoded over the zero tile (no elements)
    int64_t grid_[3] = {1, 1, 1};               ///< the T.Kernel grid (tiles, for a persistent kernel)
    int64_t physicalBlocks_ = 0, physicalBlock_ = 0; ///< a persistent kernel's launch and this block in it
    int T_ = 0;
    std::vector<std::map<const ir::VarNode *, double>> vars_;           ///< per thread
    std::vector<std::map<const ir::BufferNode *, std::vector<double>>> locals_; ///< per thread
    std::map<const ir::BufferNode *, std::vector<double>> shared_;

    // ---- happens-before (SimulatorAgents.cpp) ----
    struct Landing {
        const ir::BufferNode *buffer;
        size_t index;
        double value;
        int thread = -1; ///< the issuing thread of a thread's own cp.async (tilec.cp_async), else -1
    };
    struct WgmmaGroup; // SimulatorHopper.cpp
    /// One component of the vector clocks: the block outside roles (0), a warp-role agent, a TMA load.
    struct Comp {
        std::string name;
        Clock clock;
        int epoch = 0;                              ///< barriers among this component's own threads so far
        std::vector<Landing> open;                  ///< cp.async transfers issued since the last commit
        std::vector<std::vector<Landing>> pending;  ///< committed cp.async groups, oldest first
        std::vector<std::shared_ptr<WgmmaGroup>> wgmma; ///< committed wgmma groups in flight, oldest first
    };
    std::vector<Comp> comps_;
    int cur_ = 0; ///< the component running now
    struct Access {
        int comp = -1, thread = -1, epoch = 0; ///< thread -2: several threads of comp
        int64_t clock = 0;
        int64_t partial = 0; ///< the named barriers of some of the block's threads passed before it (partials_)
        int lo = -1, hi = -1; ///< thread -2: the lowest and the highest of those threads
    };
    /// Named barriers of some of the block's threads outside warp roles (insertSyncs' barriers in a branch of
    /// whole warps), in order: which threads each ordered. Two accesses of one epoch by different threads are
    /// ordered when a later one of these had both threads (reads by several threads: a later one had every
    /// thread from the lowest to the highest reader, and the accessing thread).
    std::vector<std::vector<char>> partials_;
    bool partiallyOrdered(const Access &a, int t) const;
    struct Touch {
        Access w;
        std::vector<Access> r; ///< the latest read of each component
    };
    std::map<const ir::BufferNode *, std::vector<Touch>> touches_;
    bool ordered(const Access &a, int t, const Clock *knows = nullptr) const;
    void touch(const ir::BufferNode *b, size_t i, int t, bool write);
    /// The write being touched stores the value its element holds already: unordered with the last write, it
    /// changes nothing either way (threads storing one value to one element: TileKernels' topk_gate), so no
    /// write-after-write (reads racing with it are still reported).
    bool sameValueWrite_ = false;
    /// Shared buffers the plan (Kernel::shared) puts over some of the same bytes: an access to one is also an
    /// access to the other's overlapping elements (for the race check), and a write poisons them with NaN, so a
    /// plan that lets two live buffers share memory, or a transfer that lands after the memory was reused,
    /// shows as a race or a NaN as it would on the GPU.
    std::map<const ir::BufferNode *, std::vector<const ir::BufferNode *>> aliases_;
    void planAliases();
    void forAliased(const ir::BufferNode *b, size_t i, const std::function<void(const ir::BufferNode *, size_t)> &f);
    void touchOne(int comp, const ir::BufferNode *b, size_t i, int t, bool write, const Clock *knows, const ir::BufferNode *via);
    /// An access by `comp`; `knows`: what it knew when the access could first happen (an asynchronous read
    /// between its issue and its wait), when that is less than its clock now.
    void touchAs(int comp, const ir::BufferNode *b, size_t i, int t, bool write, const Clock *knows = nullptr);
    std::string who(int comp, int t) const;

    // ---- agents (SimulatorAgents.cpp) ----
    struct Agent {
        int comp = 0, role = 0, first = 0, count = 0;
        std::vector<char> mask;
        ir::Stmt body;
        std::thread thread;
        bool finished = false;
        std::function<bool()> ready; ///< set while waiting
        std::function<std::string()> waiting; ///< what it waits on, described as things stand
        std::exception_ptr error;
    };
    std::vector<std::unique_ptr<Agent>> agents_;
    Agent *agent_ = nullptr;     ///< the agent running now (null outside roles)
    std::mutex mu_;
    std::condition_variable cv_;
    int running_ = -1;           ///< the agent that holds the baton; -1: the scheduler
    bool abort_ = false;
    struct Abort {};
    int roleFirst_[2] = {0, 0}, roleCount_[2] = {0, 0}; ///< consumer (0) and producer (1) threads
    struct GroupBarrier {
        int arrived = 0;
        int64_t generation = 0;
        Clock gathered, released;
    };
    std::map<int64_t, GroupBarrier> groupBarriers_;
    void roles(const ir::WarpRoles &r, const std::vector<char> &mask);
    void agentMain(Agent &a, int index);
    void resume(int index);
    void yieldToScheduler();
    void waitUntil(std::function<bool()> ready, std::function<std::string()> what);
    void maybeSwitch();
    void schedule();
    void stopAgents();
    void groupBarrier(int64_t key, int threads, const std::vector<char> &mask, const char *what);
    void groupArrive(int64_t key, int threads, const std::vector<char> &mask);
    int64_t arriveAt(int64_t key, int threads, const std::vector<char> &mask, const char *what);
    void release(Clock &into);
    void acquire(const Clock &from);

    void block(std::array<int64_t, 3> idx) {
        enterBlock(idx);
        exec(k_.body, std::vector<char>(T_, 1));
        exitBlock();
    }

    // ---- T.sync_grid (SimulatorGrid.cpp) ----
    /// The kernel's body cut at the grid barriers of its top level (one phase when it has none).
    std::vector<ir::Stmt> gridPhases() const;
    /// Every block runs each phase before any block runs the next, each keeping its own state (BlockState)
    /// from one phase to the next, as the cooperative launch's grid barrier orders them.
    void runPhases(const std::vector<ir::Stmt> &phases, const int64_t g[3]);

    void enterBlock(std::array<int64_t, 3> idx) {
        physicalBlock_ = idx[0];
        T_ = k_.launchedThreads();
        vars_.assign(T_, {});
        locals_.assign(T_, {});
        shared_.clear();
        touches_.clear();
        comps_.assign(1, Comp{});
        comps_[0].name = "the block";
        comps_[0].clock.set(0, 0);
        cur_ = 0;
        bars_.clear();
        tma_.clear();
        stores_.clear();
        unfenced_.clear();
        unfencedBy_.clear();
        groupBarriers_.clear();
        for (int t = 0; t < T_; ++t) {
            for (int d = 0; d < 3; ++d)
                if (k_.blockIdx[d]) vars_[t][k_.blockIdx[d].get()] = (double)idx[d];
            if (k_.threadIdx) vars_[t][k_.threadIdx.get()] = t;
            for (auto &p : k_.params)
                if (p.kind == ir::Param::Scalar) vars_[t][p.var.get()] = scalars_.at(p.var->name);
            for (auto &s : k_.dynamicSymbols) vars_[t][s.get()] = scalars_.at(s->name);
            for (auto &b : k_.allocs)
                if (b->scope == ir::Scope::Local || b->scope == ir::Scope::Var)
                    locals_[t][b.get()].assign((size_t)std::max<int64_t>(1, b->constElements()), std::nan(""));
        }
        for (auto &b : k_.allocs)
            if (b->scope == ir::Scope::Shared) {
                shared_[b.get()].assign((size_t)b->constElements(), std::nan(""));
                touches_[b.get()].assign((size_t)b->constElements(), Touch{});
            }
    }

    /// What must be complete where the block's threads stop (`where`: "exits", or "reaches the grid barrier").
    void exitBlock(const std::string &where = "exits") {
        for (auto &c : comps_) {
            if (!c.wgmma.empty()) throw SimError(c.name + " " + where + " with wgmma groups in flight (no wgmma_wait retired them)");
            // on the GPU such a transfer lands whenever it lands: over memory the plan gave another buffer
            for (auto *g : {&c.open, c.pending.empty() ? nullptr : &c.pending.front()})
                if (g && !g->empty())
                    throw SimError(c.name + " " + where + " with a cp.async transfer into " + (*g)[0].buffer->name + " not awaited (no cp_async_wait covers it)");
        }
        for (auto &tl : tma_)
            if (!tl.landed) throw SimError("the block " + where + " with a TMA load into " + tl.dst->name + " not awaited");
        for (auto &[t, list] : stores_)
            if (!list.empty()) throw SimError("the block " + where + " while a TMA store from " + list[0].src->name + " issued by thread " + std::to_string(t) + " may still read it (no tma_store_wait)");
    }

    double evalUniform(const ir::Expr &e) {
        std::map<const ir::VarNode *, double> none;
        for (auto &s : k_.dynamicSymbols) none[s.get()] = scalars_.at(s->name);
        vars_.assign(1, none);
        return eval(e, 0);
    }

    static double roundTo(DType t, double v) { return roundToDType(t, v); }

    std::vector<double> &storage(const ir::BufferNode *b, int t) {
        if (b->scope == ir::Scope::Global) {
            if (ir::Buffer a = k_.addressOf(b)) { // the thread's own copy of the address it was made at
                const int64_t at = (int64_t)locals_[t].at(a.get()).at(0);
                auto it = addresses.find(at);
                if (it == addresses.end()) throw SimError("T.make_tensor tensor " + b->name + " at address " + std::to_string(at) + ", where no tensor is");
                return *it->second;
            }
            if (auto c = byBuffer_.find(b); c != byBuffer_.end()) return *c->second;
            auto it = tensors_.find(b->name);
            if (it == tensors_.end()) throw SimError("no data for tensor " + b->name);
            return *byBuffer_.emplace(b, it->second).first->second;
        }
        if (b->scope == ir::Scope::Shared) return shared_.at(b);
        return locals_[t].at(b);
    }

    size_t index(const ir::BufferNode *b, const std::vector<ir::Expr> &idx, int t) {
        if (idx.size() != 1) throw SimError("access of " + b->name + " not flattened");
        double i = eval(idx[0], t);
        auto &s = storage(b, t);
        if (!(i >= 0 && i < (double)s.size()))
            throw SimError("out-of-bounds access " + b->name + "[" + std::to_string((int64_t)i) + "] of " +
                           std::to_string(s.size()) + " by thread " + std::to_string(t));
        return (size_t)i;
    }

    double eval(const ir::Expr &e, int t);
    void exec(const ir::Stmt &s, const std::vector<char> &mask);
    void consumerGroup(const ir::IfThenElse &i, const std::vector<char> &mask); ///< SimulatorExec.cpp
    /// The threads a barrier or a whole-scope call must find active: the agent's, or the block's.
    bool wholeScope(const std::vector<char> &mask) const;

    // ---- device library calls ----
    std::pair<const ir::BufferNode *, int64_t> addressOf(const ir::Expr &e, int t);
    void library(const ir::Call &c, const passes::lib::Info &info, const std::vector<char> &mask); // sm_80 ones
    void cpAsyncChunk(const ir::Call &c, const passes::lib::Info &info, const std::vector<char> &mask); // tilec.cp_async
    void gemmSparse(const ir::Call &c, const std::vector<char> &mask); // T.gemm_sp (tilec.gemm_sp_ss)
    void tmaLoadIssue(const ir::Call &c, const passes::lib::Info &info, int t);
    void tmaStoreIssue(const ir::Call &c, const passes::lib::Info &info, int t);
    void hopper(const ir::Call &c, const passes::lib::Info &info, const std::vector<char> &mask);  // sm_90 ones
    void maxNreg(const ir::Call &c, const std::vector<char> &mask); // setmaxnreg: whole warp groups only
    void mmaSync(const ir::Call &c, const std::vector<char> &mask); // tilec.mma_sync: one warp instruction per warp
    void ldmatrix(const ir::Call &c, const std::vector<char> &mask); // tilec.ldmatrix: one warp instruction per warp
    void stmatrixWarp(const ir::Call &c, const std::vector<char> &mask); // tilec.stmatrix: likewise

    // ---- Hopper state (SimulatorHopper.cpp) ----
    struct Mbarrier {
        bool initialised = false;
        int64_t expected = 0, pending = 0, tx = 0, phases = 0; ///< phases: completed so far
        Clock gathered, released; ///< the current phase's releases; every completed phase's
    };
    std::map<std::pair<const ir::BufferNode *, int64_t>, Mbarrier> bars_;
    struct TmaLoad {
        int comp = 0;                     ///< its own clock component
        const ir::BufferNode *dst = nullptr;
        int64_t dstIndex = 0, map = 0;
        int rank = 0, rowDim = 0, rows = 0, cols = 0, elemBytes = 0, swizzle = 0;
        int boxRows = 0, issuedRows = 0; ///< tma_load_tile_rows: its box height and the rows its boxes cover
        std::array<int64_t, 5> coords{};
        std::pair<const ir::BufferNode *, int64_t> bar;
        bool landed = false;
    };
    std::vector<TmaLoad> tma_;
    struct TmaStore {
        int comp = 0, thread = 0;         ///< its own clock component; the issuing thread
        const ir::BufferNode *src = nullptr;
        int64_t srcIndex = 0, map = 0;
        int rank = 0, rows = 0, cols = 0, elemBytes = 0, swizzle = 0;
        std::array<int64_t, 5> coords{}; ///< the box's first element, innermost first
        /// A bulk copy (tilec.bulk_store): `elems` contiguous elements from src[srcIndex] to dst[dstIndex]; no map.
        const ir::BufferNode *dst = nullptr;
        int64_t dstIndex = 0, elems = 0;
    };
    std::map<int, std::vector<TmaStore>> stores_; ///< per thread: its committed TMA stores still reading, oldest first
    /// Shared elements written through the generic proxy (stmatrix) that the writer has not yet fenced for
    /// the async proxy (fence.proxy.async): element -> writer, and each writer's list.
    std::map<std::pair<const ir::BufferNode *, size_t>, int> unfenced_;
    std::map<int, std::vector<std::pair<const ir::BufferNode *, size_t>>> unfencedBy_;
    /// The shared buffers a bulk copy reads (tilec.bulk_store's sources): threads' element stores to them count as
    /// unfenced until the writer's fence_proxy_async, as stmatrix's do (genericWrite).
    std::set<const ir::BufferNode *> bulkSources_;
    void findBulkSources();
    void genericWrite(const ir::BufferNode *b, size_t i, int t);
    void bulkStoreIssue(const ir::Call &c, int t);
    void stmatrix(const ir::Call &c, const std::vector<char> &mask);
    void retireStore(const TmaStore &s);
    Mbarrier &mbarrier(std::pair<const ir::BufferNode *, int64_t> at, const char *use);
    void complete(Mbarrier &b);
    void land(TmaLoad &l);
    std::string describe(std::pair<const ir::BufferNode *, int64_t> at);
    int64_t sharedByte(const ir::BufferNode *b, int64_t index);
    void wgmmaIssue(const ir::Call &c, const std::vector<char> &mask);
    void wgmmaIssueGroup(const ir::Call &c, int first, int wg); ///< one warpgroup's, threads first..first+127
    void wgmmaRetire(int64_t keep);
    /// wgmma_sp_gemm_ss (SimulatorWgmmaSparse.cpp): thread t's metadata registers as the library loads them at
    /// the issue, (k-step, m-tile) k-step major; the dense rows of A the instructions compute from the compressed
    /// rows (`compressed(r, col)`) and those registers, as the PTX ISA defines sparse wgmma.
    std::vector<uint32_t> wgmmaSpMetadata(const ir::Call &c, int t, int64_t Mw, int64_t wgm);
    void wgmmaSpRows(std::vector<double> &A, int64_t Mw, int64_t K, const std::vector<std::vector<uint32_t>> &meta,
                     const std::function<double(int64_t, int64_t)> &compressed);

    /// A block's own state between the phases of a grid barrier (runPhases): swapped in and out of the
    /// simulator's members.
    struct BlockState {
        int64_t physicalBlock = 0;
        decltype(vars_) vars;
        decltype(locals_) locals;
        decltype(shared_) shared;
        decltype(comps_) comps;
        decltype(partials_) partials;
        decltype(touches_) touches;
        decltype(groupBarriers_) groupBarriers;
        decltype(bars_) bars;
        decltype(tma_) tma;
        decltype(stores_) stores;
        decltype(unfenced_) unfenced;
        decltype(unfencedBy_) unfencedBy;
    };
    void swapBlock(BlockState &b);
};

} // namespace tilec::simtest
