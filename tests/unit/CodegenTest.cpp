/// \file
/// Code generation: the C interface of the header and the launchers (const-ness, types, dynamic sizes,
/// prefixes, argument checks), names that clash with C, literals, determinism, and the diagnostics that only
/// code generation can give.
#include "LowerTestUtil.h"

#include <gtest/gtest.h>

using namespace tilec;
using tilec::lowertest::LowerRun;

namespace {

const char *kHeader = "import tilelang.language as T\n";

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

TEST(Codegen, HeaderDeclaresTypedConstCorrectLaunchFunctions) {
    LowerRun r;
    r.run(std::string(kHeader) +
          "def f(N):\n"
          "    m = T.dynamic(\"m\")\n"
          "    @T.prim_func\n"
          "    def kernel(X: T.Tensor((m, N), \"float32\"), H: T.Tensor((N,), \"float16\"), Y: T.Tensor((m, N), \"int32\"),\n"
          "               alpha: T.float32):\n"
          "        with T.Kernel(T.ceildiv(m, 4), threads=128) as bx:\n"
          "            for i, j in T.Parallel(4, N):\n"
          "                Y[bx * 4 + i, j] = T.cast(X[bx * 4 + i, j] * alpha + H[j], \"int32\")\n"
          "    return kernel\n"
          "k = f(256)\n");
    ASSERT_TRUE(r.lowered) << r.diags();
    GeneratedCode g = r.generate();
    EXPECT_TRUE(has(g.header, "tilec_status k(const float *X, const void *H, int32_t *Y, float alpha, int64_t m, cudaStream_t stream);"))
        << g.header;
    // Four lanes (the float32 accesses decide) of float16: 8-byte vectors.
    EXPECT_TRUE(has(g.header, " *   H: float16[256], read, 8-byte aligned\n")) << g.header;
    EXPECT_TRUE(has(g.header, " *   m: T.dynamic size, 0 to 2147483647\n")) << g.header;
    EXPECT_TRUE(has(g.header, "int k_threads(int sm);\nsize_t k_shared_bytes(int sm);")) << g.header;
    // The launcher checks the dynamic size before computing the grid from it.
    EXPECT_TRUE(has(g.cuda, "if (m < 0 || m > 2147483647) return tilec_argument_error(TILEC_ERROR_BAD_SIZE, 4);")) << g.cuda;
    EXPECT_TRUE(has(g.cuda, "const int64_t grid_x = tilec_floordiv64(m + 3LL, 4LL);")) << g.cuda;
    // A float -> int conversion saturates instead of being undefined.
    EXPECT_TRUE(has(g.cuda, "tilec::cast<int32_t>(")) << g.cuda;
    // The queries answer for the devices the lowering's targets run on: sm_90a code on 9.0 alone.
    EXPECT_TRUE(has(g.cuda, "extern \"C\" int k_threads(int sm) {\n    if (sm == 90) return 128;\n    return 0;\n}")) << g.cuda;
}

TEST(Codegen, PrefixRenamesEveryCSymbol) {
    LowerRun r;
    r.run(std::string(kHeader) +
          "@T.prim_func\n"
          "def copy(A: T.Tensor((128,), \"float32\"), B: T.Tensor((128,), \"float32\")):\n"
          "    with T.Kernel(1, threads=32) as bx:\n"
          "        for i in T.Parallel(128):\n"
          "            B[i] = A[i]\n");
    ASSERT_TRUE(r.lowered) << r.diags();
    GeneratedCode g = r.generate("lib_");
    EXPECT_TRUE(has(g.header, "tilec_status lib_copy(const float *A, float *B, cudaStream_t stream);"));
    EXPECT_TRUE(has(g.header, "const char *lib_tilec_status_string(tilec_status status);"));
    EXPECT_TRUE(has(g.header, "#ifndef TILEC_RUNTIME_DECLS_lib_"));
    EXPECT_TRUE(has(g.cuda, "extern \"C\" __attribute__((weak)) int lib_tilec_last_error_argument(void)"));
    EXPECT_TRUE(has(g.cuda, "static __global__ void __launch_bounds__(32, 1) tilec_lib_copy_")); // one block: one per SM
}

TEST(Codegen, NamesThatClashWithCAreRenamed) {
    LowerRun r;
    r.run(std::string(kHeader) +
          "@T.prim_func\n"
          "def k(float: T.Tensor((64,), \"float32\"), stream: T.Tensor((64,), \"float32\")):\n"
          "    with T.Kernel(1, threads=64) as bx:\n"
          "        for i in T.Parallel(64):\n"
          "            stream[i] = float[i]\n");
    ASSERT_TRUE(r.lowered) << r.diags();
    GeneratedCode g = r.generate();
    EXPECT_TRUE(has(g.header, "tilec_status k(const float *float_, float *stream_, cudaStream_t stream);")) << g.header;
    EXPECT_TRUE(has(g.cuda, "stream_[")) << g.cuda;
}

TEST(Codegen, OutputIsDeterministic) {
    auto once = [] {
        LowerRun r;
        r.run(evaltest::readFile(std::string(TILEC_SOURCE_DIR) + "/examples/softmax.tile"));
        EXPECT_TRUE(r.lowered) << r.diags();
        return r.lowered ? r.generate().cuda : std::string();
    };
    std::string a = once(), b = once();
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, b);
}

TEST(Codegen, LiteralsKeepTheirValue) {
    LowerRun r;
    r.run(std::string(kHeader) +
          "@T.prim_func\n"
          "def k(A: T.Tensor((64,), \"float32\"), B: T.Tensor((64,), \"float16\"), C: T.Tensor((64,), \"int64\")):\n"
          "    with T.Kernel(1, threads=64) as bx:\n"
          "        for i in T.Parallel(64):\n"
          "            A[i] = T.max(A[i] * 0.1, -T.infinity(\"float32\"))\n"
          "            B[i] = B[i] * T.float16(1e-3)\n"
          "            C[i] = C[i] + T.int64(-9223372036854775807 - 1)\n");
    ASSERT_TRUE(r.lowered) << r.diags();
    GeneratedCode g = r.generate();
    EXPECT_TRUE(has(g.cuda, "0.1f")) << g.cuda;
    EXPECT_TRUE(has(g.cuda, "__int_as_float(0xff800000)")) << g.cuda;
    EXPECT_TRUE(has(g.cuda, "tilec::from_float<__half>(0.001f)")) << g.cuda;
    EXPECT_TRUE(has(g.cuda, "(-9223372036854775807LL - 1)")) << g.cuda;
}

TEST(Codegen, SharedMemoryBeyondATargetIsAnError) {
    LowerRun r;
    // 160 KiB of shared memory fits sm_80's limit (the front end's check) until the reduction's scratch is
    // added. Its broadcast buffer reuses the bytes of 's', dead behind the reduction's barrier (so 160 bytes
    // fewer than without reuse); 's' is used again after the reduction, so the scratch cannot take its place.
    const std::string src = std::string(kHeader) +
                            "@T.prim_func\n"
                            "def k(A: T.Tensor((40, 1024), \"float32\"), S: T.Tensor((40,), \"float32\")):\n"
                            "    with T.Kernel(1, threads=1024) as bx:\n"
                            "        s = T.alloc_shared((40, 1024), \"float32\")\n"
                            "        f = T.alloc_fragment((40, 1024), \"float\")\n"
                            "        r = T.alloc_fragment((40,), \"float\")\n"
                            "        T.copy(A, s)\n"
                            "        T.copy(s, f)\n"
                            "        T.reduce_sum(f, r, dim=1)\n";
    // Without the last use of 's', the scratch shares its memory once a barrier separates them.
    LowerRun fits;
    fits.run(src + "        T.copy(r, S)\n", "t.tile", *Target::parse("sm_80"));
    ASSERT_TRUE(fits.lowered) << fits.diags();
    EXPECT_LE(fits.lowered->kernels[0]->shared.bytes, 166912);
    r.run(src + "        T.copy(s, f)\n        T.copy(r, S)\n", "t.tile", *Target::parse("sm_80"));
    // The plan and its limit are planSharedMemory's, per target.
    EXPECT_FALSE(r.lowered);
    EXPECT_TRUE(has(r.diags(), "t.tile:3:1: error: kernel 'k' needs 204800 bytes of shared memory (including the compiler's "
                               "reduction scratch), more than the 166912 bytes a block can have on sm_80"))
        << r.diags();
    EXPECT_TRUE(has(r.diags(), "t.tile:5:13: note: the largest buffer, 's', takes 163840 bytes")) << r.diags();
}

} // namespace
