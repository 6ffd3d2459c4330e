/// \file
/// NVRTC through dlopen (include/tilec/DeviceCompiler.h): finding the library and CUDA's headers, one
/// compilation, and reading ptxas's report out of the log.
///
/// NVRTC has no C library: `stdint.h` and `type_traits`, which the device runtime includes, are supplied as
/// in-memory headers that forward to CCCL's `cuda/std` versions (shipped with every toolkit NVRTC comes with).
#include "tilec/DeviceCompiler.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

namespace tilec {

namespace {

// NVRTC's C interface, declared here so that building tilec needs no CUDA headers.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;

bool exists(const std::string &path) {
    struct stat st;
    return !path.empty() && ::stat(path.c_str(), &st) == 0;
}

std::string envOr(const char *name) {
    const char *v = std::getenv(name);
    return v ? v : "";
}

std::string parentDir(const std::string &path) {
    auto slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

/// Where CUDA's headers may be, best first: the toolkit the user points at, the one NVRTC came from, the
/// usual installation.
std::vector<std::string> includeCandidates(const std::string &nvrtcPath) {
    std::vector<std::string> dirs;
    for (const char *env : {"CUDA_HOME", "CUDA_PATH"})
        if (auto v = envOr(env); !v.empty()) dirs.push_back(v + "/include");
    if (!nvrtcPath.empty() && nvrtcPath.find('/') != std::string::npos) {
        std::string lib = parentDir(nvrtcPath);
        dirs.push_back(parentDir(lib) + "/include");
        dirs.push_back(parentDir(parentDir(parentDir(lib))) + "/include"); // targets/<arch>/lib
    }
    dirs.push_back("/usr/local/cuda/include");
    return dirs;
}

const char *const kStdint = R"h(#pragma once
#include <cuda/std/cstdint>
using cuda::std::int8_t; using cuda::std::int16_t; using cuda::std::int32_t; using cuda::std::int64_t;
using cuda::std::uint8_t; using cuda::std::uint16_t; using cuda::std::uint32_t; using cuda::std::uint64_t;
using cuda::std::intptr_t; using cuda::std::uintptr_t;
)h";
const char *const kTypeTraits = R"h(#pragma once
#include <cuda/std/type_traits>
namespace std { using namespace cuda::std; }
)h";

} // namespace

struct Nvrtc::Api {
    void *handle = nullptr;
    const char *(*getErrorString)(nvrtcResult) = nullptr;
    nvrtcResult (*version)(int *, int *) = nullptr;
    nvrtcResult (*createProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *) = nullptr;
    nvrtcResult (*destroyProgram)(nvrtcProgram *) = nullptr;
    nvrtcResult (*compileProgram)(nvrtcProgram, int, const char *const *) = nullptr;
    nvrtcResult (*getPTXSize)(nvrtcProgram, size_t *) = nullptr;
    nvrtcResult (*getPTX)(nvrtcProgram, char *) = nullptr;
    nvrtcResult (*getCUBINSize)(nvrtcProgram, size_t *) = nullptr;
    nvrtcResult (*getCUBIN)(nvrtcProgram, char *) = nullptr;
    nvrtcResult (*getProgramLogSize)(nvrtcProgram, size_t *) = nullptr;
    nvrtcResult (*getProgramLog)(nvrtcProgram, char *) = nullptr;
    nvrtcResult (*addNameExpression)(nvrtcProgram, const char *) = nullptr;
    nvrtcResult (*getLoweredName)(nvrtcProgram, const char *, const char **) = nullptr;

    /// Resolves every function; false (and the library closed) when one is missing.
    bool bind() {
        auto sym = [&](auto &fn, const char *name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
            return fn != nullptr;
        };
        return sym(getErrorString, "nvrtcGetErrorString") && sym(version, "nvrtcVersion") &&
               sym(createProgram, "nvrtcCreateProgram") && sym(destroyProgram, "nvrtcDestroyProgram") &&
               sym(compileProgram, "nvrtcCompileProgram") && sym(getPTXSize, "nvrtcGetPTXSize") &&
               sym(getPTX, "nvrtcGetPTX") && sym(getCUBINSize, "nvrtcGetCUBINSize") && sym(getCUBIN, "nvrtcGetCUBIN") &&
               sym(getProgramLogSize, "nvrtcGetProgramLogSize") && sym(getProgramLog, "nvrtcGetProgramLog") &&
               sym(addNameExpression, "nvrtcAddNameExpression") && sym(getLoweredName, "nvrtcGetLoweredName");
    }
};

Nvrtc::~Nvrtc() = default;

const Nvrtc *Nvrtc::get(std::string *searched) {
    static std::once_flag once;
    static std::unique_ptr<Nvrtc> instance;
    static std::string tried;
    std::call_once(once, [] {
        // TILEC_NVRTC names the one library to use (tests set it to a missing file to see the error).
        std::vector<std::string> candidates;
        if (const char *only = std::getenv("TILEC_NVRTC")) {
            candidates.push_back(only);
        } else {
            for (const char *env : {"CUDA_HOME", "CUDA_PATH"}) {
                std::string root = envOr(env);
                if (root.empty()) continue;
                for (const char *lib : {"/lib64/", "/lib/"})
                    for (const char *so : {"libnvrtc.so.13", "libnvrtc.so"}) candidates.push_back(root + lib + so);
            }
            for (const char *so : {"libnvrtc.so.13", "libnvrtc.so"}) candidates.push_back(std::string("/usr/local/cuda/lib64/") + so);
            // Bare names: the dynamic loader's own search (LD_LIBRARY_PATH, the ld.so cache).
            for (const char *so : {"libnvrtc.so.13", "libnvrtc.so", "libnvrtc.so.12"}) candidates.push_back(so);
        }
        for (auto &c : candidates) {
            tried += (tried.empty() ? "" : ", ") + c;
            bool bare = c.find('/') == std::string::npos;
            if (!bare && !exists(c)) continue;
            void *h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (!h) continue;
            auto api = std::make_unique<Api>();
            api->handle = h;
            if (!api->bind()) {
                dlclose(h);
                continue;
            }
            std::string path = c;
            Dl_info info;
            if (dladdr(reinterpret_cast<void *>(api->version), &info) && info.dli_fname) path = info.dli_fname;
            int major = 0, minor = 0;
            api->version(&major, &minor);
            auto n = std::unique_ptr<Nvrtc>(new Nvrtc());
            n->api_ = std::move(api);
            n->description_ = path + " (" + std::to_string(major) + "." + std::to_string(minor) + ")";
            for (auto &dir : includeCandidates(path)) {
                if (!exists(dir + "/cuda_fp16.h")) continue;
                n->includeDirs_.push_back(dir);
                // CUDA 13 keeps CCCL (cuda/std/...) in include/cccl; CUDA 12 in include itself.
                if (exists(dir + "/cccl/cuda/std/type_traits")) n->includeDirs_.push_back(dir + "/cccl");
                break;
            }
            instance = std::move(n);
            break;
        }
    });
    if (searched) *searched = tried;
    return instance.get();
}

DeviceCompileResult Nvrtc::compile(const std::string &source, const std::string &name,
                                   const std::vector<std::string> &options,
                                   const std::vector<std::string> &nameExpressions) const {
    DeviceCompileResult r;
    const Api &a = *api_;
    auto fail = [&](const char *what, nvrtcResult e) {
        r.log += std::string(what) + " failed: " + a.getErrorString(e) + "\n";
        return r;
    };
    const char *headers[] = {kStdint, kStdint, kTypeTraits};
    const char *headerNames[] = {"stdint.h", "cstdint", "type_traits"};
    nvrtcProgram prog = nullptr;
    if (nvrtcResult e = a.createProgram(&prog, source.c_str(), name.c_str(), 3, headers, headerNames))
        return fail("nvrtcCreateProgram", e);
    struct Destroy {
        const Api &a;
        nvrtcProgram &p;
        ~Destroy() { a.destroyProgram(&p); }
    } destroy{a, prog};
    for (auto &ne : nameExpressions)
        if (nvrtcResult e = a.addNameExpression(prog, ne.c_str())) return fail("nvrtcAddNameExpression", e);
    std::vector<std::string> all = options;
    for (auto &d : includeDirs_) all.push_back("--include-path=" + d);
    // T.sync_grid's cooperative_groups.h (only there: its folder has memory.h, functional.h, ...): its details/
    // headers include their siblings by bare name, which NVRTC does not look for beside the including header.
    if (source.find("#include <cooperative_groups.h>") != std::string::npos)
        for (auto &d : includeDirs_)
            if (exists(d + "/cooperative_groups/details/info.h")) all.push_back("--include-path=" + d + "/cooperative_groups/details");
    std::vector<const char *> argv;
    for (auto &o : all) argv.push_back(o.c_str());
    nvrtcResult compiled = a.compileProgram(prog, (int)argv.size(), argv.data());
    size_t n = 0;
    if (a.getProgramLogSize(prog, &n) == 0 && n > 1) {
        std::string log(n, '\0');
        if (a.getProgramLog(prog, log.data()) == 0) r.log = log.substr(0, log.find('\0'));
    }
    if (compiled) return fail("nvrtcCompileProgram", compiled);
    if (nvrtcResult e = a.getPTXSize(prog, &n)) return fail("nvrtcGetPTXSize", e);
    r.ptx.assign(n, '\0');
    if (nvrtcResult e = a.getPTX(prog, r.ptx.data())) return fail("nvrtcGetPTX", e);
    r.ptx.resize(r.ptx.find('\0') == std::string::npos ? n : r.ptx.find('\0'));
    // A virtual architecture has no cubin: the size call then fails or says 0.
    if (a.getCUBINSize(prog, &n) == 0 && n > 0) {
        r.cubin.assign(n, '\0');
        if (nvrtcResult e = a.getCUBIN(prog, r.cubin.data())) return fail("nvrtcGetCUBIN", e);
    }
    for (auto &ne : nameExpressions) {
        const char *lowered = nullptr;
        if (nvrtcResult e = a.getLoweredName(prog, ne.c_str(), &lowered)) return fail("nvrtcGetLoweredName", e);
        r.loweredNames.push_back(lowered ? lowered : "");
    }
    r.ok = true;
    return r;
}

std::string findCudaIncludeDir(std::string *searched) {
    std::string nvrtcPath;
    if (const Nvrtc *n = Nvrtc::get()) nvrtcPath = n->description().substr(0, n->description().find(" ("));
    std::string tried;
    for (auto &dir : includeCandidates(nvrtcPath)) {
        tried += (tried.empty() ? "" : ", ") + dir;
        if (exists(dir + "/cuda.h")) {
            if (searched) *searched = tried;
            return dir;
        }
    }
    if (searched) *searched = tried;
    return "";
}

} // namespace tilec
