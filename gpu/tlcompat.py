"""TileLang's own example kernels on the GPU (issue 11): each kernel of tests/tilelang_compat/manifest.tsv that
tilec compiled (tools/compat/run.sh --gpu-build put its library and the example file in gpu-build/) is run on
fresh random data and judged against the reference the example file itself carries, with the tolerances of the
example's own check. What to call and how to judge is in tests/tilelang_compat/reference.tsv, one line per
(file, kernel):

  setup      Python statements (`;` between them) that bind inputs the defaults cannot make (masks, index
             tensors, T.dynamic sizes, initial values of outputs that the kernel accumulates into), or `-`; a
             kernel that writes through pointer tables (T.make_tensor of a T.ptr table's entry) gets valid tables
             from it, and `written_through = {"C_ptrs": c_list}` names the tensors each table's entries point to
             that the kernel writes: they are outputs too, after the parameters, as "C_ptrs[0]", "C_ptrs[1]", ...;
  reference  a Python expression, usually a call of the example's own function (`ref_program(A, B)`), whose value
             is the kernel's output, or a tuple of its outputs in parameter order; where the file checks inline
             (`ref_c = a @ b` in its main), that expression as the file writes it;
  check      close(rtol, atol[, max_mismatched_ratio=r]) (torch.testing.assert_close; close() for torch's default
             tolerances) or similar(FUNCTION, LIMIT) (FUNCTION(out, ref) < LIMIT, e.g. the fp8 files' calc_diff),
             or by_output(DEFAULT, NAME=CHECK, ...): the outputs named by their own check, the others by DEFAULT.
Where the example carries no reference at all, tilec's own float64 reference of the mathematics it computes
(gpu/tlcompat_refs.py, bound as `tilec_refs` in every example's namespace: `tilec_refs.retention_fwd(Q, K, V)`).

Every name is evaluated in the example file's namespace: its imports and its module-level functions (nothing else
of the file runs: no kernel is built by TileLang, no `__main__`). An import that fails (tilelang itself, when it
is not on PYTHONPATH; a package the GPU machine lacks) binds a stand-in that raises Unavailable when used, so a
reference that needs it is a SKIP that names it, never a PASS. Inputs the setup leaves unbound are normal random
data of the header's shape and dtype; outputs are poisoned (core.Context.output) unless the setup binds them.

Needs no torch and no GPU up to the kernel call: plan() reads the header and the example, and check_plans() (the
self-check and `python3 gpu/tlcompat.py --plan GPU_BUILD`) proves every entry resolvable on a machine without either.
"""
import ast
import math
import builtins
import os
import re
import sys

import tlcompat_refs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REFERENCE_TSV = os.path.join(ROOT, "tests", "tilelang_compat", "reference.tsv")
MANIFEST_TSV = os.path.join(ROOT, "tests", "tilelang_compat", "manifest.tsv")
KERNELS_TSV = os.path.join("compat", "kernels.tsv")       # under the GPU build folder (tools/compat/run.sh)

# one parameter line of a generated header's kernel comment: " *   A: float16[1024, m], read, 16-byte aligned"
_PARAM = re.compile(r"^ \*   ([A-Za-z_]\w*): ([A-Za-z_]\w*)\[([^\]]*)\], (read|written)")
_SIZE = re.compile(r"^ \*   ([A-Za-z_]\w*): T\.dynamic size")
# a scalar parameter's line (" *   max_seqlen_q: int32 scalar"): its value comes from the setup, by name
_SCALAR = re.compile(r"^ \*   ([A-Za-z_]\w*): [A-Za-z_]\w* scalar")
# the tail of a parameter's line when its elements live in a storage of another shape (T.StridedTensor, a global
# layout): ", element [i0, i1] at [i0 * sf_stride + i1] of a row-major [(num_tokens - 1) * sf_stride + 56]"
_LAYOUT = re.compile(r", element \[([^\]]*)\] at \[(.*?)\] of a row-major \[(.*)\]$")


class Unavailable(Exception):
    """The reference needs something the machine does not have (a failed import)."""


class Missing:
    """What a failed import binds: attribute access gives another stand-in, any use raises Unavailable."""

    def __init__(self, what, why):
        self._what, self._why = what, why

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Missing("%s.%s" % (self._what, name), self._why)

    def __getitem__(self, key):
        return Missing("%s[...]" % self._what, self._why)

    def __call__(self, *args, **kwargs):
        raise Unavailable("%s is not available here (%s)" % (self._what, self._why))

    def __mro_entries__(self, bases):
        raise Unavailable("%s is not available here (%s)" % (self._what, self._why))


def read_reference(path=REFERENCE_TSV):
    """{(file, kernel): {"setup", "reference", "check"}} of reference.tsv."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 5:
                raise ValueError("%s:%d: %d columns, want 5 (file, kernel, setup, reference, check)"
                                 % (path, n, len(cols)))
            f_, k, setup, ref, check = cols
            if (f_, k) in out:
                raise ValueError("%s:%d: a second line for %s %s" % (path, n, f_, k))
            out[(f_, k)] = dict(setup="" if setup == "-" else setup, reference=ref, check=check, line=n)
    return out


def read_kernels(gpu_build):
    """[(library, tag, file, kernel)] of GPU_BUILD/compat/kernels.tsv, [] when there is none."""
    path = os.path.join(gpu_build, KERNELS_TSV)
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            rows.append(tuple(line.rstrip("\n").split("\t")))
    return rows


def _comment_lines(text, kernel):
    """The parameter, size and scalar lines of KERNEL's comment in a header, in order."""
    inside = False
    for line in text.splitlines():
        if line.startswith("/* %s: kernel " % kernel):
            inside = True
            continue
        if not inside:
            continue
        if not (_PARAM.match(line) or _SIZE.match(line) or _SCALAR.match(line)):
            return
        yield line


def header_params(text, kernel):
    """[(name, dtype, [dims as text], role)] and [T.dynamic size names] of KERNEL's comment in a header."""
    params, sizes = [], []
    for line in _comment_lines(text, kernel):
        m = _PARAM.match(line)
        if m:
            dims = [d.strip() for d in m.group(3).split(",") if d.strip()]
            params.append((m.group(1), m.group(2), dims, m.group(4)))
        elif _SIZE.match(line):
            sizes.append(_SIZE.match(line).group(1))
    return params, sizes


def header_scalars(text, kernel):
    """The scalar parameters (" *   max_seqlen_q: int32 scalar") of KERNEL's comment in a header, in order."""
    return [m.group(1) for m in map(_SCALAR.match, _comment_lines(text, kernel)) if m]


def _split_top(text):
    """The comma-separated items of text, commas inside parentheses or brackets kept."""
    items, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([" and 1 or (ch in ")]" and -1 or 0)
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return items + [cur.strip()] if cur.strip() else items


def header_layouts(text, kernel):
    """{name: (index variables, storage index expressions, storage dims)} of KERNEL's parameters whose header line
    places their elements in a storage of another shape; the others are row-major in their own shape."""
    out = {}
    for line in _comment_lines(text, kernel):
        m, lay = _PARAM.match(line), _LAYOUT.search(line)
        if m and lay:
            out[m.group(1)] = tuple(_split_top(lay.group(k)) for k in (1, 2, 3))
        elif m and ", element [" in line:
            raise ValueError("internal error: tools cannot read the layout of %r: %s" % (m.group(1), line))
    return out


def strides_of(layout, shape, ns):
    """(storage elements, element offset, strides) of a layout whose storage index is affine in the element's
    indices (a T.StridedTensor), evaluated with the sizes in ns; None where it is not (a permutation with // and %:
    the storage then holds exactly the logical elements, in the order the example's reference knows)."""
    names, at, dims = layout
    sizes = [int(eval(d, {"__builtins__": {}}, ns)) for d in dims]
    row = [math.prod(sizes[k + 1:]) for k in range(len(sizes))]
    safe = {"__builtins__": {}, "min": min, "max": max}

    def offset(idx):
        env = dict(ns, **dict(zip(names, idx)))
        return sum(int(eval(e, safe, env)) * r for e, r in zip(at, row))
    zero = offset([0] * len(shape))
    strides = [offset([int(k == j) for k in range(len(shape))]) - zero for j in range(len(shape))]
    for probe in ([n - 1 for n in shape], [n // 2 for n in shape], [n // 3 for n in shape]):
        if offset(probe) != zero + sum(i * s for i, s in zip(probe, strides)):
            return None
    return math.prod(sizes), zero, strides


def laid_out(make, shape, layout, ns):
    """(storage, view) of a parameter whose header places its elements by `layout` in a storage with gaps (a
    T.StridedTensor's dynamic strides): storage = make((elements,)), what the kernel's pointer gets; view its
    elements in the logical shape (torch's as_strided), what a reference or TileLang's kernel (which reads the
    strides from the tensor) gets. None where the layout is not affine or its storage holds exactly the logical
    elements (T.annotate_layout's reorderings: the kernel's buffer is the logical-shaped tensor, in its order,
    for TileLang's kernel and the references alike)."""
    got = strides_of(layout, shape, ns)
    if got is None or got[0] == math.prod(shape):
        return None         # a layout of exactly the logical elements (T.annotate_layout's): kept as it was
    n, zero, strides = got
    storage = make((n,))
    return storage, storage.as_strided(tuple(shape), tuple(strides), storage.storage_offset() + zero)


_KEEP = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_plain(node):
    """A module-level value that runs nothing of the example: literals, names, arithmetic, tuples, and calls of
    torch's constructors on such values (`_FP4_VALS = torch.tensor([0.0, 0.5, ...], dtype=torch.float32)`, which
    deepseek_v4/act_quant.py's reference reads); no other call, no subscript."""
    if isinstance(node, ast.Call):
        f = node.func
        return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch" and \
            f.attr in _TORCH_CONSTRUCTORS and all(_is_plain(a) for a in node.args) and \
            all(_is_plain(k.value) for k in node.keywords)
    if isinstance(node, (ast.Subscript, ast.Lambda, ast.Await, ast.Yield)):
        return False
    return all(_is_plain(c) for c in ast.iter_child_nodes(node))


_TORCH_CONSTRUCTORS = {"tensor", "arange", "zeros", "ones", "full", "linspace", "empty"}


def load_example(path, torch_module=None):
    """The example file's namespace: its imports, module-level functions and classes and plain constants, each
    statement on its own; a failing import binds Missing stand-ins, a failing definition is left out. Nothing
    else of the file runs. torch_module, when given, is what `import torch` binds (the self-check's mock)."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    tree = ast.parse(src, path)
    ns = {"__name__": "tilec_compat_example", "__file__": path, "tilec_refs": tlcompat_refs}
    if torch_module is not None:
        ns["torch"] = torch_module
    # modules of the example's own folder (varlen_utils) import as the example does; they leave sys.modules
    # afterwards, since another example's folder may have a module of the same name
    here = os.path.dirname(os.path.abspath(path))
    before = set(sys.modules)
    sys.path.insert(0, here)
    try:
        _load_into(ns, tree, path, torch_module)
    finally:
        sys.path.remove(here)
        for name in set(sys.modules) - before:
            f = getattr(sys.modules[name], "__file__", None) or ""
            if os.path.dirname(os.path.abspath(f)) == here:
                del sys.modules[name]
    return ns


def _load_into(ns, tree, path, torch_module):
    """load_example's statements, one at a time, into ns."""
    for node in tree.body:
        plain = isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _is_plain(node.value)
        if not isinstance(node, _KEEP) and not plain:
            continue
        if torch_module is not None and isinstance(node, ast.Import) and \
                all(a.name.split(".")[0] == "torch" and a.asname is None for a in node.names):
            continue
        code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
        try:
            exec(code, ns)
        except Exception as e:  # noqa: BLE001 - whatever an import raises, the stand-in records it
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                why = "import failed: %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
                sibling = _sibling_namespace(node, path, torch_module)
                for a in node.names:
                    bound = a.asname or a.name.split(".")[0]
                    if sibling is not None and a.name in sibling and not isinstance(sibling[a.name], Missing):
                        ns[bound] = sibling[a.name]
                    else:
                        ns[bound] = Missing(a.name if isinstance(node, ast.Import) else a.name, why)
            # a definition whose decorator needs TileLang (@tilelang.jit) is a kernel factory: not needed


_LOADING = set()


def _sibling_namespace(node, path, torch_module):
    """For `from MOD import names` that failed where MOD.py lies in the example's own folder
    (block_causal_attention_varlen.py imports block_causal_attention_ref from block_causal_attention.py, which imports
    tilelang): MOD's namespace as load_example makes it, so that its torch references load although its own TileLang
    import fails; else None."""
    if not isinstance(node, ast.ImportFrom) or node.level or not node.module or "." in node.module:
        return None
    mod = os.path.join(os.path.dirname(os.path.abspath(path)), node.module + ".py")
    if not os.path.isfile(mod) or mod in _LOADING:
        return None
    _LOADING.add(mod)
    try:
        return load_example(mod, torch_module)
    finally:
        _LOADING.discard(mod)


def _tilec_refs_used(text):
    """The names of tilec's own references (gpu/tlcompat_refs.py) that reference.tsv text uses as tilec_refs.NAME."""
    return sorted(set(re.findall(r"\btilec_refs\.(\w+)", text)))


def _called_names(expr):
    """The free function names an expression calls (ref_program in ref_program(A, B))."""
    tree = ast.parse(expr, mode="eval")
    return sorted({n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)})


_CHECK_FNS = ("close", "similar", "by_output")


def _check_form_ok(check_fn):
    """Whether a parsed check is close / similar / by_output called by name."""
    return isinstance(check_fn, ast.Call) and isinstance(check_fn.func, ast.Name) and check_fn.func.id in _CHECK_FNS


def _missing_tilec_refs(entry):
    """The tilec_refs.NAME an entry's reference or check uses that gpu/tlcompat_refs.py does not define."""
    return [n for n in _tilec_refs_used(entry["reference"] + "\n" + entry["check"])
            if not callable(getattr(tlcompat_refs, n, None))]


def plan(gpu_build, lib, tag, file, kernel, refs, torch_module=None):
    """Everything but the GPU: the header's parameters, the example's namespace, the entry of reference.tsv, the
    compiled setup, reference and check. Returns a dict; raises ValueError for what makes the entry unusable."""
    entry = refs.get((file, kernel))
    if entry is None:
        raise LookupError("%s carries no reference for %s in tests/tilelang_compat/reference.tsv" % (file, kernel))
    hpath = os.path.join(gpu_build, lib + ".h")
    with open(hpath, encoding="utf-8", errors="replace") as f:
        header = f.read()
    params, sizes = header_params(header, kernel)
    layouts = header_layouts(header, kernel)
    if not params:
        raise ValueError("%s declares no parameters for kernel %s" % (hpath, kernel))
    ns = load_example(os.path.join(gpu_build, "compat", tag, file), torch_module)
    where = "reference.tsv:%d" % entry["line"]
    try:
        setup = compile(entry["setup"].replace("; ", "\n"), where + " setup", "exec")
        reference = compile(entry["reference"], where + " reference", "eval")
        check = compile(entry["check"], where + " check", "eval")
    except SyntaxError as e:
        raise ValueError("%s: %s" % (where, e))
    check_fn = ast.parse(entry["check"], mode="eval").body
    if not _check_form_ok(check_fn):
        raise ValueError("%s: the check must be close(...), similar(...) or by_output(...), not %r" % (where, entry["check"]))
    names = {p[0] for p in params} | set(sizes)
    used = _called_names(entry["reference"]) + [a.id for a in check_fn.args if isinstance(a, ast.Name)]
    unknown = [n for n in used if n not in ns and n not in names and not hasattr(builtins, n)]
    unknown += ["tilec_refs." + n for n in _missing_tilec_refs(entry)]
    if unknown:
        raise ValueError("%s: %s, used by the reference or the check, is not defined by %s"
                         % (where, ", ".join(unknown), file))
    outputs = [p for p in params if p[3] == "written"]
    if not outputs and "written_through" not in entry["setup"]:
        raise ValueError("%s: kernel %s writes no parameter (and the setup binds no written_through)" % (hpath, kernel))
    return dict(params=params, sizes=sizes, ns=ns, setup=setup, reference=reference, check=check,
                outputs=outputs, entry=entry, layouts=layouts)


def check_plans(gpu_build, refs=None, torch_module=None):
    """[(library, problem or "")] for every kernel GPU_BUILD holds (the prepare half's check)."""
    refs = refs if refs is not None else read_reference()
    out = []
    for lib, tag, file, kernel in read_kernels(gpu_build):
        try:
            plan(gpu_build, lib, tag, file, kernel, refs, torch_module)
            out.append((lib, tag, kernel, ""))
        except (LookupError, ValueError, OSError, SyntaxError) as e:
            out.append((lib, tag, kernel, str(e)))
    return out


# a module of the example's own folder that imports what is missing (as block_causal_attention.py imports tilelang)
_SELF_SIBLING = """import nosuchpackage_tilec_selfcheck
import tilelang

@tilelang.jit
def sibling_kernel(M):
    pass

def sibling_ref(A):
    return A
"""

_SELF_HEADER = """/* k: kernel 'k' of ex.py
 *   A: float16[m, 64], read, 16-byte aligned
 *   mask: bool[4], read
 *   C: float32[m], written
 *   m: T.dynamic size, 0 to 2147483647
 *   grid ((m + 63) // 64, 1, 1), 128 threads */
tilec_status k(const void *A, const bool *mask, float *C, int64_t m, cudaStream_t stream);
"""
_LAYOUT_HEADER = """/* cb: kernel 'cb' of ex.py
 *   x_sf: float32[num_tokens + 1 - 1, 56], read, element [i0, i1] at [i0 * sf_stride + i1] of a row-major [(num_tokens - 1) * sf_stride + 56]
 *   dQ: float32[UQ, H, 64], written, element [i0, i1, i2] at [i1, i0, i2] of a row-major [H, UQ, 64]
 *   dq2: float32[S, 64], written, element [i0, i1] at [i0 // 8, i1, i0 % 8] of a row-major [S / 8, 64, 8]
 *   out: bfloat16[num_tokens, 7168], written, 16-byte aligned
 *   num_tokens: T.dynamic size, 0 to 2147483647
 *   sf_stride: T.dynamic size, 0 to 2147483647
 *   grid (num_tokens, 1, 1), 128 threads */
"""


def _check_layouts():
    """A T.StridedTensor's storage spans its strides (the side-by-side once gave tilec a compact [1024, 56] x_sf
    with sf_stride 1024: an illegal address); a reordering of exactly the logical elements keeps the tensor."""
    out = []
    lay = header_layouts(_LAYOUT_HEADER, "cb")
    if sorted(lay) != ["dQ", "dq2", "x_sf"] or lay["x_sf"] != (["i0", "i1"], ["i0 * sf_stride + i1"],
                                                                ["(num_tokens - 1) * sf_stride + 56"]):
        out.append("header_layouts: %r" % (lay,))
        return out
    ns = {"num_tokens": 1024, "sf_stride": 1024, "UQ": 16, "H": 4, "S": 32}
    got = strides_of(lay["x_sf"], (1024, 56), ns)
    if got != (1023 * 1024 + 56, 0, [1024, 1]):
        out.append("strides_of(x_sf): %r" % (got,))
    if strides_of(lay["dQ"], (16, 4, 64), ns) != (16 * 4 * 64, 0, [64, 16 * 64, 1]):
        out.append("strides_of(dQ): %r" % (strides_of(lay["dQ"], (16, 4, 64), ns),))
    if strides_of(lay["dq2"], (32, 64), ns) is not None:
        out.append("strides_of(dq2): a map with // and %% is not affine, got %r" % (strides_of(lay["dq2"], (32, 64), ns),))

    class Flat(list):
        def as_strided(self, shape, strides, offset):
            return ("view", shape, tuple(strides), offset)

        def storage_offset(self):
            return 0
    made = laid_out(lambda s: Flat(s), (1024, 56), lay["x_sf"], ns)
    if made != ([1023 * 1024 + 56], ("view", (1024, 56), (1024, 1), 0)):
        out.append("laid_out(x_sf): %r" % (made,))
    if laid_out(lambda s: Flat(s), (16, 4, 64), lay["dQ"], ns) is not None:
        out.append("laid_out(dQ): a reordering of the logical elements must keep its logical-shaped tensor")
    return out


_SELF_EXAMPLE = """import torch
import tilelang
import tilelang.language as T
from tilelang.utils import helper
import nosuchpackage_tilec_selfcheck as np_
from tilec_selfcheck_sibling import sibling_ref, sibling_kernel

SCALE = 2 ** -3
EAGER = torch.randn(4)

@tilelang.jit(out_idx=[-1])
def factory(M):
    pass

def ref_program(A, mask) -> torch.Tensor:
    return A.float().sum(-1) * SCALE

def needs_helper(A):
    return helper(A)

if __name__ == "__main__":
    raise SystemExit("the example's main must not run")
"""


def self_check(tmp):
    """Problems of the parts that need neither torch nor a GPU, on a made-up example in the folder tmp and on the
    project's own reference.tsv against manifest.tsv."""
    problems = []
    params, sizes = header_params(_SELF_HEADER, "k")
    if params != [("A", "float16", ["m", "64"], "read"), ("mask", "bool", ["4"], "read"),
                  ("C", "float32", ["m"], "written")] or sizes != ["m"]:
        problems.append("header_params: %r %r" % (params, sizes))
    problems += _check_layouts()
    os.makedirs(os.path.join(tmp, "compat", "t1", "sub"), exist_ok=True)
    with open(os.path.join(tmp, "compat", "t1", "sub", "ex.py"), "w") as f:
        f.write(_SELF_EXAMPLE)
    with open(os.path.join(tmp, "compat", "t1", "sub", "tilec_selfcheck_sibling.py"), "w") as f:
        f.write(_SELF_SIBLING)
    with open(os.path.join(tmp, "lib_k.h"), "w") as f:
        f.write(_SELF_HEADER)
    with open(os.path.join(tmp, KERNELS_TSV), "w") as f:
        f.write("# header\nlib_k\tt1\tsub/ex.py\tk\n")
    mock = Missing("torch", "mock")
    refs = {("sub/ex.py", "k"): dict(setup="m = 128", reference="ref_program(A, mask)", check="close(1e-2, 1e-2)",
                                     line=1)}
    try:
        p = plan(tmp, "lib_k", "t1", "sub/ex.py", "k", refs, torch_module=mock)
        ns = p["ns"]
        if not callable(ns.get("ref_program")) or isinstance(ns.get("ref_program"), Missing):
            problems.append("load_example: ref_program not defined")
        if "factory" in ns or "EAGER" in ns or ns.get("SCALE") != 2 ** -3:
            problems.append("load_example ran or skipped the wrong statements: %r" % sorted(ns))
        try:
            ns["needs_helper"](1)
            problems.append("a failed import's stand-in did not raise when used")
        except Unavailable as e:
            if "tilelang.utils" not in str(e) and "helper" not in str(e):
                problems.append("Unavailable does not name what is missing: %s" % e)
        if not callable(ns.get("sibling_ref")) or isinstance(ns.get("sibling_ref"), Missing) or \
                not isinstance(ns.get("sibling_kernel"), Missing):
            problems.append("a function of the example's own folder whose module imports a missing package is not "
                            "loaded as the example itself is: %r" % ns.get("sibling_ref"))
        if not isinstance(ns.get("np_"), Missing):
            problems.append("a failing import of a missing package does not bind a stand-in")
    except Exception as e:  # noqa: BLE001
        problems.append("plan on the made-up example: %s: %s" % (type(e).__name__, e))
    for src, want in (("torch.tensor([0.0, 0.5], dtype=torch.float32)", True), ("torch.randn(4)", False),
                      ("torch.tensor(table[0])", False), ("helper(1)", False), ("(1, 2 ** -3)", True)):
        if _is_plain(ast.parse(src, mode="eval").body) != want:
            problems.append("_is_plain(%s) should be %s (a module constant %s)" % (src, want, "loaded" if want else
                                                                                  "left out"))
    for bad, what in ((dict(refs[("sub/ex.py", "k")], reference="no_such_fn(A)"), "an undefined reference"),
                      (dict(refs[("sub/ex.py", "k")], check="print(1)"), "a check that is not close/similar"),
                      (dict(refs[("sub/ex.py", "k")], check="tilec_refs.tk.by_output(close(1, 1))"),
                       "a check through tilec_refs (TileKernels' by_output is no compat check)"),
                      (dict(refs[("sub/ex.py", "k")], setup="m = = 1"), "a setup that does not parse"),
                      (dict(refs[("sub/ex.py", "k")], reference="tilec_refs.no_such_ref(A)"),
                       "an undefined tilec reference")):
        try:
            plan(tmp, "lib_k", "t1", "sub/ex.py", "k", {("sub/ex.py", "k"): bad}, torch_module=mock)
            problems.append("plan accepted %s" % what)
        except ValueError:
            pass
    rows = check_plans(tmp, refs, mock)
    if rows != [("lib_k", "t1", "k", "")]:
        problems.append("check_plans: %r" % rows)
    # a kernel that writes only through pointer tables: planned when the setup names what it writes
    with open(os.path.join(tmp, "lib_k.h"), "w") as f:
        f.write(_SELF_HEADER.replace("], written", "], read"))
    for setup, accepted in (("m = 128", False), ("m = 128; written_through = dict(C_ptrs=[])", True)):
        try:
            plan(tmp, "lib_k", "t1", "sub/ex.py", "k", {("sub/ex.py", "k"): dict(refs[("sub/ex.py", "k")], setup=setup)},
                 torch_module=mock)
            if not accepted:
                problems.append("plan accepted a kernel that writes nothing, without written_through")
        except ValueError as e:
            if accepted:
                problems.append("plan refused a kernel writing through pointer tables: %s" % e)
    with open(os.path.join(tmp, "lib_k.h"), "w") as f:   # the header again, for the checks after this one
        f.write(_SELF_HEADER)
    # every manifest kernel that tilec compiles has a reference line, but for those whose file carries none
    refs = read_reference()
    with open(MANIFEST_TSV, encoding="utf-8") as f:
        wanted = {(c[1], c[2]) for c in (line.rstrip("\n").split("\t") for line in f)
                  if len(c) == 5 and not c[0].startswith("#") and c[4] == "ok"}
    without = sorted(k for _, k in wanted - set(refs))
    if without:
        # Not a harness fault: the v0.1.13 manifest (issue 24) lists kernels whose references are not written
        # yet; each SKIPs on the GPU, and the count is said here so that it stays visible until it is 0.
        print("self-check: %d manifest kernels that tilec compiles have no reference line yet (they SKIP on the "
              "GPU): %s" % (len(without), " ".join(without)))
    stale = sorted(k for _, k in set(refs) - {(f_, k) for f_, k in wanted})
    if stale:
        problems.append("reference.tsv lines for kernels the manifest does not expect to compile: %s" % stale)
    problems += check_forms(refs)
    return problems


def check_forms(refs):
    """What plan() refuses in a reference line without the example or the build: a check that does not parse or is
    not close / similar / by_output called by name, or a tilec reference gpu/tlcompat_refs.py lacks (session 39's
    tilec_refs.tk.by_output passed every test without a TileLang checkout and failed the GPU run's plan)."""
    problems = []
    for (file, kernel), entry in sorted(refs.items()):
        where = "reference.tsv:%d (%s)" % (entry["line"], kernel)
        try:
            fn = ast.parse(entry["check"], mode="eval").body
        except SyntaxError as e:
            problems.append("%s: the check does not parse: %s" % (where, e))
            continue
        if not _check_form_ok(fn):
            problems.append("%s: the check must be close(...), similar(...) or by_output(...)" % where)
        missing = _missing_tilec_refs(entry)
        if missing:
            problems.append("%s: tilec_refs.%s is not in gpu/tlcompat_refs.py" % (where, ", tilec_refs.".join(missing)))
    return problems


def main(argv):
    if len(argv) != 3 or argv[1] != "--plan":
        print("usage: tlcompat.py --plan GPU_BUILD", file=sys.stderr)
        return 2
    rows = check_plans(argv[2], torch_module=Missing("torch", "not installed on this machine (plan only)"))
    if not rows:
        print("tlcompat: %s has no compat/kernels.tsv (tools/compat/run.sh --gpu-build)" % argv[2])
        return 77
    bad = 0
    for lib, tag, kernel, problem in rows:
        no_ref = "carries no reference" in problem
        print("%-8s %-36s %s" % (tag, lib, "planned" if not problem else ("NO REFERENCE: " if no_ref else
                                                                           "PROBLEM: ") + problem))
        bad += bool(problem) and not no_ref
    print("tlcompat: %d kernels, %d planned, %d problems" % (len(rows), sum(not r[3] for r in rows), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
