/// \file
/// The launch parameters (src/codegen/CodegenParams.cpp): the __global__ function of every variant and the
/// launcher's `args` array that cudaLaunchKernel hands it agree parameter by parameter, in order, type and
/// the C argument each comes from, for a kernel with tensors, a scalar, a T.dynamic size and TMA tensor maps.
#include "LowerTestUtil.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>

using namespace tilec;
using tilec::lowertest::LowerRun;

namespace {

/// `what` split at each ", ".
std::vector<std::string> splitList(const std::string &what) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= what.size()) {
        size_t comma = what.find(", ", at);
        if (comma == std::string::npos) comma = what.size();
        if (comma > at) out.push_back(what.substr(at, comma - at));
        at = comma + 2;
    }
    return out;
}

struct DeviceParam {
    std::string type, name;
};

/// Every __global__ function of `cuda` (but the runtime's probe): its symbol and parameters.
std::map<std::string, std::vector<DeviceParam>> deviceSignatures(const std::string &cuda) {
    std::map<std::string, std::vector<DeviceParam>> out;
    std::regex kernel(R"(static __global__ void (?:__launch_bounds__\([0-9, ]+\) )?(tilec_\w+)\(([^)]*)\) \{)");
    for (std::sregex_iterator it(cuda.begin(), cuda.end(), kernel), end; it != end; ++it) {
        if ((*it)[1] == "tilec_probe_arch_specific") continue;
        auto &params = out[(*it)[1]];
        for (const std::string &p : splitList((*it)[2])) {
            size_t space = p.find_last_of(" *");
            params.push_back({p.substr(0, space + 1), p.substr(space + 1)});
        }
    }
    return out;
}

/// The type a launcher variable is declared with before `at` (`const __half *a0 = ...;`, `CUtensorMap m0;`)
/// and what initializes it ("" for a tensor map).
std::pair<std::string, std::string> declaration(const std::string &cuda, size_t at, const std::string &var) {
    std::smatch m;
    std::regex decl("\\n +([^=;\\n]*?) ?" + var + "( = ([^;\\n]*))?;");
    std::string before = cuda.substr(0, at);
    std::string type, init;
    for (std::sregex_iterator it(before.begin(), before.end(), decl), end; it != end; ++it) // the last one
        type = (*it)[1], init = (*it)[3];
    return {type, init};
}

TEST(CodegenParams, KernelSignatureAndHostLaunchAgree) {
    LowerRun r;
    r.run("import tilelang.language as T\n"
          "def mm(M, N, block_M=128, block_N=128, block_K=32):\n"
          "    K = T.dynamic(\"K\")\n"
          "    @T.prim_func\n"
          "    def kernel(A: T.Tensor((M, K), \"float16\"), B: T.Tensor((K, N), \"float16\"),\n"
          "               C: T.Tensor((M, N), \"float16\"), alpha: T.float32):\n"
          "        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):\n"
          "            A_s = T.alloc_shared((block_M, block_K), \"float16\")\n"
          "            B_s = T.alloc_shared((block_K, block_N), \"float16\")\n"
          "            acc = T.alloc_fragment((block_M, block_N), \"float\")\n"
          "            T.clear(acc)\n"
          "            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):\n"
          "                T.copy(A[by * block_M, ko * block_K], A_s)\n"
          "                T.copy(B[ko * block_K, bx * block_N], B_s)\n"
          "                T.gemm(A_s, B_s, acc)\n"
          "            for i, j in T.Parallel(block_M, block_N):\n"
          "                acc[i, j] = acc[i, j] * alpha\n"
          "            T.copy(acc, C[by * block_M, bx * block_N])\n"
          "    return kernel\n"
          "g = mm(1024, 1024)\n");
    ASSERT_TRUE(r.lowered) << r.diags();
    GeneratedCode g = r.generate();
    // The C function: the tensors and the scalar in declaration order, then the dynamic size.
    ASSERT_NE(g.header.find("tilec_status g(const void *A, const void *B, void *C, float alpha, int64_t K, cudaStream_t stream);"),
              std::string::npos)
        << g.header;
    auto kernels = deviceSignatures(g.cuda);
    ASSERT_FALSE(kernels.empty());
    std::regex launch(R"(cudaLaunchKernel\(reinterpret_cast<const void \*>\(&(tilec_\w+)\))");
    size_t launches = 0, maps = 0;
    for (std::sregex_iterator it(g.cuda.begin(), g.cuda.end(), launch), end; it != end; ++it) {
        const std::string symbol = (*it)[1];
        SCOPED_TRACE(symbol);
        ASSERT_TRUE(kernels.count(symbol)) << "a launch of no kernel";
        const auto &params = kernels[symbol];
        size_t at = (size_t)it->position(0), open = g.cuda.rfind("void *args[] = {", at);
        ASSERT_NE(open, std::string::npos);
        open += std::string("void *args[] = {").size();
        std::vector<std::string> args = splitList(g.cuda.substr(open, g.cuda.find("};", open) - open));
        ASSERT_EQ(args.size(), params.size()) << "the args array and the __global__ signature";
        for (size_t i = 0; i < params.size(); ++i) {
            SCOPED_TRACE(params[i].name);
            ASSERT_EQ(args[i][0], '&');
            const std::string var = args[i].substr(1);
            auto [type, init] = declaration(g.cuda, open, var);
            std::string device = params[i].type;
            if (device.find("tilec::tensor_map") != std::string::npos) { // tilec_map_N <- the launcher's mN
                EXPECT_EQ(type, "CUtensorMap");
                EXPECT_EQ(params[i].name, "tilec_map_" + var.substr(1));
                ++maps;
                continue;
            }
            auto restrict = device.find(" *__restrict__ ");
            if (restrict != std::string::npos) device.replace(restrict, std::string(" *__restrict__ ").size(), " *");
            EXPECT_EQ(type + (type.back() == '*' ? "" : " "), device) << "the host variable's type";
            // Each comes from the C parameter of the same name (a cast of the pointer, a dynamic size narrowed).
            std::regex from("(static_cast<[^>]*>\\(|\\(int\\))?" + params[i].name + "\\)?");
            EXPECT_TRUE(std::regex_match(init, from)) << var << " = " << init;
        }
        ++launches;
    }
    EXPECT_EQ(launches, kernels.size()) << "every variant is launched";
    EXPECT_GT(maps, 0u) << "the TMA variant passes its tensor maps";
}

} // namespace
