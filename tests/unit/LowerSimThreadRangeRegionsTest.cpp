/// \file
/// Tile statements under `if T.get_thread_binding() < 32:` / `else:` (TileKernels' mhc_pre_big_fuse: the first
/// warp computes the mixes and a row softmax, the other two a pipelined weighted sum of the rows of x) run on the
/// CPU simulator against a reference: a branch without an `else` is run by the whole block; the branches of an
/// `if` with one run at once, each on its own threads (src/lower/ConcurrentRoles.cpp, joinThreadRoles), exact
/// under several interleavings of the roles and reported once their barriers are gone; branches that exchange
/// data through shared memory run one after the other.
#include "sim/Simulator.h"
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace {

namespace sim = tilec::simtest;
namespace ir = tilec::ir;
namespace lib = tilec::passes::lib;

/// The concurrent roles of a lowered kernel (top level), or null.
const ir::WarpRoles *rolesOf(const ir::Kernel &k) {
    for (auto &s : ir::Seq::items(k.body))
        if (auto r = ir::as<ir::WarpRoles>(s)) return r;
    return nullptr;
}

TEST(LowerSimThreadRangeRegions, BranchesOfThreadRangesComputeAsWritten) {
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def fused(mul: T.Tensor((2, 4, 24), \"float32\"), x: T.Tensor((2, 4, 256), \"float32\"),\n"
          "          comb: T.Tensor((2, 16), \"float32\"), out: T.Tensor((2, 256), \"float32\")):\n"
          "    with T.Kernel(2, threads=96) as pid:\n"
          "        mixes_shared = T.alloc_shared(24, \"float32\")\n"
          "        if T.get_thread_binding() < 32:\n"
          "            mixes = T.alloc_fragment(24, \"float32\")\n"
          "            rms = T.alloc_fragment(1, \"float32\")\n"
          "            rms[0] = 0\n"
          "            for s in T.serial(4):\n"
          "                rms[0] += mul[pid, s, 0]\n"
          "            for j in T.Parallel(24):\n"
          "                mixes[j] = 0\n"
          "                for s in T.serial(4):\n"
          "                    mixes[j] += mul[pid, s, j]\n"
          "                mixes[j] *= rms[0]\n"
          "            T.copy(mixes, mixes_shared)\n"
          "        if T.get_thread_binding() < 32:\n"
          "            cm = T.alloc_fragment((4, 4), \"float32\")\n"
          "            row_max = T.alloc_fragment(4, \"float32\")\n"
          "            for j, k in T.Parallel(4, 4):\n"
          "                cm[j, k] = mixes_shared[j * 4 + k + 8]\n"
          "            T.reduce_max(cm, row_max, dim=1)\n"
          "            for j, k in T.Parallel(4, 4):\n"
          "                comb[pid, j * 4 + k] = cm[j, k] - row_max[j]\n"
          "        else:\n"
          "            pre = T.alloc_shared(4, \"float32\")\n"
          "            for j in T.Parallel(4):\n"
          "                pre[j] = mixes_shared[j] * 0.5\n"
          "            for h in T.Pipelined(2, num_stages=2):\n"
          "                xs = T.alloc_shared((4, 128), \"float32\")\n"
          "                xl = T.alloc_fragment((4, 128), \"float32\")\n"
          "                T.copy(x[pid, 0, h * 128], xs)\n"
          "                T.copy(xs, xl)\n"
          "                ol = T.alloc_fragment(128, \"float32\")\n"
          "                T.clear(ol)\n"
          "                for m in T.serial(4):\n"
          "                    w = pre[m]\n"
          "                    for i in T.Parallel(128):\n"
          "                        ol[i] += w * xl[m, i]\n"
          "                T.copy(ol, out[pid, h * 128])\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto mul = sim::randomData(2 * 4 * 24, 7), x = sim::randomData(2 * 4 * 256, 8);
    std::vector<double> comb(32, std::nan("")), out(512, std::nan("")), wcomb(32), wout(512, 0);
    for (int n = 0; n < 2; ++n) {
        float rms = 0;
        for (int s = 0; s < 4; ++s) rms += (float)mul[(n * 4 + s) * 24];
        std::vector<float> mixes(24, 0);
        for (int j = 0; j < 24; ++j) {
            for (int s = 0; s < 4; ++s) mixes[j] += (float)mul[(n * 4 + s) * 24 + j];
            mixes[j] *= rms;
        }
        for (int j = 0; j < 4; ++j) {
            float mx = -1e30f;
            for (int k = 0; k < 4; ++k) mx = std::max(mx, mixes[j * 4 + k + 8]);
            for (int k = 0; k < 4; ++k) wcomb[n * 16 + j * 4 + k] = mixes[j * 4 + k + 8] - mx;
        }
        for (int i = 0; i < 256; ++i)
            for (int m = 0; m < 4; ++m) wout[n * 256 + i] += mixes[m] * 0.5f * (float)x[(n * 4 + m) * 256 + i];
    }
    ASSERT_EQ(r.lowered->kernels.size(), 1u);
    const ir::WarpRoles *roles = rolesOf(*r.lowered->kernels[0]);
    ASSERT_TRUE(roles) << "the second `if`'s branches run as roles";
    EXPECT_EQ(roles->consumerThreads, 32);
    EXPECT_EQ(roles->producerThreads, 64);
    for (uint64_t seed : {0, 1, 2, 3}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::fill(comb.begin(), comb.end(), std::nan("")), std::fill(out.begin(), out.end(), std::nan(""));
        sim::Outcome o = sim::runCaught(*r.lowered->kernels[0], {{"mul", &mul}, {"x", &x}, {"comb", &comb}, {"out", &out}}, {}, seed);
        EXPECT_EQ(o.error, "");
        EXPECT_TRUE(o.races.empty()) << o.races[0];
        sim::expectNear(comb, wcomb, 1e-5, "comb");
        sim::expectNear(out, wout, 1e-4, "out");
    }
}

/// 128 threads: the upper 64 (the `if`) a pipelined weighted sum of y's rows, the lower 64 (the `else`) x
/// transposed through shared memory (a barrier of their own between the copy and the reads) and its row sums,
/// both reading the weights the whole block stored before the `if`.
const char *kTwoRoles = "import tilelang.language as T\n"
                        "@T.prim_func\n"
                        "def roles(x: T.Tensor((2, 64, 64), \"float32\"), w: T.Tensor((2, 64), \"float32\"),\n"
                        "          y: T.Tensor((2, 4, 256), \"float32\"), t: T.Tensor((2, 64, 64), \"float32\"),\n"
                        "          s: T.Tensor((2, 64), \"float32\"), out: T.Tensor((2, 256), \"float32\")):\n"
                        "    with T.Kernel(2, threads=128) as b:\n"
                        "        ws = T.alloc_shared(64, \"float32\")\n"
                        "        for i in T.Parallel(64):\n"
                        "            ws[i] = w[b, i]\n"
                        "        if T.get_thread_binding() >= 64:\n"
                        "            for h in T.Pipelined(2, num_stages=2):\n"
                        "                ys = T.alloc_shared((4, 128), \"float32\")\n"
                        "                yl = T.alloc_fragment((4, 128), \"float32\")\n"
                        "                T.copy(y[b, 0, h * 128], ys)\n"
                        "                T.copy(ys, yl)\n"
                        "                ol = T.alloc_fragment(128, \"float32\")\n"
                        "                T.clear(ol)\n"
                        "                for m in T.serial(4):\n"
                        "                    for i in T.Parallel(128):\n"
                        "                        ol[i] += ws[m] * yl[m, i]\n"
                        "                T.copy(ol, out[b, h * 128])\n"
                        "        else:\n"
                        "            xs = T.alloc_shared((64, 64), \"float32\")\n"
                        "            xf = T.alloc_fragment((64, 64), \"float32\")\n"
                        "            rs = T.alloc_fragment(64, \"float32\")\n"
                        "            T.copy(x[b, 0, 0], xs)\n"
                        "            for i, j in T.Parallel(64, 64):\n"
                        "                xf[i, j] = xs[j, i] * ws[j]\n"
                        "            T.reduce_sum(xf, rs, dim=1)\n"
                        "            T.copy(xf, t[b, 0, 0])\n"
                        "            T.copy(rs, s[b, 0])\n";

struct TwoRoles {
    std::vector<double> x = sim::randomData(2 * 64 * 64, 11), w = sim::randomData(2 * 64, 12), y = sim::randomData(2 * 4 * 256, 13);
    std::vector<double> t = std::vector<double>(2 * 64 * 64), s = std::vector<double>(2 * 64), out = std::vector<double>(2 * 256);
    std::vector<double> wt = t, ws = s, wout = out;
    TwoRoles() {
        for (int b = 0; b < 2; ++b) {
            for (int i = 0; i < 64; ++i)
                for (int j = 0; j < 64; ++j) {
                    wt[(b * 64 + i) * 64 + j] = (float)x[(b * 64 + j) * 64 + i] * (float)w[b * 64 + j];
                    ws[b * 64 + i] += wt[(b * 64 + i) * 64 + j];
                }
            for (int i = 0; i < 256; ++i)
                for (int m = 0; m < 4; ++m) wout[b * 256 + i] += (float)w[b * 64 + m] * (float)y[(b * 4 + m) * 256 + i];
        }
    }
    /// One run of `k` under interleaving `seed`, every output compared with its reference.
    sim::Outcome run(const ir::Kernel &k, uint64_t seed) {
        for (auto *o : {&t, &s, &out}) std::fill(o->begin(), o->end(), std::nan(""));
        sim::Outcome o = sim::runCaught(k, {{"x", &x}, {"w", &w}, {"y", &y}, {"t", &t}, {"s", &s}, {"out", &out}}, {}, seed);
        for (auto [got, want, name] : {std::tuple{&t, &wt, "t"}, std::tuple{&s, &ws, "s"}, std::tuple{&out, &wout, "out"}})
            for (size_t e = 0; e < want->size(); ++e)
                o.check(std::fabs((*got)[e] - (*want)[e]) <= 1e-4 * std::max(1.0, std::fabs((*want)[e])),
                        [&] { return std::string(name) + "[" + std::to_string(e) + "] = " + std::to_string((*got)[e]); });
        return o;
    }
};

TEST(LowerSimThreadRangeRegions, BranchesRunAsConcurrentRolesUnderInterleavings) {
    for (const char *target : {"sm_80", "sm_90a"}) {
        SCOPED_TRACE(target);
        tilec::lowertest::LowerRun r;
        r.run(kTwoRoles, "t.tile", *tilec::Target::parse(target));
        ASSERT_TRUE(r.lowered) << r.diags();
        ASSERT_EQ(r.lowered->kernels.size(), 1u);
        const ir::Kernel &k = *r.lowered->kernels[0];
        const ir::WarpRoles *roles = rolesOf(k);
        ASSERT_TRUE(roles);
        EXPECT_EQ(roles->consumerThreads, 64); // the `else`: threads 0..63
        EXPECT_EQ(roles->producerThreads, 64);
        EXPECT_EQ(k.threads, 128);
        EXPECT_EQ(k.producerThreads, 0); // the roles are the kernel's own threads
        TwoRoles io;
        sim::expectClean([&](uint64_t seed) { return io.run(k, seed); }, {0, 1, 2, 3, 4, 5});
        // Without the consumer's own barriers (between the copy of x and its transposed reads) some interleaving
        // reads x's tile before the other threads stored it.
        int removed = 0;
        auto unsynced = sim::rewriteCalls(k, [&](const ir::Evaluate &e, const ir::Call &c, sim::Role role) -> ir::Stmt {
            if (role == sim::Role::Consumer && lib::is(c, lib::Fn::Sync)) return ++removed, nullptr;
            return sim::same(e);
        });
        ASSERT_GT(removed, 0);
        bool reported = false;
        for (uint64_t seed : {0, 1, 2, 3, 4, 5}) reported = reported || sim::anyFailure(io.run(*unsynced, seed));
        EXPECT_TRUE(reported);
    }
}

/// The `else` reads what the `if` stores in shared memory, with no barrier between them: TileLang's threads would
/// race; tilec keeps the branches one after the other (the second reads what the first stored).
TEST(LowerSimThreadRangeRegions, BranchesExchangingSharedDataRunOneAfterTheOther) {
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def racing(x: T.Tensor((64,), \"float32\"), out: T.Tensor((64,), \"float32\")):\n"
          "    with T.Kernel(1, threads=128) as b:\n"
          "        sh = T.alloc_shared(64, \"float32\")\n"
          "        if T.get_thread_binding() < 64:\n"
          "            f = T.alloc_fragment(64, \"float32\")\n"
          "            for i in T.Parallel(64):\n"
          "                f[i] = x[i] * 2.0\n"
          "            T.copy(f, sh)\n"
          "        else:\n"
          "            for i in T.Parallel(64):\n"
          "                out[i] = sh[63 - i] + 1.0\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    const ir::Kernel &k = *r.lowered->kernels[0];
    EXPECT_FALSE(rolesOf(k));
    auto x = sim::randomData(64, 21);
    std::vector<double> out(64), want(64);
    for (int i = 0; i < 64; ++i) want[i] = (float)x[63 - i] * 2.0f + 1.0f;
    std::map<std::string, std::vector<double>> io{{"x", x}, {"out", out}};
    sim::expectClean([&](uint64_t seed) { return sim::runChecked(k, io, "out", want, seed); }, {0, 1, 2});
}

} // namespace

namespace {

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

/// TileLang's own mhc_pre_big_fuse (examples/deepseek_mhc, from $TILELANG_SRC): the Sinkhorn warp and the
/// 64-thread pipelined sum as roles, on the simulator under several interleavings against the file's math
/// (two tokens, hidden 1024: two tiles of the pipelined sum).
TEST(LowerSimThreadRangeRegions, TileLangMhcPreBigFuseExample) {
    std::string src = sim::tilelangExample("deepseek_mhc/example_mhc_pre.py");
    if (src.empty()) GTEST_SKIP() << "set TILELANG_SRC to a TileLang git checkout (tag v0.1.13)";
    constexpr int N = 2, H = 1024, M = 4, R = 10;
    constexpr double eps = 1e-6;
    src += "\n\nkernel = mhc_pre_big_fuse_tilelang.compile(hidden_size=1024, rms_eps=1e-06, hc_pre_eps=1e-06, "
           "hc_sinkhorn_eps=1e-06, hc_post_mult_value=1.0, sinkhorn_repeat=10, n_splits=1, hc_mult=4)\n";
    tilec::lowertest::LowerRun r;
    const ir::Kernel *k = sim::loweredKernel(r, src, "sm_90a", "", "example_mhc_pre.py");
    ASSERT_TRUE(k);
    const ir::WarpRoles *roles = rolesOf(*k);
    ASSERT_TRUE(roles);
    EXPECT_EQ(roles->consumerThreads, 32);
    EXPECT_EQ(roles->producerThreads, 64);
    std::vector<double> mul(N * 24), sq(N), scale{0.5, 0.75, 1.25}, base(24), res((size_t)N * M * H);
    for (size_t e = 0; e < mul.size(); ++e) mul[e] = (double)((int)(e * 7 % 17) - 8) / 8;
    for (int n = 0; n < N; ++n) sq[n] = 4096.0 * (n + 1);
    for (size_t e = 0; e < base.size(); ++e) base[e] = (double)((int)(e * 5 % 9) - 4) / 4;
    for (size_t e = 0; e < res.size(); ++e) res[e] = (double)((int)(e * 13 % 31) - 15) / 16;
    std::vector<double> wpost(N * M), wcomb(N * M * M), winput((size_t)N * H, 0);
    for (int n = 0; n < N; ++n) {
        const double rms = 1 / std::sqrt(sq[n] / (M * H) + eps);
        double mix[24], cm[M][M], pre[M];
        for (int j = 0; j < 24; ++j) mix[j] = mul[n * 24 + j] * rms;
        for (int j = 0; j < M; ++j) {
            wpost[n * M + j] = sigmoid(mix[j + M] * scale[1] + base[j + M]);
            pre[j] = sigmoid(mix[j] * scale[0] + base[j]) + eps;
        }
        for (int j = 0; j < M; ++j) {
            double mx = -1e30, sum = 0;
            for (int c = 0; c < M; ++c) mx = std::max(mx, cm[j][c] = mix[j * M + c + 2 * M] * scale[2] + base[j * M + c + 2 * M]);
            for (int c = 0; c < M; ++c) sum += cm[j][c] = std::exp(cm[j][c] - mx);
            for (int c = 0; c < M; ++c) cm[j][c] = cm[j][c] / sum + eps;
        }
        for (int rep = 0; rep < R; ++rep) {
            if (rep > 0)
                for (int j = 0; j < M; ++j) {
                    double sum = 0;
                    for (int c = 0; c < M; ++c) sum += cm[j][c];
                    for (int c = 0; c < M; ++c) cm[j][c] /= sum + eps;
                }
            for (int c = 0; c < M; ++c) {
                double sum = 0;
                for (int j = 0; j < M; ++j) sum += cm[j][c];
                for (int j = 0; j < M; ++j) cm[j][c] /= sum + eps;
            }
        }
        for (int j = 0; j < M; ++j)
            for (int c = 0; c < M; ++c) wcomb[(n * M + j) * M + c] = cm[j][c];
        for (int h = 0; h < H; ++h)
            for (int m = 0; m < M; ++m) winput[(size_t)n * H + h] += pre[m] * res[((size_t)n * M + m) * H + h];
    }
    for (uint64_t seed : {0, 1, 2, 3}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::vector<double> post(N * M, std::nan("")), comb(N * M * M, std::nan("")), input((size_t)N * H, std::nan(""));
        sim::Outcome o = sim::runCaught(*k, {{"gemm_out_mul", &mul}, {"gemm_out_sqrsum", &sq}, {"hc_scale", &scale}, {"hc_base", &base},
                                             {"residual", &res}, {"post_mix", &post}, {"comb_mix", &comb}, {"layer_input", &input}},
                                        {{"num_tokens", N}}, seed);
        EXPECT_EQ(o.error, "");
        EXPECT_TRUE(o.races.empty()) << o.races[0];
        sim::expectNear(post, wpost, 1e-4, "post_mix");
        sim::expectNear(comb, wcomb, 1e-4, "comb_mix");
        sim::expectNear(input, winput, 1e-2, "layer_input"); // bfloat16
    }
}

} // namespace
