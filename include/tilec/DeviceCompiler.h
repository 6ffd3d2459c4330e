/// \file
/// In-process compilation of generated device code to PTX and cubins through NVRTC.
///
/// libnvrtc is opened with dlopen the first time it is needed, so tilec runs (and writes `.cu` files) on
/// machines without it; only the outputs that need NVRTC fail there, with a message naming the places searched.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace tilec {

/// One NVRTC compilation.
struct DeviceCompileResult {
    bool ok = false;
    std::string log;                      ///< NVRTC's log: compiler messages, and ptxas's report with -v
    std::string ptx;                      ///< without the terminating NUL
    std::string cubin;                    ///< empty when compiled for a virtual architecture (compute_XX)
    std::vector<std::string> loweredNames; ///< per name expression, the symbol it became
};

/// What ptxas reports for one entry function (`-Xptxas -v` in NVRTC's log).
struct PtxasFunctionInfo {
    std::string function;    ///< the lowered (mangled) name
    std::string target;      ///< "sm_90a"
    int registers = -1;      ///< -1 when the log has no figure
    int64_t spillStores = 0, spillLoads = 0, stackFrame = 0;
    int64_t staticShared = 0; ///< bytes of static shared memory (`smem`)
    int barriers = -1;
};

/// Reads ptxas's report out of an NVRTC log. Lines it does not understand are skipped.
std::vector<PtxasFunctionInfo> parsePtxasLog(const std::string &log);

class Nvrtc {
  public:
    /// The process-wide NVRTC, loaded on the first call; nullptr when no library was found. `searched`
    /// (optional) receives the places tried, for the error message.
    static const Nvrtc *get(std::string *searched = nullptr);

    /// The library's path as opened and its version, e.g. "libnvrtc.so.13 (13.0)".
    const std::string &description() const { return description_; }
    /// Directories with the CUDA headers the generated code includes (cuda_fp16.h, CCCL); empty when none
    /// was found, and then only code without those headers compiles.
    const std::vector<std::string> &includeDirs() const { return includeDirs_; }

    /// Compiles `source` (named `name` in messages) with `options` (NVRTC's spelling: --gpu-architecture=sm_90a,
    /// -lineinfo, --ptxas-options=-v). `nameExpressions` (e.g. "&kernel") are resolved to lowered names.
    /// Thread-safe: different calls may run at the same time.
    DeviceCompileResult compile(const std::string &source, const std::string &name,
                                const std::vector<std::string> &options,
                                const std::vector<std::string> &nameExpressions) const;

    struct Api;
    ~Nvrtc();

  private:
    Nvrtc() = default;
    std::unique_ptr<Api> api_;
    std::string description_;
    std::vector<std::string> includeDirs_;
};

/// CUDA's include directory (the one holding cuda.h): $CUDA_HOME/include, $CUDA_PATH/include, the one beside
/// libnvrtc, /usr/local/cuda/include; empty when none exists. `searched` receives the places tried.
std::string findCudaIncludeDir(std::string *searched = nullptr);

} // namespace tilec
