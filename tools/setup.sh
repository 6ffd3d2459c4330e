#!/usr/bin/env bash
# First command of the README: installs what is missing (Debian 12, as root), builds tilec, and compiles an
# example to show that it works. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

packages=(antlr4 libantlr4-runtime-dev libcli11-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev
          cmake ninja-build llvm-14-tools clang-14 libclang-rt-14-dev uuid-dev python3 g++ dpkg-dev zsh)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
# cuobjdump, for the tests that read the SASS of the Hopper path (tests/cuda/check_*_sass.sh), and nvdisasm,
# which its -sass runs: this toolkit has neither and Debian's cannot read CUDA 13 cubins; NVIDIA's wheels run
# without a GPU and install side by side. Without them (no PyPI) those tests check ptxas's report only and say
# "SKIP" for the SASS.
sass_tools() { local c; c=$(tests/cuda/find_cuobjdump.sh nvcc); [ -n "$c" ] && { [ -x "$(dirname "$c")/nvdisasm" ] ||
    command -v nvdisasm >/dev/null; }; }
if command -v nvcc >/dev/null && ! sass_tools; then
    echo "setup: installing cuobjdump and nvdisasm (pip: nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)"
    python3 -m pip install -q --disable-pip-version-check "nvidia-cuda-cuobjdump>=13,<14" \
        "nvidia-cuda-nvdisasm>=13,<14" 2>&1 | grep -v "WARNING: Running pip as" || true
    sass_tools || echo "setup: no cuobjdump or nvdisasm; the SASS tests will be skipped or fail" >&2
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$BUILD_DIR"
echo "setup: built $BUILD_DIR/tilec; the typed kernels of examples/gemm.tile:"
"$BUILD_DIR/tilec" examples/gemm.tile --emit=ast --kernel gemm
mkdir -p "$BUILD_DIR/examples"
"$BUILD_DIR/tilec" examples/elementwise_add.tile -arch=sm_90a -o "$BUILD_DIR/examples/elementwise_add.cu"
echo "setup: wrote $BUILD_DIR/examples/elementwise_add.cu and .h (CUDA C++ and the C header)"
