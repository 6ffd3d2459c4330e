#!/usr/bin/env bash
# Builds the crash fuzzer for a campaign on another machine (the GPU machine's CPU cores) and assembles
# everything it needs in one folder of the repository, ignored by git:
#   fuzz-device/tilec_fuzz   libFuzzer + ASan + UBSan, ANTLR/spdlog/fmt/libuuid and libstdc++ linked in
#   fuzz-device/corpus/      the seed corpus: examples, lit inputs, regression inputs, and the corpus grown by
#                            earlier campaigns (build-fuzz/corpus) where there is one
#   fuzz-device/tile.dict    the dictionary
#   fuzz-device/COMMIT       the commit the binary was built from
# Then run tools/fuzz/device-campaign.sh there.   Usage: tools/fuzz/device-prepare.sh [JOBS]  (default 2)
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS=${1:-2}
B=build-fuzz-device
D=fuzz-device
cmake -S . -B $B -G Ninja -DTILEC_FUZZ=ON -DTILEC_STATIC=ON -DTILEC_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link" >/dev/null
ninja -C $B -j"$JOBS" tilec_fuzz
# Nothing beyond what every glibc system has may be needed at run time.
extra=$(ldd $B/tilec_fuzz | awk '{print $1}' | grep -Ev '^(linux-vdso\.so|/lib64/ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libgcc_s\.so|libstdc\+\+\.so)' || true)
if [ -n "$extra" ]; then echo "tilec_fuzz needs libraries the GPU machine may lack: $extra" >&2; exit 1; fi
rm -rf $D
mkdir -p $D/corpus
cp $B/tilec_fuzz tools/fuzz/tile.dict $D/
cp examples/*.tile examples/*/*.tile tests/lit/*/*.tile tests/fuzz/*.tile $D/corpus/ 2>/dev/null || true
if [ -d build-fuzz/corpus ]; then cp build-fuzz/corpus/* $D/corpus/; fi
git rev-parse HEAD >$D/COMMIT
git diff --quiet HEAD -- src include tools/fuzz grammar || echo "(plus uncommitted changes)" >>$D/COMMIT
size=$(du -sm $D | cut -f1)
echo "$D: $(ls $D/corpus | wc -l) seed inputs, ${size} MiB, commit $(head -1 $D/COMMIT)"
if [ "$size" -ge 60 ]; then echo "$D is over 60 MiB: too big to carry" >&2; exit 1; fi
