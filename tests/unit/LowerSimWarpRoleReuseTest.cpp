/// \file
/// Warp roles whose shared buffers do not fit apart (planSharedMemory's warpRoleReuse): MLA decoding's shape, Q
/// loaded once, KV in a ring of two stages, O staged after the loop, on sm_90a. O_shared shares the loop's memory
/// behind the consumers' barrier after their loop; the CPU simulator (src/sim/Simulator.h, which sees buffers that
/// overlap in the plan as one memory) runs it against float64. Each rule of the reuse has a mutant: the kernel
/// broken as a wrong lowering would break it, which the rule refuses (warpRoleSharedBytes: no reuse, too much
/// memory) and the simulator, run with the reusing plan anyway, catches (a race, or a block ending with a TMA
/// load in flight): the barrier removed or put under a condition, the producer loading one tile more than the
/// consumers wait for, the consumers' wgmma left in flight, and the tile walk whose producer loads the next
/// tile's operands while the consumers store this one's output.
#include "LowerSimUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/IROperator.h"
#include "tilec/LibraryCalls.h"
#include "tilec/SharedMemory.h"
#include "tilec/passes/PlanSharedMemory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

using namespace tilec;
using namespace tilec::simtest;
using tilec::lowertest::LowerRun;
namespace lib = tilec::passes::lib;

namespace {

const char *kPv = "import tilelang.language as T\n"
                  "def pv(B, S, D=512, block_N=64):\n"
                  "    @T.prim_func\n"
                  "    def kernel(Q: T.Tensor((B, 64, D), \"float16\"), KV: T.Tensor((B, S, D), \"float16\"),\n"
                  "               O: T.Tensor((B, 64, D), \"float16\")):\n"
                  "        with T.Kernel(B, threads=256) as bid:\n"
                  "            Q_shared = T.alloc_shared((64, D), \"float16\")\n"
                  "            KV_shared = T.alloc_shared((block_N, D), \"float16\")\n"
                  "            S_shared = T.alloc_shared((64, block_N), \"float16\")\n"
                  "            O_shared = T.alloc_shared((64, D), \"float16\")\n"
                  "            acc_s = T.alloc_fragment((64, block_N), \"float\")\n"
                  "            acc_o = T.alloc_fragment((64, D), \"float\")\n"
                  "            T.copy(Q[bid, 0:64, :], Q_shared)\n"
                  "            T.clear(acc_o)\n"
                  "            for k in T.Pipelined(S // block_N, num_stages=2):\n"
                  "                T.copy(KV[bid, k * block_N:(k + 1) * block_N, :], KV_shared)\n"
                  "                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullCol)\n"
                  "                T.copy(acc_s, S_shared)\n"
                  "                T.gemm(S_shared, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)\n"
                  "            T.copy(acc_o, O_shared)\n"
                  "            T.copy(O_shared, O[bid, 0:64, :])\n"
                  "    return kernel\n"
                  "k = pv(1, 128)\n";

constexpr int D = 512, S = 128;

/// `x` rounded to float16's 11 significant bits (normal values).
double half(double x) {
    if (x == 0) return 0;
    int e;
    std::frexp(x, &e);
    const double ulp = std::ldexp(1.0, e - 11);
    return std::nearbyint(x / ulp) * ulp;
}

/// O = fp16(fp16(Q K^T) summed over the blocks' K V) as the kernel computes it, in float64.
std::vector<double> reference(const std::vector<double> &q, const std::vector<double> &kv) {
    std::vector<double> o(64 * D, 0.0);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < S; ++j) {
            double s = 0;
            for (int d = 0; d < D; ++d) s += q[(size_t)i * D + d] * kv[(size_t)j * D + d];
            s = half(s);
            for (int d = 0; d < D; ++d) o[(size_t)i * D + d] += s * kv[(size_t)j * D + d];
        }
    for (auto &x : o) x = half(x);
    return o;
}

const ir::WarpRoles &rolesOf(const ir::Kernel &k) {
    for (auto &s : ir::as<ir::Seq>(k.body)->stmts)
        if (auto r = ir::as<ir::WarpRoles>(s)) return *r;
    throw std::runtime_error("no warp roles");
}

/// The kernel with its roles' code replaced (null: kept).
std::shared_ptr<ir::Kernel> withRoles(const ir::Kernel &k, ir::Stmt producer, ir::Stmt consumer) {
    auto out = std::make_shared<ir::Kernel>(k);
    std::vector<ir::Stmt> top = ir::as<ir::Seq>(k.body)->stmts;
    for (auto &s : top)
        if (auto r = ir::as<ir::WarpRoles>(s))
            s = ir::WarpRoles::make(r->consumerThreads, r->producerThreads, r->producerRegs, r->consumerRegs,
                                    producer ? producer : r->producer, consumer ? consumer : r->consumer, r->loc);
    out->body = ir::Seq::make(std::move(top), k.body->loc);
    return out;
}

/// The consumers' first top-level barrier after a loop, replaced by `f` of it.
ir::Stmt replaceConsumerBarrier(const ir::Kernel &k, const std::function<ir::Stmt(const ir::Stmt &)> &f) {
    const ir::Stmt &consumer = rolesOf(k).consumer;
    std::vector<ir::Stmt> cs = ir::as<ir::Seq>(consumer)->stmts;
    bool loop = false;
    for (size_t i = 0; i < cs.size(); ++i) {
        if (loop && passes::isCall(cs[i], lib::Fn::Sync)) {
            ir::Stmt to = f(cs[i]);
            if (to) cs[i] = to;
            else cs.erase(cs.begin() + (long)i);
            return ir::Seq::make(std::move(cs), consumer->loc);
        }
        loop = loop || ir::as<ir::For>(cs[i]);
    }
    throw std::runtime_error("no consumer barrier after a loop");
}

/// Whether `s` (a statement or list) waits on an mbarrier directly, not in a branch or loop.
bool waitsDirectly(const ir::Stmt &s) {
    auto q = ir::as<ir::Seq>(s);
    if (!q) return passes::isCall(s, lib::Fn::MbarrierWait);
    return std::any_of(q->stmts.begin(), q->stmts.end(), waitsDirectly);
}

/// `s` with every loop that directly waits on an mbarrier (a pipelined loop) given one more iteration.
ir::Stmt oneMoreIteration(const ir::Stmt &s) {
    struct M : ir::IRMutator {
        using IRMutator::visit;
        ir::Stmt visit(const std::shared_ptr<const ir::For> &op) override {
            if (!waitsDirectly(op->body) && !passes::isCall(op->body, lib::Fn::TmaLoadTile)) return IRMutator::visit(op);
            return ir::For::make(op->var, op->min, ir::binary(ir::BinaryOp::Add, op->extent, ir::intImm(1)), op->forKind,
                                 op->numStages, op->body, op->loc);
        }
    } m;
    return m.mutate(s);
}

/// `s` with a barrier after each loop that directly waits on an mbarrier (the pipelined loop, inside a walk).
ir::Stmt barrierAfterPipelinedLoops(const ir::Stmt &s) {
    struct M : ir::IRMutator {
        using IRMutator::visit;
        ir::Stmt visit(const std::shared_ptr<const ir::Seq> &op) override {
            std::vector<ir::Stmt> out;
            for (auto &c : op->stmts) {
                out.push_back(mutate(c));
                auto f = ir::as<ir::For>(c);
                if (f && waitsDirectly(f->body)) out.push_back(lib::stmt(lib::Fn::Sync, {}, c->loc));
            }
            return ir::Seq::make(std::move(out), op->loc);
        }
    } m;
    return m.mutate(s);
}

const ir::BufferNode *bufferNamed(const ir::Kernel &k, const std::string &name) {
    for (auto &b : k.allocs)
        if (b && b->name == name) return b.get();
    return nullptr;
}

/// Whether buffer `a` shares bytes with another shared buffer of the plan.
bool sharesBytes(const ir::Kernel &k, const ir::BufferNode *a) {
    const int64_t at = *k.shared.offsetOf(a), end = at + smem::sharedBytes(a);
    for (auto &[b, o] : k.shared.offsets)
        if (b != a && o < end && at < o + smem::sharedBytes(b)) return true;
    return false;
}

/// `k` with O_shared over stage `stage` of the KV ring: a plan the rule allows as much as planSharedMemory's (O_shared is
/// used only after the consumers' barrier, KV_shared only before it), over the bytes a mutant would break.
std::shared_ptr<ir::Kernel> oOverStage(const ir::Kernel &k, int stage) {
    auto out = std::make_shared<ir::Kernel>(k);
    const ir::BufferNode *o = bufferNamed(k, "O_shared"), *kv = bufferNamed(k, "KV_shared");
    for (auto &[b, at] : out->shared.offsets)
        if (b == o) at = *k.shared.offsetOf(kv) + stage * smem::sharedBytes(kv) / 2;
    return out;
}

struct PvRun {
    LowerRun r;
    const ir::Kernel *k = nullptr;
    std::vector<double> q = quarters(64 * D, 1), kv = quarters((size_t)S * D, 2);
    PvRun() {
        r.run(kPv, "t.tile", *Target::parse("sm_90a"));
        k = warpRoles(r);
    }
    Outcome run(const ir::Kernel &kernel, uint64_t seed, std::vector<double> &out) {
        out.assign(64 * D, std::nan(""));
        return runCaught(kernel, {{"Q", &q}, {"KV", &kv}, {"O", &out}}, {}, seed);
    }
    /// How `mutant`, run with the reusing plan, fails in the simulator under some interleaving; empty if not.
    std::string caught(const ir::Kernel &mutant) {
        for (uint64_t seed : {0, 1, 2, 3}) {
            std::vector<double> out;
            Outcome o = run(mutant, seed, out);
            if (!o.error.empty()) return o.error;
            if (!o.races.empty()) return o.races[0];
        }
        return "";
    }
};

const Target &sm90a() {
    static const Target t = *Target::parse("sm_90a");
    return t;
}

TEST(LowerSimWarpRoleReuse, EpilogueTileSharesTheLoopsMemory) {
    PvRun p;
    ASSERT_TRUE(p.k) << "no warp roles: " << p.r.diags();
    const ir::BufferNode *o = bufferNamed(*p.k, "O_shared");
    ASSERT_TRUE(o);
    EXPECT_TRUE(sharesBytes(*p.k, o)); // the plan does not fit otherwise
    EXPECT_LE(p.k->shared.bytes, sm90a().maxSharedPerBlock);
    EXPECT_LE(passes::warpRoleSharedBytes(*p.k, sm90a()), sm90a().maxSharedPerBlock); // the rule finds the barrier
    const auto want = reference(p.q, p.kv);
    // As planned (O_shared over Q_shared), and over either stage of the ring.
    for (auto k : {std::make_shared<ir::Kernel>(*p.k), oOverStage(*p.k, 0), oOverStage(*p.k, 1)})
        for (uint64_t seed : {0, 3}) {
            std::vector<double> out;
            Outcome oc = p.run(*k, seed, out);
            ASSERT_TRUE(oc.error.empty()) << oc.error;
            ASSERT_TRUE(oc.races.empty()) << oc.races[0];
            expectNear(out, want, 1e-3, "O");
        }
}

// Without the barrier one consumer warpgroup writes O_shared over the last stage while the other's P.V may
// still read it.
TEST(LowerSimWarpRoleReuseMutant, NoBarrier) {
    PvRun p;
    ASSERT_TRUE(p.k) << p.r.diags();
    auto mutant = withRoles(*p.k, nullptr, replaceConsumerBarrier(*p.k, [](const ir::Stmt &) { return ir::Stmt(); }));
    EXPECT_GT(passes::warpRoleSharedBytes(*mutant, sm90a()), sm90a().maxSharedPerBlock);
    const std::string why = p.caught(*oOverStage(*mutant, 1));
    EXPECT_NE(why, "") << "O_shared's stores over the ring without the consumers' barrier, unseen";
    std::cout << "caught: " << why.substr(0, 300) << "\n";
}

// A barrier under a condition is not one the rule may count on (here every consumer takes the branch, so only
// the rule can tell).
TEST(LowerSimWarpRoleReuseMutant, BarrierInABranch) {
    PvRun p;
    ASSERT_TRUE(p.k) << p.r.diags();
    auto mutant = withRoles(*p.k, nullptr, replaceConsumerBarrier(*p.k, [&](const ir::Stmt &sync) {
        return ir::IfThenElse::make(ir::binary(ir::BinaryOp::LT, p.k->threadIdx, ir::intImm(256)), sync, nullptr, sync->loc);
    }));
    EXPECT_GT(passes::warpRoleSharedBytes(*mutant, sm90a()), sm90a().maxSharedPerBlock);
}

// The producer loads a tile no consumer waits for: it may land in O_shared's bytes after the barrier.
TEST(LowerSimWarpRoleReuseMutant, ProducerLoadsOneTileMore) {
    PvRun p;
    ASSERT_TRUE(p.k) << p.r.diags();
    auto mutant = withRoles(*p.k, oneMoreIteration(rolesOf(*p.k).producer), nullptr);
    EXPECT_GT(passes::warpRoleSharedBytes(*mutant, sm90a()), sm90a().maxSharedPerBlock);
    const std::string why = p.caught(*oOverStage(*mutant, 0));
    EXPECT_NE(why, "") << "a TMA load nobody awaits under O_shared, unseen";
    std::cout << "caught: " << why.substr(0, 300) << "\n";
}

// The consumers' wgmma still reading the ring at the barrier (its waits removed).
TEST(LowerSimWarpRoleReuseMutant, WgmmaInFlightAtTheBarrier) {
    PvRun p;
    ASSERT_TRUE(p.k) << p.r.diags();
    auto mutant = rewriteCalls(*p.k, [](const ir::Evaluate &e, const ir::Call &c, Role role) {
        return role == Role::Consumer && (lib::is(c, lib::Fn::WgmmaWait) || lib::is(c, lib::Fn::WgmmaWaitAcc)) ? ir::Stmt() : same(e);
    });
    EXPECT_GT(passes::warpRoleSharedBytes(*mutant, sm90a()), sm90a().maxSharedPerBlock);
}

// Roles that walk output tiles: the producer loads the next tile's operands while the consumers store this
// one's output, so a barrier of theirs after each tile's loop does not make the ring free. The walk fits apart
// here; the mutant adds that barrier and puts C_s over the ring anyway, and the rule must find no reuse.
const char *kWalk = R"(import tilelang.language as T

def walk_gemm(M, N, K, bm, bn, bk, blocks):
    m_blocks = T.ceildiv(M, bm)
    n_blocks = T.ceildiv(N, bn)
    waves = T.ceildiv(m_blocks * n_blocks, blocks)

    @T.prim_func
    def kernel(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(blocks, threads=128) as (block_id):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float")
            C_s = T.alloc_shared((bm, bn), "float16")
            for w in T.serial(waves):
                tile = w * blocks + block_id
                bx = tile // n_blocks
                by = tile % n_blocks
                if bx < m_blocks:
                    T.clear(C_l)
                    for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                        T.copy(A[bx * bm, k * bk], A_s)
                        T.copy(B[k * bk, by * bn], B_s)
                        T.gemm(A_s, B_s, C_l)
                    T.copy(C_l, C_s)
                    T.copy(C_s, C[bx * bm, by * bn])
    return kernel

k = walk_gemm(128, 128, 128, 64, 64, 32, 2)
)";

TEST(LowerSimWarpRoleReuseMutant, WalkProducerRunsAhead) {
    Variant v{sm90a(), {}};
    v.options.clusters = false; // the simulator runs one block at a time
    LowerRun r;
    r.run(kWalk, "walk.tile", v);
    const ir::Kernel *k = warpRoles(r);
    ASSERT_TRUE(k) << r.diags();
    auto mutant = withRoles(*k, nullptr, barrierAfterPipelinedLoops(rolesOf(*k).consumer));
    ASSERT_EQ(countSyncs(mutant->body), countSyncs(k->body) + 1);
    const ir::BufferNode *cs = bufferNamed(*k, "C_s"), *as = bufferNamed(*k, "A_s");
    ASSERT_TRUE(cs && as && k->shared.offsetOf(cs) && k->shared.offsetOf(as));
    Target tight = sm90a();
    tight.maxSharedPerBlock = (int)k->shared.bytes - 1; // as if the walk did not fit apart
    EXPECT_GE(passes::warpRoleSharedBytes(*mutant, tight), k->shared.bytes) << "the walk's barrier let C_s share the ring";
    for (auto &[b, at] : mutant->shared.offsets)
        if (b == cs) at = *mutant->shared.offsetOf(as);
    auto a = quarters(128 * 128, 1), b = quarters(128 * 128, 2);
    std::string why;
    for (uint64_t seed : {0, 1, 2, 3}) {
        std::vector<double> c(128 * 128, std::nan(""));
        Outcome o = runCaught(*mutant, {{"A", &a}, {"B", &b}, {"C", &c}}, {}, seed);
        if (why.empty()) why = !o.error.empty() ? o.error : !o.races.empty() ? o.races[0] : "";
    }
    EXPECT_NE(why, "") << "the next tile's TMA loads under C_s, unseen";
    std::cout << "caught: " << why.substr(0, 300) << "\n";
}

} // namespace
