/// \file
/// `tilec tune` on the GPU (src/tune/TuneImpl.h): the device's figures, random inputs made on the device by a
/// small NVRTC-compiled kernel, the check of every output element against the reference configuration's,
/// and the timing (CUDA events, warm-up, L2 flushed before every timed run, median).
#include "tune/TuneImpl.h"

#include "tilec/DeviceCompiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace tilec::tune {

namespace {

/// Fills n elements with uniform values from a counter-based hash: floats in [-1, 1), integers in [-4, 4)
/// (unsigned in [0, 8)), bools 0/1. `format` is the DType's kind.
const char *const kFillSource = R"cu(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
extern "C" __global__ void tilec_tune_fill(void *p, unsigned long long n, int format, unsigned long long seed) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long h = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
        h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
        h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
        h ^= h >> 31;
        float u = (float)(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
        int k = (int)(h >> 61) - 4;
        switch (format) {
        case @Bool@: ((unsigned char *)p)[i] = (unsigned char)(h >> 63); break;
        case @Int8@: ((signed char *)p)[i] = (signed char)k; break;
        case @Int16@: ((short *)p)[i] = (short)k; break;
        case @Int32@: ((int *)p)[i] = k; break;
        case @Int64@: ((long long *)p)[i] = k; break;
        case @UInt8@: ((unsigned char *)p)[i] = (unsigned char)(k + 4); break;
        case @UInt16@: ((unsigned short *)p)[i] = (unsigned short)(k + 4); break;
        case @UInt32@: ((unsigned *)p)[i] = (unsigned)(k + 4); break;
        case @UInt64@: ((unsigned long long *)p)[i] = (unsigned long long)(k + 4); break;
        case @Float16@: ((__half *)p)[i] = __float2half_rn(u); break;
        case @BFloat16@: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(u); break;
        case @Float32@: ((float *)p)[i] = u; break;
        case @Float64@: ((double *)p)[i] = (double)u; break;
        case @Float8E4M3@: ((__nv_fp8_e4m3 *)p)[i] = __nv_fp8_e4m3(u); break;
        case @Float8E5M2@: ((__nv_fp8_e5m2 *)p)[i] = __nv_fp8_e5m2(u); break;
        }
    }
}
)cu";

std::string fillSource() {
    std::string s = kFillSource;
    const std::pair<const char *, DType::Kind> kinds[] = {
        {"@Bool@", DType::Bool},         {"@Int8@", DType::Int8},       {"@Int16@", DType::Int16},
        {"@Int32@", DType::Int32},       {"@Int64@", DType::Int64},     {"@UInt8@", DType::UInt8},
        {"@UInt16@", DType::UInt16},     {"@UInt32@", DType::UInt32},   {"@UInt64@", DType::UInt64},
        {"@Float16@", DType::Float16},   {"@BFloat16@", DType::BFloat16}, {"@Float32@", DType::Float32},
        {"@Float64@", DType::Float64},   {"@Float8E4M3@", DType::Float8E4M3}, {"@Float8E5M2@", DType::Float8E5M2}};
    for (auto &[key, kind] : kinds) s.replace(s.find(key), std::strlen(key), std::to_string((int)kind));
    return s;
}

} // namespace

double decodeElement(const unsigned char *p, DType t) {
    auto smallFloat = [](unsigned bits, int expBits, int manBits, bool finiteOnly) {
        unsigned sign = bits >> (expBits + manBits), e = (bits >> manBits) & ((1u << expBits) - 1),
                 m = bits & ((1u << manBits) - 1);
        int bias = (1 << (expBits - 1)) - 1;
        double v;
        if (e == (1u << expBits) - 1 && !finiteOnly) v = m ? NAN : INFINITY;
        else if (finiteOnly && e == (1u << expBits) - 1 && m == (1u << manBits) - 1) v = NAN; // e4m3: S.1111.111
        else if (e == 0) v = std::ldexp((double)m, 1 - bias - manBits);
        else v = std::ldexp((double)(m | (1u << manBits)), (int)e - bias - manBits);
        return sign ? -v : v;
    };
    switch (t.kind) {
    case DType::Bool: case DType::UInt8: return *p;
    case DType::Int8: return (signed char)*p;
    case DType::Int16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::UInt16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::UInt32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::Int64: { int64_t v; std::memcpy(&v, p, 8); return (double)v; }
    case DType::UInt64: { uint64_t v; std::memcpy(&v, p, 8); return (double)v; }
    case DType::Float16: { uint16_t v; std::memcpy(&v, p, 2); return smallFloat(v, 5, 10, false); }
    case DType::BFloat16: { uint16_t v; std::memcpy(&v, p, 2); float f; uint32_t w = (uint32_t)v << 16; std::memcpy(&f, &w, 4); return f; }
    case DType::Float32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::Float64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::Float8E4M3: return smallFloat(*p, 4, 3, true);
    case DType::Float8E5M2: return smallFloat(*p, 5, 2, false);
    case DType::Void: break;
    }
    return 0;
}

namespace {

/// The unit roundoff of an output type, for the check's tolerance (0 for integers: exact).
double roundoff(DType t) {
    switch (t.kind) {
    case DType::Float16: return std::ldexp(1.0, -11);
    case DType::BFloat16: return std::ldexp(1.0, -8);
    case DType::Float32: return std::ldexp(1.0, -16); // summation order differs between tile shapes
    case DType::Float64: return std::ldexp(1.0, -40);
    case DType::Float8E4M3: return std::ldexp(1.0, -4);
    case DType::Float8E5M2: return std::ldexp(1.0, -3);
    default: return 0;
    }
}

} // namespace

int64_t elementCount(const ParamSpec &p, const std::map<std::string, int64_t> &size) {
    int64_t n = 1;
    for (auto &d : p.dims) {
        int64_t v;
        if (!d.empty() && (std::isdigit((unsigned char)d[0]))) v = std::stoll(d);
        else if (auto it = size.find(d); it != size.end()) v = it->second;
        else throw std::invalid_argument("tensor " + p.name + " has the T.dynamic size '" + d + "': give it with --sizes");
        n *= v;
    }
    return n;
}

struct Bench::Tensor {
    CUdeviceptr ptr = 0;
    int64_t elements = 0;
    std::vector<unsigned char> reference; ///< written tensors: the reference configuration's output
};

struct Bench::Point {
    std::vector<Tensor> tensors;      ///< per parameter (scalars: empty)
    std::vector<int64_t> scalars;     ///< per parameter: storage for a scalar's value
    std::vector<void *> args;
    bool referenced = false;
};

Bench::Bench(const CudaDriver &cuda, int warmup, int reps, uint64_t seed, double tolerance)
    : cuda_(cuda), warmup_(warmup), reps_(reps), seed_(seed), tolerance_(tolerance) {
    auto check = [&](const char *call, CUresult r) {
        if (r != kCudaSuccess) throw std::runtime_error(cuda_.describe(call, r));
    };
    check("cuInit", cuda_.init(0));
    int count = 0;
    check("cuDeviceGetCount", cuda_.deviceGetCount(&count));
    if (count < 1) throw std::runtime_error("the CUDA driver sees no device");
    CUdevice dev = 0;
    check("cuDeviceGet", cuda_.deviceGet(&dev, 0));
    char name[256] = {0};
    check("cuDeviceGetName", cuda_.deviceGetName(name, sizeof name - 1, dev));
    env_.gpuName = name;
    int l2 = 0;
    check("cuDeviceGetAttribute", cuda_.deviceGetAttribute(&env_.smCount, kAttrMultiprocessorCount, dev));
    check("cuDeviceGetAttribute", cuda_.deviceGetAttribute(&env_.ccMajor, kAttrComputeCapabilityMajor, dev));
    check("cuDeviceGetAttribute", cuda_.deviceGetAttribute(&env_.ccMinor, kAttrComputeCapabilityMinor, dev));
    cuda_.deviceGetAttribute(&env_.smClockKHz, kAttrClockRate, dev);
    cuda_.deviceGetAttribute(&env_.memoryClockKHz, kAttrMemoryClockRate, dev);
    cuda_.deviceGetAttribute(&l2, kAttrL2CacheSize, dev);
    check("cuDriverGetVersion", cuda_.driverGetVersion(&env_.driverVersion));
    check("cuDevicePrimaryCtxRetain", cuda_.primaryCtxRetain(&ctx_, dev));
    check("cuCtxSetCurrent", cuda_.ctxSetCurrent(ctx_));
    check("cuStreamCreate", cuda_.streamCreate(&stream_, 1 /* non-blocking */));
    events_.resize(2 * (size_t)std::max(reps_, 1));
    for (auto &e : events_) check("cuEventCreate", cuda_.eventCreate(&e, 0));
    flushBytes_ = std::max<size_t>(2 * (size_t)l2, 64u << 20);
    check("cuMemAlloc", cuda_.memAlloc(&flush_, flushBytes_));

    std::string why;
    const Nvrtc *nvrtc = Nvrtc::get(&why);
    if (!nvrtc) throw std::runtime_error("NVRTC not found (searched: " + why + ")");
    std::string arch = "--gpu-architecture=sm_" + std::to_string(computeCapability());
    DeviceCompileResult r = nvrtc->compile(fillSource(), "tilec_tune_fill.cu", {arch, "-std=c++17"}, {});
    if (!r.ok || r.cubin.empty()) throw std::runtime_error("the input generator does not compile:\n" + r.log);
    check("cuModuleLoadData", cuda_.moduleLoadData(&fillModule_, r.cubin.data()));
    check("cuModuleGetFunction", cuda_.moduleGetFunction(&fillFn_, fillModule_, "tilec_tune_fill"));
    env_.nvrtcVersion = nvrtc->description();
}

Bench::~Bench() {
    if (dead_) return; // a faulted context refuses everything; the process ends soon after
    for (auto &p : points_)
        for (auto &t : p.tensors)
            if (t.ptr) cuda_.memFree(t.ptr);
    if (flush_) cuda_.memFree(flush_);
    if (fillModule_) cuda_.moduleUnload(fillModule_);
}

void Bench::fill(CUdeviceptr p, int64_t n, DType t, uint64_t seed) {
    unsigned long long count = (unsigned long long)n;
    int format = (int)t.kind;
    unsigned long long s = seed;
    void *args[] = {&p, &count, &format, &s};
    unsigned blocks = (unsigned)std::min<int64_t>((n + 255) / 256, 65535);
    CUresult r = cuda_.launchKernel(fillFn_, std::max(blocks, 1u), 1, 1, 256, 1, 1, 0, stream_, args, nullptr);
    if (r != kCudaSuccess) throw std::runtime_error(cuda_.describe("cuLaunchKernel (input generator)", r));
}

bool Bench::wait(std::string &why) {
    // A watchdog instead of a blocking synchronize: a configuration that hangs must not hang the tuner.
    auto t0 = std::chrono::steady_clock::now();
    for (;;) {
        CUresult r = cuda_.streamQuery(stream_);
        if (r == kCudaSuccess) return true;
        if (r != kCudaNotReady) {
            why = cuda_.describe("the kernel", r);
            return false;
        }
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(30)) {
            why = "did not finish within 30 s";
            return false;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

void Bench::prepare(const std::vector<ParamSpec> &params, const std::vector<std::map<std::string, int64_t>> &points) {
    params_ = params;
    points_.resize(points.size());
    for (size_t k = 0; k < points.size(); ++k) {
        Point &pt = points_[k];
        pt.tensors.resize(params.size());
        pt.scalars.assign(params.size(), 0);
        pt.args.assign(params.size(), nullptr);
        for (size_t i = 0; i < params.size(); ++i) {
            const ParamSpec &p = params[i];
            if (p.tensor) {
                Tensor &t = pt.tensors[i];
                t.elements = elementCount(p, points[k]);
                size_t bytes = (size_t)std::max<int64_t>(t.elements, 1) * p.dtype.bytes();
                CUresult r = cuda_.memAlloc(&t.ptr, bytes);
                if (r != kCudaSuccess) throw std::runtime_error(cuda_.describe("cuMemAlloc (tensor " + p.name + ")", r));
                fill(t.ptr, t.elements, p.dtype, seed_ + 0x1000 * k + i);
                pt.args[i] = reinterpret_cast<void *>(t.ptr);
                continue;
            }
            // Scalars: a T.dynamic size takes the point's value, the others 1 in their type.
            void *slot = &pt.scalars[i];
            if (p.dynamic) {
                int64_t v = points[k].at(p.name);
                std::memcpy(slot, &v, 8);
            } else if (p.cType == "float") {
                float v = 1;
                std::memcpy(slot, &v, 4);
            } else if (p.cType == "double") {
                double v = 1;
                std::memcpy(slot, &v, 8);
            } else if (p.cType == "bool") {
                bool v = true;
                std::memcpy(slot, &v, 1);
            } else { // integers of every width: 1 in the low bytes (little-endian)
                int64_t v = 1;
                std::memcpy(slot, &v, 8);
            }
            pt.args[i] = slot;
        }
    }
    std::string why;
    if (!wait(why)) throw std::runtime_error("making the inputs: " + why);
}

bool Bench::hasReference(size_t point) const { return points_.at(point).referenced; }

Bench::Outcome Bench::run(Entry entry, StatusString statusString, LastError lastError, size_t point, bool isReference) {
    Point &pt = points_.at(point);
    Outcome o;
    auto launchFailed = [&](int status) {
        int cudaErr = lastError ? lastError() : 0;
        o.status = status == 7 /* TILEC_ERROR_SHARED_MEMORY */ || cudaErr == 701 /* LAUNCH_OUT_OF_RESOURCES */
                       ? "resource_limit" : "launch_error";
        o.detail = std::string(statusString ? statusString(status) : "error") +
                   (cudaErr ? " (CUDA error " + std::to_string(cudaErr) + ")" : "");
        return o;
    };
    // 1. the check: outputs poisoned (0xFF: NaN in every float format), one run, every element compared.
    for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].tensor && params_[i].written)
            cuda_.memsetD8Async(pt.tensors[i].ptr, 0xFF, (size_t)pt.tensors[i].elements * params_[i].dtype.bytes(), stream_);
    if (int s = entry(pt.args.data(), stream_)) return launchFailed(s);
    std::string why;
    if (!wait(why)) {
        dead_ = true;
        o.status = "fault";
        o.detail = why;
        return o;
    }
    double worst = 0, worstTol = 0;
    int64_t bad = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
        const ParamSpec &p = params_[i];
        if (!p.tensor || !p.written) continue;
        Tensor &t = pt.tensors[i];
        size_t bytes = (size_t)t.elements * p.dtype.bytes();
        std::vector<unsigned char> out(bytes);
        CUresult r = cuda_.memcpyDtoH(out.data(), t.ptr, bytes);
        if (r != kCudaSuccess) {
            dead_ = true;
            return Outcome{"fault", cuda_.describe("cuMemcpyDtoH", r), 0};
        }
        if (isReference) {
            for (int64_t e = 0; e < t.elements; ++e)
                if (std::isnan(decodeElement(&out[e * p.dtype.bytes()], p.dtype)))
                    return Outcome{"mismatch", "output " + p.name + " has NaN (unwritten) elements", 0};
            t.reference = std::move(out);
            continue;
        }
        double meanAbs = 0;
        for (int64_t e = 0; e < t.elements; ++e) meanAbs += std::fabs(decodeElement(&t.reference[e * p.dtype.bytes()], p.dtype));
        meanAbs /= (double)std::max<int64_t>(t.elements, 1);
        double u = tolerance_ > 0 ? tolerance_ : 8 * roundoff(p.dtype);
        for (int64_t e = 0; e < t.elements; ++e) {
            double ref = decodeElement(&t.reference[e * p.dtype.bytes()], p.dtype), x = decodeElement(&out[e * p.dtype.bytes()], p.dtype);
            double err = std::fabs(x - ref), tol = u * (std::fabs(ref) + meanAbs);
            if (!(err <= tol)) ++bad; // NaN counts as wrong
            if (!(err <= worst)) worst = err, worstTol = tol;
        }
        if (bad)
            return Outcome{"mismatch",
                           std::to_string(bad) + " of " + std::to_string(t.elements) + " elements of " + p.name +
                               " differ from the reference (largest error " + std::to_string(worst) + ", allowed " +
                               std::to_string(worstTol) + ")",
                           0};
    }
    if (isReference) pt.referenced = true;
    // 2. warm-up, then timed runs, each after an L2 flush.
    for (int w = 0; w < warmup_; ++w)
        if (int s = entry(pt.args.data(), stream_)) return launchFailed(s);
    for (int r = 0; r < reps_; ++r) {
        cuda_.memsetD8Async(flush_, (unsigned char)r, flushBytes_, stream_);
        cuda_.eventRecord(events_[2 * r], stream_);
        if (int s = entry(pt.args.data(), stream_)) return launchFailed(s);
        cuda_.eventRecord(events_[2 * r + 1], stream_);
    }
    if (!wait(why)) {
        dead_ = true;
        return Outcome{"fault", why, 0};
    }
    std::vector<double> ms;
    for (int r = 0; r < reps_; ++r) {
        float t = 0;
        if (cuda_.eventElapsedTime(&t, events_[2 * r], events_[2 * r + 1]) == kCudaSuccess) ms.push_back(t);
    }
    if (ms.empty()) return Outcome{"launch_error", "no timing (cuEventElapsedTime failed)", 0};
    std::sort(ms.begin(), ms.end());
    o.status = "ok";
    o.ms = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
    o.detail = isReference ? "reference" : "largest error " + std::to_string(worst);
    char range[96];
    std::snprintf(range, sizeof range, "; %zu runs, %.4f to %.4f ms", ms.size(), ms.front(), ms.back());
    o.detail += range;
    return o;
}

} // namespace tilec::tune
