"""Issue 28's attention backward as TileLang's example files write it, compiled by tilec at the bar's shapes
(gpu/compat_exports.txt: libraries tlbwd_mha from example_mha_bwd_bhsd.py and tlbwd_gqa from example_gqa_bwd.py's
flashattn_bwd_split at groups = 1): the preprocess (Delta = rowsum(O dO)), the main kernel (dK, dV, and dQ by
T.atomic_add into a float32 tensor in make_dq_layout's order, zeroed first) and the postprocess (dQ to float16),
run in that order as the files' backward() does.

Tests (every bwd_* kernel, the small shapes for the sanitizers too): fresh float16 Q, K, V, dO; O and lse from
the float64 forward (O rounded to float16, lse to float32); Delta, dQ, dK, dV poisoned (0xFF) between guard zones,
the dQ accumulator zeros; every element of dQ, dK, dV judged against float64 by gpu/attn_refs.py's bound (the GEMM
rule applied to each product, and 1 ulp of float16 for the output's rounding); the inputs must be unchanged
after the three launches.

Benchmarks (B, H, S = 8, 16, 4096, D = 64 and 128, causal and not, float16): the whole backward (the dQ
accumulator's zeroing and the three launches, CUDA events around them all, core.Steps) against PyTorch SDPA's
backward (torch.autograd.grad of scaled_dot_product_attention's output; dQ, dK, dV compared first) with the cuDNN
back end (the baseline: bar 1.0) and the flash one (FlashAttention-2: bar 1.6, issue 28), and TileLang's own build
of the same three calls (gpu/tlbeside.py) where TileLang is importable, timed in the same interleaved rounds.
FLOPs 10 B H S^2 D (five products), halved when causal."""
import core as C
import tlbeside as TB
import attn_refs as AR

LIBS = {   # library: (the files' tensor layout, dK and dV with a leading groups dimension)
    "tlbwd_mha": ("bhsd", False),
    "tlbwd_gqa": ("bshd", True),
}
PARAMS = {  # the positional parameters of the main kernels' factories
    "flashattn_bwd": ("batch", "heads", "seq", "dim", "causal"),
    "flashattn_bwd_split": ("batch", "heads", "seq", "dim", "dim_v", "causal"),
}
BAR_CUDNN, BAR_FLASH = 1.0, 1.6


def kernels():
    """[(library, main kernel, preprocess, postprocess, dict(batch, heads, seq, dim, causal, layout, grouped))]
    of every bwd_* line of the spec; its partners are prep_/post_ of the same name less _causal / _full."""
    out = []
    for lib, (layout, grouped) in LIBS.items():
        calls = TB.calls(lib)
        for name, (fn, args, kw, _) in calls.items():
            if not name.startswith("bwd_"):
                continue
            p = dict(zip(PARAMS[fn], args), layout=layout, grouped=grouped)
            base = name[len("bwd_"):].rsplit("_", 1)[0]
            out.append((lib, name, "prep_" + base, "post_" + base, p))
    return out


def shape_text(p):
    return "%d,%d,%d,%d%s" % (p["batch"], p["heads"], p["seq"], p["dim"], " causal" if p["causal"] else "")


def tensors(ctx, p):
    """Q, K, V, dO in the file's layout, and the shapes of the (B, H, S) rows and of dK / dV."""
    b, h, s, d = p["batch"], p["heads"], p["seq"], p["dim"]
    shape = (b, h, s, d) if p["layout"] == "bhsd" else (b, s, h, d)
    q, k, v, do = (ctx.randn(shape, "float16") for _ in range(4))
    return q, k, v, do, shape, (b, h, s), ((1,) + shape if p["grouped"] else shape)


def test(lib, bwd, prep, post, p):
    def fn(ctx, kernel):
        t = C.torch()
        q, k, v, do, shape, rows, kv_shape = tensors(ctx, p)
        fwd = AR.backward_reference(q, k, v, do, p["causal"], p["layout"])
        o, lse = fwd["O"].half().contiguous(), fwd["lse"].float().contiguous()
        inputs = [q, k, v, o, do, lse]
        before = [x.clone() for x in inputs]
        delta = ctx.intermediate(rows, "float32")
        dq_acc = ctx.intermediate(shape, "float32", init=t.zeros(shape, dtype=t.float32, device="cuda"))
        dq, dk, dv = ctx.output(shape, "float16"), ctx.output(kv_shape, "float16"), ctx.output(kv_shape, "float16")
        ctx.call_steps(C.Steps((prep, (o, do, delta)), (bwd, (q, k, v, do, lse, delta, dq_acc, dk, dv)),
                               (post, (dq_acc, dq))))
        for name, x, x0 in zip(("Q", "K", "V", "O", "dO", "lse"), inputs, before):
            if not t.equal(x, x0):
                raise C.Fail("the backward changed its input %s" % name)
        details = []
        for name, got in (("dQ", dq), ("dK", dk.view(shape)), ("dV", dv.view(shape))):
            try:
                details.append(name + " " + ctx.expect_bound(got, fwd[name], "float16", ulps=1,
                                                             extra=fwd[name + "_bound"], show_ulp=False,
                                                             what="gpu/attn_refs.py's bound"))
            except C.Fail as e:
                raise C.Fail("%s: %s" % (name, e))
        return "; ".join(details) + " (%s, %s%s)" % (shape_text(p), p["layout"], ", groups dim" if p["grouped"] else "")
    return fn


def tests():
    for lib, bwd, prep, post, p in kernels():
        yield C.Test(lib, bwd, test(lib, bwd, prep, post, p), small=p["seq"] <= 256, variants=False)


def sdpa_backward(q, k, v, do, causal, layout, name):
    """A function running PyTorch SDPA's backward with one back end (gpu/refs.py SDPA_BACKENDS) on (B, H, S, D)
    views of the inputs: torch.autograd.grad of the forward's output (run once, outside the timing), returning
    (dQ, dK, dV) in the inputs' layout; nothing accumulates into .grad between calls."""
    t = C.torch()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import refs as R
    backend = getattr(SDPBackend, R.SDPA_BACKENDS[name])
    leaves = [x.detach().requires_grad_(True) for x in (q, k, v)]
    with sdpa_kernel(backend):
        out = t.nn.functional.scaled_dot_product_attention(*(AR.to_bhsd(x, layout) for x in leaves), is_causal=causal)
    g_out = AR.to_bhsd(do, layout)

    def run():
        with sdpa_kernel(backend):
            return t.autograd.grad(out, leaves, g_out, retain_graph=True)
    return run


def tilelang_backward(lib, bwd, prep, post, q, k, v, o, do, lse, kv_shape, check):
    """TileLang's own build of the same three calls, run as the file's backward() runs them (Delta and dQ
    returned by the preprocess and postprocess, out_idx; the accumulator from torch.zeros; dK and dV given).
    Compiled on the first call, whose (dQ, dK, dV) must pass check (the sanity check against SDPA)."""
    t = C.torch()
    state = {}

    def run():
        if not state:
            state.update(prep=TB.tilelang_kernel(lib, prep), bwd=TB.tilelang_kernel(lib, bwd),
                         post=TB.tilelang_kernel(lib, post))
            state["dk"], state["dv"] = (t.empty(kv_shape, dtype=k.dtype, device=k.device) for _ in range(2))
        delta = state["prep"](o, do)
        dq_acc = t.zeros(q.shape, dtype=t.float32, device=q.device)
        state["bwd"](q, k, v, do, lse, delta, dq_acc, state["dk"], state["dv"])
        got = (state["post"](dq_acc), state["dk"], state["dv"])
        if "checked" not in state:
            check(got)
            state["checked"] = True
        return got
    return run


def bench_make(lib, bwd, prep, post, p):
    def make(ctx, kernel):
        import bench
        t = C.torch()
        q, k, v, do, shape, rows, kv_shape = tensors(ctx, p)
        fwd = AR.backward_reference(q, k, v, do, p["causal"], p["layout"], bounds=False)
        o, lse = fwd["O"].half().contiguous(), fwd["lse"].float().contiguous()
        del fwd
        delta = ctx.intermediate(rows, "float32")
        dq_acc = ctx.intermediate(shape, "float32")
        dq, dk, dv = ctx.output(shape, "float16"), ctx.output(kv_shape, "float16"), ctx.output(kv_shape, "float16")
        run = C.Steps(lambda: dq_acc.zero_(), (prep, (o, do, delta)),
                      (bwd, (q, k, v, do, lse, delta, dq_acc, dk, dv)), (post, (dq_acc, dq)))
        cudnn = sdpa_backward(q, k, v, do, p["causal"], p["layout"], "SDPA cuDNN")
        flash = sdpa_backward(q, k, v, do, p["causal"], p["layout"], "SDPA flash")

        def check(got):
            ref = cudnn()
            rel = max(bench.relative_error(t, a.reshape(b.shape), b) for a, b in zip(got, ref))
            if not rel < bench.REL_LIMIT:
                raise RuntimeError("TileLang's dQ, dK, dV differ from SDPA cuDNN's: relative error %.3g" % rel)
        others = {"SDPA flash": flash}
        try:
            import tilelang  # noqa: F401 - only whether TileLang's build can be timed beside
            others["TileLang"] = tilelang_backward(lib, bwd, prep, post, q, k, v, o, do, lse, kv_shape, check)
        except Exception:  # noqa: BLE001 - no bundle: the row says nothing of TileLang
            pass
        return run, [dq, dk.view(shape), dv.view(shape)], cudnn, others
    return make


def benches():
    for lib, bwd, prep, post, p in kernels():
        if p["seq"] <= 256:
            continue
        b, h, s, d = p["batch"], p["heads"], p["seq"], p["dim"]
        yield C.Bench(lib, bwd, bench_make(lib, bwd, prep, post, p), nbytes=2 * 8 * b * h * s * d,
                      shape=shape_text(p), bar=BAR_CUDNN, torch_name="SDPA cuDNN",
                      flops=AR.backward_flops(b, h, s, d, p["causal"]), other_bars={"SDPA flash": BAR_FLASH},
                      tilelang=[(lib, prep), (lib, bwd), (lib, post)])
