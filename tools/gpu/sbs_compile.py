#!/usr/bin/env python3
"""TileLang's half of the side by side's compile (issue 25), before anything is timed.

  python3 tools/gpu/sbs_compile.py --worker --gpu-build GB --work DIR [--only REGEX] [--shard I/N]
      one worker process (tools/gpu/side_by_side.py starts one per core): it takes the selected kernels one at a
      time (a kernel is taken by creating DIR/claims/ID exclusively, so the workers share the list without a
      coordinator), has TileLang compile the manifest's call of the example file, and appends one record per
      kernel to DIR/compile.jsonl: {id, ok, seconds[, error]}. TileLang's own disk cache (TILELANG_CACHE_DIR)
      keeps the compiled kernel, so the timing process gets it back by making the same call (a cache hit).

Why processes and not threads: in session 13 (2026-12-03) the compiles ran on 16 threads of the timing
process itself, where they held its interpreter lock, and calls that leave a tunable parameter unnamed
started TileLang's autotuner (runs of 6, 28, 54 and 75 configurations, each compiled on 14 more processes and
then benchmarked on the GPU). The autotuners were still compiling and benchmarking while the
kernels were timed: a same-bytes device copy of 6 MiB took 0.21 ms instead of 3 us, and 155 of 210 kernels
were never timed.

So here: TileLang's autotuner is switched off (gpu/sidebyside.no_autotune: `autotune` returns the function
unchanged, which is what tilec does with it, docs/LANGUAGE.md), so TileLang compiles the very configuration
tilec compiled (the call's arguments, else the function's defaults); every compile runs in a worker process; and
the workers have ended before the first kernel is timed (side_by_side.py waits for them, or ends them at the
compile deadline or once the only kernels left have compiled for KERNEL_LIMIT_S)."""
import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "gpu"))
import report  # noqa: E402  read_jsonl
import sidebyside as S  # noqa: E402
import tlcompat as TC  # noqa: E402


def tilelang_kernel(tilelang, gpu_build, row):
    """TileLang's JITKernel for a row: the manifest's call evaluated in the example's namespace (TileLang
    importable, so its @tilelang.jit factories are defined); a prim_func is compiled with tilelang.compile.
    What the example's module level does to os.environ holds while its kernel compiles (S.RUN_ENV excepted), and
    is undone after."""
    call, problems = S.plan(gpu_build, row)
    if call is None:
        raise RuntimeError("; ".join(problems))
    path = S.example_path(gpu_build, row)
    # the example's own imports are relative to its folder, a package's to the suite's copy of it
    with S.importable(S.example_dirs(gpu_build, row)), S.example_env() as keep_run_env:
        ns = TC.load_example(path)
        keep_run_env()
        obj = eval(compile(call, row["file"] + " (manifest call)", "eval"), ns)
        if type(obj).__name__ == "PrimFunc":     # tvm.tir's (tvm.tirx's in newer TVM)
            obj = tilelang.compile(obj, target="cuda")
    if hasattr(obj, "get_kernel_source") and callable(obj):
        return obj
    raise RuntimeError("the call gives %s, neither a TileLang kernel nor a prim_func" % type(obj).__name__)


def error_text(e):
    return "TileLang cannot compile it: %s: %s" % (type(e).__name__, " ".join(str(e).split())[-300:])


def save_source(sources, kid, kern):
    """TileLang's generated CUDA of one kernel as SOURCES/<id>.cu, for reading beside tilec's (anatomy)."""
    try:
        text = kern.get_kernel_source()
    except Exception as e:  # noqa: BLE001 - a missing source is a note, never a failed kernel
        text = "// no source: %s\n" % e
    os.makedirs(sources, exist_ok=True)
    with open(os.path.join(sources, kid.replace("/", "_") + ".cu"), "w") as f:
        f.write(text)


def claim_name(kid):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", kid)


def claim(claims, kid):
    """True for the one worker that creates claims/ID first."""
    try:
        os.close(os.open(os.path.join(claims, claim_name(kid)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def append(path, rec):
    """One JSON line, written with one write() on an O_APPEND file: lines of concurrent workers never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (json.dumps(rec) + "\n").encode())
    finally:
        os.close(fd)


def read_compiled(work):
    """{id: compile record} of DIR/compile.jsonl (absent: {})."""
    return {r["id"]: r for r in report.read_jsonl(os.path.join(work, "compile.jsonl")) if "id" in r}


def selected_rows(gpu_build, only=None, shard=None):
    """The rows a run covers: read_rows, then --only's regular expression, then --shard's share."""
    rows = [r for r in S.read_rows(gpu_build) if not only or re.search(only, r["id"])]
    return S.shard_rows(rows, shard)


def worker(args):
    import tilelang
    S.quiet_tilelang(tilelang)
    claims = os.path.join(args.work, "claims")
    os.makedirs(claims, exist_ok=True)
    done = read_compiled(args.work)
    parent = os.getppid()
    for row in selected_rows(args.gpu_build, args.only, args.shard):
        # past the compile deadline, or orphaned (its side_by_side.py killed by run.sh's timeout): no new kernel
        if time.time() > args.deadline or os.getppid() != parent:
            break
        if row["id"] in done or not claim(claims, row["id"]):
            continue
        t0 = time.time()
        rec = dict(id=row["id"], ok=True)
        try:
            kern = tilelang_kernel(tilelang, args.gpu_build, row)
            save_source(os.path.join(args.work, "tilelang-src"), row["id"], kern)
        except BaseException as e:  # noqa: BLE001 - TVM errors of every kind: reported per kernel
            rec.update(ok=False, error=error_text(e))
        rec["seconds"] = round(time.time() - t0, 2)
        append(os.path.join(args.work, "compile.jsonl"), rec)
        print("TileLang %s %s in %.1f s%s" % ("compiled" if rec["ok"] else "failed on", row["id"], rec["seconds"],
                                              "" if rec["ok"] else ": " + rec["error"]), flush=True)
    return 0


KERNEL_LIMIT_S = 150     # one kernel's compile past this is taken as hung (session 13's slowest: 47 s, 16 at once)


def stuck(work, ids, limit):
    """The ids that have no compile record although every id without one is claimed, each claim older than
    limit seconds: the kernels whose compile hangs once nothing else is left to compile ([] otherwise)."""
    done = read_compiled(work)
    pending = [i for i in ids if i not in done]
    now = time.time()
    ages = []
    for i in pending:
        try:
            ages.append(now - os.path.getmtime(os.path.join(work, "claims", claim_name(i))))
        except OSError:
            return []       # a kernel not taken yet: workers still have work
    return pending if ages and min(ages) > limit else []


def run_workers(argv_common, work, deadline, n, log, ids=(), kernel_limit=KERNEL_LIMIT_S):
    """Starts n workers (sbs_compile.py --worker ARGV_COMMON), each in its own process group; returns when all
    have ended, at the deadline, or when the only kernels left (of ids) have each compiled for kernel_limit
    seconds (they get a failed record); each group still running then (a worker and its nvcc) is killed."""
    import signal
    import subprocess
    os.makedirs(os.path.join(work, "claims"), exist_ok=True)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--work", work, "--deadline", str(deadline)] + \
        argv_common
    procs = [subprocess.Popen(cmd, start_new_session=True) for _ in range(n)]
    hung, polls = [], 0
    while time.time() < deadline and any(p.poll() is None for p in procs):
        time.sleep(0.5)
        polls += 1
        if ids and polls % 4 == 0:
            hung = stuck(work, ids, kernel_limit)
            if hung:
                break
    late = [p for p in procs if p.poll() is None]
    for p in late:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    for i in hung:
        append(os.path.join(work, "compile.jsonl"), dict(
            id=i, ok=False, seconds=kernel_limit, error="TileLang's compile ran past %d s: ended" % kernel_limit))
    if late:
        log("sbs_compile: %d of %d workers still compiling %s: ended" % (
            len(late), n, "only kernels past %d s (%s)" % (kernel_limit, " ".join(hung)) if hung
            else "at the compile deadline"))
    return len(late)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--gpu-build", default="gpu-build")
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default=None)
    ap.add_argument("--shard", default=None)
    ap.add_argument("--deadline", type=float, default=float("inf"), help="epoch seconds: no kernel taken after")
    args = ap.parse_args(argv)
    if not args.worker:
        ap.error("only --worker is run directly (tools/gpu/side_by_side.py starts the workers)")
    return worker(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
