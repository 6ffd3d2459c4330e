"""TileLang's own example kernels (issue 11): one test per kernel of tests/tilelang_compat/manifest.tsv that tilec
compiled (tools/compat/run.sh --gpu-build, from tools/gpu/prepare.sh with TILELANG_SRC set), judged against the
example file's own reference with the example's own tolerances (gpu/tlcompat.py, tests/tilelang_compat/reference.tsv).
Test ids: compat_KERNEL[_TAG]:KERNEL:TAG. No kernels.tsv (prepared without a TileLang checkout): no tests."""
import os
import sys

import core as C
import tlcompat as TC
from tlcompat_refs_tk import by_output

GPU_BUILD = os.path.join(TC.ROOT, os.environ.get("GPU_BUILD", "gpu-build"))


def close(rtol=None, atol=None, max_mismatched_ratio=0.0):
    """torch.testing.assert_close's rule |out - ref| <= atol + rtol |ref| per element (torch's default tolerances
    for the output's dtype when none are given), allowing the fraction of elements outside it that TileLang's own
    checks allow (torch_assert_close 0.001, profiler.assert_allclose 0.01). NaN never matches."""
    def judge(name, out, ref):
        t = C.torch()
        if rtol is None:
            try:
                t.testing.assert_close(out, ref.to(out.dtype))
            except AssertionError as e:
                raise C.Fail("%s: %s" % (name, " ".join(str(e).split())[:300]))
            return "%s within torch's default tolerances" % name
        out, ref = comparable(t, out, ref)
        nbad, first = 0, None
        for a, b, base in _double_chunks(t, out, ref):
            bad = ~t.isclose(a, b, rtol=rtol, atol=atol)
            n = int(bad.sum())
            if n and first is None:
                j = int(t.nonzero(bad)[0][0])
                first = (base + j, float(a[j]), float(b[j]))
            nbad += n
        if nbad > max_mismatched_ratio * out.numel():
            i = tuple(int(x) for x in _unravel(first[0], out.shape))
            raise C.Fail("%s: %d of %d elements outside rtol %g atol %g (allowed %g of them), first at %s: %r "
                         "against %r" % (name, nbad, out.numel(), rtol, atol, max_mismatched_ratio, i,
                                         first[1], first[2]))
        return "%s %d/%d outside rtol %g atol %g" % (name, nbad, out.numel(), rtol, atol)
    return judge


CHUNK = 1 << 27        # elements per float64 slice of a judged tensor: 1 GiB each for output and reference


def _double_chunks(t, out, ref):
    """(out slice, ref slice, offset) in float64 over the flattened tensors, CHUNK elements at a time, so that
    judging a large output (conv_analyze's 8.6 G elements: 69 GiB each in float64) needs no float64 copy of all
    of it. Integers go through int64, as a whole-tensor comparison does."""
    o, r = out.reshape(-1), ref.reshape(-1)
    for base in range(0, o.numel(), CHUNK):
        a, b = o[base:base + CHUNK], r[base:base + CHUNK]
        if out.dtype.is_floating_point:
            yield a.double(), b.double(), base
        else:
            yield a.long().double(), b.long().double(), base


def _unravel(flat, shape):
    """The index tuple of the flat position in a row-major tensor of shape."""
    idx = []
    for d in reversed(tuple(shape)):
        idx.append(flat % d)
        flat //= d
    return tuple(reversed(idx))


_CASTABLE = {}


def castable(t, dtype):
    """Whether torch converts dtype to float64 arithmetically. Packed formats (float4_e2m1fn_x2, the bits types)
    have no conversion: on the CPU torch raises, on the GPU its copy kernel hits a device-side assert
    (c10/core/DynamicCast.h) that poisons the CUDA context, so the judge must never ask for one there."""
    if dtype not in _CASTABLE:
        try:
            t.zeros(1, dtype=dtype).to(t.float64)
            _CASTABLE[dtype] = True
        except (RuntimeError, NotImplementedError, TypeError):
            _CASTABLE[dtype] = False
    return _CASTABLE[dtype]


def comparable(t, out, ref):
    """(out, ref) in dtypes that convert to float64. Where either is a packed format (TileLang returns an e2m1
    output as torch.float4_e2m1fn_x2; tilec's header declares the same bytes int8), both are compared as the
    signed integers of their element size, bit for bit: the codes, as the reference lines of packed outputs do
    (`q.view(torch.int8)`). Element sizes that differ cannot be compared: a failure, not a cast."""
    if castable(t, out.dtype) and castable(t, ref.dtype):
        return out, ref
    if out.element_size() != ref.element_size():
        raise C.Fail("cannot compare %s with %s (packed, of other sizes)" % (out.dtype, ref.dtype))
    ints = {1: t.int8, 2: t.int16, 4: t.int32, 8: t.int64}[out.element_size()]
    return out.view(ints), ref.view(ints)


def similar(fn, limit):
    """fn(out, ref) < limit: the fp8 files' calc_diff (1 - cosine similarity)."""
    def judge(name, out, ref):
        d = float(fn(out, ref))
        if not d < limit:
            raise C.Fail("%s: %s(out, ref) = %g, the example wants < %g" % (name, fn.__name__, d, limit))
        return "%s %s %.2g" % (name, fn.__name__, d)
    return judge


def check_fn(check, ns):
    """The judge (name, out, ref) a reference line's check names: close / similar / by_output evaluated in ns. The
    one evaluator of checks, the side by side's too (before session 42 it had its own, without by_output: the
    chunk_bwd_intra line failed there with a NameError while this test passed it)."""
    return eval(check, dict(ns, close=close, similar=similar, by_output=by_output))


def _dims(dims, ns, what):
    try:
        return tuple(int(eval(d, {"__builtins__": {}}, ns)) for d in dims)
    except Exception as e:  # noqa: BLE001
        raise C.Fail("%s: cannot size [%s] (%s); bind the T.dynamic sizes in the setup" % (what, ", ".join(dims), e))


def _exec_beside(setup, ns):
    """The setup's statements with the example's own folder importable, as its imports were (load_example):
    a setup may import the folder's modules (`from quantize.utils import interleave_weight`)."""
    here = os.path.dirname(os.path.abspath(ns.get("__file__", ".")))
    sys.path.insert(0, here)
    try:
        exec(setup, ns)
    finally:
        sys.path.remove(here)


def run(p, ctx, kernel):
    t = C.torch()
    ns = dict(p["ns"])
    ns.setdefault("torch", t)
    try:
        _exec_beside(p["setup"], ns)
        tensors, storage = {}, {}
        for name, dtype, dims, role in p["params"]:
            shape = _dims(dims, ns, name)
            given = ns.pop(name, None)
            if not isinstance(given, t.Tensor):
                given = None        # a module-level constant of the example that has the parameter's name
            if given is not None and tuple(given.shape) != shape:
                raise C.Fail("the setup's %s has shape %s, the kernel's %s" % (name, tuple(given.shape), shape))
            # a T.StridedTensor's storage spans its strides: the kernel gets the storage, the reference the view
            placed = TC.laid_out((lambda s, d=dtype: ctx.randn(s, d)) if role == "read" else
                                 (lambda s, d=dtype: ctx.output(s, d)), shape, p["layouts"][name], ns) \
                if name in p.get("layouts", {}) else None
            if placed:
                storage[name], tensors[name] = placed
                if given is not None:
                    tensors[name].copy_(given)
            elif role == "read":
                tensors[name] = given if given is not None else ctx.randn(shape, dtype)
            else:
                tensors[name] = ctx.output(shape, dtype, init=given)
            if role == "read":
                ns[name] = tensors[name]
        _, decl = ctx.kernel(kernel)
        args = []
        for prm in decl.params[:-1]:
            if prm.name in tensors:
                args.append(storage.get(prm.name, tensors[prm.name]))
            elif prm.name in ns:
                args.append(int(ns[prm.name]))
            else:
                raise C.Fail("nothing binds parameter '%s' (a T.dynamic size: bind it in the setup)" % prm.name)
        ctx.call(kernel, *args)
        ref = eval(p["reference"], ns)
        judge = check_fn(p["check"], ns)
    except TC.Unavailable as e:
        raise C.Skip("the example's reference needs what this machine lacks: %s" % e)
    refs = tuple(ref) if isinstance(ref, (tuple, list)) else (ref,)
    outs = [(o[0], tensors[o[0]]) for o in p["outputs"]]
    outs += [("%s[%d]" % (table, i), x) for table, lst in (ns.get("written_through") or {}).items()
             for i, x in enumerate(lst)]        # tensors written through pointer tables (gpu/tlcompat.py)
    if len(refs) != len(outs):
        raise C.Fail("the reference gives %d values, the kernel writes %d outputs (%s)"
                     % (len(refs), len(outs), ", ".join(o[0] for o in outs)))
    notes = []
    for (name, out), r in zip(outs, refs):
        r = r.to(out.device)
        if tuple(r.shape) != tuple(out.shape):
            raise C.Fail("%s: the reference's shape is %s, the output's %s" % (name, tuple(r.shape), tuple(out.shape)))
        notes.append(judge(name, out, r))
    return "; ".join(notes)


def _test(lib, tag, file, kernel, refs):
    def fn(ctx, k):
        try:
            p = TC.plan(GPU_BUILD, lib, tag, file, kernel, refs)
        except LookupError as e:
            raise C.Skip(str(e))
        except (ValueError, OSError, SyntaxError) as e:
            raise C.Fail("cannot plan the test: %s" % e)
        return run(p, ctx, k)
    return C.Test(lib, kernel, fn, variants=False, label=tag)


def tests():
    rows = TC.read_kernels(GPU_BUILD)
    if not rows:
        return
    refs = TC.read_reference()
    for lib, tag, file, kernel in rows:
        yield _test(lib, tag, file, kernel, refs)
