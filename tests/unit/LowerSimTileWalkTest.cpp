/// \file
/// Kernels that walk their own output tiles (T.Persistent's wave loop and tile guard, or an author's serial
/// loop with an `if` on the tile) around a T.Pipelined GEMM, lowered for sm_90a into warp roles (src/lower/
/// TileWalks.cpp, specializeWarps): the producer walks the same tiles as the consumers and the ring's stages and
/// phases run on across tiles. Run on the CPU simulator under several interleavings against a float64
/// reference, at shapes the tiles do not divide and tile counts that are not a multiple of the blocks; and
/// mutations the simulator must catch (the producer walking one tile fewer, the ring restarting per tile).
/// Also a T.Pipelined loop whose body runs under a condition (block-sparse GEMM): both roles evaluate it, the
/// ring moving on by the iterations that run; a producer ignoring the mask must be caught.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/IRVisitor.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::quarters;
using tilec::simtest::Simulator;
namespace lib = tilec::passes::lib;

namespace {

/// A GEMM whose `blocks` blocks walk the (ceil(M / bm), ceil(N / bn)) output tiles: "primitive", T.Persistent;
/// "serial", the author's own wave loop with a guard on both tile coordinates; `staged`: the epilogue through a
/// shared tile (as TileLang's example_gemm_persistent.py), else straight from the accumulator.
const char *kSource = R"(import tilelang.language as T


def walk_gemm(M, N, K, bm, bn, bk, stages, threads, blocks, primitive, staged):
    m_blocks = T.ceildiv(M, bm)
    n_blocks = T.ceildiv(N, bn)
    waves = T.ceildiv(m_blocks * n_blocks, blocks)

    @T.macro
    def one_tile(A, B, C, A_s, B_s, C_l, C_s, bx, by):
        T.clear(C_l)
        for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
            T.copy(A[bx * bm, k * bk], A_s)
            T.copy(B[k * bk, by * bn], B_s)
            T.gemm(A_s, B_s, C_l)
        if staged:
            T.copy(C_l, C_s)
            T.copy(C_s, C[bx * bm, by * bn])
        else:
            T.copy(C_l, C[bx * bm, by * bn])

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(blocks, threads=threads) as (block_id):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float")
            C_s = T.alloc_shared((bm, bn), "float16")
            if primitive:
                for bx, by in T.Persistent([m_blocks, n_blocks], blocks, block_id):
                    one_tile(A, B, C, A_s, B_s, C_l, C_s, bx, by)
            else:
                for w in T.serial(waves):
                    tile = w * blocks + block_id
                    bx = tile // n_blocks
                    by = tile % n_blocks
                    if bx < m_blocks:
                        one_tile(A, B, C, A_s, B_s, C_l, C_s, bx, by)
    return kernel
)";

struct WalkCase {
    int M, N, K, bm, bn, bk, stages, threads, blocks;
    bool primitive = true, staged = true;
};

std::string source(const WalkCase &c) {
    auto b = [](bool x) { return std::string(x ? "True" : "False"); };
    return std::string(kSource) + "\n\nk = walk_gemm(" + std::to_string(c.M) + ", " + std::to_string(c.N) + ", " + std::to_string(c.K) +
           ", " + std::to_string(c.bm) + ", " + std::to_string(c.bn) + ", " + std::to_string(c.bk) + ", " + std::to_string(c.stages) +
           ", " + std::to_string(c.threads) + ", " + std::to_string(c.blocks) + ", " + b(c.primitive) + ", " + b(c.staged) + ")\n";
}

struct Lowered {
    LowerRun r;
    const ir::Kernel *roles = nullptr;
    explicit Lowered(const WalkCase &c, const char *arch = "sm_90a") : Lowered(source(c), arch) {}
    Lowered(const std::string &src, const char *arch) {
        Variant t{*Target::parse(arch), {}};
        t.options.clusters = false; // the simulator runs one block at a time
        r.run(src, "walk.tile", t);
        if (r.lowered)
            for (auto &k : r.lowered->kernels)
                if (k->producerThreads) roles = k.get();
    }
};

/// The simulator's error (a deadlock, a misuse; empty when it ran through), races, and wrong elements of C.
struct Outcome {
    std::string error;
    std::vector<std::string> races;
    int wrong = 0;
    std::string firstWrong;
};

/// `k` run under interleaving `seed`: the simulator's error and races (wrong elements left to the caller).
Outcome run(const ir::Kernel &k, std::map<std::string, std::vector<double> *> tensors, uint64_t seed) {
    Outcome o;
    Simulator s(k, std::move(tensors), {}, seed);
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        o.error = e.what();
    }
    o.races = s.races;
    return o;
}

Outcome simulate(const ir::Kernel &k, const WalkCase &c, uint64_t seed) {
    auto a = quarters((size_t)c.M * c.K, 1), b = quarters((size_t)c.K * c.N, 2);
    std::vector<double> out((size_t)c.M * c.N, std::nan(""));
    Outcome o = run(k, {{"A", &a}, {"B", &b}, {"C", &out}}, seed);
    for (int i = 0; i < c.M; ++i)
        for (int j = 0; j < c.N; ++j) {
            double acc = 0;
            for (int kk = 0; kk < c.K; ++kk) acc += a[(size_t)i * c.K + kk] * b[(size_t)kk * c.N + j];
            double want = simtest::roundToDType(DType::Float16, acc), got = out[(size_t)i * c.N + j];
            if (!(got == want) && o.wrong++ == 0)
                o.firstWrong = "C[" + std::to_string(i) + ", " + std::to_string(j) + "] = " + std::to_string(got) + ", expected " + std::to_string(want);
        }
    return o;
}

void expectCorrect(const ir::Kernel &k, const WalkCase &c, std::initializer_list<uint64_t> seeds) {
    for (uint64_t seed : seeds) {
        Outcome o = simulate(k, c, seed);
        EXPECT_EQ(o.error, "") << "seed " << seed;
        for (auto &r : o.races) ADD_FAILURE() << "seed " << seed << ": race: " << r;
        EXPECT_EQ(o.wrong, 0) << "seed " << seed << ": " << o.firstWrong;
    }
}

void walkCase(const WalkCase &c, const char *arch = "sm_90a") {
    Lowered l(c, arch);
    ASSERT_TRUE(l.roles) << "no warp-specialized kernel\n" << l.r.diags();
    EXPECT_FALSE(l.roles->persistent) << "the kernel walks its own tiles; tilec adds no walk of its own";
    expectCorrect(*l.roles, c, {0, 1, 2});
}

// 4 x 3 tiles (200 = 3 x 64 + 8 rows, 136 = 2 x 64 + 8 columns), K = 200 (a partial last k-block) over 5 blocks:
// 3 waves of 15 slots, 3 of them past the last tile (T.Persistent's guard), blocks walking 2 or 3 tiles.
TEST(SimTileWalk, PersistentPrimitiveOddShapes) { walkCase({200, 136, 200, 64, 64, 64, 3, 128, 5}); }
TEST(SimTileWalk, PersistentPrimitiveTwoStages) { walkCase({136, 200, 136, 64, 64, 32, 2, 128, 4}); }
// More stages than k-blocks: the ring's phase still runs on across tiles.
TEST(SimTileWalk, MoreStagesThanKBlocks) { walkCase({130, 72, 64, 64, 64, 32, 4, 128, 3}); }
TEST(SimTileWalk, TwoConsumerWarpgroups) { walkCase({200, 136, 160, 128, 64, 64, 3, 256, 3}); }
TEST(SimTileWalk, OneBlockWalksEveryTile) { walkCase({136, 136, 96, 64, 64, 32, 2, 128, 1}); }
TEST(SimTileWalk, EpilogueFromTheAccumulator) { walkCase({200, 136, 200, 64, 64, 64, 3, 128, 5, true, false}); }
TEST(SimTileWalk, AuthorsOwnWaveLoop) { walkCase({200, 136, 200, 64, 64, 64, 3, 128, 5, false, true}); }
TEST(SimTileWalk, AuthorsOwnWaveLoopAccumulatorEpilogue) { walkCase({136, 200, 96, 64, 64, 32, 2, 128, 4, false, false}); }
// sm_90 (no wgmma): one producer warp, mma.sync consumers releasing each stage thread by thread.
TEST(SimTileWalk, Sm90ProducerWarp) { walkCase({200, 136, 200, 64, 64, 64, 3, 128, 5}, "sm_90"); }
TEST(SimTileWalk, Sm90AuthorsOwnWaveLoop) { walkCase({136, 200, 96, 64, 64, 32, 2, 128, 4, false, false}, "sm_90"); }

/// A block-sparse GEMM (TileLang's examples/blocksparse_gemm): each k-block's copies and T.gemm under
/// `if Mask[by, bx, k]:`. Both roles evaluate the mask per iteration; the ring moves on by the iterations that
/// run. `staged`: the epilogue through a shared tile (the roles then take one tile per block), else straight
/// from the accumulator (tilec's persistent walk: the count of iterations run goes on across tiles).
const char *kSparse = R"(import tilelang.language as T


def sparse_gemm(M, N, K, bm, bn, bk, stages, threads, staged):
    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
               Mask: T.Tensor((T.ceildiv(M, bm), T.ceildiv(N, bn), T.ceildiv(K, bk)), "bool"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float")
            C_s = T.alloc_shared((bm, bn), "float16")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if Mask[by, bx, k]:
                    T.copy(A[by * bm, k * bk], A_s)
                    T.copy(B[k * bk, bx * bn], B_s)
                    T.gemm(A_s, B_s, C_l)
            if staged:
                T.copy(C_l, C_s)
                T.copy(C_s, C[by * bm, bx * bn])
            else:
                T.copy(C_l, C[by * bm, bx * bn])
    return kernel
)";

/// The producer loading every k-block, the mask ignored (its guard's condition made true).
std::shared_ptr<ir::Kernel> producerIgnoringTheMask(const ir::Kernel &k);

void sparseCase(const WalkCase &c, bool staged, const char *arch = "sm_90a", bool mutate = false) {
    const std::string src = std::string(kSparse) + "\n\nk = sparse_gemm(" + std::to_string(c.M) + ", " + std::to_string(c.N) + ", " +
                            std::to_string(c.K) + ", " + std::to_string(c.bm) + ", " + std::to_string(c.bn) + ", " +
                            std::to_string(c.bk) + ", " + std::to_string(c.stages) + ", " + std::to_string(c.threads) + ", " +
                            (staged ? "True" : "False") + ")\n";
    Lowered l(src, arch);
    const ir::Kernel *roles = l.roles;
    ASSERT_TRUE(roles) << "no warp-specialized kernel\n" << l.r.diags();
    EXPECT_EQ(roles->persistent, !staged);
    std::shared_ptr<ir::Kernel> mutant = mutate ? producerIgnoringTheMask(*roles) : nullptr;
    if (mutant) roles = mutant.get();
    int failures = 0;
    const int mb = (c.M + c.bm - 1) / c.bm, nb = (c.N + c.bn - 1) / c.bn, kb = (c.K + c.bk - 1) / c.bk;
    auto a = quarters((size_t)c.M * c.K, 1), b = quarters((size_t)c.K * c.N, 2), mask = quarters((size_t)mb * nb * kb, 3);
    for (auto &m : mask) m = m > 0; // about half the k-blocks; some tiles none, some all
    mask[0] = 0, mask[1] = 0;
    for (uint64_t seed : {0, 1, 2}) {
        std::vector<double> out((size_t)c.M * c.N, std::nan(""));
        Outcome o = run(*roles, {{"A", &a}, {"B", &b}, {"Mask", &mask}, {"C", &out}}, seed);
        failures += !o.error.empty() + (int)o.races.size();
        if (!mutate) {
            EXPECT_EQ(o.error, "") << "seed " << seed;
            for (auto &race : o.races) ADD_FAILURE() << "seed " << seed << ": race: " << race;
        }
        if (!o.error.empty()) continue;
        int wrong = 0;
        for (int i = 0; i < c.M && wrong < 3; ++i)
            for (int j = 0; j < c.N && wrong < 3; ++j) {
                double acc = 0;
                for (int kk = 0; kk < c.K; ++kk)
                    if (mask[((size_t)(i / c.bm) * nb + j / c.bn) * kb + kk / c.bk] != 0) acc += a[(size_t)i * c.K + kk] * b[(size_t)kk * c.N + j];
                double want = simtest::roundToDType(DType::Float16, acc), got = out[(size_t)i * c.N + j];
                if (!(got == want) && wrong++ < 3 && !mutate)
                    ADD_FAILURE() << "seed " << seed << ": C[" << i << ", " << j << "] = " << got << ", expected " << want;
            }
        failures += wrong;
    }
    if (mutate) EXPECT_GT(failures, 0) << "a producer loading the k-blocks the mask skips ran clean";
}

std::shared_ptr<ir::Kernel> producerIgnoringTheMask(const ir::Kernel &k) {
    struct Unguard : ir::IRMutator {
        using IRMutator::visit;
        bool inProducer = false;
        ir::Stmt visit(const std::shared_ptr<const ir::WarpRoles> &op) override {
            inProducer = true;
            ir::Stmt producer = mutate(op->producer);
            inProducer = false;
            return ir::WarpRoles::make(op->consumerThreads, op->producerThreads, op->producerRegs, op->consumerRegs, producer,
                                       op->consumer, op->loc);
        }
        ir::Stmt visit(const std::shared_ptr<const ir::IfThenElse> &op) override {
            struct ReadsMask : ir::IRVisitor {
                using IRVisitor::visit;
                bool found = false;
                void visit(const ir::Load &l) override { found |= l.buffer->name == "Mask"; }
            } r;
            r.visit(op->cond);
            return inProducer && r.found && !op->otherwise ? mutate(op->then) : IRMutator::visit(op);
        }
    } u;
    auto nk = std::make_shared<ir::Kernel>(k);
    nk->body = u.mutate(k.body);
    return nk;
}

TEST(SimGuardedIterations, BlockSparseStagedEpilogue) { sparseCase({200, 136, 456, 64, 64, 32, 3, 128, 0}, true); }
TEST(SimGuardedIterations, BlockSparsePersistentWalk) { sparseCase({200, 136, 456, 64, 64, 32, 2, 128, 0}, false); }
TEST(SimGuardedIterations, BlockSparseTwoConsumerWarpgroups) { sparseCase({136, 200, 200, 128, 64, 64, 2, 256, 0}, false); }
TEST(SimGuardedIterations, BlockSparseSm90) { sparseCase({200, 136, 456, 64, 64, 32, 3, 128, 0}, true, "sm_90"); }
TEST(SimGuardedIterationsMutant, ProducerIgnoringTheMaskIsCaught) { sparseCase({200, 136, 456, 64, 64, 32, 3, 128, 0}, true, "sm_90a", true); }

/// Attention-shaped (TileLang's sparse GQA decoding with a block mask): Q loaded once per output tile, K and V
/// in two barrier groups, both products under `if Mask[bx, k]:`; the blocks walk the tiles (tilec's persistent
/// walk), so Q's once barrier must be released after the loop however many of its iterations ran.
const char *kMaskedAttn = R"(import tilelang.language as T


def masked_attn(M, N, D, bm, bn, stages):
    @T.prim_func
    def kernel(Q: T.Tensor((M, D), "float16"), K: T.Tensor((N, D), "float16"), V: T.Tensor((N, D), "float16"),
               Mask: T.Tensor((T.ceildiv(M, bm), T.ceildiv(N, bn)), "bool"), O: T.Tensor((M, D), "float")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as (bx):
            Q_s = T.alloc_shared((bm, D), "float16")
            K_s = T.alloc_shared((bn, D), "float16")
            V_s = T.alloc_shared((bn, D), "float16")
            acc_s = T.alloc_fragment((bm, bn), "float")
            acc_c = T.alloc_fragment((bm, bn), "float16")
            acc_o = T.alloc_fragment((bm, D), "float")
            T.copy(Q[bx * bm, 0], Q_s)
            T.clear(acc_o)
            for k in T.Pipelined(T.ceildiv(N, bn), num_stages=stages):
                if Mask[bx, k]:
                    T.copy(K[k * bn, 0], K_s)
                    T.clear(acc_s)
                    T.gemm(Q_s, K_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                    T.copy(acc_s, acc_c)
                    T.copy(V[k * bn, 0], V_s)
                    T.gemm(acc_c, V_s, acc_o, policy=T.GemmWarpPolicy.FullRow)
            T.copy(acc_o, O[bx * bm, 0])
    return kernel
)";

TEST(SimGuardedIterations, MaskedAttentionOnceTilesPersistent) {
    const int M = 320, N = 200, D = 64, bm = 64, bn = 64, mb = 5, nb = 4;
    Lowered l(std::string(kMaskedAttn) + "\n\nk = masked_attn(" + std::to_string(M) + ", " + std::to_string(N) + ", " + std::to_string(D) +
                  ", " + std::to_string(bm) + ", " + std::to_string(bn) + ", 2)\n",
              "sm_90a");
    ASSERT_TRUE(l.roles) << "no warp-specialized kernel\n" << l.r.diags();
    EXPECT_TRUE(l.roles->persistent) << "the blocks (the simulator launches 2) walk the 5 tiles";
    auto q = quarters((size_t)M * D, 1), k = quarters((size_t)N * D, 2), v = quarters((size_t)N * D, 3), mask = quarters((size_t)mb * nb, 4);
    for (auto &m : mask) m = m > 0;
    for (int kb = 0; kb < nb; ++kb) mask[(size_t)kb] = kb == 0, mask[(size_t)nb + kb] = kb != nb - 1; // the last iteration skipped, or only the first run
    mask[(size_t)2 * nb] = mask[(size_t)2 * nb + 1] = mask[(size_t)2 * nb + 2] = mask[(size_t)2 * nb + 3] = 0; // a tile of none
    std::vector<double> want((size_t)M * D, 0);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            if (mask[(size_t)(i / bm) * nb + j / bn] == 0) continue;
            double sum = 0;
            for (int d = 0; d < D; ++d) sum += q[(size_t)i * D + d] * k[(size_t)j * D + d];
            const double s16 = simtest::roundToDType(DType::Float16, sum);
            for (int d = 0; d < D; ++d) want[(size_t)i * D + d] += s16 * v[(size_t)j * D + d];
        }
    for (uint64_t seed : {0, 1, 2}) {
        std::vector<double> out((size_t)M * D, std::nan(""));
        Outcome o = run(*l.roles, {{"Q", &q}, {"K", &k}, {"V", &v}, {"Mask", &mask}, {"O", &out}}, seed);
        EXPECT_EQ(o.error, "") << "seed " << seed;
        for (auto &race : o.races) ADD_FAILURE() << "seed " << seed << ": race: " << race;
        if (o.error.empty()) simtest::expectNear(out, want, 1e-6, "O");
    }
}

/// Two serial loops of the author's (rows of tiles, then the tiles of a row, over 2 blocks), and a trip count
/// that differs by tile (odd tile columns skip the last k-block): the ring's count runs on by each tile's trips.
TEST(SimTileWalk, NestedWalkTripsVaryByTile) {
    const int M = 200, N = 200, K = 200, bn = 64, bk = 64, kb = 4;
    const std::string src = R"(import tilelang.language as T


def nested(M, N, K, bm, bn, bk):
    m_blocks = T.ceildiv(M, bm)
    n_blocks = T.ceildiv(N, bn)

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(2, threads=128) as (block_id):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float")
            for bx in T.serial(m_blocks):
                for w in T.serial(T.ceildiv(n_blocks, 2)):
                    by = w * 2 + block_id
                    if by < n_blocks:
                        T.clear(C_l)
                        for k in T.Pipelined(T.ceildiv(K, bk) - by % 2, num_stages=2):
                            T.copy(A[bx * bm, k * bk], A_s)
                            T.copy(B[k * bk, by * bn], B_s)
                            T.gemm(A_s, B_s, C_l)
                        T.copy(C_l, C[bx * bm, by * bn])
    return kernel


k = nested(200, 200, 200, 64, 64, 64)
)";
    Lowered l(src, "sm_90a");
    ASSERT_TRUE(l.roles) << "no warp-specialized kernel\n" << l.r.diags();
    EXPECT_FALSE(l.roles->persistent);
    auto a = quarters((size_t)M * K, 1), b = quarters((size_t)K * N, 2);
    for (uint64_t seed : {0, 1, 2}) {
        std::vector<double> out((size_t)M * N, std::nan(""));
        Outcome o = run(*l.roles, {{"A", &a}, {"B", &b}, {"C", &out}}, seed);
        EXPECT_EQ(o.error, "") << "seed " << seed;
        for (auto &race : o.races) ADD_FAILURE() << "seed " << seed << ": race: " << race;
        std::vector<double> want((size_t)M * N);
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
                const int kEnd = std::min(K, (kb - (j / bn) % 2) * bk);
                double acc = 0;
                for (int kk = 0; kk < kEnd; ++kk) acc += a[(size_t)i * K + kk] * b[(size_t)kk * N + j];
                want[(size_t)i * N + j] = simtest::roundToDType(DType::Float16, acc);
            }
        if (o.error.empty()) simtest::expectNear(out, want, 0, "C");
    }
}

/// A grid one row of tiles larger than the output, its extra blocks skipped by `if by < m_blocks:` around the
/// whole tile: a walk of a condition alone. tilec's persistent walk still walks the grid (the condition
/// re-evaluated per tile in both roles; the ring runs on across the tiles that run).
TEST(SimTileWalk, ConditionAroundTheTilePersistent) {
    const WalkCase c{200, 136, 200, 64, 64, 64, 3, 128, 0};
    const std::string src = R"(import tilelang.language as T


def guarded_gemm(M, N, K, bm, bn, bk):
    m_blocks = T.ceildiv(M, bm)

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), m_blocks + 1, threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float")
            if by < m_blocks:
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                    T.copy(A[by * bm, k * bk], A_s)
                    T.copy(B[k * bk, bx * bn], B_s)
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C[by * bm, bx * bn])
    return kernel


k = guarded_gemm(200, 136, 200, 64, 64, 64)
)";
    Lowered l(src, "sm_90a");
    ASSERT_TRUE(l.roles) << "no warp-specialized kernel\n" << l.r.diags();
    EXPECT_TRUE(l.roles->persistent);
    expectCorrect(*l.roles, c, {0, 1, 2});
}

/// The producer's walk: its outermost serial loop (the wave loop).
struct FirstSerialLoop : ir::IRVisitor {
    using IRVisitor::visit;
    const ir::For *found = nullptr;
    void visit(const ir::For &f) override {
        if (!found && f.forKind == ir::ForKind::Serial) found = &f;
        if (!found) IRVisitor::visit(f);
    }
};

const ir::WarpRoles *rolesOf(const ir::Kernel &k) {
    struct V : ir::IRVisitor {
        using IRVisitor::visit;
        const ir::WarpRoles *w = nullptr;
        void visit(const ir::WarpRoles &op) override { w = &op; }
    } v;
    v.visit(k.body);
    return v.w;
}

/// The kernel with the producer's wave loop running `drop` waves fewer.
std::shared_ptr<ir::Kernel> producerWalksFewer(const ir::Kernel &k, int drop) {
    const ir::WarpRoles *wr = rolesOf(k);
    FirstSerialLoop f;
    f.visit(wr->producer);
    struct Cut : ir::IRMutator {
        using IRMutator::visit;
        const ir::For *target;
        int drop;
        ir::Stmt visit(const std::shared_ptr<const ir::For> &op) override {
            if (op.get() != target) return IRMutator::visit(op);
            return ir::For::make(op->var, op->min, ir::binary(ir::BinaryOp::Sub, op->extent, ir::intImm(drop, DType::Int32)),
                                 op->forKind, op->numStages, op->body, op->loc);
        }
    } cut;
    cut.target = f.found, cut.drop = drop;
    auto nk = std::make_shared<ir::Kernel>(k);
    nk->body = cut.mutate(k.body);
    return nk;
}

TEST(SimTileWalkMutant, UnmutatedRunsClean) {
    WalkCase c{200, 136, 200, 64, 64, 64, 3, 128, 5};
    Lowered l(c);
    ASSERT_TRUE(l.roles) << l.r.diags();
    Outcome o = simulate(*l.roles, c, 0);
    EXPECT_EQ(o.error, "");
    EXPECT_EQ(o.wrong, 0) << o.firstWrong;
}

TEST(SimTileWalkMutant, ProducerWalkingOneWaveFewerDeadlocks) {
    WalkCase c{200, 136, 200, 64, 64, 64, 3, 128, 5};
    Lowered l(c);
    ASSERT_TRUE(l.roles) << l.r.diags();
    FirstSerialLoop f;
    f.visit(rolesOf(*l.roles)->producer);
    ASSERT_TRUE(f.found) << "the producer has no wave loop of its own";
    Outcome o = simulate(*producerWalksFewer(*l.roles, 1), c, 0);
    EXPECT_NE(o.error.find("deadlock"), std::string::npos) << "the consumers of the last wave wait for tiles never loaded: " << o.error;
}

/// Every use of the ring's running position (the count of the block's earlier iterations) replaced by 0: each
/// tile restarts the ring at stage 0, phase 0, while the barriers' phases have run on.
TEST(SimTileWalkMutant, RingRestartingPerTileIsCaught) {
    WalkCase c{200, 136, 200, 64, 64, 64, 3, 128, 5};
    Lowered l(c);
    ASSERT_TRUE(l.roles) << l.r.diags();
    struct Zero : ir::IRMutator {
        using IRMutator::visit;
        int replaced = 0;
        ir::Expr visit(const std::shared_ptr<const ir::Load> &op) override {
            if (op->buffer->name != "tilec_ring_base") return IRMutator::visit(op);
            ++replaced;
            return ir::intImm(0, DType::Int32);
        }
    } zero;
    auto nk = std::make_shared<ir::Kernel>(*l.roles);
    nk->body = zero.mutate(l.roles->body);
    ASSERT_GT(zero.replaced, 0) << "no running ring position in the roles";
    Outcome o = simulate(*nk, c, 0);
    EXPECT_TRUE(!o.error.empty() || o.wrong > 0 || !o.races.empty()) << "a ring restarting per tile ran clean";
}

} // namespace
