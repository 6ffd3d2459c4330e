#!/usr/bin/env bash
# Runs HERE: binary mode's C for gpu/binary/check.c into gpu-build/binary/ (carried to the GPU machine with
# gpu-build): kernels.c (sm_80 and sm_90a cubins), gemm.c (the seed GEMM at 256^3 for sm_80 and sm_90a),
# gemm_jit.c (sm_80 only: on Hopper the driver JIT-compiles its PTX), gemm_none.c (images that fit no
# device, edited to claim compute capability 9.1), cluster.c (a clustered persistent GEMM, sm_90a) with
# cluster_plan.h (its planned blocks per SM, from which check.c expects the launcher's fallback grid).
#   gpu/binary/prepare.sh [BUILD_DIR]     then run(command="bash gpu/binary/run.sh", carry=["gpu-build"])
set -euo pipefail
cd "$(dirname "$0")/../.."
TILEC=${TILEC:-${1:-build}/tilec}
OUT=${GPU_BUILD:-gpu-build}/binary
rm -rf "$OUT" && mkdir -p "$OUT"
"$TILEC" gpu/binary/kernels.tile -arch=sm_80,sm_90a -o "$OUT/kernels.c"
g=(examples/gemm.tile --export "g=matmul(256, 256, 256)" --kernel g)
"$TILEC" "${g[@]}" -arch=sm_80,sm_90a -o "$OUT/gemm.c"
"$TILEC" "${g[@]}" -arch=sm_80 --prefix=jit_ -o "$OUT/gemm_jit.c"
"$TILEC" "${g[@]}" -arch=sm_90a --prefix=none_ -o "$OUT/gemm_none.c"
sed -i 's/^    {90, 1, \([01]\), tilec_/    {91, 1, \1, tilec_/' "$OUT/gemm_none.c"
grep -q '{91, 1, 1, tilec_ptx' "$OUT/gemm_none.c"
"$TILEC" gpu/binary/cluster.tile -arch=sm_90a -o "$OUT/cluster.c"
ir=$("$TILEC" gpu/binary/cluster.tile -arch=sm_90a --emit=ir)
grep -qx "  cluster 2 along grid dimension 1" <<<"$ir"
blocks=$(sed -n 's/^  blocks per SM \([0-9]*\)$/\1/p' <<<"$ir")
[ -n "$blocks" ]
echo "#define CLUSTER_BLOCKS_PER_SM $blocks" >"$OUT/cluster_plan.h"
cp gpu/binary/check.c "$OUT/"
echo "prepare: $(ls "$OUT" | tr '\n' ' ')"
