# lit configuration for tilec's golden tests: emitted IR/CUDA/headers and diagnostics.
import os
import lit.formats

config.name = "tilec"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".tile", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.tilec), "tests", "lit-out")

config.substitutions.append(("%tilec", config.tilec))
config.substitutions.append(("%srcroot", config.tilec_src))
config.substitutions.append(("%examples", os.path.join(config.tilec_src, "examples")))
config.substitutions.append(("FileCheck", config.filecheck))
if config.nvcc and os.path.exists(config.nvcc):
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", config.nvcc))
    # cuobjdump beside nvcc, on PATH or from pip (tests/cuda/find_cuobjdump.sh): SASS for tests of machine code
    import subprocess
    _cuobjdump = subprocess.run(["bash", os.path.join(config.tilec_src, "tests", "cuda", "find_cuobjdump.sh"), config.nvcc],
                                capture_output=True, text=True).stdout.strip().splitlines()
    if _cuobjdump:
        config.available_features.add("cuobjdump")
        config.substitutions.append(("%cuobjdump", _cuobjdump[0]))
# NVRTC (PTX, cubins, binary mode): tilec opens it with dlopen, searching as below (src/nvrtc/Nvrtc.cpp).
def _find_nvrtc():
    import ctypes
    roots = [os.environ[v] for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    candidates = [os.path.join(r, d, so) for r in roots for d in ("lib64", "lib") for so in ("libnvrtc.so.13", "libnvrtc.so")]
    candidates += ["/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so",
                   "libnvrtc.so.13", "libnvrtc.so", "libnvrtc.so.12"]
    for c in candidates:
        if os.sep in c and not os.path.exists(c):
            continue
        try:
            ctypes.CDLL(c)
            return c
        except OSError:
            pass
    return None
if _find_nvrtc():
    config.available_features.add("nvrtc")
config.environment["LC_ALL"] = "C"
# `not`, `count` and FileCheck come from LLVM's tools; RUN lines run under bash (loops, $?, pipes).
llvm_bin = os.path.dirname(config.filecheck)
config.environment["PATH"] = os.pathsep.join([llvm_bin, os.environ.get("PATH", "")])
