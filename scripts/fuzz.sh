#!/usr/bin/env bash
# Fuzzes every parser of outside input with libFuzzer under ASan + UBSan
# (clang, build-fuzz/), for a fixed number of runs each, starting from
# fuzz/corpus/<target>/. A crash stops with the input saved under
# build-fuzz/crashes/: add it to fuzz/corpus/<target>/ with the fix, and the
# normal build replays it forever (ctest -R Fuzz). FUZZ_RUNS overrides the runs;
# FUZZ_SEED the seed (1 by default, so CI is repeatable; 0 picks one at random).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${FUZZ_RUNS:-200000}"
# OSS-Fuzz's -O1 -gline-tables-only: quicker to build than -O2 -g, and stacks
# still name lines. Host only: no CUDA.
mkdir -p build-fuzz
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DBRAID_FUZZ=ON -DBRAID_BUILD_TESTS=OFF -DBRAID_BUILD_PERF=OFF \
  -DBRAID_ENABLE_CUDA=OFF -DCMAKE_CUDA_COMPILER=NOTFOUND \
  > build-fuzz/configure.log 2>&1 || { cat build-fuzz/configure.log; exit 1; }
targets=(topo_xml tuning algo_policy algo_file bootstrap_table unique_id socket_frame socket_streams link_hello)
cmake --build build-fuzz -j "$(getconf _NPROCESSORS_ONLN)" --target "${targets[@]/#/fuzz_}"
mkdir -p build-fuzz/crashes
for t in "${targets[@]}"; do
  work="build-fuzz/corpus/$t"
  mkdir -p "$work"
  echo "== fuzz_$t: $runs runs"
  build-fuzz/fuzz/fuzz_"$t" -runs="$runs" -seed="${FUZZ_SEED:-1}" -max_len=4096 -artifact_prefix=build-fuzz/crashes/"$t"- \
    -print_final_stats=1 "$work" "fuzz/corpus/$t" 2>&1 | grep -E "^(stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)|Done" || true
  if ls build-fuzz/crashes/"$t"-* > /dev/null 2>&1; then
    echo "fuzz_$t crashed; inputs in build-fuzz/crashes/"
    exit 1
  fi
done
echo "fuzz: every target ran $runs inputs without a finding"
