#!/usr/bin/env python3
"""The --emit=xla-ffi handler of a kernel with a T.alloc_global workspace inside an XLA command buffer.

tools/gpu/torch_ops.py runs it in a process of its own, since XLA reads its flags once per process:
    python3 tools/gpu/xla_command_buffer.py LIB
LIB is torch_ops.py's libtorch_ops_xla.so (the handlers and C functions of tests/lit/torch/Inputs/kernels.tile).
It makes XLA record every custom call it may into a command buffer (a CUDA graph: the handler runs once under
stream capture, the graph is replayed after), runs kernels.tile's `norms` under jit on fresh inputs several
times, checks each result against a float64 reference, and checks that XLA's optimized HLO has the custom call
in a command buffer. Prints one line, `PASS: DETAIL` or `FAIL: DETAIL`; exit status 0 unless it could not run.
"""
import ctypes
import glob
import os
import sys
import tempfile

DUMP = tempfile.mkdtemp(prefix="tilec-xla-dump-")
# Custom calls only, however short the sequence; the HLO after optimization, to see where the call went.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_gpu_enable_command_buffer=CUSTOM_CALL"
                           " --xla_gpu_graph_min_graph_size=1 --xla_dump_to=" + DUMP + " --xla_dump_hlo_as_text").strip()
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402 (after XLA_FLAGS)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

if not hasattr(jax, "ffi"):  # JAX before 0.4.38: the same module under jax.extend
    import jax.extend
    jax.ffi = jax.extend.ffi


def main(lib_path):
    lib = ctypes.cdll.LoadLibrary(lib_path)
    jax.ffi.register_ffi_target("tilec_norms", jax.ffi.pycapsule(lib.tilec_xla_norms), platform="CUDA")
    ws_bytes = lib.tilec_xla_norms_workspace_bytes
    ws_bytes.restype, ws_bytes.argtypes = ctypes.c_size_t, [ctypes.c_int64]

    @jax.jit
    def norms(a):  # the workspace: the last result, asked for and dropped
        out, _ = jax.ffi.ffi_call("tilec_norms", (jax.ShapeDtypeStruct((a.shape[0],), a.dtype),
                                                  jax.ShapeDtypeStruct((ws_bytes(a.shape[0]),), jnp.uint8)))(a)
        return out

    key = jax.random.PRNGKey(11)
    runs = 0
    for n in (1000, 300):
        for i in range(3):  # the first run records the graph; the others replay it (or update its buffers)
            A = jax.random.normal(jax.random.fold_in(key, 10 * n + i), (n, 3, 32), jnp.float32)
            Y = np.asarray(norms(A), dtype=np.float64)
            R = np.sqrt(np.square(np.asarray(A, dtype=np.float64)).sum(axis=(1, 2)))
            if not (np.abs(Y - R) <= 200 * 2.0 ** -24 * np.abs(R) + 1e-30).all():
                return f"FAIL: n={n}, run {i}: beyond the bound"
            runs += 1
    hlo = ""
    for path in glob.glob(os.path.join(DUMP, "*after_optimizations.txt")):
        with open(path) as f:
            text = f.read()
        if "tilec_norms" in text:
            hlo += text
    if not hlo:
        return "FAIL: no optimized HLO with the custom call in the dump"
    if "command_buffer" not in hlo:
        return "FAIL: XLA did not put the custom call in a command buffer (results were right, run op by op)"
    return f"PASS: {runs} runs at n 1000 and 300, recorded in a command buffer"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(main(sys.argv[1]), flush=True)
