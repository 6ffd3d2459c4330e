"""The harness self-check's part for issue 28's attention backward and decode rows (gpu/compat_exports.txt,
gpu/attn_refs.py, gpu/tests/attn_bwd.py, attn_decode.py); gpu/selfcheck.py calls check() everywhere and
check_torch() where torch is importable (on the CPU: no GPU needed).

check_torch also runs attn_bwd's test function on the CPU with stand-ins for the three kernels written the way the
example files compute (float32 sums, P and dS rounded to float16, dQ accumulated in float32): the bound must pass
them and fail a kernel that drops the causal mask, scales dS wrongly or leaves dQ's accumulator unconverted."""
import importlib.util
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def load_test_module(name):
    u = importlib.util.spec_from_file_location("tilec_gpu_check_" + name, os.path.join(HERE, "tests", name + ".py"))
    mod = importlib.util.module_from_spec(u)
    u.loader.exec_module(mod)
    return mod


def check(ok):
    """No torch: every main backward kernel has its preprocess and postprocess in its library at the same shape,
    the benchmarks are issue 28's shapes and name TileLang builds the spec has, the FLOP count is the example
    files' own (5 products of 2 B H S^2 D). ok(condition, what) records a failure."""
    import attn_refs
    import tlbeside
    spec = tlbeside.read_spec()
    bwd, dec = load_test_module("attn_bwd"), load_test_module("attn_decode")
    ks = bwd.kernels()
    for lib, main, prep, post, p in ks:
        names = dict(spec[lib]["exports"])
        ok(prep in names and post in names, "%s:%s has no %s / %s beside it" % (lib, main, prep, post))
        if prep in names and post in names:
            c = tlbeside.calls(lib)
            ok(c[prep][1][:4] == [p["batch"], p["heads"], p["seq"], p["dim"]] == c[post][1][:4],
               "%s:%s: its preprocess and postprocess are at another shape" % (lib, main))
    shapes = sorted({(lib, p["dim"], p["causal"]) for lib, _, _, _, p in ks if p["seq"] == 4096 and
                     (p["batch"], p["heads"]) == (8, 16)})
    ok(len(shapes) == 8, "issue 28's backward shapes (D 64, 128, causal and not, two files): %r" % shapes)
    benches = list(bwd.benches()) + list(dec.benches())
    ok(len(benches) >= 9, "issue 28's benchmarks: %d" % len(benches))
    ok(all(b.tilelang and all(name in dict(spec[lib]["exports"]) for lib, name in b.tilelang) for b in benches),
       "issue 28's benchmarks name TileLang builds of lines gpu/compat_exports.txt has")
    ok(attn_refs.backward_flops(8, 16, 4096, 128, False) == 5 * 2.0 * 8 * 16 * 4096 ** 2 * 128 ==
       2 * attn_refs.backward_flops(8, 16, 4096, 128, True), "backward FLOPs")


def check_torch(torch, g, ok):
    """gpu/attn_refs.py against independent computations in float64 on the CPU (the backward's gradients against
    autograd through PyTorch's own scaled_dot_product_attention, both layouts, causal and not, heads in chunks of one;
    lse against the log-sum-exp of the scores; the decode against a loop over heads with the masked keys dropped),
    then attn_bwd's test function on stand-in kernels."""
    import attn_refs as AR
    q, k, v, do = (torch.randn(2, 3, 40, 8, generator=g).half() for _ in range(4))     # (B, H, S, D)
    for layout in ("bhsd", "bshd"):
        for causal in (False, True):
            args = [x if layout == "bhsd" else x.transpose(1, 2).contiguous() for x in (q, k, v, do)]
            r = AR.backward_reference(*args, causal, layout, chunk_bytes=40 * 40 * 8)
            leaves = [x.double().requires_grad_(True) for x in (q, k, v)]
            o = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal)
            grads = torch.autograd.grad(o, leaves, do.double())
            back = (lambda x: x) if layout == "bhsd" else (lambda x: x.transpose(1, 2))
            for name, want in zip(("O", "dQ", "dK", "dV"), (o.detach(),) + tuple(grads)):
                err = float((back(r[name]) - want).abs().max())
                ok(err < 1e-10, "attn_refs.backward_reference %s (%s, causal=%s) differs from autograd by %g"
                   % (name, layout, causal, err))
            sc = torch.matmul(q.double(), k.double().transpose(2, 3)) / math.sqrt(8)
            if causal:
                sc.masked_fill_(torch.ones(40, 40, dtype=torch.bool).triu(1), float("-inf"))
            ok(float((r["lse"] - torch.logsumexp(sc, -1) / math.log(2)).abs().max()) < 1e-10,
               "attn_refs.backward_reference lse (%s, causal=%s) is not log2 sum exp" % (layout, causal))
            ok(all(bool((r[n + "_bound"] > 0).all()) for n in ("dQ", "dK", "dV")),
               "attn_refs bounds of 0 (every key has a query that sees it)")
    qd = torch.randn(2, 6, 8, generator=g).half()
    kd, vd = (torch.randn(2, 30, 3, 8, generator=g).half() for _ in range(2))
    mask = torch.randint(0, 2, (2, 30, 3), generator=g).to(torch.uint8)
    mask[:, 0] = 1
    got = AR.decode_reference(qd, kd, vd, mask, chunk_batches=1)
    bad = 0
    for b in range(2):
        for h in range(6):
            keep = mask[b, :, h // 2] != 0
            kk, vv = kd[b, :, h // 2][keep].double(), vd[b, :, h // 2][keep].double()
            want = torch.softmax(kk @ qd[b, h].double() / math.sqrt(8), 0) @ vv
            bad += float((got[b, h] - want).abs().max()) > 1e-12
    ok(bad == 0, "attn_refs.decode_reference: %d of 12 (batch, head) rows differ from a loop" % bad)
    check_backward_test(torch, ok)
    check_decode_test(torch, ok)


def stand_in_kernels(torch, p, wrong):
    """{name: fn(*args)} computing the three kernels as the example files do, in the files' layout (dQ's
    accumulator in logical order: its make_dq_layout order is the kernels' own business). wrong: 'mask' drops the
    causal mask, 'scale' forgets sm_scale in dS, 'post' leaves dQ at zero, None computes right."""
    layout, causal = p["layout"], p["causal"]

    def bhsd(x):
        return x if layout == "bhsd" else x.transpose(1, 2)

    def prep(o, do, delta):
        delta.copy_((bhsd(o).float() * bhsd(do).float()).sum(-1))

    def bwd(q, k, v, do, lse, delta, dq_acc, dk, dv):
        Q, K, V, dO = (bhsd(x).float() for x in (q, k, v, do))
        D = Q.shape[-1]
        s = 1.0 / math.sqrt(D)
        P = torch.exp2(torch.matmul(Q, K.transpose(2, 3)) * (s / math.log(2)) - lse.unsqueeze(-1))
        if causal and wrong != "mask":
            P = P.masked_fill(torch.ones(P.shape[-2:], dtype=torch.bool).triu(1), 0.0)
        dP = torch.matmul(dO, V.transpose(2, 3))
        dS = (P * (dP - delta.unsqueeze(-1)) * (1.0 if wrong == "scale" else s)).half().float()
        dv.view(v.shape).copy_(bhsd(torch.matmul(P.half().float().transpose(2, 3), dO)).half())
        dk.view(k.shape).copy_(bhsd(torch.matmul(dS.transpose(2, 3), Q)).half())     # dS carries sm_scale
        dq_acc.add_(bhsd(torch.matmul(dS, K)))

    def post(dq_acc, dq):
        dq.copy_(dq_acc.half() if wrong != "post" else torch.zeros_like(dq))
    return prep, bwd, post


def cpu_context(torch, kernels):
    """core.Context's parts that the issue 28 tests use, on the CPU; kernels: {name's first word: fn(*args)}."""
    import core
    import numerics as N

    class Ctx:
        expect_bound = core.Context.expect_bound

        def __init__(self):
            self.gen = torch.Generator().manual_seed(11)

        def randn(self, shape, dtype):
            return torch.randn(shape, generator=self.gen).to(N.torch_dtype(torch, dtype))

        def randint(self, shape, low, high, dtype):
            return torch.randint(low, high, shape, generator=self.gen).to(N.torch_dtype(torch, dtype))

        def output(self, shape, dtype, init=None):
            t = torch.full(shape, float("nan"), dtype=N.torch_dtype(torch, dtype))
            return t if init is None else t.copy_(init.cpu())

        intermediate = output

        def call(self, name, *args):
            kernels[name.split("_")[0]](*args)

        def call_steps(self, steps):
            for name, args in steps.steps:
                self.call(name, *args)
    return Ctx()


def check_decode_test(torch, ok):
    """attn_decode's test function on the CPU: a stand-in that computes in float32 and rounds passes, one that
    ignores the mask fails."""
    import core
    import attn_refs as AR
    mod = load_test_module("attn_decode")
    p = dict(batch=2, heads=8, kv_heads=2, keys=64, dim=16)
    real_torch, core._torch = core._torch, torch
    try:
        for wrong in (False, True):
            def decode(q, k, v, mask, o):
                o.copy_(AR.decode_reference(q, k, v, torch.ones_like(mask) if wrong else mask).half())
            try:
                mod.test(p)(cpu_context(torch, dict(decode=decode)), "decode_x")
                ok(not wrong, "attn_decode's test passes a kernel that ignores the mask")
            except core.Fail as e:
                ok(wrong, "attn_decode's test fails the right stand-in kernel: %s" % e)
    finally:
        core._torch = real_torch


def check_backward_test(torch, ok):
    """attn_bwd's test function at a small shape of each file's layout, on the CPU with stand-in kernels."""
    import core
    mod = load_test_module("attn_bwd")
    real_torch, core._torch = core._torch, torch
    zeros = torch.zeros
    try:
        torch.zeros = lambda *a, **kw: zeros(*a, **{k: v for k, v in kw.items() if k != "device"})
        for layout, grouped in (("bhsd", False), ("bshd", True)):
            p = dict(batch=1, heads=2, seq=48, dim=16, causal=True, layout=layout, grouped=grouped)
            fn = mod.test("lib", "bwd_x", "prep_x", "post_x", p)
            for wrong in (None, "mask", "scale", "post"):
                prep, bwd, post = stand_in_kernels(torch, p, wrong)
                try:
                    fn(cpu_context(torch, dict(prep=prep, bwd=bwd, post=post)), "bwd_x")
                    ok(wrong is None, "attn_bwd's test passes a kernel with the fault %r (%s)" % (wrong, layout))
                except core.Fail as e:
                    ok(wrong is not None, "attn_bwd's test fails the right stand-in kernels (%s): %s" % (layout, e))
    finally:
        torch.zeros = zeros
        core._torch = real_torch
