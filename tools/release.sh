#!/usr/bin/env bash
# The release: the static, stripped tilec (tools/gpu/build-static-tilec.sh: ANTLR, fmt, spdlog, libstdc++ linked
# in; needs only the C library) with its man page and shell completions, packaged by CPack as a .tar.gz and a
# .deb into the build folder.
#   tools/release.sh [BUILD_DIR]      (default build-release; JOBS=N parallel compilations, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-build-release}
tools/gpu/build-static-tilec.sh "$DIR"
ninja -C "$DIR" -j"${JOBS:-2}"          # the man page and completions (tilec_docs)
(cd "$DIR" && cpack -G "TGZ;DEB")
# The packages hold the command, the man page and the completions.
for f in bin/tilec share/man/man1/tilec.1 share/bash-completion/completions/tilec share/zsh/site-functions/_tilec; do
    tar tzf "$DIR"/tilec-*.tar.gz | grep -q "/$f\$" || { echo "release: the .tar.gz lacks $f" >&2; exit 1; }
done
ls -l "$DIR"/tilec-*.tar.gz "$DIR"/tilec_*.deb
