#!/usr/bin/env python3
"""TileLang 0.1.15's own CUDA for manifest kernels, on a machine without a GPU (issue 25: static comparison).

  python3 tools/compat/tilelang_cuda.py EXAMPLES OUT 'REGEX' [--suite compat|tilekernels] [--tag v0.1.13]
      for each row of the suite's manifest (tests/tilelang_compat/manifest.tsv at TAG, or
      tests/tilekernels/manifest.tsv, or gpu/compat_exports.txt's lines at TAG with --suite exports, named
      LIB.NAME) whose kernel name matches REGEX: the manifest's call evaluated in the
      example file's namespace (gpu/tlcompat.load_example, TileLang's autotuner off as in the side by side),
      TileLang lowering the PrimFunc for sm_90a without compiling or running it, and OUT/NAME.tl.cu written
      (TileLang's device CUDA). EXAMPLES: the folder holding examples/ (compat; e.g. /tmp/tl13 from
      `git -C TILELANG_REPO archive v0.1.13 examples | tar -x -C /tmp/tl13`) or the package folder
      tile_kernels/ itself, with its parent on PYTHONPATH (tilekernels: the manifest's files are relative to
      it). nvcc -arch=sm_90a -cubin -I SITE/tilelang/src -I SITE/tilelang/3rdparty/cutlass/include then
      compiles the .tl.cu for SASS (tools/compat/sass_counts.sh counts tilec's).

Recipe (2026-12-04, CPU machine, no GPU, no torch from PyPI needed):
  /root/.pyenv/versions/3.12.1/bin/python -m venv /work/venv-tl
  /work/venv-tl/bin/pip install cloudpickle ml-dtypes numpy psutil tqdm typing-extensions
  mkdir -p SITE && tar -xJf .tilelang/site.tar.xz -C SITE   # ../shared/tools/tilelang/make-bundle.sh's bundle
  PYTHONPATH=SITE /work/venv-tl/bin/python tools/compat/tilelang_cuda.py /tmp/tl13 /tmp/out 'gemv.*'
TileLang imports torch; where torch is not installed, this script binds a stand-in module first (names only:
TileLang's lowering reads no tensor; an example whose manifest call needs real torch fails with that error).
The target is the JSON form TVM 0.1.15 accepts ({"kind": "cuda", "arch": "sm_90a"}; the string form
"cuda -arch=sm_90a" is refused) and must be the current target context while lowering (tile-op lowering asks
for Target.Current)."""
import argparse
import importlib.machinery
import os
import re
import sys
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "gpu"))


class _Name:
    """Any attribute or call of the torch stand-in: a name that compares equal to itself and to nothing else."""
    def __init__(self, name):
        self._n = name

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return _Name(self._n + "." + k)

    def __call__(self, *a, **k):
        return _Name(self._n + "()")

    def __repr__(self):
        return self._n

    def __hash__(self):
        return hash(self._n)

    def __eq__(self, o):
        return isinstance(o, _Name) and o._n == self._n

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __or__(self, o):  # annotations `torch.Tensor | None`
        return self

    __ror__ = __or__

    def __mro_entries__(self, bases):
        return (_Base,)


class _BaseMeta(type):
    """Class attributes a stand-in base does not define (torch.autograd.Function's `apply`) are names too."""
    def __getattr__(cls, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return _Name(cls.__name__ + "." + k)


class _Base(metaclass=_BaseMeta):
    """What a class deriving from a stand-in (`class F(torch.autograd.Function)`) derives from."""
    def __init__(self, *a, **k):
        pass


class _Module(types.ModuleType):
    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return _Name(self.__name__ + "." + k)


class _Finder:
    """Imports of torch.* submodules give stand-in modules too."""
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] != "torch":
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        m = _Module(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, m):
        pass


def torch_stand_in():
    """Binds the stand-in torch unless a real one imports."""
    try:
        import torch  # noqa: F401
        return False
    except ImportError:
        pass
    sys.meta_path.insert(0, _Finder())
    m = _Module("torch")
    m.__path__ = []
    m.__version__ = "2.8.0"
    for cls in ("Tensor", "dtype", "Size", "device"):
        setattr(m, cls, type(cls, (object,), {"__init__": lambda self, *a, **k: None}))
    # the device the generated code is for, as torch would describe an H100 SXM (sm_90a): files that size
    # their tiles from it (TileKernels' get_max_smem_per_sm, get_num_sms) get the side by side's numbers
    cuda = _Module("torch.cuda")
    cuda.__path__ = []
    props = types.SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132,
                                  shared_memory_per_multiprocessor=233472, shared_memory_per_block_optin=232448,
                                  total_memory=85045379072, L2_cache_size=52428800, warp_size=32,
                                  max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536)
    cuda.get_device_properties = lambda *a, **k: props
    cuda.current_device = lambda: 0
    cuda.is_available = lambda: True
    cuda.get_device_capability = lambda *a, **k: (9, 0)
    cuda.get_device_name = lambda *a, **k: props.name
    m.cuda = cuda
    sys.modules["torch"] = m
    sys.modules["torch.cuda"] = cuda
    return True


def manifest_rows(suite, tag, regex):
    """(file, kernel, call) of the suite's manifest rows whose kernel matches regex (compat: at tag; exports: the
    lines of gpu/compat_exports.txt at tag, each kernel named LIB.NAME, the file under examples/ as compat's)."""
    if suite == "exports":
        import tlbeside
        return [(spec["file"], "%s.%s" % (lib, name), call) for lib, spec in tlbeside.read_spec().items()
                if spec["tag"] == tag for name, call in spec["exports"] if re.fullmatch(regex, "%s.%s" % (lib, name))]
    path = os.path.join(ROOT, "tests", "tilelang_compat" if suite == "compat" else "tilekernels", "manifest.tsv")
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(cols) < 4:
                continue
            if suite == "compat":
                if cols[0] != tag:
                    continue
                cols = cols[1:]
            if re.fullmatch(regex, cols[1]):
                out.append((cols[0], cols[1], cols[2]))
    return out


def lowering(tilelang, target):
    """A replacement for tilelang.compile that lowers for target and returns an object with get_kernel_source."""
    import tvm

    class Lowered:
        def __init__(self, source):
            self.source = source

        def get_kernel_source(self):
            return self.source

    def compile(func, out_idx=None, target_=None, pass_configs=None, **_):
        attrs = func.attrs
        configs = dict(attrs["tilelang_pass_configs"]) if attrs and "tilelang_pass_configs" in attrs else {}
        configs.update(pass_configs or {})
        with tvm.transform.PassContext(opt_level=3, config=configs), target:
            art = tilelang.lower(func, target=target)
        return Lowered(art.kernel_source)
    return compile


def dump(tilelang, S, TC, examples, suite, tag, row, out, target):
    file, kernel, call = row
    base = os.path.join(examples, "examples" if suite in ("compat", "exports") else "", file)
    if call == "-":
        call = S.module_binding(base, kernel)
    sys.path.insert(0, os.path.dirname(base))
    try:
        # the target is current while the file builds its kernel too (TileKernels asks determine_target())
        with S.example_env() as keep, target:
            ns = TC.load_example(base)
            keep()
            obj = eval(compile(call, file + " (manifest call)", "eval"), ns)
            if type(obj).__name__ == "PrimFunc":
                obj = tilelang.compile(obj)
    finally:
        sys.path.remove(os.path.dirname(base))
    src = obj.get_kernel_source()
    with open(os.path.join(out, kernel + ".tl.cu"), "w", encoding="utf-8") as f:
        f.write(src)
    return len(src)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples")
    ap.add_argument("out")
    ap.add_argument("regex")
    ap.add_argument("--suite", default="compat", choices=("compat", "tilekernels", "exports"))
    ap.add_argument("--tag", default="v0.1.13")
    a = ap.parse_args(argv)
    torch_stand_in()
    import tilelang
    import tilelang.jit
    from tvm.target import Target
    import sidebyside as S
    import tlcompat as TC
    S.quiet_tilelang(tilelang)
    target = Target({"kind": "cuda", "arch": "sm_90a"})
    # tilelang.jit is the decorator; the module's own compile is what JITImpl.compile calls
    tilelang.compile = sys.modules["tilelang.jit"].compile = lowering(tilelang, target)
    os.makedirs(a.out, exist_ok=True)
    rows = manifest_rows(a.suite, a.tag, a.regex)
    if not rows:
        print("no manifest row matches %r" % a.regex, file=sys.stderr)
        return 2
    bad = 0
    for row in rows:
        try:
            n = dump(tilelang, S, TC, os.path.abspath(a.examples), a.suite, a.tag, row, a.out, target)
            print("%s: %d characters of CUDA" % (row[1], n))
        except Exception as e:  # noqa: BLE001 - one kernel's failure is reported, the others still dumped
            bad += 1
            print("%s: FAILED %s: %s" % (row[1], type(e).__name__, str(e).splitlines()[-1] if str(e) else ""),
                  file=sys.stderr)
            with open(os.path.join(a.out, row[1] + ".tl.err"), "w", encoding="utf-8") as f:
                traceback.print_exc(file=f)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
