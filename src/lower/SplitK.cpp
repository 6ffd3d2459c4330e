/// \file
/// Split-K for GEMMs that leave the GPU idle (include/tilec/passes/SplitK.h).
#include "tilec/passes/SplitK.h"

#include "tilec/IROperator.h"
#include "tilec/IRUses.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"

#include <algorithm>
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

/// The parts of a GEMM kernel written the usual way, or why the kernel is not one.
struct GemmShape {
    size_t loopAt = 0;       ///< index of the K loop in the body's statements
    const For *loop = nullptr;
    const Copy *store = nullptr; ///< the accumulator's T.copy to C, the body's last statement
    std::string why;          ///< empty when the kernel matched
};

/// Whether `r` is its whole buffer (every range from 0 to the buffer's extent).
bool isWhole(const Region &r) {
    if (!r.buffer || r.ranges.size() != r.buffer->shape.size()) return false;
    for (size_t d = 0; d < r.ranges.size(); ++d)
        if (constValue(r.ranges[d].min) != 0 || !provablyEqual(r.ranges[d].extent, r.buffer->shape[d])) return false;
    return true;
}

bool isGlobalParam(const Kernel &k, const Buffer &b) {
    return std::any_of(k.params.begin(), k.params.end(),
                       [&](const Param &p) { return p.kind == Param::Tensor && p.buffer == b; });
}

/// The K loop's body: copies into shared tiles and T.gemms accumulating into `acc` (nothing else).
bool loopBodyFits(const Stmt &body, const Buffer &acc) {
    std::vector<Stmt> stmts;
    if (auto s = as<Seq>(body)) stmts = s->stmts;
    else stmts = {body};
    bool gemm = false;
    for (auto &s : stmts) {
        if (auto c = as<Copy>(s)) {
            if (!c->dst.buffer || c->dst.buffer->scope != Scope::Shared) return false;
        } else if (auto g = as<Gemm>(s)) {
            if (g->c.buffer != acc || g->clearAccum) return false;
            gemm = true;
        } else {
            return false;
        }
    }
    return gemm;
}

GemmShape match(const Kernel &k) {
    GemmShape m;
    if (k.wrapped()) return {0, nullptr, nullptr, "it has workspaces or views"};
    // (T.use_swizzle's rasterization permutes grid x and y only: the splits along z keep it.)
    if (k.clusterDims != std::array<int, 3>{1, 1, 1} || !k.tensorLayouts.empty())
        return {0, nullptr, nullptr, "it asks for clusters or tensor layouts"};
    auto seq = as<Seq>(k.body);
    if (!seq || seq->stmts.size() < 3) return {0, nullptr, nullptr, "it is not a clear, a K loop and a copy out"};
    const auto &st = seq->stmts;
    auto store = as<Copy>(st.back());
    auto loop = as<For>(st[st.size() - 2]);
    if (!store || !loop) return {0, nullptr, nullptr, "it does not end with a K loop and a copy out"};
    const Buffer &acc = store->src.buffer;
    if (!acc || acc->scope != Scope::Fragment || acc->dtype != DType::Float32 || !isWhole(store->src) || !isGlobalParam(k, store->dst.buffer) ||
        store->dst.buffer->shape.size() != 2)
        return {0, nullptr, nullptr, "its last copy is not of a float32 accumulator to a 2-D tensor"};
    if ((loop->forKind != ForKind::Pipelined && loop->forKind != ForKind::Serial) || constInt(loop->min) != 0 ||
        !loopBodyFits(loop->body, acc))
        return {0, nullptr, nullptr, "its K loop does more than copy tiles and multiply them"};
    // Everything before the loop only clears fragments, the accumulator among them.
    bool cleared = false;
    for (size_t i = 0; i + 2 < st.size(); ++i) {
        auto f = as<Fill>(st[i]);
        if (!f || f->dst.buffer->scope != Scope::Fragment) return {0, nullptr, nullptr, "it does more than clear before its K loop"};
        auto zero = as<FloatImm>(f->value);
        cleared |= f->dst.buffer == acc && isWhole(f->dst) && ((zero && zero->value == 0) || constValue(f->value) == 0);
    }
    if (!cleared) return {0, nullptr, nullptr, "its accumulator is not cleared before the K loop"};
    m.loopAt = st.size() - 2;
    m.loop = loop;
    m.store = store;
    return m;
}

/// The number of splits, at most `most`, for `tiles` output tiles on `sms` SMs and a K loop of `kBlocks` trips:
/// the fewest that make at least one wave among the divisors of kBlocks that leave kMinKBlocks per split (else
/// the most such); where no divisor does, as many as make a wave with kMinKBlocks or more per split, the last
/// split shorter. 1 for no split.
int64_t chooseSplits(int64_t tiles, int64_t sms, int64_t kBlocks, int64_t most) {
    if (tiles * 2 > sms) return 1;
    const int64_t wave = std::min((sms + tiles - 1) / tiles, most);
    int64_t best = 1;
    for (int64_t s = 2; s <= most && s * kMinKBlocks <= kBlocks; ++s) {
        if (kBlocks % s) continue;
        best = s;
        if (s >= wave) break;
    }
    if (best > 1) return best;
    const int64_t s = std::min(wave, kBlocks / kMinKBlocks);
    if (s < 2) return 1;
    const int64_t per = (kBlocks + s - 1) / s;
    return (kBlocks + per - 1) / per; // no split left without K blocks
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

/// The most splits whose partials' round trip through the workspace (8 bytes per element of C and split:
/// written, then read as float32) costs at most half the bytes of the operands the K loop reads (constant
/// shapes: the caller checked the trip count).
int64_t splitsWorthTheirTraffic(const For &loop, const Buffer &C) {
    struct Sources : IRVisitor {
        using IRVisitor::visit;
        std::vector<const BufferNode *> found;
        void visit(const Copy &c) override {
            if (c.src.buffer && c.src.buffer->scope == Scope::Global &&
                std::find(found.begin(), found.end(), c.src.buffer.get()) == found.end())
                found.push_back(c.src.buffer.get());
        }
    } sources;
    sources.visit(loop.body);
    int64_t operandBytes = 0;
    for (const BufferNode *b : sources.found) {
        if (b->constElements() < 0) return 0;
        operandBytes += b->constElements() * b->dtype.bytes();
    }
    if (C->constElements() <= 0) return 0;
    return operandBytes / (2 * 8 * C->constElements());
}

/// Launch 1: the GEMM over grid z = splits, each split's K range, its partial tile into workspace `ws`.
KernelP partialsKernel(const Kernel &k, const GemmShape &m, int64_t splits, const Param &ws) {
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
    Stmt newLoop = For::make(loop.var, loop.min, trips, loop.forKind, loop.numStages, body, loop.loc);

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

/// The splits for kernel `k` on a GPU of `sms` SMs (1: none); `why` says why none where its GEMM leaves the GPU
/// idle (empty where the kernel is no such GEMM).
int64_t decide(const Kernel &k, const GemmShape &m, int64_t sms, std::string &why) {
    auto gx = constInt(k.grid[0]), gy = constInt(k.grid[1]);
    if (k.parts != 1 || k.gridDims > 2) return 1; // launches or a grid z of the author's own (a split by hand)
    if (!gx || !gy || *gx * *gy * 2 > sms || !hasGemm(k.body)) return 1; // the tiles fill the GPU, or are unknown
    const std::string idle = "kernel '" + k.name + "' keeps one block per output tile although its " +
                             std::to_string(*gx * *gy) + " tiles fill at most half of the " + std::to_string(sms) + " SMs: ";
    if (!m.why.empty()) {
        why = idle + m.why;
        return 1;
    }
    // A run-time K: the partials' traffic cannot be weighed against the operands' (a short K would pay for a
    // second launch and the workspace for nothing), and the decision is made here, not in the launcher.
    const auto kBlocks = constValue(m.loop->extent);
    if (!kBlocks) {
        why = idle + "its K loop's trip count is a run-time value (split-K is decided from constant shapes only)";
        return 1;
    }
    const int64_t worth = splitsWorthTheirTraffic(*m.loop, m.store->dst.buffer);
    const int64_t splits = chooseSplits(*gx * *gy, sms, *kBlocks, worth);
    if (splits < 2 && worth < 2)
        why = idle + "float32 partials of its output would cost more than half the bytes of its operands";
    else if (splits < 2)
        why = idle + "its " + std::to_string(*kBlocks) + " K blocks are too few to split (" +
              std::to_string(kMinKBlocks) + " or more per split)";
    return splits;
}

} // namespace

Program splitK(const Program &p, const std::vector<Target> &targets, const LoweringOptions &o,
               const SourceManager *sources) {
    if (!o.splitK || targets.empty()) return p;
    int64_t sms = 0;
    for (auto &t : targets) sms = std::max<int64_t>(sms, t.numSms);
    Program out;
    for (const KernelP &k : p.kernels) {
        GemmShape m = match(*k);
        std::string why;
        const int64_t splits = decide(*k, m, sms, why);
        if (splits < 2) {
            if (!why.empty()) remark(sources, k->launchLoc, why);
            out.kernels.push_back(k);
            continue;
        }
        const Buffer &C = m.store->dst.buffer;
        std::vector<Expr> shape = {intImm(splits)};
        for (auto &d : C->shape) shape.push_back(d);
        Param ws;
        ws.buffer = makeBuffer(uniqueName(*k, "splitk_partials"), Scope::Global, DType::Float32, shape, k->launchLoc);
        ws.loc = k->launchLoc;
        ws.workspace = true;
        KernelP part0 = partialsKernel(*k, m, splits, ws);
        out.kernels.push_back(part0);
        out.kernels.push_back(reductionKernel(*k, *part0, splits, ws.buffer, C));
        remark(sources, k->launchLoc,
               "kernel '" + k->name + "' splits K " + std::to_string(splits) + " ways: its " +
                   std::to_string(*constInt(k->grid[0]) * *constInt(k->grid[1])) + " output tiles fill at most half of the " +
                   std::to_string(sms) + " SMs (--num-sms); float32 partials in a workspace of " + std::to_string(splits) +
                   " x C, summed in split order by a second launch (bit-reproducible; --no-split-k turns it off)");
    }
    return out;
}

} // namespace tilec::passes
