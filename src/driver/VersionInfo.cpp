/// \file
/// `tilec --version`: the release and revision tilec was built from, and the CUDA pieces it finds on this machine
/// at run time (NVRTC, CUDA's headers, the driver), each with its version or why it is missing.
#include "tilec/Driver.h"

#include "tilec/DeviceCompiler.h"
#include "tune/CudaDriver.h"

#include <fstream>
#include <regex>
#include <sstream>

namespace tilec {

namespace {

/// CUDA_VERSION of `include/cuda.h` as "13.0" ("" when it cannot be read).
std::string headerVersion(const std::string &includeDir) {
    std::ifstream f(includeDir + "/cuda.h");
    std::string line;
    static const std::regex def(R"(^#define\s+CUDA_VERSION\s+(\d+))");
    std::smatch m;
    while (std::getline(f, line))
        if (std::regex_search(line, m, def)) {
            int v = std::stoi(m[1]);
            return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
        }
    return "";
}

} // namespace

std::string versionReport(const std::string &version, const std::string &revision) {
    std::ostringstream os;
    os << "tilec " << version;
    if (!revision.empty()) os << " (" << revision << ")";
    os << "\n";
    std::string searched;
    if (const Nvrtc *n = Nvrtc::get(&searched)) os << "NVRTC: " << n->description() << "\n";
    else os << "NVRTC: not found (searched: " << searched << ")\n";
    std::string include = findCudaIncludeDir(&searched);
    if (include.empty()) os << "CUDA headers: not found (searched: " << searched << ")\n";
    else {
        std::string v = headerVersion(include);
        os << "CUDA headers: " << include << (v.empty() ? "" : " (CUDA " + v + ")") << "\n";
    }
    std::string why;
    const tune::CudaDriver *d = tune::CudaDriver::get(&why);
    int dv = 0;
    if (d && d->driverGetVersion && d->driverGetVersion(&dv) == 0 && dv > 0)
        os << "CUDA driver: " << dv / 1000 << "." << dv % 1000 / 10 << "\n";
    else os << "CUDA driver: not found" << (why.empty() ? "" : " (" + why + ")") << "\n";
    return os.str();
}

} // namespace tilec
