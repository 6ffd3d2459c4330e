#!/usr/bin/env bash
# The release: the static, stripped tilec (tools/gpu/build-static-tilec.sh: ANTLR, fmt, spdlog, libstdc++ linked
# in; needs only the C library) with its man page and shell completions, packaged by CPack as a .tar.gz and a
# .deb into the build folder; then checks that both install (unpacked into a temporary root, the .deb with
# dpkg -x) and that the installed tilec runs and compiles an example.
#   tools/release.sh [BUILD_DIR]      (default build-release; JOBS=N parallel compilations, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-build-release}
tools/gpu/build-static-tilec.sh "$DIR"
ninja -C "$DIR" -j"${JOBS:-2}" tilec_docs   # the man page and completions (not the simulator's library)
(cd "$DIR" && cpack -G "TGZ;DEB")
# The packages hold the command, the man page and the completions (the listing read whole: under pipefail, a
# `grep -q` that stops at the first match would fail the pipe with tar's SIGPIPE).
listing=$(tar tzf "$DIR"/tilec-*.tar.gz)
for f in bin/tilec share/man/man1/tilec.1 share/bash-completion/completions/tilec share/zsh/site-functions/_tilec; do
    grep -q "/$f\$" <<<"$listing" || { echo "release: the .tar.gz lacks $f" >&2; exit 1; }
done
ls -l "$DIR"/tilec-*.tar.gz "$DIR"/tilec_*.deb
# The packages install: each unpacked into a temporary root (dpkg -x for the .deb), its tilec runs from there,
# needs no shared library beyond the C library's, and compiles an example into a .cu and a header.
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/deb" "$root/tgz"
dpkg -x "$DIR"/tilec_*.deb "$root/deb"
tar xzf "$DIR"/tilec-*.tar.gz -C "$root/tgz" --strip-components=1
for bin in "$root/deb/usr/bin/tilec" "$root/tgz/bin/tilec"; do
    [ -x "$bin" ] || { echo "release: no $bin in the package" >&2; exit 1; }
    if ldd "$bin" 2>&1 | grep -qiE 'antlr|spdlog|fmt|stdc\+\+'; then
        echo "release: $bin links shared libraries it should contain:" >&2; ldd "$bin" >&2; exit 1
    fi
    "$bin" --version | head -1
    "$bin" examples/elementwise_add.tile -Werror -o "$root/ex.cu" && [ -s "$root/ex.cu" ] && [ -s "$root/ex.h" ] ||
        { echo "release: $bin does not compile examples/elementwise_add.tile" >&2; exit 1; }
done
echo "release: the .deb and the .tar.gz install and run"
