"""What a GPU test module uses: the Test and Bench descriptions, and the Context that allocates inputs and
poisoned, guarded outputs, calls a kernel through its C interface, and judges the results.

torch is imported lazily (core.torch()), so every module imports on a machine without it; only running a
test needs it.

Rules (docs/INTERFACE.md, "How correctness is judged"):
- inputs are fresh random data each run (never zeros); the seed is printed so a failure can be replayed;
- every output is filled with 0xFF bytes before each call (NaN in every float format, -1 in signed integers)
  and, outside the sanitizer runs, sits between two 4 KiB guard zones of 0xFF that must survive the call;
- the returned status must be success, then the stream is synchronized and every element is checked.
"""
import ctypes
import os
import sys
import threading
import time
import traceback

import numerics as N

_torch = None


def torch():
    global _torch
    if _torch is None:
        import torch as t
        _torch = t
    return _torch


GUARD_BYTES = 4096     # keeps the output 4 KiB aligned inside its guarded buffer


class Fail(Exception):
    """A test's verdict FAIL with a one-line reason."""


class Skip(Exception):
    """A test's verdict SKIP with a one-line reason (never a PASS)."""


def instantiations(example, tile_file, factory):
    """{NAME: (args, keywords, sm80)} of the kernels `factory(...)` of one example: its .tile file's
    module-level 'NAME = factory(...)' lines (tile_file from the repository root) and gpu/examples.txt's
    'EXAMPLE export NAME=CALL' and 'export90' lines (tools/gpu/prepare.sh adds those), arguments as Python
    literals; sm80: the kernel is in the sm_80-path build too (all but export90). So a test module reads the
    shapes of the kernels it tests from where they are made instead of repeating them."""
    import ast
    import re
    here = os.path.dirname(os.path.abspath(__file__))
    calls = {}
    with open(os.path.join(here, "..", tile_file)) as f:
        for line in f:
            m = re.match(r"(\w+)\s*=\s*(%s\(.*\))\s*$" % factory, line)
            if m:
                calls[m.group(1)] = (m.group(2), True)
    with open(os.path.join(here, "examples.txt")) as f:
        for line in f:
            w = line.split(None, 2)
            if len(w) == 3 and w[0] == example and w[1] in ("export", "export90"):
                name, _, call = w[2].strip().partition("=")
                calls[name] = (call, w[1] == "export")
    out = {}
    for name, (call, sm80) in calls.items():
        c = ast.parse(call, mode="eval").body
        if isinstance(c, ast.Call) and getattr(c.func, "id", None) == factory:
            out[name] = ([ast.literal_eval(a) for a in c.args], {k.arg: ast.literal_eval(k.value) for k in c.keywords},
                         sm80)
    return out


class Test:
    """One correctness test: fn(ctx, kernel) raises Fail/Skip or returns a short detail string.
    small: runs under compute-sanitizer too. graph: also run once replayed from a captured CUDA graph.
    variants: also run on the sm_80-path build of the library (LIB.sm80) when it exists."""

    def __init__(self, lib, kernel, fn, small=False, graph=False, variants=True, label=""):
        self.lib, self.kernel, self.fn = lib, kernel, fn
        self.small, self.graph, self.variants, self.label = small, graph, variants, label


class Bench:
    """One benchmark: make(ctx, kernel) returns (args, outputs, torch_fn) with args in parameter order (or a
    core.Steps: several launches timed as one call), or (args, outputs, torch_fn, {name: fn}) with further
    baselines timed beside torch_fn (compute benchmarks; other_bars gives some of them a bar of their own).
    nbytes: bytes read plus bytes written. bar: the fraction of copy bandwidth the issue asks for, or None.

    With flops (a compute benchmark: GEMM, attention), the kernel is judged against torch_fn, the baseline
    (cuBLAS, SDPA), instead of the copy: torch_fn must return its result, which the kernel's first output
    is compared with before timing; bar and target are fractions of the baseline's speed (tilec / baseline).
    variants: also time the sm_80-path build (LIB.sm80) where it exists. label: tells apart benches of one
    kernel (e.g. one per run-time size)."""

    def __init__(self, lib, kernel, make, nbytes, shape, bar=None, torch_name="", flops=None, target=None,
                 variants=False, label="", rel_limit=None, other_bars=None, tilelang=()):
        self.lib, self.kernel, self.make, self.nbytes = lib, kernel, make, nbytes
        self.tilelang = tuple(tilelang)     # (library, name) of gpu/compat_exports.txt lines TileLang builds beside
        self.other_bars = other_bars or {}  # {further baseline's name: the bar tilec / it is judged by}
        self.rel_limit = rel_limit      # the sanity check against the baseline (gpu/bench.py REL_LIMIT by default)
        self.shape, self.bar, self.torch_name = shape, bar, torch_name
        self.flops, self.target, self.variants, self.label = flops, target, variants, label


class Steps:
    """What a Bench's make returns in place of the argument tuple when one call of the benchmark is several
    launches (an attention backward's preprocess, main kernel and postprocess): steps in order, each
    (kernel name, argument tuple) or a callable of no arguments that queues torch work on the current stream
    (zeroing an accumulator that the kernels atomic_add into). Timed as one call: CUDA events around them all."""

    def __init__(self, *steps):
        self.steps = steps

    def bind(self, ctx, stream):
        """A function of no arguments that queues every step on `stream` (the current stream), checking each
        launch's status (core.Fail on an error); nothing synchronizes, so a CUDA graph may capture it."""
        bound = []
        for s in self.steps:
            if callable(s):
                bound.append(s)
                continue
            name, args = s
            fn, cargs = ctx._args(name, args)
            bound.append((name, fn, cargs))

        def run():
            for b in bound:
                if callable(b):
                    b()
                else:
                    status = b[1](*b[2], stream)
                    if status != 0:
                        ctx._status(b[0], status, "call")
        return run


class Context:
    def __init__(self, lib, seed, guards=True, graph=False):
        self.lib, self.guards, self.graph = lib, guards, graph
        t = torch()
        self.gen = t.Generator(device="cuda")
        self.gen.manual_seed(seed)
        self.outputs = {}       # data_ptr -> (tensor, guarded uint8 buffer, guard size in bytes)
        self.between = set()    # data_ptrs of intermediates (written by one launch of a Steps, read by a later one)
        self.notes = []

    # ------------------------------------------------------------------ data
    def randn(self, shape, dtype, scale=1.0):
        """Normal random data in the given dtype (drawn in float32, then rounded); never all zeros."""
        t = torch()
        x = t.randn(shape, generator=self.gen, device="cuda", dtype=t.float32)
        if scale != 1.0:
            x = x * scale
        return x.to(N.torch_dtype(t, dtype))

    def randint(self, shape, low, high, dtype="int32"):
        t = torch()
        return t.randint(low, high, shape, generator=self.gen, device="cuda", dtype=N.torch_dtype(t, dtype))

    def output(self, shape, dtype, init=None):
        """An output tensor filled with 0xFF bytes, or with a copy of `init` (for kernels that accumulate
        into their output, such as atomic_add), between two guard zones."""
        t = torch()
        td = N.torch_dtype(t, dtype)
        n = 1
        for s in shape:
            n *= s
        nbytes = n * N.itemsize(dtype)
        g = GUARD_BYTES if self.guards else 0
        buf = t.full((nbytes + 2 * g,), 0xFF, dtype=t.uint8, device="cuda")
        out = buf[g:g + nbytes].view(td).view(shape)
        if init is not None:
            out.copy_(init)
        self.outputs[out.data_ptr()] = (out, buf, g, init)
        return out

    def intermediate(self, shape, dtype, init=None):
        """A tensor that one launch of a core.Steps writes and a later one reads (an attention backward's Delta,
        its dQ accumulator): made like an output (0xFF, or init's copy, between guard zones), but exempt from the
        const rule, since it is an output of one kernel and a const input of the next."""
        out = self.output(shape, dtype, init)
        self.between.add(out.data_ptr())
        return out

    def repoison(self):
        for out, buf, g, init in self.outputs.values():
            buf.fill_(0xFF)
            if init is not None:
                out.copy_(init)

    # ------------------------------------------------------------------ calls
    def kernel(self, name):
        try:
            return self.lib.function(name)
        except KeyError:
            raise Fail("the header declares no function '%s'" % name)

    def _args(self, name, args):
        fn, decl = self.kernel(name)
        params = decl.params[:-1]
        if len(args) != len(params):
            raise Fail("%s takes %d arguments before the stream (%s), the test passes %d"
                       % (name, len(params), ", ".join(repr(p) for p in params), len(args)))
        t = torch()
        out = []
        for p, a in zip(params, args):
            if isinstance(a, t.Tensor):
                if p.kind != "pointer":
                    raise Fail("%s: parameter '%s' is %r, the test passes a tensor" % (name, p.name, p))
                is_out = a.data_ptr() in self.outputs
                # empty tensors may share a data pointer (null or not) with anything: constness is unjudgeable
                if a.numel() == 0 or a.data_ptr() in self.between:
                    pass
                elif p.const and is_out:
                    raise Fail("%s: output '%s' is declared const" % (name, p.name))
                elif not p.const and not is_out:
                    raise Fail("%s: '%s' is only read but not declared const (docs/INTERFACE.md)" % (name, p.name))
                dt = str(a.dtype).replace("torch.", "")
                want = _ctype_of_torch(dt)
                if want is not None and p.ctype != want:
                    raise Fail("%s: '%s' holds %s, so docs/INTERFACE.md wants %s*, the header says %s*"
                               % (name, p.name, dt, want, p.ctype))
                out.append(ctypes.c_void_p(a.data_ptr()))
            elif a is None:
                out.append(ctypes.c_void_p(0))
            else:
                if p.kind != "scalar":
                    raise Fail("%s: parameter '%s' is %r, the test passes %r" % (name, p.name, p, a))
                out.append(a)
        return fn, out

    def call(self, name, *args):
        """Calls the kernel on the current stream (or captures and replays it when this context runs in
        graph mode), checks the status, synchronizes and checks the guard zones."""
        t = torch()
        fn, cargs = self._args(name, args)
        if self.graph:
            status = fn(*cargs, ctypes.c_void_p(t.cuda.current_stream().cuda_stream))
            self._status(name, status, "warm-up call before capture")
            t.cuda.synchronize()
            g = t.cuda.CUDAGraph()
            with t.cuda.graph(g):
                status = fn(*cargs, ctypes.c_void_p(t.cuda.current_stream().cuda_stream))
            self._status(name, status, "call under CUDA graph capture")
            self.repoison()
            t.cuda.synchronize()
            g.replay()
        else:
            status = fn(*cargs, ctypes.c_void_p(t.cuda.current_stream().cuda_stream))
            self._status(name, status, "call")
        try:
            t.cuda.synchronize()
        except RuntimeError as e:
            raise Fail("CUDA error after the launch: %s" % str(e).splitlines()[0])
        self._check_guards()

    def call_steps(self, steps):
        """Runs a Steps sequence on the current stream, then synchronizes and checks the guard zones (what
        call does for one kernel)."""
        t = torch()
        steps.bind(self, ctypes.c_void_p(t.cuda.current_stream().cuda_stream))()
        try:
            t.cuda.synchronize()
        except RuntimeError as e:
            raise Fail("CUDA error after the launches: %s" % str(e).splitlines()[0])
        self._check_guards()

    def call_status(self, name, *args):
        """Calls and returns the status without judging it (for tests of the argument checks)."""
        t = torch()
        fn, cargs = self._args(name, args)
        return fn(*cargs, ctypes.c_void_p(t.cuda.current_stream().cuda_stream))

    def expect_empty(self, name, what, *args):
        """An empty batch (docs/INTERFACE.md): the call returns TILEC_SUCCESS and writes nothing. Outputs made
        empty by ctx.output have non-null pointers into their guard zones, so a write is seen there; `what`
        names the size that is 0 ("m = 0")."""
        status = self.call_status(name, *args)
        torch().cuda.synchronize()
        self._check_guards()
        text = "%d (%s)" % (status, self.lib.status_string(status))
        if status != 0:
            raise Fail("%s must return TILEC_SUCCESS, got %s" % (what, text))
        return "%s: status %s, nothing written" % (what, text)

    def _status(self, name, status, what):
        if status != 0:
            err = self.lib.last_cuda_error()
            raise Fail("%s: %s returned %d (%s)%s" % (name, what, status, self.lib.status_string(status),
                                                      "" if not err else ", tilec_last_cuda_error() = %d" % err))

    def _check_guards(self):
        for out, buf, g, _ in self.outputs.values():
            if g == 0:
                continue
            n = buf.numel() - 2 * g
            for lo, hi, where in ((0, g, "before"), (g + n, 2 * g + n, "after")):
                zone = buf[lo:hi]
                bad = (zone != 0xFF).nonzero()
                if bad.numel():
                    first = int(bad[0, 0]) + lo - g
                    raise Fail("wrote outside the output: %d of the %d guard bytes %s it changed (first at byte "
                               "offset %d from the output's start)" % (bad.numel(), g, where, first))

    # ------------------------------------------------------------------ judging
    def expect_ulp(self, out, ref64, dtype, ulps=2):
        """Element-wise rule: every element within `ulps` ulps of the correctly rounded float64 reference."""
        t = torch()
        # The rounding is computed on the CPU, where the self-check proves it exhaustively for 8/16-bit formats.
        out, ref64 = out.cpu(), ref64.cpu()
        rounded = N.t_to_format(t, N.t_round(t, ref64.to(t.float64), dtype), dtype)
        dist = N.t_ulp_distance(t, out.contiguous(), rounded.contiguous(), dtype)
        worst = int(dist.max()) if dist.numel() else 0
        if worst > ulps:
            bad = dist > ulps
            idx = _first_index(bad)
            raise Fail("%d of %d elements more than %d ulp off; first at %s: got %r, want %r rounded to %r (%s ulp)"
                       % (int(bad.sum()), out.numel(), ulps, idx, _val(out[idx]), float(ref64[idx]),
                          _val(rounded[idx]),
                          "NaN-vs-number" if int(dist[idx]) >= N.BIG else int(dist[idx])))
        return "max %d ulp (bound %d)" % (worst, ulps)

    def expect_bound(self, out, ref64, dtype, ulps=2, extra=None, what="", show_ulp=True):
        """Reduction rule: |out - R| <= ulps * ulp_out(R) + extra, extra being a tensor (or float) bound on
        the rounding accumulated before the final conversion (documented at each use). The GEMM and
        attention rules of docs/INTERFACE.md pass ulps=0 and their whole bound as extra (gpu/refs.py), and
        show_ulp=False: their results cancel near zero, where an ulp distance means nothing."""
        t = torch()
        ref64 = ref64.to(t.float64)
        o = out.to(t.float32).to(t.float64) if N.canon(dtype) != "float64" else out
        tol = ulps * N.t_ulp(t, ref64, dtype)
        if extra is not None:
            tol = tol + extra
        err = (o - ref64).abs()
        same = (o == ref64) | (o.isnan() & ref64.isnan())
        bad = ~same & ~(err <= tol)              # NaN errors count as bad
        ratio = t.where(same, t.zeros_like(err), err / tol)
        worst = float(ratio.max()) if ratio.numel() else 0.0
        if show_ulp:
            rounded = N.t_to_format(t, N.t_round(t, ref64, dtype), dtype)
            ulp_max = int(N.t_ulp_distance(t, out.contiguous(), rounded.contiguous(), dtype).max())
        if bool(bad.any()):
            idx = _first_index(bad)
            raise Fail("%d of %d elements beyond the bound%s; first at %s: got %r, want %r, error %.3g > bound %.3g"
                       % (int(bad.sum()), out.numel(), " (" + what + ")" if what else "", idx, _val(out[idx]),
                          float(ref64[idx]), float(err[idx]), float(tol[idx] if tol.dim() else tol)))
        if not show_ulp:
            return "max err %.2f of bound" % worst
        return "max err %.2f of bound, %s ulp" % (worst, "NaN" if ulp_max >= N.BIG else ulp_max)

    def expect_equal(self, out, ref):
        bad = out != ref.to(out.dtype)
        if bool(bad.any()):
            idx = _first_index(bad)
            raise Fail("%d of %d elements differ; first at %s: got %r, want %r"
                       % (int(bad.sum()), out.numel(), idx, _val(out[idx]), _val(ref[idx])))
        return "exact"


def _ctype_of_torch(dt):
    for table in (N.FLOATS, N.INTS):
        for name, f in table.items():
            if f["torch"] == dt:
                return f["ctype"]
    return None


def _first_index(mask):
    nz = mask.nonzero()
    return tuple(int(v) for v in nz[0])


def _val(x):
    x = x.float() if x.dtype.is_floating_point else x
    return x.item()


def run_test(test, lib, seed, guards=True, graph=False):
    """Runs one test; returns (status, detail). Exceptions other than Fail/Skip are FAILs with the place."""
    try:
        t = torch()
        ctx = Context(lib, seed, guards=guards, graph=graph)
        # A stream of its own, not the legacy default stream: the kernel must launch on the stream it is given.
        with t.cuda.stream(t.cuda.Stream()):
            detail = test.fn(ctx, test.kernel) or ""
        t.cuda.synchronize()
        return "PASS", detail
    except Skip as e:
        return "SKIP", str(e)
    except Fail as e:
        return "FAIL", str(e)
    except Exception as e:  # a bug in the test or an unexpected CUDA error: never a PASS
        tb = traceback.extract_tb(e.__traceback__)
        where = "%s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else "?"
        return "FAIL", "%s: %s (at %s)" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "", where)


class Watchdog:
    """Ends the process when the current item overruns: a hung kernel cannot be interrupted from Python.
    on_timeout(item, seconds) records the failure before the process exits with exit_code."""

    def __init__(self, timeout, on_timeout, exit_code):
        self.timeout, self.on_timeout, self.exit_code = timeout, on_timeout, exit_code
        self.current, self.deadline, self.started = None, None, None
        self.lock = threading.Lock()
        if timeout > 0:
            threading.Thread(target=self._run, daemon=True).start()

    def start(self, item):
        with self.lock:
            self.current, self.started = item, time.time()
            self.deadline = self.started + self.timeout

    def stop(self):
        with self.lock:
            self.current = None

    def _run(self):
        while True:
            time.sleep(0.5)
            with self.lock:
                if self.current is not None and time.time() > self.deadline:
                    self.on_timeout(self.current, time.time() - self.started)
                    sys.stdout.flush()
                    os._exit(self.exit_code)
