/// \file
/// Ahead-of-time outputs: ptxas's report read out of NVRTC's log, NVRTC itself (skipped where it is not
/// installed), the device part of generated code and each device-library file compiling alone, and binary mode's C source (the header it
/// shares with the .cu, the embedded images, the driver-API launchers).
#include "LowerTestUtil.h"

#include "codegen/Stdlib.h"
#include "tilec/DeviceCompiler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace tilec;
using tilec::lowertest::LowerRun;

namespace {

bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

const char *kAddTile = "import tilelang.language as T\n"
                       "def add(N):\n"
                       "    @T.prim_func\n"
                       "    def kernel(A: T.Tensor((N,), \"float32\"), B: T.Tensor((N,), \"float32\")):\n"
                       "        with T.Kernel(T.ceildiv(N, 256), threads=256) as bx:\n"
                       "            for i in T.Parallel(256):\n"
                       "                if bx * 256 + i < N:\n"
                       "                    B[bx * 256 + i] = A[bx * 256 + i] * 2.0\n"
                       "    return kernel\n"
                       "twice = add(1000)\n";

/// The device part generated for kAddTile (the whole embedded device runtime and one kernel); "" on failure.
std::string addDevicePart() {
    LowerRun r;
    r.run(kAddTile);
    if (!r.lowered) {
        ADD_FAILURE() << r.diags();
        return "";
    }
    return r.generate().device;
}

TEST(PtxasLog, ReadsRegistersSpillsAndSharedPerEntry) {
    std::string log = "ptxas info    : 87 bytes gmem\n"
                      "ptxas info    : Compiling entry function '_Z1aPf' for 'sm_90a'\n"
                      "ptxas info    : Function properties for _Z1aPf\n"
                      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
                      "ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]\n"
                      "ptxas info    : Compile time = 6.9 ms\n"
                      "ptxas info    : Function properties for helper\n"
                      "ptxas         .     64 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
                      "ptxas info    : Compiling entry function '_Z1bPf' for 'sm_80'\n"
                      "ptxas info    : Function properties for _Z1bPf\n"
                      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                      "ptxas info    : Used 30 registers, used 0 barriers\n";
    auto fs = parsePtxasLog(log);
    ASSERT_EQ(fs.size(), 2u);
    EXPECT_EQ(fs[0].function, "_Z1aPf");
    EXPECT_EQ(fs[0].target, "sm_90a");
    EXPECT_EQ(fs[0].registers, 168);
    EXPECT_EQ(fs[0].barriers, 1);
    EXPECT_EQ(fs[0].staticShared, 1024);
    EXPECT_EQ(fs[0].stackFrame, 16); // the device function's 64 bytes belong to it, not to the entry
    EXPECT_EQ(fs[0].spillStores, 8);
    EXPECT_EQ(fs[0].spillLoads, 12);
    EXPECT_EQ(fs[1].function, "_Z1bPf");
    EXPECT_EQ(fs[1].target, "sm_80");
    EXPECT_EQ(fs[1].registers, 30);
    EXPECT_EQ(fs[1].staticShared, 0);
}

TEST(PtxasLog, IgnoresWhatItDoesNotKnow) {
    EXPECT_TRUE(parsePtxasLog("").empty());
    EXPECT_TRUE(parsePtxasLog("x.cu(3): error: nope\nptxas info    : Used 12 registers\n").empty());
    auto fs = parsePtxasLog("ptxas info    : Compiling entry function 'k' for 'sm_80'\nptxas info    : Used "
                            "99999999999999999999 registers\n");
    ASSERT_EQ(fs.size(), 1u);
    EXPECT_EQ(fs[0].registers, -1);
}

TEST(Nvrtc, CompilesToPtxAndCubinAndLowersNames) {
    const Nvrtc *n = Nvrtc::get();
    if (!n || n->includeDirs().empty()) GTEST_SKIP() << "NVRTC is not installed";
    std::string src = "#include <stdint.h>\n#include <type_traits>\n#include <cuda_fp16.h>\n"
                      "static __global__ void k(int64_t *p) { if (std::is_same_v<int64_t, long long>) *p = 1; }\n";
    auto r = n->compile(src, "k.cu", {"--gpu-architecture=sm_80", "--ptxas-options=-v"}, {"&k"});
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_TRUE(has(r.ptx, ".target sm_80")) << r.ptx;
    ASSERT_GE(r.cubin.size(), 4u);
    EXPECT_EQ(r.cubin.substr(0, 4), std::string("\x7f" "ELF"));
    ASSERT_EQ(r.loweredNames.size(), 1u);
    EXPECT_EQ(r.loweredNames[0], "_Z1kPx");
    auto fs = parsePtxasLog(r.log);
    ASSERT_EQ(fs.size(), 1u) << r.log;
    EXPECT_GT(fs[0].registers, 0);

    auto virt = n->compile(src, "k.cu", {"--gpu-architecture=compute_80"}, {});
    ASSERT_TRUE(virt.ok) << virt.log;
    EXPECT_TRUE(virt.cubin.empty());
    EXPECT_EQ(virt.ptx, r.ptx); // the cubin's PTX is the virtual architecture's

    auto bad = n->compile("__global__ void k() { undeclared(); }\n", "bad.cu", {"--gpu-architecture=sm_80"}, {});
    EXPECT_FALSE(bad.ok);
    EXPECT_TRUE(has(bad.log, "undeclared")) << bad.log;
}

TEST(Nvrtc, GeneratedDevicePartCompilesAloneForEveryTarget) {
    const Nvrtc *n = Nvrtc::get();
    if (!n || n->includeDirs().empty()) GTEST_SKIP() << "NVRTC is not installed";
    LowerRun r;
    r.run(kAddTile);
    ASSERT_TRUE(r.lowered) << r.diags();
    GeneratedCode g = r.generate();
    ASSERT_EQ(g.kernels.size(), 1u);
    EXPECT_FALSE(has(g.device, "cuda_runtime")) << "the device part must not need the CUDA runtime's headers";
    EXPECT_TRUE(has(g.cuda, g.device)) << "the .cu embeds the device part unchanged";
    for (const char *arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}) {
        auto c = n->compile(g.device, "t.cu", {std::string("--gpu-architecture=") + arch}, {"&" + g.kernels[0].symbol});
        ASSERT_TRUE(c.ok) << arch << ":\n" << c.log;
        EXPECT_TRUE(has(c.ptx, ".entry " + c.loweredNames[0] + "(")) << arch;
    }
}

/// The Hopper path's prerequisite: the device part's own tensor-map type works under NVRTC as a
/// __grid_constant__ parameter whose address a TMA load (cp.async.bulk.tensor) takes.
TEST(Nvrtc, TensorMapTypeServesATmaLoad) {
    const Nvrtc *n = Nvrtc::get();
    if (!n || n->includeDirs().empty()) GTEST_SKIP() << "NVRTC is not installed";
    std::string device = addDevicePart();
    ASSERT_FALSE(device.empty());
    std::string src = device + R"(
extern "C" __global__ void tma_probe(const __grid_constant__ tilec::tensor_map map, int x, int y) {
    __shared__ alignas(128) unsigned char tile[64 * 64 * 2];
    __shared__ alignas(8) unsigned long long bar;
    unsigned dst = (unsigned)__cvta_generic_to_shared(tile), b = (unsigned)__cvta_generic_to_shared(&bar);
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(&map), "r"(x), "r"(y), "r"(b) : "memory");
}
)";
    auto c = n->compile(src, "tma.cu", {"--gpu-architecture=sm_90a"}, {"tma_probe"});
    ASSERT_TRUE(c.ok) << c.log;
    EXPECT_TRUE(has(c.ptx, ".param .align 64 .b8 tma_probe_param_0[128]")) << c.ptx.substr(0, 2000);
    EXPECT_TRUE(has(c.ptx, "cp.async.bulk.tensor.2d")) << c.ptx.substr(0, 2000);
}

/// The Hopper device library (stdlib/tilec/sm90_*.cuh) under NVRTC:
/// the probes of tests/cuda/sm90_stdlib_test.cu after the generated device part compile for every target;
/// for sm_90a the PTX has the wgmma, TMA, mbarrier and setmaxnreg instructions, and ptxas neither serializes
/// the wgmma nor spills.
TEST(Nvrtc, HopperLibraryCompilesForEveryTarget) {
    const Nvrtc *n = Nvrtc::get();
    if (!n || n->includeDirs().empty()) GTEST_SKIP() << "NVRTC is not installed";
    std::string device = addDevicePart();
    ASSERT_FALSE(device.empty());
    std::ifstream in(std::string(TILEC_SOURCE_DIR) + "/tests/cuda/sm90_stdlib_test.cu");
    ASSERT_TRUE(in) << "tests/cuda/sm90_stdlib_test.cu";
    std::stringstream probes;
    probes << in.rdbuf();
    std::string src = device + probes.str();
    for (const char *arch : {"sm_80", "sm_90", "sm_90a"}) {
        auto c = n->compile(src, "sm90.cu", {std::string("--gpu-architecture=") + arch, "--ptxas-options=-v"}, {});
        ASSERT_TRUE(c.ok) << arch << ":\n" << c.log;
        EXPECT_FALSE(has(c.log, "Potential Performance Loss")) << arch << ":\n" << c.log;
        EXPECT_FALSE(has(c.log, "C7508")) << arch << ":\n" << c.log;
        for (auto &f : parsePtxasLog(c.log)) {
            EXPECT_EQ(f.spillStores, 0) << arch << " " << f.function;
            EXPECT_EQ(f.stackFrame, 0) << arch << " " << f.function;
        }
        bool hopper = std::string(arch) == "sm_90a";
        EXPECT_EQ(has(c.ptx, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16"), hopper) << arch;
        EXPECT_EQ(has(c.ptx, "setmaxnreg.inc.sync.aligned.u32 232"), hopper) << arch;
        EXPECT_EQ(has(c.ptx, "cp.async.bulk.tensor.2d"), std::string(arch) != "sm_80") << arch;
        EXPECT_EQ(has(c.ptx, "mbarrier.try_wait.parity"), std::string(arch) != "sm_80") << arch;
        EXPECT_EQ(has(c.ptx, ".multicast::cluster"), hopper) << arch;
        EXPECT_EQ(has(c.ptx, "mapa.shared::cluster.u32"), std::string(arch) != "sm_80") << arch;
    }
}

/// Each file of stdlib/tilec/ includes what it uses (generated code embeds them in the umbrella's order,
/// StdlibTest; code outside tilec may include any one of them): included alone, each compiles under NVRTC for
/// sm_80 and sm_90a.
TEST(Nvrtc, EachStdlibFileCompilesAlone) {
    const Nvrtc *n = Nvrtc::get();
    if (!n || n->includeDirs().empty()) GTEST_SKIP() << "NVRTC is not installed";
    ASSERT_FALSE(codegen::stdlibFiles().empty());
    for (auto &f : codegen::stdlibFiles())
        for (const char *arch : {"sm_80", "sm_90a"}) {
            auto c = n->compile(std::string("#include \"") + f.name + "\"\n", "alone.cu",
                                {std::string("--gpu-architecture=") + arch,
                                 std::string("--include-path=") + TILEC_SOURCE_DIR + "/stdlib"},
                                {});
            EXPECT_TRUE(c.ok) << f.name << " alone, " << arch << ":\n" << c.log;
        }
}

TEST(BinaryMode, SourceEmbedsImagesBehindTheSameHeader) {
    LowerRun r;
    r.run(kAddTile);
    ASSERT_TRUE(r.lowered) << r.diags();
    GeneratedCode g = r.generate();
    CodegenOptions o;
    o.sourceName = "t.tile";
    o.cudaName = "t.cu";
    o.headerName = "t.h";
    o.targets = {*Target::parse("sm_80"), *Target::parse("sm_90a")};
    std::vector<DeviceImage> images = {{*Target::parse("sm_80"), false, std::string("\x7f" "ELF\x01\x02", 6)},
                                       {*Target::parse("sm_90a"), false, "ELF2"},
                                       {*Target::parse("sm_80"), true, ".version 9.0"}};
    std::string c = generateBinarySource(*r.lowered, o, images, {"_Z5twicePKfPf"}, r.front.diag);
    EXPECT_FALSE(r.front.diag.hasErrors()) << r.diags();
    EXPECT_TRUE(has(c, g.header)) << "binary mode embeds the .cu's header unchanged";
    EXPECT_TRUE(has(c, "static const unsigned char tilec_cubin_sm_80[] __attribute__((aligned(16))) = {\n127,69,76,70,1,2,\n};"))
        << c;
    EXPECT_TRUE(has(c, "tilec_cubin_sm_90a[]"));
    // PTX is NUL-terminated for the driver.
    EXPECT_TRUE(has(c, "tilec_ptx_compute_80[] __attribute__((aligned(16))) = {\n46,118,101,114,115,105,111,110,32,57,46,48,0,\n};"))
        << c;
    EXPECT_TRUE(has(c, "{80, 0, 0, tilec_cubin_sm_80},\n    {90, 1, 0, tilec_cubin_sm_90a},\n    {80, 0, 1, tilec_ptx_compute_80},"));
    EXPECT_TRUE(has(c, "static const char *const tilec_kernel_names[] = {\"_Z5twicePKfPf\"};"));
    // The same checks and statuses as the .cu, and the driver API's launch.
    EXPECT_TRUE(has(c, "if (A == NULL) return tilec_argument_error(TILEC_ERROR_NULL_POINTER, 0);"));
    EXPECT_TRUE(has(g.cuda, "if (A == NULL) return tilec_argument_error(TILEC_ERROR_NULL_POINTER, 0);"));
    EXPECT_TRUE(has(c, "cuLaunchKernelEx(&config, fn, args, NULL)"));
    EXPECT_TRUE(has(c, "int twice_threads(int sm) {\n    if (sm == 90) return 256;\n    return 0;\n}")) << c;
    EXPECT_TRUE(has(c, "tilec_status twice_load(void) {"));
    EXPECT_TRUE(has(c, "tilec_status twice_unload(void) { return tilec_unload(); }"));
    EXPECT_FALSE(has(c, "nullptr")) << "C has no nullptr";
    EXPECT_FALSE(has(c, "reinterpret_cast")) << "C has no C++ casts";
    // Deterministic.
    EXPECT_EQ(c, generateBinarySource(*r.lowered, o, images, {"_Z5twicePKfPf"}, r.front.diag));
}

TEST(BinaryMode, PrefixRenamesEveryExternalSymbol) {
    LowerRun r;
    r.run(kAddTile);
    ASSERT_TRUE(r.lowered) << r.diags();
    CodegenOptions o;
    o.sourceName = "t.tile";
    o.headerName = "t.h";
    o.prefix = "my_";
    o.targets = {*Target::parse("sm_90a")};
    std::string c = generateBinarySource(*r.lowered, o, {{*Target::parse("sm_90a"), false, "x"}}, {"k"}, r.front.diag);
    EXPECT_TRUE(has(c, "__attribute__((weak)) TILEC_THREAD_LOCAL cudaError_t my_tilec_last_cuda_error_state = cudaSuccess;"));
    EXPECT_TRUE(has(c, "__attribute__((weak)) const char *my_tilec_status_string(tilec_status status) {"));
    EXPECT_TRUE(has(c, "tilec_status my_twice(const float *A, float *B, cudaStream_t stream) {"));
    EXPECT_TRUE(has(c, "my_tilec_last_error_argument_state = argument;"));
}

} // namespace
