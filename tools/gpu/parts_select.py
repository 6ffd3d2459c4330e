#!/usr/bin/env python3
"""The Python half of tools/gpu/parts.sh: which libraries a part builds, and the short account of what it did.
Needs neither torch, TileLang nor a GPU (it runs here for the dry run, there for the real one).

  python3 tools/gpu/parts_select.py select MODE GPU_BUILD LISTFILE
      MODE test, san (the sanitizer's small tests), bench, sbs or ncu (side-by-side rows too). Prints tab-separated lines:
        regex   REGEX     the list's entries joined with '|' (tools/gpu/run.sh --only)
        ids     N         how many test ids (test, san), benchmark ids (bench) or side-by-side rows (sbs) it matches
        lib     NAME      a library to build (NAME.cu + NAME.h in GPU_BUILD, or gpu/handwritten/NAME.cu)
        missing NAME      a matched id's library that GPU_BUILD does not hold (not generated, or not packed)
      exit 0 when at least one library is selected, 3 when nothing is (never a run that tests nothing), 2 when
      the list is unreadable or empty, or an entry is no regular expression.
  python3 tools/gpu/parts_select.py brief LABEL PART_OUT
      the part's few lines: counts, each step's exit, every FAIL, the side by side's means (from run.sh's
      results.json and sidebyside.json, or sbs.jsonl, in PART_OUT).
  python3 tools/gpu/parts_select.py compare A B LABEL_A LABEL_B
      A and B: sidebyside.json files or folders holding one (or a cut-off run's sbs.jsonl); two side-by-side runs of the same kernels (an A/B of two gpu-builds): tilec's graph time in each, B's
      speed-up over A (tilec A / tilec B, >1: B faster) and each run's ratio to TileLang, one row per kernel.

List file: one entry a line, '#' comments and blank lines ignored; each entry is a Python regular expression
searched in the ids, `LIB:KERNEL[:LABEL][:graph]` for tests and benchmarks, `LIB:KERNEL` for side-by-side rows.
A library's name selects every id of the libraries whose name contains it; `^gemm:` is the library gemm alone
(`^gemm(\\.sm80)?:` with its sm_80-path build); `.` selects everything. LISTFILE `ALL` means `.`."""
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "gpu"))
MODES = ("test", "san", "bench", "sbs", "ncu")
MAX_FAIL_LINES = 25


def list_regex(path):
    """The list file's entries as one regular expression; ValueError when there is none or one is malformed."""
    if path == "ALL":
        return "."
    with open(path, encoding="utf-8") as f:
        entries = [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
    if not entries:
        raise ValueError("%s has no entry (a line '.' selects everything)" % path)
    # A line ALL means what the LISTFILE argument ALL means (session 45 lost a device call to the regular
    # expression "ALL", which matches no id).
    entries = ["." if e == "ALL" else e for e in entries]
    for e in entries:
        try:
            re.compile(e)
        except re.error as err:
            raise ValueError("%s: %r is no regular expression (%s)" % (path, e, err))
    return "|".join(entries)


def candidate_ids(mode, gpu_build):
    """[(id, library)] of everything MODE could run on GPU_BUILD, before the list's filter."""
    os.environ["GPU_BUILD"] = os.path.abspath(gpu_build)    # gpu/tests/tilelang_compat.py reads it on import
    if mode in ("sbs", "ncu"):     # the anatomy profiles side-by-side rows
        sys.path.insert(0, HERE)
        import sbs_compile as SC
        return [(r["id"], r["lib"]) for r in SC.selected_rows(gpu_build)]
    import harness
    mods = harness.load_modules()
    libdir = os.path.join(gpu_build, "lib")
    if mode == "bench":
        import bench
        return [(tid, lib) for tid, _, lib in bench.expand(harness.all_benches(mods), libdir)]
    return [(tid, lib) for tid, _, lib, _ in harness.expand(harness.all_tests(mods), libdir,
                                                            "sanitize" if mode == "san" else "test")]


def has_library(gpu_build, name):
    if os.path.exists(os.path.join(ROOT, "gpu", "handwritten", name + ".cu")):
        return True
    return all(os.path.exists(os.path.join(gpu_build, name + ext)) for ext in (".cu", ".h"))


def select(mode, gpu_build, listfile):
    if mode not in MODES:
        print("parts_select: mode %r is none of %s" % (mode, ", ".join(MODES)), file=sys.stderr)
        return 2
    try:
        regex = list_regex(listfile)
    except (OSError, ValueError) as e:
        print("parts_select: %s" % e, file=sys.stderr)
        return 2
    matched = [(tid, lib) for tid, lib in candidate_ids(mode, gpu_build) if re.search(regex, tid)]
    libs = []
    for _, lib in matched:
        if lib not in libs:
            libs.append(lib)
    print("regex\t%s" % regex)
    print("ids\t%d" % len(matched))
    have = [lib for lib in libs if has_library(gpu_build, lib)]
    for lib in have:
        print("lib\t%s" % lib)
    for lib in libs:
        if lib not in have:
            print("missing\t%s" % lib)
    return 0 if have else 3


# ------------------------------------------------------------------ after a part
def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def sbs_results(path):
    """A side-by-side run's result records: PATH's sidebyside.json (PATH a file or the folder holding it), else the
    sbs.jsonl of a run cut off before it wrote one; None when there is neither."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    run = read_json(path if not os.path.isdir(path) else os.path.join(path, "sidebyside.json"))
    if run:
        return run.get("results", [])
    lines = os.path.join(folder, "sbs.jsonl")
    if not os.path.exists(lines):
        return None
    out = {}
    with open(lines, encoding="utf-8") as f:
        for ln in f:
            try:
                r = json.loads(ln)
            except ValueError:
                continue
            if r.get("event") == "result":
                out[r["id"]] = r
    return list(out.values())


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


def brief(label, out):
    lines = []
    res = read_json(os.path.join(out, "results.json"))
    if res:
        c = res.get("counts", {})
        steps = ", ".join("%s %s" % (k, " ".join(str(x) for x in v)) for k, v in res.get("steps", {}).items())
        lines.append("%s: %s: %d PASS, %d FAIL, %d SKIP (%s); steps: %s" % (
            label, res.get("verdict", "?"), c.get("PASS", 0), c.get("FAIL", 0), c.get("SKIP", 0),
            res.get("env", {}).get("device", "device ?"), steps or "none"))
        fails = [r for r in res.get("rows", []) if r.get("status") == "FAIL"]
        for r in fails[:MAX_FAIL_LINES]:
            lines.append("%s: FAIL %s %s: %s" % (label, r.get("section", ""), r.get("id", ""),
                                                " ".join(str(r.get("detail", "")).split())[:200]))
        if len(fails) > MAX_FAIL_LINES:
            lines.append("%s: ... %d more FAIL rows (summary.txt)" % (label, len(fails) - MAX_FAIL_LINES))
    else:
        lines.append("%s: no results.json (the part did not run, or run.sh ended before its table: see %s.txt)" % (label, label))
    rs = sbs_results(out)
    if rs is not None:
        timed = [r for r in rs if r.get("status") == "PASS"]
        refs = {}
        for r in rs:
            if r.get("reference"):
                key = r["reference"].split()[0]
                refs[key] = refs.get(key, 0) + 1
        below = sorted(r["id"] for r in timed if (r.get("graph_ratio") or r.get("eager_ratio") or 0) < 0.8)
        lines.append("%s: side by side: %d of %d timed; tilec/TileLang %s (graph), %s (eager); references %s; "
                     "below 0.8: %s" % (label, len(timed), len(rs), fmt(geomean([r.get("graph_ratio") for r in timed])),
                                        fmt(geomean([r.get("eager_ratio") for r in timed])),
                                        " ".join("%s %d" % kv for kv in sorted(refs.items())) or "none",
                                        " ".join(below) or "none"))
        bad = [r for r in rs if r.get("status") != "PASS"]
        for r in bad[:MAX_FAIL_LINES]:
            lines.append("%s: %s %s: %s" % (label, r.get("status", "?"), r.get("id", ""),
                                            " ".join(str(r.get("detail", "")).split())[:200]))
    print("\n".join(lines))
    return 0


def compare(a_path, b_path, la, lb):
    a, b = sbs_results(a_path), sbs_results(b_path)
    if a is None or b is None:
        print("compare: %s has no side-by-side results" % (a_path if a is None else b_path))
        return 1
    ra = {r["id"]: r for r in a}
    rb = {r["id"]: r for r in b}
    print("A/B: A = %s, B = %s; tilec's graph times; B/A speed-up = tilec A / tilec B (>1: B faster)" % (la, lb))
    print("%-56s %10s %10s %7s %7s %7s  %s" % ("kernel", "A ms", "B ms", "B/A", "A/TL", "B/TL", "status A / B"))
    ups = []
    for kid in sorted(set(ra) | set(rb)):
        x, y = ra.get(kid, {}), rb.get(kid, {})
        ta, tb = x.get("tc_graph_ms"), y.get("tc_graph_ms")
        up = ta / tb if ta and tb else None
        if up:
            ups.append(up)
        print("%-56s %10s %10s %7s %7s %7s  %s / %s" % (
            kid[:56], fmt(ta, "%.4f"), fmt(tb, "%.4f"), fmt(up), fmt(x.get("graph_ratio")), fmt(y.get("graph_ratio")),
            x.get("status", "-"), y.get("status", "-")))
    print("A/B: %d kernels timed in both; geometric mean of B/A %s; B faster by >3 %%: %d, slower by >3 %%: %d" % (
        len(ups), fmt(geomean(ups)), sum(u > 1.03 for u in ups), sum(u < 1 / 1.03 for u in ups)))
    return 0


def main(argv):
    if len(argv) == 4 and argv[0] == "select":
        return select(*argv[1:])
    if len(argv) == 3 and argv[0] == "brief":
        return brief(*argv[1:])
    if len(argv) == 5 and argv[0] == "compare":
        return compare(*argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
