/// \file
/// Gathers through an index that a T.Parallel body binds to a Python name (`row = Indices[i]`, then
/// `tile[i, d] = KV[row, d]`): the name is a one-element register the body stores before the gather reads it,
/// so vectorizeAccesses may turn the gather into vector loads only once the register holds the row (issue 23:
/// TileLang's deepseek_v4 sparse attention read every key row by the index of the previous row). Lowered for
/// sm_80 and sm_90a and run on the CPU simulator (src/sim/Simulator.h) against float64 references.
#include "LowerSimUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

using namespace tilec;
using tilec::lowertest::LowerRun;
using tilec::simtest::randomData;

namespace {

/// The nearest bfloat16 value (ties to even), as a double.
double toBf16(double x) {
    float f = (float)x;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
    std::memcpy(&f, &u, 4);
    return f;
}

std::vector<double> indices(size_t n, int64_t bound, unsigned seed) {
    std::mt19937 g(seed);
    std::vector<double> v(n);
    for (auto &x : v)
        x = (double)(g() % (uint64_t)bound);
    return v;
}

void simulate(const LowerRun &r, const std::string &name,
              std::map<std::string, std::vector<double> *> tensors) {
    ASSERT_TRUE(r.lowered) << r.diags();
    const ir::Kernel *k = r.kernel(name);
    ASSERT_NE(k, nullptr);
    simtest::simulate(*k, std::move(tensors));
}

/// Elements of `got` farther than atol + rtol * |want| from `want` (the first few reported).
int64_t mismatches(const std::vector<double> &got, const std::vector<double> &want, double rtol, double atol,
                   const std::string &what) {
    int64_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
        if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])) && ++bad <= 3)
            ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected " << want[i];
    return bad;
}

const char *kGather = "import tilelang.language as T\n"
                      "def gather(n, rows, width, dtype):\n"
                      "    @T.prim_func\n"
                      "    def g(Idx: T.Tensor((rows,), \"int32\"), KV: T.Tensor((n, width), dtype),\n"
                      "          Out: T.Tensor((rows, width), dtype)):\n"
                      "        with T.Kernel(1, threads=128) as bx:\n"
                      "            tile = T.alloc_shared((rows, width), dtype)\n"
                      "            for i, d in T.Parallel(rows, width):\n"
                      "                row = Idx[i]\n"
                      "                tile[i, d] = KV[row, d]\n"
                      "            T.copy(tile, Out)\n"
                      "    return g\n";

// Every row of the tile is the tensor's row its index names, whatever the vector width (16 rows of 128
// float16: 4 lanes a thread; of 64 float32: 2; of 256 bfloat16: 8).
TEST(LowerSimGather, IndexBoundInParallelBody) {
    struct Case {
        int n, rows, width;
        const char *dtype;
    };
    for (auto c : {Case{40, 16, 128, "float16"}, Case{40, 16, 64, "float32"}, Case{24, 32, 256, "bfloat16"}})
        for (const char *arch : {"sm_80", "sm_90a"}) {
            SCOPED_TRACE(std::string(arch) + " " + c.dtype);
            LowerRun r;
            r.run(std::string(kGather) + "k = gather(" + std::to_string(c.n) + ", " + std::to_string(c.rows) +
                      ", " + std::to_string(c.width) + ", \"" + c.dtype + "\")\n",
                  "t.tile", *Target::parse(arch));
            auto idx = indices((size_t)c.rows, c.n, 3);
            auto kv = randomData((size_t)c.n * c.width, 4);
            for (auto &x : kv)
                x = toBf16(x);
            std::vector<double> out((size_t)c.rows * c.width, std::nan("")), want(out.size());
            for (int i = 0; i < c.rows; ++i)
                for (int d = 0; d < c.width; ++d)
                    want[(size_t)i * c.width + d] = kv[(size_t)idx[i] * c.width + d];
            simulate(r, "k", {{"Idx", &idx}, {"KV", &kv}, {"Out", &out}});
            EXPECT_EQ(mismatches(out, want, 0, 0, "Out"), 0);
        }
}

/// softmax([q . kv[idx[t]] * scale for t] + [sink]) over the gathered rows, the sink's share dropped: what
/// DeepSeek-V4-style sparse attention computes, in float64. Q and Out are (seq, heads, dim), KV (seqKv, dim),
/// Idx (seq, topk).
std::vector<double> sparseAttention(const std::vector<double> &q, const std::vector<double> &kv,
                                    const std::vector<double> &idx, const std::vector<double> &sinks, int seq,
                                    int heads, int dim, int topk, double scale) {
    std::vector<double> out((size_t)seq * heads * dim, 0.0), p(topk);
    for (int s = 0; s < seq; ++s)
        for (int h = 0; h < heads; ++h) {
            const double *qr = &q[((size_t)s * heads + h) * dim];
            double m = sinks[h];
            for (int t = 0; t < topk; ++t) {
                const double *k = &kv[(size_t)idx[(size_t)s * topk + t] * dim];
                double dot = 0;
                for (int d = 0; d < dim; ++d)
                    dot += qr[d] * k[d];
                p[t] = dot * scale;
                m = std::max(m, p[t]);
            }
            double sum = std::exp(sinks[h] - m);
            for (int t = 0; t < topk; ++t)
                sum += p[t] = std::exp(p[t] - m);
            double *o = &out[((size_t)s * heads + h) * dim];
            for (int t = 0; t < topk; ++t)
                for (int d = 0; d < dim; ++d)
                    o[d] += p[t] / sum * kv[(size_t)idx[(size_t)s * topk + t] * dim + d];
        }
    return out;
}

// Sparse attention in small, written here: each query position gathers its top-k key rows (one index register
// per row of the tile), two GEMMs and an online softmax with a per-head sink.
const char *kSparse =
    "import tilelang.language as T\n"
    "def sparse(seq, seq_kv, heads, dim, topk, block=32):\n"
    "    scale = dim ** -0.5\n"
    "    @T.prim_func\n"
    "    def attn(Q: T.Tensor((seq, heads, dim), \"bfloat16\"), KV: T.Tensor((seq_kv, dim), \"bfloat16\"),\n"
    "             Idx: T.Tensor((seq, topk), \"int32\"), Sinks: T.Tensor((heads,), \"float32\"),\n"
    "             Out: T.Tensor((seq, heads, dim), \"bfloat16\")):\n"
    "        with T.Kernel(seq, threads=128) as s:\n"
    "            q = T.alloc_shared((heads, dim), \"bfloat16\")\n"
    "            keys = T.alloc_shared((block, dim), \"bfloat16\")\n"
    "            probs = T.alloc_shared((heads, block), \"bfloat16\")\n"
    "            scores = T.alloc_fragment((heads, block), \"float32\")\n"
    "            acc = T.alloc_fragment((heads, dim), \"float32\")\n"
    "            best = T.alloc_fragment((heads,), \"float32\")\n"
    "            before = T.alloc_fragment((heads,), \"float32\")\n"
    "            total = T.alloc_fragment((heads,), \"float32\")\n"
    "            part = T.alloc_fragment((heads,), \"float32\")\n"
    "            T.copy(Q[s, :, :], q)\n"
    "            T.fill(acc, 0)\n"
    "            T.fill(total, 0)\n"
    "            T.fill(best, -1e30)\n"
    "            for kb in T.Pipelined(topk // block, num_stages=2):\n"
    "                for j, d in T.Parallel(block, dim):\n"
    "                    row = Idx[s, kb * block + j]\n"
    "                    keys[j, d] = KV[row, d]\n"
    "                T.clear(scores)\n"
    "                T.gemm(q, keys, scores, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)\n"
    "                T.copy(best, before)\n"
    "                T.reduce_max(scores, best, dim=1, clear=False)\n"
    "                for h, j in T.Parallel(heads, block):\n"
    "                    scores[h, j] = T.exp((scores[h, j] - best[h]) * scale)\n"
    "                T.reduce_sum(scores, part, dim=1)\n"
    "                for h, d in T.Parallel(heads, dim):\n"
    "                    acc[h, d] *= T.exp((before[h] - best[h]) * scale)\n"
    "                for h in T.Parallel(heads):\n"
    "                    total[h] = total[h] * T.exp((before[h] - best[h]) * scale) + part[h]\n"
    "                T.copy(scores, probs)\n"
    "                T.gemm(probs, keys, acc, policy=T.GemmWarpPolicy.FullRow)\n"
    "            for h in T.Parallel(heads):\n"
    "                total[h] += T.exp(Sinks[h] - best[h] * scale)\n"
    "            for h, d in T.Parallel(heads, dim):\n"
    "                acc[h, d] /= total[h]\n"
    "            T.copy(acc, Out[s, :, :])\n"
    "    return attn\n";

TEST(LowerSimGather, SparseAttentionWithSink) {
    const int seq = 2, seqKv = 72, heads = 64, dim = 64, topk = 64;
    for (const char *arch : {"sm_80", "sm_90a"}) {
        SCOPED_TRACE(arch);
        LowerRun r;
        r.run(std::string(kSparse) + "k = sparse(2, 72, 64, 64, 64)\n", "t.tile", *Target::parse(arch));
        auto q = randomData((size_t)seq * heads * dim, 5, -1, 1),
             kv = randomData((size_t)seqKv * dim, 6, -1, 1);
        for (auto &x : q)
            x = toBf16(x);
        for (auto &x : kv)
            x = toBf16(x);
        auto idx = indices((size_t)seq * topk, seqKv, 7), sinks = randomData(heads, 8, -1, 1);
        std::vector<double> out((size_t)seq * heads * dim, std::nan(""));
        simulate(r, "k", {{"Q", &q}, {"KV", &kv}, {"Idx", &idx}, {"Sinks", &sinks}, {"Out", &out}});
        auto want = sparseAttention(q, kv, idx, sinks, seq, heads, dim, topk, 1 / std::sqrt((double)dim));
        // bfloat16 probabilities and outputs: a few parts in a thousand; a key row gathered by another row's
        // index is off by the row's whole share.
        EXPECT_EQ(mismatches(out, want, 1e-2, 2e-3, "Out"), 0);
    }
}

} // namespace
