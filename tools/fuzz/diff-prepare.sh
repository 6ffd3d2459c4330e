#!/usr/bin/env bash
# Builds the differential fuzzer for a long campaign on another machine (the GPU machine's 16 CPU cores, which
# have nvcc but no ANTLR, spdlog or fmt) and puts it in a folder of the repository that git ignores:
#   difffuzz-device/tilec_difffuzz   ANTLR, spdlog, fmt, libuuid and libstdc++ linked in (TILEC_STATIC)
#   difffuzz-device/COMMIT           the commit it was built from
# Then, there:  TILEC_DIFFFUZZ=difffuzz-device/tilec_difffuzz tools/fuzz/diff-campaign.sh 1000000 16 500
# Usage: tools/fuzz/diff-prepare.sh [JOBS]  (default 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS=${1:-2}
B=build-difffuzz-device
D=difffuzz-device
cmake -S . -B $B -G Ninja -DTILEC_STATIC=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C $B -j"$JOBS" tilec_difffuzz
# Nothing beyond what every glibc system has may be needed at run time.
extra=$(ldd $B/tests/tilec_difffuzz | awk '{print $1}' | grep -Ev '^(linux-vdso\.so|/lib64/ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libgcc_s\.so|libstdc\+\+\.so)' || true)
if [ -n "$extra" ]; then echo "tilec_difffuzz needs libraries the GPU machine may lack: $extra" >&2; exit 1; fi
rm -rf $D
mkdir -p $D
cp $B/tests/tilec_difffuzz $D/
strip $D/tilec_difffuzz # 7 MiB instead of 109 with the debug info: small enough to carry
git rev-parse HEAD >$D/COMMIT
git diff --quiet HEAD -- src include tools/fuzz || echo "(plus uncommitted changes)" >>$D/COMMIT
echo "$D: tilec_difffuzz of commit $(head -1 $D/COMMIT), $(du -sm $D | cut -f1) MiB"
