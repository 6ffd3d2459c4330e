/// \file
/// Loads of a vectorized loop whose lanes read a permutation of whole aligned runs (vectorizeAccesses'
/// gatherRuns, issue 25): TileLang's dQ accumulator layout (columns d and d + 1 of a row 32 floats apart) and
/// packed 4-bit pairs (two lanes per byte), read run by run as vectors and picked per lane. Lowered for sm_90a,
/// checked to read the runs as vectors, and run on the CPU simulator (src/sim/Simulator.h) against references.
#include "LowerSimUtil.h"

#include "tilec/IRPrinter.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;
using namespace tilec::simtest;
using tilec::lowertest::LowerRun;

namespace {

/// Whether the kernel reads `tensor` by a vectorized loop of `lanes` lanes into registers
/// (`vecN[lo + v] = tensor[...]`, the load maybe under a test): the form gatherRuns writes.
bool readsRuns(const LowerRun &r, const std::string &kernel, const std::string &tensor, int lanes) {
    const ir::Kernel *k = r.kernel(kernel);
    if (!k) return false;
    std::string text = ir::print(*k), head = "in vectorized(" + std::to_string(lanes) + "):\n";
    for (size_t at = text.find(head); at != std::string::npos; at = text.find(head, at + 1)) {
        size_t end = text.find('\n', at + head.size());
        std::string body = text.substr(at + head.size(), end - at - head.size());
        if (body.find("vec") != std::string::npos && body.find(" " + tensor + "[") != std::string::npos) return true;
    }
    return false;
}

// FlashAttention's backward postprocess at head dimension 128: each thread converts 4 columns of a row, which
// the layout keeps as two pairs 32 floats apart; 2 vector reads of 2 floats each, every element right.
TEST(LowerSimGatherRuns, InterleavedLayoutColumnsReadAsPairs) {
    const int L = 64, H = 2, D = 128, N = L * H * D;
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "def dq_layout(dQ):\n"
          "    return T.Layout(dQ.shape, lambda b, l, h, d: [b, l // 8, h, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])\n"
          "shape = (1, 64, 2, 128)\n"
          "@T.prim_func\n"
          "def post(dQ: T.Tensor(shape, \"float32\"), Out: T.Tensor(shape, \"float32\")):\n"
          "    with T.Kernel(2, 2, threads=128) as (bx, by):\n"
          "        T.annotate_layout({dQ: dq_layout(dQ)})\n"
          "        T.copy(dQ[0, bx * 32:(bx + 1) * 32, by, :], Out[0, bx * 32:(bx + 1) * 32, by, :])\n",
          "t.tile", *Target::parse("sm_90a"));
    ASSERT_TRUE(r.lowered) << r.diags();
    EXPECT_TRUE(readsRuns(r, "post", "dQ", 2)) << ir::print(*r.kernel("post"));
    auto dq = randomData(N, 7);
    std::vector<double> out(N, std::nan("")), want(N);
    for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h)
            for (int d = 0; d < D; ++d) // (1, 8, 2, 16, 2, 32): strides 2048, 1024, 64, 32, 1
                want[(size_t)((l * H + h) * D + d)] =
                    dq[(size_t)(l / 8 * 2048 + h * 1024 + d / 8 * 64 + d % 2 * 32 + 4 * (l % 8) + d % 8 / 2)];
    runLaunches(r, "post", {{"dQ", &dq}, {"Out", &out}}, 1);
    expectNear(out, want, 0, "Out");
}

// TileKernels' lossless cast reads packed 4-bit values: lanes 2i and 2i + 1 take byte i (low and high nibble),
// so a thread's 16 lanes read one run of 8 bytes; rows past n (a T.dynamic length) read as zeros.
TEST(LowerSimGatherRuns, PackedPairsReadAsOneRun) {
    const int M = 37, K = 64;
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "n = T.dynamic('n')\n"
          "@T.prim_func\n"
          "def unpack(x: T.Tensor((n, 64), \"int8\"), y: T.Tensor((n, 128), \"int8\")):\n"
          "    with T.Kernel(T.ceildiv(n, 32), threads=128) as bx:\n"
          "        for i, j in T.Parallel(32, 128):\n"
          "            y[bx * 32 + i, j] = (x[bx * 32 + i, j // 2] >> (j % 2 * 4)) & 15\n",
          "t.tile", *Target::parse("sm_90a"));
    ASSERT_TRUE(r.lowered) << r.diags();
    EXPECT_TRUE(readsRuns(r, "unpack", "x", 8)) << ir::print(*r.kernel("unpack"));
    std::vector<double> x((size_t)M * K), y((size_t)M * 2 * K, std::nan("")), want(y.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = (double)(int)((i * 37 + 11) % 256) - 128;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < 2 * K; ++j) {
            int b = (int)x[(size_t)(i * K + j / 2)];
            want[(size_t)(i * 2 * K + j)] = (double)((b >> (j % 2 * 4)) & 15);
        }
    runLaunches(r, "unpack", {{"x", &x}, {"y", &y}}, 1, {{"n", (double)M}});
    expectNear(y, want, 0, "y");
}

} // namespace
