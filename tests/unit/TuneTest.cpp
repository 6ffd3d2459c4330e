// The CPU side of `tilec tune` and `--tuned`: the space, the sizes, the instantiation and its call text,
// the decorator's space, the table's JSON round trip, the choice per bucket, the warnings and the dispatcher.
#include "tilec/Tune.h"

#include "tilec/Diagnostics.h"
#include "tilec/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>

using namespace tilec;
using namespace tilec::tune;

namespace {

struct Parsed {
    SourceManager sm;
    std::ostringstream err;
    DiagnosticEngine diag{sm, err};
    std::optional<ast::Module> module;
    explicit Parsed(const std::string &text) {
        int f = sm.add("t.tile", text);
        module = parseModule(f, diag);
    }
};

Result ok(Config c, int64_t m, double ms) {
    Result r;
    r.config = std::move(c);
    r.size = {{"m", m}};
    r.status = "ok";
    r.ms = ms;
    return r;
}

Table dynamicTable() {
    Table t;
    t.file = "g.tile";
    t.fileHash = fileHash("text");
    t.kernel = "g";
    t.call = "linear(4096, 4096)";
    t.archs = {"sm_90a"};
    t.env.gpuName = "NVIDIA H200";
    t.env.ccMajor = 9;
    t.dispatchSymbol = "m";
    Config a{{"block_M", "64"}}, b{{"block_M", "128"}};
    t.results = {ok(a, 1, 0.010), ok(b, 1, 0.020), ok(a, 16, 0.011), ok(b, 16, 0.021),
                 ok(a, 1024, 0.30), ok(b, 1024, 0.20), ok(a, 8192, 2.0), ok(b, 8192, 1.5)};
    Result failed;
    failed.config = {{"block_M", "512"}};
    failed.size = {{"m", 1}};
    failed.status = "resource_limit";
    failed.detail = "too much shared memory";
    t.results.push_back(failed);
    return t;
}

} // namespace

TEST(TuneSpace, CartesianProductFirstDimensionSlowest) {
    auto s = parseSpace("block_M=64,128; num_stages=2,3,4");
    ASSERT_EQ(s.size(), 6u);
    EXPECT_EQ(s[0], (Config{{"block_M", "64"}, {"num_stages", "2"}}));
    EXPECT_EQ(s[2], (Config{{"block_M", "64"}, {"num_stages", "4"}}));
    EXPECT_EQ(s[3], (Config{{"block_M", "128"}, {"num_stages", "2"}}));
}

TEST(TuneSpace, ValuesWithCommasInsideBrackets) {
    auto s = parseSpace("shape=(64, 32),(128, 64);policy=None,'x,y'");
    ASSERT_EQ(s.size(), 4u);
    EXPECT_EQ(s[0][0].second, "(64, 32)");
    EXPECT_EQ(s[1][1].second, "'x,y'");
}

TEST(TuneSpace, Malformed) {
    EXPECT_THROW(parseSpace(""), std::invalid_argument);
    EXPECT_THROW(parseSpace("block_M"), std::invalid_argument);
    EXPECT_THROW(parseSpace("block_M=64,"), std::invalid_argument);
    EXPECT_THROW(parseSpace("a=1;a=2"), std::invalid_argument);
    EXPECT_THROW(parseSpace("a=(1,2"), std::invalid_argument);
    EXPECT_THROW(parseSpace("1x=1"), std::invalid_argument);
}

TEST(TuneSizes, OneDispatchSymbol) {
    auto s = parseSizes("m=1,16,128;n=4096");
    EXPECT_EQ(s.dispatchSymbol(), "m");
    auto p = s.points();
    ASSERT_EQ(p.size(), 3u);
    EXPECT_EQ(p[2].at("m"), 128);
    EXPECT_EQ(p[2].at("n"), 4096);
    EXPECT_EQ(parseSizes("n=7").dispatchSymbol(), "");
    EXPECT_EQ(parseSizes("n=7").points().size(), 1u);
    EXPECT_THROW(parseSizes("m=1,2;n=3,4"), std::invalid_argument);
    EXPECT_THROW(parseSizes("m=16,1"), std::invalid_argument);
    EXPECT_THROW(parseSizes("m=0"), std::invalid_argument);
    EXPECT_THROW(parseSizes("m=abc"), std::invalid_argument);
}

TEST(TuneInstantiation, CallTextReplacesAndAppendsKeywords) {
    Parsed p("g = matmul(4096, 2 * 1024, K=512, block_M=64)\nh = 3\ng = matmul(1, 2, 3)\n");
    ASSERT_TRUE(p.module);
    auto inst = findInstantiation(*p.module, p.sm, "g");
    ASSERT_TRUE(inst);
    // The last binding counts, as in Python.
    EXPECT_EQ(callText(*inst, {}), "matmul(1, 2, 3)");
    Parsed t("g = f((1, 2), [3, 4], x=(5, 6))\n");
    auto tup = findInstantiation(*t.module, t.sm, "g");
    ASSERT_TRUE(tup);
    EXPECT_EQ(callText(*tup, {}), "f((1, 2), [3, 4], x=(5, 6))"); // a tuple stays one argument
    Parsed q("g = matmul(4096, 2 * 1024, K=512, block_M=64)\n");
    auto first = findInstantiation(*q.module, q.sm, "g");
    ASSERT_TRUE(first);
    EXPECT_EQ(callText(*first, {{"block_M", "128"}, {"num_stages", "3"}}),
              "matmul(4096, 2 * 1024, K=512, block_M=128, num_stages=3)");
    EXPECT_FALSE(findInstantiation(*q.module, q.sm, "h"));
}

TEST(TuneDecorator, ListOfDictsAndNamedList) {
    Parsed p("import tilelang\n"
             "CONFIGS = [{'block_M': 64, 'threads': 128}, {'block_M': 128, 'threads': 256}]\n"
             "@tilelang.autotune(configs=CONFIGS, warmup=3)\n"
             "def matmul(M, block_M=64, threads=128):\n    pass\n"
             "@autotune(configs=[{\"block_N\": (2 * 64)}])\n"
             "def other(N, block_N=1):\n    pass\n"
             "def plain(N):\n    pass\n");
    ASSERT_TRUE(p.module);
    auto a = decoratorSpace(*p.module, p.sm, "matmul");
    ASSERT_TRUE(a);
    ASSERT_EQ(a->size(), 2u);
    EXPECT_EQ((*a)[1], (Config{{"block_M", "128"}, {"threads", "256"}}));
    auto b = decoratorSpace(*p.module, p.sm, "other");
    ASSERT_TRUE(b);
    EXPECT_EQ((*b)[0], (Config{{"block_N", "(2 * 64)"}}));
    EXPECT_FALSE(decoratorSpace(*p.module, p.sm, "plain"));
}

TEST(TuneDecorator, GeneratorFunctionIsAClearError) {
    Parsed p("def get_configs():\n    return []\n"
             "@autotune(configs=get_configs)\ndef matmul(M, block_M=64):\n    pass\n");
    ASSERT_TRUE(p.module);
    try {
        decoratorSpace(*p.module, p.sm, "matmul");
        FAIL() << "expected an error";
    } catch (const std::invalid_argument &e) {
        EXPECT_NE(std::string(e.what()).find("--space"), std::string::npos) << e.what();
    }
}

TEST(TuneTable, JsonRoundTrip) {
    Table t = dynamicTable();
    t.env.smCount = 132;
    t.env.driverVersion = 13000;
    t.env.nvrtcVersion = "libnvrtc.so.13 (13.0)";
    t.seed = 12345;
    t.reps = 25;
    t.space = "block_M=64,128 \"quoted\"\n";
    std::string text = writeTable(t);
    Table u = readTable(text);
    EXPECT_EQ(u.kernel, "g");
    EXPECT_EQ(u.fileHash, t.fileHash);
    EXPECT_EQ(u.space, t.space);
    EXPECT_EQ(u.env.gpuName, "NVIDIA H200");
    EXPECT_EQ(u.env.smCount, 132);
    EXPECT_EQ(u.env.ccMajor, 9);
    EXPECT_EQ(u.seed, 12345u);
    ASSERT_EQ(u.results.size(), t.results.size());
    EXPECT_EQ(u.results[5].config, t.results[5].config);
    EXPECT_DOUBLE_EQ(u.results[5].ms, 0.2);
    EXPECT_EQ(u.results.back().status, "resource_limit");
    EXPECT_EQ(u.results.back().detail, "too much shared memory");
    EXPECT_EQ(writeTable(u), text); // stable
}

TEST(TuneTable, RejectsWhatIsNotATable) {
    EXPECT_THROW(readTable("{}"), std::invalid_argument);
    EXPECT_THROW(readTable("[1, 2"), std::invalid_argument);
    EXPECT_THROW(readTable("{\"tilec_tune_format\": 99}"), std::invalid_argument);
    std::string text = writeTable(dynamicTable());
    EXPECT_THROW(readTable(text.substr(0, text.size() / 2)), std::invalid_argument);
}

TEST(TuneSelect, BestPerBucketAndSingleBest) {
    Table t = dynamicTable();
    auto c = selectBest(t);
    ASSERT_EQ(c.size(), 4u);
    EXPECT_EQ(c[0].upTo, 1);
    EXPECT_EQ(c[0].config, (Config{{"block_M", "64"}}));
    EXPECT_EQ(c[1].upTo, 16);
    EXPECT_EQ(c[2].upTo, 1024);
    EXPECT_EQ(c[2].config, (Config{{"block_M", "128"}}));
    EXPECT_FALSE(c[3].upTo); // the last bucket takes every larger size
    EXPECT_DOUBLE_EQ(c[3].ms, 1.5);
    // 64: 2.321 ms over the sizes, 128: 1.741; the failing 512 never ran everywhere.
    EXPECT_EQ(singleBest(t), (Config{{"block_M", "128"}}));
}

TEST(TuneSelect, StaticTableAndNoWorkingConfiguration) {
    Table t;
    t.kernel = "k";
    Result a, b;
    a.config = {{"x", "1"}};
    a.status = "ok";
    a.ms = 2;
    b.config = {{"x", "2"}};
    b.status = "ok";
    b.ms = 1;
    t.results = {a, b};
    auto c = selectBest(t);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_FALSE(c[0].upTo);
    EXPECT_EQ(c[0].config, b.config);
    t.results[1].status = "mismatch";
    EXPECT_EQ(selectBest(t)[0].config, a.config); // a disagreeing configuration is never chosen
    t.results[0].status = "compile_error";
    EXPECT_THROW(selectBest(t), std::invalid_argument);
}

TEST(TuneMismatch, FileVersionAndGpuModel) {
    Table t = dynamicTable();
    EXPECT_TRUE(mismatches(t, "text", {"sm_90a"}).empty());
    EXPECT_TRUE(mismatches(t, "text", {"sm_80", "sm_90"}).empty());
    auto file = mismatches(t, "edited text", {"sm_90a"});
    ASSERT_EQ(file.size(), 1u);
    EXPECT_NE(file[0].find("another version of g.tile"), std::string::npos) << file[0];
    auto gpu = mismatches(t, "text", {"sm_80"});
    ASSERT_EQ(gpu.size(), 1u);
    EXPECT_NE(gpu[0].find("NVIDIA H200 (compute capability 9.0)"), std::string::npos) << gpu[0];
    EXPECT_NE(fileHash("a"), fileHash("b"));
    EXPECT_EQ(fileHash(""), "cbf29ce484222325");
}

namespace {
const char *const kHeader = "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
                            "/* comment naming g__cfg0(x) */\n"
                            "tilec_status g__cfg0(const void *X, float *Y, float alpha, int64_t m, cudaStream_t stream);\n"
                            "tilec_status g__cfg1(const void *X, float *Y, float alpha, int64_t m, cudaStream_t stream);\n"
                            "#ifdef __cplusplus\n}\n#endif\n\n#endif /* GUARD */\n";
}

TEST(TuneDispatch, LaunchParameters) {
    auto p = launchParameters(kHeader, "g__cfg0");
    ASSERT_EQ(p.size(), 5u);
    EXPECT_EQ(p[0].type, "const void *");
    EXPECT_EQ(p[0].name, "X");
    EXPECT_EQ(p[2].type, "float");
    EXPECT_EQ(p[3].name, "m");
    EXPECT_EQ(p[4].type, "cudaStream_t");
    EXPECT_THROW(launchParameters(kHeader, "g"), std::invalid_argument);
}

TEST(TuneDispatch, BucketsMergeAndQueriesCoverEveryConfiguration) {
    Dispatch d{"g", "m", {"g__cfg0", "g__cfg0", "g__cfg1", "g__cfg1"}, {1, 16, 1024, std::nullopt}};
    std::string cu = dispatchDefinitions(d, kHeader, true);
    EXPECT_NE(cu.find("extern \"C\" tilec_status g(const void *X, float *Y, float alpha, int64_t m, cudaStream_t stream) {"),
              std::string::npos) << cu;
    EXPECT_NE(cu.find("    if (m <= 16) return g__cfg0(X, Y, alpha, m, stream);\n    return g__cfg1(X, Y, alpha, m, stream);\n}"),
              std::string::npos) << cu;
    EXPECT_EQ(cu.find("m <= 1)"), std::string::npos) << cu;
    EXPECT_NE(cu.find("x = g__cfg1_threads(sm);"), std::string::npos) << cu;
    EXPECT_NE(cu.find("s = g__cfg1_unload();"), std::string::npos) << cu;
    std::string c = dispatchDefinitions(d, kHeader, false);
    EXPECT_EQ(c.find("extern \"C\" tilec_status"), std::string::npos) << c;
    EXPECT_NE(c.find("#ifdef __cplusplus\nextern \"C\" {\n#endif\ntilec_status g("), std::string::npos) << c;
    std::string h = insertIntoHeader(kHeader, dispatchDeclarations(d, kHeader));
    EXPECT_NE(h.find("tilec_status g(const void *X, float *Y, float alpha, int64_t m, cudaStream_t stream);\n"
                     "int g_threads(int sm);"),
              std::string::npos) << h;
    EXPECT_LT(h.find("tilec_status g("), h.rfind("#ifdef __cplusplus\n}"));
    Dispatch bad{"g", "n", {"g__cfg0"}, {std::nullopt}};
    EXPECT_THROW(dispatchDefinitions(bad, kHeader, true), std::invalid_argument); // no parameter n
}

// One configuration with a T.alloc_global workspace (g__cfg1), one without (g__cfg0): the dispatcher still has
// both forms; the configuration without one needs 0 bytes and is called through its own launch function.
TEST(TuneDispatch, WorkspaceFormsForwardLikeTheLaunch) {
    const std::string header =
        std::string(kHeader).insert(std::string(kHeader).find("#ifdef __cplusplus\n}"),
                                    "size_t g__cfg1_workspace_bytes(float alpha, int64_t m);\n"
                                    "tilec_status g__cfg1_with_workspace(const void *X, float *Y, float alpha, int64_t m, "
                                    "void *workspace, size_t workspace_bytes, cudaStream_t stream);\n"
                                    "size_t none_workspace_bytes(void);\n");
    auto none = declaredParameters(header, "size_t", "none_workspace_bytes");
    ASSERT_TRUE(none.has_value());
    EXPECT_TRUE(none->empty());
    EXPECT_FALSE(declaredParameters(header, "size_t", "g__cfg0_workspace_bytes").has_value());
    Dispatch d{"g", "m", {"g__cfg0", "g__cfg1"}, {16, std::nullopt}};
    std::string cu = dispatchDefinitions(d, header, true);
    EXPECT_NE(cu.find("extern \"C\" size_t g_workspace_bytes(float alpha, int64_t m) {\n"
                      "    if (m <= 16) return 0;\n    return g__cfg1_workspace_bytes(alpha, m);\n}"),
              std::string::npos) << cu;
    EXPECT_NE(cu.find("extern \"C\" tilec_status g_with_workspace(const void *X, float *Y, float alpha, int64_t m, void "
                      "*workspace, size_t workspace_bytes, cudaStream_t stream) {\n"
                      "    if (m <= 16) return g__cfg0(X, Y, alpha, m, stream);\n"
                      "    return g__cfg1_with_workspace(X, Y, alpha, m, workspace, workspace_bytes, stream);\n}"),
              std::string::npos) << cu;
    std::string h = dispatchDeclarations(d, header);
    EXPECT_NE(h.find("\nsize_t g_workspace_bytes(float alpha, int64_t m);\n"), std::string::npos) << h;
    // Without workspaces: neither form.
    EXPECT_EQ(dispatchDefinitions(d, kHeader, true).find("_workspace"), std::string::npos);
}

TEST(TunedBuild, PlanFromTables) {
    Parsed p("g = linear(4096, 4096)\ns = linear(64, 64, block_M=32)\n");
    ASSERT_TRUE(p.module);
    std::string dir = ::testing::TempDir();
    Table dyn = dynamicTable();
    Table st;
    st.kernel = "s";
    st.fileHash = fileHash("text");
    Result r;
    r.config = {{"block_M", "16"}};
    r.status = "ok";
    r.ms = 1;
    st.results = {r};
    auto write = [&](const std::string &name, const Table &t) {
        std::string path = dir + "/" + name;
        FILE *f = std::fopen(path.c_str(), "w");
        std::string text = writeTable(t);
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
        return path;
    };
    auto plan = planTunedBuild({write("g.tune.json", dyn), write("s.tune.json", st)}, *p.module, p.sm, "text", {"sm_90a"});
    EXPECT_TRUE(plan.warnings.empty());
    ASSERT_EQ(plan.exports.size(), 3u);
    EXPECT_EQ(plan.exports[0], (std::pair<std::string, std::string>{"g__cfg0", "linear(4096, 4096, block_M=64)"}));
    EXPECT_EQ(plan.exports[1], (std::pair<std::string, std::string>{"g__cfg1", "linear(4096, 4096, block_M=128)"}));
    EXPECT_EQ(plan.exports[2], (std::pair<std::string, std::string>{"s", "linear(64, 64, block_M=16)"}));
    EXPECT_EQ(plan.replaced, std::vector<std::string>{"g"});
    ASSERT_EQ(plan.dispatches.size(), 1u);
    EXPECT_EQ(plan.dispatches[0].cfgNames, (std::vector<std::string>{"g__cfg0", "g__cfg0", "g__cfg1", "g__cfg1"}));
    auto warned = planTunedBuild({write("s2.tune.json", st)}, *p.module, p.sm, "changed", {"sm_90a"});
    ASSERT_EQ(warned.warnings.size(), 1u);
    EXPECT_THROW(planTunedBuild({dir + "/missing.json"}, *p.module, p.sm, "text", {"sm_90a"}), std::invalid_argument);
    st.kernel = "nope";
    EXPECT_THROW(planTunedBuild({write("n.tune.json", st)}, *p.module, p.sm, "text", {"sm_90a"}), std::invalid_argument);
}

// ---- one configuration built as the tuner builds it (needs NVRTC, CUDA's headers and a C compiler) ----

#include "tilec/DeviceCompiler.h"
#include "tune/TuneImpl.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

namespace {

BuildSetup addSetup(const std::string &dir) {
    BuildSetup s;
    s.tilec = TILEC_BINARY;
    s.input = std::string(TILEC_SOURCE_DIR) + "/examples/elementwise_add.tile";
    s.kernel = "add_odd";
    s.archs = {"sm_80"};
    s.dir = dir;
    const char *cc = std::getenv("CC");
    s.cc = cc && *cc ? cc : "cc";
    s.cudaInclude = findCudaIncludeDir();
    return s;
}

} // namespace

TEST(TuneBuild, ConfigurationBecomesALibraryWithTheEntry) {
    if (!Nvrtc::get() || findCudaIncludeDir().empty() || std::system("cc --version > /dev/null 2>&1") != 0)
        GTEST_SKIP() << "needs NVRTC, cuda.h and a C compiler";
    std::string dir = ::testing::TempDir() + "/tune-build-XXXXXX";
    ASSERT_TRUE(::mkdtemp(dir.data()));
    BuildSetup s = addSetup(dir);
    Built b = buildConfig(s, 3, "add(1000, 3000, block_M=16, threads=128)");
    ASSERT_EQ(b.status, "ok") << b.detail;
    EXPECT_EQ(b.library, dir + "/cfg3.so");
    EXPECT_NE(b.header.find("128 threads"), std::string::npos) << b.header;
    auto params = launchParameters(b.header, "add_odd");
    ASSERT_EQ(params.size(), 4u);
    EXPECT_EQ(params[2].type, "void *"); // C: written
    // Loaded lazily (no libcuda here, the driver calls stay unresolved): the entry is there.
    void *h = ::dlopen(b.library.c_str(), RTLD_LAZY | RTLD_LOCAL);
    ASSERT_TRUE(h) << ::dlerror();
    EXPECT_TRUE(::dlsym(h, "tilec_tune_entry"));
    EXPECT_TRUE(::dlsym(h, "add_odd_unload"));
    ::dlclose(h);

    // A configuration the compiler rejects is recorded with its reason, not skipped.
    Built bad = buildConfig(s, 4, "add(1000, 3000, threads=100000)");
    EXPECT_NE(bad.status, "ok");
    EXPECT_FALSE(bad.detail.empty());
    EXPECT_TRUE(bad.library.empty());
    Built unknown = buildConfig(s, 5, "add(1000, 3000, no_such_parameter=1)");
    EXPECT_EQ(unknown.status, "compile_error");
    EXPECT_NE(unknown.detail.find("no_such_parameter"), std::string::npos) << unknown.detail;
}

TEST(TuneBuild, ElementCounts) {
    ParamSpec p;
    p.name = "X";
    p.dims = {"m", "4096"};
    EXPECT_EQ(elementCount(p, {{"m", 16}}), 16 * 4096);
    EXPECT_THROW(elementCount(p, {}), std::invalid_argument);
}

TEST(TuneBuild, DecodesEveryOutputFormat) {
    auto at = [](std::vector<unsigned char> bytes, DType t) { return decodeElement(bytes.data(), t); };
    EXPECT_EQ(at({0x00, 0x3C}, DType::Float16), 1.0);          // 0x3C00
    EXPECT_EQ(at({0x00, 0xC0}, DType::Float16), -2.0);         // 0xC000
    EXPECT_EQ(at({0x01, 0x00}, DType::Float16), std::ldexp(1.0, -24)); // the smallest subnormal
    EXPECT_TRUE(std::isnan(at({0xFF, 0xFF}, DType::Float16))); // the tuner's poison
    EXPECT_EQ(at({0x80, 0x3F}, DType::BFloat16), 1.0);         // 0x3F80
    EXPECT_TRUE(std::isnan(at({0xFF, 0xFF}, DType::BFloat16)));
    EXPECT_EQ(at({0x38}, DType::Float8E4M3), 1.0);             // 0.0111.000
    EXPECT_EQ(at({0x7E}, DType::Float8E4M3), 448.0);           // the largest
    EXPECT_TRUE(std::isnan(at({0xFF}, DType::Float8E4M3)));
    EXPECT_EQ(at({0x3C}, DType::Float8E5M2), 1.0);             // 0.01111.00
    EXPECT_TRUE(std::isnan(at({0xFF}, DType::Float8E5M2)));
    EXPECT_EQ(at({0x00, 0x00, 0x80, 0xBF}, DType::Float32), -1.0);
    EXPECT_EQ(at({0xFE, 0xFF, 0xFF, 0xFF}, DType::Int32), -2.0);
    EXPECT_EQ(at({0xFF}, DType::Int8), -1.0);
    EXPECT_EQ(at({0xFF}, DType::UInt8), 255.0);
}
