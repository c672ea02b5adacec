#!/usr/bin/env bash
# NVIDIA's nccl-tests, unmodified, against Braid's NCCL drop-in (libnccl.so.2).
#
#   scripts/ci/nccl_tests.sh BUILD_DIR build   builds every tool out of tree into
#       BUILD_DIR/nccl-tests (make -k: a tool that does not compile is reported, the others
#       are built), then checks that each tool loads Braid's libnccl.so.2 and that Braid's
#       library defines every NCCL symbol the tool uses. Exit 77 (ctest: skipped) with the
#       reason where there is no nvcc, no nccl.h or no nccl-tests source.
#   scripts/ci/nccl_tests.sh BUILD_DIR run [LIB_DIR]   runs every built tool with -c 1 at
#       1 rank on the library in LIB_DIR (default: Braid's), one line per tool: its rc,
#       #wrong and time per call at 8 B, 8 KiB and 8 MiB. Exit 77 without a GPU (the tools
#       allocate with cudaMalloc).
#   scripts/ci/nccl_tests.sh BUILD_DIR ranks N   the same, N ranks as processes sharing
#       device 0 (NCCL_TESTS_DEVICE=0) under mpirun: needs the MPI build (NCCL_TESTS_MPI=1
#       at build time, into BUILD_DIR/nccl-tests/mpi; nccl-tests without MPI run one process
#       only) and mpirun; exit 77 without.
#
# NCCL_TESTS_SRC: the nccl-tests tree (default: the project's shared third_party copy);
# NCCL_TESTS_GENCODE: nvcc's -gencode (default sm_90, the H100/H200); NCCL_TESTS_ARGS: the
# tools' size options for run/ranks; NCCL_TESTS_LIMIT: seconds per tool run (60).
set -uo pipefail
build=$(cd "${1:?usage: nccl_tests.sh BUILD_DIR build|run|ranks}" && pwd)
what=${2:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$build/nccl-tests
home=$build/nccl-home  # NCCL_HOME: nccl.h and Braid's libnccl.so*
skip() { echo "SKIPPED: $*"; exit 77; }

find_src() {
  for d in "${NCCL_TESTS_SRC:-}" "$root/../shared/third_party/nccl-tests" \
           "$root/../../shared/third_party/nccl-tests" /work/shared/third_party/nccl-tests; do
    [ -n "$d" ] && [ -f "$d/src/common.cu" ] && { (cd "$d" && pwd); return 0; }
  done
  return 1
}

tools() { ls "$1"/*_perf 2>/dev/null; }

# Every NCCL symbol `tool` needs that the library in $1 does not define.
missing_symbols() {
  nm -D --undefined-only "$2" | awk '{print $2}' | sed 's/@.*//' | grep -E '^p?nccl' | sort -u \
    > "$out/needs.txt"
  nm -D --defined-only "$1/libnccl.so.2" | awk '{print $3}' | sed 's/@.*//' | sort -u \
    > "$out/defines.txt"
  comm -23 "$out/needs.txt" "$out/defines.txt"
}

case $what in
  build)
    nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    [ -x "$nvcc" ] || skip "no nvcc (CUDA toolkit) on this machine: nccl-tests are CUDA programs"
    [ -f "$build/lib/libnccl.so.2" ] || skip "Braid's libnccl.so.2 was not built (no nccl.h at configure time)"
    src=$(find_src) || skip "no nccl-tests source (set NCCL_TESTS_SRC to an unmodified nccl-tests tree)"
    header=$(sed -n 's/^BRAID_NCCL_HEADER:INTERNAL=//p' "$build/CMakeCache.txt")
    [ -f "$header" ] || skip "nccl.h the drop-in was built against is missing"
    rm -rf "$home" && mkdir -p "$home/include" "$home/lib" "$out"
    ln -s "$header" "$home/include/nccl.h"
    ln -s "$build"/lib/libnccl.so* "$home/lib/"
    ccache=$(command -v ccache || true)
    start=$SECONDS
    # Out of tree: the source is read-only, every output goes under $out.
    nccl_make() {  # BUILDDIR, then more make variables
      make -k -j "$(getconf _NPROCESSORS_ONLN)" -C "$src/src" build BUILDDIR="$1" NCCL_HOME="$home" \
        NVCC="${ccache:+$ccache }$nvcc" \
        NVCC_GENCODE="${NCCL_TESTS_GENCODE:--gencode=arch=compute_90,code=sm_90}" "${@:2}"
    }
    nccl_make "$out" > "$out/build.log" 2>&1
    echo "nccl-tests built in $((SECONDS - start)) s from $src"
    if [ "${NCCL_TESTS_MPI:-0}" = 1 ] && command -v mpicc >/dev/null; then
      inc=$(mpicc --showme:incdirs 2>/dev/null | awk '{print $1}')
      nccl_make "$out/mpi" MPI=1 MPI_HOME="${MPI_HOME:-$(dirname "${inc:-/usr/include/x}")}" \
        > "$out/build_mpi.log" 2>&1
      echo "MPI build: $(tools "$out/mpi" | wc -l) tools in $out/mpi"
    fi
    rc=0
    for name in all_reduce all_gather broadcast reduce_scatter reduce alltoall alltoallv scatter \
                gather sendrecv hypercube; do
      tool=$out/${name}_perf
      if [ ! -x "$tool" ]; then
        echo "FAIL ${name}_perf: not built:"; grep -E "error" "$out/build.log" | grep "$name" | head -5
        rc=1; continue
      fi
      lib=$(LD_LIBRARY_PATH="$home/lib" ldd "$tool" | awk '$1 == "libnccl.so.2" {print $3}')
      if [ "$(readlink -f "$lib")" != "$(readlink -f "$build/lib/libnccl.so.2")" ]; then
        echo "FAIL ${name}_perf: loads libnccl.so.2 from '${lib:-nowhere}', not Braid's"; rc=1; continue
      fi
      missing=$(missing_symbols "$build/lib" "$tool")
      if [ -n "$missing" ]; then
        echo "FAIL ${name}_perf: Braid's libnccl.so.2 lacks:" $missing; rc=1; continue
      fi
      echo "ok   ${name}_perf: Braid's libnccl.so.2, $(wc -l < "$out/needs.txt") NCCL symbols resolved"
    done
    exit $rc;;
  run|ranks)
    [ -n "$(tools "$out")" ] || skip "nccl-tests were not built (run: nccl_tests.sh BUILD_DIR build)"
    command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
      skip "no GPU: nccl-tests allocate their buffers with cudaMalloc"
    if [ "$what" = ranks ]; then
      n=${3:?ranks needs N}; lib=$build/lib; dir=$out/mpi
      [ -n "$(tools "$dir")" ] ||
        skip "no MPI build of nccl-tests (NCCL_TESTS_MPI=1 and mpicc): without MPI they run one process only"
      command -v mpirun >/dev/null || skip "no mpirun"
      launch=(mpirun --allow-run-as-root --oversubscribe -np "$n" -x NCCL_TESTS_DEVICE=0 -x LD_LIBRARY_PATH)
    else
      n=1; lib=${3:-$build/lib}; launch=(); dir=$out
    fi
    rc=0
    for tool in $(tools "$dir"); do
      name=$(basename "$tool")
      log=$out/run_${name}_${n}_$(basename "$(dirname "$lib")").log
      LD_LIBRARY_PATH=$lib timeout -k 5 "${NCCL_TESTS_LIMIT:-60}" "${launch[@]}" "$tool" \
        ${NCCL_TESTS_ARGS:--b 8 -e 16M -f 4 -n 20 -w 5} -c 1 > "$log" 2>&1
      r=$?
      # size, then the out-of-place and in-place time (us) and #wrong of 8 B, 8 KiB, 8 MiB
      rows=$(awk '$1 ~ /^(8|8192|8388608)$/ {printf " %s:%s/%s(%s,%s)", $1, $6, $10, $9, $13}' "$log")
      echo "$name $n rank(s) on $lib: rc $r; bytes:out/in-place us(wrong,wrong)$rows"
      [ $r -ne 0 ] && { rc=1; tail -3 "$log" | sed 's/^/    /'; }
    done
    exit $rc;;
  *) echo "unknown step $what (build, run, ranks)"; exit 2;;
esac
