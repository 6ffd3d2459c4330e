/// \file
/// The device code through NVRTC for every target of -arch (src/driver/DriverImpl.h): the options, one
/// compilation per target (in parallel: NVRTC is thread-safe), and the names of the outputs.
#include "driver/DriverImpl.h"

#include "tilec/Diagnostics.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace tilec::driver {

const Nvrtc &requireNvrtc(const std::string &why) {
    std::string searched;
    const Nvrtc *n = Nvrtc::get(&searched);
    if (!n)
        throw UsageError{why + " needs NVRTC (libnvrtc.so.13 from the CUDA toolkit), which was not found (searched: " +
                         searched + "); install it, or set CUDA_HOME to the toolkit's directory"};
    if (n->includeDirs().empty())
        throw UsageError{why + " needs the CUDA headers (cuda_fp16.h) beside NVRTC, which were not found (NVRTC: " +
                         n->description() + "); set CUDA_HOME to the toolkit's directory"};
    return *n;
}

const Target &lowestTarget(const std::vector<Target> &targets) {
    TILEC_ASSERT(!targets.empty(), "no target");
    return *std::min_element(targets.begin(), targets.end(), [](const Target &a, const Target &b) {
        return a.sm != b.sm ? a.sm < b.sm : (!a.archSpecific && b.archSpecific);
    });
}

std::string cubinPath(const std::string &stem, const Target &t, size_t targetCount) {
    return targetCount == 1 ? stem + ".cubin" : stem + "." + t.name + ".cubin";
}

namespace {

std::vector<std::string> nvrtcOptions(const std::string &arch, bool cubin, const DriverOptions &opts) {
    // --no-source-include: nothing is read from the working directory.
    std::vector<std::string> o{"--gpu-architecture=" + arch, "-std=c++17", "--no-source-include"};
    if (cubin) o.push_back("--ptxas-options=-v"); // the figures of --resource-usage; changes no byte of the cubin
    for (auto &x : opts.ptxasOptions) o.push_back("--ptxas-options=" + x);
    if (opts.lineInfo) o.push_back("--generate-line-info");
    std::string all;
    for (auto &x : o) all += " " + x;
    remark(nullptr, {}, "nvrtc:" + all);
    return o;
}

[[noreturn]] void notCompiled(const std::string &arch, const DeviceCompileResult &r, const DriverOptions &opts) {
    // ptxas refusing an option is the command line's mistake, not the generated code's.
    if (!opts.ptxasOptions.empty()) {
        auto at = r.log.find("ptxas fatal");
        if (at != std::string::npos) {
            std::string line = r.log.substr(at, r.log.find('\n', at) - at);
            throw UsageError{"-Xptxas: " + line};
        }
    }
    throw InternalError("internal error: in nvrtc: the generated device code does not compile for " + arch +
                        " (a tilec bug; please report it with the .tile file):\n" + r.log);
}

} // namespace

DeviceBuild buildDevice(const Nvrtc &nvrtc, const GeneratedCode &code, const std::vector<Target> &targets,
                        const DriverOptions &opts, const std::string &deviceName, bool cubins) {
    auto t0 = std::chrono::steady_clock::now();
    DeviceBuild b;
    for (auto &t : targets)
        if (std::none_of(b.targets.begin(), b.targets.end(), [&](const Target &u) { return u.name == t.name; }))
            b.targets.push_back(t);
    std::vector<std::string> names;
    for (auto &k : code.kernels) names.push_back("&" + k.symbol);
    const Target &low = lowestTarget(b.targets);
    setCurrentPhase("nvrtc");
    std::string dirs;
    for (auto &d : nvrtc.includeDirs()) dirs += " " + d;
    remark(nullptr, {}, "nvrtc: " + nvrtc.description() + ", CUDA headers from" + dirs);

    if (!cubins) {
        std::string arch = low.virtualArch();
        DeviceCompileResult r = nvrtc.compile(code.device, deviceName, nvrtcOptions(arch, false, opts), names);
        if (!r.ok) notCompiled(arch, r, opts);
        b.ptx = DeviceImage{low, true, r.ptx};
        b.loweredNames = r.loweredNames;
        b.log = r.log;
    } else {
        std::vector<DeviceCompileResult> results(b.targets.size());
        std::vector<std::thread> workers;
        for (size_t i = 0; i < b.targets.size(); ++i)
            workers.emplace_back([&, i] {
                results[i] = nvrtc.compile(code.device, deviceName, nvrtcOptions(b.targets[i].name, true, opts), names);
            });
        for (auto &w : workers) w.join();
        for (size_t i = 0; i < b.targets.size(); ++i) {
            auto &r = results[i];
            if (!r.ok) notCompiled(b.targets[i].name, r, opts);
            TILEC_ASSERT(!r.cubin.empty(), "NVRTC made no cubin for " + b.targets[i].name);
            TILEC_ASSERT(r.loweredNames == results[0].loweredNames, "kernel symbols differ between targets");
            b.cubins.push_back(DeviceImage{b.targets[i], false, std::move(r.cubin)});
            b.ptxPerTarget.push_back(std::move(r.ptx));
            b.ptxas.push_back(parsePtxasLog(r.log));
            b.log += r.log;
            if (b.targets[i].name == low.name) b.ptx = DeviceImage{low, true, b.ptxPerTarget.back()};
        }
        b.loweredNames = results[0].loweredNames;
    }
    TILEC_ASSERT(b.loweredNames.size() == code.kernels.size(), "NVRTC returned no symbol for some kernel");
    b.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return b;
}

std::string depfileText(const std::vector<std::string> &targets, const std::vector<std::string> &prerequisites,
                        size_t phonyFrom) {
    // What both make and ninja read: `\ ` for a space, `\#` for '#', `$$` for '$'.
    auto escape = [](const std::string &s) {
        std::string r;
        for (char c : s) {
            if (c == ' ' || c == '#') r += '\\';
            if (c == '$') r += '$';
            r += c;
        }
        return r;
    };
    std::string text;
    for (auto &t : targets) text += (text.empty() ? "" : " ") + escape(t);
    text += ":";
    for (auto &p : prerequisites) text += " " + escape(p);
    text += "\n";
    for (size_t i = phonyFrom; i < prerequisites.size(); ++i) text += "\n" + escape(prerequisites[i]) + ":\n";
    return text;
}

} // namespace tilec::driver
