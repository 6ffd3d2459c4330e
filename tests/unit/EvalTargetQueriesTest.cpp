/// \file
/// TileLang's target queries (issue 24): `tvm.target.Target`, `tilelang.cuda.target` / `rocm.target` /
/// `metal.target` / `backend.target` / `utils.target` and `tilelang.contrib.nvcc` answer as TileLang does for the
/// target they are given, -arch for "the current one"; TVM's old and re-exported names (`tilelang.tvm`,
/// `tvm.tl.language`).
#include "EvalTestUtil.h"

#include "tilec/Target.h"

#include <gtest/gtest.h>

using tilec::evaltest::EvalRun;
using namespace tilec;

namespace {

void expectClean(const std::string &src, const std::string &arch = "sm_90a") {
    EvalRun r;
    r.opts.target = *Target::parse(arch);
    r.run(src);
    EXPECT_TRUE(r.parsed) << r.diags();
    EXPECT_EQ(r.diag.errorCount(), 0) << r.diags();
}

void expectError(const std::string &src, const std::string &message) {
    EvalRun r;
    r.run(src);
    EXPECT_NE(r.diags().find(message), std::string::npos) << r.diags();
}

TEST(EvalTargetQueries, CudaQueriesOfTheCompiledTarget) {
    const std::string src = "from tilelang.cuda.target import *\n"
                            "from tilelang.backend.target import determine_target\n"
                            "import tilelang\n"
                            "t = determine_target(return_object=True)\n"
                            "assert t.kind.name == 'cuda' and 'gpu' in t.keys and determine_target() == 'cuda'\n"
                            "assert target_is_cuda(t) and target_is_cuda('cuda') and check_cuda_availability()\n"
                            "assert tilelang.cuda.target.target_is_hopper(t) == target_is_hopper('cuda')\n";
    expectClean(src + "assert t.arch == 'sm_90a' and t.attrs['arch'] == 'sm_90a'\n"
                      "assert target_is_hopper(t) and not target_is_ampere(t) and target_has_bulk_copy(t)\n"
                      "assert target_has_stmatrix(t) and not target_has_stmatrix(t, is_m16n8=True)\n");
    expectClean(src + "assert t.arch == 'sm_80' and target_is_ampere(t) and not target_is_hopper(t)\n"
                      "assert target_has_async_copy(t) and target_has_ldmatrix(t) and not target_has_bulk_copy(t)\n",
                "sm_80");
}

TEST(EvalTargetQueries, AnExplicitTargetAnswersForItself) {
    expectClean("import tvm\nfrom tilelang import tvm as tvm2\n"
                "from tilelang.rocm.target import target_is_gfx950, target_is_cdna, target_is_hip, target_get_warp_size\n"
                "from tilelang.rocm.target import target_is_rdna, target_get_rdna_generation, target_get_mcpu\n"
                "from tilelang.cuda.target import target_is_cuda, target_is_hopper, target_is_volta, target_has_async_copy\n"
                "from tilelang.metal.target import target_is_metal\n"
                "mi = tvm.target.Target('hip -mcpu=gfx950')\n"
                "assert mi.kind.name == 'hip' and mi.mcpu == 'gfx950' and tvm2.target.Target('hip').kind.name == 'hip'\n"
                "assert target_is_gfx950(mi) and target_is_cdna(mi) and target_is_hip(mi) and target_get_warp_size(mi) == 64\n"
                "assert not target_is_cuda(mi) and not target_is_hopper(mi) and not target_is_metal(mi)\n"
                "assert target_has_async_copy(mi) and not target_has_async_copy('hip -mcpu=gfx90a')\n"
                "rdna = {'kind': 'hip', 'mcpu': 'gfx1100'}\n"
                "assert target_is_rdna(rdna) and target_get_rdna_generation(rdna) == 11 and target_get_warp_size(rdna) == 32\n"
                "assert target_get_mcpu('hip -mcpu=gfx942:sramecc+') == 'gfx942' and target_get_mcpu(None) is None\n"
                "assert not target_is_gfx950('cuda') and not target_is_gfx950(tvm.target.Target('cuda -arch=sm_80'))\n"
                "assert target_is_volta('cuda -arch=sm_70') and not target_is_hopper({'kind': 'cuda', 'arch': 'sm_100a'})\n"
                "assert target_is_metal('metal')\n");
}

TEST(EvalTargetQueries, QueriesInsideTryAsTileLangsHelpersWriteThem) {
    // quantize/mxfp.py of TileLang's dequantize_gemm examples: the query picks the C source.
    expectClean("import tvm\n"
                "def pick(target=None):\n"
                "    is_gfx950 = False\n"
                "    if target is not None:\n"
                "        try:\n"
                "            from tilelang.rocm.target import target_is_gfx950\n"
                "            is_gfx950 = target_is_gfx950(target)\n"
                "        except (ImportError, AttributeError):\n"
                "            pass\n"
                "    return 'hip' if is_gfx950 else 'ptx'\n"
                "assert pick() == 'ptx' and pick(tvm.target.Target('hip -mcpu=gfx950')) == 'hip'\n"
                "assert pick(tvm.target.Target('cuda')) == 'ptx'\n");
}

TEST(EvalTargetQueries, NvccQueries) {
    const std::string src = "from tilelang.contrib import nvcc\nimport tilelang.utils.target as ut\n"
                            "v = nvcc.get_target_compute_version()\n"
                            "assert nvcc.get_target_compute_version('cuda -arch=sm_89') == '8.9'\n"
                            "assert nvcc.get_target_arch('8.0') == '80' and nvcc.get_target_arch((9, 0)) == '90a'\n"
                            "assert nvcc.parse_compute_version('12.0') == (12, 0) and nvcc.have_bf16('8.0') and not nvcc.have_fp8('8.6')\n"
                            "assert nvcc.have_fp16('5.3') and not nvcc.have_fp16('5.2') and nvcc.have_int8('6.1')\n"
                            "assert ut.determine_fp8_type() == 'float8_e4m3' and ut.determine_fp8_type('e5m2') == 'float8_e5m2'\n"
                            "assert ut.target_is_cuda(ut.determine_target('auto', return_object=True)) and not ut.check_hip_availability()\n";
    expectClean(src + "assert v == '9.0' and nvcc.have_tma('cuda') and nvcc.is_hopper('cuda') and nvcc.have_mbarrier('cuda')\n");
    expectClean(src + "assert v == '8.0' and not nvcc.have_tma('cuda') and not nvcc.is_hopper('cuda') and nvcc.have_fp8('8.9')\n",
                "sm_80");
}

TEST(EvalTargetQueries, BadTargetsAreLocatedErrors) {
    expectError("import tvm\nt = tvm.target.Target('vulkan')\n",
                "t.tile:2:23: error: unknown target kind 'vulkan'");
    expectError("import tvm\nt = tvm.target.Target('cuda -arch=90')\n",
                "error: target arch '90' is not of the form sm_XY");
    expectError("from tilelang.cuda.target import target_is_hopper\nx = target_is_hopper(3)\n",
                "error: tilelang.cuda.target.target_is_hopper needs a target");
    expectError("from tilelang.contrib import nvcc\nx = nvcc.get_target_compute_version('hip -mcpu=gfx942')\n",
                "error: get_target_compute_version needs a CUDA target");
    // A target from a module tilec does not evaluate gives an opaque answer, an error only where it is needed.
    expectError("import bitblas\nfrom tilelang.rocm.target import target_is_gfx950\n"
                "if target_is_gfx950(bitblas.target):\n    pass\n",
                "'tilelang.rocm.target.target_is_gfx950(...)' comes from module 'bitblas'");
}

TEST(EvalTargetQueries, TvmNamesTileLangReexports) {
    // `from tilelang import tvm`, `tvm.tirx.const(...).astype(...)` in a kernel, and `tvm.tl.language` (TileLang's
    // old name) as the tile language.
    EvalRun r;
    r.run("import tilelang\nfrom tilelang import tvm as tvm\nimport tvm.tl.language as T\n"
          "@T.prim_func\n"
          "def k(A: T.Tensor((128,), T.int8), B: T.Tensor((128,), tvm.tl.language.float16)):\n"
          "    with T.Kernel(1, threads=128) as bx:\n"
          "        for i in T.Parallel(128):\n"
          "            mask = tvm.tirx.const(15, T.uint32)\n"
          "            v = (A[i].astype(T.uint32) & mask).astype(T.float16)\n"
          "            B[i] = v + tilelang.tvm.tir.const(1, 'float16')\n");
    const ir::Kernel *k = r.kernel("k");
    ASSERT_TRUE(k && r.diag.errorCount() == 0) << r.diags();
    std::string text = ir::print(*k);
    EXPECT_NE(text.find("& uint32(15)"), std::string::npos) << text;
}

} // namespace
