#!/usr/bin/env bash
# Builds the front-end fuzzer with clang (libFuzzer, ASan, UBSan) and runs it from the examples.
#   tools/fuzz/run.sh [RUNS]     (default 1000000 executions)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-1000000}
B=build-fuzz
cmake -S . -B $B -G Ninja -DTILEC_FUZZ=ON -DTILEC_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link" >/dev/null
ninja -C $B tilec_fuzz
mkdir -p $B/corpus
cp examples/*.tile tests/lit/*/*.tile $B/corpus/ 2>/dev/null || true
# Short allocation stacks and the plain schedule: 4x the executions per CPU second (docs/PERFORMANCE.md).
ASAN_OPTIONS=detect_leaks=1:malloc_context_size=5 $B/tilec_fuzz -entropic=0 -runs="$RUNS" -max_len=8192 -timeout=10 -rss_limit_mb=4096 \
  -dict=tools/fuzz/tile.dict -print_final_stats=1 $B/corpus
