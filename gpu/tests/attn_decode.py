"""Issue 28's decode bar on TileLang's own example file: flash_decoding/example_gqa_decode.py compiled by tilec
(gpu/compat_exports.txt, library tldecode_gqa) at the configuration its heuristic picks on sm_90 (8 splits of the
keys, then the combining kernel: one launch function, its two T.alloc_global workspaces allocated per call).

Test (every kernel): fresh float16 Q (batch, heads, dim), K and V (batch, keys, kv_heads, dim), a random 0/1 mask
byte per key and KV head (as the file's own main() makes it); the output poisoned between guard zones; every
element within docs/INTERFACE.md's attention rule (2e-2 absolute) of the float64 softmax(Q K^T / sqrt(D) + mask) V
(gpu/attn_refs.py decode_reference); the inputs unchanged.

Benchmarks (batch 64, 8 KV heads, 8192 keys, D = 128, 16 and 32 query heads: memory-bound, 2.1 GB of K and V):
bandwidth = bytes of Q, K, V, mask and the output once / time, against a copy of the same bytes in the same run
(bar 0.8, issue 28), and TileLang's own build of the same call (gpu/tlbeside.py) as the row's second kernel
(the torch columns, named TileLang) where TileLang is importable: issue 28 asks tilec >= it."""
import core as C
import tlbeside as TB
import attn_refs as AR
import refs as R

LIB = "tldecode_gqa"
PARAMS = ("batch", "heads", "kv_heads", "keys", "dim")
BAR = 0.8


def kernels():
    return {name: dict(zip(PARAMS, args)) for name, (_, args, _, _) in TB.calls(LIB).items()}


def shape_text(p):
    return "b%d h%d/%d s%d d%d" % (p["batch"], p["heads"], p["kv_heads"], p["keys"], p["dim"])


def inputs(ctx, p):
    b, h, g, s, d = (p[k] for k in PARAMS)
    q = ctx.randn((b, h, d), "float16")
    k, v = ctx.randn((b, s, g, d), "float16"), ctx.randn((b, s, g, d), "float16")
    mask = ctx.randint((b, s, g), 0, 2, "uint8")
    return q, k, v, mask


def nbytes(p):
    b, h, g, s, d = (p[k] for k in PARAMS)
    return 2 * (2 * b * h * d + 2 * b * s * g * d) + b * s * g


def test(p):
    def fn(ctx, kernel):
        t = C.torch()
        q, k, v, mask = inputs(ctx, p)
        before = [x.clone() for x in (q, k, v, mask)]
        o = ctx.output((p["batch"], p["heads"], p["dim"]), "float16")
        ctx.call(kernel, q, k, v, mask, o)
        if not all(t.equal(x, x0) for x, x0 in zip((q, k, v, mask), before)):
            raise C.Fail("the call changed an input")
        return R.judge_attention(ctx, o, AR.decode_reference(q, k, v, mask)) + " (%s)" % shape_text(p)
    return fn


def tests():
    for name, p in kernels().items():
        yield C.Test(LIB, name, test(p), small=p["batch"] * p["keys"] <= 8192, graph=True, variants=False)


def tilelang_decode(name, q, k, v, mask, ref):
    """TileLang's own build of the same call (out_idx: the output returned), compiled here (or taken from TileLang's
    cache, harness.py --mode tl-precompile); its first output must be within the attention rule's 2e-2 of the float64
    reference (ref(): computed only then). None where TileLang is not importable, fails or is wrong (said in the log)."""
    t = C.torch()
    try:
        kern = TB.tilelang_kernel(LIB, name)
        got = kern(q, k, v, mask)
        t.cuda.synchronize()
        err = float((got.double() - ref()).abs().max())
    except TB.Unavailable:
        return None
    except Exception as e:  # noqa: BLE001 - TileLang's failure is no verdict on tilec's row: said in the log
        print("attn_decode: TileLang's own build of %s did not run: %s: %s" % (name, type(e).__name__, str(e)[:300]),
              flush=True)
        return None
    if not err <= R.ATTN_ABS["float16"]:
        print("attn_decode: TileLang's own build of %s is %.3g off the float64 reference: not timed" % (name, err),
              flush=True)
        return None
    return lambda: kern(q, k, v, mask)


def bench_make(name, p):
    def make(ctx, kernel):
        q, k, v, mask = inputs(ctx, p)
        o = ctx.output((p["batch"], p["heads"], p["dim"]), "float16")
        return (q, k, v, mask, o), [o], tilelang_decode(name, q, k, v, mask, lambda: AR.decode_reference(q, k, v, mask))
    return make


def benches():
    for name, p in kernels().items():
        if p["batch"] * p["keys"] <= 8192:
            continue
        yield C.Bench(LIB, name, bench_make(name, p), nbytes=nbytes(p), shape=shape_text(p), bar=BAR,
                      torch_name="TileLang", tilelang=[(LIB, name)])
