"""The benchmark phase of the GPU harness (never a timed test: a slow kernel is reported, not failed).

Timing: CUDA events around each call, median of many calls after warm-up. Before every timed call the L2
cache is flushed by reading a 256 MiB buffer (four times the H200's L2): the kernel's data is gone from the
cache, and the lines left behind are clean, so no write-back of someone else's dirty lines is charged to
the kernel (a write-based flush, as in triton's do_bench, leaves up to a whole L2 of dirty lines behind).
The host's launch overhead hides behind the flush and a spin of about 0.1 ms on the GPU after it
(torch.cuda._sleep): the host queues calls faster than the GPU runs them, so no event waits for the host.
Without the spin a call whose host side costs more than the flush (SDPA's Python dispatch at the seed's
small shape: 0.034 to 0.073 ms measured for one 0.017-ms kernel in two runs of 2026-12-02) was charged its
host time whenever the GPU had drained the queue.

Baselines timed the same way in the same process: a device-to-device copy (torch copy_) of 2 GiB, the
ceiling of ANCHORS.md; a copy that moves the same number of bytes as the kernel (read + written), which
carries the same launch and tail costs; and the PyTorch equivalent of the kernel.
Bandwidth counts bytes read plus bytes written, each tensor once.

Compute benchmarks (Bench.flops: GEMM, attention) are judged against their baseline instead (cuBLAS through
torch.matmul, SDPA's flash back end), timed the same way on the same inputs, the two calls interleaved
(Timer.ms_pair: a b b a ..., so clock drift during the run falls on both alike): TFLOP/s = flops / time, and
the ratio tilec / baseline = baseline time / tilec time. A benchmark may name further baselines (SDPA's cuDNN
back end beside its flash one): they are timed in the same interleaved rounds and reported beside. Before
timing, the kernel's result is compared with the baseline's (relative 2-norm error under REL_LIMIT, a sanity
check: the test phase judges every element; a baseline that returns several results, as a backward's dQ, dK, dV,
is compared result by result with the kernel's outputs in the same order, the worst of them judged).
A benchmark whose one call is several launches (core.Steps: an attention backward's preprocess, main kernel and
postprocess, and the zeroing of the dQ accumulator they atomic_add into) is timed as one call, CUDA events around
all of them. A further baseline may carry a bar of its own (Bench.other_bars: issue 28's backward asks >= 1.0 x
SDPA cuDNN, the baseline, and >= 1.6 x SDPA flash, a further one).
"""
import ctypes
import re
import statistics
import time

import core

FLUSH_BYTES = 256 << 20
SPIN_CYCLES = 200_000               # about 0.1 ms at the H200's 1.98 GHz
LARGE_COPY_BYTES = 1 << 30          # each way: 2 GiB moved


class Timer:
    def __init__(self, torch):
        self.t = torch
        self.flush_buf = torch.ones(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")

    def flush(self):
        self.flush_buf.sum()
        spin = getattr(self.t.cuda, "_sleep", None)
        if spin:
            spin(SPIN_CYCLES)

    def ms(self, fn, budget_s=0.4, min_reps=30, max_reps=400):
        """The median of fn's times, each call after a flush."""
        return self._medians([fn], budget_s, min_reps, max_reps, est_runs=5)[0]

    def ms_pair(self, fa, fb, budget_s=0.8, min_reps=30, max_reps=400):
        """Medians of fa's and fb's times from interleaved calls (a b, then b a, ...: each flushed first), so
        that both see the same clocks and temperature: the GPU's clocks drift over a run by more than the 2%
        a ratio is judged by, and two kernels timed one block after the other carry that drift into it."""
        return tuple(self._medians([fa, fb], budget_s, min_reps, max_reps, est_runs=3))

    def ms_all(self, fns, budget_s=0.8, min_reps=30, max_reps=400):
        """ms_pair for any number of calls (tilec and several baselines), interleaved the same way."""
        return self._medians(list(fns), budget_s, min_reps, max_reps, est_runs=3)

    def _medians(self, fns, budget_s, min_reps, max_reps, est_runs):
        """Three warm-up rounds of every fn, a round count that fills budget_s (from est_runs timed rounds,
        0.2 ms of flush and spin per call), then that many rounds, the order of the fns reversed every other round."""
        t = self.t
        for _ in range(3):
            for fn in fns:
                fn()
        t.cuda.synchronize()
        s, e = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(est_runs):
            for fn in fns:
                fn()
        e.record()
        t.cuda.synchronize()
        est = max(s.elapsed_time(e) / est_runs, 1e-3)
        reps = int(min(max(budget_s * 1e3 / (est + 0.2 * len(fns)), min_reps), max_reps))
        ev = [[(t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)) for _ in fns] for _ in range(reps)]
        for i in range(reps):
            order = range(len(fns)) if i % 2 == 0 else reversed(range(len(fns)))
            for j in order:
                self.flush()
                ev[i][j][0].record()
                fns[j]()
                ev[i][j][1].record()
        t.cuda.synchronize()
        return [statistics.median(r[j][0].elapsed_time(r[j][1]) for r in ev) for j in range(len(fns))]


def copy_tbps(timer, torch, nbytes_each_way):
    n = max(16, (nbytes_each_way // 16) * 16)
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = timer.ms(lambda: dst.copy_(src))
    return 2 * n / ms / 1e9, ms


REL_LIMIT = 1e-2      # float16 results of the same product differ by ~1e-3 in relative 2-norm


def bench_id(b, lib):
    return "%s:%s%s" % (lib, b.kernel, ":" + b.label if b.label else "")


def expand(benches, libdir):
    """(id, bench, library name) for each bench on its library and, with variants, on the sm_80-path build."""
    import os
    out = []
    for b in benches:
        libs = [b.lib]
        if b.variants and os.path.exists(os.path.join(libdir, b.lib + ".sm80.so")):
            libs.append(b.lib + ".sm80")
        out.extend((bench_id(b, lib), b, lib) for lib in libs)
    return out


def run(args, benches, rec, find_library, gpu_available, make_watchdog):
    items = [x for x in expand(benches, args.libdir) if not args.only or re.search(args.only, x[0])]
    ok, why = gpu_available()
    if not ok:
        for tid, _, _ in items:
            rec.result(tid, "SKIP", why, 0.0)
        return
    import torch
    timer = Timer(torch)
    dog = make_watchdog(rec, max(args.timeout, 120))
    dog.start("copy-baseline")
    large, large_ms = copy_tbps(timer, torch, LARGE_COPY_BYTES)
    dog.stop()
    rec.write(dict(event="copy", tbps=large, ms=large_ms, bytes=2 * LARGE_COPY_BYTES,
                   device=torch.cuda.get_device_name(0)))
    print("copy baseline: %.3f TB/s (2 GiB, torch copy_, %.3f ms)" % (large, large_ms), flush=True)
    cache = {}
    for i, (tid, b, libname) in enumerate(items):
        if rec.skip_if_unfinished(tid):
            continue
        lib, why = find_library(args.libdir, libname, cache)
        if lib is None:
            rec.result(tid, "SKIP", why, 0.0)
            continue
        rec.start(tid)
        dog.start(tid)
        t0 = time.time()
        try:
            if b.flops is not None:
                r = one_compute(b, lib, timer, torch, args.seed + 1000 + i)
                detail = compute_detail(b, r)
            else:
                r = one(b, lib, timer, torch, args.seed + 1000 + i, large, args.bar_baseline)
                detail = ("%.4f ms %.2f TB/s = %.0f%% of copy (same bytes), %.0f%% of 2 GiB copy; torch %.0f%%"
                          % (r["ms"], r["tbps"], 100 * r["ratio_same"], 100 * r["ratio_large"],
                             100 * (r["torch_ratio"] or 0)))
                if b.bar is not None:
                    detail += "; bar %.0f%%: %s" % (100 * b.bar, "met" if r["met"] else "MISSED")
            rec.result(tid, "PASS", detail, time.time() - t0, **r)
        except core.Fail as e:
            rec.result(tid, "FAIL", str(e), time.time() - t0)
        except Exception as e:
            rec.result(tid, "FAIL", "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""),
                       time.time() - t0)
        dog.stop()
        torch.cuda.empty_cache()


def launcher(ctx, b, args, torch):
    """A function of no arguments that runs the benchmark's call on the current stream: one kernel's launch with
    args, or the launches of a core.Steps (several kernels timed as one call); a launch's error status raises
    core.Fail."""
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    if isinstance(args, core.Steps):
        return args.bind(ctx, stream)
    return core.Steps((b.kernel, tuple(args))).bind(ctx, stream)


def one(b, lib, timer, torch, seed, large, bar_baseline):
    ctx = core.Context(lib, seed, guards=False)
    args, outputs, torch_fn = b.make(ctx, b.kernel)
    run = launcher(ctx, b, args, torch)
    run()
    torch.cuda.synchronize()
    for o in outputs:   # the test phase checks every element; here only that the call wrote something sane
        if o.dtype.is_floating_point and bool(o.float().isnan().any()):
            raise core.Fail("the output holds NaN after the call (see the correctness tests)")
    ms = timer.ms(run)
    same, same_ms = copy_tbps(timer, torch, b.nbytes // 2)
    tbps = b.nbytes / ms / 1e9
    torch_ms = torch_tbps = None
    if torch_fn is not None:
        torch_ms = timer.ms(torch_fn)
        torch_tbps = b.nbytes / torch_ms / 1e9
    ratio_same, ratio_large = tbps / same, tbps / large
    judged = ratio_same if bar_baseline == "same" else ratio_large
    return dict(shape=b.shape, bytes=b.nbytes, ms=ms, tbps=tbps, copy_same_tbps=same, copy_large_tbps=large,
                ratio_same=ratio_same, ratio_large=ratio_large, torch_name=b.torch_name, torch_ms=torch_ms,
                torch_tbps=torch_tbps, torch_ratio=(torch_tbps / (same if bar_baseline == "same" else large))
                if torch_tbps else None, bar=b.bar, bar_baseline=bar_baseline,
                met=None if b.bar is None else judged >= b.bar)


def relative_error(torch, out, ref):
    """||out - ref||_2 / ||ref||_2 in float64 (inf when out holds NaN or inf)."""
    o, r = out.double(), ref.double()
    if not bool(torch.isfinite(o).all()):
        return float("inf")
    return float((o - r).norm() / r.norm().clamp_min(1e-300))


def usable_baselines(torch, others):
    """The further baselines of a compute benchmark ({name: fn}, e.g. SDPA's cuDNN back end) that run here:
    (usable {name: fn}, {name: why not} for those whose first call raised)."""
    ok, why = {}, {}
    for name, fn in (others or {}).items():
        try:
            fn()
            torch.cuda.synchronize()
            ok[name] = fn
        except Exception as e:  # a back end that does not take this shape or type: reported, not fatal
            why[name] = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:160])
    return ok, why


def one_compute(b, lib, timer, torch, seed):
    ctx = core.Context(lib, seed, guards=False)
    made = b.make(ctx, b.kernel)
    args, outputs, base_fn = made[:3]
    others, others_failed = usable_baselines(torch, made[3] if len(made) > 3 else None)
    run = launcher(ctx, b, args, torch)
    run()
    torch.cuda.synchronize()
    ref = base_fn()
    torch.cuda.synchronize()
    rel = max(relative_error(torch, o, r) for o, r in zip(outputs, ref if isinstance(ref, (tuple, list)) else [ref]))
    limit = getattr(b, "rel_limit", None) or REL_LIMIT
    if not rel < limit:
        raise core.Fail("the result differs from %s's: relative 2-norm error %.3g (limit %g; see the "
                        "correctness tests)" % (b.torch_name or "the baseline", rel, limit))
    del ref
    ms, base_ms, *others_ms = timer.ms_all([run, base_fn] + list(others.values()))
    ratio = base_ms / ms
    bars = getattr(b, "other_bars", None) or {}
    extra = [dict(name=n, ms=m, tflops=b.flops / m / 1e9, ratio=m / ms) for n, m in zip(others, others_ms)]
    for o in extra:
        if o["name"] in bars:
            o.update(bar=bars[o["name"]], met=o["ratio"] >= bars[o["name"]])
    extra += [dict(name=n, error=e) for n, e in others_failed.items()]
    return dict(kind="compute", shape=b.shape, flops=b.flops, ms=ms, tflops=b.flops / ms / 1e9,
                torch_name=b.torch_name, torch_ms=base_ms, torch_tflops=b.flops / base_ms / 1e9, ratio=ratio,
                rel_err=rel, bar=b.bar, target=b.target, others=extra,
                met=None if b.bar is None else ratio >= b.bar,
                target_met=None if b.target is None else ratio >= b.target)


def compute_detail(b, r):
    d = "%.4f ms %.1f TFLOP/s; %s %.4f ms %.1f TFLOP/s; tilec/%s %.2f" % (
        r["ms"], r["tflops"], r["torch_name"], r["torch_ms"], r["torch_tflops"], "baseline", r["ratio"])
    if b.bar is not None:
        d += "; bar %.2f: %s" % (b.bar, "met" if r["met"] else "MISSED")
    if b.target is not None:
        d += "; target %.2f: %s" % (b.target, "met" if r["target_met"] else "missed")
    return d + "".join("; " + other_text(o) for o in r["others"])


def other_text(o):
    """One further baseline of a compute benchmark: its time and tilec / it, or why it did not run."""
    if "error" in o:
        return "%s did not run (%s)" % (o["name"], o["error"])
    bar = "" if "bar" not in o else " (bar %.2f: %s)" % (o["bar"], "met" if o["met"] else "MISSED")
    return "%s %.4f ms %.1f TFLOP/s, tilec/%s %.2f%s" % (o["name"], o["ms"], o["tflops"], o["name"], o["ratio"], bar)
