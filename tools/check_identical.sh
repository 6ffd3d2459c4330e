#!/usr/bin/env bash
# \file Compares what two tilec binaries write, byte for byte, over every input the project has: the GPU suite's
# generated libraries (tools/gpu/prepare.sh: examples/, tests/gpu/, benchmarks/ with gpu/examples.txt's extra
# kernels and sm_80 variants, and TileLang's examples of the compatibility manifest when a checkout is given), the
# lowered IR of every example and benchmark on every target and lowering switch, and every lit test input: once per
# tilec invocation its RUN lines spell out, and once more as IR and CUDA on two targets. A refactoring that should
# not change the generated code is checked with it before every commit:
#
#   tools/check_identical.sh TILEC_A TILEC_B [--tilelang CHECKOUT] [--keep DIR] [--quick]
#
# TILEC_A, TILEC_B: tilec binaries or build folders holding one. --tilelang (default $TILELANG_SRC, else the
# mirror at /work/.mirror/tile-ai+tilelang/repo when it exists; `--tilelang ''` leaves the compatibility manifest
# out). --quick: no prepare.sh (the IR and lit parts only). Both binaries write into the same paths (moved aside
# after each), so paths that the outputs embed do not differ. Prints each differing output with the first lines of
# its diff; exit 0 when everything is identical, 1 when something differs, 2 for a bad command line.
set -uo pipefail
ROOT=${CHECK_ROOT:-$(cd "$(dirname "$0")/.." && pwd)} # CHECK_ROOT: the checkout whose inputs are compiled
usage() { sed -n '2,/^set /p' "$0" | sed '$d; s/^# \?//' >&2; exit 2; }
binary() {
    local p=$1
    [[ -d $p ]] && p=$p/tilec
    [[ -x $p ]] || { echo "check_identical: no tilec at '$1'" >&2; exit 2; }
    echo "$(cd "$(dirname "$p")" && pwd)/$(basename "$p")"
}
(($# >= 2)) || usage
A=$(binary "$1") B=$(binary "$2")
shift 2
TILELANG=${TILELANG_SRC:-}
[[ -z $TILELANG && -d /work/.mirror/tile-ai+tilelang/repo ]] && TILELANG=/work/.mirror/tile-ai+tilelang/repo
KEEP="" QUICK=0
while (($#)); do
    case $1 in
    --tilelang) TILELANG=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) usage ;;
    esac
done
WORK=${KEEP:-$(mktemp -d)}
mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
[[ -z $KEEP ]] && trap 'rm -rf "$WORK"' EXIT
JOBS=${TILEC_JOBS:-$(nproc 2>/dev/null || echo 2)}

# one NAME TILEC ARGS...: runs tilec in $WORK/cur/run (the outputs' folder, %t of the lit lines), keeping its
# standard output, standard error and exit status as NAME.{out,err,rc}, and the files it wrote as NAME.files/.
one() {
    local name=$1 tilec=$2
    shift 2
    local dir=$WORK/cur/$name
    mkdir -p "$dir.files"
    (cd "$dir.files" && nice -n 5 "$tilec" "$@" >"$dir.out" 2>"$dir.err" </dev/null; echo $? >"$dir.rc")
    rmdir "$dir.files" 2>/dev/null
}

# The lit RUN lines' tilec invocations, one a line as shell words: the words after %tilec up to the first pipe,
# redirection or parenthesis, with the lit substitutions made; those that name shell variables (loops) or run
# `tilec tune` (a GPU's) are left out (the second form below covers their inputs).
lit_invocations() {
    python3 - "$1" "$ROOT" <<'PY'
import shlex, sys
f, root = sys.argv[1], sys.argv[2]
text = open(f, errors="replace").read().replace("\\\n", " ")
seen = set()
for line in text.splitlines():
    if "RUN:" not in line:
        continue
    run = line.split("RUN:", 1)[1]
    while "%tilec" in run:
        run = run.split("%tilec", 1)[1]
        sub = (run.replace("%srcroot", root).replace("%examples", root + "/examples").replace("%s", f)
                  .replace("%t", "t"))
        lex = shlex.shlex(sub, posix=True, punctuation_chars="|&;<>()")
        lex.whitespace_split = True
        words = []
        try:
            for w in lex:
                if w and all(c in "|&;<>()" for c in w):
                    if words and words[-1] == "2":
                        words.pop()
                    break
                words.append(w)
        except ValueError:
            continue
        line_out = " ".join(shlex.quote(w) for w in words)
        if not words or words[0] == "tune" or "$" in sub.split("|")[0] or line_out in seen:
            continue
        seen.add(line_out)
        print(line_out)
PY
}

# everything NAME ARGS for one binary
run_all() {
    local tilec=$1 n=0
    rm -rf "$WORK/cur" && mkdir -p "$WORK/cur"
    wait_slot() { while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done; }
    local f a sw
    for f in "$ROOT"/examples/*.tile "$ROOT"/benchmarks/*.tile "$ROOT"/tests/gpu/*.tile; do
        for a in sm_80 sm_86 sm_89 sm_90 sm_90a sm_80,sm_90a; do
            wait_slot; one "ir.$(basename "$f" .tile).$a" "$tilec" "$f" --emit=ir -arch=$a &
        done
        for sw in --no-tma --no-warp-specialize --no-persistent --walk-group=0 --no-cluster --pingpong \
                  --intra-overlap --epilogue-buffers=1 --epilogue-buffers=0 --num-sms=100; do
            wait_slot; one "ir.$(basename "$f" .tile).$sw" "$tilec" "$f" --emit=ir "$sw" &
        done
        wait_slot; one "rm.$(basename "$f" .tile)" "$tilec" "$f" --dump-after=all &
    done
    while IFS= read -r f; do
        local rel=${f#"$ROOT"/tests/lit/} i=0
        rel=${rel//\//_}
        for a in sm_90a sm_80; do
            wait_slot; one "lit.$rel.$a" "$tilec" "$f" --emit=ir,cuda,header -arch=$a &
        done
        while IFS= read -r line; do
            i=$((i + 1))
            wait_slot; eval "one \"lit.$rel.run$i\" \"$tilec\" $line" &
        done < <(lit_invocations "$f")
    done < <(find "$ROOT/tests/lit" \( -name '*.tile' -o -name '*.py' -o -name '*.test' \) ! -name lit.cfg.py | sort)
    wait
}

# What differs from run to run whatever the binary, in the captured standard output and error: -v's time stamps,
# ptxas's and --time-passes' times.
normalize() {
    find "$1" -name '*.out' -o -name '*.err' | xargs -r sed -i -E \
        -e 's/^\[[0-9]{4}-[0-9-]+ [0-9:.]+\] //' -e 's/Compile time = [0-9.]+ ms/Compile time = N ms/' \
        -e 's/^ *[0-9]+\.[0-9]{3} ms  /  N ms  /'
}

# compare A_DIR B_DIR: every file that differs, with the first lines of its diff
compare() {
    local a=$1 b=$2 differ=0 p
    while IFS= read -r p; do
        [[ -z $p ]] && continue
        differ=1
        echo "DIFFERS: $p"
        diff -u "$a/$p" "$b/$p" 2>&1 | sed -n '3,14p' | sed 's/^/    /'
    done < <(diff -rq "$a" "$b" 2>&1 | sed -n "s|^Files $a/\(.*\) and .* differ$|\1|p; s|^Only in \(.*\)|only in \1|p")
    return $differ
}

status=0
if ((!QUICK)); then
    for side in a b; do
        tilec=$A; [[ $side == b ]] && tilec=$B
        rm -rf "$WORK/gpu" "$WORK/gpu-$side"
        TILEC=$tilec GPU_BUILD=$WORK/gpu TILEC_GPU_APP=0 TILEC_GPU_JOBS=$JOBS TILELANG_SRC=$TILELANG \
            bash "$ROOT/tools/gpu/prepare.sh" >"$WORK/prepare.$side.log" 2>&1
        sed -i '1d' "$WORK/gpu/manifest.tsv" # names the binary
        rm -f "$WORK/gpu/compat/prepare.log" # names the binary and a temporary folder
        # tools/compat/run.sh compiles in a fresh temporary folder, which the #line directives name
        grep -rlE '/tmp/tmp\.[A-Za-z0-9]+/' "$WORK/gpu" | xargs -r sed -i -E 's|/tmp/tmp\.[A-Za-z0-9]+/|/TMP/|g'
        mv "$WORK/gpu" "$WORK/gpu-$side"
    done
    echo "prepare.sh: $(find "$WORK/gpu-a" -type f | wc -l) files (A), $(find "$WORK/gpu-b" -type f | wc -l) (B)"
    compare "$WORK/gpu-a" "$WORK/gpu-b" || status=1
fi
rm -rf "$WORK/a" "$WORK/b"
run_all "$A" && mv "$WORK/cur" "$WORK/a" && normalize "$WORK/a"
run_all "$B" && mv "$WORK/cur" "$WORK/b" && normalize "$WORK/b"
echo "ir/dumps/lit: $(find "$WORK/a" -name '*.rc' | wc -l) tilec runs (A: $(cat "$WORK"/a/*.rc | grep -cvx 0) nonzero exits)"
compare "$WORK/a" "$WORK/b" || status=1
((status)) && echo "check_identical: outputs differ" || echo "check_identical: all outputs identical"
exit $status
