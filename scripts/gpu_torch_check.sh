#!/usr/bin/env bash
# The torch backend "braid" on a GPU machine's own PyTorch (2.x with CUDA; one GPU, no
# network): PyTorch's distributed suite with CPU tensors for gloo and braid side by side,
# CUDA tensors through the backend, and DistributedDataParallel on CUDA tensors against
# gloo's; 2 processes on the one GPU. Bounded (the suite <= ~4 minutes, every step has a
# timeout); ends with a summary, one line a step. Logs: $OUT (default build-gpu/torch-logs).
#
#   bash scripts/gpu_torch_check.sh            (PYTHON=python3, BUILD=build-gpu)
#
# The suite's CUDA cases need a GPU per rank: with one GPU the suite itself skips every
# case while CUDA is visible, so its run hides the GPU (CUDA_VISIBLE_DEVICES=) and the
# CUDA tensors go through python/tests/torch_cuda_ranks.py and ddp_vs_gloo_ranks.py.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=${PYTHON:-python3}
build=$(realpath -m "${BUILD:-build-gpu}")
out=${OUT:-$build/torch-logs}
mkdir -p "$out"
summary=()
note() { summary+=("$1"); echo "== $1"; }

"$py" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__,
  'cuda', torch.version.cuda, 'devices', torch.cuda.device_count(),
  torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-')" | tee "$out/env.txt"

# Braid with CUDA, as scripts/gpu_check.sh builds it (only what the Python package needs).
if [ ! -f "$build/python/braid/lib/libbraid.so" ]; then
  BUILD_TARGETS="braid_python braidrun" timeout 900 bash scripts/gpu_check.sh build ||
    { echo "gpu_torch_check: the build failed"; exit 1; }
fi
export BRAID_PYTHONPATH=$build/python PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
braidrun=$build/tools/braidrun/braidrun

# expecttest (PyPI) is imported by torch's test base; without a network, a stand-in
# with the two names the suite uses.
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
if ! "$py" -c "import expecttest" 2>/dev/null; then
  printf 'import unittest\n\nACCEPT = False\n\n\nclass TestCase(unittest.TestCase):\n    pass\n' > "$stub/expecttest.py"
  export PYTHONPATH=$stub${PYTHONPATH:+:$PYTHONPATH}
  echo "expecttest: not installed; using a stand-in TestCase"
fi

# 1. The suite, CPU tensors, gloo | braid | braid under gloo's gates, in parallel.
suite=(--world-size 2 --timeout 30 --start fork)
start=$(date +%s)
for run in gloo braid as_gloo; do
  args=(--backend "$run")
  [ $run = as_gloo ] && args=(--backend braid --as-gloo)
  CUDA_VISIBLE_DEVICES= timeout "${SUITE_LIMIT:-240}" "$py" python/tests/torch_suite.py "${args[@]}" "${suite[@]}" \
    --out "$out/suite_$run.json" > "$out/suite_$run.log" 2>&1 &
done
wait
"$py" python/tests/torch_suite_compare.py "$out/suite_gloo.json" "$out/suite_braid.json" \
  "$out/suite_as_gloo.json" --table "$out/suite_table.txt" > "$out/suite_compare.txt" 2>&1
rc=$?
cat "$out/suite_compare.txt"
note "suite (CPU tensors, $(( $(date +%s) - start )) s): rc $rc; $(tail -n 1 "$out/suite_compare.txt")"

# 2. Ranks under braidrun: CUDA tensors, DDP on CUDA against gloo, the gated features.
rank_test() {  # name nranks script [env...]
  local name=$1 n=$2 script=$3; shift 3
  env "$@" timeout 180 "$braidrun" -n "$n" "$py" "python/tests/$script" > "$out/$name.log" 2>&1
  local rc=$?
  note "$name: rc $rc ($( [ $rc = 0 ] && echo passed || { [ $rc = 77 ] && echo skipped || echo FAILED; })); $(grep -E 'ok$|losses|skipped' "$out/$name.log" | tail -n 1)"
}
note "torch backend: $(BRAID_PYTHONPATH=$build/python "$py" -c 'import sys, os; sys.path.insert(0, os.environ["BRAID_PYTHONPATH"]); import braid.torch as b; print(b.IMPLEMENTATION, b.ProcessGroupBraid.__module__)' 2>&1 | tail -n 1)"
rank_test cuda_tensors 2 torch_cuda_ranks.py
rank_test cuda_tensors_python_group 2 torch_cuda_ranks.py BRAID_TORCH_IMPL=python
rank_test ddp_cuda_vs_gloo 2 ddp_vs_gloo_ranks.py TORCH_DDP_DEVICE=cuda
rank_test ddp_cpu_vs_gloo 2 ddp_vs_gloo_ranks.py
rank_test gated_features 2 torch_gated_ranks.py
rank_test backend_calls 4 torch_backend_ranks.py
timeout 120 "$py" -m unittest discover -s python/tests -p "unit_torch.py" > "$out/unit_torch.log" 2>&1
note "unit_torch: rc $? ($(tail -n 1 "$out/unit_torch.log"))"

echo
echo "gpu_torch_check summary ($(head -n 1 "$out/env.txt")):"
printf '  %s\n' "${summary[@]}"
echo "logs: $out"
