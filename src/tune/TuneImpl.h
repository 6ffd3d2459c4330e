/// \file
/// Private to src/tune/: the steps of `tilec tune` — building one configuration into a loadable library
/// (TuneCompile.cpp) and running, checking and timing it on the GPU (TuneMeasure.cpp).
#pragma once

#include "tilec/DType.h"
#include "tilec/Tune.h"
#include "tune/CudaDriver.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tilec::tune {

/// What every configuration's build shares.
struct BuildSetup {
    std::string tilec;               ///< the executable
    std::string input;
    std::string kernel;
    std::vector<std::string> archs;
    std::vector<std::string> defines;
    std::vector<std::string> importDirs; ///< -I
    std::string dir;                 ///< private working directory
    std::string cc;                  ///< the C compiler command ($CC, else cc)
    std::string cudaInclude;         ///< the folder of cuda.h
};

/// One configuration built: a shared library with `tilec_tune_entry(void *const *args, CUstream)` that calls
/// the kernel's launch function (args[i]: the pointer of tensor i, else the address of the scalar's value).
struct Built {
    std::string status = "ok";       ///< "ok", "compile_error", "resource_limit"
    std::string detail;
    std::string library;             ///< the .so
    std::string header;              ///< the generated header's text
    double seconds = 0;
};

/// Builds configuration `index` (the kernel instantiated as `call`): tilec to binary-mode C, then the C
/// compiler to a shared library. Thread-safe (one process per step).
Built buildConfig(const BuildSetup &s, size_t index, const std::string &call);

/// A kernel parameter as the tuner allocates and passes it.
struct ParamSpec {
    std::string name;
    bool tensor = true;
    bool written = false;           ///< tensor: not const in the header
    DType dtype;
    std::vector<std::string> dims;  ///< tensor: per dimension, an integer or a T.dynamic symbol's name
    std::string cType;              ///< the header's type ("const void*", "int64_t", "float")
    bool dynamic = false;           ///< a T.dynamic size
};

/// An element of type `t` at `p` as a double (the check decodes float16, bfloat16 and float8 on the host).
double decodeElement(const unsigned char *p, DType t);

/// Elements of a tensor at a size point; throws std::invalid_argument for a symbol without a value.
int64_t elementCount(const ParamSpec &p, const std::map<std::string, int64_t> &size);

/// The GPU side: the device, its context and stream, the fill kernel, inputs per size point, the reference
/// outputs, and the runs.
class Bench {
  public:
    /// Throws std::runtime_error (no GPU, driver too old, the fill kernel does not build).
    Bench(const CudaDriver &cuda, int warmup, int reps, uint64_t seed, double tolerance);
    ~Bench();
    Environment environment() const { return env_; }
    int computeCapability() const { return env_.ccMajor * 10 + env_.ccMinor; }

    /// Allocates and fills the tensors of every point (inputs random, seeded per point).
    void prepare(const std::vector<ParamSpec> &params, const std::vector<std::map<std::string, int64_t>> &points);

    struct Outcome {
        std::string status;         ///< "ok", "launch_error", "resource_limit", "mismatch", "fault"
        std::string detail;
        double ms = 0;
    };
    using Entry = int (*)(void *const *, CUstream);
    using StatusString = const char *(*)(int);
    using LastError = int (*)();
    /// Runs `entry` at point `point`: once to check its outputs (the first configuration that works becomes
    /// the reference), then warm-up and timed runs with L2 flushed before each. After a "fault" the context
    /// is unusable and `dead()` is true.
    Outcome run(Entry entry, StatusString statusString, LastError lastError, size_t point, bool isReference);
    bool dead() const { return dead_; }
    bool hasReference(size_t point) const;

  private:
    struct Tensor;
    bool wait(std::string &why);
    void fill(CUdeviceptr p, int64_t n, DType t, uint64_t seed);

    const CudaDriver &cuda_;
    Environment env_;
    int warmup_, reps_;
    uint64_t seed_;
    double tolerance_;
    bool dead_ = false;
    CUcontext ctx_ = nullptr;
    CUstream stream_ = nullptr;
    CUmodule fillModule_ = nullptr;
    CUfunction fillFn_ = nullptr;
    CUdeviceptr flush_ = 0;
    size_t flushBytes_ = 0;
    std::vector<CUevent> events_;
    std::vector<ParamSpec> params_;
    struct Point;
    std::vector<Point> points_;
};

} // namespace tilec::tune
