#!/usr/bin/env bash
# Runs HERE: builds a tilec that runs on the GPU machine, which has no ANTLR, CLI11, spdlog or fmt libraries
# (docs/GPU_TESTING.md): the ANTLR runtime and fmt/spdlog linked statically (CMake option TILEC_STATIC), libstdc++
# and libgcc too, stripped, into the ignored folder build-static/ (or $1). Checks with ldd that it needs nothing
# but the C library's own parts, so that it runs on the GPU machine's newer glibc (2.39; built here on 2.36).
#   tools/gpu/build-static-tilec.sh [BUILD_DIR]      (JOBS=N parallel compilations, default 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-build-static}
cmake -S . -B "$DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEC_STATIC=ON -DTILEC_BUILD_TESTS=OFF >"$DIR.cmake.log" 2>&1 ||
    { cat "$DIR.cmake.log" >&2; exit 1; }
rm -f "$DIR.cmake.log"
ninja -C "$DIR" -j"${JOBS:-2}" tilec
strip "$DIR/tilec"
# Every library it needs must be part of glibc (or the kernel's vDSO).
bad=$(ldd "$DIR/tilec" | awk '{print $1}' |
      grep -vE '^(linux-vdso\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|/lib64/ld-linux|ld-linux)' || true)
if [ -n "$bad" ]; then
    echo "build-static-tilec: $DIR/tilec still needs shared libraries the GPU machine lacks:" $bad >&2
    exit 1
fi
"$DIR/tilec" --version
echo "build-static-tilec: $DIR/tilec ($(du -h "$DIR/tilec" | cut -f1)) needs only:" $(ldd "$DIR/tilec" | awk '{print $1}')
