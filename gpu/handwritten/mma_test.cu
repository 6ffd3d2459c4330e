/// \file
/// Standalone test of the tensor-core device library (stdlib/tilec/swizzle.cuh, cp_async.cuh, mma.cuh and
/// mma_frag.cuh): the swizzle's properties on the host, copy_g2s's layout and zero fill, gemm_ss for every
/// supported type combination and transpose against a float64 reference, and gemm_rs (FlashAttention's
/// probs @ V).
/// `mma_test` runs the tests (exit 1 on any failure); `mma_test bench` times gemm_ss on tiles already in
/// shared memory (mma_test_bench.cuh), the inner loop's ceiling. Built and run by mma_test.sh.
///
/// The stdlib files are included in name order, the order in which tilec pastes them into generated code,
/// so this also checks that they compile in that order.
#include "../../stdlib/tilec/cp_async.cuh"
#include "../../stdlib/tilec/memory.cuh"
#include "../../stdlib/tilec/mma.cuh"
#include "../../stdlib/tilec/mma_frag.cuh"
#include "../../stdlib/tilec/swizzle.cuh"
#include "../../stdlib/tilec/types.cuh"

#include "mma_test_util.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace tilec;
using namespace mma_test;

// ---- swizzle, on the host -------------------------------------------------------------------------------

/// The swizzle of the specification, written the long way.
template <int Cols, int EB> int swz_spec(int offset) {
    const int E = 16 / EB, row = offset / Cols, col = offset % Cols, rowBytes = Cols * EB;
    if (16 % EB != 0 || Cols % E != 0)
        return offset;
    int f = 0;
    if (rowBytes % 128 == 0)
        f = row & 7;
    else if (rowBytes == 64)
        f = (row >> 1) & 3;
    else if (rowBytes == 32)
        f = (row >> 2) & 1;
    return row * Cols + (col ^ (f * E));
}

/// swz against the specification over 64 rows; a bijection of each row; 16-byte chunks stay whole; and,
/// when active, 8 aligned rows at one logical chunk (an ldmatrix) and 8 consecutive chunks (a warp's
/// cp.async writes) fall into 8 different 16-byte bank groups.
template <int Cols, int EB> void check_swizzle(Summary &sum) {
    constexpr int Rows = 64, E = 16 / EB;
    bool ok = true;
    std::vector<int> seen(Rows * Cols, 0);
    for (int o = 0; o < Rows * Cols; ++o) {
        const int p = swz<Cols, EB>(o);
        ok &= p == swz_spec<Cols, EB>(o) && p / Cols == o / Cols;
        if (p >= 0 && p < Rows * Cols)
            seen[p]++;
        if (swz_active<Cols, EB>() && o % E != 0)
            ok &= p == swz<Cols, EB>(o - o % E) + o % E;
    }
    for (int v : seen)
        ok &= v == 1;
    static_assert(swz<Cols, EB>(0) == 0, "swz must be usable in constant expressions");
    if (swz_active<Cols, EB>()) {
        for (int r0 = 0; r0 < Rows; r0 += 8)
            for (int c = 0; c < Cols / E; ++c) {
                int groups = 0;
                for (int i = 0; i < 8; ++i)
                    groups |= 1 << ((swz<Cols, EB>((r0 + i) * Cols + c * E) * EB / 16) % 8);
                ok &= groups == 0xff;
            }
        for (int chunk = 0; chunk < Rows * Cols / E; chunk += 8) {
            int groups = 0;
            for (int i = 0; i < 8; ++i)
                groups |= 1 << ((swz<Cols, EB>((chunk + i) * E) * EB / 16) % 8);
            ok &= groups == 0xff;
        }
    }
    sum.report(ok, "swizzle Cols=%d elem=%dB active=%d", Cols, EB, (int)swz_active<Cols, EB>());
}

// ---- copy_g2s --------------------------------------------------------------------------------------------

template <int Rows, int Cols, int Vec, int Threads, bool Swizzle, class T>
__global__ void copy_kernel(const T *g, long long ldg, int validRows, int validCols, T *out) {
    extern __shared__ __align__(128) unsigned char smem[];
    T *s = reinterpret_cast<T *>(smem);
    for (int i = threadIdx.x; i < Rows * Cols * (int)sizeof(T); i += blockDim.x)
        smem[i] = 0xff;
    __syncthreads();
    copy_g2s<Rows, Cols, Vec, Threads, Swizzle>(s, g, ldg, validRows, validCols);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    for (int i = threadIdx.x; i < Rows * Cols; i += blockDim.x)
        out[i] = s[i];
}

/// Copies a tile with a block of Threads + 32 threads (the extra warp must do nothing) and checks every
/// element of shared memory against the source, through the swizzle.
template <int Rows, int Cols, int Vec, int Threads, bool Swizzle, class T>
void check_copy(Summary &sum, Rng &rng, int validRows, int validCols) {
    const long long ldg = Cols + 16 / (int)sizeof(T) + Vec;
    std::vector<T> g((size_t)(Rows * ldg));
    for (auto &x : g)
        x = random_value<T>(rng);
    DevBuf<T> dg(g), dout(Rows * Cols);
    auto kern = copy_kernel<Rows, Cols, Vec, Threads, Swizzle, T>;
    const int shared = Rows * Cols * (int)sizeof(T);
    cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    kern<<<1, Threads + 32, shared>>>(dg.p, ldg, validRows, validCols, dout.p);
    std::vector<T> out = dout.get();
    int bad = 0;
    for (int r = 0; r < Rows; ++r)
        for (int c = 0; c < Cols; ++c) {
            const int p = Swizzle ? swz<Cols, sizeof(T)>(r * Cols + c) : r * Cols + c;
            const double want = r < validRows && c < validCols ? to_double(g[r * ldg + c]) : 0.0;
            if (!(to_double(out[p]) == want))
                bad++;
        }
    sum.report(bad == 0 && last_error_ok(),
               "copy_g2s %s %dx%d vec=%d threads=%d swizzle=%d valid=%dx%d (%d bad)", type_name<T>(), Rows,
               Cols, Vec, Threads, (int)Swizzle, validRows, validCols, bad);
}

// ---- gemm_ss ---------------------------------------------------------------------------------------------

/// Copies A and B into shared memory (over poisoned contents, so a missing zero fill shows), runs gemm_ss
/// on accumulators loaded from Cin and writes them to Cout, both in the accumulator register order.
template <int M, int N, int K, int WM, int WN, bool TrA, bool TrB, int VecA, int VecB, class TA, class TB,
          class TC>
__global__ void gemm_ss_kernel(const TA *gA, long long ldA, int vrA, int vcA, const TB *gB, long long ldB,
                               int vrB, int vcB, const TC *Cin, TC *Cout) {
    constexpr int Threads = 32 * WM * WN;
    constexpr int AR = TrA ? K : M, AC = TrA ? M : K, BR = TrB ? N : K, BC = TrB ? K : N;
    constexpr int BOff = (AR * AC * (int)sizeof(TA) + 127) / 128 * 128;
    extern __shared__ __align__(128) unsigned char smem[];
    TA *As = reinterpret_cast<TA *>(smem);
    TB *Bs = reinterpret_cast<TB *>(smem + BOff);
    for (int i = threadIdx.x; i < BOff + BR * BC * (int)sizeof(TB); i += blockDim.x)
        smem[i] = 0xff;
    __syncthreads();
    copy_g2s<AR, AC, VecA, Threads, true>(As, gA, ldA, vrA, vcA);
    copy_g2s<BR, BC, VecB, Threads, true>(Bs, gB, ldB, vrB, vcB);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    constexpr int Regs = (M / WM / 16) * (N / WN / 8) * 4;
    TC acc[Regs];
    const AccMap<M, N, WM, WN> map;
#pragma unroll
    for (int i = 0; i < Regs; ++i)
        acc[i] = Cin[map.index(i)];
    if constexpr (kDeviceHasFp8 || !(is_fp8<TA>::value || is_fp8<TB>::value))
        gemm_ss<M, N, K, WM, WN, TrA, TrB>(As, Bs, acc);
    else
        __trap();
#pragma unroll
    for (int i = 0; i < Regs; ++i)
        Cout[map.index(i)] = acc[i];
}

template <class TA, class TB, class TC, int M, int N, int K, int WM, int WN, bool TrA, bool TrB, int VecBytes>
void check_gemm_ss(Summary &sum, Rng &rng, bool partial) {
    if ((is_fp8<TA>::value || is_fp8<TB>::value) && sum.arch < 890) {
        sum.skip("gemm_ss %s*%s->%s: float8 needs sm_89 (this build is sm_%d)", type_name<TA>(),
                 type_name<TB>(), type_name<TC>(), sum.arch / 10);
        return;
    }
    constexpr int AR = TrA ? K : M, AC = TrA ? M : K, BR = TrB ? N : K, BC = TrB ? K : N;
    constexpr int VecA = std::min(VecBytes / (int)sizeof(TA), AC),
                  VecB = std::min(VecBytes / (int)sizeof(TB), BC);
    const Operand<TA> a(rng, AR, AC, VecA, partial);
    const Operand<TB> b(rng, BR, BC, VecB, partial);
    std::vector<TC> cin(M * N);
    for (auto &x : cin)
        x = random_value<TC>(rng);
    DevBuf<TA> da(a.data);
    DevBuf<TB> db(b.data);
    DevBuf<TC> dcin(cin), dcout(M * N);
    auto kern = gemm_ss_kernel<M, N, K, WM, WN, TrA, TrB, VecA, VecB, TA, TB, TC>;
    const int shared = (AR * AC * (int)sizeof(TA) + 127) / 128 * 128 + BR * BC * (int)sizeof(TB);
    cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    kern<<<1, 32 * WM * WN, shared>>>(da.p, a.ld, a.validRows, a.validCols, db.p, b.ld, b.validRows,
                                      b.validCols, dcin.p, dcout.p);
    const std::vector<TC> out = dcout.get();
    Checker chk(tolerance<TA, TC>());
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double ref = to_double(cin[m * N + n]), mag = std::fabs(ref);
            for (int k = 0; k < K; ++k) {
                const double p = (TrA ? a.at(k, m) : a.at(m, k)) * (TrB ? b.at(n, k) : b.at(k, n));
                ref += p;
                mag += std::fabs(p);
            }
            chk.check(m, n, to_double(out[m * N + n]), ref, mag);
        }
    sum.report(
        chk.ok() && last_error_ok(),
        "gemm_ss %s*%s->%s %c%c %dx%dx%d warps=%dx%d vec=%dB A valid %dx%d of %dx%d, B %dx%d of %dx%d: %s",
        type_name<TA>(), type_name<TB>(), type_name<TC>(), TrA ? 'T' : 'N', TrB ? 'T' : 'N', M, N, K, WM, WN,
        VecBytes, a.validRows, a.validCols, AR, AC, b.validRows, b.validCols, BR, BC, chk.text().c_str());
}

/// Every transpose combination of one shape.
template <class TA, class TB, class TC, int M, int N, int K, int WM, int WN, int VecBytes>
void check_transposes(Summary &sum, Rng &rng, bool partial) {
    check_gemm_ss<TA, TB, TC, M, N, K, WM, WN, false, false, VecBytes>(sum, rng, partial);
    check_gemm_ss<TA, TB, TC, M, N, K, WM, WN, false, true, VecBytes>(sum, rng, partial);
    check_gemm_ss<TA, TB, TC, M, N, K, WM, WN, true, false, VecBytes>(sum, rng, partial);
    check_gemm_ss<TA, TB, TC, M, N, K, WM, WN, true, true, VecBytes>(sum, rng, partial);
}

/// The shapes of the brief, with tile copies of 16, 8 and 4 bytes and the narrowest one (synchronous for
/// 8- and 16-bit types), partly valid tiles in two of them.
template <class TA, class TB, class TC> void check_type(Summary &sum, Rng &rng) {
    constexpr int KI = mma_detail::mma_op<TA, TB, TC>::kK;
    constexpr int Narrow = (int)sizeof(TA) == 4 ? 4 : (int)sizeof(TA);
    check_transposes<TA, TB, TC, 128, 128, 64, 2, 2, 16>(sum, rng, true);
    check_transposes<TA, TB, TC, 64, 64, 64, 4, 1, 8>(sum, rng, false);
    check_transposes<TA, TB, TC, 128, 64, (KI > 32 ? KI : 32), 2, 2, 4>(sum, rng, true);
    check_transposes<TA, TB, TC, 16, 8, (KI > 16 ? KI : 16), 1, 1, Narrow>(sum, rng, false);
}

// ---- gemm_rs ---------------------------------------------------------------------------------------------

/// P = A * B1 by gemm_ss into float accumulators, P rounded to T in the same register order, then
/// O = P * B2 by gemm_rs: FlashAttention's scores -> probs -> probs @ V.
template <int M, int N1, int K1, int N2, int WM, bool TrB1, bool TrB2, class T, class TC>
__global__ void gemm_rs_kernel(const T *gA, long long ldA, const T *gB1, long long ldB1, const T *gB2,
                               long long ldB2, TC *out) {
    constexpr int Threads = 32 * WM;
    constexpr int B1R = TrB1 ? N1 : K1, B1C = TrB1 ? K1 : N1, B2R = TrB2 ? N2 : N1, B2C = TrB2 ? N1 : N2;
    extern __shared__ __align__(128) unsigned char smem[];
    T *As = reinterpret_cast<T *>(smem), *B1s = As + M * K1, *B2s = B1s + N1 * K1;
    copy_g2s<M, K1, 8, Threads, true>(As, gA, ldA, M, K1);
    copy_g2s<B1R, B1C, 8, Threads, true>(B1s, gB1, ldB1, B1R, B1C);
    copy_g2s<B2R, B2C, 8, Threads, true>(B2s, gB2, ldB2, B2R, B2C);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    constexpr int PRegs = M / WM / 16 * (N1 / 8) * 4, ORegs = M / WM / 16 * (N2 / 8) * 4;
    float p[PRegs];
    T ph[PRegs];
    TC o[ORegs];
#pragma unroll
    for (int i = 0; i < PRegs; ++i)
        p[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < ORegs; ++i)
        o[i] = from_float<TC>(0.0f);
    gemm_ss<M, N1, K1, WM, 1, false, TrB1>(As, B1s, p);
#pragma unroll
    for (int i = 0; i < PRegs; ++i)
        ph[i] = from_float<T>(p[i]);
    gemm_rs<M, N2, N1, WM, 1, TrB2>(ph, B2s, o);
    const AccMap<M, N2, WM, 1> map;
#pragma unroll
    for (int i = 0; i < ORegs; ++i)
        out[map.index(i)] = o[i];
}

template <class T, class TC, int M, int N1, int K1, int N2, int WM, bool TrB1, bool TrB2>
void check_gemm_rs(Summary &sum, Rng &rng) {
    const Operand<T> a(rng, M, K1, 8, false), b1(rng, TrB1 ? N1 : K1, TrB1 ? K1 : N1, 8, false),
        b2(rng, TrB2 ? N2 : N1, TrB2 ? N1 : N2, 8, false);
    DevBuf<T> da(a.data), db1(b1.data), db2(b2.data);
    DevBuf<TC> dout(M * N2);
    auto kern = gemm_rs_kernel<M, N1, K1, N2, WM, TrB1, TrB2, T, TC>;
    const int shared = (M * K1 + N1 * K1 + N1 * N2) * (int)sizeof(T);
    cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    kern<<<1, 32 * WM, shared>>>(da.p, a.ld, db1.p, b1.ld, db2.p, b2.ld, dout.p);
    const std::vector<TC> out = dout.get();
    // P is exact in float (few-bit inputs), so rounding it to T here matches the device bit for bit.
    std::vector<double> p(M * N1);
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N1; ++n) {
            double s = 0;
            for (int k = 0; k < K1; ++k)
                s += a.at(m, k) * (TrB1 ? b1.at(n, k) : b1.at(k, n));
            p[m * N1 + n] = to_double(from_double_host<T>(s));
        }
    Checker chk(tolerance<T, TC>());
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N2; ++n) {
            double ref = 0, mag = 0;
            for (int k = 0; k < N1; ++k) {
                const double v = p[m * N1 + k] * (TrB2 ? b2.at(n, k) : b2.at(k, n));
                ref += v;
                mag += std::fabs(v);
            }
            chk.check(m, n, to_double(out[m * N2 + n]), ref, mag);
        }
    sum.report(chk.ok() && last_error_ok(), "gemm_rs %s->%s (%dx%d)*(%dx%d)%c then *(%dx%d)%c warps=%d: %s",
               type_name<T>(), type_name<TC>(), M, K1, K1, N1, TrB1 ? 'T' : 'N', N1, N2, TrB2 ? 'T' : 'N', WM,
               chk.text().c_str());
}

template <class T, class TC> void check_rs_type(Summary &sum, Rng &rng) {
    check_gemm_rs<T, TC, 64, 64, 64, 64, 4, true, false>(sum, rng);
    check_gemm_rs<T, TC, 64, 64, 64, 64, 4, true, true>(sum, rng);
    check_gemm_rs<T, TC, 128, 64, 128, 128, 8, true, false>(sum, rng);
    check_gemm_rs<T, TC, 16, 16, 32, 8, 1, false, false>(sum, rng);
    check_gemm_rs<T, TC, 32, 48, 16, 24, 2, false, true>(sum, rng);
}

/// C = A * B by gemm_rs with A read straight from global memory into the registers of its M x K fragment
/// (accumulator order, WM warp rows, a copy in each of the WN warp columns), the warps splitting C WM x WN:
/// 32 rows over 4 warps (2x2) as TileLang's examples have them, and 32-bit (tf32) and 8-bit A, whose
/// instruction fragments are not the accumulator order (rs_a_fragment and b_rs_loader reorder K).
template <int M, int N, int K, int WM, int WN, bool TrB, class TA, class TB, class TC>
__global__ void gemm_rs_split_kernel(const TA *gA, long long ldA, const TB *gB, long long ldB, TC *out) {
    constexpr int Threads = 32 * WM * WN, BR = TrB ? N : K, BC = TrB ? K : N;
    extern __shared__ __align__(128) unsigned char smem[];
    TB *Bs = reinterpret_cast<TB *>(smem);
    copy_g2s<BR, BC, 16 / (int)sizeof(TB), Threads, true>(Bs, gB, ldB, BR, BC);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    constexpr int ARegs = M / WM / 16 * (K / 8) * 4, ORegs = M / WM / 16 * (N / WN / 8) * 4;
    TA a[ARegs];
    TC o[ORegs];
    const int warp = (int)threadIdx.x / 32 % WM, lane = (int)threadIdx.x % 32; // the warp row's copy
#pragma unroll
    for (int i = 0; i < ARegs; ++i) {
        const int c = i % 2, h = (i / 2) % 2, tile = i / 4, mi = tile / (K / 8), ki = tile % (K / 8);
        a[i] = gA[(warp * (M / WM) + mi * 16 + h * 8 + lane / 4) * ldA + ki * 8 + (lane % 4) * 2 + c];
    }
#pragma unroll
    for (int i = 0; i < ORegs; ++i)
        o[i] = TC(0);
    gemm_rs<M, N, K, WM, WN, TrB>(a, Bs, o);
    const AccMap<M, N, WM, WN> map;
#pragma unroll
    for (int i = 0; i < ORegs; ++i)
        out[map.index(i)] = o[i];
}

template <class TA, class TB, class TC, int M, int N, int K, int WM, int WN, bool TrB>
void check_gemm_rs_split(Summary &sum, Rng &rng) {
    const Operand<TA> a(rng, M, K, 8, false);
    const Operand<TB> b(rng, TrB ? N : K, TrB ? K : N, 8, false);
    DevBuf<TA> da(a.data);
    DevBuf<TB> db(b.data);
    DevBuf<TC> dout(M * N);
    auto kern = gemm_rs_split_kernel<M, N, K, WM, WN, TrB, TA, TB, TC>;
    const int shared = N * K * (int)sizeof(TB);
    cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    kern<<<1, 32 * WM * WN, shared>>>(da.p, a.ld, db.p, b.ld, dout.p);
    const std::vector<TC> out = dout.get();
    Checker chk(tolerance<TA, TC>());
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double ref = 0, mag = 0;
            for (int k = 0; k < K; ++k) {
                const double v = a.at(m, k) * (TrB ? b.at(n, k) : b.at(k, n));
                ref += v;
                mag += std::fabs(v);
            }
            chk.check(m, n, to_double(out[m * N + n]), ref, mag);
        }
    sum.report(chk.ok() && last_error_ok(), "gemm_rs %s*%s->%s (%dx%d)*(%dx%d)%c warps=%dx%d, A in registers: %s",
               type_name<TA>(), type_name<TB>(), type_name<TC>(), M, K, K, N, TrB ? 'T' : 'N', WM, WN,
               chk.text().c_str());
}

template <class TA, class TB, class TC> void check_rs_split_type(Summary &sum, Rng &rng) {
    check_gemm_rs_split<TA, TB, TC, 32, 32, 64, 2, 2, false>(sum, rng);
    check_gemm_rs_split<TA, TB, TC, 32, 128, 64, 2, 2, true>(sum, rng);
    check_gemm_rs_split<TA, TB, TC, 64, 64, 128, 4, 1, true>(sum, rng);
    check_gemm_rs_split<TA, TB, TC, 16, 64, 32, 1, 4, false>(sum, rng);
}

int run_bench(const Summary &sum);

int main(int argc, char **argv) {
    Summary sum;
    sum.arch = device_arch();
    if (sum.arch <= 0)
        return 1;
    if (argc > 1 && std::strcmp(argv[1], "bench") == 0)
        return run_bench(sum);
    Rng rng(0x5eed);

    check_swizzle<64, 2>(sum);
    check_swizzle<32, 2>(sum);
    check_swizzle<16, 2>(sum);
    check_swizzle<8, 2>(sum);
    check_swizzle<192, 2>(sum);
    check_swizzle<24, 2>(sum);
    check_swizzle<32, 4>(sum);
    check_swizzle<128, 4>(sum);
    check_swizzle<64, 1>(sum);
    check_swizzle<32, 1>(sum);
    check_swizzle<96, 1>(sum);
    check_swizzle<6, 2>(sum);

    check_copy<64, 64, 8, 128, true, __half>(sum, rng, 64, 64);
    check_copy<64, 64, 8, 128, true, __half>(sum, rng, 37, 40);
    check_copy<32, 192, 8, 128, true, __half>(sum, rng, 30, 100000);
    check_copy<8, 512, 4, 64, true, float>(sum, rng, 5, 300);
    check_copy<20, 24, 8, 96, true, __half>(sum, rng, 19, 16);
    check_copy<16, 32, 2, 128, true, float>(sum, rng, 16, 30);
    check_copy<33, 40, 1, 64, true, __half>(sum, rng, 30, 39);
    check_copy<16, 64, 2, 128, false, int8_t>(sum, rng, 9, 62);
    check_copy<128, 64, 16, 128, true, int8_t>(sum, rng, 100, 48);
    check_copy<256, 128, 1, 64, true, __half>(sum, rng, 250, 120);
    check_copy<4, 256, 8, 16, true, __half>(sum, rng, 3, 200);
    check_copy<33, 40, 1, 32, true, __half>(sum, rng, 33, 17);

    check_type<__half, __half, float>(sum, rng);
    check_type<__nv_bfloat16, __nv_bfloat16, float>(sum, rng);
    check_type<__half, __half, __half>(sum, rng);
    check_type<float, float, float>(sum, rng);
    check_type<int8_t, int8_t, int32_t>(sum, rng);
    check_type<uint8_t, uint8_t, int32_t>(sum, rng);
    check_transposes<int8_t, uint8_t, int32_t, 64, 64, 64, 4, 1, 16>(sum, rng, true);
    check_type<__nv_fp8_e4m3, __nv_fp8_e4m3, float>(sum, rng);
    check_type<__nv_fp8_e5m2, __nv_fp8_e5m2, float>(sum, rng);
    check_transposes<__nv_fp8_e4m3, __nv_fp8_e5m2, float, 64, 64, 64, 4, 1, 16>(sum, rng, true);

    check_rs_type<__half, float>(sum, rng);
    check_rs_type<__half, __half>(sum, rng);
    check_rs_type<__nv_bfloat16, float>(sum, rng);
    check_rs_split_type<__nv_bfloat16, __nv_bfloat16, float>(sum, rng);
    check_rs_split_type<__half, __half, __half>(sum, rng);
    check_rs_split_type<float, float, float>(sum, rng);
    check_rs_split_type<int8_t, int8_t, int32_t>(sum, rng);
    check_rs_split_type<uint8_t, int8_t, int32_t>(sum, rng);

    return sum.finish();
}

#include "mma_test_bench.cuh"
