#!/usr/bin/env bash
# Unpacks PyTorch's C++ headers (only torch/include, about 63 MB) from the PyPI wheel into build/torch-include,
# where the --emit=torch compile checks (tests/lit/torch) find them; without them those tests are unsupported.
# Usage: tools/torch-headers.sh [DEST]   (needs pip and unzip; downloads the wheel once, about 540 MB)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-build/torch-include}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip download --no-deps --only-binary=:all: torch -d "$tmp" >&2
unzip -q -o "$tmp"/torch-*.whl 'torch/include/*' -d "$tmp/x"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/x/torch/include" "$dest"
echo "PyTorch headers in $dest"
