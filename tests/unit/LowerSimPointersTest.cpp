/// \file
/// T.ptr and T.make_tensor (src/eval/TileLangPointers.cpp) run on the CPU simulator: tensors made from the
/// entries of a pointer table inside a launch (each block reading its own group's tensor: element loads, and a
/// grouped GEMM whose tile copies go through the addresses, on sm_80 and on sm_90a, where TMA must not take
/// them), and T.ptr parameters made tensors before the launch, one with strides.
#include "sim/Simulator.h"
#include "LowerTestUtil.h"
#include "SimTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

namespace sim = tilec::simtest;

/// Runs every lowered kernel with the pointer table's entries mapped to the tensors they stand for.
void runWithAddresses(const tilec::lowertest::LowerRun &r, std::map<std::string, std::vector<double> *> tensors,
                      const std::map<int64_t, std::vector<double> *> &addresses, std::map<std::string, double> scalars = {}) {
    ASSERT_TRUE(r.lowered) << r.diags();
    for (auto &k : r.lowered->kernels) {
        sim::Simulator s(*k, tensors, scalars);
        s.addresses = addresses;
        try {
            s.run();
        } catch (const sim::SimError &e) {
            FAIL() << e.what();
        }
        for (auto &race : s.races) ADD_FAILURE() << "race: " << race;
    }
}

TEST(LowerSimPointers, PointerTableElementAccess) {
    const int G = 3, N = 200;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def gather(src_ptrs: T.Tensor([3], T.ptr), out: T.Tensor([3, 200], T.float32)):\n"
          "    with T.Kernel(3, threads=128) as bx:\n"
          "        Src = T.make_tensor(src_ptrs[bx], (200,), T.float32)\n"
          "        for i in T.Parallel(200):\n"
          "            out[bx, i] = Src[199 - i] * 2.0 + bx\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    std::vector<std::vector<double>> data;
    for (int g = 0; g < G; ++g) data.push_back(sim::randomData(N, 11 + g));
    std::vector<double> table = {4096, 8192, 12288}, out(G * N, std::nan(""));
    runWithAddresses(r, {{"src_ptrs", &table}, {"out", &out}}, {{4096, &data[0]}, {8192, &data[1]}, {12288, &data[2]}});
    std::vector<double> want(G * N);
    for (int g = 0; g < G; ++g)
        for (int i = 0; i < N; ++i) want[g * N + i] = data[g][N - 1 - i] * 2 + g;
    sim::expectNear(out, want, 1e-6, "out");
}

const char *kGrouped = "import tilelang.language as T\n"
                       "def grouped(groups, M, N, K, bm, bn, bk):\n"
                       "    tiles = T.ceildiv(M, bm)\n"
                       "    @T.prim_func\n"
                       "    def main(A_ptrs: T.Tensor([groups], T.ptr), B_ptrs: T.Tensor([groups], T.ptr),\n"
                       "             C_ptrs: T.Tensor([groups], T.ptr)):\n"
                       "        with T.Kernel(tiles * groups, T.ceildiv(N, bn), threads=128) as (bx, by):\n"
                       "            A_s = T.alloc_shared((bm, bk), T.float16)\n"
                       "            B_s = T.alloc_shared((bk, bn), T.float16)\n"
                       "            C_f = T.alloc_fragment((bm, bn), T.float32)\n"
                       "            g = bx // tiles\n"
                       "            m = bx % tiles\n"
                       "            A = T.make_tensor(A_ptrs[g], (M, K), T.float16)\n"
                       "            B = T.make_tensor(B_ptrs[g], (K, N), T.float16)\n"
                       "            C = T.make_tensor(C_ptrs[g], (M, N), T.float16)\n"
                       "            T.clear(C_f)\n"
                       "            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):\n"
                       "                T.copy(A[m * bm, ko * bk], A_s)\n"
                       "                T.copy(B[ko * bk, by * bn], B_s)\n"
                       "                T.gemm(A_s, B_s, C_f)\n"
                       "            T.copy(C_f, C[m * bm, by * bn])\n"
                       "    return main\n"
                       "k = grouped(2, 128, 64, 64, 64, 64, 32)\n";

void groupedGemm(const char *arch) {
    const int G = 2, M = 128, N = 64, K = 64;
    tilec::lowertest::LowerRun r;
    r.run(kGrouped, "t.tile", *tilec::Target::parse(arch));
    std::vector<std::vector<double>> a, b, c;
    for (int g = 0; g < G; ++g) {
        a.push_back(sim::quarters(M * K, 3 + g));
        b.push_back(sim::quarters(K * N, 7 + g));
        c.emplace_back(M * N, std::nan(""));
    }
    std::vector<double> at = {1 << 20, 2 << 20}, bt = {3 << 20, 4 << 20}, ct = {5 << 20, 6 << 20};
    runWithAddresses(r, {{"A_ptrs", &at}, {"B_ptrs", &bt}, {"C_ptrs", &ct}},
                     {{1 << 20, &a[0]}, {2 << 20, &a[1]}, {3 << 20, &b[0]}, {4 << 20, &b[1]}, {5 << 20, &c[0]}, {6 << 20, &c[1]}});
    for (int g = 0; g < G; ++g) {
        std::vector<double> want(M * N, 0.0);
        for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
                double s = 0;
                for (int k = 0; k < K; ++k) s += a[g][i * K + k] * b[g][k * N + j];
                want[i * N + j] = sim::roundToDType(tilec::DType::Float16, s);
            }
        sim::expectNear(c[g], want, 1e-6, g ? "C1" : "C0");
    }
}

TEST(LowerSimPointers, GroupedGemmSm80) { groupedGemm("sm_80"); }
TEST(LowerSimPointers, GroupedGemmSm90aWithoutTma) {
    groupedGemm("sm_90a");
    tilec::lowertest::LowerRun r;
    r.run(kGrouped, "t.tile", *tilec::Target::parse("sm_90a"));
    ASSERT_TRUE(r.lowered) << r.diags();
    for (auto &k : r.lowered->kernels) EXPECT_TRUE(k->tensorMaps.empty()) << "a tensor map for a T.make_tensor tensor";
}

TEST(LowerSimPointers, PointerParametersWithStrides) {
    const int n = 5, W = 64, S = 80;
    tilec::lowertest::LowerRun r;
    r.run("import tilelang.language as T\n"
          "@T.prim_func\n"
          "def add_one(a_ptr: T.ptr, b_ptr: T.ptr(T.float32), n: T.int32):\n"
          "    A = T.make_tensor(a_ptr, (n, 64), T.float32, (80, 1))\n"
          "    B = T.make_tensor(b_ptr, (n, 64), T.float32)\n"
          "    with T.Kernel(3, threads=128) as bx:\n"
          "        for i, j in T.Parallel(2, 64):\n"
          "            if bx * 2 + i < n:\n"
          "                B[bx * 2 + i, j] = A[bx * 2 + i, j] + 1.0\n",
          "t.tile", *tilec::Target::parse("sm_80"));
    ASSERT_TRUE(r.lowered) << r.diags();
    auto a = sim::randomData((n - 1) * S + W, 21);
    std::vector<double> b(n * W, std::nan("")), want(n * W);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < W; ++j) want[i * W + j] = (double)(float)(a[i * S + j] + 1.0);
    for (auto &k : r.lowered->kernels) sim::simulate(*k, {{"a_ptr", &a}, {"b_ptr", &b}}, {{"n", n}});
    sim::expectNear(b, want, 1e-6, "B");
}

} // namespace
