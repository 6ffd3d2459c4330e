#!/usr/bin/env python3
"""Nsight Compute anatomy of side-by-side kernels (issue 25): tilec's kernel and TileLang's of the same call, each
profiled once on the same inputs, their figures printed side by side, on the GPU machine.

  there, PYTHONPATH holding the TileLang bundle (as tools/gpu/side_by_side.py), after tools/gpu/run.sh built the
  libraries (any step list: the side by side's TileLang cache in TILELANG_CACHE_DIR is reused when it ran first):
    python3 tools/gpu/sbs_anatomy.py --gpu-build gpu-build --libdir gpu-build/lib --only 'REGEX' --out OUTDIR
        [--work DIR] [--budget S] [--ncu PATH]
  here, a table again from the records: python3 tools/gpu/sbs_anatomy.py --table OUTDIR/anatomy.json

For each kernel of the side by side's rows (gpu/sidebyside.read_rows) matching --only: TileLang compiles the
manifest's call first (tools/gpu/sbs_compile.py's workers, outside the profiler); then, per side, one process
under `ncu --profile-from-start off` runs tools/gpu/side_by_side.py's own `one()` — the same inputs, the same
check of the two outputs against each other — with its timing replaced: the side runs once unprofiled (module
loads, first-touch), then once between cudaProfilerStart and cudaProfilerStop, so the report holds exactly the
kernels that one call of that side launches. Each side in its own process: nothing of the other side is in
its report. ncu's raw CSV (the sections below, clocks not locked: the figures of the timed runs) is parsed
here: per side the number of kernels and their summed duration, and for the longest kernel registers, grid,
block, achieved occupancy, throughputs (SM, L2, DRAM as % of peak), DRAM bytes, shared-memory bank conflicts,
instructions executed and the four largest warp-stall reasons (cycles per issued instruction).
Writes OUTDIR/anatomy.json (every parsed metric of every kernel) and OUTDIR/anatomy.txt (the table), prints
the table; each process's ncu output goes to WORK/ncu-ID-SIDE.txt and, compressed, to OUTDIR/anatomy-raw.tar.xz."""
import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "gpu"))
sys.path.insert(0, os.path.join(ROOT, "gpu", "tests"))
sys.path.insert(0, HERE)

SECTIONS = ["SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "MemoryWorkloadAnalysis"]
METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "lts__t_sector_hit_rate.pct"]
# (label, the raw metric names ncu versions have used for it)
SHOWN = [
    ("us", ["gpu__time_duration.sum"]),
    ("regs", ["launch__registers_per_thread"]),
    ("grid", ["launch__grid_size"]),
    ("block", ["launch__block_size"]),
    ("smem KB", ["launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block"]),
    ("occ %", ["sm__warps_active.avg.pct_of_peak_sustained_active"]),
    ("SM %", ["sm__throughput.avg.pct_of_peak_sustained_elapsed"]),
    ("L2 %", ["lts__throughput.avg.pct_of_peak_sustained_elapsed"]),
    ("DRAM %", ["dram__throughput.avg.pct_of_peak_sustained_elapsed",
                "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"]),
    ("DRAM MB", ["dram__bytes_read.sum", "dram__bytes_write.sum"]),
    ("bank confl", ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"]),
    ("Minstr", ["smsp__inst_executed.sum"]),
]
STALL = re.compile(r"^(\w*?issue_stalled_)([a-z_]+?)((?:_per_\w+)?\.(?:ratio|pct))$")
STALL_PREFERRED = ("per_issue_active.ratio", "per_warp_active.pct", ".ratio")   # the family shown, first found
EXIT_TIMEOUT = 124


# ------------------------------------------------------------------ the profiled process (under ncu)
def child(args):
    """One side of one row: side_by_side.one() with its timing replaced by one profiled call of the side."""
    import torch
    import tilelang
    import bench
    import core
    import harness
    import side_by_side as SBS
    import sbs_compile as SC
    import sidebyside as S
    S.quiet_tilelang(tilelang)
    row = next(r for r in SC.selected_rows(args.gpu_build, None, None) if r["id"] == args.row)
    position = {r["id"]: k for k, r in enumerate(S.read_rows(args.gpu_build))}

    def profiled(torch_, timer, tc, tl, copy, nbytes, copy_tbps):
        fn = tc if args.side == "tilec" else tl
        fn()
        torch_.cuda.synchronize()
        torch_.cuda.profiler.start()
        fn()
        torch_.cuda.synchronize()
        torch_.cuda.profiler.stop()
        return {}
    SBS.timed = profiled
    lib, why = harness.find_library(args.libdir, row["lib"], {})
    if lib is None:
        print("sbs_anatomy: %s" % why, file=sys.stderr)
        return 2
    kern = SC.tilelang_kernel(tilelang, args.gpu_build, row)
    try:
        with S.importable(S.example_dirs(args.gpu_build, row)):     # as the side by side runs a row
            r = SBS.one(torch, bench.Timer(torch), core, lib, kern, row, args.gpu_build,
                        args.seed + position[row["id"]])
    except (core.Fail, core.Skip) as e:     # the row cannot run: no profile to read
        print("sbs_anatomy: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 3
    if r.get("status") != "PASS":           # the outputs disagree, or tilec fails the reference: nothing profiled
        print("sbs_anatomy: %s: %s" % (r.get("status"), r.get("detail", "")), file=sys.stderr)
        return 3
    return 0


# ------------------------------------------------------------------ ncu's raw CSV
def parse_csv(text):
    """[{metric: value}] per profiled kernel from `ncu --csv --page raw` output (header, a units row, then one row
    per kernel; the application's own lines and ncu's ==PROF== lines around them are skipped)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    head, out = rows[0], []
    for r in rows[1:]:
        if len(r) != len(head) or not r[0].strip().isdigit():   # the units row, or a stray line
            continue
        out.append(dict(zip(head, r)))
    return out


def number(v):
    try:
        return float(str(v).replace(",", ""))
    except ValueError:
        return None


def figures(k):
    """The shown figures of one kernel's metrics (None where its ncu lacks the metric)."""
    f = {"name": k.get("Kernel Name", "?")}
    for label, names in SHOWN:
        vals = [number(k[n]) for n in names if n in k and number(k[n]) is not None]
        if label == "DRAM MB":
            f[label] = sum(vals) / 1e6 if vals else None
        else:
            f[label] = vals[0] if vals else None
    if f["us"] is not None:
        f["us"] /= 1e3      # gpu__time_duration in ns (--print-units base)
    if f["smem KB"] is not None:
        f["smem KB"] /= 1024
    if f["Minstr"] is not None:
        f["Minstr"] /= 1e6
    families = {}     # ncu names each stall reason in several families (per issue, per warp, sampled): one is shown
    for name, v in k.items():
        m = STALL.match(name)
        if m and number(v) is not None and "not_issued" not in name:
            families.setdefault((m.group(1), m.group(3)), {})[m.group(2)] = number(v)
    pick = next((fam for want in STALL_PREFERRED for fam in sorted(families) if fam[1].endswith(want)), None)
    stalls = families.get(pick, {})
    f["stall_family"] = "%s*%s" % pick if pick else None
    f["stalls"] = sorted(stalls.items(), key=lambda kv: -kv[1])[:4]
    return f


def side_summary(kernels):
    if not kernels:
        return None
    figs = [figures(k) for k in kernels]
    main = max(figs, key=lambda f: f["us"] or 0)
    return dict(kernels=len(figs), total_us=sum(f["us"] or 0 for f in figs), main=main, all=figs)


# ------------------------------------------------------------------ the driver
def profile(args, row, side, ncu, log):
    cmd = [ncu, "--profile-from-start", "off", "--csv", "--page", "raw", "--print-units", "base",
           "--clock-control", "none", "--target-processes", "all"]
    for s in SECTIONS:
        cmd += ["--section", s]
    cmd += ["--metrics", ",".join(METRICS)]
    cmd += [sys.executable, os.path.abspath(__file__), "--child", "--side", side, "--row", row["id"],
            "--gpu-build", args.gpu_build, "--libdir", args.libdir, "--seed", str(args.seed)]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        text, rc = p.stdout + "\n" + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        text, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), \
            EXIT_TIMEOUT
    path = os.path.join(args.work, "ncu-%s-%s.txt" % (re.sub(r"[^\w.-]", "_", row["id"]), side))
    with open(path, "w") as f:
        f.write(text)
    kernels = parse_csv(text)
    log("sbs_anatomy: %-44s %-8s rc %s, %d kernels profiled (%.0f s)" % (row["id"], side, rc, len(kernels),
                                                                        time.time() - t0))
    rec = side_summary(kernels)
    if rec is None:
        tail = " ".join(text.strip().splitlines()[-3:])[:300]
        return dict(error="rc %s, no kernel profiled: %s" % (rc, tail))
    return rec


def fmt(v, label):
    if v is None:
        return "-"
    if label in ("regs", "grid", "block", "bank confl"):
        return "%d" % v
    return "%.1f" % v if abs(v) >= 10 else "%.2f" % v


def table(records):
    labels = [label for label, _ in SHOWN]
    lines = ["Nsight Compute anatomy, tilec beside TileLang (tools/gpu/sbs_anatomy.py); per side: kernels, summed "
             "time, and the longest kernel's figures"]
    for rec in records:
        lines.append("")
        lines.append("== %s" % rec["id"])
        lines.append("   %-9s %4s %9s  " % ("side", "kern", "total us") + " ".join("%10s" % x for x in labels))
        for side in ("tilec", "tilelang"):
            s = rec.get(side) or {}
            if "error" in s or not s:
                lines.append("   %-9s %s" % (side, s.get("error", "not profiled")))
                continue
            m = s["main"]
            lines.append("   %-9s %4d %9.1f  " % (side, s["kernels"], s["total_us"]) +
                         " ".join("%10s" % fmt(m[x], x) for x in labels))
            lines.append("   %-9s stalls (cycles per issue): %s; %s" % (
                "", ", ".join("%s %.2f" % kv for kv in m["stalls"]) or "-", m["name"][:80]))
        a, b = rec.get("tilec") or {}, rec.get("tilelang") or {}
        if a.get("total_us") and b.get("total_us"):
            lines.append("   profiled time TileLang / tilec = %.2f" % (b["total_us"] / a["total_us"]))
    return "\n".join(lines)


SELF_TEST_CSV = '''==PROF== Connected to process 12
some line the application printed
"ID","Process ID","Kernel Name","gpu__time_duration.sum","launch__registers_per_thread","launch__grid_size",\
"smsp__average_warp_latency_issue_stalled_barrier.ratio","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",\
"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__pcsamp_warps_issue_stalled_barrier_not_issued",\
"dram__bytes_read.sum","dram__bytes_write.sum"
"","","","nsecond","register/thread","","","ratio","ratio","","byte","byte"
"0","12","kern_a","12,345","128","132","1.5","2.5","7.25","10","1000000","500000"
"1","12","fill","100","16","1","0","0","0","0","0","0"
==PROF== Disconnected from process 12
'''.replace("\\\n", "")


def self_test():
    """The CSV parsing and the table on a made-up report (ctest sbs_anatomy_self_test; no GPU)."""
    s = side_summary(parse_csv(SELF_TEST_CSV))
    assert s["kernels"] == 2, s
    m = s["main"]
    assert m["name"] == "kern_a" and abs(m["us"] - 12.345) < 1e-9 and m["regs"] == 128 and m["grid"] == 132, m
    assert abs(m["DRAM MB"] - 1.5) < 1e-9 and m["block"] is None, m
    assert m["stall_family"] == "smsp__average_warps_issue_stalled_*_per_issue_active.ratio", m
    assert m["stalls"] == [("long_scoreboard", 7.25), ("barrier", 2.5)], m["stalls"]
    assert abs(s["total_us"] - 12.445) < 1e-9, s
    text = table([dict(id="compat_x:k", tilec=s, tilelang=dict(error="rc 3, no kernel profiled"))])
    assert "long_scoreboard 7.25" in text and "rc 3" in text, text
    assert parse_csv("no report at all\n") == []
    print("sbs_anatomy self-test: ok")
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-build", default="gpu-build")
    ap.add_argument("--libdir", default="gpu-build/lib")
    ap.add_argument("--work", default="/tmp/tilec-anatomy")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--budget", type=float, default=300)
    ap.add_argument("--timeout", type=float, default=150, help="seconds one profiled process may take")
    ap.add_argument("--ncu", default=None)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--side", choices=("tilec", "tilelang"))
    ap.add_argument("--row", default=None)
    ap.add_argument("--table", default=None, metavar="JSON")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if args.child:
        return child(args)
    if args.table:
        print(table(json.load(open(args.table))["records"]))
        return 0
    if not args.only:
        ap.error("--only REGEX: name the kernels (profiling every kernel would take the whole budget)")
    import sbs_compile as SC
    start = time.time()
    os.makedirs(args.work, exist_ok=True)
    ncu = args.ncu or next((p for p in (os.popen("command -v ncu").read().strip(), "/usr/local/cuda/bin/ncu")
                            if p and os.path.exists(p)), None)
    if ncu is None:
        print("sbs_anatomy: no ncu (Nsight Compute) on this machine")
        return 2
    rows = SC.selected_rows(args.gpu_build, args.only, None)
    ids = [r["id"] for r in rows]
    print("sbs_anatomy: %d kernels: %s" % (len(ids), " ".join(ids)), flush=True)
    SC.run_workers(["--gpu-build", args.gpu_build, "--only", args.only], args.work, start + args.budget / 3,
                   min(os.cpu_count() or 8, max(1, len(ids))), lambda m: print(m, flush=True), ids=ids)
    records = []
    for row in rows:
        rec = dict(id=row["id"], cls=row["cls"])
        for side in ("tilec", "tilelang"):
            if time.time() - start > args.budget - 20:
                rec[side] = dict(error="no time left in the budget")
                continue
            rec[side] = profile(args, row, side, ncu, lambda m: print(m, flush=True))
        records.append(rec)
    text = table(records)
    print(text, flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "anatomy.json"), "w") as f:
            json.dump(dict(records=records, seconds=round(time.time() - start, 1)), f, indent=1)
        with open(os.path.join(args.out, "anatomy.txt"), "w") as f:
            f.write(text + "\n")
        with tarfile.open(os.path.join(args.out, "anatomy-raw.tar.xz"), "w:xz") as t:
            for name in sorted(os.listdir(args.work)):
                if name.startswith("ncu-"):
                    t.add(os.path.join(args.work, name), arcname=name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
