#!/usr/bin/env bash
# Braid's main job: set up, build, then 4 local ranks run all_reduce_perf over a
# size sweep (8 B to 64 MiB), over shared memory and then over TCP sockets.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
echo "== 4 ranks, shm =="
build/tools/braidrun/braidrun -n 4 build/perf/coll/all_reduce_perf -b 8 -e 64M -f 4
echo "== 4 ranks, socket =="
BRAID_TRANSPORTS=socket build/tools/braidrun/braidrun -n 4 \
  build/perf/coll/all_reduce_perf -b 8 -e 64M -f 4
