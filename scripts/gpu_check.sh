#!/usr/bin/env bash
# The GPU checks of issue 7, for a machine with an NVIDIA GPU (the lent H100/H200):
# builds Braid with CUDA in build-gpu/, runs the device tests with 2, 3 and 4 ranks as
# processes on the one GPU, the kernels under compute-sanitizer, the kernel and
# collective benchmarks, and torch.distributed's "nccl" backend over Braid's libnccl.so.2.
# Logs go to $OUT (or build-gpu/logs). Packages the machine lacks (GoogleTest, Google
# Benchmark, hwloc) may be given as Debian .deb files in .gpudeps/ (unpacked, not installed).
# Fill .gpudeps/ (ignored by git) on a Debian 12 machine with:
#   mkdir -p .gpudeps && (cd .gpudeps && apt-get download libgtest-dev libgmock-dev \
#     libbenchmark-dev libbenchmark1debian libhwloc-dev libhwloc15) && cp /usr/local/cuda/include/nccl.h .gpudeps/
# Usage: bash scripts/gpu_check.sh [build test sanitize bench graphs perftools premul schedules choice symbols torch floor diag threads holds bigwindow mps lease_sanitize lease_perf nccltests pack]
#        (default: build test sanitize bench graphs schedules symbols torch pack; `quick`:
#        build test torch bench graphs threads pack, each step bounded, 5-10 minutes on an H200;
#        `lease`: build test lease_sanitize lease_perf nccltests torch pack, at most 8 minutes
#        in all on an H200, build included: docs/gpu.md has its step budget)
# LIMIT_<step>=seconds ends a step that runs longer (device time is short); PERF_MAX sets
# the perf tools' largest size (default 256M); LEASE_WALL (lease: 470) the seconds after
# which a step is cut to what is left, or skipped, so that the summary is written.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${OUT:-$root/build-gpu/logs}
mkdir -p "$out/logs/logs"
if [ "${1:-}" = quick ]; then  # what fits one lease of 15 minutes with time to spare
  export LIMIT_build=${LIMIT_build:-200} LIMIT_test=${LIMIT_test:-240} TEST_WALL=${TEST_WALL:-220}
  export LIMIT_torch=${LIMIT_torch:-60} LIMIT_bench=${LIMIT_bench:-90} PERF_MAX=${PERF_MAX:-128M}
  export LIMIT_graphs=${LIMIT_graphs:-60} LIMIT_threads=${LIMIT_threads:-150}
  set -- build test torch bench graphs threads pack
fi
if [ "${1:-}" = lease ]; then  # one bounded check: <= 8 minutes on an H200, build included
  export LIMIT_build=${LIMIT_build:-150} LIMIT_test=${LIMIT_test:-75} TEST_WALL=${TEST_WALL:-65}
  export TEST_JOBS=${TEST_JOBS:-8} LIMIT_lease_sanitize=${LIMIT_lease_sanitize:-75}
  export LIMIT_lease_perf=${LIMIT_lease_perf:-45} LIMIT_nccltests=${LIMIT_nccltests:-90}
  export LIMIT_torch=${LIMIT_torch:-40} LIMIT_pack=${LIMIT_pack:-15} PERF_MAX=${PERF_MAX:-1M}
  export LEASE_WALL=${LEASE_WALL:-470}
  set -- build test lease_sanitize lease_perf nccltests torch pack
fi
if [ "${1:-}" != --one ]; then
  : > "$out/summary.txt"
  steps=("$@")
  [ ${#steps[@]} -eq 0 ] && steps=(build test sanitize bench graphs schedules symbols torch pack)
  for step in "${steps[@]}"; do
    limit=LIMIT_$step
    seconds=${!limit:-0}
    if [ -n "${LEASE_WALL:-}" ] && [ "$step" != pack ]; then
      left=$((LEASE_WALL - SECONDS - ${LIMIT_pack:-15}))
      if [ "$left" -lt 10 ]; then
        echo "-- step $step: skipped, ${SECONDS} s of ${LEASE_WALL} s used" | tee -a "$out/summary.txt"
        continue
      fi
      [ "$seconds" = 0 ] || [ "$seconds" -gt "$left" ] && seconds=$left
    fi
    start=$SECONDS
    timeout -k 10 "$seconds" bash "$0" --one "$step" 2>&1 | tee -a "$out/summary.txt"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 124 ] && rc="124 (cut at its ${seconds} s)"
    echo "-- step $step: rc $rc, $((SECONDS - start)) s" | tee -a "$out/summary.txt"
    [ "$step" = build ] && [ "${rc%% *}" != 0 ] && { [ -n "${LEASE_WALL:-}" ] && bash "$0" --one pack; exit 1; }
  done
  echo "== summary: $(grep -c '^-- step' "$out/summary.txt") steps in ${SECONDS} s" | tee -a "$out/summary.txt"
  grep '^-- step' "$out/summary.txt"
  exit 0
fi
steps=("${@:2}")
export PATH=/usr/local/cuda/bin:$PATH

prefix=/tmp/gpudeps
if ls .gpudeps/*.deb >/dev/null 2>&1 && [ ! -d $prefix ]; then
  for f in .gpudeps/*.deb; do dpkg -x "$f" $prefix; done
fi
hints="/usr/local/cuda/include"
[ -f .gpudeps/nccl.h ] && mkdir -p /tmp/ncclinc && cp .gpudeps/nccl.h /tmp/ncclinc/ &&
  hints="/tmp/ncclinc;/usr/local/cuda/include;$(dirname "$(find / -name cuda_runtime.h -path '*include*' 2>/dev/null | head -1)")"
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PKG_CONFIG_PATH=$prefix/usr/lib/x86_64-linux-gnu/pkgconfig
export BRAID_TIMEOUT_MS=${BRAID_TIMEOUT_MS:-60000}

run() { echo "== $*"; "$@"; }
perfrun() {  # nranks tool label [more perf tool arguments]; ranks share the one GPU (-Q 1)
  build-gpu/tools/braidrun/braidrun -n $1 build-gpu/perf/coll/$2 -E 1 -Q 1 -b 8 -e ${PERF_MAX:-256M} -f 8 -n 20 -w 3 "${@:4}" \
    > "$out/logs/perf_$2_$1_$3.log" 2>&1; echo "$2 $1 ranks $3: rc $?"
  grep -E "^\[0\] +[0-9]" "$out/logs/perf_$2_$1_$3.log" | sed 's/^\[0\] *//' |
    awk '{printf "  %11s B %10s us %8s GB/s busbw | in-place %10s us %8s GB/s wrong %s/%s\n", $1, $6, $8, $10, $12, $9, $13}'
}
for step in "${steps[@]}"; do
  case $step in
    build)
      nvidia-smi -L; nproc
      run cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_PREFIX_PATH=$prefix/usr "-DBRAID_NCCL_INCLUDE_HINTS=$hints" \
        "-DBRAID_PYTHON=$(command -v python3)" \
        > "$out/logs/configure.log" 2>&1 || { tail -30 "$out/logs/configure.log"; exit 1; }
      grep -E "CUDA|NCCL|hwloc|torch" "$out/logs/configure.log"
      run cmake --build build-gpu -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} > "$out/logs/build.log" 2>&1 ||
        { grep -E "error|Error" "$out/logs/build.log" | head -40; exit 1; }
      echo "build ok";;
    test)
      # Not Emulated.* (the same GPU tests over the emulated GPU, tests/gpu_emu): CI runs
      # them, and device time is short.
      # Each test at most 130 s, all of them at most TEST_WALL seconds, so that the summary
      # below is written; tests still running then are named.
      (cd build-gpu && timeout "${TEST_WALL:-400}" ctest --output-on-failure -R "${TEST_FILTER:-Kernel|Cuda|Staged|Nccl|nccl|ApiErrors|Python.TorchCuda|Python.Unit}" \
        -E '^Emulated|^NcclTests' -j "${TEST_JOBS:-6}" --timeout 130 > "$out/logs/ctest.log" 2>&1); echo "ctest rc $?"
      grep -E "tests passed|^ *[0-9]+/[0-9]+ Test .*(Failed|Timeout|Not Run|Exception)" "$out/logs/ctest.log" | head -40
      grep -c "Skipped" "$out/logs/ctest.log" | sed 's/^/skipped: /'
      grep -E "^ *Start " "$out/logs/ctest.log" | awk '{print $3}' | sort > /tmp/started.txt
      grep -E "Test +#[0-9]+: " "$out/logs/ctest.log" | sed 's/.*Test *#[0-9]*: //' | awk '{print $1}' | sort > /tmp/ended.txt
      comm -23 /tmp/started.txt /tmp/ended.txt | sed 's/^/still running: /';;
    sanitize)
      for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
        # Not the test whose CUDA calls fail on purpose: the tool counts each as an error.
        compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/tests/kernels_test \
          --gtest_filter=-CudaDeviceTest.AFailedCallDoesNotFailTheNextLaunch \
          > "$out/logs/sanitize_kernels_$tool.log" 2>&1; echo "kernels_test $tool rc $?"
        tail -3 "$out/logs/sanitize_kernels_$tool.log"
        compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 \
          build-gpu/tests/integration/cuda_collectives_test --gtest_filter='Ranks/CudaPaths.EveryCollective*_ranks_windows:Ranks/CudaPaths.EveryCollective*4_ranks_window_rounds:Ranks/CudaPaths.EveryCollective*3_ranks_ring_schedules' \
          > "$out/logs/sanitize_coll_$tool.log" 2>&1; echo "cuda_collectives_test $tool rc $?"
        grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/logs/sanitize_coll_$tool.log" | sort | uniq -c | head
      done;;
    bench)
      build-gpu/perf/micro/braid-cuda-micro --benchmark_counters_tabular=true \
        > "$out/logs/cuda_micro.log" 2>&1; grep -E "^BM_" "$out/logs/cuda_micro.log"
      # Device buffers (-E 1) through the device windows; COMPARE=1 adds all-reduce
      # two-shot and staged (BRAID_CUDA_IPC=0).
      for n in 2 4; do
        for tool in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf alltoall_perf; do
          perfrun $n $tool windows
        done
        if [ -n "${COMPARE:-}" ]; then
          BRAID_CUDA_TWO_SHOT_BYTES=0 perfrun $n all_reduce_perf twoshot
          BRAID_CUDA_IPC=0 perfrun $n all_reduce_perf staged
        fi
      done;;
    graphs)  # the timed calls captured into a CUDA graph (-G) against the same calls one by
      # one, and captured in the halves (no graph region: 3 barriers a call, not 2)
      for n in 2 4; do
        PERF_MAX=1M perfrun $n all_reduce_perf calls
        PERF_MAX=1M perfrun $n all_reduce_perf graph -G 10
        BRAID_CUDA_GRAPH_BYTES=0 PERF_MAX=1M perfrun $n all_reduce_perf graph_halves -G 10
      done
      PERF_MAX=1M perfrun 2 sendrecv_perf graph -G 10;;
    perftools)  # nccl-tests' options on device buffers: ranks as threads (-t 2, one GPU),
      # -m/-I/-J, float8, and the two tools nccl-tests has that Braid's lacked
      PERF_MAX=1M perfrun 2 all_reduce_perf threads -t 2
      PERF_MAX=1M perfrun 2 all_reduce_perf agg -m 4 -I 1 -K 2 -J "$out/logs/perf_agg.json"
      PERF_MAX=1M perfrun 2 all_reduce_perf f8e4m3 -d f8e4m3 -o all
      PERF_MAX=1M perfrun 2 alltoallv_perf windows
      PERF_MAX=1M perfrun 4 hypercube_perf windows;;
    premul)  # premul-sum (-o mulsum): the scaling fused into the device windows' copy-in
      for n in 2 4; do
        perfrun $n all_reduce_perf mulsum -o mulsum
        perfrun $n reduce_scatter_perf mulsum -o mulsum
      done;;
    schedules)  # the CUDA executor: BRAID_ALGO's schedules lowered to stream operations
      for n in 2 4; do
        for algo in ring tree halving_doubling; do perfrun $n all_reduce_perf $algo -A $algo; done
        perfrun $n all_gather_perf ring -A ring
        perfrun $n alltoall_perf pairwise -A pairwise
      done
      # Users' algorithms (docs/algorithms.md): the examples' files, loaded and forced,
      # lowered the same way; #wrong must be 0.
      algos=$(mktemp -d)
      for e in allreduce_2d alltoall_node_pairs; do
        python3 examples/algorithms/$e.py -o "$algos/$e.json" > /dev/null
      done
      BRAID_ALGO_FILES=$algos/allreduce_2d.json BRAID_ALGO=allreduce:allreduce_2d PERF_MAX=64M \
        perfrun 4 all_reduce_perf loaded_2d
      BRAID_ALGO_FILES=$algos/alltoall_node_pairs.json PERF_MAX=64M \
        BRAID_ALGO=alltoall:alltoall_node_pairs,pairwise perfrun 4 alltoall_perf loaded_pairs;;
    symbols)
      lib=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib","libtorch_cuda.so"))')
      nm -D --undefined-only "$lib" | grep -i " nccl" | awk '{print $2}' | sort > "$out/logs/torch_nccl_symbols.txt"
      nm -D --defined-only build-gpu/lib/libnccl.so.2 | awk '{print $3}' | sed 's/@.*//' | sort > /tmp/ours.txt
      echo "torch needs, Braid lacks:"; comm -23 "$out/logs/torch_nccl_symbols.txt" /tmp/ours.txt
      python3 -c 'import torch;print(torch.__version__, torch.cuda.nccl.version())';;
    diag)  # host-memory all-reduce latency on this machine, and device calls by wait policy
      nproc; cat /proc/loadavg
      for v in "X=1" "BRAID_SHM_WINDOW_BYTES=0" "BRAID_SPIN_US=0" "BRAID_YIELD_US=0"; do
        echo "host all_reduce 2 ranks, $v"
        env $v build-gpu/tools/braidrun/braidrun -n 2 build-gpu/perf/coll/all_reduce_perf -b 8 -e 64K -f 8 -n 2000 -w 100 -y 1 2>&1 |
          grep -E "^\[0\] +[0-9]" | awk '{print "  ", $2, $7, $11}'
      done
      BRAID_DEBUG=INFO build-gpu/tools/braidrun/braidrun -n 2 build-gpu/perf/coll/all_reduce_perf -b 8 -e 8 -n 10 2>&1 |
        grep -iE "algorithm|predicted|window|spin|oversub" | head -8
      for v in "X=1" "BRAID_SPIN_US=20000" "BRAID_SPIN_US=20000 BRAID_SHM_WINDOW_BYTES=0"; do
        echo "device all_reduce 2 ranks, $v"
        env $v build-gpu/tools/braidrun/braidrun -n 2 build-gpu/perf/coll/all_reduce_perf -E 1 -b 8 -e 2M -f 64 -n 200 -w 10 2>&1 |
          grep -E "^\[0\] +[0-9]" | awk '{print "  ", $2, $7, $11}'
      done;;
    holds)  # which device-wide frees hold the process's other CUDA calls while they wait
      nvcc -O2 -std=c++17 -arch=sm_${BRAID_CUDA_ARCHS:-90} -o build-gpu/probe_free_holds \
        scripts/probe_free_holds.cu && build-gpu/probe_free_holds;;
    threads)  # ranks as threads of one process on one GPU: stalls seen on an H200 (docs)
      # Their streams share hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default),
      # where a stream wait holds back the queue; every wait is now enqueued after its
      # write (the staged calls' too). The tests with 8 queues and with 1 (every stream in
      # one queue: the worst case), stream and kernel waits; at the first stall every
      # thread's stack.
      traced=0
      total=$(build-gpu/tests/integration/cuda_threads_test --gtest_list_tests | grep -c '^  ')
      # The A/B first: a stalled run takes 20 s or more, and the step's limit may end it.
      for cfg in "8 stream" "1 stream" "1 kernel"; do
        set -- $cfg
        for i in 1; do
          log="$out/logs/threads_$1_$2_$i.log"
          CUDA_DEVICE_MAX_CONNECTIONS=$1 BRAID_CUDA_WAITS=$2 build-gpu/tests/integration/cuda_threads_test \
            > "$log" 2>&1 &
          pid=$!
          # A whole run takes 16-25 s on an H200 (the timeout and held-stream tests wait
          # 2 s each); a stalled one waits for BRAID_TIMEOUT_MS (60 s): traced at 45 s.
          for k in $(seq 1 225); do kill -0 $pid 2>/dev/null || break; sleep 0.2; done
          if kill -0 $pid 2>/dev/null && [ $traced = 0 ]; then
            traced=1
            for p in $(pgrep -f cuda_threads_test); do
              echo "== pid $p, $cfg"
              # Each thread's kernel stack first (cuda-gdb timed out on a stalled process):
              # a thread blocked in the driver shows its ioctl.
              for t in /proc/$p/task/*; do
                echo "-- tid ${t##*/} $(cat $t/comm) wchan $(cat $t/wchan)"; head -6 $t/stack
              done
              dbg=$(command -v gdb || command -v cuda-gdb)
              timeout 20 $dbg -batch -p "$p" -ex "thread apply all bt 16" 2>&1 | grep -E "^#|^Thread"
            done > "$out/logs/threads_stacks.log" 2>&1
          fi
          wait $pid
          echo "$1 queues, $2 waits, run $i: rc $?, $(grep -cE '^\[       OK' "$log") of $total passed"
        done
      done
      grep -E "^-- tid|braid::|^Thread" "$out/logs/threads_stacks.log" 2>/dev/null | head -60;;
    choice)  # the device path's choice by the cost model (docs/gpu-topology.md): ranks
      # sharing the one GPU run one-shot on the windows at every size
      for n in 2 4; do
        BRAID_DEBUG=INFO PERF_MAX=${PERF_MAX:-64M} perfrun $n all_reduce_perf choice
        grep -hE "GPU paths, for device calls|on device memory" \
          "$out/logs/perf_all_reduce_perf_${n}_choice.log" | sed 's/^.*INFO\] //' | sort -u
      done;;
    bigwindow)  # rounds cost a context switch each on a shared GPU: fewer, larger rounds
      for n in 2 4; do BRAID_CUDA_WINDOW_BYTES=256M perfrun $n all_reduce_perf window256M; done;;
    mps)  # the same with NVIDIA's MPS daemon (kernels of the ranks' processes share the GPU)
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
      mkdir -p /tmp/mps /tmp/mpslog
      if command -v nvidia-cuda-mps-control >/dev/null && nvidia-cuda-mps-control -d; then
        sleep 1
        for n in 2 4; do timeout 120 env BRAID_CUDA_WINDOW_BYTES=256M bash -c "$(declare -f perfrun); out=$out; perfrun $n all_reduce_perf mps"; done
        echo quit | nvidia-cuda-mps-control
      else
        echo "no MPS daemon here"
      fi;;
    lease_sanitize)  # compute-sanitizer over the device windows, lowered schedules and
      # staged calls at 2 ranks (every collective at one size: TEST_SMALL), memcheck; then
      # racecheck and synccheck over the kernels and the windows alone
      coll=build-gpu/tests/integration/cuda_collectives_test
      for tool in memcheck racecheck synccheck; do
        cases='Ranks/CudaPaths.EveryCollective*/2_ranks_windows'
        [ $tool = memcheck ] && cases="$cases:Ranks/CudaPaths.EveryCollective*/2_ranks_ring_schedules:Ranks/CudaPaths.EveryCollective*/2_ranks_staged"
        timeout 25 compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/tests/kernels_test \
          --gtest_filter='-CudaDeviceTest.AFailedCallDoesNotFailTheNextLaunch' \
          > "$out/logs/sanitize_kernels_$tool.log" 2>&1; echo "kernels_test $tool rc $?"
        TEST_SMALL=1 timeout 40 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 \
          $coll --gtest_filter="$cases" > "$out/logs/sanitize_coll_$tool.log" 2>&1
        echo "cuda_collectives_test $tool ($cases) rc $?"
        grep -hE "ERROR SUMMARY: [1-9]|^\[  (PASSED|FAILED) " "$out/logs/sanitize_"*"_$tool.log" | sort | uniq -c | head -6
      done;;
    lease_perf)  # the perf tools on device buffers at 1, 2 and 4 ranks on the one GPU (-Q 1:
      # ranks share device 0); then the mapping: 2 processes x 2 threads without -Q fail at
      # once naming the device count, with -Q 1 they run
      for n in 1 2 4; do
        for tool in all_reduce_perf all_gather_perf sendrecv_perf; do
          perfrun $n $tool lease -n 10 -w 2
        done
      done
      start=$SECONDS
      timeout 30 build-gpu/tools/braidrun/braidrun -n 2 build-gpu/perf/coll/all_reduce_perf -E 1 -t 2 -b 8 -e 8 \
        > "$out/logs/perf_mapping.log" 2>&1
      echo "2 processes x 2 threads, no -Q: rc $? in $((SECONDS - start)) s: $(grep -om1 'maps to CUDA device.*devices\?' "$out/logs/perf_mapping.log")"
      PERF_MAX=64K perfrun 2 all_reduce_perf threads -t 2;;
    nccltests)  # NVIDIA's nccl-tests on the drop-in: every tool -c 1 at 1 rank, at 2 and 4
      # ranks as processes sharing the GPU (MPI build, where mpirun is), and at 1 rank on
      # NVIDIA's libnccl.so.2 (torch's nvidia/nccl/lib), the same binaries
      export NCCL_TESTS_MPI=1  # where mpicc is
      export NCCL_TESTS_ARGS="-b 8 -e 16M -f 32 -n 20 -w 5" NCCL_TESTS_LIMIT=8
      timeout 40 bash scripts/ci/nccl_tests.sh build-gpu build 2>&1 | tail -14
      cp build-gpu/nccl-tests/build.log "$out/logs/nccl_tests_build.log" 2>/dev/null
      timeout 25 bash scripts/ci/nccl_tests.sh build-gpu run; echo "braid 1 rank: rc $?"
      nv=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
      [ -f "$nv/libnccl.so.2" ] && { timeout 25 bash scripts/ci/nccl_tests.sh build-gpu run "$nv"; echo "nvidia 1 rank: rc $?"; } ||
        echo "no NVIDIA libnccl.so.2 from torch's pip install (nvidia/nccl/lib)"
      for n in 2 4; do NCCL_TESTS_LIMIT=5 timeout 15 bash scripts/ci/nccl_tests.sh build-gpu ranks $n; echo "braid $n ranks: rc $?"; done
      cp build-gpu/nccl-tests/run_*.log "$out/logs/" 2>/dev/null;;
    pack)  # logs.tgz beside summary.txt: two files
      tar czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs";;
    floor)  # NVIDIA's NCCL at 1 rank (torch's), the time floor per size
      PYTHONUNBUFFERED=1 python3 perf/gpu/nccl_floor.py 2>&1 | tee "$out/logs/nccl_floor.log" | grep -v Warning;;
    torch)
      PYTHONUNBUFFERED=1 python3 tests/compat/torch_nccl_dropin.py "$root/build-gpu/lib/libnccl.so.2" \
        2>&1 | tee "$out/logs/torch.log" | tail -40;;
  esac
done
