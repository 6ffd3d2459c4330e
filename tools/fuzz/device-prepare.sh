#!/usr/bin/env bash
# Builds the crash fuzzer for a campaign on another machine (the GPU machine's CPU cores) and assembles
# everything it needs in one folder of the repository, ignored by git:
#   fuzz-device/tilec_fuzz   libFuzzer + ASan + UBSan, ANTLR/spdlog/fmt/libuuid and libstdc++ linked in
#   fuzz-device/corpus/      the seed corpus: examples, lit inputs, regression inputs, the corpus grown by
#                            earlier campaigns (build-fuzz/corpus where there is one, and every folder in
#                            $TILEC_FUZZ_SEEDS, separated by spaces), merged (libFuzzer -merge=1) to the smallest
#                            files that keep all their coverage: each worker runs its share of them at start-up
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
S=$B/seeds
rm -rf $S
mkdir -p $S
cp examples/*.tile examples/*/*.tile tests/lit/*/*.tile tests/fuzz/*.tile $S/ 2>/dev/null || true
for dir in build-fuzz/corpus ${TILEC_FUZZ_SEEDS:-}; do
  if [ -d "$dir" ]; then find "$dir" -maxdepth 1 -type f -exec cp -t $S/ {} +; fi
done
# The merge runs every seed once, in a child process that libFuzzer restarts past a failing seed: a seed
# that fails is a bug to fix first, never a seed to drop quietly.
ASAN_OPTIONS=detect_leaks=1:malloc_context_size=5 $B/tilec_fuzz -merge=1 -max_len=8192 -timeout=10 \
  -rss_limit_mb=4096 $D/corpus $S >$B/merge.log 2>&1 || { tail -20 $B/merge.log >&2; exit 1; }
if grep -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|internal error|MERGE-OUTER: attempt 2' $B/merge.log >&2; then
  echo "a seed input fails (the whole log: $B/merge.log)" >&2
  exit 1
fi
echo "merged $(ls $S | wc -l) seeds into $(ls $D/corpus | wc -l)"
git rev-parse HEAD >$D/COMMIT
git diff --quiet HEAD -- src include tools/fuzz grammar || echo "(plus uncommitted changes)" >>$D/COMMIT
size=$(du -sm $D | cut -f1)
echo "$D: $(ls $D/corpus | wc -l) seed inputs, ${size} MiB, commit $(head -1 $D/COMMIT)"
if [ "$size" -ge 60 ]; then echo "$D is over 60 MiB: too big to carry" >&2; exit 1; fi
