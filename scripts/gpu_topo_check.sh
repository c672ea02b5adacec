#!/usr/bin/env bash
# What Braid's topology discovery finds on a real GPU machine (issue 38), in under a
# minute: the GPUs, NVLinks (NVML, opened at run time) and NICs braid-topo discovers,
# next to nvidia-smi's view; then, when scripts/gpu_check.sh has built build-gpu/ (its
# libbraid.so and braidrun), a live communicator of 2 ranks that bind GPU 0 before init
# logs where its ranks sit and dumps it, and braid-topo shows that dump.
# braid-topo is built alone in build-topo/ (host only, no tests: seconds); hwloc may be
# missing (then the CPU side is a fallback and the GPUs come from NVML), or given as .deb
# files in .gpudeps/ as for gpu_check.sh. Logs go to $OUT (or build-topo/logs).
# Usage: bash scripts/gpu_topo_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${OUT:-$root/build-topo/logs}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
prefix=/tmp/gpudeps
if ls .gpudeps/*.deb >/dev/null 2>&1 && [ ! -d $prefix ]; then
  for f in .gpudeps/*.deb; do dpkg -x "$f" $prefix; done
fi
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PKG_CONFIG_PATH=$prefix/usr/lib/x86_64-linux-gnu/pkgconfig
export BRAID_TIMEOUT_MS=${BRAID_TIMEOUT_MS:-20000}
start=$SECONDS

echo "== nvidia-smi"
nvidia-smi -L
nvidia-smi topo -m 2>&1 | head -20
echo "== NVML library: $(ldconfig -p 2>/dev/null | grep -m1 -o '/[^ ]*libnvidia-ml.so.1' || echo 'not in ldconfig')"

echo "== build braid-topo (build-topo/, host only)"
timeout 45 cmake -S . -B build-topo -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRAID_ENABLE_CUDA=OFF \
  -DBRAID_BUILD_TESTS=OFF -DBRAID_BUILD_PERF=OFF -DCMAKE_PREFIX_PATH=$prefix/usr \
  > "$out/topo_configure.log" 2>&1 || { tail -20 "$out/topo_configure.log"; exit 1; }
grep -E "hwloc" "$out/topo_configure.log"
timeout 45 cmake --build build-topo -j "$(nproc)" --target braid-topo > "$out/topo_build.log" 2>&1 ||
  { grep -E "error" "$out/topo_build.log" | head -20; exit 1; }
echo "built in $((SECONDS - start)) s"

echo "== braid-topo: what discovery finds (BRAID_DEBUG=INFO)"
BRAID_DEBUG=INFO BRAID_TOPO_DUMP_FILE="$out/topo_discovered.xml" build-topo/tools/braid_topo/braid-topo 2>&1 | head -60
echo "(written: $out/topo_discovered.xml)"

if [ -f build-gpu/src/api/libbraid.so ] && [ -x build-gpu/tools/braidrun/braidrun ] && command -v nvcc >/dev/null; then
  echo "== a live communicator: 2 ranks bind GPU 0 before init"
  cat > "$out/bind_check.cu" <<'EOF'
#include <cuda_runtime.h>
#include <stdio.h>
#include "braid/braid.h"
int main() {
  if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) return 2;  // GPU 0 current
  braidComm_t comm;
  if (braidCommInitFromEnv(&comm, NULL) != braidSuccess) {
    fprintf(stderr, "init failed: %s\n", braidGetLastError(NULL));
    return 1;
  }
  return braidCommDestroy(comm) == braidSuccess ? 0 : 1;
}
EOF
  timeout 30 nvcc -o "$out/bind_check" "$out/bind_check.cu" -Iinclude -Lbuild-gpu/src/api -lbraid \
    -Xlinker "-rpath=$root/build-gpu/src/api" > "$out/bind_check_build.log" 2>&1 ||
    { tail -5 "$out/bind_check_build.log"; exit 1; }
  BRAID_DEBUG=INFO BRAID_TOPO_DUMP_FILE="$out/topo_live.xml" timeout 30 \
    build-gpu/tools/braidrun/braidrun -n 2 "$out/bind_check" > "$out/bind_check.log" 2>&1
  echo "rc $?"
  grep -E "topology:|cost model" "$out/bind_check.log" | sed 's/^[^[]*\[braid INFO\] //' | head -30
  if [ -f "$out/topo_live.xml" ]; then
    echo "== braid-topo on the live communicator's dump"
    BRAID_TOPO_FILE="$out/topo_live.xml" build-topo/tools/braid_topo/braid-topo 2>&1 | sed -n '/# ranks/,$p'
  else
    tail -5 "$out/bind_check.log"
  fi
else
  echo "== no build-gpu/ (run scripts/gpu_check.sh build first): live communicator skipped"
fi
echo "== done in $((SECONDS - start)) s"
