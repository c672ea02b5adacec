#!/usr/bin/env bash
# PyTorch's own distributed suite (DistributedTest._DistTestBase) on the "braid" backend
# and on gloo side by side, at world size 2: braid must pass every case gloo passes,
# fail the ones gloo fails the same way, and hang in none (each case is bounded).
#
#   scripts/ci/torch_suite.sh [BUILD_DIR]        (default: the checkout's build/)
#
# The interpreter (and so the torch) is TORCH_SUITE_PYTHON's, Debian's /usr/bin/python3
# (torch 1.13) unless set: scripts/ci/torch2.sh runs it so under PyTorch 2.x.
# Three runs, in parallel: gloo; braid; braid with the suite imported as for gloo (its
# cases gated to gloo by name, run on braid). The ranks start by fork (spawn, as
# test_distributed_spawn.py does, takes ~6 s a case here: TORCH_SUITE_START=spawn runs
# it so, by hand). Results: BUILD_DIR/torch_suite/{gloo,braid,braid_as_gloo}.json and
# table.txt (every case, the three outcomes); TORCH_SUITE_OUT names another folder.
# Skips (exit 0) where torch is missing. Environment: TORCH_SUITE_WORLD_SIZE (2),
# TORCH_SUITE_TIMEOUT (seconds a case, 90), TORCH_SUITE_START (fork), TORCH_SUITE_CASES
# (a file of case names, one a line: only those).
set -euo pipefail
build=$(realpath "${1:-$(dirname "$0")/../../build}")
cd "$(dirname "$0")/../.."
py=${TORCH_SUITE_PYTHON:-/usr/bin/python3}
if ! "$py" -c "import torch.distributed" 2>/dev/null; then
  echo "torch_suite: skipped: $py has no torch.distributed"
  exit 0
fi
# The suite's test base imports expecttest (PyPI only; Debian 12's pip wants the flag).
"$py" -c "import expecttest" 2>/dev/null ||
  "$py" -m pip install -q --break-system-packages expecttest
[ -f "$build/python/braid/lib/libbraid.so" ] || cmake --build "$build" --target braid_python

out=${TORCH_SUITE_OUT:-$build/torch_suite}
rm -rf "$out" && mkdir -p "$out"
export BRAID_PYTHONPATH=$build/python PYTHONDONTWRITEBYTECODE=1
common=(--world-size "${TORCH_SUITE_WORLD_SIZE:-2}" --timeout "${TORCH_SUITE_TIMEOUT:-90}"
        --start "${TORCH_SUITE_START:-fork}")
[ -n "${TORCH_SUITE_CASES:-}" ] && common+=(--cases "$(realpath "$TORCH_SUITE_CASES")")
driver=python/tests/torch_suite.py
start=$(date +%s)
pids=()
"$py" $driver --backend gloo "${common[@]}" --out "$out/gloo.json" >"$out/gloo.log" 2>&1 &
pids+=($!)
"$py" $driver --backend braid "${common[@]}" --out "$out/braid.json" >"$out/braid.log" 2>&1 &
pids+=($!)
"$py" $driver --backend braid --as-gloo "${common[@]}" --out "$out/braid_as_gloo.json" \
  >"$out/braid_as_gloo.log" 2>&1 &
pids+=($!)
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
echo "torch_suite: three runs took $(( $(date +%s) - start )) s"
if [ $status -ne 0 ]; then
  echo "torch_suite: a run did not finish; its log:"
  tail -n 40 "$out"/*.log
  exit 1
fi
"$py" python/tests/torch_suite_compare.py "$out/gloo.json" "$out/braid.json" \
  "$out/braid_as_gloo.json" --table "$out/table.txt"
