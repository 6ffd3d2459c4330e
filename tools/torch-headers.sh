#!/usr/bin/env bash
# Unpacks PyTorch's C++ headers (only torch/include, about 63 MB) from the PyPI wheel into build/torch-include,
# where the --emit=torch compile checks (tests/lit/torch) find them; with --xla, XLA's FFI headers (192 KB) from
# the jaxlib wheel into build/xla-include, for the --emit=xla-ffi check. Without them those tests are unsupported.
# Usage: tools/torch-headers.sh [--xla] [DEST]   (needs pip and unzip; the torch wheel is about 540 MB, jaxlib 85 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=torch sub=torch/include dest=build/torch-include
if [ "${1:-}" = --xla ]; then
    pkg=jaxlib sub=jaxlib/include dest=build/xla-include
    shift
fi
dest=${1:-$dest}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip download --no-deps --only-binary=:all: "$pkg" -d "$tmp" >&2
unzip -q -o "$tmp"/"$pkg"-*.whl "$sub/*" -d "$tmp/x"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/x/$sub" "$dest"
echo "$pkg headers in $dest"
