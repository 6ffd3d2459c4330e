#!/usr/bin/env python3
"""End-to-end check of `tilec --emit=torch` (docs/INTERFACE.md, "PyTorch operators") on a GPU with PyTorch.

Two steps, which may run on two machines:
  generate (needs tilec, no torch, no GPU):
      python3 tools/gpu/torch_ops.py --generate gpu-build/torch [--tilec build/tilec]
    runs tilec on tests/lit/torch/Inputs/kernels.tile: torch_ops.cu, .h, .torch.cpp and .xla.cpp.
  run (needs torch with CUDA, nvcc, a GPU; no tilec):
      python3 tools/gpu/torch_ops.py --run gpu-build/torch
    builds libtorch_ops.so from those files with nvcc and the C++ compiler against the installed torch's
    headers and libraries (torch.utils.cpp_extension's paths; no Python at build time beyond finding them),
    loads it with torch.ops.load_library, and checks every operator against the C launch function called
    directly (ctypes) and against a float64 torch reference: in eager mode, under torch.compile(fullgraph=True),
    inside a CUDA graph capture, through the Meta implementation, its argument checks, and from a C++
    (LibTorch) program that calls the operators through the dispatcher; then, where JAX with a GPU is there,
    the --emit=xla-ffi handlers through jax.ffi.ffi_call (eager, jit, and norms' in an XLA command buffer:
    tools/gpu/xla_command_buffer.py). Prints PASS/FAIL/SKIP lines; exits 1 when anything
    FAILed; with --results FILE also a JSON line per check (tools/gpu/run.sh's torch step).
Without options both steps run (tilec: --tilec, else build/tilec) into a temporary folder.
"""
import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(ROOT, "tests", "lit", "torch", "Inputs", "kernels.tile")
STEM = "torch_ops"
results = []


RESULTS = None  # --results: a JSON line per check, written as it ends (a timeout keeps what was checked)


def report(status, name, detail=""):
    results.append(status)
    print(f"{status}: {name}" + (f" ({detail})" if detail else ""), flush=True)
    if RESULTS:
        with open(RESULTS, "a") as f:
            f.write(json.dumps({"name": name, "status": status, "detail": detail}) + "\n")


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def generate(out, tilec, arch):
    os.makedirs(out, exist_ok=True)
    run([tilec, KERNELS, f"-arch={arch}", "-o", os.path.join(out, STEM + ".cu"), "--emit=torch,xla-ffi"])


# ---- build (on the GPU machine) ----

def find_nvcc():
    from torch.utils import cpp_extension
    for home in (os.environ.get("CUDA_HOME"), cpp_extension.CUDA_HOME, "/usr/local/cuda"):
        if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
            return home
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    sys.exit("torch_ops.py: nvcc not found (set CUDA_HOME)")


def torch_paths():
    from torch.utils import cpp_extension
    try:
        inc = cpp_extension.include_paths(device_type="cuda")
    except TypeError:
        inc = cpp_extension.include_paths(cuda=True)
    try:
        libs = cpp_extension.library_paths(device_type="cuda")
    except TypeError:
        libs = cpp_extension.library_paths(cuda=True)
    return inc, libs


def build(gen, sm):
    import torch
    cuda = find_nvcc()
    inc, libs = torch_paths()
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    nvcc = os.path.join(cuda, "bin", "nvcc")
    cxx = os.environ.get("CXX", "c++")
    so = os.path.join(gen, "lib" + STEM + ".so")
    gencode = f"-gencode=arch=compute_{sm},code=sm_{sm}"
    run([nvcc, "-O3", "-std=c++17", gencode, "-Xcompiler", "-fPIC", "-c", os.path.join(gen, STEM + ".cu"),
         "-o", os.path.join(gen, STEM + ".o")])
    std = "c++17" if tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 10) else "c++20"  # the headers' ask
    flags = ["-O2", f"-std={std}", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-I", gen,
             "-I", os.path.join(cuda, "include")] + [f for d in inc for f in ("-isystem", d)]
    run([cxx] + flags + ["-c", os.path.join(gen, STEM + ".torch.cpp"), "-o", os.path.join(gen, STEM + ".torch.o")])
    torchlibs = [f"-L{d}" for d in libs] + ["-lc10", "-lc10_cuda", "-ltorch_cpu", "-ltorch_cuda", "-ltorch"]
    # Linked by nvcc, with its static CUDA runtime, as tools/gpu/run.sh builds the suite's libraries.
    run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", so, os.path.join(gen, STEM + ".o"), os.path.join(gen, STEM + ".torch.o")]
        + torchlibs + [f for d in libs for f in ("-Xlinker", f"-rpath={d}")])
    libflags = torchlibs + [f"-Wl,-rpath,{d}" for d in libs]
    # A LibTorch program (no Python) that calls an operator through the dispatcher.
    main = os.path.join(gen, "libtorch_main.cpp")
    with open(main, "w") as f:
        f.write(LIBTORCH_MAIN)
    exe = os.path.join(gen, "libtorch_main")
    try:
        run([cxx] + flags + [main, "-o", exe, f"-L{gen}", f"-Wl,-rpath,{os.path.abspath(gen)}", "-Wl,--no-as-needed",
                             "-l" + STEM] + libflags)
    except subprocess.CalledProcessError as e:
        report("FAIL", "LibTorch program builds", str(e))
        exe = None
    return so, exe


LIBTORCH_MAIN = r"""// Calls tilec::add_rows and tilec::gemm through the dispatcher from C++ alone.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <cmath>
#include <cstdio>
#include <string>
int main() {
    auto add = c10::Dispatcher::singleton().findSchemaOrThrow("tilec::add_rows", "")
                   .typed<at::Tensor(const at::Tensor &, const at::Tensor &)>();
    auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
    at::Tensor A = at::randn({37, 256}, opts), B = at::randn({37, 256}, opts);
    at::Tensor C = add.call(A, B);
    bool ok = C.sizes() == A.sizes() && at::allclose(C.to(at::kFloat), (A + B).to(at::kFloat), 1e-2, 1e-2);
    auto gemm = c10::Dispatcher::singleton().findSchemaOrThrow("tilec::gemm", "")
                    .typed<void(const at::Tensor &, const at::Tensor &, const at::Tensor &)>();
    at::Tensor X = at::randn({256, 96}, opts.dtype(at::kHalf)), W = at::randn({96, 128}, opts.dtype(at::kHalf));
    at::Tensor Y = at::full({256, 128}, NAN, opts.dtype(at::kHalf));
    gemm.call(X, W, Y);
    at::Tensor R = at::matmul(X.to(at::kDouble), W.to(at::kDouble));
    ok = ok && (Y.to(at::kDouble) - R).abs().max().item<double>() < 0.05 * R.abs().max().item<double>();
    bool refused = false;
    try {
        add.call(A, B.to(at::kHalf));
    } catch (const c10::Error &e) {
        refused = std::string(e.what()).find("argument 'B'") != std::string::npos;
    }
    std::printf("%s\n", ok && refused ? "libtorch ok" : "libtorch wrong");
    return ok && refused ? 0 : 1;
}
"""


# ---- checks ----

def check(name, fn):
    try:
        detail = fn()
        report("PASS", name, detail or "")
    except Exception as e:  # a failed check names itself and the run goes on
        report("FAIL", name, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def gemm_bound(A, B, R, u, u_out):
    return 4 * u * (A.double().abs() @ B.double().abs()) + u_out * R.abs()


def expect_gemm(C, A, B):
    R = A.double() @ B.double()
    err = (C.double() - R).abs()
    bound = gemm_bound(A, B, R, 2.0 ** -11, 2.0 ** -11)
    assert not C.isnan().any(), "NaN left in the output"
    assert (err <= bound).all(), f"max error {err.max().item():.3g} beyond the bound"


def expect_ulp(C, R, u):
    err = (C.double() - R).abs()
    assert not C.isnan().any(), "NaN left in the output"
    assert (err <= 2 * u * R.abs() + 1e-30).all(), f"max error {err.max().item():.3g}"


def expect_error(fn, *words):
    try:
        fn()
    except RuntimeError as e:
        msg = str(e)
        for w in words:
            assert w in msg, f"message lacks {w!r}: {msg.splitlines()[0]}"
        return msg.splitlines()[0][:100]
    raise AssertionError("no error raised")


def main_run(gen, sm):
    import torch
    try:
        so, exe = build(gen, sm)
    except (subprocess.CalledProcessError, ImportError, OSError) as e:  # a compiler's error, or torch without cpp_extension
        report("FAIL", "the operator library builds", f"{type(e).__name__}: {e}")
        return
    torch.ops.load_library(so)
    lib = ctypes.CDLL(so)
    ops = torch.ops.tilec
    dev = "cuda"
    stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    ptr = lambda t: ctypes.c_void_p(t.data_ptr())
    half, bf16 = torch.float16, torch.bfloat16
    torch.manual_seed(1234)

    def nan(*shape, dtype=half):
        return torch.full(shape, float("nan"), dtype=dtype, device=dev)

    # gemm: static shapes; C written in place (no out_idx). Same bits as the C entry.
    def gemm_eager():
        A = torch.randn(256, 96, dtype=half, device=dev)
        B = torch.randn(96, 128, dtype=half, device=dev)
        C, C2 = nan(256, 128), nan(256, 128)
        ops.gemm(A, B, C)
        assert lib.gemm(ptr(A), ptr(B), ptr(C2), stream()) == 0
        torch.cuda.synchronize()
        expect_gemm(C, A, B)
        assert torch.equal(C, C2), "differs from the C entry's result"
    check("gemm eager (vs C entry and float64 reference)", gemm_eager)

    def gemm_dyn_eager():
        for m, k in ((200, 80), (1, 32), (333, 7), (0, 64)):
            A = torch.randn(m, k, dtype=half, device=dev)
            B = torch.randn(k, 128, dtype=half, device=dev)
            C, C2 = nan(m, 128), nan(m, 128)
            ops.gemm_dyn(A, B, C)
            assert lib.gemm_dyn(ptr(A), ptr(B), ptr(C2), ctypes.c_int64(m), ctypes.c_int64(k), stream()) == 0
            torch.cuda.synchronize()
            expect_gemm(C, A, B)
            assert torch.equal(C, C2), f"m={m} k={k}: differs from the C entry's result"
        return "m, k in (200, 80), (1, 32), (333, 7), (0, 64)"
    check("gemm_dyn eager (dynamic m, k)", gemm_dyn_eager)

    def scale_eager():
        X = torch.randn(1000, device=dev)
        R = X.double() * 1.5 + 3
        X2 = X.clone()
        ops.scale(X, 1.5, 3)
        assert lib.scale(ptr(X2), ctypes.c_float(1.5), ctypes.c_int32(3), stream()) == 0
        torch.cuda.synchronize()
        expect_ulp(X, R, 2.0 ** -24)
        assert torch.equal(X, X2), "differs from the C entry's result"
    check("scale eager (scalar parameters, in place)", scale_eager)

    def add_eager():
        for rows in (77, 1, 0, 4096):
            A = torch.randn(rows, 256, dtype=bf16, device=dev)
            B = torch.randn(rows, 256, dtype=bf16, device=dev)
            C = ops.add_rows(A, B)
            C2 = nan(rows, 256, dtype=bf16)
            assert lib.add_rows(ptr(A), ptr(B), ptr(C2), ctypes.c_int64(rows), stream()) == 0
            torch.cuda.synchronize()
            assert C.shape == (rows, 256) and C.dtype == bf16 and C.device == A.device
            expect_ulp(C, A.double() + B.double(), 2.0 ** -8)
            assert torch.equal(C, C2), "differs from the C entry's result"
        return "rows 77, 1, 0, 4096; out_idx output allocated"
    check("add_rows eager (out_idx)", add_eager)

    # norms: two launches sharing a T.alloc_global workspace, which the operator takes from PyTorch's caching
    # allocator (NAME_with_workspace) while the C entry allocates its own (cudaMallocAsync): the same bits.
    lib.norms_workspace_bytes.restype = ctypes.c_size_t

    def norms_reference(A):
        return A.double().square().sum(dim=(1, 2)).sqrt()

    def norms_eager():
        for n in (100, 1, 0, 1000):
            A = torch.randn(n, 3, 32, device=dev)
            want = lib.norms_workspace_bytes(ctypes.c_int64(n))
            assert want == (n * 3 * 4 + 255) // 256 * 256, f"n={n}: norms_workspace_bytes = {want}"
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            Out = ops.norms(A)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
            assert peak >= want + 4 * n, f"n={n}: the workspace ({want} bytes) is not from PyTorch's allocator (peak {peak})"
            Out2 = torch.full((n,), float("nan"), device=dev)
            assert lib.norms(ptr(A), ptr(Out2), ctypes.c_int64(n), stream()) == 0
            torch.cuda.synchronize()
            assert Out.shape == (n,) and Out.dtype == torch.float32
            expect_ulp(Out, norms_reference(A), 100 * 2.0 ** -24)
            assert torch.equal(Out, Out2), f"n={n}: differs from the C entry's result"
        return "n 100, 1, 0, 1000; workspace from the caching allocator"
    check("norms eager (T.alloc_global workspace from PyTorch's allocator)", norms_eager)

    # Argument checks: each a c10::Error (RuntimeError) naming the argument.
    def errors():
        A = torch.randn(64, 256, dtype=bf16, device=dev)
        expect_error(lambda: ops.add_rows(A, A.half()), "argument 'B'", "bfloat16")
        expect_error(lambda: ops.add_rows(A, A.cpu()), "argument 'B'")
        expect_error(lambda: ops.add_rows(A, A[:, :128]), "argument 'B'", "dimension 1")
        expect_error(lambda: ops.add_rows(A, A[:32]), "argument 'B'", "dimension 0")
        expect_error(lambda: ops.add_rows(A, A.t().contiguous().t()), "argument 'B'", "contiguous")
        expect_error(lambda: ops.gemm_dyn(torch.randn(8, 32, dtype=half, device=dev),
                                          torch.randn(16, 128, dtype=half, device=dev), nan(8, 128)), "argument 'B'")
        expect_error(lambda: ops.scale(torch.randn(1000, device=dev), 1.0, 2 ** 40), "offset")
        # A misaligned pointer: the C function's status, with the argument's name.
        X = torch.randn(2 * 256 + 8, dtype=bf16, device=dev)[1:].view(-1)[: 2 * 256].view(2, 256)
        return expect_error(lambda: ops.add_rows(X, X), "argument 'A'")
    check("argument checks raise c10::Error naming the argument", errors)

    def meta():
        A = torch.empty(5, 256, dtype=bf16, device="meta")
        C = ops.add_rows(A, A)
        assert C.shape == (5, 256) and C.dtype == bf16 and C.device.type == "meta"
        expect_error(lambda: ops.add_rows(A, A[:, :3]), "argument 'B'")
    check("Meta implementation", meta)

    # torch.compile(fullgraph=True): in-place operators through auto-functionalization, out_idx outputs.
    def compiled():
        torch._dynamo.reset()

        def f(A, B, X, Y, Q):
            C = torch.empty(A.shape[0], B.shape[1], dtype=A.dtype, device=A.device)
            ops.gemm_dyn(A, B, C)
            D = ops.add_rows(X, Y) * 2
            Z = X.new_zeros(1000).float() + 1
            ops.scale(Z, 2.0, 1)
            N = ops.norms(Q * 2) + 1
            return C, D, Z, N
        cf = torch.compile(f, fullgraph=True)
        for m, rows in ((128, 64), (200, 300)):
            A = torch.randn(m, 64, dtype=half, device=dev)
            B = torch.randn(64, 128, dtype=half, device=dev)
            X = torch.randn(rows, 256, dtype=bf16, device=dev)
            Y = torch.randn(rows, 256, dtype=bf16, device=dev)
            Q = torch.randn(rows + 7, 3, 32, device=dev)
            C, D, Z, N = cf(A, B, X, Y, Q)
            torch.cuda.synchronize()
            expect_gemm(C, A, B)
            expect_ulp(D, 2 * (X.double() + Y.double()), 2.0 ** -8)
            assert torch.equal(Z, torch.full_like(Z, 3.0)), "scale under torch.compile"
            expect_ulp(N, norms_reference(Q * 2) + 1, 100 * 2.0 ** -24)
        return "two shape sets; norms' workspace"
    check("torch.compile(fullgraph=True)", compiled)

    def compiled_dynamic():
        torch._dynamo.reset()
        cf = torch.compile(lambda X, Y: ops.add_rows(X, Y) + 1, fullgraph=True, dynamic=True)
        for rows in (64, 65, 1000):
            X = torch.randn(rows, 256, dtype=bf16, device=dev)
            Y = torch.randn(rows, 256, dtype=bf16, device=dev)
            D = cf(X, Y)
            torch.cuda.synchronize()
            expect_ulp(D, (X + Y).double() + 1, 2.0 ** -8)
        return "rows 64, 65, 1000"
    check("torch.compile(fullgraph=True, dynamic=True)", compiled_dynamic)

    # CUDA graph capture: the operators (and their allocations) recorded, replayed on new inputs.
    def graphs():
        A = torch.randn(256, 96, dtype=half, device=dev)
        B = torch.randn(96, 128, dtype=half, device=dev)
        C = nan(256, 128)
        X = torch.randn(300, 256, dtype=bf16, device=dev)
        Y = torch.randn(300, 256, dtype=bf16, device=dev)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        Q = torch.randn(1000, 3, 32, device=dev)
        with torch.cuda.stream(s):  # warm-up on a side stream, as torch.cuda.graphs asks
            ops.gemm(A, B, C)
            ops.add_rows(X, Y)
            ops.norms(Q)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):  # norms' workspace comes from the graph's memory pool
            ops.gemm(A, B, C)
            D = ops.add_rows(X, Y)
            N = ops.norms(Q)
        for _ in range(2):
            A.copy_(torch.randn_like(A))
            B.copy_(torch.randn_like(B))
            X.copy_(torch.randn_like(X))
            Q.copy_(torch.randn_like(Q))
            C.fill_(float("nan"))
            D.fill_(float("nan"))
            N.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            expect_gemm(C, A, B)
            expect_ulp(D, X.double() + Y.double(), 2.0 ** -8)
            expect_ulp(N, norms_reference(Q), 100 * 2.0 ** -24)
        return "captured (norms' workspace included), replayed twice on fresh inputs"
    check("CUDA graph capture", graphs)

    def libtorch():
        assert exe, "not built"
        r = subprocess.run([exe], capture_output=True, text=True)
        assert r.returncode == 0, (r.stdout + r.stderr).strip()[-300:]
    check("LibTorch program calls the operators through the dispatcher", libtorch)
    jax_checks(gen, sm)


def jax_checks(gen, sm):
    """--emit=xla-ffi: the handlers registered with JAX and called through jax.ffi.ffi_call (eager and jit)."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # torch holds memory in this process too
    try:
        import jax
        import jax.numpy as jnp
        import numpy as np
        jax.devices("gpu")
        if not hasattr(jax, "ffi"):  # JAX before 0.4.38: the same module under jax.extend
            import jax.extend
            jax.ffi = jax.extend.ffi
    except Exception as e:
        report("SKIP", "XLA FFI handlers under JAX", f"no JAX with a GPU: {type(e).__name__}")
        return
    cuda = find_nvcc()
    nvcc = os.path.join(cuda, "bin", "nvcc")
    xla_so = os.path.join(gen, "lib" + STEM + "_xla.so")
    try:
        run([os.environ.get("CXX", "c++"), "-O2", "-std=c++17", "-fPIC", "-I", gen, "-I", os.path.join(cuda, "include"),
             "-isystem", jax.ffi.include_dir(), "-c", os.path.join(gen, STEM + ".xla.cpp"), "-o", os.path.join(gen, STEM + ".xla.o")])
        run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", xla_so, os.path.join(gen, STEM + ".o"), os.path.join(gen, STEM + ".xla.o")])
    except subprocess.CalledProcessError as e:
        report("FAIL", "the XLA FFI library builds", str(e))
        return
    lib = ctypes.cdll.LoadLibrary(xla_so)
    for name in ("gemm_dyn", "scale", "add_rows", "norms"):
        jax.ffi.register_ffi_target("tilec_" + name, jax.ffi.pycapsule(getattr(lib, "tilec_xla_" + name)), platform="CUDA")
    key = jax.random.PRNGKey(7)

    def add_rows():
        for rows in (77, 1):
            A = jax.random.normal(key, (rows, 256), jnp.bfloat16)
            B = jax.random.normal(jax.random.fold_in(key, 1), (rows, 256), jnp.bfloat16)
            call = lambda a, b: jax.ffi.ffi_call("tilec_add_rows", jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)
            for f in (call, jax.jit(call)):
                C = np.asarray(f(A, B).astype(jnp.float32), dtype=np.float64)
                R = np.asarray(A.astype(jnp.float32), dtype=np.float64) + np.asarray(B.astype(jnp.float32), dtype=np.float64)
                assert (np.abs(C - R) <= 2 * 2.0 ** -8 * np.abs(R) + 1e-30).all(), f"rows={rows}"
        return "out_idx result; eager and jit"
    check("XLA FFI add_rows (jax.ffi.ffi_call)", add_rows)

    def gemm_dyn():
        m, k = 200, 80
        A = jax.random.normal(key, (m, k), jnp.float16)
        B = jax.random.normal(jax.random.fold_in(key, 2), (k, 128), jnp.float16)
        C0 = jnp.full((m, 128), jnp.nan, jnp.float16)
        f = jax.jit(lambda a, b, c: jax.ffi.ffi_call("tilec_gemm_dyn", jax.ShapeDtypeStruct(c.shape, c.dtype),
                                                     input_output_aliases={2: 0})(a, b, c))
        C = np.asarray(f(A, B, C0), dtype=np.float64)
        a, b = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
        R = a @ b
        bound = 4 * 2.0 ** -11 * (np.abs(a) @ np.abs(b)) + 2.0 ** -11 * np.abs(R)
        assert not np.isnan(C).any() and (np.abs(C - R) <= bound).all(), "beyond the GEMM bound"
        return "written in place through input_output_aliases"
    check("XLA FFI gemm_dyn (dynamic m, k)", gemm_dyn)

    def scale():
        X = jax.random.normal(key, (1000,), jnp.float32)
        f = jax.jit(lambda x: jax.ffi.ffi_call("tilec_scale", jax.ShapeDtypeStruct(x.shape, x.dtype), input_output_aliases={0: 0})(
            x, alpha=np.float32(1.5), offset=np.int32(3)))
        Y = np.asarray(f(X), dtype=np.float64)
        R = np.asarray(X, dtype=np.float64) * 1.5 + 3
        assert (np.abs(Y - R) <= 2 * 2.0 ** -24 * np.abs(R) + 1e-30).all()
        return "scalars as attributes"
    check("XLA FFI scale (attributes)", scale)

    ws_bytes = lib.tilec_xla_norms_workspace_bytes
    ws_bytes.restype, ws_bytes.argtypes = ctypes.c_size_t, [ctypes.c_int64]

    def norms_call(a, workspace=None):  # the workspace: the last result, sized by the query, dropped
        ws = ws_bytes(a.shape[0]) if workspace is None else workspace
        out, _ = jax.ffi.ffi_call("tilec_norms", (jax.ShapeDtypeStruct((a.shape[0],), a.dtype),
                                                  jax.ShapeDtypeStruct((ws,), jnp.uint8)))(a)
        return out

    def norms():
        for n in (100, 1000):
            A = jax.random.normal(key, (n, 3, 32), jnp.float32)
            for f in (norms_call, jax.jit(norms_call)):
                Y = np.asarray(f(A), dtype=np.float64)
                R = np.sqrt(np.square(np.asarray(A, dtype=np.float64)).sum(axis=(1, 2)))
                assert (np.abs(Y - R) <= 200 * 2.0 ** -24 * np.abs(R) + 1e-30).all(), f"n={n}"
        return f"n 100, 1000; eager and jit; {ws_bytes(1000)} workspace bytes at n=1000"
    check("XLA FFI norms (workspace as the last result)", norms)

    def norms_small_workspace():
        A = jax.random.normal(key, (100, 3, 32), jnp.float32)
        try:
            norms_call(A, workspace=1).block_until_ready()
        except Exception as e:  # JaxRuntimeError: INVALID_ARGUMENT naming the workspace result
            assert "workspace result" in str(e), str(e).splitlines()[0]
            return "refused with INVALID_ARGUMENT"
        raise AssertionError("a 1-byte workspace result was accepted")
    check("XLA FFI norms refuses a workspace result too small", norms_small_workspace)

    def command_buffer():  # a process of its own: XLA reads its flags once per process
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xla_command_buffer.py")
        r = subprocess.run([sys.executable, script, xla_so], capture_output=True, text=True, timeout=120)
        last = (r.stdout.strip().splitlines() or [""])[-1]
        assert r.returncode == 0 and last.startswith("PASS: "), last or r.stderr.strip()[-300:]
        return last[len("PASS: "):]
    check("XLA FFI norms in an XLA command buffer (CUDA graph)", command_buffer)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--generate", metavar="DIR", help="run tilec only, into DIR")
    p.add_argument("--run", metavar="DIR", help="build and check the files in DIR")
    p.add_argument("--tilec", default=os.path.join(ROOT, "build", "tilec"))
    p.add_argument("--arch", default="sm_90a", help="tilec's -arch (generate)")
    p.add_argument("--sm", default=None, help="nvcc's target (run; default: the arch's number, e.g. 90a)")
    p.add_argument("--results", metavar="FILE", help="also write each check as a JSON line to FILE (run)")
    a = p.parse_args()
    global RESULTS
    RESULTS = a.results
    sm = a.sm or a.arch.replace("sm_", "")
    if a.generate:
        generate(a.generate, a.tilec, a.arch)
        if not a.run:
            return 0
    gen = a.run or a.generate
    if not gen:
        gen = tempfile.mkdtemp(prefix="tilec-torch-")
        generate(gen, a.tilec, a.arch)
    main_run(gen, sm)
    failed = results.count("FAIL")
    print(f"torch_ops: {results.count('PASS')} passed, {failed} failed")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
