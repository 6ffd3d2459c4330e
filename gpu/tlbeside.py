"""The libraries of gpu/compat_exports.txt (TileLang's own example files compiled by tilec at chosen arguments:
issue 28's attention backward and decode benchmarks) and TileLang's own build of the same calls, timed beside
tilec's where TileLang is importable (tools/gpu/run.sh puts the bundle on PYTHONPATH for the benchmarks when it
travelled; tools/gpu/stage_exports.py stages the libraries and copies the example files to
GPU_BUILD/compat/TAG/FILE).

TileLang compiles the very call tilec compiled (the spec line's), its autotuner switched off as in the side by side
(gpu/sidebyside.quiet_tilelang), the example file loaded as the side by side loads it (gpu/tlcompat.load_example:
imports and module-level functions, nothing else of it runs). Importing this module needs neither torch nor TileLang."""
import ast
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SPEC = os.path.join(HERE, "compat_exports.txt")


def read_spec(path=SPEC):
    """{library: dict(tag, file, exports=[(name, call)])} in the spec's order; ValueError on a malformed line
    or a library whose lines disagree on the tag or the file."""
    libs = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cols = line.split(None, 3)
            name, eq, call = cols[3].strip().partition("=") if len(cols) == 4 else ("", "", "")
            if not eq or not name.strip().isidentifier() or not call.strip():
                raise ValueError("%s:%d: want LIBRARY TAG FILE NAME=CALL" % (path, n))
            lib = libs.setdefault(cols[0], dict(tag=cols[1], file=cols[2], exports=[]))
            if (lib["tag"], lib["file"]) != (cols[1], cols[2]):
                raise ValueError("%s:%d: library %s was %s %s before" % (path, n, cols[0], lib["tag"], lib["file"]))
            lib["exports"].append((name.strip(), call.strip()))
    return libs


def calls(lib, path=SPEC):
    """{kernel name: (function, positional arguments, keyword arguments, call text)} of one library, the
    arguments as Python literals (so a test module reads its shapes from the spec instead of repeating them)."""
    out = {}
    for name, call in read_spec(path)[lib]["exports"]:
        c = ast.parse(call, mode="eval").body
        out[name] = (c.func.id, [ast.literal_eval(a) for a in c.args],
                     {k.arg: ast.literal_eval(k.value) for k in c.keywords}, call)
    return out


def gpu_build():
    return os.path.join(ROOT, os.environ.get("GPU_BUILD", "gpu-build"))


class Unavailable(Exception):
    """TileLang's build cannot run here (not importable, or the example file was not staged)."""


_KERNELS = {}


def tilelang_kernel(lib, name, path=SPEC):
    """TileLang's own JITKernel of one spec line (compiled once per process). Raises Unavailable when TileLang is
    not importable or the example file is missing; TileLang's own errors propagate."""
    if (lib, name) in _KERNELS:
        return _KERNELS[(lib, name)]
    try:
        import tilelang
    except Exception as e:  # noqa: BLE001 - ImportError, or a bundle that does not load here
        raise Unavailable("TileLang is not importable (%s: %s)" % (type(e).__name__, str(e)[:120]))
    import sidebyside as S
    import tlcompat as TC
    spec = read_spec(path)[lib]
    example = os.path.join(gpu_build(), "compat", spec["tag"], spec["file"])
    if not os.path.exists(example):
        raise Unavailable("no %s (tools/gpu/stage_exports.py copies it)" % example)
    S.quiet_tilelang(tilelang)
    call = dict(spec["exports"])[name]
    with S.importable([os.path.dirname(example)]), S.example_env() as keep_run_env:
        ns = TC.load_example(example)
        keep_run_env()
        kern = eval(compile(call, spec["file"] + " (compat_exports call)", "eval"), ns)
    _KERNELS[(lib, name)] = kern
    return kern


def _compile_one(key):
    """A worker's task: TileLang's build of one line, into TileLang's disk cache; (key, None or the error)."""
    import time
    t0 = time.time()
    try:
        tilelang_kernel(*key)
        return key, None, time.time() - t0
    except Exception as e:  # noqa: BLE001 - reported; the benchmark then says TileLang did not run
        return key, "%s: %s" % (type(e).__name__, " ".join(str(e).split())[-200:]), time.time() - t0


def precompile(keys, jobs=None):
    """TileLang's builds of the (library, name) lines, one worker process per core, before any benchmark runs (as
    the side by side compiles first, tools/gpu/sbs_compile.py): the timing process then gets each kernel back from
    TileLang's disk cache (TILELANG_CACHE_DIR). Prints one line per kernel; exit status 0, or 77 without TileLang."""
    import concurrent.futures
    import multiprocessing
    if not keys:
        print("tl-precompile: no benchmark times a TileLang build")
        return 0
    try:
        import importlib.util
        if importlib.util.find_spec("tilelang") is None:
            raise ImportError("no tilelang on sys.path")
    except Exception as e:  # noqa: BLE001
        print("tl-precompile: TileLang is not importable (%s): nothing compiled" % e)
        return 77
    jobs = jobs or min(len(keys), os.cpu_count() or 4)
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        for (lib, name), err, secs in pool.map(_compile_one, keys):
            print("tl-precompile: %s:%s %s in %.1f s" % (lib, name, "compiled" if err is None else "FAILED " + err, secs),
                  flush=True)
    return 0
