#!/usr/bin/env python3
"""A suite's reference lines run on the CPU, without TileLang or a GPU: what the side by side would evaluate.

  PYTHON_WITH_TORCH tools/gpu/reference_dryrun.py --gpu-build GPU_BUILD [--suite tilekernels] [--only REGEX]

For each line of the suite's reference.tsv that has a reference and whose kernel GPU_BUILD lists (its header
gives the parameters, its staged package the example file): the example's namespace as the timing process
builds it (TileLang's modules stand-ins here: the kernel factories are never called), the setup and the inputs
as tools/gpu/side_by_side.make_inputs makes them, every "cuda" device of the setup, the reference and the
package's own torch code sent to the CPU, the outputs zeros (or the setup's initial values). Then the reference
is evaluated and each value checked (every scalar parameter of the header bound first, as the timing process
needs it): one per written output, the output's shape, a dtype the judge can compare,
the row's check passing the reference against itself and failing it against the zero outputs (where the
reference is not zero there: a check that cannot fail says nothing). Prints one line per kernel and
"DRYRUN: N of M references well-formed"; exit 1 when one is not. Needs torch (any build; no GPU used)."""
import argparse
import importlib.abc
import importlib.machinery
import os
import re
import sys
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "gpu"))
sys.path.insert(0, os.path.join(ROOT, "gpu", "tests"))
sys.path.insert(0, HERE)
STUBBED = ("tilelang", "tvm", "tvm_ffi")


class _Stub(types.ModuleType):
    """A TileLang module stand-in: every attribute a callable stand-in (decorators, T.dynamic, dtypes)."""
    __path__ = []

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any()


class _Any:
    def __call__(self, *a, **k):
        return a[0] if len(a) == 1 and callable(a[0]) and not k else _Any()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Any()

    def __getitem__(self, key):
        return _Any()


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Stub(spec.name)

    def exec_module(self, module):
        pass


def cpu_mode(torch):
    """A TorchFunctionMode that sends every "cuda" device of a torch call to the CPU."""
    def cpu(v):
        if isinstance(v, str) and v.startswith("cuda"):
            return "cpu"
        if isinstance(v, torch.device) and v.type == "cuda":
            return torch.device("cpu")
        return v

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = {k: cpu(v) for k, v in (kwargs or {}).items()}
            if getattr(func, "__name__", "") == "cuda":
                return args[0]
            return func(*[cpu(a) for a in args], **kwargs)
    return Mode()


class CpuContext:
    """core.Context's input makers, on the CPU."""
    def __init__(self, torch, seed):
        self.torch = torch
        self.gen = torch.Generator().manual_seed(seed)

    def randn(self, shape, dtype):
        import numerics as N
        return self.torch.randn(shape, generator=self.gen).to(N.torch_dtype(self.torch, dtype))

    def output(self, shape, dtype, init=None):
        import side_by_side as SBS
        t = self.torch.zeros(shape, dtype=SBS.ctx_dtype(self.torch, dtype))
        return t.copy_(init) if init is not None else t


def dry_run(torch, gpu_build, row):
    """(ok, text) of one row's reference line."""
    import sidebyside as S
    import side_by_side as SBS
    import tlcompat as TC
    import tilelang_compat as TLC
    header = open(os.path.join(gpu_build, row["lib"] + ".h"), encoding="utf-8", errors="replace").read()
    params, sizes = TC.header_params(header, row["kernel"])
    with S.importable(S.example_dirs(gpu_build, row)), cpu_mode(torch):
        ns = TC.load_example(S.example_path(gpu_build, row))
        ns.setdefault("torch", torch)
        tensors, inits, scalars, entry, storage = SBS.make_inputs(torch, CpuContext(torch, 1), row, params, sizes, ns,
                                                                  TC.header_layouts(header, row["kernel"]))
        unbound = [w for w in (SBS.unbound_scalar(n, tensors, scalars, ns)
                               for n in TC.header_scalars(header, row["kernel"])) if w]
        if unbound:
            return False, "; ".join(unbound)
        written = [p for p in params if p[3] == "written"]
        t0 = time.time()
        refs, why = S.eval_reference(entry, ns, len(written))
        took = time.time() - t0
        if refs is None:
            return False, why or "no reference"
        problems, notes = [], []
        check = eval(entry["check"], dict(ns, close=TLC.close, similar=TLC.similar))
        for (name, dtype, dims, _), r in zip(written, refs):
            out = tensors[name]
            if not hasattr(r, "shape") or tuple(r.shape) != tuple(out.shape):
                problems.append("%s: reference shape %s, output %s" % (name, tuple(getattr(r, "shape", ())), tuple(out.shape)))
                continue
            try:
                TLC.comparable(torch, out, r)
                check(name, r.to(out.dtype) if r.dtype != out.dtype and out.dtype.is_floating_point else r, r)
            except Exception as e:  # noqa: BLE001
                problems.append("%s: the check fails the reference against itself: %s" % (name, e))
                continue
            fails_zero = True
            if inits.get(name) is None and bool((r.double() if r.dtype.is_floating_point or r.dtype.itemsize > 1
                                                 else r.long()).ne(0).any()):
                try:
                    check(name, out, r)
                    fails_zero = False
                except Exception:  # noqa: BLE001
                    pass
            if not fails_zero:
                problems.append("%s: the check passes zero outputs against a non-zero reference" % name)
            notes.append("%s %s %s (header %s)" % (name, str(r.dtype).replace("torch.", ""), list(r.shape), dtype))
    return not problems, "%.1f s; %s%s" % (took, "; ".join(notes), ("; PROBLEMS: " + "; ".join(problems)) if problems else "")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu-build", required=True)
    ap.add_argument("--suite", default="tilekernels")
    ap.add_argument("--only", default=None, help="kernels whose name matches this regex")
    args = ap.parse_args(argv)
    import torch
    import sidebyside as S
    import tlcompat as TC
    sys.meta_path.insert(0, _StubFinder())
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    lines = TC.read_reference(os.path.join(ROOT, S.SUITES[args.suite][1]))
    rows = {(r["file"], r["kernel"]): r for r in S.read_rows(args.gpu_build) if r["suite"] == args.suite}
    good = total = 0
    for (f, k), e in sorted(lines.items(), key=lambda kv: kv[1]["line"]):
        if e["reference"] in S.NO_REFERENCE or (args.only and not re.search(args.only, k)):
            continue
        total += 1
        row = rows.get((f, k))
        if row is None:
            print("MISSING %s: not in %s's kernels.tsv" % (k, args.gpu_build))
            continue
        try:
            ok, text = dry_run(torch, args.gpu_build, row)
        except Exception as ex:  # noqa: BLE001
            ok, text = False, "%s: %s" % (type(ex).__name__, " ".join(str(ex).split())[:400])
            traceback.print_exc()
        good += ok
        print("%-4s %s: %s" % ("OK" if ok else "BAD", k, text), flush=True)
    print("DRYRUN: %d of %d references well-formed" % (good, total))
    return 0 if good == total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
