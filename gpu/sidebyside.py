"""The side-by-side benchmark of general kernels (issue 25): which kernels, in which class, with which inputs,
and the table. Needs neither torch nor TileLang nor a GPU; tools/gpu/side_by_side.py runs the kernels there.

A kernel is side by side when tilec compiled it into a library of the GPU build and the same source file can be
given to TileLang: every suite folder GPU_BUILD/SUITE/kernels.tsv (tools/compat/run.sh --gpu-build writes
compat/kernels.tsv for TileLang's examples; TileKernels' staging writes tilekernels/kernels.tsv the same way)
lists `library, tag, file (under SUITE/TAG/), kernel[, call[, class]]`. Where the call column is missing it is
taken from the suite's manifest (tests/tilelang_compat/manifest.tsv: tag, file, kernel, call, expected; the
same columns for tests/tilekernels/manifest.tsv), `-` meaning the kernel the file binds at module level. Of a
kernel listed at several tags the newest is run (TileLang 0.1.15 runs the newest examples).

Inputs: the setup of the suite's reference.tsv where it has a line (index tensors, masks, sizes), else normal
random floats and zero integers (an index of 0 is in bounds of every tensor) of the header's shapes, with
DEFAULT_DYNAMIC_SIZE for every T.dynamic size the setup leaves unbound (TileKernels' num_tokens), halved while the
parameters would take more than MAX_DEFAULT_BYTES (bind_default_sizes: batched_transpose's three sizes asked 256 GiB).

TileLang is run as tilec reads the file: its autotuner off (no_autotune), the example's own os.environ settings
never turning TileLang's disk cache off (example_env). A run may take one shard of the list (shard_rows:
every N-th kernel from the I-th) and the shards' results merge into one table (merge_results). A same-bytes copy
far slower than the run's 2 GiB copy marks a kernel timed on a shared GPU (copy_suspect).

Class (the issue's list): the first pattern of CLASSES that matches "SUITE/FILE:KERNEL", or the manifest's
class column. The table gives tilec / TileLang (TileLang's time over tilec's: above 1 tilec is faster) per kernel
for graph replays and eager launches, the geometric mean per class and over all, and each side's bandwidth
against a device copy of the same bytes (the yardstick of bandwidth-bound kernels)."""
import ast
import contextlib
import math
import os
import re

import tlcompat as TC

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUITES = {   # suite folder under the GPU build: (manifest, reference.tsv) in the repository
    "compat": ("tests/tilelang_compat/manifest.tsv", "tests/tilelang_compat/reference.tsv"),
    "tilekernels": ("tests/tilekernels/manifest.tsv", "tests/tilekernels/reference.tsv"),
}
DEFAULT_DYNAMIC_SIZE = 4096
MAX_DEFAULT_BYTES = 8 << 30     # the parameters of a kernel whose sizes the harness chooses fit this (H200: 141 GB)
MIN_DEFAULT_SIZE = 128          # a chosen size is halved no further (a multiple of every tile the kernels take)
# "SUITE/FILE:KERNEL" -> class; first match wins
CLASSES = [
    (r"quant|cast\w*fp8|fp8\w*cast|per_token|per_block", "quantization"),
    (r"gemv|decode|inference", "GEMV/decode"),
    (r"linear_attention|retention|linear_attn", "linear attention"),
    (r"attention|attn|mla|mha|gqa|flash", "attention variants"),
    (r"gemm|matmul|conv|quickstart|warp_specialize", "GEMM variants"),
    (r"moe|topk|route|routing|gate|expert", "MoE routing/top-k"),
    (r"scan|cumsum|chunk_state|prefix", "scans"),
    (r"norm|softmax", "row reductions/norms"),
    (r"sinkhorn|reduce|_sum|grad|mix", "multi-dim fragment reductions"),
    (r"elementwise|expand|copy|transpose|convert|cast", "element-wise/casts"),
]
CLASS_ORDER = ["element-wise/casts", "quantization", "row reductions/norms", "multi-dim fragment reductions",
               "GEMV/decode", "MoE routing/top-k", "scans", "GEMM variants", "attention variants",
               "linear attention", "other"]


def classify(suite, file, kernel, given=""):
    if given and given != "-":
        return given
    key = "%s/%s:%s" % (suite, file, kernel)
    for pat, cls in CLASSES:
        if re.search(pat, key, re.I):
            return cls
    return "other"


def _tag_key(tag):
    return tuple(int(x) if x.isdigit() else x for x in re.findall(r"\d+|[A-Za-z]+", tag))


def read_manifest(path):
    """{(tag, file, kernel): (call, class)} of a suite's manifest (absent file: {})."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 4 or cols[0].startswith("#"):
                continue
            out[(cols[0], cols[1], cols[2])] = (cols[3], cols[5] if len(cols) > 5 else "")
    return out


def read_rows(gpu_build):
    """[{suite, lib, tag, file, kernel, call, cls, id}] side by side, newest tag per kernel, in listing order."""
    rows = {}
    for suite, (manifest, _) in SUITES.items():
        path = os.path.join(gpu_build, suite, "kernels.tsv")
        if not os.path.exists(path):
            continue
        calls = read_manifest(os.path.join(ROOT, manifest))
        with open(path, encoding="utf-8") as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if line.startswith("#") or len(cols) < 4:
                    continue
                lib, tag, file, kernel = cols[:4]
                call, cls = calls.get((tag, file, kernel), (None, ""))
                if len(cols) > 4 and cols[4]:
                    call = cols[4]
                if len(cols) > 5 and cols[5]:
                    cls = cols[5]
                row = dict(suite=suite, lib=lib, tag=tag, file=file, kernel=kernel, call=call,
                           cls=classify(suite, file, kernel, cls), id="%s:%s" % (lib, kernel))
                old = rows.get((suite, file, kernel))
                if old is None or _tag_key(tag) > _tag_key(old["tag"]):
                    rows[(suite, file, kernel)] = row
    return list(rows.values())


def example_path(gpu_build, row):
    return os.path.join(gpu_build, row["suite"], row["tag"], row["file"])


def example_dirs(gpu_build, row):
    """The folders an example's imports resolve in: its own (a sibling module) and its suite's copy at its tag
    (a package's: TileKernels' files import tile_kernels.*, and its reference lines call tile_kernels.torch)."""
    return [os.path.dirname(example_path(gpu_build, row)), os.path.join(gpu_build, row["suite"], row["tag"])]


@contextlib.contextmanager
def importable(dirs, path=None):
    """Inside: dirs first on sys.path (path: a list standing in for it); after: each taken out again."""
    import sys
    path = sys.path if path is None else path
    path[:0] = dirs
    try:
        yield
    finally:
        for d in dirs:
            path.remove(d)


def dtype_bytes(dtype):
    """Bytes of one element of a header's dtype name (gpu/numerics.py's itemsize; 4 for a name it does not know)."""
    import numerics
    try:
        return numerics.itemsize(dtype)
    except KeyError:
        return 4


def bind_default_sizes(params, sizes, ns, cap=MAX_DEFAULT_BYTES):
    """Binds in ns every T.dynamic size of `sizes` that the setup left unbound to DEFAULT_DYNAMIC_SIZE, then halves
    all of those together (a stride stays equal to the size it strides) while the parameters (name, dtype, dims as
    text, role) would take more than `cap` bytes, none below MIN_DEFAULT_SIZE. Returns the sizes chosen."""
    chosen = {s: DEFAULT_DYNAMIC_SIZE for s in sizes if not isinstance(ns.get(s), int)}
    ns.update(chosen)

    def total():
        n = 0
        for _, dtype, dims, _ in params:
            try:
                n += math.prod(int(eval(d, {"__builtins__": {}}, ns)) for d in dims) * dtype_bytes(dtype)
            except Exception:  # noqa: BLE001  a shape the setup sizes otherwise: not counted
                pass
        return n
    while chosen and total() > cap and min(chosen.values()) // 2 >= MIN_DEFAULT_SIZE:
        chosen = {s: v // 2 for s, v in chosen.items()}
        ns.update(chosen)
    return chosen


def reference_entry(row):
    """The suite's reference.tsv line for the row's kernel, or None."""
    path = os.path.join(ROOT, SUITES[row["suite"]][1])
    if not os.path.exists(path):
        return None
    return TC.read_reference(path).get((row["file"], row["kernel"]))


def module_binding(path, name):
    """The expression of the last module-level `NAME = ...` of a file (the kernel a manifest's `-` names)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = node.value
    return ast.unparse(found) if found is not None else None


def callee(call):
    """The function name a manifest call starts with (matmul in matmul(1024, ...), f in f.compile(...))."""
    node = ast.parse(call, mode="eval").body
    while isinstance(node, (ast.Call, ast.Attribute)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def plan(gpu_build, row):
    """What TileLang will be asked to compile for a row, checked without TileLang: (call expression, problems)."""
    problems = []
    path = example_path(gpu_build, row)
    if not os.path.exists(path):
        return None, ["no example file %s" % path]
    call = row["call"]
    if call is None:
        return None, ["no call for %s %s in the suite's manifest" % (row["file"], row["kernel"])]
    if call == "-":
        call = module_binding(path, row["kernel"])
        if call is None:
            return None, ["%s binds no module-level %s" % (row["file"], row["kernel"])]
    try:
        name = callee(call)
    except SyntaxError as e:
        return None, ["the call %r does not parse: %s" % (call, e)]
    with open(path, encoding="utf-8") as f:
        defined = {n.name for n in ast.parse(f.read(), path).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    if name not in defined:
        problems.append("the call's function %s is not defined at module level in %s" % (name, row["file"]))
    hpath = os.path.join(gpu_build, row["lib"] + ".h")
    if not os.path.exists(hpath):
        problems.append("no header %s" % hpath)
    else:
        with open(hpath, encoding="utf-8", errors="replace") as f:
            params, _ = TC.header_params(f.read(), row["kernel"])
        if not params:
            problems.append("%s declares no parameters for %s" % (hpath, row["kernel"]))
    return call, problems


# ------------------------------------------------------------------ TileLang run as tilec reads the file
AUTOTUNE_MODULES = ("tilelang", "tilelang.autotuner", "tilelang.autotuner.tuner")


def quiet_tilelang(tilelang):
    """TileLang as both halves of the side by side use it (the compile workers, the timing process): warnings
    only in its log, and autotune switched off (no_autotune), its autotuner module imported first where there is
    one so that no_autotune reaches it."""
    import sys
    try:
        tilelang.set_log_level("WARNING")
    except Exception:  # noqa: BLE001
        pass
    try:
        import tilelang.autotuner  # noqa: F401 - no_autotune replaces its autotune
    except ImportError:
        pass
    try:
        import tilelang.backend.target  # noqa: F401 - target_module_alias's source, where this TileLang has it
    except ImportError:
        pass
    no_autotune(sys.modules)
    target_module_alias(sys.modules)


def target_module_alias(modules):
    """TileKernels 1.0.0 imports `determine_target` from tilelang.utils.target, which TileLang 0.1.15 (the bundle)
    moved to tilelang.backend.target; without the old name every module of the package fails to import on TileLang's
    side and none of its kernels is compared. Where the old module is missing and the new one is loaded, registers
    the old name for the same function (nothing else changes). modules: sys.modules; returns True when it did."""
    import types
    new = modules.get("tilelang.backend.target")
    if "tilelang.utils.target" in modules or new is None or not hasattr(new, "determine_target"):
        return False
    try:
        import tilelang.utils.target  # noqa: F401 - a TileLang that still has it keeps its own
        return False
    except ImportError:
        pass
    alias = types.ModuleType("tilelang.utils.target")
    alias.determine_target = new.determine_target
    modules["tilelang.utils.target"] = alias
    utils = modules.get("tilelang.utils")
    if utils is not None:
        utils.target = alias
    return True


def no_autotune(modules):
    """Makes every spelling of TileLang's autotune decorator (tilelang.autotune, tilelang.autotuner.autotune and
    its tuner module's) return the function unchanged, as tilec does with it (docs/LANGUAGE.md), so that TileLang
    compiles the configuration tilec compiled (the call's arguments, else the function's defaults) and never
    benchmarks configurations on the GPU. modules: sys.modules (TileLang imported); returns how many it
    replaced. Must run before an example file is loaded (its `from tilelang.autotuner import *` copies the
    name then)."""
    def autotune(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:     # bare @autotune
            return args[0]
        return lambda fn: fn
    replaced = 0
    for name in AUTOTUNE_MODULES:
        mod = modules.get(name)
        if mod is not None and hasattr(mod, "autotune"):
            mod.autotune = autotune
            replaced += 1
    return replaced


# environment variables an example file may set for itself that keep the run's value while its kernel compiles:
# TileLang's disk cache is how the timing process gets the compile workers' kernels back, and
# example_gemm_autotune_early_stop.py sets TILELANG_DISABLE_CACHE=1 at module level, which turned the cache off
# for every later kernel of the process
RUN_ENV = ("TILELANG_DISABLE_CACHE", "TILELANG_CACHE_DIR")


@contextlib.contextmanager
def example_env(environ=None, keep=RUN_ENV):
    """Inside: the example's own os.environ settings hold; the function it yields puts back the run's values of
    `keep` (call it after loading the file). After: the run's environment, whatever the example set."""
    environ = os.environ if environ is None else environ
    saved = dict(environ)

    def keep_run_env():
        for k in keep:
            if k in saved:
                environ[k] = saved[k]
            else:
                environ.pop(k, None)
    try:
        yield keep_run_env
    finally:
        environ.clear()
        environ.update(saved)


def copy_suspect(copy_ms, nbytes, copy_tbps):
    """Why a same-bytes copy's time says the GPU was not the run's alone (another process's kernels, a clock
    drop), or None: a copy of NBYTES each way slower than 5 times what the run's own 2 GiB copy's bandwidth
    gives, past 0.02 ms (below that a copy's time is launch and tail, not bandwidth). Session 13's 6 MiB copy
    at 0.21 ms beside a kernel timed while TileLang's autotuners ran is the case it catches."""
    if not copy_tbps or copy_ms is None:
        return None
    expect = 2 * nbytes / (copy_tbps * 1e9)
    if copy_ms > max(0.02, 5 * expect):
        return "the same-bytes copy took %.4f ms, %.0fx the %.4f ms the 2 GiB copy's %.2f TB/s gives" % (
            copy_ms, copy_ms / expect, expect, copy_tbps)
    return None


# ------------------------------------------------------------------ shards and their merge
def parse_shard(spec):
    """(i, n) of a shard "I/N" (1 <= I <= N); ValueError for anything else."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", spec or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError("a shard is I/N with 1 <= I <= N, not %r" % spec)
    return int(m.group(1)), int(m.group(2))


def shard_rows(rows, spec):
    """The rows of shard "I/N": every N-th row from the I-th, so that each shard gets its share of every class
    (read_rows lists a file's kernels together, and the costly attention files cluster). The N shards together
    hold every row exactly once. spec None or "": all rows."""
    if not spec:
        return list(rows)
    i, n = parse_shard(spec)
    return [r for k, r in enumerate(rows) if k % n == i - 1]


RANK = {"PASS": 3, "FAIL": 2, "SKIP": 1}


def merge_results(runs):
    """One result list from several runs' lists (shards, or a run and its repeat): per kernel id the record of
    the most telling status (PASS over FAIL over SKIP; of equals the later run's), in first-seen order."""
    best, order = {}, []
    for res in runs:
        for r in res:
            old = best.get(r["id"])
            if old is None:
                order.append(r["id"])
            if old is None or RANK.get(r.get("status"), 0) >= RANK.get(old.get("status"), 0):
                best[r["id"]] = r
    return [best[i] for i in order]


# ------------------------------------------------------------------ the table
def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _f(x, fmt="%.2f", none="-"):
    return none if x is None else fmt % x


def table(results, header=""):
    """The printed table from the worker's result records (dicts with id, cls, status, and for PASS: ms/graph
    times of both, same-bytes copy times)."""
    lines = [header] if header else []
    lines.append("%-44s %-28s %9s %9s %6s %9s %9s %6s %5s %5s  %s" % (
        "kernel", "class", "graph tc", "graph TL", "ratio", "eager tc", "eager TL", "ratio", "%cp", "%cpTL",
        "outputs"))
    by_cls = {}
    for r in sorted(results, key=lambda r: (CLASS_ORDER.index(r["cls"]) if r["cls"] in CLASS_ORDER else 99,
                                            r["id"])):
        if r.get("status") != "PASS":
            lines.append("%-44s %-28s %s %s" % (r["id"][:44], r["cls"][:28], r.get("status", "?"),
                                                r.get("detail", "")[:160]))
            continue
        g, e = r.get("graph_ratio"), r.get("eager_ratio")
        by_cls.setdefault(r["cls"], []).append((g, e))
        lines.append("%-44s %-28s %9s %9s %6s %9s %9s %6s %5s %5s  %s" % (
            r["id"][:44], r["cls"][:28], _f(r.get("tc_graph_ms"), "%.4f"), _f(r.get("tl_graph_ms"), "%.4f"),
            _f(g), _f(r.get("tc_ms"), "%.4f"), _f(r.get("tl_ms"), "%.4f"), _f(e),
            _f(r.get("tc_copy_pct"), "%.0f"), _f(r.get("tl_copy_pct"), "%.0f"),
            ("SUSPECT (GPU shared?) " if r.get("suspect") else "") +
            ("[reference %s] " % r["reference"].split()[0] if r.get("reference") else "") + r.get("agree", "")[:60]))
    lines.append("")
    lines.append("%-44s %-28s %6s %6s  (geometric means of tilec / TileLang, >1: tilec faster)" % (
        "class", "kernels", "graph", "eager"))
    for cls in CLASS_ORDER:
        if cls in by_cls:
            v = by_cls[cls]
            lines.append("%-44s %-28d %6s %6s" % (cls, len(v), _f(geomean([g for g, _ in v])),
                                                  _f(geomean([e for _, e in v]))))
    allv = [x for v in by_cls.values() for x in v]
    below = sorted(r["id"] for r in results if r.get("status") == "PASS" and (r.get("graph_ratio") or r.get("eager_ratio") or 0) < 0.8)
    n_all = len(results)
    lines.append("%-44s %-28d %6s %6s" % ("ALL", len(allv), _f(geomean([g for g, _ in allv])),
                                          _f(geomean([e for _, e in allv]))))
    suspect = sum(1 for r in results if r.get("status") == "PASS" and r.get("suspect"))
    lines.append("SIDE-BY-SIDE: %d kernels timed of %d listed; geometric mean tilec/TileLang %s (graph), %s (eager); "
                 "%d below 0.8x (graph): %s" % (len(allv), n_all, _f(geomean([g for g, _ in allv])),
                                                 _f(geomean([e for _, e in allv])), len(below), " ".join(below)))
    tl_wrong = sorted(r["id"] for r in results if r.get("status") == "PASS"
                      and r.get("agree", "").startswith("TileLang's output is wrong"))
    if tl_wrong:
        lines.append("TILELANG-WRONG: %d kernels whose TileLang output disagrees with the reference that tilec's "
                     "meets (timed): %s" % (len(tl_wrong), " ".join(tl_wrong)))
    if suspect:
        lines.append("SUSPECT: %d timed while the GPU was not the run's alone (their same-bytes copy far too slow, "
                     "twice): see their detail" % suspect)
    return "\n".join(lines + bandwidth_summary(results) + reference_summary(results))


BANDWIDTH_BOUND_PCT = 80     # bandwidth-bound: either compiler reaches this share of the same-bytes copy
BANDWIDTH_BAR_PCT = 90       # issue 25's bar: tilec at >= 90 % of a same-bytes copy measured in the same run
BANDWIDTH_MIN_COPY_MS = 0.010  # below 10 us of copy a kernel's time is its launch, not its bytes


def bandwidth_rows(results):
    """(id, tilec's %, TileLang's %) of the timed kernels that are bandwidth-bound: one of the two compilers runs
    within BANDWIDTH_BOUND_PCT of the same-bytes copy (graph timing) and the copy takes BANDWIDTH_MIN_COPY_MS or
    more (a shorter one measures the launch)."""
    out = []
    for r in results:
        tc, tl, cp = r.get("tc_copy_pct"), r.get("tl_copy_pct"), r.get("copy_graph_ms")
        if r.get("status") != "PASS" or r.get("suspect") or None in (tc, tl, cp):
            continue
        if max(tc, tl) >= BANDWIDTH_BOUND_PCT and cp >= BANDWIDTH_MIN_COPY_MS:
            out.append((r["id"], tc, tl))
    return sorted(out)


def bandwidth_summary(results):
    """The line that judges issue 25's bandwidth bar over bandwidth_rows, naming the kernels below it."""
    rows = bandwidth_rows(results)
    if not rows:
        return []
    below = ["%s (%.0f %%, TileLang %.0f %%)" % (i, tc, tl) for i, tc, tl in rows if tc < BANDWIDTH_BAR_PCT]
    return ["BANDWIDTH: %d bandwidth-bound kernels (a compiler at >= %d %% of the same-bytes copy, copy >= %.0f us); "
            "tilec at >= %d %% of the copy on %d; below: %s" % (
                len(rows), BANDWIDTH_BOUND_PCT, BANDWIDTH_MIN_COPY_MS * 1000, BANDWIDTH_BAR_PCT,
                len(rows) - len(below), "; ".join(below) or "none")]


def _check_bandwidth():
    """bandwidth_rows' selection: bound by either compiler, copy long enough, PASS only."""
    def row(i, tc, tl, cp, status="PASS"):
        return dict(id=i, tc_copy_pct=tc, tl_copy_pct=tl, copy_graph_ms=cp, status=status)
    res = [row("a", 85, 95, 0.05), row("b", 95, 60, 0.05), row("c", 50, 60, 0.05), row("d", 70, 99, 0.001),
           row("e", 70, 99, 0.05, "FAIL"), row("f", 92, 93, 0.02)]
    got = bandwidth_rows(res)
    problems = []
    if [i for i, _, _ in got] != ["a", "b", "f"]:
        problems.append("bandwidth_rows selected %r, not a b f" % [i for i, _, _ in got])
    line = bandwidth_summary(res)
    if len(line) != 1 or "on 2;" not in line[0] or "a (85 %" not in line[0]:
        problems.append("bandwidth_summary: %r" % line)
    return problems


def reference_summary(results):
    """The lines that count the rows' reference verdicts (the "reference" of a result: reference_verdict's)."""
    judged = {r["id"]: r["reference"] for r in results if r.get("reference")}
    if not judged:
        return []
    by = {k: sorted(i for i, v in judged.items() if v.startswith(k)) for k in ("PASS", "FAIL", "SUSPECT")}
    lines = ["REFERENCES: tilec against the references: %d of %d PASS" % (len(by["PASS"]), len(judged))]
    if by["FAIL"]:
        lines.append("REFERENCE-FAIL: %d kernels whose tilec output fails the reference: %s"
                     % (len(by["FAIL"]), " ".join(by["FAIL"])))
    if by["SUSPECT"]:
        lines.append("REFERENCE-SUSPECT: %d kernels whose reference did not evaluate, or that TileLang fails too "
                     "(the reference or the inputs are suspect): %s" % (len(by["SUSPECT"]), " ".join(by["SUSPECT"])))
    return lines


def _check_tilelang_as_tilec():
    import types
    problems = []
    mods = {n: types.SimpleNamespace(autotune=None) for n in AUTOTUNE_MODULES[:2]}
    if no_autotune(mods) != 2:
        problems.append("no_autotune: replaced %d of 2" % no_autotune(mods))

    def f(M, block_M=128):
        return M, block_M
    tune = mods["tilelang.autotuner"].autotune
    if tune(configs=[{"block_M": 64}], warmup=5)(f) is not f or tune(f) is not f:
        problems.append("no_autotune: @autotune(...) and bare @autotune must return the function unchanged")
    env = {"TILELANG_CACHE_DIR": "/c", "HOME": "/h"}
    with example_env(env) as keep_run_env:
        env.update(TILELANG_DISABLE_CACHE="1", TILELANG_CACHE_DIR="/x", EXAMPLE="1")     # the file's module level
        keep_run_env()
        during = dict(env)
    if during != {"TILELANG_CACHE_DIR": "/c", "HOME": "/h", "EXAMPLE": "1"} or \
            env != {"TILELANG_CACHE_DIR": "/c", "HOME": "/h"}:
        problems.append("example_env: during %r, after %r" % (during, env))

    def pick(target="auto", return_object=False):
        return "cuda"
    utils = types.SimpleNamespace()
    mods = {"tilelang.backend.target": types.SimpleNamespace(determine_target=pick), "tilelang.utils": utils}
    if not target_module_alias(mods) or mods["tilelang.utils.target"].determine_target is not pick or \
            utils.target is not mods["tilelang.utils.target"] or target_module_alias(mods):
        problems.append("target_module_alias: tilelang.utils.target must name backend.target's determine_target, once")
    if target_module_alias({"tilelang.utils": utils}):
        problems.append("target_module_alias: nothing to alias without tilelang.backend.target")
    return problems


def _check_shards():
    problems = []
    rows = [dict(id="k%d" % i) for i in range(11)]
    parts = [shard_rows(rows, "%d/3" % i) for i in (1, 2, 3)]
    if sorted(r["id"] for p in parts for r in p) != sorted(r["id"] for r in rows) or \
            max(map(len, parts)) - min(map(len, parts)) > 1:
        problems.append("shard_rows: shards 1/3 2/3 3/3 do not split 11 rows evenly and exactly once")
    if shard_rows(rows, None) != rows or shard_rows(rows, "1/1") != rows:
        problems.append("shard_rows: no shard or 1/1 must be every row")
    for bad in ("0/2", "3/2", "1", "a/b"):
        try:
            parse_shard(bad)
            problems.append("parse_shard accepts %r" % bad)
        except ValueError:
            pass
    a = [dict(id="x", status="SKIP"), dict(id="y", status="PASS", v=1)]
    b = [dict(id="x", status="PASS", v=2), dict(id="y", status="SKIP"), dict(id="z", status="FAIL")]
    m = merge_results([a, b])
    if [(r["id"], r["status"]) for r in m] != [("x", "PASS"), ("y", "PASS"), ("z", "FAIL")] or m[1]["v"] != 1:
        problems.append("merge_results: %r" % m)
    return problems


def _check_suite_references():
    """Every line of a suite's reference.tsv names a kernel of its manifest (TileKernels': its files under the
    package folder the staging gives them) and its setup and check parse: a stale or broken line would leave the
    kernel on random inputs or fail only on the GPU."""
    problems = []
    for suite, (manifest, reference) in SUITES.items():
        path = os.path.join(ROOT, reference)
        if not os.path.exists(path):
            continue
        listed = {(f, k) for (_, f, k) in read_manifest(os.path.join(ROOT, manifest))}
        listed |= {(os.path.join("tile_kernels", f), k) for f, k in _untagged_rows(os.path.join(ROOT, manifest))}
        for (f, k), e in TC.read_reference(path).items():
            if (f, k) not in listed:
                problems.append("%s:%d: %s %s is not a kernel of %s" % (reference, e["line"], f, k, manifest))
            try:
                compile(e["setup"].replace("; ", "\n"), reference, "exec")
                compile(e["check"], reference, "eval")
                if e["reference"] not in NO_REFERENCE:
                    compile(e["reference"], reference, "eval")
            except SyntaxError as err:
                problems.append("%s:%d: %s" % (reference, e["line"], err))
    return problems


def _untagged_rows(path):
    """(file, kernel) of a manifest without the tag column (TileKernels': file, kernel, call, expected)."""
    with open(path, encoding="utf-8") as f:
        return [tuple(c[:2]) for c in (line.rstrip("\n").split("\t") for line in f)
                if len(c) == 4 and not c[0].startswith("#")]


NO_REFERENCE = (None, "", "-")      # reference.tsv's reference column when a line has none ("-": TileKernels')


def eval_reference(entry, ns, count):
    """(values, None): the row's reference line evaluated in ns (the inputs, the setup's names), one value per
    written output (count); (None, why) where it cannot be had; (None, None) where the line has none."""
    if not entry or entry.get("reference") in NO_REFERENCE:
        return None, None
    try:
        ref = eval(entry["reference"], ns)
    except Exception as e:  # noqa: BLE001
        return None, "the reference could not be evaluated: %s: %s" % (type(e).__name__, " ".join(str(e).split())[:200])
    refs = tuple(ref) if isinstance(ref, (tuple, list)) else (ref,)
    if len(refs) != count:
        return None, "the reference gives %d values for %d outputs" % (len(refs), count)
    return refs, None


def _masked(x, mask):
    """x with the elements of mask (unwritten by both sides) zeroed, a copy; x itself without a mask."""
    if mask is None or not bool(mask.any()):
        return x
    x = x.clone()
    x[mask] = 0
    return x


def _against(Fail, judge, name, out, r, mask):
    """(verdict, text) of out against the reference value r by judge: ("ok", the check's note), ("bad", why) or
    ("shape", why) where r has another shape than the output (the reference's fault, not the kernel's)."""
    shape = tuple(getattr(r, "shape", ()))
    if shape != tuple(out.shape):
        return "shape", "%s: the reference has shape %s, the output %s" % (name, shape, tuple(out.shape))
    r = r.to(out.device) if hasattr(r, "to") else r
    try:
        return "ok", str(judge(name, _masked(out, mask), _masked(r, mask)))
    except Fail as e:
        return "bad", str(e)


def reference_verdict(Fail, judge, refs, why, pairs):
    """tilec's written outputs against the row's reference values (eval_reference's (refs, why)), TileLang's
    beside them where its kernel ran. pairs: [(name, tilec's, TileLang's or None, mask of the elements both
    left unwritten or None)]. None where the line has no reference; else "PASS ...", "FAIL ..." (tilec outside
    the reference's tolerance, TileLang inside it or not run), or "SUSPECT ..." (the reference did not evaluate,
    gives values of other shapes, or TileLang's output fails it too: the reference or the inputs are suspect)."""
    if refs is None:
        return None if why is None else "SUSPECT " + why
    got = {"ok": [], "bad": [], "shape": []}
    tl_bad = []         # TileLang's verdict on each output tilec fails, where TileLang ran
    for (name, a, b, mask), r in zip(pairs, refs):
        verdict, text = _against(Fail, judge, name, a, r, mask)
        got[verdict].append(text)
        if verdict == "bad" and b is not None:
            tl_bad.append(_against(Fail, judge, name, b, r, mask))
    if got["shape"]:
        return "SUSPECT " + "; ".join(got["shape"])
    if not got["bad"]:
        return "PASS " + "; ".join(got["ok"])
    tl_text = "; ".join(t if v != "ok" else "right" for v, t in tl_bad)
    if tl_bad and all(v == "bad" for v, _ in tl_bad):
        return "SUSPECT tilec and TileLang both fail the reference (the reference or the inputs are suspect): " + \
            "; ".join(got["bad"]) + "; TileLang: " + tl_text
    return "FAIL " + "; ".join(got["bad"]) + ("; TileLang against the reference: " + tl_text if tl_bad else "")


def arbitrate(Fail, judge, entry, ns, pairs, disagreement, refs=None):
    """tilec's and TileLang's outputs disagree (pairs: (name, tilec's, TileLang's, mask)): each judged by
    judge(name, out, ref) against the example's reference (reference.tsv, evaluated on the same inputs in ns,
    unless refs gives its values already).
    tilec wrong, or no reference to say: Fail. tilec right and TileLang wrong: a note, and the kernel is timed
    (TileLang's output is what differs)."""
    if refs is None:
        refs, why = eval_reference(entry, ns, len(pairs))
        if refs is None:
            raise Fail(disagreement + (" (%s)" % why if why else " (no reference line says which side is right)"))
    tc_wrong, tl_wrong = [], []
    for (name, a, b, _), r in zip(pairs, refs):
        r = r.to(a.device) if hasattr(r, "to") else r
        for out, wrong in ((a, tc_wrong), (b, tl_wrong)):
            try:
                judge(name, out, r)
            except Fail as e:
                wrong.append(str(e))
    if tc_wrong:            # TileLang's standing on the same data says whether the check or tilec is at fault
        raise Fail("%s; tilec against the reference: %s; TileLang against the reference: %s" % (
            disagreement, "; ".join(tc_wrong), "; ".join(tl_wrong) or "right"))
    if not tl_wrong:        # both within the reference's tolerance though not within each other's: both right
        return "both agree with the reference, not with each other: " + disagreement
    return "TileLang's output is wrong (tilec agrees with the reference): " + "; ".join(tl_wrong)


def _check_arbitrate():
    class Fail(Exception):
        pass

    def judge(name, a, b):
        if abs(a - b) > 0.1:
            raise Fail("%s: %g against %g" % (name, a, b))
        return name
    e, ns, out = {"reference": "(1.0, 5.0)"}, {}, []
    got = arbitrate(Fail, judge, e, ns, [("x", 1.0, 2.0, None), ("y", 5.0, 5.0, None)], "x differs")
    if not got.startswith("TileLang's output is wrong") or "x: 2 against 1" not in got:
        out.append("arbitrate: TileLang wrong, tilec right: %r" % got)
    for pairs, e2, want in (([("x", 2.0, 1.0, None), ("y", 5.0, 5.0, None)], e, "TileLang against the reference: right"),
                            ([("x", 2.0, 2.0, None)], {"reference": "1.0"}, "TileLang against the reference: x: 2"),
                            ([("x", 1.0, 2.0, None)], {}, "no reference line"),
                            ([("x", 1.0, 2.0, None)], e, "gives 2 values for 1 outputs")):
        try:
            got = arbitrate(Fail, judge, e2, ns, pairs, "d")
            out.append("arbitrate: %s expected, got %r" % (want, got))
        except Fail as x:
            if want not in str(x):
                out.append("arbitrate: %s expected, got %s" % (want, x))
    return out


class _V:
    """A scalar standing in for a tensor in the self-checks (shape, to, no torch)."""
    def __init__(self, v, shape=()):
        self.v, self.shape = v, shape

    def to(self, device):
        return self

    device = None


def _check_reference_verdict():
    class Fail(Exception):
        pass

    def judge(name, a, b):
        if abs(a.v - b.v) > 0.1:
            raise Fail("%s: %g against %g" % (name, a.v, b.v))
        return "%s ok" % name
    out = []
    x, y = _V(1.0), _V(5.0)
    cases = [((x, y), [("x", _V(1.0), _V(1.0), None), ("y", _V(5.0), _V(5.0), None)], "PASS x ok; y ok"),
             ((x, y), [("x", _V(2.0), _V(1.0), None), ("y", _V(5.0), None, None)], "FAIL x: 2 against 1; TileLang "
              "against the reference: right"),
             ((x,), [("x", _V(2.0), None, None)], "FAIL x: 2 against 1"),     # tilec alone
             ((x,), [("x", _V(2.0), _V(2.0), None)], "SUSPECT tilec and TileLang both fail"),
             ((_V(1.0, (2,)),), [("x", _V(1.0), _V(1.0), None)], "SUSPECT x: the reference has shape (2,)")]
    for (refs, pairs, want) in cases:
        got = reference_verdict(Fail, judge, refs, None, pairs)
        if not got.startswith(want):
            out.append("reference_verdict: %r expected, got %r" % (want, got))
    if reference_verdict(Fail, judge, None, None, []) is not None or \
            reference_verdict(Fail, judge, None, "why", []) != "SUSPECT why":
        out.append("reference_verdict: no reference line is no verdict, one that did not evaluate is SUSPECT")
    refs, why = eval_reference({"reference": "(a, a + 1)"}, {"a": 1}, 2)
    if refs != (1, 2) or why or eval_reference({"reference": "-"}, {}, 1) != (None, None) or \
            "gives 1 values for 2" not in eval_reference({"reference": "a"}, {"a": 1}, 2)[1] or \
            "NameError" not in eval_reference({"reference": "b"}, {}, 1)[1]:
        out.append("eval_reference: values, none, a count or a name that is wrong")
    if "[reference PASS] ok" not in table([dict(id="a:k", cls="scans", status="PASS", graph_ratio=1.0, eager_ratio=1.0,
                                                agree="ok", reference="PASS x ok")]):
        out.append("table: a row's reference verdict is not shown beside its outputs")
    text = "\n".join(reference_summary([dict(id="a", reference="PASS x"), dict(id="b", reference="FAIL x"),
                                        dict(id="c", reference="SUSPECT x"), dict(id="d")]))
    if "tilec against the references: 1 of 3 PASS" not in text or "REFERENCE-FAIL: 1 kernels whose tilec output " \
            "fails the reference: b" not in text or "REFERENCE-SUSPECT: 1 kernels" not in text:
        out.append("reference_summary:\n" + text)
    return out


def self_check():
    """Problems of the CPU parts (gpu/selfcheck.py runs it)."""
    problems = _check_suite_references()
    for key, want in (("compat/gemv/example_gemv.py", "GEMV/decode"), ("compat/norm/rms_norm.py", "row reductions/norms"),
                      ("compat/cast/example_per_token_cast_to_fp8.py", "quantization"),
                      ("compat/flash_attention/example_mha_fwd_bshd.py", "attention variants"),
                      ("compat/linear_attention/example_retention_fwd.py", "linear attention"),
                      ("compat/gemm/example_gemm.py", "GEMM variants")):
        suite, file = key.split("/", 1)
        got = classify(suite, file, "k")
        if got != want:
            problems.append("classify(%s) = %s, want %s" % (key, got, want))
    if callee("matmul.compile(M=M, N=N)") != "matmul" or callee("f(1, 2)") != "f":
        problems.append("callee() misreads a call")
    if abs(geomean([1.0, 4.0]) - 2.0) > 1e-12 or geomean([]) is not None:
        problems.append("geomean")
    path = ["/x"]
    with importable(example_dirs("gb", dict(suite="tilekernels", tag="1.0.0", file="tile_kernels/moe/k.py")), path):
        inside = list(path)
    if inside != ["gb/tilekernels/1.0.0/tile_kernels/moe", "gb/tilekernels/1.0.0", "/x"] or path != ["/x"]:
        problems.append("importable(example_dirs(...)): %r inside, %r after" % (inside, path))
    if _tag_key("v0.1.13") <= _tag_key("v0.1.9"):
        problems.append("tag order: v0.1.13 must be newer than v0.1.9")
    problems += _check_shards() + _check_tilelang_as_tilec() + _check_arbitrate() + _check_reference_verdict() + _check_bandwidth()
    params = [("x", "bfloat16", ["num_batches", "shape_x", "shape_y"], "read"),
              ("out", "bfloat16", ["num_batches", "shape_y", "shape_x"], "written"), ("n", "int32", ["rows"], "read")]
    ns = {"rows": 5}
    got = bind_default_sizes(params, ["num_batches", "shape_x", "shape_y", "stride_x", "rows"], ns)
    if got != {"num_batches": 1024, "shape_x": 1024, "shape_y": 1024, "stride_x": 1024} or ns["rows"] != 5 or \
            bind_default_sizes(params[:1], ["num_batches", "shape_x", "shape_y"], {}, cap=1) != \
            {"num_batches": 128, "shape_x": 128, "shape_y": 128} or \
            [dtype_bytes(t) for t in ("float8_e4m3", "bfloat16", "int64", "bool", "float32", "uint8")] != [1, 2, 8, 1, 4, 1]:
        problems.append("bind_default_sizes: batched_transpose's three 4096s (256 GiB) must halve to 1024s (4 GiB), "
                        "a size the setup binds stays, none below MIN_DEFAULT_SIZE: %r" % got)
    if copy_suspect(0.21, 3 << 20, 4.0) is None or copy_suspect(0.0021, 3 << 20, 4.0) is not None or \
            copy_suspect(0.015, 1 << 10, 4.0) is not None:
        problems.append("copy_suspect: session 13's 6 MiB copy at 0.21 ms is suspect, one at 2.1 us or a 1 KiB "
                        "copy at 15 us (launch and tail) is not")
    rows = [dict(id="a:k", cls="GEMV/decode", status="PASS", graph_ratio=0.5, eager_ratio=2.0, agree="ok"),
            dict(id="b:k", cls="GEMV/decode", status="PASS", graph_ratio=2.0, eager_ratio=2.0, agree="ok"),
            dict(id="c:k", cls="scans", status="FAIL", detail="TileLang: compile failed")]
    text = table(rows)
    rows.append(dict(id="d:k", cls="scans", status="PASS", graph_ratio=1.0, eager_ratio=1.0,
                     agree="TileLang's output is wrong (tilec agrees with the reference): o"))
    text = table(rows)
    if "GEMV/decode" not in text or "1.00" not in text or "1 below 0.8x (graph): a:k" not in text or \
            "TILELANG-WRONG: 1 kernels" not in text:
        problems.append("table:\n" + text)
    return problems
