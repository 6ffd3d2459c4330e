#!/usr/bin/env python3
"""The tilec GPU harness: finds the test modules in gpu/tests/, loads each kernel library (LIB.so beside
LIB.h in the library folder) with ctypes and runs, by mode:

  test      every correctness test, then each library's contract checks (header, queries, argument checks);
  sanitize  the small tests only, without guard zones, printing markers so that a compute-sanitizer log can
            be split by test (run it as: compute-sanitizer --tool memcheck python3 gpu/harness.py --mode sanitize);
  bench     the benchmarks, against the copy bandwidth and the PyTorch equivalent timed in the same process;
  tl-precompile  TileLang's own builds of the kernels the selected benchmarks time beside tilec's (Bench.tilelang),
            compiled in worker processes into TileLang's disk cache, so that the benchmarks get them back at once;
  self-check  the harness's own logic (ulp arithmetic, header reading, test modules); needs no GPU or torch.

Results go to stdout and, one JSON object a line, to --results. A watchdog ends the process (exit 124) when
one test runs past --timeout, after recording that test as FAIL, so `--resume` can carry on after it.
Exit: 0 no failure, 1 some FAIL, 77 nothing could run (no torch, no GPU, no library): never a PASS then.
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cinterface  # noqa: E402
import core  # noqa: E402

EXIT_SKIP = 77
EXIT_TIMEOUT = 124


def load_modules():
    mods = []
    for path in sorted(glob.glob(os.path.join(HERE, "tests", "*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location("tilec_gpu_test_" + name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods.append(mod)
    return mods


def all_tests(mods):
    tests = [t for m in mods for t in getattr(m, "tests", lambda: [])()]
    # the hand-written kernels first: they prove the harness before generated code is judged by it
    return sorted(tests, key=lambda t: not t.lib.startswith("hand_"))


def all_benches(mods):
    benches = [b for m in mods for b in getattr(m, "benches", lambda: [])()]
    return sorted(benches, key=lambda b: not b.lib.startswith("hand_"))


class Recorder:
    """Prints each result and appends it to the results file at once, so a killed run keeps what it did."""

    def __init__(self, path, phase):
        self.path, self.phase = path, phase
        self.counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
        self.done, self.started = set(), set()
        if path and os.path.exists(path):
            with open(path) as f:
                for line in f:
                    try:
                        r = json.loads(line)
                    except ValueError:
                        continue
                    if r.get("phase") != phase:
                        continue
                    if r.get("event") == "start":
                        self.started.add(r["id"])
                    elif "id" in r:
                        self.done.add(r["id"])
        self.started -= self.done       # begun in an earlier attempt and never finished: killed from outside

    def start(self, tid):
        self.write(dict(event="start", id=tid))

    def skip_if_unfinished(self, tid):
        """On --resume, an item that an earlier attempt began but never finished was killed by the step's
        timeout (the watchdog would have recorded it): record it as FAIL instead of running it again."""
        if tid in self.started:
            self.result(tid, "FAIL", "did not finish in an earlier attempt: ended by the step's timeout (a hang?)", 0.0)
            return True
        return tid in self.done

    def write(self, rec):
        rec = dict(rec, phase=self.phase)
        if self.path:
            with open(self.path, "a") as f:
                f.write(json.dumps(rec) + "\n")

    def result(self, tid, status, detail, seconds, **extra):
        self.counts[status] = self.counts.get(status, 0) + 1
        print("%-4s %-44s %6.2fs  %s" % (status, tid, seconds, detail), flush=True)
        self.write(dict(id=tid, status=status, detail=detail, seconds=round(seconds, 3), **extra))


def watchdog(rec, timeout):
    """A core.Watchdog that records the overrunning test or benchmark as failed before ending the process."""
    return core.Watchdog(timeout, lambda tid, seconds: rec.result(
        tid, "FAIL", "timed out after %d s (a hang?); the process was ended" % timeout, seconds), EXIT_TIMEOUT)


def gpu_available():
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        return False, "torch is not importable here (%s)" % type(e).__name__
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA device"
    return True, ""


def find_library(libdir, lib, cache):
    if lib in cache:
        return cache[lib]
    so, h = os.path.join(libdir, lib + ".so"), os.path.join(libdir, lib + ".h")
    if not os.path.exists(so) or not os.path.exists(h):
        cache[lib] = (None, "no %s.so and %s.h in %s (not generated or not built: see the build lines)"
                      % (lib, lib, libdir))
    else:
        try:
            cache[lib] = (cinterface.Library(os.path.abspath(so), h), "")
        except (OSError, cinterface.HeaderError) as e:
            cache[lib] = (None, "cannot load %s: %s" % (lib, e))
    return cache[lib]


def expand(tests, libdir, mode):
    """Each test on its library and on the library's sm_80-path build where one exists."""
    out = []
    for t in tests:
        libs = [t.lib]
        if t.variants and os.path.exists(os.path.join(libdir, t.lib + ".sm80.so")):
            libs.append(t.lib + ".sm80")
        for lib in libs:
            base = "%s:%s%s" % (lib, t.kernel, ":" + t.label if t.label else "")
            if mode == "sanitize":
                if t.small:
                    out.append((base, t, lib, False))
                continue
            out.append((base, t, lib, False))
            if t.graph:
                out.append((base + ":graph", t, lib, True))
    return out


def contract_test(lib, sm, no_code=False):
    """The parts of docs/INTERFACE.md that hold for every library whatever its kernels compute. `sm` is the target
    the library was generated for, as the queries take it (90 for sm_90a, 80 for sm_80). no_code: the library was
    compiled for an older architecture than it was lowered for, so its kernels' _load() must answer
    TILEC_ERROR_NO_DEVICE_CODE (6)."""
    import ctypes
    import torch
    problems = cinterface.contract_problems(lib.funcs, lib.queries, lib.header)
    notes = []
    for name, decl in sorted(lib.funcs.items()):
        thr = lib.query(name, "threads", sm)
        smem = lib.query(name, "shared_bytes", sm)
        if thr is not None and not 0 < thr <= 1024:  # any block size CUDA launches (a file may ask for 1 thread)
            problems.append("%s_threads(%d) = %d" % (name, sm, thr))
        if smem is not None and not (0 <= smem <= 232448):
            problems.append("%s_shared_bytes(%d) = %d" % (name, sm, smem))
        notes.append("%s %s thr %s smem" % (name, thr, smem))
        st = lib.load(name)
        if no_code and st != 6:
            problems.append("%s_load() returned %s, not TILEC_ERROR_NO_DEVICE_CODE" % (name, st))
        elif not no_code and st not in (None, 0):
            problems.append("%s_load() returned %d (%s)" % (name, st, lib.status_string(st)))
        fn, _ = lib.function(name)
        args = [ctypes.c_void_p(0) if p.kind == "pointer" else (1.0 if "float" in p.ctype or "double" in p.ctype
                                                              else 1) for p in decl.params[:-1]]
        status = fn(*args, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if status == 0:
            problems.append("%s accepted null tensor pointers (status 0)" % name)
        elif not lib.status_string(status).strip():
            problems.append("tilec_status_string(%d) is empty" % status)
    try:
        torch.cuda.synchronize()
    except RuntimeError as e:
        problems.append("CUDA error after the null-pointer calls (something launched): %s" % str(e).splitlines()[0])
    if problems:
        raise core.Fail("; ".join(problems))
    return "%d functions; %s" % (len(lib.funcs), ", ".join(notes[:3]) + (" ..." if len(notes) > 3 else ""))


def run_tests(args, mods, rec):
    tests = expand(all_tests(mods), args.libdir, args.mode)
    libnames = []
    for _, _, libname, _ in tests:
        if libname not in libnames:
            libnames.append(libname)
    if args.only:
        tests = [x for x in tests if re.search(args.only, x[0])]
    ok, why = gpu_available()
    if not ok:
        for tid, *_ in tests:
            rec.result(tid, "SKIP", why, 0.0)
        return
    import torch
    rec.write(dict(event="env", device=torch.cuda.get_device_name(0), torch=torch.__version__,
                   cuda=torch.version.cuda, seed=args.seed))
    print("device %s, torch %s, seed %d" % (torch.cuda.get_device_name(0), torch.__version__, args.seed), flush=True)
    dog = watchdog(rec, args.timeout)
    cache = {}
    for i, (tid, t, libname, graph) in enumerate(tests):
        if rec.skip_if_unfinished(tid):
            continue
        lib, why = find_library(args.libdir, libname, cache)
        if lib is None:
            rec.result(tid, "SKIP", why, 0.0)
            continue
        if args.mode == "sanitize":
            print("@@tilec-begin %s" % tid, flush=True)
        rec.start(tid)
        dog.start(tid)
        t0 = time.time()
        status, detail = core.run_test(t, lib, args.seed + i, guards=args.mode != "sanitize", graph=graph)
        dog.stop()
        rec.result(tid, status, detail, time.time() - t0)
        if args.mode == "sanitize":
            print("@@tilec-end %s" % tid, flush=True)
    if args.mode == "test":
        # last: a launcher that ignores a null pointer breaks the CUDA context for what follows
        for libname in libnames:
            tid = libname + ":contract"
            if (args.only and not re.search(args.only, tid)) or rec.skip_if_unfinished(tid):
                continue
            lib, _ = find_library(args.libdir, libname, cache)
            if lib is None:
                continue    # its tests say SKIP and why
            rec.start(tid)
            dog.start(tid)
            t0 = time.time()
            try:
                wrong = "_wrongarch." in libname   # lowered for sm_90a, compiled for compute_80 (wrong_arch.py)
                status, detail = "PASS", contract_test(lib, 80 if libname.endswith(".sm80") and not wrong else 90, wrong)
            except core.Fail as e:
                status, detail = "FAIL", str(e)
            except Exception as e:
                status, detail = "FAIL", "%s: %s" % (type(e).__name__, e)
            dog.stop()
            rec.result(tid, status, detail, time.time() - t0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["test", "sanitize", "bench", "self-check", "list", "tl-precompile"],
                    default="test")
    ap.add_argument("--self-check", dest="mode", action="store_const", const="self-check")
    ap.add_argument("--libdir", default=os.path.join(os.path.dirname(HERE), "gpu-build", "lib"),
                    help="folder with LIB.so and LIB.h (default gpu-build/lib)")
    ap.add_argument("--results", help="append one JSON object a line here")
    ap.add_argument("--resume", action="store_true", help="skip ids that --results already holds")
    ap.add_argument("--only", help="regular expression on test ids")
    ap.add_argument("--seed", type=int, default=None, help="default: fresh from os.urandom (printed)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per test before the watchdog ends the run")
    ap.add_argument("--bar-baseline", choices=["same", "large"], default="same",
                    help="judge bandwidth bars against a copy of the same bytes (default) or the 2 GiB copy")
    args = ap.parse_args(argv)
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "little") & 0x3FFFFFFF

    if args.mode == "self-check":
        import selfcheck
        return selfcheck.main(HERE)

    mods = load_modules()
    if args.mode == "list":
        for tid, *_ in expand(all_tests(mods), args.libdir, "test"):
            print(tid)
        import bench
        for tid, _, _ in bench.expand(all_benches(mods), args.libdir):
            print("bench " + tid)
        return 0

    if args.mode == "tl-precompile":    # TileLang's builds that the selected benchmarks time beside tilec's
        import bench
        import tlbeside
        ids = [b for tid, b, _ in bench.expand(all_benches(mods), args.libdir) if not args.only or re.search(args.only, tid)]
        return tlbeside.precompile(sorted({k for b in ids for k in b.tilelang}))

    rec = Recorder(args.results, args.mode)
    if not args.resume:
        rec.done, rec.started = set(), set()
    if args.mode == "bench":
        import bench
        bench.run(args, all_benches(mods), rec, find_library, gpu_available, watchdog)
    else:
        run_tests(args, mods, rec)
    c = rec.counts
    print("%s: %d PASS, %d FAIL, %d SKIP" % (args.mode, c["PASS"], c["FAIL"], c["SKIP"]), flush=True)
    if c["FAIL"]:
        return 1
    return 0 if c["PASS"] else EXIT_SKIP


if __name__ == "__main__":
    sys.exit(main())
