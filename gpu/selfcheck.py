"""The harness's check of itself (harness.py --self-check): the ulp arithmetic, the header reader, the test
modules and the sanitizer-log reader, on any machine. Needs no GPU and no torch; where torch is importable
(the GPU machine), its tensor versions of the ulp arithmetic are also compared with the pure-Python ones.

The pure-Python functions are checked against independent facts: Python's own float16/float32 packing
(struct 'e'/'f' round to nearest even), and, for the 8- and 16-bit formats, an exhaustive table of every
value the format has, sorted, in which the nearest value and the ulp are found by search."""
import bisect
import math
import os
import random
import struct
import sys

import cinterface
import numerics as N
import report
import selfcheck_attn

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def table(dtype):
    """(sorted finite values, their bit patterns) of an 8- or 16-bit format; -0 left out."""
    nb = N.fmt(dtype)["bits"]
    vals = {}
    for b in range(1 << nb):
        v = N.py_decode(b, dtype)
        if math.isfinite(v) and not (v == 0 and b >> (nb - 1)):
            vals[v] = b
    xs = sorted(vals)
    return xs, [vals[x] for x in xs]


def nearest_even(x, xs, bits, dtype):
    """Round to nearest, ties to the value with an even last mantissa bit, from the table."""
    f = N.fmt(dtype)
    top = xs[-1]
    if abs(x) > top:   # past the largest finite value: rounds to it below the halfway point to the next binade step
        half = top + N.py_ulp(top, dtype) / 2
        if abs(x) < half or (abs(x) == half and bits[-1] % 2 == 0):
            return math.copysign(top, x)
        return math.copysign(math.inf, x) if f["ieee"] else math.nan
    i = bisect.bisect_left(xs, x)
    if i < len(xs) and xs[i] == x:
        return x
    lo, hi = xs[i - 1], xs[i]
    if x - lo < hi - x:
        return lo
    if hi - x < x - lo:
        return hi
    return lo if bits[i - 1] % 2 == 0 else hi


def check_numerics(rng):
    # float16 decoding against struct
    for b in range(1 << 16):
        v = N.py_decode(b, "float16")
        ref = struct.unpack("<e", struct.pack("<H", b))[0]
        same = (math.isnan(v) and math.isnan(ref)) or (v == ref and math.copysign(1, v) == math.copysign(1, ref))
        if not same:
            check(False, "py_decode(float16, %#x) = %r, struct says %r" % (b, v, ref))
            break
    for dtype in ("float16", "bfloat16", "float8_e4m3", "float8_e5m2"):
        xs, bits = table(dtype)
        f = N.fmt(dtype)
        check(xs[-1] == f["max"], "%s: largest finite %r, fmt says %r" % (dtype, xs[-1], f["max"]))
        # neighbours are 1 ulp apart (across zero too), and the ulp is the spacing above a value
        bad = 0
        for a, b in zip(range(len(xs) - 1), range(1, len(xs))):
            if N.py_ulp_distance(bits[a], bits[b], dtype) != 1:
                bad += 1
            if xs[a] >= 0 and xs[b] - xs[a] != N.py_ulp(xs[a], dtype):
                bad += 1
        check(bad == 0, "%s: %d neighbour/ulp mismatches" % (dtype, bad))
        neg0 = 1 << (f["bits"] - 1)
        check(N.py_ulp_distance(0, neg0, dtype) == 0, "%s: +0 and -0 not 0 ulp apart" % dtype)
        check(N.py_ulp_distance(1, neg0 | 1, dtype) == 2, "%s: +-min subnormal not 2 ulp apart" % dtype)
        nan = N.py_encode(math.nan, dtype)
        check(N.py_ulp_distance(nan, 0, dtype) == math.inf, "%s: NaN vs 0 is not infinitely far" % dtype)
        check(N.py_ulp_distance(nan, nan, dtype) == 0, "%s: NaN vs NaN is not 0" % dtype)
        # every value encodes back to its bits
        check(all(N.py_encode(x, dtype) == b for x, b in zip(xs, bits)), "%s: py_encode round trip" % dtype)
        # rounding of random float64 values, ties included
        bad = []
        for _ in range(20000):
            k = rng.randrange(len(xs) - 1)
            lo, hi = xs[k], xs[k + 1]
            x = rng.choice([lo + (hi - lo) * rng.random(), (lo + hi) / 2, lo,
                            rng.uniform(-1.2, 1.2) * f["max"] * rng.choice([1, 2 ** -20, 1.05])])
            want, got = nearest_even(x, xs, bits, dtype), N.py_round(x, dtype)
            if not (want == got or (math.isnan(want) and math.isnan(got))):
                bad.append((x, got, want))
        check(not bad, "%s: py_round wrong on %d values, e.g. %r" % (dtype, len(bad), bad[:1]))
    # float16 and float32 rounding against struct
    for dtype, code, limit in (("float16", "e", 65519.0), ("float32", "f", 3.4e38)):
        bad = 0
        for _ in range(20000):
            x = rng.choice([rng.gauss(0, 1), rng.gauss(0, 1) * 2.0 ** rng.randint(-40, 40)])
            if abs(x) >= limit:
                continue
            want = struct.unpack("<" + code, struct.pack("<" + code, x))[0]
            if N.py_round(x, dtype) != want:
                bad += 1
        check(bad == 0, "py_round(%s) disagrees with struct on %d values" % (dtype, bad))
    check(N.py_round(464.0, "float8_e4m3") == 448.0, "464 -> e4m3 should round (tie, even) to 448")
    check(math.isnan(N.py_round(480.0, "float8_e4m3")), "480 -> e4m3 should overflow to NaN")
    check(N.py_round(65520.0, "float16") == math.inf, "65520 -> float16 should overflow to inf")
    check(N.py_ulp(1.0, "float16") == 2 ** -10 and N.py_ulp(0.0, "float16") == 2 ** -24, "float16 ulp")
    check(N.py_ulp(1.0, "bfloat16") == 2 ** -7 and N.py_ulp(3.0, "float32") == 2 ** -22, "bf16/f32 ulp")
    check(abs(N.gamma(4096) - 4096 * 2 ** -24 / (1 - 4096 * 2 ** -24)) < 1e-18, "gamma")


def check_torch(rng):
    try:
        import torch
    except Exception:
        print("self-check: torch not importable here: tensor ulp functions not compared (they are on the GPU machine)")
        return
    for dtype in ("float16", "bfloat16", "float32", "float8_e4m3", "float8_e5m2"):
        nb = N.fmt(dtype)["bits"]
        n = 4096
        pats_a = [rng.getrandbits(nb) for _ in range(n)]
        pats_b = [(a + rng.randint(-3, 3)) % (1 << nb) if rng.random() < 0.5 else rng.getrandbits(nb) for a in pats_a]
        view = {8: torch.uint8, 16: torch.int16, 32: torch.int32}[nb]

        def tens(p):
            signed = [(v - (1 << nb)) if (view != torch.uint8 and v >> (nb - 1)) else v for v in p]
            return torch.tensor(signed, dtype=view).view(N.torch_dtype(torch, dtype))
        d = N.t_ulp_distance(torch, tens(pats_a), tens(pats_b), dtype).tolist()
        want = [N.py_ulp_distance(a, b, dtype) for a, b in zip(pats_a, pats_b)]
        mism = sum(1 for x, w in zip(d, want) if (x != w and not (w == math.inf and x == N.BIG)))
        check(mism == 0, "t_ulp_distance(%s) differs from py_ulp_distance on %d of %d" % (dtype, mism, n))
        xs = [rng.gauss(0, 1) * 2.0 ** rng.randint(-30, 20) for _ in range(n)] + [0.0, -0.0, 1.0, 448.0, 464.0, 1e30]
        x64 = torch.tensor(xs, dtype=torch.float64)
        r = N.t_round(torch, x64, dtype).tolist()
        rw = [N.py_round(x, dtype) for x in xs]
        mism = sum(1 for a, b in zip(r, rw) if not (a == b or (math.isnan(a) and math.isnan(b))))
        check(mism == 0, "t_round(%s) differs from py_round on %d values" % (dtype, mism))
        u = N.t_ulp(torch, x64, dtype).tolist()
        mism = sum(1 for a, x in zip(u, xs) if a != N.py_ulp(x, dtype))
        check(mism == 0, "t_ulp(%s) differs from py_ulp on %d values" % (dtype, mism))
    print("self-check: tensor ulp functions agree with the pure-Python ones")


SAMPLE = """
/* comment tilec_status fake(int x); */
#define TILEC_ABI_VERSION 3
#ifdef __cplusplus
extern "C" {
#endif
// A: float32[m, 64]
tilec_status lin(const float *restrict A,
                 void *B, int64_t m, float alpha,
                 cudaStream_t stream);
int lin_threads(int sm);
unsigned int lin_shared_bytes(int sm);
tilec_status lin_load(void);
tilec_status lin_unload(void);
const char *tilec_status_string(tilec_status s);
cudaError_t tilec_last_cuda_error(void);
"""


def check_headers(here):
    life = {}
    funcs, queries = cinterface.parse_header(SAMPLE, life)
    check(list(funcs) == ["lin"], "parse_header found %r" % list(funcs))
    check(life == {("lin", "load"): "lin_load", ("lin", "unload"): "lin_unload"}, "load/unload pair %r" % life)
    if "lin" in funcs:
        p = funcs["lin"].params
        check([x.kind for x in p] == ["pointer", "pointer", "scalar", "scalar", "stream"], "lin kinds %r" % p)
        check(p[0].const and p[0].ctype == "float" and not p[1].const and p[1].ctype == "void", "lin pointers %r" % p)
        check(p[2].ctype == "int64_t" and p[3].ctype == "float", "lin scalars %r" % p)
    check(queries.get(("lin", "shared_bytes")) == "unsigned int", "queries %r" % queries)
    check(cinterface.contract_problems(funcs, queries, SAMPLE) == [], "sample contract problems")
    for bad in ("tilec_status f(void *A);", "tilec_status f(cudaStream_t s, void *A);",
                "tilec_status f(struct x y, cudaStream_t s);", "tilec_status g_load(void);"):
        try:
            cinterface.parse_header(bad)
            check(False, "parse_header accepted %r" % bad)
        except cinterface.HeaderError:
            pass
    # A prim_func with workspaces: NAME_with_workspace is no kernel (it has no queries of its own).
    ws_header = ('tilec_status norms(const float *A, float *Out, int64_t n, cudaStream_t stream);\n'
                 'size_t norms_workspace_bytes(int64_t n);\n'
                 'tilec_status norms_with_workspace(const float *A, float *Out, int64_t n, void *workspace, '
                 'size_t workspace_bytes, cudaStream_t stream);\n'
                 'int norms_threads(int sm);\nsize_t norms_shared_bytes(int sm);\n')
    life = {}
    funcs, queries = cinterface.parse_header(ws_header, life)
    check(sorted(funcs) == ["norms"] and life.get(("norms", "with_workspace")) == "norms_with_workspace",
          "a header with NAME_with_workspace: functions %r, lifecycle %r" % (sorted(funcs), life))
    path = os.path.join(here, "handwritten", "hand_add.h")
    with open(path) as f:
        text = f.read()
    funcs, queries = cinterface.parse_header(text)
    check(sorted(funcs) == ["add_8192", "add_dyn", "add_odd"], "hand_add.h functions %r" % sorted(funcs))
    check(cinterface.contract_problems(funcs, queries, text) == [], "hand_add.h contract: %r"
          % cinterface.contract_problems(funcs, queries, text))
    if "add_dyn" in funcs:
        check(repr(funcs["add_dyn"].params) == "[const void *A, const void *B, void *C, int64_t m, int64_t n, "
              "cudaStream_t stream]", "add_dyn params %r" % funcs["add_dyn"].params)


def check_modules():
    import harness
    mods = harness.load_modules()
    tests = harness.all_tests(mods)
    benches = harness.all_benches(mods)
    check(len(mods) >= 20 and len(tests) >= 100 and len(benches) >= 12,
          "test modules: %d modules, %d tests, %d benches" % (len(mods), len(tests), len(benches)))
    check(tests and tests[0].lib.startswith("hand_"), "the hand-written tests must come first")
    ids = [t for t, *_ in harness.expand(tests, "/nonexistent", "test")]
    check(len(ids) == len(set(ids)), "duplicate test ids")
    check(all(callable(t.fn) for t in tests) and all(callable(b.make) for b in benches), "callables")
    check(any(t.small for t in tests), "no small tests for the sanitizer")


LOG = """========= COMPUTE-SANITIZER
device x
@@tilec-begin a:k1
PASS a:k1
@@tilec-end a:k1
@@tilec-begin b:k2
========= Invalid __global__ write of size 2 bytes
=========     at kern+0x10 in b.tile:7
=========     by thread (0,0,0) in block (3,0,0)
=========
========= Invalid __global__ write of size 2 bytes
=========     at kern+0x10
@@tilec-end b:k2
========= ERROR SUMMARY: 2 errors
"""


def check_report():
    per, outside, summary = report.parse_sanitizer(LOG)
    check(per.get("b:k2") == 2 and per.get("a:k1", 0) == 0 and outside == 0, "sanitizer split %r %r" % (per, outside))
    check(summary == 2, "sanitizer summary %r" % summary)


AST = """kernel linear_small(X: bfloat16[m, 128] global, W: bfloat16[256, 128] global, Y: bfloat16[m, 256] global)
  dynamic m
  body
    for ko in pipelined(2, stages=3):
      gemm(X_s[0:128, 0:64], W_s[0:128, 0:64], acc[0:128, 0:128], transpose_B=True)
kernel fa(Q: float16[1, 256, 2, 64] global, K: float16[1, 256, 2, 64] global, V: float16[1, 256, 2, 64] global, \
Out: float16[1, 256, 2, 64] global)
  body
    for ko in pipelined(bx * 2 + 2, stages=2):
      gemm(Q_shared[0:128, 0:64], K_shared[0:64, 0:64], scores[0:128, 0:64], transpose_B=True)
      gemm(probs[0:128, 0:64], V_shared[0:64, 0:64], acc[0:128, 0:64])
"""


def check_issue4(here):
    """The GEMM / attention parts (gpu/refs.py, tools/gpu/fake.py, tools/sweep/) that need no torch."""
    import refs
    check(refs.U_IN["float16"] == 2.0 ** -11 and refs.U_IN["float32"] == 2.0 ** -11 and
          refs.U_IN["bfloat16"] == 2.0 ** -8 and refs.U_IN["float8_e4m3"] == 2.0 ** -4, "docs/INTERFACE.md's u values")
    check(refs.U_OUT["float16"] == 2.0 ** -11 and refs.U_OUT["float32"] == 2.0 ** -24, "u_out values")
    check(refs.attention_flops(8, 16, 4096, 128, True) * 2 == refs.attention_flops(8, 16, 4096, 128, False)
          == 4.0 * 8 * 16 * 4096 ** 2 * 128, "attention FLOPs")
    root = os.path.dirname(here)
    sys.path.insert(0, os.path.join(root, "tools", "gpu"))
    sys.path.insert(0, os.path.join(root, "tools", "sweep"))
    import fake
    ks = fake.parse_ast(AST)
    check([k["name"] for k in ks] == ["linear_small", "fa"], "fake.parse_ast kernels %r" % ks)
    if len(ks) == 2:
        check(fake.classify(ks[0]) == "gemm" and ks[0]["dynamic"] == ["m"] and ks[0]["gemms"][0]["tB"]
              and not ks[0]["gemms"][0]["tA"], "fake: linear_small %r" % ks[0])
        check(fake.classify(ks[1]) == "attention" and ks[1]["causal"], "fake: attention %r" % ks[1])
        check(fake.signature(ks[0]) == "tilec_status linear_small(const void *X, const void *W, void *Y, "
              "int64_t m, cudaStream_t stream)", "fake signature %s" % fake.signature(ks[0]))
    import gen
    for name, p in gen.PRESETS.items():
        cfgs, dropped = gen.configs_of(name, p, "sm_80", True, 0)
        # the default first, then at least one configuration beside it (decode's presets sweep stages only)
        check(cfgs[0]["params"] == p.get("base", {}) and len(cfgs) > 1,
              "sweep preset %s: %d configurations, the first %r" % (name, len(cfgs), cfgs[0]["params"]))
        check(all(gen.plausible(name, c["params"], "sm_80") is None for c in cfgs[1:]), "sweep filter %s" % name)
        check(len(set(c["id"] for c in cfgs)) == len(cfgs), "sweep ids %s" % name)
    check(gen.call_text(gen.PRESETS["flash"], gen.PRESETS["flash"]["shapes"][0], {"block_M": 64, "threads": 128})
          == "flash_fwd(8, 16, 4096, 128, True, block_M=64, threads=128)", "sweep call text")
    check(gen.parse_set(["policy=None,1", "num_stages=3"]) == {"policy": [None, 1], "num_stages": [3]}, "--set")


def check_refs_torch():
    """The float64 references against independent computations, on the CPU: the attention against PyTorch's
    own scaled_dot_product_attention in float64 (heads split into chunks of two), the GEMM against loops."""
    try:
        import torch
    except Exception:
        return
    import refs
    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(2, 37, 3, 16, generator=g).half() for _ in range(3))
    for causal in (False, True):
        ref = refs.attention_reference(q, k, v, causal, chunk_bytes=37 * 37 * 8 * 2)
        sd = torch.nn.functional.scaled_dot_product_attention(
            q.double().transpose(1, 2), k.double().transpose(1, 2), v.double().transpose(1, 2),
            is_causal=causal).transpose(1, 2)
        err = float((ref - sd).abs().max())
        check(err < 1e-12, "attention_reference (causal=%s) differs from SDPA in float64 by %g" % (causal, err))
    a = torch.randn(7, 5, generator=g).half()
    b = torch.randn(3, 7, generator=g).half()
    R, S = refs.gemm_reference(a, b, trans_A=True, trans_B=True)
    bad = 0
    for i in range(5):
        for j in range(3):
            r = sum(float(a[kk, i]) * float(b[j, kk]) for kk in range(7))
            sa = sum(abs(float(a[kk, i]) * float(b[j, kk])) for kk in range(7))
            bad += abs(float(R[i, j]) - r) > 1e-12 or abs(float(S[i, j]) - sa) > 1e-12
    check(bad == 0, "gemm_reference with both transposes: %d of 15 elements wrong" % bad)
    bound = refs.gemm_bound(R, S, "float16", "float16")
    check(abs(float(bound[1, 2]) - (4 * 2 ** -11 * float(S[1, 2]) + 2 ** -11 * abs(float(R[1, 2])))) < 1e-15,
          "gemm_bound is docs/INTERFACE.md's formula")
    selfcheck_attn.check_torch(torch, g, check)
    print("self-check: attention and GEMM references agree with SDPA (float64) and with loops")


def check_tlcompat():
    """TileLang's example kernels (gpu/tlcompat.py): the header and example readers, reference.tsv's coverage."""
    import tempfile
    import tlcompat
    with tempfile.TemporaryDirectory() as tmp:
        for p in tlcompat.self_check(tmp):
            check(False, "tlcompat: " + p)
        try:
            import torch
        except Exception:
            return
        import tlcompat_refs
        for p in tlcompat_refs.self_check():
            check(False, "tlcompat_refs: " + p)
        # the run half on the CPU, with a stand-in for the kernel call: a right kernel passes, a wrong one fails
        import importlib.util
        import core
        spec = importlib.util.spec_from_file_location("tilec_selfcheck_compat", os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "tests", "tilelang_compat.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        funcs, _ = cinterface.parse_header(tlcompat._SELF_HEADER)

        class Ctx:
            def __init__(self, wrong):
                self.wrong = wrong

            def randn(self, shape, dtype):
                return torch.randn(shape).to(getattr(torch, dtype))

            def output(self, shape, dtype, init=None):
                return torch.full(shape, float("nan"), dtype=getattr(torch, dtype)) if init is None else init.clone()

            def kernel(self, name):
                return None, funcs[name]

            def call(self, name, A, mask, C, m):
                C.copy_(A.float().sum(-1) * (2 ** -3 if not self.wrong else 2 ** -2))

        refs = {("sub/ex.py", "k"): dict(setup="m = 96; mask = torch.ones(4, dtype=torch.bool)",
                                         reference="ref_program(A, mask)", check="close(1e-2, 1e-2)", line=1)}
        p = tlcompat.plan(tmp, "lib_k", "t1", "sub/ex.py", "k", refs)
        try:
            check("C 0/96" in mod.run(p, Ctx(False), "k"), "tlcompat run: the right stand-in kernel")
        except core.Fail as e:
            check(False, "tlcompat run: the right stand-in kernel failed: %s" % e)
        try:
            mod.run(p, Ctx(True), "k")
            check(False, "tlcompat run: a wrong kernel passed")
        except core.Fail:
            pass
        check_packed_judge(torch, mod, core)
        check_chunked_judge(torch, mod, core)


def check_chunked_judge(torch, mod, core):
    """close() judges in float64 slices of CHUNK elements (a whole-tensor float64 copy of conv_analyze's output is
    69 GiB): the same count and first position as one slice would give, across slice boundaries."""
    out = torch.arange(60, dtype=torch.float16).reshape(3, 4, 5)
    ref = out.clone()
    ref[1, 2, 3] += 1
    ref[2, 3, 4] += 1
    saved = mod.CHUNK
    try:
        for chunk in (7, 60, 1 << 27):
            mod.CHUNK = chunk
            try:
                mod.close(1e-3, 1e-3)("out", out, ref)
                check(False, "close (slices of %d): a wrong output passed" % chunk)
            except core.Fail as e:
                check("2 of 60" in str(e) and "(1, 2, 3)" in str(e), "close (slices of %d): %s" % (chunk, e))
            check("0/60" in mod.close(1e-3, 1e-3)("out", out, out.clone()), "close (slices of %d): equal" % chunk)
            check("2/60" in mod.close(1e-3, 1e-3, max_mismatched_ratio=0.05)("out", out, ref),
                  "close (slices of %d): two allowed" % chunk)
    finally:
        mod.CHUNK = saved


def check_packed_judge(torch, mod, core):
    """A packed output (TileLang's float4_e2m1fn_x2 beside tilec's int8 bytes) is judged code by code, never
    converted: torch has no conversion of it (on the GPU, a device-side assert; the side by side of session 19)."""
    if not hasattr(torch, "float4_e2m1fn_x2"):
        return
    codes = torch.tensor([0x12, -0x35, 0x7f, 0x00], dtype=torch.int8)
    same = codes.clone().view(torch.float4_e2m1fn_x2)
    try:
        check("0/4" in mod.close(0, 0)("quant", codes, same), "close: equal packed codes")
        check("0/4" in mod.close(0, 0)("quant", same, codes), "close: equal packed codes, sides swapped")
    except Exception as e:  # noqa: BLE001
        check(False, "close of int8 codes against float4_e2m1fn_x2: %s" % e)
    other = codes.clone()
    other[2] = 0x70
    try:
        mod.close(0, 0)("quant", other, same)
        check(False, "close: a different packed code passed")
    except core.Fail as e:
        check("1 of 4" in str(e), "close: a different packed code: %s" % e)


def check_sidebyside():
    """The side-by-side benchmark's CPU parts (gpu/sidebyside.py): classes, calls, the table."""
    import sidebyside
    for p in sidebyside.self_check():
        check(False, "sidebyside: " + p)


def main(here):
    rng = random.Random(12345)
    check_numerics(rng)
    check_headers(here)
    check_modules()
    check_report()
    check_issue4(here)
    selfcheck_attn.check(check)
    check_tlcompat()
    check_sidebyside()
    check_torch(rng)
    check_refs_torch()
    for f in failures:
        print("self-check FAIL: " + f)
    print("self-check: %s (%d problems)" % ("FAIL" if failures else "PASS", len(failures)))
    sys.stdout.flush()
    return 1 if failures else 0
