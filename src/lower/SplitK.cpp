/// \file
/// Split-K for GEMMs that leave the GPU idle (include/tilec/passes/SplitK.h).
#include "tilec/passes/SplitK.h"

#include "GemmKernelShape.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/Arith.h"
#include "tilec/SharedAliases.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace tilec::passes {

using namespace ir;

namespace {

/// Fewer K blocks per split than this would leave a split too short to fill a software pipeline.
constexpr int64_t kMinKBlocks = 4;
/// The reduction launch's tile (rows x columns of C per block) and threads: 4 elements per thread, a row's
/// 256 columns read and written contiguously.
constexpr int64_t kReduceRows = 4, kReduceCols = 256;
constexpr int kReduceThreads = 256;

/// The DRAM bytes each SM keeps in flight to draw its share of the GPU's DRAM bandwidth (Little's law: the
/// H200's 4.27 TB/s over 132 SMs, 32 GB/s each, times a loaded latency near 1.5 us). Bytes an SM reads from L2
/// (a small operand every column block re-reads) do not count. Calibrated on the H200 sweeps of
/// docs/PERFORMANCE.md: 16x8192x8192 wants 4 splits of its 64 tiles over 2 and 128x8192x8192 2 over 4
/// (session 17); 128x8192x8192's 2 splits ran 0.78x cuBLAS with 3 stages (32 KiB of DRAM reads in flight per
/// SM), 0.84 with 4 (48 KiB), 0.81-0.83 with 6 (80 KiB) (session 18): the knee lies at 48.
constexpr int64_t kInFlightPerSm = 48 * 1024;

/// A tensor no larger than this that many blocks re-read is taken to stay in L2 after its first read (half the
/// H100's and H200's 50 MB L2): its tiles' re-reads are drawn from L2, and only DRAM's bytes need latency hiding.
constexpr int64_t kL2Resident = 24LL << 20;

/// What the split model knows of a GEMM kernel (constant shapes).
struct Workload {
    int64_t tiles = 0, kBlocks = 0, sms = 0;
    int64_t stageBytes = 0;     ///< operand bytes one K block reads (tile rows past a tensor's end not counted)
    int64_t dramStageBytes = 0; ///< of those, the bytes DRAM serves: a tensor in L2 that n blocks re-read counts 1/n
    int64_t stages = 1;         ///< the loop's stages as written (1: not pipelined, never deepened)
    int64_t maxStages = 1;      ///< the deepest ring one block's shared memory holds on every target
    int64_t ringBytes = 0;      ///< shared bytes of one stage of the loop's tiles
    int64_t fixedShared = 0;    ///< shared bytes besides the ring
    int64_t sharedPerSm = 0;    ///< the deciding target's shared memory per SM
    int64_t operandBytes = 0;   ///< the operand tensors' bytes
    int64_t cElems = 0, cBytes = 0;
};

/// Resident blocks per SM with a ring `stages` deep: 2 where two blocks' shared memory fits (as the warp roles
/// plan), else 1.
int64_t perSm(const Workload &w, int64_t stages) {
    const int64_t block = w.fixedShared + w.ringBytes * stages + smem::kReservedPerBlock;
    return 2 * block <= w.sharedPerSm ? 2 : 1;
}

/// The splits a request for `s` makes (each split ceil(kBlocks / s) K blocks; none left empty).
int64_t effectiveSplits(int64_t kBlocks, int64_t s) {
    const int64_t per = (kBlocks + s - 1) / s;
    return (kBlocks + per - 1) / per;
}

/// DRAM bytes in flight per block for `s` splits and a ring `stages` deep: the stages the producer runs ahead
/// (all but the one consumed), at most a split's K blocks.
int64_t blockInFlight(const Workload &w, int64_t s, int64_t stages) {
    return std::min(std::max<int64_t>(1, stages - 1), (w.kBlocks + s - 1) / s) * w.dramStageBytes;
}

/// DRAM bytes in flight per SM: those of the blocks an SM holds (blocks spread over the SMs first).
int64_t smInFlight(const Workload &w, int64_t s, int64_t stages) {
    const int64_t blocks = w.tiles * s, held = std::min(perSm(w, stages), (blocks + w.sms - 1) / w.sms);
    return held * blockInFlight(w, s, stages);
}

/// The ring for `s` splits: the written stages, deepened one at a time while an SM's DRAM bytes in flight stay
/// under kInFlightPerSm, the shared memory of every target holds the deeper ring, the deeper ring keeps as many
/// bytes in flight per SM and the blocks in as many waves (a pipelined loop of 2 stages or more only).
int64_t stagesFor(const Workload &w, int64_t s) {
    s = effectiveSplits(w.kBlocks, s);
    const int64_t blocks = w.tiles * s, per = (w.kBlocks + s - 1) / s;
    auto waves = [&](int64_t st) { return (blocks + w.sms * perSm(w, st) - 1) / (w.sms * perSm(w, st)); };
    int64_t st = w.stages;
    while (w.stages >= 2 && st < w.maxStages && st - 1 < per && smInFlight(w, s, st) < kInFlightPerSm &&
           smInFlight(w, s, st + 1) > smInFlight(w, s, st) && waves(st + 1) <= waves(st))
        ++st;
    return st;
}

/// The model's time (in units of bytes moved at the full rate) of `s` splits: the operands plus the float32
/// partials' round trip (written and read, 8 bytes per element of C per split) and C, moved wave by wave of
/// resident blocks (per SM as stagesFor's ring leaves room for); a wave of b blocks runs at the full rate only
/// when its DRAM bytes in flight reach sms * kInFlightPerSm, so it takes max(b, need / in flight per block)
/// block-times.
double modelTime(const Workload &w, int64_t s) {
    s = effectiveSplits(w.kBlocks, s);
    const int64_t stages = stagesFor(w, s), blocks = w.tiles * s, slots = w.sms * perSm(w, stages);
    const double bytes = (double)w.operandBytes + (s > 1 ? 8.0 * (double)w.cElems * (double)s : 0.0) + (double)w.cBytes;
    const double fewest = (double)(w.sms * kInFlightPerSm) / (double)std::max<int64_t>(1, blockInFlight(w, s, stages));
    double blockTimes = 0;
    for (int64_t left = blocks; left > 0; left -= slots) blockTimes += std::max((double)std::min(left, slots), fewest);
    return blockTimes * bytes / (double)blocks;
}

/// The splits (2 .. `most`) the model finds fastest: among the divisors of the K blocks that leave kMinKBlocks
/// per split where there is one, else among uneven splits (the last shorter) that leave as many; 1 where none.
int64_t chooseSplits(const Workload &w, int64_t most) {
    std::vector<int64_t> even, uneven;
    for (int64_t s = 2; s <= most && s * kMinKBlocks <= w.kBlocks; ++s)
        (w.kBlocks % s ? uneven : even).push_back(s);
    const std::vector<int64_t> &tried = even.empty() ? uneven : even;
    int64_t best = 1;
    for (int64_t s : tried)
        if (best == 1 || modelTime(w, s) < modelTime(w, best)) best = effectiveSplits(w.kBlocks, s);
    return best;
}

/// The ring's account for -v: its depth (and the written one where deeper), the DRAM bytes in flight per SM.
std::string describeRing(const Workload &w, int64_t splits, int64_t stages) {
    std::string s = "a ring " + std::to_string(stages) + " stages deep" +
                    (stages != w.stages ? " (" + std::to_string(w.stages) + " written)" : "") + ", " +
                    std::to_string(smInFlight(w, splits, stages) / 1024) + " KiB of DRAM reads in flight per SM (" +
                    std::to_string(kInFlightPerSm / 1024) + " KiB keep memory busy";
    if (w.dramStageBytes < w.stageBytes)
        s += "; " + std::to_string((w.stageBytes - w.dramStageBytes) / 1024) + " of each stage's " +
             std::to_string(w.stageBytes / 1024) + " KiB re-read from L2";
    return s + ")";
}

/// The model's account of `splits` for -v: the blocks and waves, the ring, and the other counts' modelled
/// times against it.
std::string describeModel(const Workload &w, int64_t splits, int64_t most) {
    const int64_t stages = stagesFor(w, splits), blocks = w.tiles * splits, slots = w.sms * perSm(w, stages);
    std::string s = "; the model of bytes in flight chose " + std::to_string(splits) + ": " + std::to_string(blocks) + " blocks, " +
                    std::to_string(perSm(w, stages)) + " per SM, " + std::to_string((blocks + slots - 1) / slots) + " wave(s), " +
                    describeRing(w, splits, stages);
    std::string others;
    const double t = modelTime(w, splits);
    for (int64_t o : {splits / 2, splits * 2})
        if (o >= 2 && o <= most && o * kMinKBlocks <= w.kBlocks) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.2f", modelTime(w, o) / t);
            others += std::string(others.empty() ? "" : ", ") + std::to_string(o) + " ways " + buf +
                      " (" + std::to_string(stagesFor(w, o)) + " stages)";
        }
    return s + (others.empty() ? "" : "; modelled time against it: " + others);
}

std::string uniqueName(const Kernel &k, const std::string &base) {
    auto taken = [&](const std::string &n) {
        return std::any_of(k.params.begin(), k.params.end(), [&](const Param &p) { return p.name() == n; }) ||
               std::any_of(k.allocs.begin(), k.allocs.end(), [&](const Buffer &b) { return b->name == n; });
    };
    std::string n = base;
    for (int i = 1; taken(n); ++i) n = base + "_" + std::to_string(i);
    return n;
}

/// The workload of kernel `k`'s GEMM `m` (constant shapes: the caller checked the trip count) on target `t`,
/// the deepest ring that every one of `targets` holds.
Workload workloadOf(const Kernel &k, const GemmShape &m, const Target &t, const std::vector<Target> &targets) {
    struct Tiles : IRVisitor {
        using IRVisitor::visit;
        std::vector<const BufferNode *> tiles;
        std::vector<std::pair<const BufferNode *, int64_t>> sources; ///< each tensor and the bytes a K block reads of it
        void visit(const Copy &c) override {
            if (!c.src.buffer || c.src.buffer->scope != Scope::Global || !c.dst.buffer || c.dst.buffer->scope != Scope::Shared) return;
            if (std::find(tiles.begin(), tiles.end(), c.dst.buffer.get()) == tiles.end()) tiles.push_back(c.dst.buffer.get());
            int64_t bytes = c.src.buffer->dtype.bytes();
            for (size_t d = 0; d < c.src.ranges.size(); ++d) {
                auto e = constValue(c.src.ranges[d].extent);
                auto n = d < c.src.buffer->shape.size() ? constValue(c.src.buffer->shape[d]) : std::nullopt;
                bytes *= std::max<int64_t>(1, n && e ? std::min(*e, *n) : e ? *e : 1);
            }
            auto at = std::find_if(sources.begin(), sources.end(), [&](auto &s) { return s.first == c.src.buffer.get(); });
            if (at == sources.end()) sources.push_back({c.src.buffer.get(), bytes});
            else at->second += bytes;
        }
    } v;
    v.visit(m.loop->body);
    Workload w;
    w.tiles = *constInt(k.grid[0]) * *constInt(k.grid[1]);
    w.kBlocks = *constValue(m.loop->extent);
    w.sms = t.numSms;
    w.stages = m.loop->forKind == ForKind::Pipelined ? std::max(1, m.loop->numStages) : 1;
    for (auto &[b, perK] : v.sources) { // a run-time extent: -1, no split worth its traffic can be known
        const int64_t tensor = b->constElements() < 0 ? -1 : b->constElements() * b->dtype.bytes();
        w.operandBytes = w.operandBytes < 0 || tensor < 0 ? -1 : w.operandBytes + tensor;
        w.stageBytes += perK;
        // The blocks together read tiles * kBlocks * perK bytes of it; a tensor L2 keeps is read from DRAM once.
        const double read = (double)w.tiles * (double)w.kBlocks * (double)perK;
        const bool cached = tensor >= 0 && tensor <= kL2Resident && read > (double)tensor;
        w.dramStageBytes += cached ? (int64_t)std::ceil((double)perK * (double)tensor / read) : perK;
    }
    const Buffer &C = m.store->dst.buffer;
    w.cElems = std::max<int64_t>(0, C->constElements());
    w.cBytes = w.cElems * C->dtype.bytes();
    for (auto &b : k.allocs) {
        const bool ring = std::find(v.tiles.begin(), v.tiles.end(), b.get()) != v.tiles.end();
        const int64_t bytes = ir::storageOf(k, b.get()) == b.get() ? smem::sharedBytes(b.get()) : 0; // (an alias: its base's bytes)
        (ring ? w.ringBytes : w.fixedShared) += ring ? smem::roundUp(bytes, smem::kTmaTileAlignment) : bytes;
    }
    w.sharedPerSm = t.sharedPerSM;
    // The deepest ring one block holds on every target, with room for the ring's barriers and the base's alignment.
    w.maxStages = w.stages;
    auto fitsAll = [&](int64_t st) {
        const int64_t block = w.fixedShared + w.ringBytes * st + 2 * smem::kTmaTileAlignment;
        return std::all_of(targets.begin(), targets.end(), [&](const Target &g) { return smem::fits(g, block, 1); });
    };
    while (w.ringBytes > 0 && fitsAll(w.maxStages + 1)) ++w.maxStages;
    return w;
}

/// The most splits whose partials' round trip through the workspace (8 bytes per element of C and split:
/// written, then read as float32) costs at most half the bytes of the operands the K loop reads.
int64_t splitsWorthTheirTraffic(const Workload &w) {
    for (const int64_t n : {w.operandBytes, w.cElems})
        if (n <= 0) return 0;
    return w.operandBytes / (2 * 8 * w.cElems);
}

/// Launch 1: the GEMM over grid z = splits, each split's K range (its ring `stages` deep), its partial tile into
/// workspace `ws`.
KernelP partialsKernel(const Kernel &k, const GemmShape &m, int64_t splits, int64_t stages, const Param &ws) {
    const Buffer &partials = ws.buffer;
    auto nk = std::make_shared<Kernel>(k);
    nk->params.push_back(ws); // workspaces follow the other parameters
    const Var bz = k.blockIdx[2];
    const For &loop = *m.loop;
    const Expr E = loop.extent;
    const Expr S = intImm(splits);
    const Expr per = simplify(binary(BinaryOp::FloorDiv, binary(BinaryOp::Add, E, intImm(splits - 1)), S));
    const Expr first = binary(BinaryOp::Mul, bz, per);
    // Split z's trip count: per where S divides a constant E, else what is left of E after z * per (>= 0).
    Expr trips = per;
    auto e = constValue(E);
    if (!e || *e % splits)
        trips = simplify(binary(BinaryOp::Max, intImm(0),
                                binary(BinaryOp::Min, per, binary(BinaryOp::Sub, E, first))));
    VarMap shift{{loop.var.get(), binary(BinaryOp::Add, first, loop.var)}};
    Stmt body = simplifyIndices(substitute(loop.body, shift));
    Stmt newLoop = For::make(loop.var, loop.min, trips, loop.forKind, (int)stages, body, loop.loc);

    Region dst{partials, {{bz, intImm(1)}}, m.store->dst.loc};
    for (auto &r : m.store->dst.ranges) dst.ranges.push_back(r);
    Stmt store = Copy::make(m.store->src, dst, m.store->loc);

    auto seq = as<Seq>(k.body);
    std::vector<Stmt> stmts(seq->stmts.begin(), seq->stmts.begin() + (long)m.loopAt);
    stmts.push_back(newLoop);
    stmts.push_back(store);
    nk->body = Seq::make(stmts, k.body->loc);
    nk->gridDims = 3;
    nk->grid[2] = S;
    nk->part = 0;
    nk->parts = 2;
    return nk;
}

/// Launch 2: C = the partials summed in split order, one rounding to C's type.
KernelP reductionKernel(const Kernel &k, const Kernel &part0, int64_t splits, const Buffer &partials,
                        const Buffer &C) {
    auto r = std::make_shared<Kernel>();
    r->name = k.name;
    r->loc = k.loc;
    r->funcLoc = k.funcLoc;
    r->params = part0.params;
    r->dynamicSymbols = k.dynamicSymbols;
    r->outputs = k.outputs;
    r->fastMath = k.fastMath;
    r->noTma = k.noTma;
    r->noWarpSpecialize = k.noWarpSpecialize;
    r->launchLoc = k.launchLoc;
    r->part = 1;
    r->parts = 2;
    const SourceRange at = k.launchLoc;
    r->threadIdx = makeVar("tx", DType::Int32, at);
    r->threads = kReduceThreads;
    r->gridDims = 2;
    const Expr M = C->shape[0], N = C->shape[1];
    auto ceildiv = [](const Expr &a, int64_t b) {
        return simplify(binary(BinaryOp::FloorDiv, binary(BinaryOp::Add, a, intImm(b - 1)), intImm(b)));
    };
    r->grid = {ceildiv(N, kReduceCols), ceildiv(M, kReduceRows), intImm(1)};
    r->blockIdx = {makeVar("bx", DType::Int32, at), makeVar("by", DType::Int32, at), makeVar("bz", DType::Int32, at)};
    const Expr row0 = binary(BinaryOp::Mul, r->blockIdx[1], intImm(kReduceRows));
    const Expr col0 = binary(BinaryOp::Mul, r->blockIdx[0], intImm(kReduceCols));
    Buffer total = makeBuffer(uniqueName(k, "splitk_total"), Scope::Fragment, DType::Float32,
                              {intImm(kReduceRows), intImm(kReduceCols)}, at);
    r->allocs = {total};
    Var s = makeVar("split", DType::Int32, at), i = makeVar("i", DType::Int32, at), j = makeVar("j", DType::Int32, at);
    Expr sum = binary(BinaryOp::Add, Load::make(total, {i, j}, at),
                      Load::make(partials, {s, binary(BinaryOp::Add, row0, i), binary(BinaryOp::Add, col0, j)}, at), at);
    Stmt add = Store::make(total, {i, j}, sum, at);
    Stmt nest = For::make(i, intImm(0), intImm(kReduceRows), ForKind::Parallel, 0,
                          For::make(j, intImm(0), intImm(kReduceCols), ForKind::Parallel, 0, add, at), at);
    Stmt splitsLoop = For::make(s, intImm(0), intImm(splits), ForKind::Serial, 0, nest, at);
    Region whole = Region::whole(total, at);
    Region out{C, {{row0, intImm(kReduceRows)}, {col0, intImm(kReduceCols)}}, at};
    r->body = Seq::make({Fill::make(whole, floatImm(0.0), at), splitsLoop, Copy::make(whole, out, at)}, at);
    return r;
}

/// What splitK gives a kernel: its splits (1: none) and its K loop's stages (0: as written); why none where its
/// GEMM leaves the GPU idle (empty where the kernel is no such GEMM), the model's account for -v.
struct Schedule {
    int64_t splits = 1, stages = 0;
    std::string why, model;
};

/// A kernel whose tiles fill more than half of the SMs but are one wave of at most one block per SM (no split)
/// and whose K loop streams from DRAM: its ring deepened where stagesFor finds too few DRAM bytes in flight.
Schedule deepenOnly(const Kernel &k, const GemmShape &m, const Target &t, const std::vector<Target> &targets) {
    Schedule s;
    const int64_t tiles = *constInt(k.grid[0]) * *constInt(k.grid[1]);
    if (tiles > t.numSms || !m.why.empty() || !constValue(m.loop->extent)) return s;
    const Workload w = workloadOf(k, m, t, targets);
    // DRAM's latency is what the deeper ring hides: a loop that draws less than a third of each stage from DRAM
    // (1024^3 on 64 tiles: an eighth, both operands in L2) is bound by L2 and the tensor cores instead.
    if (3 * w.dramStageBytes < w.stageBytes) return s;
    const int64_t stages = stagesFor(w, 1);
    if (stages <= w.stages) return s;
    s.stages = stages;
    s.model = "kernel '" + k.name + "' runs its K loop " + std::to_string(stages) + " stages deep instead of " +
              std::to_string(w.stages) + ": its " + std::to_string(tiles) + " output tiles are one wave of one block per SM of " +
              std::to_string(t.numSms) + " (--num-sms), and " + std::to_string(w.stages) + " stages keep " +
              std::to_string(smInFlight(w, 1, w.stages) / 1024) + " KiB of DRAM reads in flight per SM; " + describeRing(w, 1, stages);
    return s;
}

/// The schedule of kernel `k` on target `t` (the largest of `targets`).
Schedule decide(const Kernel &k, const GemmShape &m, const Target &t, const std::vector<Target> &targets) {
    Schedule s;
    const int64_t sms = t.numSms;
    auto gx = constInt(k.grid[0]), gy = constInt(k.grid[1]);
    if (k.parts != 1 || k.gridDims > 2) return s; // launches or a grid z of the author's own (a split by hand)
    if (!gx || !gy || !hasGemm(k.body)) return s; // the tiles are unknown
    if (*gx * *gy * 2 > sms) return deepenOnly(k, m, t, targets); // the tiles fill half the GPU or more
    const std::string idle = "kernel '" + k.name + "' keeps one block per output tile although its " +
                             std::to_string(*gx * *gy) + " tiles fill at most half of the " + std::to_string(sms) + " SMs: ";
    if (!m.why.empty()) {
        s.why = idle + m.why;
        return s;
    }
    // A run-time K: the partials' traffic cannot be weighed against the operands' (a short K would pay for a
    // second launch and the workspace for nothing), and the decision is made here, not in the launcher.
    const auto kBlocks = constValue(m.loop->extent);
    if (!kBlocks) {
        s.why = idle + "its K loop's trip count is a run-time value (split-K is decided from constant shapes only)";
        return s;
    }
    const Workload w = workloadOf(k, m, t, targets);
    const int64_t worth = splitsWorthTheirTraffic(w);
    const int64_t splits = chooseSplits(w, worth);
    if (splits >= 2) {
        s.splits = splits;
        s.model = describeModel(w, splits, worth), s.stages = stagesFor(w, splits);
        return s;
    }
    // No split, and the loop as written (a deeper ring alone here would change the seed's own examples, 1024^3 on
    // 64 tiles among them: not yet weighed).
    s.why = idle + (worth < 2 ? "float32 partials of its output would cost more than half the bytes of its operands"
                              : "its " + std::to_string(*kBlocks) + " K blocks are too few to split (" +
                                    std::to_string(kMinKBlocks) + " or more per split)");
    return s;
}

/// Kernel `k` with its K loop (`m`) `stages` deep.
KernelP withStages(const Kernel &k, const GemmShape &m, int64_t stages) {
    auto nk = std::make_shared<Kernel>(k);
    std::vector<Stmt> stmts = as<Seq>(k.body)->stmts;
    const For &f = *m.loop;
    stmts[m.loopAt] = For::make(f.var, f.min, f.extent, f.forKind, (int)stages, f.body, f.loc);
    nk->body = Seq::make(stmts, k.body->loc);
    return nk;
}

} // namespace

Program splitK(const Program &p, const std::vector<Target> &targets, const LoweringOptions &o,
               const SourceManager *sources) {
    if (!o.splitK || targets.empty()) return p;
    // The largest GPU among the targets decides (its SMs, and the shared memory its blocks share).
    const Target &t = *std::max_element(targets.begin(), targets.end(),
                                        [](const Target &a, const Target &b) { return a.numSms < b.numSms; });
    const int64_t sms = t.numSms;
    Program out;
    for (const KernelP &k : p.kernels) {
        GemmShape m = matchGemmKernel(*k);
        const Schedule s = decide(*k, m, t, targets);
        if (s.splits < 2) {
            if (!s.why.empty()) remark(sources, k->launchLoc, s.why);
            if (s.stages > 0) remark(sources, k->launchLoc, s.model);
            out.kernels.push_back(s.stages > 0 ? withStages(*k, m, s.stages) : k);
            continue;
        }
        const Buffer &C = m.store->dst.buffer;
        std::vector<Expr> shape = {intImm(s.splits)};
        for (auto &d : C->shape) shape.push_back(d);
        Param ws;
        ws.buffer = makeBuffer(uniqueName(*k, "splitk_partials"), Scope::Global, DType::Float32, shape, k->launchLoc);
        ws.loc = k->launchLoc;
        ws.workspace = true;
        KernelP part0 = partialsKernel(*k, m, s.splits, s.stages, ws);
        out.kernels.push_back(part0);
        out.kernels.push_back(reductionKernel(*k, *part0, s.splits, ws.buffer, C));
        remark(sources, k->launchLoc,
               "kernel '" + k->name + "' splits K " + std::to_string(s.splits) + " ways: its " +
                   std::to_string(*constInt(k->grid[0]) * *constInt(k->grid[1])) + " output tiles fill at most half of the " +
                   std::to_string(sms) + " SMs (--num-sms); float32 partials in a workspace of " + std::to_string(s.splits) +
                   " x C, summed in split order by a second launch (bit-reproducible; --no-split-k turns it off)" + s.model);
    }
    return out;
}

} // namespace tilec::passes
