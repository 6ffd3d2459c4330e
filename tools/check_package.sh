#!/usr/bin/env bash
# The release packages of a build folder: CPack makes the .tar.gz and the .deb from the build as it is (no second
# build: the default build, TILEC_STATIC=ON, is the release's static tilec; CPack strips it), then each package is
# checked as a user would meet it:
#   - it holds the command, the device-runtime headers, the CMake package, the man page and both completions;
#   - the .deb's control data (dpkg-deb -I) names the package, version and architecture, and its Depends covers
#     every shared library the command needs: each NEEDED library's Debian package (dpkg -S) is a dependency,
#     and for libc6 the version is at least the newest GLIBC_ symbol version the command uses;
#   - its tilec is stripped, runs from the unpacked folder (--version with the revision) and compiles an example
#     with -Werror into CUDA C++ and a header;
#   - find_package(tilec CONFIG) in the unpacked tree points at the unpacked command (the package is relocatable).
# With TILEC_STATIC=ON the command must need nothing but the C library's own parts.
#
#   tools/check_package.sh [BUILD_DIR] [--out DIR]
#       BUILD_DIR  the configured and built folder to package (default build)
#       --out DIR  leave the packages in DIR (tools/release.sh); without it they go to a temporary folder
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=build
OUT=
while [ $# -gt 0 ]; do
    case $1 in
    --out) OUT=$2; shift 2 ;;
    -*) echo "check_package: unknown option $1" >&2; exit 2 ;;
    *) BUILD_DIR=$1; shift ;;
    esac
done
BUILD_DIR=$(cd "$BUILD_DIR" && pwd) || exit 2
[ -f "$BUILD_DIR/CPackConfig.cmake" ] || { echo "check_package: no configured build in $BUILD_DIR" >&2; exit 2; }
WORK=$(mktemp -d /tmp/tilec-package.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
failed=0
say() { printf 'check_package: %s\n' "$*"; }
fail() { say "FAILED  $*"; failed=1; }
static=$(sed -n 's/^TILEC_STATIC:BOOL=//p' "$BUILD_DIR/CMakeCache.txt")

# ---- the packages: CPack of the build folder, written outside it
t0=$SECONDS
rm -f "$OUT"/tilec-*.tar.gz "$OUT"/tilec_*.deb
if ! (cd "$WORK" && cpack --config "$BUILD_DIR/CPackConfig.cmake" -G "TGZ;DEB" -B "$OUT") >"$WORK/cpack.log" 2>&1; then
    sed 's/^/    /' "$WORK/cpack.log"
    fail "cpack"
    exit 1
fi
tgz=$(ls "$OUT"/tilec-*.tar.gz 2>/dev/null)
deb=$(ls "$OUT"/tilec_*.deb 2>/dev/null)
[ -f "$tgz" ] && [ -f "$deb" ] || { fail "cpack wrote no .tar.gz or no .deb:"; ls -l "$OUT"; exit 1; }
say "ok      cpack ($(( SECONDS - t0 )) s, TILEC_STATIC=$static): $(du -h "$tgz" | cut -f1) $(basename "$tgz"), $(du -h "$deb" | cut -f1) $(basename "$deb")"

# ---- unpacked: the .tar.gz into tgz/ (its top folder dropped), the .deb into deb/ (its prefix is /usr)
mkdir -p "$WORK/tgz" "$WORK/deb"
tar xzf "$tgz" -C "$WORK/tgz" --strip-components=1 || fail "tar cannot unpack $tgz"
dpkg-deb -x "$deb" "$WORK/deb" || fail "dpkg-deb cannot unpack $deb"
FILES="bin/tilec include/tilec/types.cuh lib/cmake/tilec/tilecConfig.cmake lib/cmake/tilec/tilecConfigVersion.cmake
       lib/cmake/tilec/tilec.cmake share/man/man1/tilec.1 share/bash-completion/completions/tilec
       share/zsh/site-functions/_tilec"
for f in $FILES; do
    [ -e "$WORK/tgz/$f" ] || fail ".tar.gz lacks $f"
    [ -e "$WORK/deb/usr/$f" ] || fail ".deb lacks usr/$f"
done

# ---- the .deb's control data
info=$(dpkg-deb -I "$deb") || fail "dpkg-deb -I $deb"
field() { sed -n "s/^ $1: //p" <<<"$info"; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD_DIR/CMakeCache.txt")
[ "$(field Package)" = tilec ] || fail ".deb Package is '$(field Package)', not tilec"
[ "$(field Version)" = "$version" ] || fail ".deb Version is '$(field Version)', not $version"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail ".deb Architecture is '$(field Architecture)'"
[ -n "$(field Description)" ] && [ -n "$(field Maintainer)" ] || fail ".deb has no Description or Maintainer"
depends=$(field Depends)
say "ok      .deb: $(field Package) $(field Version) $(field Architecture), Depends: $depends"

# Every shared library the command needs comes from a package the .deb depends on (found as this machine
# resolves it: ldd, then dpkg -S); libc6 at least as new as the newest GLIBC_ symbol version it uses.
bin=$WORK/deb/usr/bin/tilec
deps_of() { tr ',|' '\n\n' <<<"$depends" | sed 's/^ *//; s/ *(.*//; s/:.*//'; }
while read -r lib path; do
    [ -n "$path" ] || continue
    real=$(readlink -f "$path")
    pkg=$( (dpkg -S "$path" 2>/dev/null || dpkg -S "$real" 2>/dev/null) | head -1 | cut -d: -f1)
    if [ -z "$pkg" ]; then fail "$lib ($path) belongs to no Debian package"; continue; fi
    # the package, or a virtual package it provides (libspdlog1.10 provides libspdlog1.10-fmt9, which its shlibs names)
    names=$(printf '%s\n' "$pkg"; dpkg-query -W -f='${Provides}' "$pkg" 2>/dev/null | tr ',' '\n' | sed 's/^ *//; s/ *(.*//')
    grep -qxFf <(deps_of) <<<"$names" || fail "the command needs $lib from $pkg, which the .deb does not depend on"
    if [ "$static" = ON ] && [ "$pkg" != libc6 ]; then fail "TILEC_STATIC=ON, yet the command needs $lib ($pkg)"; fi
done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
glibc=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
libc_dep=$(tr ',' '\n' <<<"$depends" | sed -n 's/^ *libc6 *(>= *\([0-9.]*\)[^)]*).*/\1/p' | head -1)
if [ -z "$libc_dep" ]; then
    fail "the .deb does not say which libc6 it needs (Depends: $depends)"
elif [ "$(printf '%s\n%s\n' "$glibc" "$libc_dep" | sort -V | tail -1)" != "$libc_dep" ]; then
    fail "the command uses GLIBC_$glibc symbols, the .deb asks for libc6 (>= $libc_dep)"
else
    say "ok      dependencies: every NEEDED library's package is a dependency; GLIBC_$glibc <= libc6 (>= $libc_dep)"
fi

# ---- the command of each package: stripped, runs from where it was unpacked, compiles an example
for bin in "$WORK/tgz/bin/tilec" "$WORK/deb/usr/bin/tilec"; do
    name=${bin#"$WORK/"}
    [ -x "$bin" ] || { fail "$name is not executable"; continue; }
    if readelf -S "$bin" | grep -qE '\.(debug_info|symtab)'; then fail "$name is not stripped"; fi
    if ! v=$("$bin" --version 2>&1); then fail "$name --version: $v"; continue; fi
    grep -q "^tilec $version" <<<"$v" || fail "$name --version says: $v"
    grep -q "^tilec $version" <<<"$v" && say "ok      $name --version: $(head -1 <<<"$v")"
    mkdir -p "$WORK/ex"
    if "$bin" examples/elementwise_add.tile -Werror -o "$WORK/ex/add.cu" 2>"$WORK/ex/err" && [ ! -s "$WORK/ex/err" ] &&
       grep -q '__global__' "$WORK/ex/add.cu" && grep -q 'add_8192' "$WORK/ex/add.h"; then
        say "ok      $name compiles examples/elementwise_add.tile"
    else
        fail "$name does not compile examples/elementwise_add.tile cleanly:"; cat "$WORK/ex/err"
    fi
    rm -rf "$WORK/ex"
done
[ "$static" = ON ] && say "ok      the command needs only: $(ldd "$WORK/tgz/bin/tilec" | awk '{print $1}' | tr '\n' ' ')"

# ---- the CMake package in the unpacked tree finds the unpacked command and headers (relocatable)
mkdir -p "$WORK/find"
cat >"$WORK/find/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.22)
project(find_tilec LANGUAGES NONE)
find_package(tilec CONFIG REQUIRED)
message(STATUS "TILEC_EXECUTABLE=${TILEC_EXECUTABLE}")
message(STATUS "TILEC_INCLUDE_DIR=${TILEC_INCLUDE_DIR}")
EOF
for prefix in "$WORK/tgz" "$WORK/deb/usr"; do
    if log=$(cmake -S "$WORK/find" -B "$WORK/find/build-$(basename "$prefix")" -DCMAKE_PREFIX_PATH="$prefix" 2>&1) &&
       grep -qx -- "-- TILEC_EXECUTABLE=$prefix/bin/tilec" <<<"$log" &&
       grep -qx -- "-- TILEC_INCLUDE_DIR=$prefix/include" <<<"$log"; then
        say "ok      find_package(tilec) in ${prefix#"$WORK/"}"
    else
        fail "find_package(tilec) in ${prefix#"$WORK/"} does not give the unpacked command and headers:"
        sed 's/^/    /' <<<"$log"
    fi
done

say "$([ $failed = 0 ] && echo passed || echo FAILED) in $(( SECONDS - t0 )) s: $(basename "$tgz"), $(basename "$deb")"
exit $failed
