#!/usr/bin/env python3
"""tilec beside TileLang 0.1.15 on every kernel both compile (issue 25), on the GPU machine.

The whole set (210 kernels) in two device commands, each one half of the list (--shard), then merged here:
  here, once (gpu-build and the TileLang bundle together pass the device tool's 64 MiB: gpu-build travels as xz):
    TILELANG_SRC=/work/.mirror/tile-ai+tilelang/repo TILEKERNELS_SRC=/work/ext/tile_kernels TILEC_GPU_APP=0 \
        tools/gpu/prepare.sh build
    mkdir -p .carry && tar -cf - gpu-build | xz -T2 > .carry/gpu-build.tar.xz
    [ -f .tilelang/site.tar.xz ] || bash ../shared/tools/tilelang/make-bundle.sh .tilelang
  there (device tool: carry [".carry", ".tilelang"], timeout_s 600), twice, SHARD=1/2 then SHARD=2/2:
    tar -xJf .carry/gpu-build.tar.xz && TILEC_GPU_SBS=1 TILEC_GPU_SBS_SHARD=1/2 TILEC_GPU_SBS_S=500 TILEC_GPU_BUILD_ONLY='^(compat_|tk_)' bash tools/gpu/run.sh --skip selfcheck,test,binary,app,bench,tilelang,memcheck,racecheck,synccheck
  here, after (each command's files_at folder holds its sidebyside.json):
    python3 tools/gpu/side_by_side.py --merge RUN1/sidebyside.json RUN2/sidebyside.json --gpu-build gpu-build \
        --out /tmp/sbs-merged          (the one table; exit 1 and the names when a kernel has no record)
On a warm machine the second command rebuilds nothing (run.sh's nvcc cache) and TileLang's kernels stay in its
cache (TILELANG_CACHE_DIR=/tmp/tilec-tl-cache). One shard (105 kernels), estimated from session 13: nvcc of the
libraries about 60 s cold, TileLang's compiles 60-100 s on 16 processes, the timing about 1 s a kernel.

  python3 tools/gpu/side_by_side.py --gpu-build gpu-build --libdir gpu-build/lib --work DIR [--out OUTDIR]
        [--only REGEX] [--shard I/N] [--seed N] [--budget S] [--workers N] [--compile-share F]
      there, PYTHONPATH holding the TileLang bundle (make-bundle.sh's site.tar.xz unpacked); tools/gpu/run.sh runs
      it with TILEC_GPU_SBS=1 after building the libraries. Writes DIR/sbs.jsonl (one record per kernel, appended
      at once), OUTDIR/sidebyside.json and prints the table (gpu/sidebyside.py) last.
  python3 tools/gpu/side_by_side.py --gpu-build gpu-build --plan [--only REGEX] [--shard I/N]
      here, without torch or TileLang: which kernels a run (or a shard) covers, their class and call, and what
      stops the others.
  python3 tools/gpu/side_by_side.py --merge A.json B.json ... [--gpu-build gpu-build] [--out DIR]
      here: one table from the shards' sidebyside.json; exit 1 when a listed kernel has no record.

For each kernel of gpu/sidebyside.read_rows (TileLang's examples and TileKernels that tilec compiled): TileLang
compiles the same call of the same file (its @tilelang.jit factory or the prim_func it returns, with the
file's own pass configurations, TileLang's autotuner off: tools/gpu/sbs_compile.py) in worker processes, one per
core, which all end before the first kernel is timed (--compile-share of the budget at most); then, kernel by
kernel, the timing process gets TileLang's kernel back from TileLang's disk cache and, on the same inputs (the
suite's reference.tsv setup, else random), tilec's library and TileLang's kernel each run once from
the same poisoned or initial outputs and the outputs are compared with each other by the example's own check
(close/similar of reference.tsv, else close(1e-2, 1e-2)). Where the row's line has a reference (tilec's
float64 one, or the package's own torch reference: TileKernels' tile_kernels.torch), tilec's outputs are judged
against it with the same check whether or not the two agree, TileLang's beside them (gpu/sidebyside.
reference_verdict): the record's "reference" says PASS, FAIL (tilec outside, TileLang inside: the row FAILs) or
SUSPECT (TileLang outside too: the reference or the inputs are suspect), and the table counts them. Where the
two disagree, the reference arbitrates (gpu/sidebyside.arbitrate): tilec wrong
or no reference, a FAIL; TileLang wrong, noted and timed. Then both are timed, with a device copy of the same bytes
(all tensors, read + written once) beside them:
  graph  a CUDA graph of R back-to-back launches replayed (R so that one replay takes about 2 ms), each replay
         queued behind a GPU spin of about 1 ms so that host time is never charged, the median over interleaved
         replays divided by R: launch costs gone, inputs warm in L2 where they fit;
  eager  gpu/bench.py's timer: one launch at a time, L2 flushed before each, interleaved medians.
tilec / TileLang = TileLang's time / tilec's time (above 1: tilec faster). A kernel whose same-bytes copy ran far
slower than the run's 2 GiB copy says the GPU was shared (gpu/sidebyside.copy_suspect): it is timed again, then
marked SUSPECT.

The parent process never touches the GPU: it runs the work in a child (--child) and restarts it after a crash
or a hang (the watchdog ends a child whose kernel overruns --timeout), the kernel in flight recorded as FAIL:
where tilec's kernel was in flight. Where TileLang's was (an example's own T.device_assert, a fault or a hang of
TileLang's code on the inputs), the next child runs tilec's kernel alone on the row and judges it against the
example's reference line: a SKIP with that verdict, or a FAIL where tilec is wrong. A kernel TileLang cannot
compile is judged the same way (tilec alone against the reference). The whole run keeps within --budget seconds (default 420)."""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "gpu"))
sys.path.insert(0, os.path.join(ROOT, "gpu", "tests"))
import report  # noqa: E402  read_jsonl
import sidebyside as S  # noqa: E402
import tlcompat as TC  # noqa: E402
sys.path.insert(0, HERE)
import sbs_compile as SC  # noqa: E402

GRAPH_TARGET_MS = 2.0
GRAPH_ROUNDS = 10               # interleaved replays of each graph; the median of their per-launch times
GRAPH_SPIN_CYCLES = 2_000_000   # about 1 ms at the H200's clocks: the host has queued the replay before it ends
EAGER_BUDGET_S = 0.25           # gpu/bench.py's timer: rounds of the three calls that fill this, 10 to 200 of them
EXIT_TIMEOUT = 124


def write(path, rec):
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


# ------------------------------------------------------------------ inputs and calls
def make_inputs(torch, ctx, row, params, sizes, ns, layouts=None):
    """({name: tensor} of tilec's parameters in their logical shapes, {name: init or None} of the outputs,
    scalars {name: int}, the entry, {name: storage} of the parameters the header lays out otherwise (layouts:
    tlcompat.header_layouts; a T.StridedTensor's storage spans its strides, its tensor is a strided view of it)."""
    entry = S.reference_entry(row)
    if entry and entry["setup"]:
        exec(compile(entry["setup"].replace("; ", "\n"), "reference.tsv setup", "exec"), ns)
    S.bind_default_sizes(params, sizes, ns)     # T.dynamic sizes the setup leaves unbound, capped by bytes
    import tilelang_compat as TLC
    tensors, inits, storage = {}, {}, {}
    for name, dtype, dims, role in params:
        shape = TLC._dims(dims, ns, name)
        given = ns.pop(name, None)
        given = given if isinstance(given, torch.Tensor) and tuple(given.shape) == shape else None
        if role == "read":
            def make(s, dtype=dtype):
                return ctx.randn(s, dtype) if dtype.startswith(("float", "bfloat")) else \
                    torch.zeros(s, dtype=ctx_dtype(torch, dtype), device="cuda")
        else:
            inits[name] = given

            def make(s, dtype=dtype):
                return ctx.output(s, dtype)
        placed = TC.laid_out(make, shape, layouts[name], ns) if name in (layouts or {}) else None
        if placed:
            storage[name], tensors[name] = placed
            if given is not None:
                tensors[name].copy_(given)
        elif role == "read":
            tensors[name] = given if given is not None else make(shape)
        else:
            tensors[name] = ctx.output(shape, dtype, init=given)
        if role == "read":
            ns[name] = tensors[name]
    scalars = {s: int(ns[s]) for s in sizes if s in ns}
    return tensors, inits, scalars, entry, storage


def ctx_dtype(torch, dtype):
    import numerics as N
    try:
        return N.torch_dtype(torch, dtype)
    except KeyError:        # bool and the like: torch's own name
        return getattr(torch, dtype)


def fresh_like(torch, t, init):
    """TileLang's copy of an output parameter: `init`, else 0x00 bytes, the start of tilec's run that is compared
    (unwritten_masks): kernels that accumulate into an output (gradients, atomics) start from the same zeros."""
    out = torch.full((t.numel() * t.element_size(),), 0x00, dtype=torch.uint8, device="cuda")
    out = out.view(t.dtype).view(t.shape)
    if init is not None:
        out.copy_(init)
    return out


def tilelang_call(torch, kern, tensors, inits, scalars):
    """(call(), {output name: tensor that will hold TileLang's result}) for TileLang's kernel on the same
    inputs: parameters by name (a prim_func's buffer names are tilec's parameter names), its out_idx outputs
    returned by the call, the others written into fresh tensors."""
    func = kern.prim_func
    names = [func.buffer_map[p].name if p in func.buffer_map else p.name for p in func.params]
    out_idx = list(kern.out_idx or [])
    args, mine = [], {}
    for i, n in enumerate(names):
        if i in out_idx:
            continue
        if n in tensors:
            a = fresh_like(torch, tensors[n], inits.get(n)) if n in inits else tensors[n]
            if n in inits:
                mine[n] = a
            args.append(a)
        elif n in scalars:
            args.append(scalars[n])
        else:
            raise RuntimeError("TileLang's parameter %s has no counterpart in tilec's header" % n)
    returned = [names[i] for i in out_idx]
    holder = {}
    poison_next_allocations(torch, [tensors[n] for n in returned if n in tensors])

    def call():
        r = kern(*args)
        if returned:
            holder["r"] = r if isinstance(r, (list, tuple)) else [r]
    call()
    torch.cuda.synchronize()
    for n, t in zip(returned, holder.get("r", [])):
        mine[n] = t.clone()
    return call, mine


def tables_written_through(torch, ns):
    """The tensors a kernel writes through pointer tables (the setup's `written_through`: {table parameter: [the
    tensors its entries point to]}, gpu/tlcompat.py), before tilec's run: ({table: tilec's tensors}, {table:
    TileLang's copies of them, same starting values}, {table: a table of pointers to TileLang's copies}), so that
    each side writes its own memory and the two can be compared tensor by tensor."""
    through = ns.get("written_through") or {}
    copies = {t: [x.clone() for x in lst] for t, lst in through.items()}
    tables = {t: torch.tensor([x.data_ptr() for x in lst], dtype=torch.int64, device="cuda") for t, lst in copies.items()}
    return through, copies, tables


def poison_next_allocations(torch, likes):
    """Fills with 0xFF bytes blocks of the caching allocator that the next allocations of these sizes take, so
    that the elements of a TileLang out_idx output (torch.empty) that its kernel leaves unwritten read as the
    same poison as tilec's outputs (an unwritten element is then recognisable on both sides)."""
    blocks = [torch.full((t.numel() * t.element_size(),), 0xFF, dtype=torch.uint8, device="cuda") for t in likes]
    torch.cuda.synchronize()
    del blocks


def poisoned(torch, t, byte):
    """Mask of the elements of t whose every byte is `byte`."""
    b = t.contiguous().view(torch.uint8).view(t.numel(), t.element_size())
    return (b == byte).all(dim=1).view(t.shape)


def unwritten_masks(torch, tc, tensors, inits, names):
    """{name: mask of the elements tilec's kernel leaves unwritten} (varlen kernels on empty sequences write
    nothing): the outputs are poisoned with 0x00 bytes and the kernel run again; an element that held 0xFF bytes
    after the first run and 0x00 bytes after the second was written by neither. Only where no output starts from
    a given value (a second run would add to it again)."""
    if any(inits.get(n) is not None for n in names):
        return {}
    first = {n: poisoned(torch, tensors[n], 0xFF) for n in names}
    for n in names:
        tensors[n].view(torch.uint8).fill_(0)
    tc()
    torch.cuda.synchronize()
    return {n: first[n] & poisoned(torch, tensors[n], 0x00) for n in names}


def judge_written(torch, entry, ns, name, a, b, mask):
    """judge() on the elements tilec wrote; an element tilec left unwritten must be unwritten by TileLang too
    (poisoned alike), else tilec lost a write: a failure. Packed outputs (TileLang's float4_e2m1fn_x2 beside
    tilec's int8 bytes) are compared as integers of their size (tilelang_compat.comparable): torch has no
    conversion of them, and asking for one on the GPU is a device-side assert."""
    import tilelang_compat as TLC
    a, b = TLC.comparable(torch, a, b)
    if a.dtype.is_floating_point and b.dtype == a.dtype:     # NaN on both sides at one place: the two agree
        both = torch.isnan(a) & torch.isnan(b)
        if bool(both.any()):
            a, b = a.clone(), b.clone()
            a[both] = 0
            b[both] = 0
    if mask is None or not bool(mask.any()):
        return judge(entry, ns, name, a, b)
    lost = mask & ~poisoned(torch, b, 0xFF) & ~poisoned(torch, b, 0x00)
    if bool(lost.any()):
        import core
        i = tuple(int(x) for x in torch.nonzero(lost)[0])
        raise core.Fail("%s: tilec left %d elements unwritten that TileLang's kernel wrote, first at %s (%r)"
                        % (name, int(lost.sum()), i, float(b[i].double())))
    a, b = a.clone(), b.clone()
    a[mask] = 0
    b[mask] = 0
    return judge(entry, ns, name, a, b) + " (%d unwritten by both)" % int(mask.sum())


def judge(entry, ns, name, a, b):
    """The example's own check of tilec's output a against TileLang's b (close(1e-2, 1e-2) without one)."""
    import tilelang_compat as TLC
    check = entry["check"] if entry else "close(1e-2, 1e-2)"
    fn = TLC.check_fn(check, ns)
    return fn(name, a, b)


# ------------------------------------------------------------------ timing
def graph_ms(torch, fns, rounds=GRAPH_ROUNDS):
    """Per-launch medians of CUDA graphs of back-to-back launches of each fn, replays interleaved. Each replay
    is queued behind a GPU spin of about 1 ms (torch.cuda._sleep), so that its start event waits for the spin
    and not for the host: the host's cudaGraphLaunch of up to 500 nodes, or the host held up by another thread
    (session 13's compile threads), is never charged to the kernels."""
    spin = getattr(torch.cuda, "_sleep", None)
    graphs = []
    for fn in fns:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(3):
            fn()
        e1.record()
        torch.cuda.synchronize()
        reps = int(min(max(GRAPH_TARGET_MS / max(e0.elapsed_time(e1) / 3, 1e-3), 1), 500))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(reps):
                fn()
        g.replay()
        torch.cuda.synchronize()
        graphs.append((g, reps))
    times = [[] for _ in fns]
    for i in range(rounds):
        order = range(len(fns)) if i % 2 == 0 else reversed(range(len(fns)))
        for j in order:
            g, reps = graphs[j]
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if spin:
                spin(GRAPH_SPIN_CYCLES)
            e0.record()
            g.replay()
            e1.record()
            torch.cuda.synchronize()
            times[j].append(e0.elapsed_time(e1) / reps)
    import statistics
    return [statistics.median(t) for t in times]


class TileLangDied(Exception):
    """TileLang's kernel left a sticky CUDA error (a device-side assert of the example's own T.device_assert, a
    fault): this process cannot go on; the next one judges tilec's kernel alone on the row (one(alone=WHY))."""


def alone_result(core, entry, ns, tensors, written, why):
    """The record of a row whose TileLang kernel could not run (why): tilec's outputs judged against the row's
    reference line alone, a FAIL where tilec fails it, else a SKIP (nothing to time beside)."""
    refs, problem = S.eval_reference(entry, ns, len(written))
    verdict = S.reference_verdict(core.Fail, lambda n, x, r: judge(entry, ns, n, x, r), refs, problem,
                                  [(n, tensors[n], None, None) for n in written])
    return dict(status="FAIL" if (verdict or "").startswith("FAIL") else "SKIP", reference=verdict,
                detail="%s; %s" % (why, "tilec against the reference: " + verdict if verdict else
                                   "no reference line: tilec's outputs not judged"))


def compared(torch, core, entry, ns, pairs, written):
    """tilec's outputs against TileLang's by the row's check and, where the row has a reference line, both
    against the reference (evaluated once): (notes, reference verdict, failure or None). The two disagreeing,
    the reference arbitrates (S.arbitrate); tilec failing the reference where TileLang meets it is a failure
    even where the two agree."""
    def check(n, x, r):
        return judge(entry, ns, n, x, r)
    refs, problem = S.eval_reference(entry, ns, len(written))
    verdict = S.reference_verdict(core.Fail, check, refs, problem, pairs[:len(written)])
    try:
        notes = [judge_written(torch, entry, ns, name, a, b, mask) for name, a, b, mask in pairs]
    except core.Fail as e:      # the two disagree: the example's reference, where it has one, says which is right
        try:
            notes = [S.arbitrate(core.Fail, check, entry, ns, pairs, str(e), refs)]
        except core.Fail as f:
            return [], verdict, str(f)
    if verdict and verdict.startswith("FAIL"):
        return notes, verdict, "tilec against the reference: " + verdict
    return notes, verdict, None


def unbound_scalar(name, tensors, scalars, ns):
    """Why scalar parameter `name` has no value (neither a T.dynamic size's nor a number the setup binds), or None
    (reference_dryrun.py asks the same on the CPU, so that such a line fails there and not on the GPU)."""
    if name in tensors or name in scalars:
        return None
    v = ns.get(name)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return "the scalar parameter %s has no value: bind it in the reference.tsv setup" % name
    return None


def one(torch, timer, core, lib, kern, row, gpu_build, seed, copy_tbps=None, phase=lambda name: None, alone=None):
    """One kernel side by side. `phase(name)` is called before each side first runs ("tilec", "tilelang"), so
    that a process that dies is known to have died in tilec's kernel or in TileLang's. alone: why TileLang's
    kernel cannot run on the row (it ended an earlier process, it did not compile; kern is then None): tilec's
    is run and judged against the example's reference alone."""
    header = open(os.path.join(gpu_build, row["lib"] + ".h"), encoding="utf-8", errors="replace").read()
    params, sizes = TC.header_params(header, row["kernel"])
    ns = TC.load_example(S.example_path(gpu_build, row))
    ns.setdefault("torch", torch)
    ctx = core.Context(lib, seed, guards=False)
    try:
        tensors, inits, scalars, entry, storage = make_inputs(torch, ctx, row, params, sizes, ns,
                                                              TC.header_layouts(header, row["kernel"]))
    except core.Fail as e:     # a size the setup leaves unbound: not run (no guessing), not a failure of tilec
        raise core.Skip(str(e))
    _, decl = ctx.kernel(row["kernel"])
    for p in decl.params[:-1]:      # scalar parameters (max_seqlen_q, a T.StridedTensor's stride): the setup's
        if p.name not in tensors and p.name not in scalars:     # value, or the kernel is not run (no guessing)
            why = unbound_scalar(p.name, tensors, scalars, ns)
            if why:
                raise core.Skip(why)
            scalars[p.name] = ns[p.name]
    cargs = [storage.get(p.name, tensors.get(p.name)) if p.name in tensors else scalars[p.name]
             for p in decl.params[:-1]]
    fn, cargs = ctx._args(row["kernel"], cargs)

    def tc():
        st = fn(*cargs, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if st != 0:
            raise core.Fail("tilec's call returned status %d (%s)" % (st, lib.status_string(st)))
    through, tl_through, tl_tables = tables_written_through(torch, ns)
    phase("tilec-alone" if alone else "tilec")
    tc()
    torch.cuda.synchronize()
    written = [p[0] for p in params if p[3] == "written"]
    if alone:
        phase("reference")      # a reference that hangs or dies is not the kernel's failure
        return alone_result(core, entry, ns, tensors, written, alone)
    masks = unwritten_masks(torch, tc, tensors, inits, written)
    phase("tilelang")
    try:
        tl, tl_out = tilelang_call(torch, kern, dict(tensors, **tl_tables), inits, scalars)
    except Exception as e:  # noqa: BLE001 - TileLang's own launch refused (a grid past 65535 in y, say)
        why = "TileLang cannot run it: %s: %s" % (type(e).__name__, " ".join(str(e).split())[:300])
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 - a sticky fault: the next process judges tilec's kernel alone
            raise TileLangDied(why)
        phase("reference")
        return alone_result(core, entry, ns, tensors, written, why)
    pairs = [(name, tensors[name], tl_out[name].to(tensors[name].device), masks.get(name)) for name in written]
    pairs += [("%s[%d]" % (table, i), a, b, None) for table, mine in through.items()
              for i, (a, b) in enumerate(zip(mine, tl_through[table]))]
    phase("reference")
    notes, verdict, failure = compared(torch, core, entry, ns, pairs, written)
    if failure:
        return dict(status="FAIL", detail=failure, reference=verdict)
    phase("timed")          # the timing runs both kernels again: a death there is read as one in TileLang's
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    n = max(16, nbytes // 2 // 16 * 16)
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)

    def copy():
        dst.copy_(src)
    for attempt in (1, 2):     # a copy that says the GPU was shared: timed once more, then reported as suspect
        r = timed(torch, timer, tc, tl, copy, nbytes, copy_tbps)
        r.update(status="PASS", agree="; ".join(notes), bytes=nbytes)
        if verdict:
            r["reference"] = verdict
        if not r.get("suspect"):
            break
    return r


def timed(torch, timer, tc, tl, copy, nbytes, copy_tbps):
    """Eager and graph times of tilec's call, TileLang's and the same-bytes copy, with the copy's check."""
    e_tc, e_tl, e_cp = timer.ms_all([tc, tl, copy], budget_s=EAGER_BUDGET_S, min_reps=10, max_reps=200)
    r = dict(tc_ms=e_tc, tl_ms=e_tl, copy_ms=e_cp, eager_ratio=e_tl / e_tc,
             detail="eager %.4f / %.4f ms" % (e_tc, e_tl))
    try:    # after the eager times: a launch that cannot be captured costs only this half
        g_tc, g_tl, g_cp = graph_ms(torch, [tc, tl, copy])
        r.update(tc_graph_ms=g_tc, tl_graph_ms=g_tl, copy_graph_ms=g_cp, graph_ratio=g_tl / g_tc,
                 tc_copy_pct=100 * g_cp / g_tc, tl_copy_pct=100 * g_cp / g_tl,
                 detail="graph %.4f / %.4f ms, " % (g_tc, g_tl) + r["detail"])
    except Exception as e:  # noqa: BLE001
        r["detail"] += "; no graph times: %s: %s" % (type(e).__name__, " ".join(str(e).split())[:200])
    why = S.copy_suspect(e_cp, nbytes // 2, copy_tbps)
    if why:
        r.update(suspect=why, detail=r["detail"] + "; SUSPECT: " + why)
    return r


def child(args):
    import torch
    import tilelang
    import bench
    import core
    import harness
    S.quiet_tilelang(tilelang)     # the configuration tilec compiled, as the compile workers had it
    t_end = float(args.deadline)
    everything = S.read_rows(args.gpu_build)
    position = {r["id"]: k for k, r in enumerate(everything)}     # a kernel's seed: the same in every shard
    rows = SC.selected_rows(args.gpu_build, args.only, args.shard)
    events = list(report.read_jsonl(args.results))
    done = {r["id"] for r in events if r.get("event") == "result"}
    last_phase = {r["id"]: r.get("phase", "") for r in events if r.get("event") == "start"}     # the last one wins
    alone = {}
    for tid in set(last_phase) - done:      # a crash or hang of an earlier child: its kernel in flight failed
        if last_phase[tid] in ("tilelang", "timed"):    # ... unless TileLang's ran: tilec's judged alone on the row
            alone[tid] = "TileLang's kernel ended the process on these inputs"
            continue
        row = next((r for r in rows if r["id"] == tid), dict(cls="other"))
        side = {"tilec": " in tilec's kernel",
                "tilec-alone": " in tilec's kernel, run alone (TileLang's had ended an earlier process)",
                "reference": " in the comparison or the reference line's evaluation, after both kernels ran"}.get(
            last_phase[tid], "")
        write(args.results, dict(event="result", id=tid, cls=row["cls"], status="FAIL",
                                 detail="the process ended while it ran%s (a crash or a hang: see the log)" % side))
        done.add(tid)
    rows = [r for r in rows if r["id"] not in done]
    if not rows:
        return 0

    def log(msg):
        print(msg, flush=True)
    compiled = SC.read_compiled(args.work)
    dog = core.Watchdog(args.timeout, lambda tid, s: None, EXIT_TIMEOUT)
    timer = bench.Timer(torch)
    copy_tbps, _ = bench.copy_tbps(timer, torch, bench.LARGE_COPY_BYTES)
    log("side_by_side: 2 GiB device copy at %.2f TB/s (the yardstick of copy_suspect)" % copy_tbps)
    cache = {}

    def phase_of(tid, name):
        """Records the phase; the reference's evaluation (a first torch.compile there takes tens of seconds) and
        the timing after it each get the watchdog's full --timeout."""
        write(args.results, dict(event="start", id=tid, phase=name))
        if name in ("reference", "timed"):
            dog.start(tid)
    for row in rows:
        rec = dict(event="result", id=row["id"], cls=row["cls"], tag=row["tag"], suite=row["suite"])
        if time.time() > t_end - 10:
            write(args.results, dict(rec, status="SKIP", detail="no time left in the budget"))
            continue
        got = compiled.get(row["id"])
        lib, why = harness.find_library(args.libdir, row["lib"], cache)
        if got is None or lib is None:
            why = why if lib is None else "TileLang's compile did not finish inside its share of the budget"
            write(args.results, dict(rec, status="SKIP", detail=why))
            continue
        lone = alone.get(row["id"]) or (None if got.get("ok") else got["error"])   # TileLang's kernel cannot run
        write(args.results, dict(event="start", id=row["id"]))
        dog.start(row["id"])
        t0 = time.time()
        try:
            with S.importable(S.example_dirs(args.gpu_build, row)):     # the example's imports, its package's
                kern = None if lone else SC.tilelang_kernel(tilelang, args.gpu_build, row)    # TileLang's cache
                rec["load_seconds"] = round(time.time() - t0, 2)
                rec.update(one(torch, timer, core, lib, kern, row, args.gpu_build, args.seed + position[row["id"]],
                               copy_tbps, lambda name: phase_of(row["id"], name), alone=lone))
        except TileLangDied as e:   # no result: the next process finds the phase "tilelang" and runs tilec alone
            log("side_by_side: %s ended this process in TileLang's kernel (%s)" % (row["id"], e))
            return 3
        except (core.Fail, core.Skip) as e:
            rec.update(status="FAIL" if isinstance(e, core.Fail) else "SKIP", detail=str(e)[:400])
        except Exception as e:  # noqa: BLE001
            rec.update(status="FAIL", detail="%s: %s" % (type(e).__name__, " ".join(str(e).split())[:400]))
            traceback.print_exc()
        dog.stop()
        rec["seconds"] = round(time.time() - t0, 2)
        write(args.results, rec)
        log("%-4s %-44s %s (%.1f s, TileLang's kernel from its cache in %s s)" % (
            rec["status"], row["id"], rec.get("detail", ""), rec["seconds"], rec.get("load_seconds", "-")))
        try:
            torch.cuda.synchronize()
        except RuntimeError:   # a sticky CUDA error: this process cannot go on, the parent restarts it
            return 3
        torch.cuda.empty_cache()
    return 0


def parent(args):
    start = time.time()
    deadline = start + args.budget
    os.makedirs(args.work, exist_ok=True)
    results = os.path.join(args.work, "sbs.jsonl")
    select = (["--only", args.only] if args.only else []) + (["--shard", args.shard] if args.shard else [])
    listed = [r["id"] for r in SC.selected_rows(args.gpu_build, args.only, args.shard)]
    # TileLang's compiles first, in worker processes, all ended before the first kernel is timed
    workers = args.workers or min(os.cpu_count() or 8, max(1, len(listed)))
    compile_deadline = start + args.compile_share * args.budget
    print("side_by_side: %d kernels%s; TileLang compiles them on %d worker processes until %.0f s"
          % (len(listed), " (shard %s)" % args.shard if args.shard else "", workers, compile_deadline - start),
          flush=True)
    SC.run_workers(["--gpu-build", args.gpu_build] + select, args.work, compile_deadline, workers,
                   lambda m: print(m, flush=True), ids=listed)
    compiled = SC.read_compiled(args.work)
    print("side_by_side: TileLang's compiles took %.0f s: %d compiled, %d failed, %d unfinished" % (
        time.time() - start, sum(1 for i in listed if compiled.get(i, {}).get("ok")),
        sum(1 for i in listed if i in compiled and not compiled[i].get("ok")),
        sum(1 for i in listed if i not in compiled)), flush=True)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--gpu-build", args.gpu_build, "--libdir",
           args.libdir, "--results", results, "--work", args.work, "--seed", str(args.seed), "--deadline",
           str(deadline - 15), "--timeout", str(args.timeout)] + select
    for attempt in range(6):
        left = deadline - time.time()
        if left < 30:
            break
        try:
            rc = subprocess.run(cmd, timeout=left).returncode
        except subprocess.TimeoutExpired:
            rc = EXIT_TIMEOUT
        if rc == 0:
            break
        print("side_by_side: the child ended with %s (attempt %d); resuming after the kernel in flight"
              % (rc, attempt + 1), flush=True)
    res = [r for r in report.read_jsonl(results) if r.get("event") == "result"]
    have = {r["id"] for r in res}
    for row in SC.selected_rows(args.gpu_build, args.only, args.shard):     # never reached: said so, per kernel
        if row["id"] not in have:
            res.append(dict(event="result", id=row["id"], cls=row["cls"], tag=row["tag"], suite=row["suite"],
                            status="SKIP", detail="never reached: the timing process ended early (see the log)"))
    for r in res:       # the compile's seconds beside the run's, for the next budget
        r.setdefault("tl_compile_seconds", compiled.get(r["id"], {}).get("seconds"))
    run = dict(seed=args.seed, shard=args.shard, only=args.only, listed=listed, results=res,
               seconds=round(time.time() - start, 1))
    text = S.table(res, "tilec beside TileLang 0.1.15 (tools/gpu/side_by_side.py), seed %d%s, %.0f s"
                   % (args.seed, ", shard " + args.shard if args.shard else "", time.time() - start))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "sidebyside.json"), "w") as f:
            json.dump(run, f, indent=1)
        with open(os.path.join(args.work, "sidebyside.txt"), "w") as f:
            f.write(text + "\n")
        src = os.path.join(args.work, "tilelang-src")
        if os.path.isdir(src):     # one file: the device tool brings back only a few
            subprocess.run(["tar", "-cJf", os.path.join(args.out, "tilelang-sources.tar.xz"), "-C", src, "."])
    print(text, flush=True)
    return 0


def merge(args):
    """Here, after the GPU runs: one table and one sidebyside.json from the shards' sidebyside.json files; every
    kernel a shard listed and none timed is named (and, with --gpu-build, every kernel no shard listed)."""
    runs = []
    for path in args.merge:
        with open(path) as f:
            runs.append(json.load(f))
    res = S.merge_results([r["results"] for r in runs])
    listed = [i for r in runs for i in r.get("listed", [r2["id"] for r2 in r["results"]])]
    if os.path.exists(os.path.join(args.gpu_build, "compat", "kernels.tsv")):
        listed += [r["id"] for r in SC.selected_rows(args.gpu_build, args.only)]
    have = {r["id"] for r in res}
    missing = sorted(set(listed) - have)
    untimed = sorted(r["id"] for r in res if r.get("status") != "PASS")
    text = S.table(res, "tilec beside TileLang 0.1.15 (tools/gpu/side_by_side.py), %d runs merged: seeds %s, "
                        "shards %s" % (len(runs), " ".join(str(r.get("seed")) for r in runs),
                                       " ".join(str(r.get("shard")) for r in runs)))
    text += "\nMERGED: %d kernels listed, %d with a record, %d without one%s; %d not PASS" % (
        len(set(listed)), len(have), len(missing), (": " + " ".join(missing)) if missing else "", len(untimed))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "sidebyside.json"), "w") as f:
            json.dump(dict(merged=args.merge, seeds=[r.get("seed") for r in runs], listed=sorted(set(listed)),
                           results=res), f, indent=1)
        with open(os.path.join(args.out, "sidebyside.txt"), "w") as f:
            f.write(text + "\n")
    print(text)
    return 1 if missing else 0


def plan_only(args):
    rows = SC.selected_rows(args.gpu_build, args.only, args.shard)
    if not S.read_rows(args.gpu_build):
        print("side_by_side: %s has no SUITE/kernels.tsv (TILELANG_SRC=... tools/gpu/prepare.sh)" % args.gpu_build)
        return 77
    bad = 0
    for r in rows:
        call, problems = S.plan(args.gpu_build, r)
        bad += bool(problems)
        print("%-44s %-28s %s" % (r["id"], r["cls"], "; ".join(problems) if problems else (call or "")[:100]))
    print("side_by_side: %d kernels, %d planned, %d with problems" % (len(rows), len(rows) - bad, bad))
    return 1 if bad else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-build", default="gpu-build")
    ap.add_argument("--libdir", default=None)
    ap.add_argument("--work", default="/tmp/tilec-sbs")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--budget", type=float, default=420)
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--shard", default=None, help="I/N: every N-th kernel from the I-th (gpu/sidebyside.shard_rows)")
    ap.add_argument("--workers", type=int, default=0, help="TileLang compile processes (default: one per core)")
    ap.add_argument("--compile-share", type=float, default=0.5,
                    help="the part of --budget TileLang's compiles may take before timing starts")
    ap.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                    help="here: merge the shards' sidebyside.json into one table (and --out DIR/sidebyside.json)")
    ap.add_argument("--plan", action="store_true")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--results", default=None)
    ap.add_argument("--deadline", default=None)
    args = ap.parse_args(argv)
    args.libdir = args.libdir or os.path.join(args.gpu_build, "lib")
    if args.shard:
        S.parse_shard(args.shard)
    if args.merge:
        return merge(args)
    if args.plan:
        return plan_only(args)
    if args.child:     # os._exit: no thread TileLang may have left (its loggers, caches) holds the exit
        rc = child(args)
        sys.stdout.flush()
        os._exit(rc)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
