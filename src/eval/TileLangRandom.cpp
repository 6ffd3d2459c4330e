/// \file
/// TileLang's random numbers: T.rng_init(seed, seq=None, off=0) starts the calling thread's generator, T.rng_rand()
/// and T.rng_rand_float(bit=32, dist="uniform") draw from it. TileLang prints cuRAND's device API
/// (curand_init, curand, curand_uniform, curand_normal) on one per-thread curandStatePhilox4_32_10_t; tilec calls
/// the same functions, so its numbers are cuRAND's, bit for bit. The state lives in a per-thread buffer of
/// uint32 words (the kernel's `tilec_rng` T.alloc_local buffer, allocated by the first T.rng_init) that small
/// device functions, emitted once before the kernels, copy into a curandStatePhilox4_32_10_t and back: the
/// buffer is tilec's, with a uint32 element type like any other, and the copies stay in registers.
#include "eval/TileLangRandom.h"

#include "tilec/LibraryCalls.h"

namespace tilec::eval::tl {

namespace {

/// The device functions. Words: ctr (4), output (4), key (2), STATE, the two Box-Muller flags, the float extra,
/// the double extra (2): every field of cuRAND's Philox state.
const char *const kDeviceSource = R"(#include <curand_kernel.h>
// tilec: T.rng_init / T.rng_rand / T.rng_rand_float on a per-thread state of 16 uint32 words (cuRAND's Philox)
__device__ __forceinline__ curandStatePhilox4_32_10_t tilec_rng_load(const unsigned *w) {
  curandStatePhilox4_32_10_t s;
  s.ctr = make_uint4(w[0], w[1], w[2], w[3]);
  s.output = make_uint4(w[4], w[5], w[6], w[7]);
  s.key = make_uint2(w[8], w[9]);
  s.STATE = w[10];
  s.boxmuller_flag = (int)w[11];
  s.boxmuller_flag_double = (int)w[12];
  s.boxmuller_extra = __uint_as_float(w[13]);
  s.boxmuller_extra_double = __hiloint2double((int)w[15], (int)w[14]);
  return s;
}
__device__ __forceinline__ void tilec_rng_store(unsigned *w, const curandStatePhilox4_32_10_t &s) {
  w[0] = s.ctr.x; w[1] = s.ctr.y; w[2] = s.ctr.z; w[3] = s.ctr.w;
  w[4] = s.output.x; w[5] = s.output.y; w[6] = s.output.z; w[7] = s.output.w;
  w[8] = s.key.x; w[9] = s.key.y; w[10] = s.STATE;
  w[11] = (unsigned)s.boxmuller_flag; w[12] = (unsigned)s.boxmuller_flag_double;
  w[13] = __float_as_uint(s.boxmuller_extra);
  w[14] = (unsigned)__double2loint(s.boxmuller_extra_double); w[15] = (unsigned)__double2hiint(s.boxmuller_extra_double);
}
__device__ __forceinline__ void tilec_rng_init(unsigned *w, unsigned long long seed, unsigned long long seq, unsigned long long off) {
  curandStatePhilox4_32_10_t s;
  curand_init(seed, seq, off, &s);
  tilec_rng_store(w, s);
}
__device__ __forceinline__ unsigned tilec_rng_rand(unsigned *w) {
  curandStatePhilox4_32_10_t s = tilec_rng_load(w); unsigned r = curand(&s); tilec_rng_store(w, s); return r;
}
__device__ __forceinline__ float tilec_rng_uniform(unsigned *w) {
  curandStatePhilox4_32_10_t s = tilec_rng_load(w); float r = curand_uniform(&s); tilec_rng_store(w, s); return r;
}
__device__ __forceinline__ float tilec_rng_normal(unsigned *w) {
  curandStatePhilox4_32_10_t s = tilec_rng_load(w); float r = curand_normal(&s); tilec_rng_store(w, s); return r;
}
__device__ __forceinline__ double tilec_rng_uniform_double(unsigned *w) {
  curandStatePhilox4_32_10_t s = tilec_rng_load(w); double r = curand_uniform_double(&s); tilec_rng_store(w, s); return r;
}
__device__ __forceinline__ double tilec_rng_normal_double(unsigned *w) {
  curandStatePhilox4_32_10_t s = tilec_rng_load(w); double r = curand_normal_double(&s); tilec_rng_store(w, s); return r;
}
)";

const char *const kStateName = "tilec_rng";

bool isState(const ir::Buffer &b) {
    return b->name.rfind(kStateName, 0) == 0 && b->scope == ir::Scope::Local && b->dtype == DType::UInt32 &&
           b->shape.size() == 1 && ir::constInt(b->shape[0]) == std::optional<int64_t>(kRngStateWords);
}

/// The address of the kernel's generator state; allocated (and the device functions added) when `create`.
std::optional<ir::Expr> stateAddress(Interp &in, TraceState &t, const SourceRange &at, bool create) {
    for (auto &b : t.kernel->allocs)
        if (isState(b)) return passes::addressOf(b, {ir::intImm(0)});
    if (!create) return std::nullopt;
    auto b = ir::makeBuffer(uniqueBufferName(*t.kernel, kStateName), ir::Scope::Local, DType::UInt32,
                            {ir::intImm(kRngStateWords)}, at);
    t.kernel->allocs.push_back(b);
    auto &srcs = t.kernel->importedSources;
    if (std::find(srcs.begin(), srcs.end(), kDeviceSource) == srcs.end()) srcs.push_back(kDeviceSource);
    (void)in;
    return passes::addressOf(b, {ir::intImm(0)});
}

ir::Expr u64(Interp &in, const Arg &a, const char *what) {
    return ir::cast(DType::UInt64, intExprArg(in, a, what), a.range);
}

/// T.rng_init(seed, seq=None, off=0, generator="curandStatePhilox4_32_10_t"): seq defaults to the thread's
/// global index along x (threadIdx.x + blockIdx.x * blockDim.x), as TileLang's.
Value rngInit(Interp &in, CallArgs &args) {
    auto a = bindArgs(in, args, "T.rng_init", {"seed", "seq?", "off?", "generator?"});
    TraceState &t = requireLaunch(in, args, "T.rng_init");
    if (a[3]) {
        std::string g = in.toStr(*a[3], "generator");
        if (g != "curandStatePhilox4_32_10_t")
            in.fail(a[3]->range, "T.rng_init: tilec implements the generator curandStatePhilox4_32_10_t (TileLang's default), not '" +
                                     g.substr(0, 40) + "'");
    }
    ir::Expr seq;
    if (a[1] && !a[1]->value.is(VK::None)) {
        seq = u64(in, *a[1], "seq");
    } else {
        int64_t extent = t.threadDims.empty() ? t.kernel->threads : t.threadDims[0];
        ir::Expr tx = extent == 1 ? ir::intImm(0) : threadCoordinate(t, 0, args.call);
        ir::Expr id = ir::binary(ir::BinaryOp::Add, tx,
                                 ir::binary(ir::BinaryOp::Mul, t.blockCoords[0] ? t.blockCoords[0] : t.kernel->blockIdx[0], ir::intImm(extent), args.call), args.call);
        seq = ir::cast(DType::UInt64, id, args.call);
    }
    ir::Expr off = a[2] ? u64(in, *a[2], "off") : ir::intImm(0, DType::UInt64);
    ir::Expr state = *stateAddress(in, t, args.call, true);
    in.emit(ir::Evaluate::make(ir::Call::make(DType::Void, "extern:tilec_rng_init", {state, u64(in, *a[0], "seed"), seq, off},
                                              args.call),
                               args.call));
    return Value::none();
}

ir::Expr draw(Interp &in, CallArgs &args, const std::string &fname, DType type, const char *fn) {
    TraceState &t = requireLaunch(in, args, fname);
    auto state = stateAddress(in, t, args.call, false);
    if (!state) in.fail(args.call, fname + " draws from the thread's generator, which T.rng_init starts: call it first in this kernel");
    return ir::Call::make(type, std::string("extern:") + fn, {*state}, args.call);
}

} // namespace

void addRandomPrimitives(Attrs &attrs) {
    def(attrs, "rng_init", rngInit);
    def(attrs, "rng_rand", [](Interp &in, CallArgs &args) {
        bindArgs(in, args, "T.rng_rand", {});
        return Value::ofExpr(draw(in, args, "T.rng_rand", DType::UInt32, "tilec_rng_rand"));
    });
    def(attrs, "rng_rand_float", [](Interp &in, CallArgs &args) {
        auto a = bindArgs(in, args, "T.rng_rand_float", {"bit?", "dist?"});
        int64_t bit = a[0] ? constIntArg(in, *a[0], "bit") : 32;
        if (bit != 32 && bit != 64) in.fail(a[0]->range, "T.rng_rand_float: bit must be 32 or 64, got " + std::to_string(bit));
        std::string dist = a[1] ? in.toStr(*a[1], "dist") : "uniform";
        if (dist != "uniform" && dist != "normal")
            in.fail(a[1]->range, "T.rng_rand_float: dist must be \"uniform\" or \"normal\", got '" + dist.substr(0, 40) + "'");
        std::string fn = "tilec_rng_" + dist + (bit == 64 ? "_double" : "");
        return Value::ofExpr(draw(in, args, "T.rng_rand_float", bit == 64 ? DType::Float64 : DType::Float32, fn.c_str()));
    });
}

} // namespace tilec::eval::tl
