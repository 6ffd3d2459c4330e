#!/usr/bin/env bash
# Prints the path of a cuobjdump that reads this toolkit's cubins, or nothing: on PATH, beside NVCC, then in
# Python's nvidia/*/bin (pip install nvidia-cuda-cuobjdump: it runs on machines without a GPU).
# Usage: find_cuobjdump.sh NVCC
command -v cuobjdump && exit 0
dir=$(dirname "$(command -v "$1")")
[ -x "$dir/cuobjdump" ] && { echo "$dir/cuobjdump"; exit 0; }
python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
    for root in nvidia.__path__:
        for f in sorted(glob.glob(os.path.join(root, "*", "bin", "cuobjdump"))):
            if os.access(f, os.X_OK):
                print(f)
                raise SystemExit
except ImportError:
    pass
PY
exit 0
