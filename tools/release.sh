#!/usr/bin/env bash
# The release: the static, stripped tilec (tools/gpu/build-static-tilec.sh: a Release build with TILEC_STATIC,
# ANTLR, fmt, spdlog, libstdc++ linked in; needs only the C library) with its man page and shell completions,
# packaged by CPack as a .tar.gz and a .deb into the build folder and checked by tools/check_package.sh (contents,
# the .deb's control data and dependencies, the unpacked command runs and compiles an example).
# The test suite's release_package test does the same from the default build (also TILEC_STATIC) without a second
# build; this script is for a release made with the Release build type (-O3) in a folder of its own.
#   tools/release.sh [BUILD_DIR]      (default build-release; JOBS=N parallel compilations, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-build-release}
tools/gpu/build-static-tilec.sh "$DIR"
ninja -C "$DIR" -j"${JOBS:-2}" tilec_docs   # the man page and completions (not the simulator's library)
tools/check_package.sh "$DIR" --out "$DIR"
ls -l "$DIR"/tilec-*.tar.gz "$DIR"/tilec_*.deb
