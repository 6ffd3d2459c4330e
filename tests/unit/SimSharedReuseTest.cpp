/// \file
/// What the simulator sees of shared memory the plan reuses (src/sim/Simulator.h): buffers planned over the
/// same bytes are one memory for the race check and poison each other's values, and a block that exits with a
/// cp.async transfer not awaited is an error. Each test breaks a correctly lowered kernel the way a wrong
/// lowering would (two live buffers at one offset; a wait removed) and expects the simulator to say so: on
/// the GPU such a kernel gives wrong numbers only sometimes (TileLang's varlen attention backward wrote dV over
/// K and V tiles whose TMA loads no one awaited when a sequence was empty).
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include "tilec/IRMutator.h"
#include "tilec/LibraryCalls.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::Simulator;

namespace {

// s1 holds s0 mirrored: every thread reads elements of s0 that others wrote, then writes s1.
const char *kMirror = R"(import tilelang.language as T

@T.prim_func
def mirror(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=128) as bx:
        s0 = T.alloc_shared((32, 32), "float32")
        s1 = T.alloc_shared((32, 32), "float32")
        T.copy(A, s0)
        for i, j in T.Parallel(32, 32):
            s1[i, j] = s0[31 - i, j] * 2.0
        T.copy(s1, B)
)";

// Four tiles of A summed through a two-stage cp.async pipeline.
const char *kPipelined = R"(import tilelang.language as T

@T.prim_func
def tiles(A: T.Tensor((128, 32), "float32"), B: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=128) as bx:
        s = T.alloc_shared((32, 32), "float32")
        acc = T.alloc_fragment((32, 32), "float32")
        T.clear(acc)
        for k in T.Pipelined(4, num_stages=2):
            T.copy(A[k * 32, 0], s)
            for i, j in T.Parallel(32, 32):
                acc[i, j] += s[i, j]
        T.copy(acc, B)
)";

struct SimRun {
    std::string error;
    std::vector<std::string> races;
    std::vector<double> out;
};

SimRun simulate(const ir::Kernel &k, size_t in, size_t out) {
    auto a = simtest::randomData(in, 3);
    SimRun r;
    r.out.assign(out, std::nan(""));
    Simulator s(k, {{"A", &a}, {"B", &r.out}});
    try {
        s.run();
    } catch (const simtest::SimError &e) {
        r.error = e.what();
    }
    r.races = s.races;
    return r;
}

const ir::BufferNode *sharedNamed(const ir::Kernel &k, const std::string &name) {
    for (auto &b : k.allocs)
        if (b->scope == ir::Scope::Shared && b->name == name) return b.get();
    return nullptr;
}

/// `src` lowered for sm_80 into `r`: its kernel, which the simulator runs without error or race as it is.
void lowerClean(LowerRun &r, const char *src, size_t in, size_t out) {
    r.run(src, "t.tile", *Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    SimRun good = simulate(*r.lowered->kernels[0], in, out);
    ASSERT_EQ(good.error, "");
    ASSERT_TRUE(good.races.empty()) << good.races[0];
}

TEST(SimSharedReuse, LiveBuffersPlannedOverEachOtherAreSeen) {
    LowerRun r;
    ASSERT_NO_FATAL_FAILURE(lowerClean(r, kMirror, 32 * 32, 32 * 32));
    const ir::Kernel &k = *r.lowered->kernels[0];
    ir::Kernel bad = k;
    const ir::BufferNode *s0 = sharedNamed(k, "s0"), *s1 = sharedNamed(k, "s1");
    ASSERT_TRUE(s0 && s1);
    for (auto &[b, off] : bad.shared.offsets)
        if (b == s1) off = *k.shared.offsetOf(s0);
    SimRun broken = simulate(bad, 32 * 32, 32 * 32);
    ASSERT_FALSE(broken.races.empty()) << "s1 written over s0 while other threads still read it, unseen";
    EXPECT_NE(broken.races[0].find("planned over the same shared bytes"), std::string::npos) << broken.races[0];
}

/// Drops every cp_async_wait: the transfers of the last stages then land whenever they land.
struct DropWaits : ir::IRMutator {
    using ir::IRMutator::visit;
    int dropped = 0;
    ir::Stmt visit(const std::shared_ptr<const ir::Evaluate> &op) override {
        auto c = ir::as<ir::Call>(op->value);
        if (c && passes::lib::is(*c, passes::lib::Fn::CpAsyncWait)) {
            ++dropped;
            return ir::Seq::make({}, op->loc);
        }
        return op;
    }
};

TEST(SimSharedReuse, CpAsyncTransferNotAwaitedAtExitIsAnError) {
    LowerRun r;
    ASSERT_NO_FATAL_FAILURE(lowerClean(r, kPipelined, 128 * 32, 32 * 32));
    const ir::Kernel &k = *r.lowered->kernels[0];
    DropWaits d;
    ir::Kernel bad = k;
    bad.body = d.mutate(k.body);
    ASSERT_GT(d.dropped, 0) << "no cp_async_wait in the pipelined loop";
    SimRun broken = simulate(bad, 128 * 32, 32 * 32);
    EXPECT_NE(broken.error.find("not awaited"), std::string::npos) << broken.error;
}

} // namespace
