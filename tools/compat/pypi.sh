#!/usr/bin/env bash
# \file Runs the PyPI manifest (tests/pypi/manifest.tsv): TileLang kernels shipped inside packages on PyPI other than
# TileKernels (which tools/compat/tilekernels.sh runs). For each kernel factory, tilec on the unchanged package file
# with the manifest's --export call, then nvcc (sm_90a) on the CUDA it wrote. One row per kernel (ok / error: the
# first located diagnostic / crash) and the count per package.
#
#   tools/compat/pypi.sh WHEELS_DIR [--tilec PATH] [--no-nvcc] [--keep DIR] [--only PKG]
#
# WHEELS_DIR holds one folder per package named as the manifest's first column without the version (fla-core/,
# sglang/, vllm/), each the *.py files of that wheel unpacked (a site-packages-like root):
#   pip download --no-deps fla-core==0.6.0 -d /tmp/w && unzip -q /tmp/w/fla_core-0.6.0-py3-none-any.whl '*.py' \
#       -d WHEELS_DIR/fla-core
# A package whose folder is missing is skipped and said so. tilec runs in the kernel file's folder on the file
# itself; its package imports are found by walking up its __init__.py folders. Nothing of a package is copied.
# Exit status: 0 when every kernel run does at least as well as its expected column, 1 otherwise, 2 for a bad
# command line, 77 when no package of the manifest is there.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tools/compat/classify.sh"
MANIFEST=$ROOT/tests/pypi/manifest.tsv
TILEC=$ROOT/build/tilec
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
NO_NVCC=0 KEEP="" ONLY=""
WHEELS=${1:-}
(($#)) && shift
factory_options pypi.sh 1 "$@"
if [[ -z $WHEELS || ! -d $WHEELS ]]; then
    echo "SKIP: no unpacked PyPI packages (set TILEC_PYPI_SRC for ctest, or run tools/compat/pypi.sh WHEELS_DIR); CI has none"
    exit 77
fi
factory_setup pypi.sh
WHEELS=$(cd "$WHEELS" && pwd)

declare -A TOTAL OK MISSING
FAIL=0 STALE=0 RAN=0 ROWS_OK=0
printf '%-22s %-60s %-32s %-8s %s\n' PACKAGE FILE KERNEL RESULT DETAIL
while IFS=$'\t' read -r pkg file name call expected; do
    [[ $pkg == \#* || -z $pkg ]] && continue
    dist=${pkg%%==*}
    [[ -n $ONLY && $dist != "$ONLY" ]] && continue
    if [[ ! -f $WHEELS/$dist/$file ]]; then MISSING[$pkg]=1; continue; fi
    ok0=${ROWS_OK:-0}
    factory_row "$WHEELS/$dist/$file" "$name" "$call" "$expected"
    RAN=1
    TOTAL[$pkg]=$((${TOTAL[$pkg]:-0} + 1))
    OK[$pkg]=$((${OK[$pkg]:-0} + ROWS_OK - ok0))
    printf '%-22s %-60s %-32s %-8s %s%s\n' "$pkg" "$file" "$name" "$RESULT" "$DETAIL" "$MARK"
done <"$MANIFEST"
what="tilec and nvcc"; ((NO_NVCC)) && what="tilec"
for pkg in "${!MISSING[@]}"; do echo "SKIP: $pkg (no ${pkg%%==*}/ under $WHEELS holding its files)"; done
for pkg in "${!TOTAL[@]}"; do echo "$pkg: ${OK[$pkg]:-0} of ${TOTAL[$pkg]} kernel factories compile unchanged with $what"; done
((STALE)) && echo "pypi: $STALE row(s) marked BETTER compile although the manifest expects an error"
((RAN)) || { echo "SKIP: none of the manifest's packages is under $WHEELS"; exit 77; }
exit $FAIL
