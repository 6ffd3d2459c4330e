#!/bin/bash
# Static machine-code counts of TileLang example kernels as tilec compiles them (no GPU): for each v0.1.13 row of
# tests/tilelang_compat/manifest.tsv whose kernel name matches REGEX, tilec on the example (its -v remarks kept),
# nvcc -arch=sm_90a -cubin -O3 -Xptxas -v, cuobjdump -sass; one line per kernel with the tensor-core and copy
# instructions (HGMMA, HMMA, LDSM, LDGSTS, UTMALDG, STSM, STS: shared stores other than STSM), every variant's
# SASS instructions together, ptxas's registers and spills, then tilec's remarks on the
# kernel's path (warp roles, wgmma over cp.async tiles, or why not).
#   tools/compat/sass_counts.sh TILELANG_EXAMPLES TILEC OUT 'REGEX'
# TILELANG_EXAMPLES: a folder holding TileLang's examples/ at v0.1.13
# (git -C TILELANG_REPO archive v0.1.13 examples | tar -x -C DIR). CUOBJDUMP overrides the cuobjdump found on PATH.
set -u
[[ $# -eq 4 ]] || { sed -n '2,9p' "$0" >&2; exit 2; }
EX=$1 TILEC=$(realpath "$2") OUT=$3 RE=$4
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CUOBJDUMP=${CUOBJDUMP:-cuobjdump}
mkdir -p "$OUT"
grep -P "^v0.1.13\t" "$ROOT/tests/tilelang_compat/manifest.tsv" | while IFS=$'\t' read -r tag file name call exp; do
    [[ $name =~ ^($RE)$ ]] || continue
    args=(--kernel "$name" -o "$OUT/$name.cu" -v)
    [[ $call != - ]] && args+=(--export "$name=$call")
    (cd "$(dirname "$EX/examples/$file")" && timeout 120 "$TILEC" "$(basename "$file")" "${args[@]}") >"$OUT/$name.log" 2>&1
    rc=$?
    nvcc -arch=sm_90a -std=c++17 -cubin -O3 -Xptxas -v -o "$OUT/$name.cubin" "$OUT/$name.cu" >"$OUT/$name.ptxas" 2>&1
    "$CUOBJDUMP" -sass "$OUT/$name.cubin" >"$OUT/$name.sass" 2>/dev/null
    s=$OUT/$name.sass
    echo "$name tilec=$rc HGMMA=$(grep -c HGMMA "$s") HMMA=$(grep -c 'HMMA\.' "$s") LDSM=$(grep -c LDSM "$s")" \
         "LDGSTS=$(grep -c LDGSTS "$s") UTMALDG=$(grep -c UTMALDG "$s") STSM=$(grep -c STSM "$s")" \
         "STS=$(grep -cP '\bSTS(\.[A-Z0-9.]+)?\s' "$s") instructions=$(grep -cP '/\*[0-9a-f]{4,}\*/' "$s")" \
         "registers=$(grep -o 'Used [0-9]* registers' "$OUT/$name.ptxas" | awk '{print $2}' | sort -n | tail -1)" \
         "spilled=$(grep -o '[0-9]* bytes spill stores' "$OUT/$name.ptxas" | awk '{print $1}' | sort -n | tail -1)"
    grep -o "remark: kernel '$name' (sm_90a).*" "$OUT/$name.log" | cut -c9-
done
