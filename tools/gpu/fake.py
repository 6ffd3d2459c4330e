#!/usr/bin/env python3
"""A rehearsal of the GPU harness for programs tilec cannot generate yet: writes NAME.cu and NAME.h in the
C interface tilec would generate (docs/INTERFACE.md), for the GEMM and attention kernels a .tile file exports, but
with naive CUDA kernels inside (shared-memory tiled GEMM with float32 / int32 accumulation; one warp per
query row for attention, with an online softmax). The kernel signatures come from `tilec --emit=ast`, which
works as soon as the front end does.

This proves everything around the kernels before the real code generation lands: prepare.sh's manifest,
run.sh's builds, the header reader, each test module's argument order, inputs, float64 references and
bounds, the benchmark and sweep machinery. It never stands in for tilec: every library it writes is marked
FAKE in the manifest, and the harness's table and the sweep's say so on top.

  tools/gpu/fake.py TILEC FILE NAME OUTDIR [tilec options: --export ..., --kernel ...]

Used by `TILEC_GPU_FAKE=1 tools/gpu/prepare.sh` (for files tilec rejects) and `tools/sweep/gen.py --fake`.
Exit 0 when NAME.cu was written, 1 when the file has a kernel this rehearsal cannot imitate.
"""
import math
import os
import re
import subprocess
import sys

_KERNEL = re.compile(r"^kernel (\w+)\((.*)\)$")
_PARAM = re.compile(r"(\w+): (\w+)\[([^\]]*)\] global|(\w+): (\w+)")
C_TYPES = {"float16": "__half", "bfloat16": "__nv_bfloat16", "float32": "float", "int8": "int8_t", "int32": "int32_t"}
PTR_TYPES = {"float32": "float", "int32": "int32_t", "int8": "int8_t"}      # void* for the others


class Unsupported(Exception):
    pass


def parse_ast(text):
    """[{name, tensors: [(name, dtype, [dims])], dynamic: [syms], gemms: [flags], causal}] of --emit=ast."""
    kernels, cur = [], None
    for line in text.splitlines():
        m = _KERNEL.match(line)
        if m:
            cur = dict(name=m.group(1), tensors=[], dynamic=[], gemms=[], causal=False)
            for p in _PARAM.finditer(m.group(2)):
                if p.group(1):
                    dims = [d.strip() for d in p.group(3).split(",")]
                    cur["tensors"].append((p.group(1), p.group(2), dims))
                else:
                    raise Unsupported("kernel %s has a scalar parameter '%s'" % (cur["name"], p.group(4)))
            kernels.append(cur)
            continue
        if cur is None:
            continue
        s = line.strip()
        if s.startswith("dynamic "):
            cur["dynamic"] = [x.strip() for x in s[len("dynamic "):].split(",")]
        elif s.startswith("gemm("):
            cur["gemms"].append(dict(tA="transpose_A=True" in s, tB="transpose_B=True" in s))
        elif s.startswith("for ") and " in pipelined(" in s and "bx" in s.split("pipelined(", 1)[1]:
            cur["causal"] = True              # the key loop's extent depends on the query block
    return kernels


def classify(k):
    ts = k["tensors"]
    if len(k["gemms"]) == 1 and len(ts) == 3 and all(len(t[2]) == 2 for t in ts):
        return "gemm"
    if len(k["gemms"]) == 2 and len(ts) == 4 and all(len(t[2]) == 4 and t[1] == "float16" for t in ts):
        return "attention"
    raise Unsupported("kernel %s is neither a plain GEMM nor an attention forward" % k["name"])


def dim(d, dynamic):
    return d if d in dynamic else str(int(d))


def param_decl(t, const):
    ptr = PTR_TYPES.get(t[1], "void")
    return "%s%s *%s" % ("const " if const else "", ptr, t[0])


def signature(k):
    ts = k["tensors"]
    ps = [param_decl(t, i < len(ts) - 1) for i, t in enumerate(ts)] + ["int64_t %s" % s for s in k["dynamic"]]
    return "tilec_status %s(%s, cudaStream_t stream)" % (k["name"], ", ".join(ps))


def launcher(k, kind):
    ts, dyn = k["tensors"], k["dynamic"]
    lines = ["extern \"C\" %s {" % signature(k)]
    for i, t in enumerate(ts):
        lines.append("    if (!%s) return fake_fail(TILEC_ERROR_NULL_POINTER, cudaSuccess);" % t[0])
    for s in dyn:
        lines.append("    if (%s < 1 || %s > 2147483647) return fake_fail(TILEC_ERROR_BAD_SIZE, cudaSuccess);" % (s, s))
    if kind == "gemm":
        A, B, C = ts
        g = k["gemms"][0]
        M = dim(C[2][0], dyn)
        N = dim(C[2][1], dyn)
        K = dim(A[2][0] if g["tA"] else A[2][1], dyn)
        acc = "int32_t" if A[1] == "int8" else "float"
        ta, tc = C_TYPES[A[1]], C_TYPES[C[1]]
        lines += ["    int64_t M = %s, N = %s, K = %s;" % (M, N, K),
                  "    dim3 grid((unsigned)((N + 15) / 16), (unsigned)((M + 15) / 16));",
                  "    fake_gemm<%s, %s, %s><<<grid, dim3(16, 16), 0, stream>>>((const %s *)%s, (const %s *)%s, (%s *)%s, "
                  "M, N, K, %d, %d);" % (ta, tc, acc, ta, A[0], ta, B[0], tc, C[0], g["tA"], g["tB"])]
    else:
        Q, Kt, V, O = ts
        b, s, h, d = (int(x) for x in Q[2])
        if d % 32 or d > 256:
            raise Unsupported("attention head dim %d" % d)
        lines += ["    int64_t rows = (int64_t)%d * %d * %d;" % (b, s, h),
                  "    fake_attention<%d><<<(unsigned)((rows + 3) / 4), 128, 0, stream>>>((const __half *)%s, "
                  "(const __half *)%s, (const __half *)%s, (__half *)%s, %d, %d, %d, %s, %.17gf);"
                  % (d, Q[0], Kt[0], V[0], O[0], b, s, h, "true" if k["causal"] else "false", 1 / math.sqrt(d))]
    lines += ["    cudaError_t e = cudaGetLastError();",
              "    return e == cudaSuccess ? TILEC_SUCCESS : fake_fail(TILEC_ERROR_CUDA, e);", "}",
              "extern \"C\" int %s_threads(int sm) { (void)sm; return %d; }" % (k["name"], 256 if kind == "gemm" else 128),
              "extern \"C\" size_t %s_shared_bytes(int sm) { (void)sm; return 0; }" % k["name"], ""]
    return "\n".join(lines)


HEADER = """/* FAKE (tools/gpu/fake.py, a harness rehearsal): naive kernels in the C interface tilec generates for
 * %(src)s. Not tilec's code. */
#ifndef FAKE_%(guard)s_H
#define FAKE_%(guard)s_H
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif
#ifndef TILEC_COMMON_DECLS
#define TILEC_COMMON_DECLS
#define TILEC_ABI_VERSION 1
typedef enum tilec_status {
    TILEC_SUCCESS = 0, TILEC_ERROR_NULL_POINTER = 1, TILEC_ERROR_MISALIGNED = 2, TILEC_ERROR_BAD_SIZE = 3,
    TILEC_ERROR_GRID_TOO_LARGE = 4, TILEC_ERROR_NO_DEVICE = 5, TILEC_ERROR_NO_DEVICE_CODE = 6,
    TILEC_ERROR_SHARED_MEMORY = 7, TILEC_ERROR_CUDA = 8
} tilec_status;
#endif
#ifdef __cplusplus
extern "C" {
#endif
const char *tilec_status_string(tilec_status status);
cudaError_t tilec_last_cuda_error(void);
%(decls)s
#ifdef __cplusplus
}
#endif
#endif
"""

BODY = r"""/* FAKE (tools/gpu/fake.py, a harness rehearsal): naive kernels, not tilec's code. */
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <math.h>
#include "%(name)s.h"

static thread_local cudaError_t fake_last_error = cudaSuccess;
static tilec_status fake_fail(tilec_status s, cudaError_t e) { fake_last_error = e; return s; }
extern "C" __attribute__((weak)) const char *tilec_status_string(tilec_status s) {
    switch (s) {
    case TILEC_SUCCESS: return "success";
    case TILEC_ERROR_NULL_POINTER: return "a tensor pointer is NULL";
    case TILEC_ERROR_BAD_SIZE: return "a dynamic size is out of range (0 to 2147483647)";
    case TILEC_ERROR_CUDA: return "a CUDA error";
    default: return "another error (fake library)";
    }
}
extern "C" __attribute__((weak)) cudaError_t tilec_last_cuda_error(void) { return fake_last_error; }

template <typename T> __device__ __forceinline__ float fake_ld(const T *p, int64_t i) { return (float)p[i]; }
template <> __device__ __forceinline__ float fake_ld(const __half *p, int64_t i) { return __half2float(p[i]); }
template <> __device__ __forceinline__ float fake_ld(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }
template <typename T, typename A> __device__ __forceinline__ void fake_st(T *p, int64_t i, A v) { p[i] = (T)v; }
template <> __device__ __forceinline__ void fake_st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
template <> __device__ __forceinline__ void fake_st(__nv_bfloat16 *p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// C = op(A) @ op(B) in 16 x 16 tiles; A is (M, K) or (K, M) with tA, B is (K, N) or (N, K) with tB.
template <typename TA, typename TC, typename ACC>
__global__ void fake_gemm(const TA *A, const TA *B, TC *C, int64_t M, int64_t N, int64_t K, int tA, int tB) {
    __shared__ ACC As[16][17], Bs[16][17];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t row = (int64_t)blockIdx.y * 16 + ty, col = (int64_t)blockIdx.x * 16 + tx;
    ACC acc = 0;
    for (int64_t k0 = 0; k0 < K; k0 += 16) {
        int64_t ka = k0 + tx, kb = k0 + ty;
        As[ty][tx] = (row < M && ka < K) ? (ACC)fake_ld(A, tA ? ka * M + row : row * K + ka) : (ACC)0;
        Bs[ty][tx] = (kb < K && col < N) ? (ACC)fake_ld(B, tB ? col * K + kb : kb * N + col) : (ACC)0;
        __syncthreads();
        for (int k = 0; k < 16; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        fake_st(C, row * N + col, acc);
}

// softmax(Q K^T * scale [+ causal mask]) V for (batch, seq, heads, D) tensors: one warp per query row,
// each lane holding D / 32 of the row, with an online softmax over the keys.
template <int D>
__global__ void fake_attention(const __half *Q, const __half *K, const __half *V, __half *O, int B, int S, int H,
                               bool causal, float scale) {
    constexpr int E = D / 32;
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x %% 32;
    if (row >= (int64_t)B * S * H)
        return;
    int h = (int)(row %% H), s = (int)((row / H) %% S);
    int64_t b = row / ((int64_t)H * S);
    float q[E], acc[E];
    int64_t qbase = ((b * S + s) * H + h) * D + lane * E;
    for (int e = 0; e < E; ++e) {
        q[e] = __half2float(Q[qbase + e]);
        acc[e] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    int end = causal ? s + 1 : S;
    for (int j = 0; j < end; ++j) {
        int64_t kbase = ((b * S + j) * H + h) * D + lane * E;
        float dot = 0.f;
        for (int e = 0; e < E; ++e)
            dot += q[e] * __half2float(K[kbase + e]);
        for (int o = 16; o > 0; o >>= 1)
            dot += __shfl_xor_sync(0xffffffffu, dot, o);
        dot *= scale;
        float mn = fmaxf(m, dot), c = __expf(m - mn), p = __expf(dot - mn);
        l = l * c + p;
        for (int e = 0; e < E; ++e)
            acc[e] = acc[e] * c + p * __half2float(V[kbase + e]);
        m = mn;
    }
    for (int e = 0; e < E; ++e)
        O[qbase + e] = __float2half_rn(acc[e] / l);
}

%(launchers)s"""


def write(tilec, tile_file, name, outdir, tilec_args):
    r = subprocess.run([tilec, tile_file, "--emit=ast"] + list(tilec_args), capture_output=True, text=True)
    if r.returncode != 0:
        raise Unsupported("tilec --emit=ast failed: %s" % (r.stderr.strip().splitlines() or ["?"])[0])
    kernels = parse_ast(r.stdout)
    if not kernels:
        raise Unsupported("no kernels")
    decls, launchers = [], []
    for k in kernels:
        kind = classify(k)
        decls.append("%s;\nint %s_threads(int sm);\nsize_t %s_shared_bytes(int sm);" % (signature(k), k["name"], k["name"]))
        launchers.append(launcher(k, kind))
    guard = re.sub(r"\W", "_", name).upper()
    with open(os.path.join(outdir, name + ".h"), "w") as f:
        f.write(HEADER % dict(src=os.path.basename(tile_file), guard=guard, decls="\n".join(decls)))
    with open(os.path.join(outdir, name + ".cu"), "w") as f:
        f.write(BODY % dict(name=name, launchers="\n".join(launchers)))
    return [k["name"] for k in kernels]


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    tilec, tile_file, name, outdir = argv[:4]
    try:
        names = write(tilec, tile_file, name, outdir, argv[4:])
    except Unsupported as e:
        print("fake: %s: %s" % (tile_file, e), file=sys.stderr)
        return 1
    print("fake: %s.cu: %s" % (name, ", ".join(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
