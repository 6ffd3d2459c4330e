#!/usr/bin/env python3
"""Gathers what one tools/gpu/run.sh did (generation here, builds, tests, sanitizer runs, benchmarks) into
the short table printed last, $OUT/summary.txt and $OUT/results.json, and the exit status: non-zero when
anything FAILed. Needs only the standard library.

  python3 gpu/report.py WORK_DIR OUT_DIR

WORK_DIR holds manifest.tsv (tools/gpu/prepare.sh), build.tsv (run.sh), test.jsonl, bench.jsonl,
memcheck.jsonl + memcheck.log, racecheck.jsonl + racecheck.log, synccheck.jsonl + synccheck.log, and steps.tsv (each step's exit status)."""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SAN_BANNER = re.compile(r"^(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Target application "
                        r"returned|Error: process didn't terminate)")


def parse_sanitizer(text):
    """Splits a compute-sanitizer log at the harness's @@tilec-begin/end markers. Returns ({test id: number of
    errors reported while it ran}, errors outside any test, the ERROR SUMMARY count or None)."""
    per, outside, current, summary = {}, 0, None, None
    for line in text.splitlines():
        if line.startswith("@@tilec-begin "):
            current = line.split(None, 1)[1].strip()
            per.setdefault(current, 0)
        elif line.startswith("@@tilec-end "):
            current = None
        elif line.startswith("========= "):
            body = line[len("========= "):]
            m = re.match(r"ERROR SUMMARY: (\d+) error", body)
            if m:
                summary = int(m.group(1))
            if not body or body[0].isspace() or SAN_BANNER.match(body) or body.lower().startswith("warning"):
                continue
            if current is None:
                outside += 1
            else:
                per[current] += 1
    return per, outside, summary


def read_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip() and not line.startswith("#")]


def tested_libs():
    sys.path.insert(0, HERE)
    import harness
    mods = harness.load_modules()
    return {t.lib for t in harness.all_tests(mods)} | {b.lib for b in harness.all_benches(mods)}


def short(s, n=78):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[:n - 3] + "..."


def compute_table(compute, lines):
    """The GEMM / attention benchmarks: TFLOP/s of tilec and of its baseline, timed in the same process, and
    the ratio tilec / baseline against the issue's bar (and target). Returns the bar and target counts."""
    cmet = cmissed = tmet = tmissed = 0
    done = [b for b in compute if b["status"] == "PASS"]
    if not done:
        return cmet, cmissed, tmet, tmissed
    lines.append("")
    lines.append("compute benchmarks (median, L2 flushed; baseline timed the same way in the same process)")
    lines.append("%-36s %-22s %8s %7s %-12s %8s %7s %6s  %s" % ("kernel", "shape", "ms", "TFLOP/s", "baseline",
                                                             "ms", "TFLOP/s", "ratio", "bar"))
    for b in done:
        bar = ""
        if b.get("bar") is not None:
            bar = "%.2f %s" % (b["bar"], "met" if b["met"] else "MISSED")
            cmet += bool(b["met"])
            cmissed += not b["met"]
        if b.get("target") is not None:
            bar += ", target %.2f %s" % (b["target"], "met" if b["target_met"] else "missed")
            tmet += bool(b["target_met"])
            tmissed += not b["target_met"]
        lines.append("%-36s %-22s %8.4f %7.1f %-12s %8.4f %7.1f %6.2f  %s"
                     % (short(b["id"], 36), short(b.get("shape", ""), 22), b["ms"], b["tflops"],
                        short(b.get("torch_name", ""), 12), b["torch_ms"], b["torch_tflops"], b["ratio"], bar)
                     + "".join("; %s %s%s" % (o["name"], "%.2f" % o["ratio"] if "ratio" in o else "n/a",
                                              " (bar %.2f %s)" % (o["bar"], "met" if o["met"] else "MISSED")
                                              if "bar" in o else "")
                               for o in b.get("others", [])))
        for o in b.get("others", []):     # a further baseline's own bar (the backward's against SDPA flash)
            if "bar" in o:
                cmet += bool(o["met"])
                cmissed += not o["met"]
    return cmet, cmissed, tmet, tmissed


def main(work, out):
    rows, lines = [], []
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}

    def row(section, tid, status, detail):
        counts[status] = counts.get(status, 0) + 1
        rows.append(dict(section=section, id=tid, status=status, detail=detail))

    libs = tested_libs()
    steps = {r[0]: r[1:] for r in read_tsv(os.path.join(work, "steps.tsv"))}

    # generation (here) and builds (there)
    gen_failed = []
    for r in read_tsv(os.path.join(work, "manifest.tsv")):
        name, status, detail = (r + ["", "", ""])[:3]
        base = name.replace(".sm80", "")
        if status != "ok" and base in libs:
            row("generate", name, "FAIL", detail)
            gen_failed.append(name)
        elif status != "ok":
            gen_failed.append(name + " (no test yet)")
    builds = read_tsv(os.path.join(work, "build.tsv"))
    nb_ok = 0
    for r in builds:
        name, status, detail = (r + ["", "", ""])[:3]
        if status == "ok":
            nb_ok += 1
        else:
            row("build", name, "FAIL", detail)

    if "selfcheck" in steps:
        rc = steps["selfcheck"][0]
        row("harness", "self-check", "PASS" if rc == "0" else "FAIL",
            "numerics, header reader, test modules" + ("" if rc == "0" else " (exit %s): see build.log" % rc))
    env = {}
    for rec in read_jsonl(os.path.join(work, "test.jsonl")):
        if rec.get("event") == "env":
            env = rec
        elif "status" in rec:
            row("test", rec["id"], rec["status"], rec.get("detail", ""))
    if not any(r["section"] == "test" for r in rows) and "test" in steps:
        row("test", "tests", "FAIL", "no test result recorded (step exit %s)" % steps["test"][0])

    # issue 5's parts: binary mode's checks and the example application (their details are in test.log)
    for part, what in (("binary", "binary mode (gpu/binary): loads, JIT, statuses, threads, contexts"),
                       ("app", "example application, CMake and Make, cuda and binary mode")):
        st = steps.get(part)
        if st is None:
            continue
        if st[0] == "skip":
            row("test", part, "SKIP", st[1] if len(st) > 1 else "")
        else:
            row("test", part, "PASS" if st[0] == "0" else "FAIL", what + ("" if st[0] == "0" else " (exit %s): see test.log" % st[0]))

    # issue 29: the PyTorch operators (tools/gpu/torch_ops.py), one row per check
    st = steps.get("torch")
    if st is not None and st[0] == "skip":
        row("test", "torch", "SKIP", st[1] if len(st) > 1 else "")
    elif st is not None:
        checks = [rec for rec in read_jsonl(os.path.join(work, "torch.jsonl")) if "status" in rec]
        for rec in checks:
            row("test", "torch: " + rec["name"], rec["status"], rec.get("detail", ""))
        if st[0] != "0" and not any(rec["status"] == "FAIL" for rec in checks):
            row("test", "torch", "FAIL", "tools/gpu/torch_ops.py exit %s after %d checks: see test.log" % (st[0], len(checks)))
        elif not checks:
            row("test", "torch", "FAIL", "no check recorded: see test.log")

    # sanitizers: one row per small test, both tools side by side
    san = {}
    for tool in ("memcheck", "racecheck", "synccheck"):
        st = steps.get(tool)
        if st is None:
            continue
        if st[0] == "skip":
            san.setdefault("*", {})[tool] = ("SKIP", st[1] if len(st) > 1 else "")
            continue
        log = ""
        if os.path.exists(os.path.join(work, tool + ".log")):
            with open(os.path.join(work, tool + ".log"), errors="replace") as f:
                log = f.read()
        per, outside, summary = parse_sanitizer(log)
        results = {r["id"]: r for r in read_jsonl(os.path.join(work, tool + ".jsonl")) if "status" in r}
        if not results:
            san.setdefault("*", {})[tool] = ("FAIL", "no test ran under compute-sanitizer (exit %s): see %s.log"
                                             % (st[0], tool))
        for tid, r in results.items():
            n = per.get(tid, 0)
            if r["status"] == "SKIP":
                v = ("SKIP", r.get("detail", ""))
            elif n:
                v = ("FAIL", "%d %s reports: see %s.log" % (n, tool, tool))
            elif r["status"] != "PASS":
                v = ("FAIL", "under %s: %s" % (tool, r.get("detail", "")))
            else:
                v = ("PASS", "clean")
            san.setdefault(tid, {})[tool] = v
        if outside:
            san.setdefault("(outside tests)", {})[tool] = ("FAIL", "%d reports outside any test: see %s.log"
                                                          % (outside, tool))
    for tid, tools in san.items():
        for tool, (status, detail) in tools.items():
            row(tool, tid, status, detail)

    copy = None
    benches = []
    for rec in read_jsonl(os.path.join(work, "bench.jsonl")):
        if rec.get("event") == "copy":
            copy = rec
        elif "status" in rec:
            benches.append(rec)
            if rec["status"] != "PASS":
                row("bench", rec["id"], rec["status"], rec.get("detail", ""))

    # ---------------------------------------------------------------- the table
    head = "tilec GPU harness: %s, torch %s, CUDA %s, seed %s" % (env.get("device", "?"), env.get("torch", "?"),
                                                                env.get("cuda", "?"), env.get("seed", "?"))
    lines.append("=" * 100)
    lines.append(head)
    lines.append("generated here: %s" % (", ".join(r[0] for r in read_tsv(os.path.join(work, "manifest.tsv"))
                                                   if r[1:2] == ["ok"]) or "nothing"))
    if not os.path.exists(os.path.join(work, "manifest.tsv")):
        lines.append("no gpu-build/manifest.tsv: was gpu-build carried? Run tools/gpu/prepare.sh here first and "
                     "pass carry=[\"gpu-build\"]")
    if gen_failed:
        lines.append("not generated: " + ", ".join(gen_failed))
    fakes = [r[0] for r in read_tsv(os.path.join(work, "manifest.tsv")) if len(r) > 2 and r[2].startswith("FAKE")]
    if fakes:
        lines.append("REHEARSAL: %d libraries are FAKE (naive kernels from tools/gpu/fake.py, not tilec's code): "
                     "their rows prove the harness, not tilec: %s" % (len(fakes), ", ".join(fakes)))
    lines.append("nvcc builds: %d ok, %d failed" % (nb_ok, len(builds) - nb_ok))
    lines.append("%-9s %-44s %-5s %s" % ("step", "id", "", "detail"))
    for r in rows:
        if r["section"] in ("generate", "build", "harness", "test"):
            lines.append("%-9s %-44s %-5s %s" % (r["section"], r["id"], r["status"], short(r["detail"])))
    for tid, tools in san.items():   # one line per test for both sanitizer tools
        worst = "FAIL" if any(v[0] == "FAIL" for v in tools.values()) else (
            "PASS" if all(v[0] == "PASS" for v in tools.values()) else "SKIP")
        detail = "; ".join("%s %s" % (tool, v[1] if v[0] != "PASS" else "clean") for tool, v in sorted(tools.items()))
        lines.append("%-9s %-44s %-5s %s" % ("sanitize", tid, worst, short(detail)))
    met = missed = 0
    compute = [b for b in benches if b.get("kind") == "compute"]
    benches = [b for b in benches if b.get("kind") != "compute"]
    if any(b["status"] == "PASS" for b in benches):
        lines.append("")
        lines.append("benchmarks (median, L2 flushed; copy of 2 GiB: %s TB/s); %%copy against a copy of the same bytes"
                     % ("%.2f" % copy["tbps"] if copy else "?"))
        lines.append("%-28s %-20s %8s %6s %6s %6s %7s %6s  %s" % ("kernel", "shape", "ms", "TB/s", "%copy", "%2GiB",
                                                                 "torchms", "torch%", "bar"))
        for b in benches:
            if b["status"] != "PASS":
                continue
            bar = ""
            if b.get("bar") is not None:
                bar = "%.0f%% %s" % (100 * b["bar"], "met" if b["met"] else "MISSED")
                met += bool(b["met"])
                missed += not b["met"]
            lines.append("%-28s %-20s %8.4f %6.2f %5.0f%% %5.0f%% %7s %5s  %s"
                         % (b["id"], short(b.get("shape", ""), 20), b["ms"], b["tbps"], 100 * b["ratio_same"],
                            100 * b["ratio_large"], "%.4f" % b["torch_ms"] if b.get("torch_ms") else "-",
                            "%.0f%%" % (100 * b["torch_ratio"]) if b.get("torch_ratio") else "-", bar))
    cmet, cmissed, tmet, tmissed = compute_table(compute, lines)
    sweep = steps.get("sweep")
    if sweep:
        lines.append("sweep: %s (exit %s): its table is above and at the end of summary.txt, every row in sweep.json" % (
            "not run, " + sweep[1] if sweep[0] == "skip" else "%s s" % (sweep[1] if len(sweep) > 1 else "?"),
            sweep[0]))
    for name, st in steps.items():
        if st and st[0] in ("124", "137"):
            lines.append("step %s was stopped by its timeout: later items did not run" % name)
    verdict = "FAIL" if counts["FAIL"] else ("PASS" if counts["PASS"] else "SKIP")
    lines.append("RESULT: %s: %d PASS, %d FAIL, %d SKIP; bandwidth bars: %d met, %d missed; speed bars against "
                 "cuBLAS/SDPA: %d met, %d missed (targets: %d met, %d missed)"
                 % (verdict, counts["PASS"], counts["FAIL"], counts["SKIP"], met, missed, cmet, cmissed, tmet,
                    tmissed))
    text = "\n".join(lines)
    print(text)
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "summary.txt"), "w") as f:
            f.write(text + "\n\nall rows:\n")
            for r in rows:
                f.write("%s\t%s\t%s\t%s\n" % (r["section"], r["id"], r["status"], r["detail"]))
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(dict(env=env, copy=copy, rows=rows, benches=benches + compute, steps=steps, counts=counts,
                           bars=dict(met=met, missed=missed, compute_met=cmet, compute_missed=cmissed,
                                     target_met=tmet, target_missed=tmissed), verdict=verdict), f, indent=1)
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
