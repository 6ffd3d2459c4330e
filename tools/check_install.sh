#!/usr/bin/env bash
# CI check of the build integration: installs tilec from a build folder into a temporary prefix, then builds
# examples/app against the installed package four ways: CMake (find_package(tilec CONFIG) + tilec_add_library)
# and the plain Makefile, each in MODE cuda (.cu + nvcc) and MODE binary (.c/.o with the cubins embedded).
# Binary mode runs with no nvcc reachable: every folder of PATH that holds one is left out and a stand-in `nvcc`
# that records its calls and fails comes first; the check also requires that CMake never enabled CUDA and that
# the program does not need libcudart. Each application is then run: PASS on a GPU, SKIP (77) without one.
#
#   tools/check_install.sh [BUILD_DIR] [--keep DIR]
#   tools/check_install.sh --run DIR
#       BUILD_DIR  the build folder to install from (default build)
#       --keep DIR copy the four built applications to DIR/<variant>/tilec_app (to run them on the GPU machine)
#       --run DIR  only run the applications in DIR/*/ (there: the machine has no tilec to build them with)
#   TILEC_APP_ARCH=sm_90a  the one target the applications are built for (one keeps nvcc's time down)
#
# Exit 0 when every variant built and no application failed (an application's SKIP is fine: a machine without a
# GPU), 77 when no variant could be built here (no nvcc and no binary mode), else 1.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=build
KEEP=
RUN=
while [ $# -gt 0 ]; do
    case $1 in
    --keep) KEEP=$2; shift 2 ;;
    --run) RUN=$2; shift 2 ;;
    -*) echo "check_install: unknown option $1" >&2; exit 2 ;;
    *) BUILD_DIR=$1; shift ;;
    esac
done
ARCH=${TILEC_APP_ARCH:-sm_90a}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export CUDA_HOME
[ -x "$CUDA_HOME/bin/nvcc" ] && export PATH="$PATH:$CUDA_HOME/bin"
WORK=$(mktemp -d /tmp/tilec-install.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/logs"
failed=0
skipped=0
T0=$SECONDS

say() { printf 'check_install: %s\n' "$*"; }
# step NAME CMD...: runs CMD with its output in logs/NAME.log; on failure prints the log's end
step() {
    local name=$1 t0=$SECONDS
    shift
    if "$@" >"$WORK/logs/$name.log" 2>&1; then
        say "ok      $name ($(( SECONDS - t0 )) s)"
        return 0
    fi
    say "FAILED  $name: $*"
    tail -n 40 "$WORK/logs/$name.log" | sed 's/^/    /'
    failed=1
    return 1
}

# run_apps DIR VARIANT...: runs DIR/VARIANT/tilec_app. Where no driver is installed the toolkit's stub libcuda
# answers, so the program starts and reports SKIP; where libcublas is not on the loader's path, the one of the
# nvidia-cublas Python wheel is tried.
run_apps() {
    local dir=$1 v out rc stub=$WORK/stub extra=
    shift
    if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
        for s in "$CUDA_HOME/lib64/stubs/libcuda.so" "$CUDA_HOME/lib/stubs/libcuda.so"; do
            if [ -e "$s" ]; then mkdir -p "$stub" && ln -sf "$s" "$stub/libcuda.so.1" && extra=$stub; break; fi
        done
    fi
    for v in "$@"; do
        if ldd "$dir/$v/tilec_app" 2>/dev/null | grep -q 'libcublas.*not found'; then
            extra=$extra:$(python3 -c 'import os, nvidia.cublas as c; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null)
        fi
        out=$WORK/logs/run_$v.log
        LD_LIBRARY_PATH="$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 300 "$dir/$v/tilec_app" >"$out" 2>&1
        rc=$?
        case $rc in
        0) say "PASS    run $v ($(grep -c '^PASS ' "$out") kernels)" ;;
        77) say "SKIP    run $v: $(grep -m1 SKIP "$out")"; skipped=$(( skipped + 1 )) ;;
        *) say "FAILED  run $v (exit $rc)"; failed=1 ;;
        esac
        [ $rc = 77 ] || sed 's/^/    /' "$out"
    done
}

# --run DIR: only run the applications that an earlier --keep DIR left (on the GPU machine, which has no tilec)
if [ -n "$RUN" ]; then
    variants=()
    for a in "$RUN"/*/tilec_app; do [ -x "$a" ] && variants+=("$(basename "$(dirname "$a")")"); done
    [ ${#variants[@]} -gt 0 ] || { say "no $RUN/*/tilec_app to run"; exit 2; }
    run_apps "$(cd "$RUN" && pwd)" "${variants[@]}"
    [ $failed = 0 ] && [ "$skipped" = ${#variants[@]} ] && exit 77
    exit $failed
fi

# ---- install
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    say "no configured build in $BUILD_DIR (run tools/setup.sh first)"
    exit 2
fi
PREFIX=$WORK/prefix
step install cmake --install "$BUILD_DIR" --prefix "$PREFIX" || exit 1
for f in bin/tilec include/tilec/types.cuh lib/cmake/tilec/tilecConfig.cmake \
         lib/cmake/tilec/tilecConfigVersion.cmake lib/cmake/tilec/tilec.cmake share/man/man1/tilec.1 \
         share/bash-completion/completions/tilec share/zsh/site-functions/_tilec; do
    [ -e "$PREFIX/$f" ] || { say "FAILED  the install lacks $f"; failed=1; }
done
TILEC=$PREFIX/bin/tilec

# The application's sources copied, so that touching them (the depfile check) leaves the checkout alone.
SRC=$WORK/src
mkdir -p "$SRC/app"
cp examples/app/* "$SRC/app/"
cp examples/rms_norm.tile examples/gemm.tile "$SRC/"

# What this machine and this tilec can build: cuda mode needs nvcc; binary mode needs tilec's NVRTC outputs and
# NVRTC. A part left out is said so (never passed); any other tilec failure fails the builds below.
mkdir -p "$WORK/probe"
unavailable() {   # LOG CMD...: true when CMD fails saying that a feature is missing, not that the input is wrong
    "${@:2}" >"$1" 2>&1 && return 1
    grep -q -E "not implemented yet|(libnvrtc|NVRTC).*(not found|cannot|could not|missing|unavailable)" "$1"
}
BINARY=1
if unavailable "$WORK/logs/probe_binary.log" "$TILEC" "$SRC/app/axpby.tile" -o "$WORK/probe/a.c"; then
    BINARY=0
    say "note    binary mode is left out: $(grep -m1 error "$WORK/logs/probe_binary.log" | cut -c1-120)"
fi
CUDA=1
if ! command -v nvcc >/dev/null; then
    CUDA=0
    say "note    cuda mode is left out: no nvcc on PATH or in $CUDA_HOME/bin"
fi

# ---- an environment without nvcc, for binary mode
NONVCC=$WORK/nonvcc
mkdir -p "$NONVCC"
printf '#!/bin/sh\necho "nvcc $*" >>"%s/called"\nexit 1\n' "$NONVCC" >"$NONVCC/nvcc"
chmod +x "$NONVCC/nvcc"
path_without_nvcc=$NONVCC
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
    [ -n "$d" ] && [ ! -e "$d/nvcc" ] && path_without_nvcc=$path_without_nvcc:$d
done
no_nvcc() { ( unset CUDACXX; PATH=$path_without_nvcc; "$@" ); }
nvcc_unused() {   # DIR: nothing called nvcc, CMake never enabled CUDA, the program needs no CUDA runtime
    local dir=$1
    if [ -e "$NONVCC/called" ]; then echo "nvcc was called:"; cat "$NONVCC/called"; return 1; fi
    if [ -f "$dir/CMakeCache.txt" ] && grep -q '^CMAKE_CUDA_COMPILER:' "$dir/CMakeCache.txt"; then
        echo "CMake enabled CUDA"; return 1
    fi
    if readelf -d "$dir/tilec_app" | grep NEEDED | grep -q cudart; then
        echo "the program needs libcudart:"; readelf -d "$dir/tilec_app" | grep NEEDED; return 1
    fi
    readelf -d "$dir/tilec_app" | grep NEEDED
}

# ---- the four builds
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
cmake_app() {   # MODE DIR
    cmake -S "$SRC/app" -B "$2" "${GEN[@]}" -DCMAKE_PREFIX_PATH="$PREFIX" -DTILEC_APP_MODE="$1" \
          -DTILEC_APP_ARCH="$ARCH" -DCMAKE_BUILD_TYPE=Release &&
        cmake --build "$2" --parallel
}
make_app() {    # MODE DIR
    mkdir -p "$2" && make -C "$2" -f "$SRC/app/Makefile" -j"$(nproc)" MODE="$1" ARCH="$ARCH" TILEC="$TILEC" \
        CUDA_HOME="$CUDA_HOME"
}
built=()
if [ $CUDA = 1 ]; then
    step cmake_cuda cmake_app cuda "$WORK/cmake-cuda" && built+=(cmake-cuda)
    step make_cuda make_app cuda "$WORK/make-cuda" && built+=(make-cuda)
fi
if [ $BINARY = 1 ]; then
    step cmake_binary no_nvcc cmake_app binary "$WORK/cmake-binary" &&
        step cmake_binary_no_nvcc nvcc_unused "$WORK/cmake-binary" && built+=(cmake-binary)
    step make_binary no_nvcc make_app binary "$WORK/make-binary" &&
        step make_binary_no_nvcc nvcc_unused "$WORK/make-binary" && built+=(make-binary)
fi

# ---- depfiles: a touched .tile regenerates its outputs, an untouched build does nothing
regenerates() {   # DIR BUILD-CMD...
    local dir=$1
    shift
    "$@" >/dev/null 2>&1 || return 1
    sleep 1
    touch "$SRC/app/axpby.tile"
    local first again
    first=$("$@" 2>&1)
    echo "$first"
    grep -q "axpby" <<<"$first" || { echo "nothing was regenerated"; return 1; }
    again=$("$@" 2>&1)
    # tilec rewrites an output only when its bytes change: ninja (restat) then runs nothing again; plain make
    # re-runs tilec (its target stays older than the touched .tile) but, the .cu unchanged, compiles nothing.
    if grep -qE -- "-c [^ ]*axpby|-o [^ ]*axpby[^ ]*\.o" <<<"$again"; then echo "a second build compiled again: $again"; return 1; fi
}
if [[ " ${built[*]} " == *" cmake-cuda "* ]]; then
    step cmake_depfile regenerates "$WORK/cmake-cuda" cmake --build "$WORK/cmake-cuda" -- -v
fi
if [[ " ${built[*]} " == *" make-cuda "* ]]; then
    step make_depfile regenerates "$WORK/make-cuda" make_app cuda "$WORK/make-cuda"
fi

# ---- reproducible outputs: two more build trees generate the same bytes (tilec_add_library's --file-prefix-map)
same_bytes() {
    local mode=cuda a=$WORK/repro-a b=$WORK/repro-bb/nested
    [ $BINARY = 1 ] && mode=binary
    for d in "$a" "$b"; do
        cmake -S "$SRC/app" -B "$d" "${GEN[@]}" -DCMAKE_PREFIX_PATH="$PREFIX" -DTILEC_APP_MODE=$mode \
              -DTILEC_APP_ARCH="$ARCH" -DTILEC_APP_GEMM=OFF && cmake --build "$d" --target app_kernels_generate || return 1
    done
    ls "$a/app_kernels.tilec" "$a/app_kernels.tilec/include"
    diff -r -x '*.d' "$a/app_kernels.tilec" "$b/app_kernels.tilec" && echo "identical ($mode mode)"
}
if [ $CUDA = 1 ] || [ $BINARY = 1 ]; then
    step same_bytes_two_trees same_bytes
fi

# ---- run them
for v in "${built[@]}"; do
    if [ -n "$KEEP" ]; then mkdir -p "$KEEP/$v" && cp "$WORK/$v/tilec_app" "$KEEP/$v/"; fi
done
run_apps "$WORK" "${built[@]}"

say "$([ $failed = 0 ] && echo passed || echo FAILED): built ${built[*]:-nothing} in $(( SECONDS - T0 )) s (arch $ARCH)"
[ $failed = 0 ] && [ ${#built[@]} = 0 ] && exit 77   # nothing could be built here: skipped, not passed
exit $failed
