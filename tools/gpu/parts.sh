#!/usr/bin/env bash
# Several runs of tools/gpu/run.sh in ONE device call ("parts"), each on its own gpu-build tarball and its own list
# of kernels, each under `timeout`, a failed part never stopping the next, everything brought back in <= 8 files.
#
#   PARTS="LABEL,TARBALL,MODE,LISTFILE,OUTER_S,INNER_S ..." bash tools/gpu/parts.sh [--dry-run]
#   bash tools/gpu/parts.sh [--dry-run] PART...                    (the same parts as arguments)
#   bash tools/gpu/parts.sh --pack GPU_BUILD OUT.tar.xz [LISTFILE...]   (here: make a tarball, see below)
#
# A part (space-separated, fields comma-separated, no spaces inside; relative paths from the repository root):
#   LABEL     letters, digits, '_', '-' (not "parts"); names its files in $OUT
#   TARBALL   a tarball of a prepared gpu-build (its top folder holds manifest.tsv), as given or under .carry/;
#             a folder holding manifest.tsv is used in place. Consecutive parts of one tarball unpack it once.
#   MODE      what run.sh runs, over the libraries LISTFILE selects (run.sh --only REGEX, TILEC_GPU_BUILD_ONLY):
#     test    nvcc builds, the harness self-check, the correctness tests and each library's contract checks
#             (TILEC_GPU_TEST_S=INNER_S; --skip binary,app,torch,bench,tilelang,memcheck,racecheck,synccheck)
#     sbs     nvcc builds, then the side by side with TileLang 0.1.15 (tools/gpu/side_by_side.py; TILEC_GPU_SBS=1,
#             TILEC_GPU_SBS_S=INNER_S, at least 60 or run.sh skips it; every other step skipped)
#     bench   nvcc builds and the harness benchmarks (TILEC_GPU_BENCH_S=INNER_S; every other step skipped; with the
#             TileLang bundle, TileLang's own build of a benchmark's example file is timed beside: gpu/tlbeside.py)
#     san     nvcc builds and compute-sanitizer memcheck, racecheck, synccheck over the small tests
#             (TILEC_GPU_SAN_S=INNER_S/3 per tool; every other step skipped)
#     ncu     nvcc builds, then Nsight Compute's anatomy of the side-by-side rows the list selects, tilec's
#             launch and TileLang's (tools/gpu/sbs_anatomy.py; TILEC_GPU_ANAT=1, TILEC_GPU_ANAT_S=INNER_S; keep the
#             list short: each row takes two profiled processes, about 20-60 s)
#   LISTFILE  one entry a line (a Python regular expression searched in the ids: LIB:KERNEL[:LABEL] of tests and
#             benchmarks, LIB:KERNEL of side-by-side rows; '#' comments), as given or under .carry/; ALL = every
#             id. A library's name selects the ids of every library whose name contains it; '^gemm:' only gemm.
#             tools/gpu/parts_select.py has the details; the plan prints what a list selects.
#   OUTER_S   the part's timeout (`timeout -k 10 OUTER_S bash tools/gpu/run.sh ...`); run.sh's own budget is
#             OUTER_S - 5 (TILEC_GPU_BUDGET_S), of which it keeps 25 s for its table.
#   INNER_S   the step's share of that budget (above); run.sh clips it to what the budget leaves after the nvcc
#             builds, so OUTER_S >= INNER_S + 30 + the builds (a warning says so otherwise).
# Every part shares the nvcc cache (TILEC_GPU_CACHE) and TileLang's kernel cache (TILELANG_CACHE_DIR) under
# TILEC_PARTS_DIR (default /tmp/tilec-parts), and one seed (TILEC_PARTS_SEED, default random): an A/B pair of
# parts times the same inputs. Between parts the part's work folder and any other tarball's unpacked copy are
# removed, and both caches too when /tmp has less than 8 GiB free (the GPU machine has 64 GiB). The TileLang bundle
# .tilelang/site.tar.xz (TILEC_PARTS_TL_BUNDLE) is unpacked once, before the first sbs part, and passed to run.sh as
# TILEC_GPU_TL_SITE. The whole call keeps within TILEC_PARTS_DEADLINE_S (default 585): a part's timeout is cut to
# what is left, a part with less than 30 s left is not started. At most 6 parts. Other TILEC_GPU_* variables given
# to parts.sh reach every part's run.sh (TILEC_GPU_GENCODE, TILEC_GPU_SBS_SHARD, ...), but those it sets per part.
#
# Brought back ($OUT, default /tmp/tilec-parts-out): LABEL.txt for each part (what ran, the selection, a brief,
# summary.txt, the side-by-side table, the FAIL lines and the tails of the logs, at most 2 MB), parts.txt (the plan,
# every part's brief and, for two sbs parts of one list on different tarballs, the A/B table of
# tools/gpu/parts_select.py compare) and parts.tar.xz (every part's run.sh files: LABEL/summary.txt, results.json,
# sidebyside.json, the logs' last 4 MB; rewritten after each part): read it here with
#   tar -xJf FILES_AT/parts.tar.xz -C /tmp/parts && python3 tools/gpu/side_by_side.py --merge /tmp/parts/s/sidebyside.json
# stdout: the plan, then each part's brief and the A/B tables. Exit 0 when every part's run.sh exited 0, else 1
# (a part's own status is in the last line: run.sh's, 2 no tarball / list / TileLang, 3 the list selects nothing,
# 4 no time left, 124 its timeout); 2 for a malformed part, before anything runs.
#
# --dry-run: unpacks the tarballs into a scratch folder, selects, and prints every command a part would run
# (exactly as the real run builds them) and the warnings; runs nothing else. tests/gpu_parts_script.sh checks it.
#
# Preparing, here (the device tool carries the working tree plus ignored paths: carry [".carry", ".tilelang"],
# 64 MiB in all with the tree, about 9 MiB, and the TileLang bundle, about 33 MiB; the plan prints the total):
#   TILELANG_SRC=/work/.mirror/tile-ai+tilelang/repo TILEKERNELS_SRC=/work/ext/tile_kernels TILEC_GPU_APP=0 \
#       TILEC=build/tilec GPU_BUILD=/tmp/gb-A tools/gpu/prepare.sh build
#   bash tools/gpu/parts.sh --pack /tmp/gb-A .carry/gb-A.tar.xz [.carry/list.txt ...]
#   [ -f .tilelang/site.tar.xz ] || bash ../shared/tools/tilelang/make-bundle.sh .tilelang
# --pack writes the gpu-build as `gpu-build/` (without lib/ and sweep/); with list files, only the libraries
# they select in any mode (the suites' example folders stay whole), so that two tarballs fit beside the bundle
# more easily (not measured on a whole gpu-build: the dry run prints the carried total). For an
# A/B of a lowering switch, prepare a second gpu-build with a tilec that passes it, e.g.
#   printf '#!/bin/sh\nexec %s --no-mixed-warp-roles "$@"\n' "$PWD/build/tilec" >/tmp/tilec-B && chmod +x /tmp/tilec-B
#   TILEC=/tmp/tilec-B GPU_BUILD=/tmp/gb-B TILELANG_SRC=... TILEKERNELS_SRC=... TILEC_GPU_APP=0 tools/gpu/prepare.sh build
# Then (device tool: carry [".carry", ".tilelang"], timeout_s 600):
#   PARTS="a,gb-A.tar.xz,sbs,.carry/l.txt,200,150 b,gb-B.tar.xz,sbs,.carry/l.txt,200,150" bash tools/gpu/parts.sh
# TILEC_PARTS_RUN_SH replaces tools/gpu/run.sh (the CPU test's stand-in).
set -uo pipefail
cd "$(dirname "$0")/../.."
SELECT=(timeout 120 python3 tools/gpu/parts_select.py)
PACK_MODES=(test bench sbs)
MAX_PARTS=6

die() { echo "parts.sh: $*" >&2; exit 2; }

# ------------------------------------------------------------------ --pack (here)
pack() {    # GPU_BUILD OUT.tar.xz [LISTFILE...]
    local gb=$1 out=$2 keep list mode
    shift 2
    [ -f "$gb/manifest.tsv" ] || die "--pack: $gb has no manifest.tsv (tools/gpu/prepare.sh)"
    keep=$(mktemp)
    for list in "$@"; do
        [ -f "$list" ] || die "--pack: no list file $list"
        for mode in "${PACK_MODES[@]}"; do
            "${SELECT[@]}" select "$mode" "$gb" "$list" | awk -F'\t' '$1 == "lib" { print $2; print $2 ".sm80" }'
        done
    done | sort -u >"$keep"
    if [ $# -gt 0 ] && [ ! -s "$keep" ]; then rm -f "$keep"; die "--pack: the lists select no library of $gb"; fi
    # every file but lib/ and sweep/; with lists, a top-level NAME.cu/.h/.log only when NAME is kept
    (cd "$gb" && find . -path ./lib -prune -o -path ./sweep -prune -o \( -type f -print \)) | sed 's,^\./,,' |
        awk -v keep="$keep" -v lists=$# '
            BEGIN { while ((getline l < keep) > 0) k[l] = 1 }
            !lists || $0 ~ /\// || $0 !~ /\.(cu|h|log)$/ { print; next }
            { n = $0; sub(/\.(cu|h|log)$/, "", n); if (n in k) print }' >"$keep.files"
    mkdir -p "$(dirname "$out")"
    tar -C "$gb" -cf - --transform 's,^,gpu-build/,' -T "$keep.files" | xz -T2 -6 >"$out" || die "--pack: tar failed"
    echo "parts.sh --pack: $out: $(wc -l <"$keep.files") files ($(grep -cE '^[^/]+\.cu$' "$keep.files") libraries)," \
         "$(du -h "$out" | cut -f1)"
    rm -f "$keep" "$keep.files"
}
if [ "${1:-}" = --pack ]; then
    [ $# -ge 3 ] || die "usage: parts.sh --pack GPU_BUILD OUT.tar.xz [LISTFILE...]"
    pack "${@:2}"
    exit 0
fi

# ------------------------------------------------------------------ arguments and the parts
DRY=0
if [ "${1:-}" = --dry-run ] || [ "${1:-}" = -n ]; then DRY=1; shift; fi
case ${1:-} in -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; -*) die "unknown option $1" ;; esac
if [ $# -gt 0 ]; then PLIST=("$@"); else read -r -a PLIST <<<"${PARTS:-}"; fi
[ ${#PLIST[@]} -gt 0 ] || die 'no parts: PARTS="LABEL,TARBALL,MODE,LISTFILE,OUTER_S,INNER_S ..." (--help)'
[ ${#PLIST[@]} -le $MAX_PARTS ] || die "${#PLIST[@]} parts: at most $MAX_PARTS (the device tool brings back 8 files)"
labels=" "
for p in "${PLIST[@]}"; do      # every part's syntax before anything runs
    IFS=, read -r -a f <<<"$p"
    [ ${#f[@]} -eq 6 ] || die "part '$p': want LABEL,TARBALL,MODE,LISTFILE,OUTER_S,INNER_S (6 fields, got ${#f[@]})"
    [[ ${f[0]} =~ ^[A-Za-z0-9_-]+$ && ${f[0]} != parts ]] || die "part '$p': label '${f[0]}' (letters, digits, _ -)"
    [[ $labels != *" ${f[0]} "* ]] || die "part '$p': label '${f[0]}' is used twice"
    labels+="${f[0]} "
    [[ ${f[2]} =~ ^(test|sbs|bench|san|ncu)$ ]] || die "part '$p': mode '${f[2]}' is none of test sbs bench san ncu"
    [[ ${f[4]} =~ ^[1-9][0-9]*$ && ${f[5]} =~ ^[1-9][0-9]*$ ]] || die "part '$p': OUTER_S and INNER_S are seconds"
done

if [ $DRY = 1 ]; then
    PDIR=${TILEC_PARTS_DIR:-$(mktemp -d /tmp/tilec-parts-dry.XXXXXX)}
    [ -n "${TILEC_PARTS_DIR:-}" ] || trap 'rm -rf "$PDIR"' EXIT
else
    PDIR=${TILEC_PARTS_DIR:-/tmp/tilec-parts}
fi
mkdir -p "$PDIR" && PDIR=$(cd "$PDIR" && pwd)
OUTD=${OUT:-/tmp/tilec-parts-out}
if [ $DRY = 0 ]; then mkdir -p "$OUTD" && OUTD=$(cd "$OUTD" && pwd); fi
RUN_SH=${TILEC_PARTS_RUN_SH:-tools/gpu/run.sh}
BUNDLE=${TILEC_PARTS_TL_BUNDLE:-.tilelang/site.tar.xz}
DEADLINE=${TILEC_PARTS_DEADLINE_S:-585}
SEED=${TILEC_PARTS_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom) & 0x3FFFFFFF ))}
ARCHIVE=$PDIR/archive
SUMMARY=$([ $DRY = 1 ] && echo "$PDIR" || echo "$OUTD")/parts.txt
rm -rf "$ARCHIVE"
mkdir -p "$ARCHIVE"
say() { echo "$*" | tee -a "$SUMMARY"; }
: >"$SUMMARY"

resolve() {   # PATH: as given, else under .carry/; prints the path, status 1 when neither exists
    if [ -e "$1" ]; then echo "$1"; elif [ -e ".carry/$1" ]; then echo ".carry/$1"; else echo "$1"; return 1; fi
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
free_kib() { local k; k=$(df -Pk "$PDIR" 2>/dev/null | awk 'NR == 2 { print $4 }'); echo "${k:-99999999}"; }

# unpack TARBALL: sets GB to its gpu-build folder; the tarball unpacked last is reused, any other removed first
CUR_TAR=""
GB=""
unpack() {
    local tarball=$1 m
    if [ -d "$tarball" ]; then      # a gpu-build folder, used in place
        for m in "$tarball"/manifest.tsv "$tarball"/*/manifest.tsv; do
            [ -f "$m" ] && { GB=$(cd "$(dirname "$m")" && pwd); return 0; }
        done
        echo "unpack: $tarball holds no manifest.tsv (tools/gpu/prepare.sh's folder)"
        return 1
    fi
    if [ "$tarball" = "$CUR_TAR" ] && [ -f "$GB/manifest.tsv" ]; then echo "unpack: $tarball (unpacked already)"; return 0; fi
    rm -rf "$PDIR/gb"
    CUR_TAR="" GB=""
    mkdir -p "$PDIR/gb"
    echo "unpack: tar -xf $tarball -C $PDIR/gb"
    timeout 300 tar -xf "$tarball" -C "$PDIR/gb" || { echo "unpack: tar failed ($?)"; return 1; }
    for m in "$PDIR"/gb/manifest.tsv "$PDIR"/gb/*/manifest.tsv "$PDIR"/gb/*/*/manifest.tsv; do
        [ -f "$m" ] && { GB=$(dirname "$m"); CUR_TAR=$tarball; return 0; }
    done
    echo "unpack: $tarball holds no manifest.tsv (tools/gpu/prepare.sh's folder)"
    return 1
}

TL_SITE=""
tl_site() {   # unpacks the TileLang bundle once; sets TL_SITE
    [ -n "$TL_SITE" ] && return 0
    [ -f "$BUNDLE" ] || { echo "tilelang: no bundle $BUNDLE (carry .tilelang: make-bundle.sh)"; return 1; }
    echo "tilelang: tar -xf $BUNDLE -C $PDIR/tl-site (once)"
    [ $DRY = 1 ] && { TL_SITE=$PDIR/tl-site; return 0; }
    if [ ! -d "$PDIR/tl-site/tilelang" ]; then
        rm -rf "$PDIR/tl-site" && mkdir -p "$PDIR/tl-site"
        timeout 300 tar -xf "$BUNDLE" -C "$PDIR/tl-site" || { echo "tilelang: unpacking failed"; rm -rf "$PDIR/tl-site"; return 1; }
    fi
    TL_SITE=$PDIR/tl-site
}

# command LABEL MODE REGEX BUILD_ONLY OUTER INNER: sets CMD, the part's run.sh command line
command_for() {
    local label=$1 mode=$2 regex=$3 only=$4 outer=$5 inner=$6 skip
    local -a envs=(GPU_BUILD="$GB" OUT="$PDIR/$label/out" TILEC_GPU_WORK="$PDIR/$label/work"
                   TILEC_GPU_CACHE="$PDIR/nvcc-cache" TILELANG_CACHE_DIR="$PDIR/tl-cache" TILEC_GPU_SEED="$SEED"
                   TILEC_GPU_BUDGET_S=$(( outer > 10 ? outer - 5 : outer )) TILEC_GPU_BUILD_ONLY="$only")
    case $mode in
    test)  skip=binary,app,torch,bench,tilelang,memcheck,racecheck,synccheck; envs+=(TILEC_GPU_TEST_S="$inner") ;;
    sbs)   skip=selfcheck,test,binary,app,torch,bench,tilelang,memcheck,racecheck,synccheck
           envs+=(TILEC_GPU_SBS=1 TILEC_GPU_SBS_S="$inner" TILEC_GPU_TL_SITE="$TL_SITE") ;;
    bench) skip=selfcheck,test,binary,app,torch,tilelang,memcheck,racecheck,synccheck; envs+=(TILEC_GPU_BENCH_S="$inner")
           [ -n "$TL_SITE" ] && envs+=(TILEC_GPU_TL_SITE="$TL_SITE") ;;
    san)   skip=selfcheck,test,binary,app,torch,bench,tilelang; envs+=(TILEC_GPU_SAN_S=$(( inner / 3 > 10 ? inner / 3 : 10 ))) ;;
    ncu)   skip=selfcheck,test,binary,app,torch,bench,tilelang,memcheck,racecheck,synccheck
           envs+=(TILEC_GPU_ANAT=1 TILEC_GPU_ANAT_S="$inner" TILEC_GPU_TL_SITE="$TL_SITE") ;;
    esac
    CMD=(env "${envs[@]}" timeout -k 10 "$outer" bash "$RUN_SH" --only "$regex" --skip "$skip")
}

# collect LABEL RC: $OUT/LABEL.txt and the part's files into the archive (rewritten)
collect() {
    local label=$1 rc=$2 d=$PDIR/$1 f a=$ARCHIVE/$1
    mkdir -p "$a"
    for f in "$d"/out/* "$d"/run.out "$d"/select.tsv "$d"/part.log; do
        [ -f "$f" ] || continue
        case $f in
        *.log|*.out) tail -c 4000000 "$f" >"$a/$(basename "$f")" ;;
        *) [ "$(stat -c %s "$f")" -le 8000000 ] && cp "$f" "$a/" ;;
        esac
    done
    {
        echo "== part $label: exit $rc"
        cat "$d/part.log" 2>/dev/null
        echo; echo "== brief (tools/gpu/parts_select.py brief)"
        "${SELECT[@]}" brief "$label" "$d/out" 2>&1
        echo; echo "== summary.txt"
        head -c 600000 "$d/out/summary.txt" 2>/dev/null || echo "(none)"
        echo; echo "== run.sh's output (last 150 lines)"
        tail -n 150 "$d/run.out" 2>/dev/null
        for f in "$d"/out/*.log "$d"/work/sidebyside.log; do
            [ -f "$f" ] || continue
            echo; echo "== $(basename "$f"): lines with FAIL, error or Traceback (first 100)"
            grep -nE 'FAIL|[Ee]rror|Traceback|timed out|ended by a timeout' "$f" | head -n 100 | cut -c1-400
            echo "== $(basename "$f"): last 40 lines"
            tail -n 40 "$f" | cut -c1-400
        done
    } 2>&1 | cut -c1-2000 | head -c 2000000 >"$OUTD/$label.txt"
    # the archive under the device tool's 16 MiB a file: the logs go first, then TileLang's sources, then the jsonl
    local drop
    for drop in "" '*.log' '*.tar.xz' '*.jsonl'; do
        [ -n "$drop" ] && find "$ARCHIVE" -name "$drop" -delete
        tar -C "$ARCHIVE" -cJf "$OUTD/parts.tar.xz.tmp" . 2>/dev/null
        [ "$(stat -c %s "$OUTD/parts.tar.xz.tmp" 2>/dev/null || echo 0)" -le 15000000 ] && break
    done
    mv -f "$OUTD/parts.tar.xz.tmp" "$OUTD/parts.tar.xz"
}

# run_part LABEL TARBALL MODE LISTFILE OUTER INNER: one part, start to end; status: run.sh's, or 2 (no tarball, list
# or bundle), 3 (the list selects nothing), 4 (no time left)
run_part() {
    local label=$1 tarball=$2 mode=$3 list=$4 outer=$5 inner=$6 d=$PDIR/$1 regex only left
    rm -rf "$d" && mkdir -p "$d/out"
    note() { echo "$*" >>"$d/part.log"; if [ $DRY = 1 ]; then echo "$*"; else echo "$*" | cut -c1-300; fi; }
    note "== part $label: $mode of $list on $tarball, timeout $outer s, step share $inner s"
    tarball=$(resolve "$tarball") || { note "error: no tarball $tarball (nor .carry/$tarball)"; return 2; }
    list=$([ "$list" = ALL ] && echo ALL || resolve "$list") || { note "error: no list file $list (nor .carry/$list)"; return 2; }
    unpack "$tarball" >"$d/msg" 2>&1
    local urc=$?
    while IFS= read -r l; do note "$l"; done <"$d/msg"
    [ $urc = 0 ] || { note "error: cannot unpack $tarball"; return 2; }
    note "gpu-build: $GB, $(head -1 "$GB/manifest.tsv" | sed 's/^# name.status.detail //')"
    "${SELECT[@]}" select "$mode" "$GB" "$list" >"$d/select.tsv" 2>"$d/msg"
    local src=$?
    while IFS= read -r l; do note "$l"; done <"$d/msg"
    regex=$(sed -n 's/^regex\t//p' "$d/select.tsv")
    local -a libs missing
    mapfile -t libs < <(sed -n 's/^lib\t//p' "$d/select.tsv")
    mapfile -t missing < <(sed -n 's/^missing\t//p' "$d/select.tsv")
    note "selected: $(sed -n 's/^ids\t//p' "$d/select.tsv") ids, ${#libs[@]} libraries: ${libs[*]}"
    [ ${#missing[@]} -eq 0 ] || note "missing (matched, not in this gpu-build): ${missing[*]}"
    [ $src = 0 ] || { note "error: the list selects no library to run (parts_select.py exit $src): part not run"; return $(( src == 3 ? 3 : 2 )); }
    only="^($(printf '%s\n' "${libs[@]}" | sed 's/\./\\./g' | paste -sd'|'))(\\.sm80)?\$"
    if [[ $mode = sbs || $mode = ncu ]] && ! tl_site >"$d/msg" 2>&1; then
        while IFS= read -r l; do note "$l"; done <"$d/msg"; note "error: no TileLang for the side by side"; return 2
    fi
    [[ $mode = sbs || $mode = ncu ]] && while IFS= read -r l; do note "$l"; done <"$d/msg"
    # bench: TileLang's own build beside tilec's where a benchmark has one (gpu/tlbeside.py), when the bundle travelled
    if [[ $mode = bench ]]; then
        if [ -f "$BUNDLE" ] && tl_site >"$d/msg" 2>&1; then while IFS= read -r l; do note "$l"; done <"$d/msg"
        else note "tilelang: no bundle $BUNDLE: the benchmarks time no TileLang build beside tilec's"; fi
    fi
    (( outer >= inner + 30 )) || note "warning: OUTER_S $outer < INNER_S $inner + 30: run.sh clips the step to about $(( outer - 30 )) s less the nvcc builds"
    if [[ $mode = sbs || $mode = ncu ]] && (( (inner < outer - 30 ? inner : outer - 30) < 60 )); then
        note "warning: run.sh skips the side by side and the anatomy when its share is under 60 s (raise INNER_S and OUTER_S)"
    fi
    if [ $DRY = 0 ]; then
        if (( $(free_kib) < 8388608 )); then
            note "disk: $(( $(free_kib) / 1048576 )) GiB free under $PDIR: the nvcc and TileLang caches removed"
            rm -rf "$PDIR/nvcc-cache" "$PDIR/tl-cache"
        fi
        left=$(( DEADLINE - SECONDS - 20 ))
        if (( left < 30 )); then note "error: $left s left of TILEC_PARTS_DEADLINE_S=$DEADLINE: part not run"; return 4; fi
        (( outer <= left )) || { note "timeout cut to $left s (TILEC_PARTS_DEADLINE_S=$DEADLINE)"; outer=$left; }
    fi
    command_for "$label" "$mode" "$regex" "$only" "$outer" "$inner"
    note "run: $(printf '%q ' "${CMD[@]}")"
    note "collect: \$OUT/$label.txt, \$OUT/parts.tar.xz ($label/)"
    [ $DRY = 1 ] && return 0
    local t0=$SECONDS rc
    "${CMD[@]}" >"$d/run.out" 2>&1
    rc=$?
    note "run.sh exit $rc after $(( SECONDS - t0 )) s; $(( $(free_kib) / 1048576 )) GiB free"
    if [ ! -f "$d/out/summary.txt" ] && [ -d "$d/work" ]; then     # cut off before its table: the table from its work
        note "no summary.txt (run.sh cut off): gpu/report.py on its work folder"
        timeout 60 python3 gpu/report.py "$d/work" "$d/out" >>"$d/run.out" 2>&1
    fi
    [ -f "$d/out/sidebyside.json" ] || { [ -f "$d/work/sbs/sbs.jsonl" ] && cp "$d/work/sbs/sbs.jsonl" "$d/out/"; }
    return $rc
}

# ------------------------------------------------------------------ the parts, one after the other
say "parts.sh$([ $DRY = 1 ] && echo ' --dry-run'): ${#PLIST[@]} parts, seed $SEED, $(date -u '+%F %T UTC'), $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no nvidia-smi')"
total=0
for p in "${PLIST[@]}"; do IFS=, read -r -a f <<<"$p"; total=$(( total + f[4] )); done
(( total + 15 * ${#PLIST[@]} <= DEADLINE )) ||
    say "warning: the parts' timeouts add up to $total s (+ unpacking) past TILEC_PARTS_DEADLINE_S=$DEADLINE: the last ones get what is left"
if [ $DRY = 1 ]; then
    carried=$(du -scb .carry .tilelang 2>/dev/null | tail -1 | cut -f1)
    tree=$(git ls-files -z 2>/dev/null | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
    say "carried: .carry + .tilelang $(mib "${carried:-0}") (all of .carry travels), tracked tree $(mib "${tree:-0}")"
    (( ${carried:-0} + ${tree:-0} <= 62 * 1048576 )) || say "warning: over the device tool's 64 MiB: pack less (--pack with lists) or clear .carry"
fi
declare -A RC
overall=0
for p in "${PLIST[@]}"; do
    IFS=, read -r -a f <<<"$p"
    run_part "${f[@]}"
    RC[${f[0]}]=$?
    [ "${RC[${f[0]}]}" = 0 ] || overall=1
    [ $DRY = 1 ] && continue
    collect "${f[0]}" "${RC[${f[0]}]}"
    "${SELECT[@]}" brief "${f[0]}" "$ARCHIVE/${f[0]}" 2>&1 | cut -c1-400 | tee -a "$SUMMARY"
    rm -rf "${PDIR:?}/${f[0]}"
done
# A/B: two sbs parts of one list on different tarballs
for ((i = 0; i < ${#PLIST[@]}; i++)); do
    IFS=, read -r -a a <<<"${PLIST[i]}"
    for ((j = i + 1; j < ${#PLIST[@]}; j++)); do
        IFS=, read -r -a b <<<"${PLIST[j]}"
        [[ ${a[2]} = sbs && ${b[2]} = sbs && ${a[3]} = "${b[3]}" && ${a[1]} != "${b[1]}" ]] || continue
        say "A/B: parts ${a[0]} (${a[1]}) and ${b[0]} (${b[1]}) on ${a[3]}"
        [ $DRY = 1 ] && continue
        "${SELECT[@]}" compare "$ARCHIVE/${a[0]}" "$ARCHIVE/${b[0]}" "${a[0]}" "${b[0]}" 2>&1 | tee -a "$SUMMARY"
    done
done
[ $DRY = 1 ] || rm -rf "${PDIR:?}/gb"
codes=""
for p in "${PLIST[@]}"; do IFS=, read -r -a f <<<"$p"; codes+=" ${f[0]}=${RC[${f[0]}]}"; done
say "parts.sh: done in $SECONDS s; exit statuses:$codes$([ $DRY = 1 ] || echo "; files in \$OUT: $(cd "$OUTD" && ls | tr '\n' ' ')")"
exit $overall
