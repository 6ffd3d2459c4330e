/// \file
/// Warp specialization with TMA rings and mbarriers (include/tilec/passes/SpecializeWarps.h).
#include "tilec/passes/SpecializeWarps.h"

#include "tilec/Diagnostics.h"

#include <spdlog/spdlog.h>

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/passes/Arith.h"
#include "tilec/passes/Layout.h"
#include "tilec/passes/LibraryCalls.h"
#include "tilec/passes/Staging.h"

#include <algorithm>

namespace tilec::passes {

using namespace ir;

namespace {

Expr i32(int64_t v) { return intImm(v, DType::Int32); }

bool readsBuffers(const Expr &e) {
    struct Reads : IRVisitor {
        using IRVisitor::visit;
        bool any = false;
        void visit(const Load &) override { any = true; }
    } r;
    r.visit(e);
    return r.any;
}

} // namespace

std::optional<TmaTile> planTmaTile(const Copy &c) {
    const Buffer &src = c.src.buffer, &dst = c.dst.buffer;
    if (!src || !dst || src->scope != Scope::Global || dst->scope != Scope::Shared || src->dtype != dst->dtype) return {};
    const int eb = src->dtype.bytes();
    if (eb != 1 && eb != 2 && eb != 4) return {};
    if (dst->shape.size() != 2 || c.dst.ranges.size() != 2) return {};
    auto R = constInt(dst->shape[0]), C = constInt(dst->shape[1]);
    if (!R || !C) return {};
    for (size_t d = 0; d < 2; ++d)
        if (constInt(c.dst.ranges[d].min) != std::optional<int64_t>(0) || constInt(c.dst.ranges[d].extent) != constInt(dst->shape[d]))
            return {};
    const size_t nd = c.src.ranges.size();
    if (nd < 2 || nd > 5 || src->shape.size() != nd) return {};
    // Columns: the innermost dimension; rows: exactly one other dimension; every other extent 1.
    if (constInt(c.src.ranges[nd - 1].extent) != C) return {};
    int rowDim = -1;
    for (size_t d = 0; d + 1 < nd; ++d) {
        auto e = constInt(c.src.ranges[d].extent);
        if (!e) return {};
        if (*e == 1 && !(*R == 1 && d + 2 == nd)) continue;
        if (*e != *R || rowDim >= 0) return {};
        rowDim = (int)d;
    }
    if (rowDim < 0) return {};
    const int64_t rowBytes = *C * eb;
    int sw = panelSwizzleBytes(rowBytes);
    if (!sw) return {};
    TmaTile t;
    t.copy = &c;
    t.rank = (int)nd;
    t.rowDim = (int)(nd - 1) - rowDim;
    t.rows = *R;
    t.cols = *C;
    t.elemBytes = eb;
    t.swizzle = sw;
    t.map.tensor = src;
    t.map.swizzleBytes = sw;
    t.map.box.assign(nd, 1);
    t.map.box[0] = sw / eb;
    t.map.box[(size_t)t.rowDim] = std::min<int64_t>(*R, 256);
    for (size_t j = 0; j < nd; ++j) t.coords.push_back(simplify(cast(DType::Int32, c.src.ranges[nd - 1 - j].min)));
    return t;
}

namespace {

/// The K of one wgmma for the operand types, 0 when wgmma does not take them; `kMajorOnly` when the shared
/// operands must be K-major (every type but the 16-bit ones).
int wgmmaK(DType a, DType b, DType c, bool &kMajorOnly) {
    kMajorOnly = true;
    if (a.isFloat8() && b.isFloat8()) return c.kind == DType::Float32 ? 32 : 0;
    if (a.kind != b.kind) return 0;
    switch (a.kind) {
    case DType::Float16: kMajorOnly = false; return c.kind == DType::Float32 || c.kind == DType::Float16 ? 16 : 0;
    case DType::BFloat16: kMajorOnly = false; return c.kind == DType::Float32 ? 16 : 0;
    case DType::Float32: return c.kind == DType::Float32 ? 8 : 0;
    case DType::Int8:
    case DType::UInt8: return c.kind == DType::Int32 ? 32 : 0;
    default: return 0;
    }
}

} // namespace

bool wgmmaCan(const Gemm &g, const std::map<const BufferNode *, const TmaTile *> &tiles, int warpgroups) {
    auto ta = tiles.find(g.a.buffer.get()), tb = tiles.find(g.b.buffer.get());
    if (ta == tiles.end() || tb == tiles.end() || !g.c.buffer || g.c.buffer->scope != Scope::Fragment) return false;
    if (g.c.buffer->shape.size() != 2) return false;
    auto M = constInt(g.c.buffer->shape[0]), N = constInt(g.c.buffer->shape[1]);
    if (!M || !N) return false;
    const TmaTile &A = *ta->second, &B = *tb->second;
    int64_t aM = g.transA ? A.cols : A.rows, K = g.transA ? A.rows : A.cols;
    int64_t bK = g.transB ? B.cols : B.rows, bN = g.transB ? B.rows : B.cols;
    if (aM != *M || bN != *N || bK != K) return false;
    bool kMajorOnly = false;
    int kInst = wgmmaK(g.a.buffer->dtype, g.b.buffer->dtype, g.c.buffer->dtype, kMajorOnly);
    if (!kInst || K % kInst || (kMajorOnly && (g.transA || !g.transB))) return false;
    int step = g.a.buffer->dtype.kind == DType::Int8 || g.a.buffer->dtype.kind == DType::UInt8 ? 16 : 8;
    auto [wgM, wgN] = wgmmaWarpgroups(*M, *N, warpgroups, step);
    return wgM && (g.policy == GemmPolicy::Auto || g.policy == GemmPolicy::Square ||
                   (g.policy == GemmPolicy::FullRow && wgN == 1));
}

namespace {

/// Uses of the ring buffers other than as the shared operands of a wgmma T.gemm.
struct OtherUses : IRVisitor {
    using IRVisitor::visit;
    const std::map<const BufferNode *, const TmaTile *> *tiles = nullptr;
    int warpgroups = 1;
    bool found = false;
    void use(const Buffer &b) { found |= b && tiles->count(b.get()); }
    void visit(const Load &op) override { use(op.buffer), IRVisitor::visit(op); }
    void visit(const Store &op) override { use(op.buffer), IRVisitor::visit(op); }
    void visit(const Copy &op) override { use(op.src.buffer), use(op.dst.buffer), IRVisitor::visit(op); }
    void visit(const Fill &op) override { use(op.dst.buffer), IRVisitor::visit(op); }
    void visit(const Reduce &op) override { use(op.src), use(op.dst); }
    void visit(const AtomicAdd &op) override { use(op.dst.buffer), IRVisitor::visit(op); }
    void visit(const Gemm &op) override {
        use(op.c.buffer);
        if (!wgmmaCan(op, *tiles, warpgroups)) use(op.a.buffer), use(op.b.buffer);
    }
};

/// Marks the T.gemms of the loop body that run on wgmma.
struct MarkWgmma : IRMutator {
    using IRMutator::visit;
    const std::map<const BufferNode *, const TmaTile *> *tiles = nullptr;
    int warpgroups = 1;
    Stmt visit(const std::shared_ptr<const Gemm> &op) override {
        return wgmmaCan(*op, *tiles, warpgroups) ? op->withInstr(GemmInstr::Wgmma) : Stmt(op);
    }
};

/// Registers per thread for each role after setmaxnreg, for `blocks` blocks per SM: the producer gives up all
/// but a few, the consumers take what each block's allocation at entry (the launch bound's share of the
/// register file) leaves.
std::pair<int, int> roleRegisters(int consumers, int producers, int blocks, const Target &t) {
    auto down8 = [](int64_t r) { return (int)(r / 8 * 8); };
    int entry = down8(std::min<int64_t>(t.registersPerThread, t.registersPerSM / blocks / (consumers + producers)));
    int producer = consumers >= 384 || blocks > 1 ? 24 : 40;
    int consumer = down8(std::min<int64_t>(240, ((int64_t)entry * (consumers + producers) - (int64_t)producer * producers) / consumers));
    return {producer, consumer};
}

/// Blocks per SM to plan the warp roles for: two where two blocks' shared memory fits an SM and the consumers'
/// share of the registers at two blocks still holds their fragments with room for addresses and the epilogue
/// (the seed's 128x128 tile over one consumer warpgroup: one block's epilogue and barrier waits then overlap
/// the other block's wgmma), else one. The room is 64 registers: at 40 (the 128x128 tile over two consumer
/// warpgroups, 64 accumulators in 104 registers) ptxas gives up on the wgmma (C7602, insufficient registers).
int plannedBlocks(const Kernel &k, int consumers, int producers, const Target &t) {
    int64_t shared = 1024, fragmentBytes = 0;
    for (auto &b : k.allocs) {
        if (!b) continue;
        int64_t bytes = std::max<int64_t>(0, b->constElements()) * b->dtype.bytes();
        if (b->scope == Scope::Shared) shared += (bytes + 1023) / 1024 * 1024;
        if (b->scope == Scope::Fragment) fragmentBytes += bytes;
    }
    const int64_t words = fragmentBytes / 4 / consumers;
    const bool sharedFits = 2 * (shared + 1024) <= t.sharedPerSM;
    const bool threadsFit = 2 * (consumers + producers) <= t.threadsPerSM;
    return sharedFits && threadsFit && roleRegisters(consumers, producers, 2, t).second >= words + 64 ? 2 : 1;
}

/// Whether the consumers' code (the kernel's statements and the pipelined loop's rest, ring buffers aside)
/// touches no shared memory: then one output tile's consumers cannot race the next tile's over it, and the
/// roles may walk several tiles without a barrier between them.
bool consumersUseNoSharedMemory(const std::vector<Stmt> &top, size_t at,
                                const std::map<const BufferNode *, const TmaTile *> &ring) {
    for (size_t i = 0; i < top.size(); ++i)
        for (auto *b : mentionedBuffers(top[i], nullptr))
            if (b->scope == Scope::Shared && !(i == at && ring.count(b))) return false;
    return true;
}

class Specializer {
  public:
    Specializer(const Kernel &k, const Target &t, const SourceManager *sources) : k_(k), t_(t), sources_(sources) {}

    /// The rewritten kernel, or null when nothing applies; -v logs which, and why.
    std::shared_ptr<Kernel> run() {
        if (k_.threads % 128 || !k_.threadIdx) {
            log(k_.launchLoc, "keeps the cp.async path: " + std::string(k_.threads % 128 ? "threads are not whole warpgroups"
                                                                                    : "the kernel has no thread binding"));
            return nullptr;
        }
        std::vector<Stmt> top;
        if (auto q = as<Seq>(k_.body)) top = q->stmts;
        else top = {k_.body};
        for (size_t i = 0; i < top.size(); ++i) {
            auto f = as<For>(top[i]);
            if (!f || f->forKind != ForKind::Pipelined || f->numStages < 1) continue;
            why_.clear();
            if (auto k = specialize(top, i)) {
                log(f->loc, "T.Pipelined loop -> warp roles: a producer warpgroup loading " +
                                std::to_string(k->tensorMaps.size()) + " tile(s) per stage by TMA, " +
                                std::to_string(k_.threads / 128) + " consumer warpgroup(s) on wgmma; " +
                                std::to_string(k->minBlocksPerSM) + " block(s) per SM" + (k->persistent ? ", persistent" : ""));
                return k;
            }
            log(f->loc, "T.Pipelined loop keeps the cp.async path: " + (why_.empty() ? std::string("no T.gemm can use wgmma") : why_));
        }
        return nullptr;
    }

  private:
    const Kernel &k_;
    const Target &t_;
    const SourceManager *sources_;
    std::string why_; ///< why the last loop tried was not specialized

    void log(const SourceRange &at, const std::string &what) const {
        std::string file = sources_ && at.valid() && at.file < sources_->fileCount() ? sources_->name(at.file) : "tilec";
        spdlog::debug("{}:{}:{}: kernel '{}' ({}): {}", file, at.line, at.col, k_.name, t_.name, what);
    }
    std::nullptr_t no(std::string why) {
        why_ = std::move(why);
        return nullptr;
    }

    std::shared_ptr<Kernel> specialize(const std::vector<Stmt> &top, size_t at) {
        const For &loop = *as<For>(top[at]);
        const int S = loop.numStages, C = k_.threads, P = 128;
        if (readsBuffers(loop.min) || readsBuffers(loop.extent)) return no("its bounds read a buffer");
        LoopSplit split = splitPipelinedBody(loop);
        if (split.hoisted.empty()) return no("no global-to-shared tile copy to hoist into a producer");
        std::vector<TmaTile> tiles;
        for (auto *c : split.hoisted) {
            auto t = planTmaTile(*c);
            if (!t) return no("a copy is not a TMA tile (2-D or more, 16-byte rows, a box TMA can take)");
            for (auto &e : t->coords)
                if (readsBuffers(e)) return no("a copy's position reads a buffer");
            tiles.push_back(*t);
        }
        std::map<const BufferNode *, const TmaTile *> byBuffer;
        for (auto &t : tiles) {
            if (byBuffer.count(t.copy->dst.buffer.get())) return no("two copies load one shared buffer");
            byBuffer[t.copy->dst.buffer.get()] = &t;
        }
        // The ring buffers live only in this loop, only as wgmma operands, and every tile feeds one.
        std::set<const BufferNode *> outside = mentionedBuffers(k_.body, top[at].get());
        for (auto &[b, t] : byBuffer)
            if (outside.count(b)) return no("a staged buffer is used outside the loop");
        for (auto *b : copyTargets(split.rest))
            if (byBuffer.count(b)) return no("a staged buffer is also written in the loop");
        OtherUses other;
        other.tiles = &byBuffer;
        other.warpgroups = C / 128;
        for (auto &s : split.rest) other.visit(s);
        if (other.found) return no("a staged buffer is used by something other than a wgmma (e.g. a T.gemm wgmma cannot take: "
                                    "tf32, float8 and int8 operands must be K-major)");
        MarkWgmma mark;
        mark.tiles = &byBuffer;
        mark.warpgroups = C / 128;
        std::vector<Stmt> rest;
        bool anyWgmma = false;
        for (auto &s : split.rest) {
            rest.push_back(mark.mutate(s));
            anyWgmma |= rest.back() != s;
        }
        if (!anyWgmma) return no("no T.gemm in it can use wgmma (operand types, layouts or shapes)");

        auto nk = std::make_shared<Kernel>(k_);
        const SourceRange &loc = loop.loc;
        // Tensor maps, one per distinct (tensor, box, swizzle).
        std::vector<int> mapOf;
        for (auto &t : tiles) {
            auto it = std::find(nk->tensorMaps.begin(), nk->tensorMaps.end(), t.map);
            if (it == nk->tensorMaps.end()) it = nk->tensorMaps.insert(nk->tensorMaps.end(), t.map);
            mapOf.push_back((int)(it - nk->tensorMaps.begin()));
        }
        // Rings and barriers: full[s] at s, empty[s] at S + s.
        std::map<const BufferNode *, Buffer> ring;
        for (auto &t : tiles) ring[t.copy->dst.buffer.get()] = ringOf(t.copy->dst.buffer, S);
        Buffer mbar = makeBuffer("tilec_mbar", Scope::Shared, DType::UInt64, {i32(2 * S)}, loc);
        for (auto &b : nk->allocs)
            if (b && ring.count(b.get())) b = ring[b.get()];
        nk->allocs.push_back(mbar);
        auto barrier = [&](const Expr &index) { return addressOf(mbar, {simplify(index)}); };

        Var tx = k_.threadIdx;
        // Persistent: each role walks the block's output tiles; the ring's position runs on across them.
        const bool persistent = t_.persistent && consumersUseNoSharedMemory(top, at, byBuffer);
        Expr tileCount = persistent ? simplify(binary(BinaryOp::Mul, binary(BinaryOp::Mul, k_.grid[0], k_.grid[1]), k_.grid[2]))
                                : Expr();
        Var producerTile = persistent ? makeVar("tile", DType::Int32, loc) : Var();
        Var consumerTile = persistent ? makeVar("tile", DType::Int32, loc) : Var();
        auto stageOf = [&](const Var &ko, const Var &tile) {
            Expr k0 = simplify(binary(BinaryOp::Sub, ko, loop.min));
            if (tile) k0 = simplify(binary(BinaryOp::Add, binary(BinaryOp::Mul, tile, loop.extent), k0));
            return std::pair{simplify(binary(BinaryOp::FloorMod, k0, i32(S))),
                             simplify(binary(BinaryOp::FloorMod, binary(BinaryOp::FloorDiv, k0, i32(S)), i32(2)))};
        };
        int64_t bytes = 0;
        for (auto &t : tiles) bytes += t.bytes();

        // Producer: one thread walks the loop, filling a stage once its consumers have released it.
        Var pk = makeVar(loop.var->name, loop.var->dtype, loop.var->loc);
        auto [ps, pphase] = stageOf(pk, producerTile);
        std::vector<Stmt> issue{
            lib::stmt(lib::Fn::MbarrierWait, {barrier(binary(BinaryOp::Add, i32(S), ps)), simplify(binary(BinaryOp::BitXor, pphase, i32(1)))}, loc),
            lib::stmt(lib::Fn::MbarrierArriveExpectTx, {barrier(ps), i32(bytes)}, loc)};
        VarMap toProducer{{loop.var.get(), pk}};
        for (size_t i = 0; i < tiles.size(); ++i) {
            const TmaTile &t = tiles[i];
            std::vector<Expr> args{i32(t.rank), i32(t.rowDim), i32(t.rows), i32(t.cols), i32(t.elemBytes), i32(t.swizzle),
                                   addressOf(ring[t.copy->dst.buffer.get()], {ps, i32(0), i32(0)}), i32(mapOf[i]), barrier(ps)};
            for (size_t j = 0; j < 5; ++j) args.push_back(j < t.coords.size() ? simplify(substitute(t.coords[j], toProducer)) : i32(0));
            issue.push_back(lib::stmt(lib::Fn::TmaLoadTile, std::move(args), t.copy->loc));
        }
        Stmt producerLoop = For::make(pk, loop.min, loop.extent, ForKind::Serial, 0, Seq::make(std::move(issue), loc), loc);
        if (persistent) producerLoop = For::make(producerTile, i32(0), tileCount, ForKind::Persistent, 0, producerLoop, loc);
        Stmt producer = IfThenElse::make(binary(BinaryOp::EQ, tx, i32(C)), producerLoop, nullptr, loc);

        // Consumers: the kernel's own code, each iteration bracketed by the stage's barriers.
        auto [cs, cphase] = stageOf(loop.var, consumerTile);
        std::vector<Stmt> body{lib::stmt(lib::Fn::MbarrierWait, {barrier(cs), cphase}, loc)};
        for (auto &s : rest) body.push_back(stageBuffers(s, ring, cs));
        // One arrival per consumer warp (its lane 0, after the warp's work on the stage is done).
        body.push_back(IfThenElse::make(binary(BinaryOp::EQ, binary(BinaryOp::FloorMod, tx, i32(32)), i32(0)),
                                        lib::stmt(lib::Fn::MbarrierArrive, {barrier(binary(BinaryOp::Add, i32(S), cs))}, loc),
                                        nullptr, loc));
        std::vector<Stmt> consumer(top.begin(), top.begin() + (long)at);
        consumer.push_back(For::make(loop.var, loop.min, loop.extent, ForKind::Serial, 0, Seq::make(std::move(body), loc), loc));
        consumer.insert(consumer.end(), top.begin() + (long)at + 1, top.end());
        Stmt consumerBody = Seq::make(std::move(consumer), loc);
        if (persistent) consumerBody = For::make(consumerTile, i32(0), tileCount, ForKind::Persistent, 0, consumerBody, loc);

        std::vector<Stmt> init;
        for (int s = 0; s < S; ++s) {
            init.push_back(lib::stmt(lib::Fn::MbarrierInit, {barrier(i32(s)), i32(1)}, loc));
            init.push_back(lib::stmt(lib::Fn::MbarrierInit, {barrier(i32(S + s)), i32(C / 32)}, loc));
        }
        init.push_back(lib::stmt(lib::Fn::MbarrierInitFence, {}, loc));
        const int blocks = plannedBlocks(*nk, C, P, t_);
        auto [pr, cr] = t_.archSpecific ? roleRegisters(C, P, blocks, t_) : std::pair{0, 0};
        nk->body = Seq::make({IfThenElse::make(binary(BinaryOp::EQ, tx, i32(0)), Seq::make(std::move(init), loc), nullptr, loc),
                              lib::stmt(lib::Fn::Sync, {}, loc),
                              WarpRoles::make(C, P, pr, cr, producer, consumerBody, loc)},
                             k_.body->loc);
        nk->producerThreads = P;
        nk->minBlocksPerSM = blocks;
        nk->persistent = persistent;
        nk->needsTma = true;
        return nk;
    }
};

} // namespace

Program specializeWarps(const Program &p, const Target &t, const SourceManager *sources) {
    if (!t.hasTma() || !t.hasWgmma() || !t.warpSpecialize) {
        spdlog::debug("{}: no warp specialization ({}): T.gemm keeps mma.sync, tile copies cp.async", t.name,
                      !t.warpSpecialize ? "--no-warp-specialize"
                      : t.sm < 90       ? "no TMA or wgmma on the target"
                      : !t.tma          ? "the variant without TMA, or --no-tma"
                                        : "no wgmma on the target");
        return p;
    }
    Program out;
    for (auto &k : p.kernels) {
        // pass_configs={"tl.disable_tma_lower": True} / {"tl.disable_warp_specialized": True} on this kernel.
        // ... and kernels that already have warp roles (the user's own, lowerWarpRoles).
        if (k->noTma || k->noWarpSpecialize || k->producerThreads) {
            out.kernels.push_back(k);
            continue;
        }
        Specializer s(*k, t, sources);
        auto nk = s.run();
        out.kernels.push_back(nk ? nk : k);
    }
    return out;
}

} // namespace tilec::passes
