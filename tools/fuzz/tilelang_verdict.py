#!/usr/bin/env python3
"""Whether TileLang lowers the programs tilec-difffuzz draws (the rejection census's ground truth; no GPU needed).

  PYTHONPATH=SITE /work/venv-tl/bin/python tools/fuzz/tilelang_verdict.py [--fuzzer BIN] SEED|FILE.py ...
      for each seed, the program `BIN --print --seed SEED` prints (BIN default build/tests/tilec_difffuzz); for
      each .py / .tile file, its text: TileLang lowers the module's `kernel` for sm_90a (TileLang's own layout
      inference and tile-op lowering, no CUDA compiled) and one line is printed, `SEED: accepts` or
      `SEED: refuses: FIRST LINE OF ITS ERROR`. Exit status 0.

The census (`tilec-difffuzz --seed S --count N`, its summary's "rejections by diagnostic") names the first seed of
each kind of rejection; this says whether TileLang accepts that program, that is whether the kind is one of tilec's
limitations (docs/TESTING.md would list them; tools/fuzz/diff/Rejections.cpp does) or a program TileLang refuses too.
SITE: TileLang's bundle unpacked (tools/compat/tilelang_cuda.py's docstring: /work/tlsite)."""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "compat"))


def program_text(arg, fuzzer):
    if arg.endswith(".py") or arg.endswith(".tile"):
        with open(arg, encoding="utf-8") as f:
            return f.read()
    return subprocess.run([fuzzer, "--print", "--seed", arg], check=True, capture_output=True, text=True).stdout


def tilelang_spelling(text):
    """The fuzzer writes a T.alloc_var `v` read as `v[0]` (TileLang up to 0.1.5); TileLang 0.1.15 reads it as `v`."""
    for var in re.findall(r"^\s*(\w+) = T\.alloc_var\(", text, re.M):
        text = re.sub(r"\b%s\[0\]" % re.escape(var), var, text)
    return text


def verdict(tilelang, tvm, target, name, text, tmp):
    # a file of its own: TileLang's parser reads the prim_func's source back (inspect)
    path = os.path.join(tmp, "p_%s.py" % "".join(c if c.isalnum() else "_" for c in name))
    with open(path, "w", encoding="utf-8") as f:
        f.write(tilelang_spelling(text))
    try:
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        module = importlib.util.module_from_spec(spec)
        with tvm.transform.PassContext(opt_level=3), target:  # current while the module builds its kernel too
            spec.loader.exec_module(module)
            bound = re.findall(r"^(\w+) = make\(", text, re.M)  # the kernel's name (GProgram::kernelName)
            tilelang.lower(getattr(module, bound[-1] if bound else "kernel"), target=target)
        return "accepts"
    except Exception as e:  # noqa: BLE001 - TileLang's refusal is the answer
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip() and not ln.strip().startswith(("-->", "|"))]
        first = next((ln for ln in lines if "rror" in ln or "failed" in ln or "not supported" in ln), lines[0] if lines else "")
        return "refuses: %s: %s" % (type(e).__name__, first[:200])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fuzzer", default=os.path.join(ROOT, "build", "tests", "tilec_difffuzz"))
    ap.add_argument("programs", nargs="+")
    a = ap.parse_args(argv)
    import tilelang_cuda
    tilelang_cuda.torch_stand_in()
    import tilelang
    import tvm
    from tvm.target import Target
    try:
        tilelang.set_log_level("ERROR")
    except Exception:  # noqa: BLE001
        pass
    target = Target({"kind": "cuda", "arch": "sm_90a"})
    sys.stdout = sys.stderr  # TileLang's own messages; the verdicts alone on standard output
    with tempfile.TemporaryDirectory() as tmp:
        for p in a.programs:
            v = verdict(tilelang, tvm, target, os.path.basename(p), program_text(p, a.fuzzer), tmp)
            sys.__stdout__.write("%s: %s\n" % (p, v))
            sys.__stdout__.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
