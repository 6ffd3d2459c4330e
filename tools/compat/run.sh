#!/usr/bin/env bash
# \file Runs the TileLang compatibility manifest (tests/tilelang_compat/manifest.tsv) on a TileLang checkout:
# for each kernel, tilec on the unchanged example file with the manifest's --export call, then nvcc (sm_90a) on the
# CUDA it wrote. Prints one row per kernel (ok / error: the located diagnostic / crash) and a total per tag.
#
#   tools/compat/run.sh TILELANG_CHECKOUT [--tilec PATH] [--tag TAG] [--no-nvcc] [--keep DIR] [--gpu-build DIR]
#
# --gpu-build DIR (the GPU suite's prepare half, tools/gpu/prepare.sh): every kernel tilec compiles also becomes a
# library DIR/compat_KERNEL.cu + .h (one per tag where the tags' code differs: compat_KERNEL_v0_1_13), its
# example file is copied to DIR/compat/TAG/FILE, and DIR/compat/kernels.tsv lists them; gpu/tests/tilelang_compat.py
# runs each there against the example's own reference (tests/tilelang_compat/reference.tsv).
#
# TILELANG_CHECKOUT is a git clone (or bare repository) of github.com/tile-ai/tilelang that has the manifest's tags;
# each tag's examples/ is extracted with `git archive` into a temporary folder, nothing is copied into this project.
# Exit status: 0 when every kernel does at least as well as the manifest's expected column (a kernel expected "ok"
# that is not ok, or any crash, fails), 1 otherwise, 2 for a bad command line, 77 when there is no checkout.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tools/compat/classify.sh"
MANIFEST=$ROOT/tests/tilelang_compat/manifest.tsv
TILEC=$ROOT/build/tilec
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
ONLY_TAG="" NO_NVCC=0 KEEP="" GPU_BUILD=""
CHECKOUT=${1:-}
(($#)) && shift
while (($#)); do
    case $1 in
    --tilec) TILEC=$2; shift 2 ;;
    --tag) ONLY_TAG=$2; shift 2 ;;
    --no-nvcc) NO_NVCC=1; shift ;;
    --keep) KEEP=$2; shift 2 ;;
    --gpu-build) GPU_BUILD=$(mkdir -p "$2" && cd "$2" && pwd); shift 2 ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
if [[ -z $CHECKOUT ]]; then
    echo "SKIP: no TileLang checkout (set TILELANG_SRC for ctest, or run tools/compat/run.sh TILELANG_CHECKOUT); CI has none"
    exit 77
fi
if ! git -C "$CHECKOUT" rev-parse --git-dir >/dev/null 2>&1; then
    echo "run.sh: '$CHECKOUT' is not a git checkout of TileLang" >&2
    exit 2
fi
[[ -x $TILEC ]] || { echo "run.sh: no tilec at '$TILEC' (build first, or --tilec PATH)" >&2; exit 2; }
TILEC=$(cd "$(dirname "$TILEC")" && pwd)/$(basename "$TILEC")   # run_tilec runs it from the example's folder
WORK=${KEEP:-$(mktemp -d)}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
[[ -z $KEEP ]] && trap 'rm -rf "$WORK"' EXIT
if [[ -n $GPU_BUILD ]]; then
    mkdir -p "$GPU_BUILD/compat"
    # remove only the libraries an earlier run staged (its kernels.tsv): tests/gpu/compat_launches.tile's
    # library shares the compat_ prefix and belongs to tools/gpu/prepare.sh
    if [[ -f $GPU_BUILD/compat/kernels.tsv ]]; then
        while IFS=$'\t' read -r lib _; do
            [[ -n $lib && $lib != \#* ]] && rm -f "$GPU_BUILD/$lib.cu" "$GPU_BUILD/$lib.h"
        done <"$GPU_BUILD/compat/kernels.tsv"
    fi
    printf '# library\ttag\tfile (under compat/TAG/)\tkernel (tools/compat/run.sh --gpu-build)\n' \
        >"$GPU_BUILD/compat/kernels.tsv"
fi

# run_tilec TAG FILE NAME CALL OUT.cu: tilec on the example file, in its folder (its imports are relative to it)
run_tilec() {
    local args=(--kernel "$3" -o "$5")
    [[ $4 != - ]] && args+=(--export "$3=$4")
    (cd "$(dirname "$WORK/$1/examples/$2")" && timeout 120 "$TILEC" "$(basename "$2")" "${args[@]}")
}

# same_code A.cu B.cu: the same code but for #line directives (the example's line numbers and the output's path)
same_code() { cmp -s <(grep -v '^#line ' "$1") <(grep -v '^#line ' "$2"); }

# stage_gpu TAG FILE NAME CALL: the kernel tilec compiled becomes a library of the GPU suite (see --gpu-build)
stage_gpu() {
    local tag=$1 file=$2 name=$3 call=$4 out=$WORK/out/$1/$3/compat_$3 lib=compat_$3
    if [[ -e $GPU_BUILD/$lib.cu ]] && ! { same_code "$out.cu" "$GPU_BUILD/$lib.cu" && cmp -s "$out.h" "$GPU_BUILD/$lib.h"; }
    then
        lib=compat_${name}_${tag//./_}     # this tag's code differs: its own library, generated under that name
        run_tilec "$tag" "$file" "$name" "$call" "$GPU_BUILD/$lib.cu" >/dev/null 2>&1 ||
            { echo "run.sh: tilec failed on a second run of $tag $name" >&2; return; }
    else
        cp "$out.cu" "$GPU_BUILD/$lib.cu" && cp "$out.h" "$GPU_BUILD/$lib.h"
    fi
    mkdir -p "$(dirname "$GPU_BUILD/compat/$tag/$file")"
    cp "$WORK/$tag/examples/$file" "$GPU_BUILD/compat/$tag/$file"
    # the modules and packages of its own folder that it imports (varlen_utils, dequantize_utils, the quantize
    # package): its references use them
    local dir mod
    dir=$(dirname "$file")
    for mod in $(sed -nE 's/^(from|import) +([A-Za-z_][A-Za-z0-9_]*).*/\2/p' "$WORK/$tag/examples/$file" | sort -u); do
        [[ -f $WORK/$tag/examples/$dir/$mod.py ]] && cp "$WORK/$tag/examples/$dir/$mod.py" "$GPU_BUILD/compat/$tag/$dir/"
        [[ -f $WORK/$tag/examples/$dir/$mod/__init__.py ]] && cp -r "$WORK/$tag/examples/$dir/$mod" "$GPU_BUILD/compat/$tag/$dir/"
    done
    printf '%s\t%s\t%s\t%s\n' "$lib" "$tag" "$file" "$name" >>"$GPU_BUILD/compat/kernels.tsv"
}

# classify TAG FILE NAME CALL -> prints "RESULT<TAB>DETAIL"
classify() {
    local tag=$1 file=$2 name=$3 call=$4 out=$WORK/out/$1/$3 cu=$WORK/out/$1/$3/compat_$3.cu
    mkdir -p "$out"
    run_tilec "$tag" "$file" "$name" "$call" "$cu" >"$out/tilec.log" 2>&1
    classify_run $? "$out" "$cu"
}

declare -A TOTAL OK
FAIL=0 STALE=0
printf '%-8s %-40s %-28s %-8s %s\n' TAG FILE KERNEL RESULT DETAIL
while IFS=$'\t' read -r tag file name call expected; do
    [[ $tag == \#* || -z $tag ]] && continue
    [[ -n $ONLY_TAG && $tag != "$ONLY_TAG" ]] && continue
    if [[ ! -d $WORK/$tag ]]; then
        mkdir -p "$WORK/$tag"
        if ! git -C "$CHECKOUT" archive "$tag" examples | tar -x -C "$WORK/$tag" 2>/dev/null; then
            echo "run.sh: the checkout has no tag $tag: its entries are skipped" >&2
        fi
    fi
    [[ -d $WORK/$tag/examples ]] || continue
    IFS=$'\t' read -r result detail < <(classify "$tag" "$file" "$name" "$call")
    TOTAL[$tag]=$((${TOTAL[$tag]:-0} + 1))
    [[ $result == ok ]] && OK[$tag]=$((${OK[$tag]:-0} + 1))
    [[ $result == ok && -n $GPU_BUILD ]] && stage_gpu "$tag" "$file" "$name" "$call"
    mark=""
    if [[ $result == crash || ($expected == ok && $result != ok) ]]; then mark=" [REGRESSION: expected $expected]"; FAIL=1; fi
    # a row that does better than the manifest says: its expected column is stale (flip it once the kernel is
    # checked on the CPU simulator and the GPU), said here so that the manifest's count stays honest
    if [[ $expected != ok && $result == ok ]]; then mark=" [BETTER: expected $expected; update the manifest]"; STALE=$((STALE + 1)); fi
    printf '%-8s %-40s %-28s %-8s %s%s\n' "$tag" "$file" "$name" "$result" "$detail" "$mark"
done <"$MANIFEST"
for tag in $(printf '%s\n' "${!TOTAL[@]}" | sort -V); do
    what="tilec and nvcc"; ((NO_NVCC)) && what="tilec"
    echo "$tag: ${OK[$tag]:-0} of ${TOTAL[$tag]} kernels compile unchanged with $what"
done
((STALE)) && echo "$STALE row(s) marked BETTER compile although the manifest expects an error"
exit $FAIL
