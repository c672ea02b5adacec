#!/usr/bin/env bash
# The "braid" torch backend under PyTorch 2.x (the virtual environment scripts/setup.sh
# installs), beside gloo, on CPU:
#   1. python/tests/torch2/run_checks.py: fully_shard (FSDP2) at 2 and 4 ranks, DTensor
#      tensor parallel on a 2 x 2 DeviceMesh, pipelining (GPipe, 1F1B), functional
#      collectives in a torch.compile'd function; each on gloo and braid, against one rank;
#   2. PyTorch 2.x's own distributed suite at world size 2 (scripts/ci/torch_suite.sh with
#      the venv's interpreter): braid passes every case gloo passes, no case hangs.
# Prints a summary; exits 1 on any failure. Results: BUILD_DIR/torch2/.
#
#   scripts/ci/torch2.sh [BUILD_DIR]        (default: the checkout's build/)
#
# Environment: BRAID_TORCH2_VENV (/opt/braid/torch2-venv), TORCH2_ONLY (checks, e.g.
# "fsdp2,compile"), TORCH2_SUITE=0 leaves the suite out.
set -euo pipefail
build=$(realpath "${1:-$(dirname "$0")/../../build}")
cd "$(dirname "$0")/../.."
venv=${BRAID_TORCH2_VENV:-/opt/braid/torch2-venv}
py=$venv/bin/python
if ! "$py" -c "import torch.distributed" 2>/dev/null; then
  echo "torch2: $py has no torch.distributed: run scripts/setup.sh (it installs torch 2.x there)"
  exit 1
fi
[ -f "$build/python/braid/lib/libbraid.so" ] || cmake --build "$build" --target braid_python

# The native ProcessGroupBraid for this venv's torch: the build makes it when the venv
# exists at configure time (BRAID_TORCH_PYTHONS); build it now where it did not.
tv=$("$py" -c 'import torch; print("%s_%s" % tuple(torch.__version__.split(".")[:2]))')
if ! ls "$build"/python/braid/_pg_torch"$tv".*.so >/dev/null 2>&1; then
  cmake "$build" -DBRAID_TORCH_PYTHONS="$py" >/dev/null
  cmake --build "$build" --target braid_python
fi

out=$build/torch2
rm -rf "$out" && mkdir -p "$out"
export PYTHONPATH=$build/python BRAID_PYTHONPATH=$build/python PYTHONDONTWRITEBYTECODE=1
# Inductor's compiled kernels for the compile check, kept per build (not in the user's /tmp).
export TORCHINDUCTOR_CACHE_DIR=$out/inductor-cache
"$py" -c "import torch, braid.torch as bt; print('torch2:', torch.__version__,
  'braid.torch from', bt.__file__, 'implementation', bt.IMPLEMENTATION)"
status=0
summary=()

start=$(date +%s)
checks_rc=0
"$py" python/tests/torch2/run_checks.py --out "$out/checks" ${TORCH2_ONLY:+--only "$TORCH2_ONLY"} \
  | tee "$out/checks.txt" || checks_rc=$?
summary+=("parallelism checks: $(tail -n 1 "$out/checks.txt") ($(( $(date +%s) - start )) s)")
[ $checks_rc -eq 0 ] || status=1

if [ "${TORCH2_SUITE:-1}" != 0 ]; then
  start=$(date +%s)
  suite_rc=0
  TORCH_SUITE_PYTHON=$py TORCH_SUITE_OUT=$out/suite bash scripts/ci/torch_suite.sh "$build" \
    | tee "$out/suite.txt" || suite_rc=$?
  summary+=("distributed suite: $(grep -E '^torch_suite: [0-9]+ passed' "$out/suite.txt" ||
    echo "did not finish") ($(( $(date +%s) - start )) s)")
  [ $suite_rc -eq 0 ] || status=1
fi

echo
echo "torch2 summary ($("$py" -c 'import torch; print("torch", torch.__version__)')):"
printf '  %s\n' "${summary[@]}"
[ $status -eq 0 ] && echo "torch2: passed" || echo "torch2: FAILED (logs: $out)"
exit $status
