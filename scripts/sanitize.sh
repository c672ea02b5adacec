#!/usr/bin/env bash
# The tests under sanitizers (clang, host only), so that CI catches what
# would only show as rare corruption or a rare hang:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer in the
#         test processes), in build-asan/: every unit test binary (the
#         algorithm families' simulator sweeps run one shard in eight: the same
#         code over fewer rank counts and types), and the integration tests of real ranks
#         over shm and socket (failures, limits, replayed ids, groups, streams,
#         braidrun, several nodes, collectives at a few sizes), and the GPU path
#         over the emulated GPU (tests/gpu_emu: its unit test and Emulated.*).
#   tsan  ThreadSanitizer, in build-tsan/, on the threaded parts: the liveness
#         watch and progress queries, the root service, abort from another
#         thread, host streams, groups, split, shrink, the dump thread, socket
#         streams, and the GPU path's threads over the emulated GPU.
# Only test targets are built (no perf, train, python; BRAID_ENABLE_CUDA=OFF).
# Any report fails the run: a sanitizer error stops the process, undefined
# behaviour does not recover, and a rank that stops exits non-zero, which every
# integration test checks.
# Usage: scripts/sanitize.sh [asan] [tsan]   (both when none is named)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
jobs="$(getconf _NPROCESSORS_ONLN)"
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(asan tsan)

# Every unit test binary but the perf tools' (tests/unit/<module>/*_test.cc);
# the algorithm families' simulator sweeps first.
sweeps=(all_families_test halving_doubling_test pairwise_test ring_family_test ring_test tree_test)
mapfile -t unit < <(ls tests/unit/*/*_test.cc | grep -v /perf/ | xargs -n1 basename | sed 's/\.cc$//' |
  grep -vxF -f <(printf '%s\n' "${sweeps[@]}"))
unit=("${sweeps[@]}" "${unit[@]}")
integration=(allreduce_test collectives_test failure_test groups_test limits_test security_test
  multinode_test braidrun_test braidrun cuda_collectives_emu_test cuda_failures_emu_test)
# The GPU path over the emulated GPU (tests/gpu_emu): its host code runs in these builds too.
emulated=(emulated_gpu_test)
# Integration tests that need what these builds leave out (perf tools) or
# other software (mpirun, torchrun, network namespaces, RDMA) run in the
# normal build only; the matrices of rank counts run at 3 and 4 ranks. The
# soak (10,000 calls, resident memory must come back) is a minute under ASan,
# whose allocator keeps freed memory in quarantine: normal build only.
asan_tests='^(Emulated|AllReduceStreams|Transports/KilledRank|Bootstrap|PeerListener|Abort|Timeout|CallCheck|Shrink|Dump|Groups|Barrier|Split|Ranks/DescriptorsExhausted|PortInUse|ShmTooSmall|ReplayedId|MultiNode|Braidrun|Signals/BraidrunSignal)\.|^(Ranks/AllReduceProcesses|Jobs/Collectives)\..*/(shm_3|socket_4)( |$)'
not_here='^Braidrun\.ExitsNonZeroAndOthersNameTheRankKilledMidAllReduce$'  # runs a perf tool
# Under TSan a process takes a second to start: unit binaries run whole.
tsan_unit=(socket_transport_test api_errors_test)
tsan_targets=("${tsan_unit[@]}" allreduce_test failure_test groups_test security_test
  cuda_collectives_emu_test cuda_threads_emu_test cuda_graphs_emu_test)
# The GPU path's threads over the emulated GPU (the staged proxy, the windows' watch, the
# emulation's stream workers) at 3 ranks, 3 ranks as threads of one process, and graph
# replays.
tsan_emulated='^Emulated\.(Ranks/CudaCollectives\.(Staged|DeviceCalls)[^ ]*/3_ranks|CudaOrder\.|CudaPairs\.|Ranks/CudaPaths\.[^ ]*/3_ranks_(staged|windows)|Ranks/CudaThreads\.[^ ]*/3_ranks|Ranks/CudaGraphs\.[^ ]*/3_ranks)'
tsan_tests='^(AllReduceStreams|Transports/KilledRank|Bootstrap|PeerListener|Abort|Timeout|CallCheck|Shrink|Dump|Groups|Barrier|Split|ReplayedId)\.|^Ranks/AllReduceProcesses\.EveryTypeOpAndCountIsExact/(shm|socket)_3( |$)'

# libpciaccess (hwloc's pci plugin) keeps its allocations in globals that
# vanish when hwloc unloads the plugin at exit, so LeakSanitizer reports them
# from an unknown module; hwloc's Linux backend finds the same PCI devices in
# sysfs without it.
export HWLOC_COMPONENTS=-pci

# Runs unit test binaries (names under tests/), $jobs at a time; a failure
# prints that binary's output and stops.
run_unit() {
  printf '%s\n' "$@" | xargs -P "$jobs" -I{} sh -c \
    'out=$(./tests/{} --gtest_brief=1 2>&1) || { printf "%s\n" "$out"; echo "FAILED: {}"; exit 255; }'
}

configure() {  # dir, -fsanitize=...
  mkdir -p "$1"
  # -O1 -gline-tables-only: quicker to build than -O2 -g; stacks still name lines.
  CC=clang CXX=clang++ cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS="$2 -fno-omit-frame-pointer" -DCMAKE_CXX_FLAGS="$2 -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="$2" -DCMAKE_SHARED_LINKER_FLAGS="$2" \
    -DBRAID_BUILD_PERF=OFF -DBRAID_ENABLE_CUDA=OFF -DCMAKE_CUDA_COMPILER=NOTFOUND \
    > "$1/configure.log" 2>&1 || { cat "$1/configure.log"; exit 1; }
}

for kind in "${kinds[@]}"; do
  start=$SECONDS
  case "$kind" in
    asan)
      # No vptr check: it probes memory through a pipe, so in the tests that use
      # up every descriptor it reports valid objects as having an invalid vptr.
      configure build-asan "-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined"
      cmake --build build-asan -j "$jobs" --target "${unit[@]}" "${emulated[@]}" "${integration[@]}"
      echo "== sanitize asan: built in $((SECONDS - start)) s"
      cd build-asan
      export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
      export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
      GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=0 run_unit "${sweeps[@]}"
      run_unit "${unit[@]:${#sweeps[@]}}" "${emulated[@]/#/gpu_emu/}"
      ctest --output-on-failure -L integration -R "$asan_tests" -E "$not_here"
      unset ASAN_OPTIONS UBSAN_OPTIONS
      ;;
    tsan)
      configure build-tsan "-fsanitize=thread"
      cmake --build build-tsan -j "$jobs" --target "${tsan_targets[@]}"
      echo "== sanitize tsan: built in $((SECONDS - start)) s"
      cd build-tsan
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/tsan.supp"
      run_unit "${tsan_unit[@]}"
      ctest --output-on-failure -R "$tsan_tests"
      ctest --output-on-failure -R "$tsan_emulated"
      unset TSAN_OPTIONS
      ;;
    *)
      echo "sanitize.sh: unknown kind '$kind' (asan or tsan)" >&2
      exit 2
      ;;
  esac
  cd "$root"
  echo "== sanitize $kind: clean in $((SECONDS - start)) s"
done
