#!/usr/bin/env bash
# Braid started the ways users start jobs, each launcher the real one: Slurm (srun, sbatch,
# scancel of a running step, two nodes), torchrun (a training script, the perf tools, ranks
# killed by its agent), OpenMPI's mpirun and MPICH's mpiexec (hydra). Run as root after
# scripts/build.sh; it installs what it lacks (scripts/setup.sh), starts a private Slurm
# (slurm_cluster.sh) and stops it, with every process it started, also when a check fails.
# Every wait is bounded. One line per check, then "N passed, N failed"; exits 1 on a failure.
# Arguments name the checks to run (default: all); LAUNCHERS_KEEP=1 keeps the logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec < /dev/null  # srun, salloc and mpirun forward stdin; CI may have none
bash scripts/setup.sh > /dev/null
[ -d build ] || bash scripts/build.sh
cmake --build build --target all_reduce_perf braid-train braid_python > /dev/null
source scripts/ci/slurm_cluster.sh

PERF=$PWD/build/perf/coll/all_reduce_perf
TRAIN=$PWD/build/train/braid-train
PERF_ARGS=(-b 8 -e 1M -f 32 -n 5 -c 1)
TRAIN_SCRIPT=$PWD/python/tests/torchrun_train.py
# Debian's interpreter is the one with python3-torch (a pyenv python3 may come first on PATH).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
export PYTHONPATH=$PWD/build/python PYTHONDONTWRITEBYTECODE=1
# Debian 12's torch 1.13 cannot parse torchrun's default --redirects 0 under Python 3.11
# (Std.NONE is not among an IntFlag's members there); 2 and 2 keep stderr on the console.
TORCHRUN=("$PY" -m torch.distributed.run --redirects 2 --tee 2)
# Whatever launched this script must not leak its rank variables into the checks.
for v in $(compgen -e | grep -E '^(BRAID_|SLURM_|PMI_|PMIX_|OMPI_|RANK$|WORLD_SIZE$|MASTER_)'); do
  unset "$v"
done

work=$(mktemp -d /tmp/braid-launchers-XXXXXX)
chmod 755 "$work"  # munged checks every directory above its socket
cleanup() {
  slurm_down "$work/slurm" || true
  if [ "${LAUNCHERS_KEEP:-0}" = 1 ]; then echo "logs kept in $work"; else rm -rf "$work"; fi
}
check_pid=  # the running check's process group
on_signal() {
  local i
  if [ -n "$check_pid" ]; then
    kill -TERM -- "-$check_pid" 2> /dev/null
    for ((i = 0; i < 50; i++)); do  # its EXIT trap takes up to 2 s
      any_alive "$check_pid" || break
      sleep 0.1
    done
    kill -KILL -- "-$check_pid" 2> /dev/null
  fi
  exit 130
}
trap cleanup EXIT
trap on_signal INT TERM

# ---- helpers -------------------------------------------------------------------------------

# timeout in this process group (--foreground), where a signal to the check reaches it too.
limit() { timeout --foreground -k 5 "$@"; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# A free port whose successor is free too (Braid's root takes MASTER_PORT + 1 under torchrun).
free_pair() {
  "$PY" - << 'EOF'
import socket
for _ in range(50):
    a = socket.socket(); a.bind(("", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("", p + 1)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()
EOF
}

secret() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

# expect FILE REGEX WHAT: fails the check, saying what was missing, unless FILE matches.
expect() {
  grep -q -E -- "$2" "$1" && return 0
  echo "expected $3 (/$2/) in $1:"
  tail -n 40 "$1"
  return 1
}

# A perf table from N ranks whose results were all checked right.
expect_table() {
  expect "$1" "# Out of bounds values : 0 OK" "no wrong value"
  expect "$1" "^#  Rank +$(($2 - 1)) Group" "rank $(($2 - 1))"
  ! grep -q -E "^#  Rank +$2 Group" "$1" || { echo "more than $2 ranks in $1"; return 1; }
}

# wait_for FILE REGEX SECONDS: until FILE matches, or fails the check after SECONDS.
wait_for() {
  local deadline=$((SECONDS + $3))
  while ((SECONDS < deadline)); do
    grep -q -E -- "$2" "$1" && return 0
    sleep 0.1
  done
  expect "$1" "$2" "within $3 s"
}

# "4 ranks, 0 wrong, avg busbw 0.43 GB/s" from a perf table.
table_summary() {
  local ranks bw
  ranks=$(grep -c -E "^#  Rank +[0-9]+ Group" "$1")
  bw=$(sed -n 's/^# Avg bus bandwidth *: *\([0-9.]*\).*/\1/p' "$1")
  echo "$ranks ranks, 0 wrong values, avg busbw $bw GB/s"
}

# The one line a passing check prints after its name.
said() { echo "$*" > "$work/$CHECK.said"; }

any_alive() {
  local pid
  for pid in "$@"; do kill -0 -- "-$pid" 2> /dev/null && return 0; done
  return 1
}

# SIGTERM to the process groups "$@", SIGKILL to what is left of them 2 s later.
stop_groups() {
  local pid i
  [ $# = 0 ] && return 0
  for pid in "$@"; do kill -TERM -- "-$pid" 2> /dev/null || true; done
  for ((i = 0; i < 20; i++)); do
    any_alive "$@" || return 0
    sleep 0.1
  done
  for pid in "$@"; do kill -KILL -- "-$pid" 2> /dev/null || true; done
}

passed=0
failed=0
check() {
  CHECK=$1
  local t0 rc
  t0=$(now)
  # The check runs in its own process group (set -m), so that a signal to this script
  # stops it at once (on_signal), and its EXIT trap stops what it started in the background.
  touch "$work/$CHECK.start"
  set +e -m
  (
    set -eE +m
    trap 'echo "failed (rc $?): $BASH_COMMAND"' ERR
    background=()  # session leaders a check starts with setsid
    trap 'stop_groups "${background[@]}"' EXIT
    trap 'exit 130' INT TERM
    "$2"
  ) > "$work/$CHECK.log" 2>&1 &
  check_pid=$!
  set +m
  wait "$check_pid"
  rc=$?
  check_pid=
  set -e
  if [ $rc = 0 ]; then
    passed=$((passed + 1))
    printf 'PASS %-22s %5ss  %s\n' "$CHECK" "$(since "$t0")" \
      "$(cat "$work/$CHECK.said" 2> /dev/null)"
  else
    failed=$((failed + 1))
    printf 'FAIL %-22s %5ss  (rc %s)\n' "$CHECK" "$(since "$t0")" "$rc"
    for f in "$work/$CHECK.log" \
      $(find "$work" -maxdepth 1 -name '*.out' -newer "$work/$CHECK.start"); do
      echo "  == ${f##*/}"
      tail -n 25 "$f" | sed 's/^/    /'
    done
  fi
}

# ---- Slurm ---------------------------------------------------------------------------------

slurm_srun() {
  limit 90 srun -n 4 "$PERF" "${PERF_ARGS[@]}" > "$work/srun.out" 2>&1
  expect_table "$work/srun.out" 4
  said "srun -n 4 all_reduce_perf: $(table_summary "$work/srun.out")"
}

slurm_sbatch() {
  cat > "$work/job.sh" << EOF
#!/bin/bash
#SBATCH --job-name=braid-sbatch
#SBATCH --ntasks=4
#SBATCH --output=$work/sbatch-%j.out
set -euo pipefail
echo "== step 0: training demo, 2 ranks"
srun -n 2 $TRAIN --dp 2 --model tiny --steps 20 --global-batch 8 --log-every 10
echo "== step 1: all_reduce_perf, 4 ranks"
srun -n 4 $PERF ${PERF_ARGS[*]}
EOF
  local job out state first last
  limit 240 sbatch --wait "$work/job.sh" > "$work/sbatch.txt" 2>&1
  job=$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' "$work/sbatch.txt")
  out=$work/sbatch-$job.out
  state=$(limit 20 scontrol show job "$job" | grep -o -E 'JobState=[A-Z]+|ExitCode=[0-9:]+' |
    tr '\n' ' ')
  echo "job $job: $state"
  [[ "$state" == *"JobState=COMPLETED ExitCode=0:0"* ]] || { cat "$out"; return 1; }
  expect "$out" "braid-train: 20 steps in" "the training demo's end"
  expect_table "$out" 4
  first=$(grep -m1 -o -E 'loss [0-9.]+' "$out" | cut -d' ' -f2)
  last=$(grep -o -E 'loss [0-9.]+' "$out" | tail -n1 | cut -d' ' -f2)
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' ||
    { echo "loss did not fall: $first -> $last"; return 1; }
  said "sbatch --wait job $job COMPLETED 0:0; step 0 braid-train 2 ranks loss $first -> $last;" \
    "step 1 all_reduce_perf $(table_summary "$out")"
}

# Two nodes on one machine: BRAID_HOST_ID tells Braid which ranks share a node.
slurm_two_nodes() {
  local port
  port=$(free_pair)
  BRAID_ROOT=127.0.0.1:$port BRAID_DEBUG=INFO limit 90 srun -p two -N 2 -n 4 \
    --ntasks-per-node 2 sh -c 'BRAID_HOST_ID=$SLURMD_NODENAME exec "$0" "$@"' \
    "$PERF" "${PERF_ARGS[@]}" > "$work/two.out" 2>&1
  expect_table "$work/two.out" 4
  expect "$work/two.out" "2 node\(s\) x 2 rank\(s\)" "two nodes of two ranks"
  expect "$work/two.out" "connected to rank 2 .* over socket" "sockets between the nodes"
  expect "$work/two.out" "connected to rank 1 .* over shm" "shared memory inside a node"
  expect "$work/two.out" "\): hierarchical, predicted" "a hierarchical all-reduce"
  said "srun -p two -N 2 -n 4: 2 nodes x 2 ranks, socket across, shm within," \
    "hierarchical all-reduce at 256 KiB; $(table_summary "$work/two.out")"
}

# The rank that rank $2's first "is gone" line in srun --label output $1 names.
blamed() {
  grep -m1 -o -E "^ *$2: .*rank [0-9]+ \(pid [0-9]+ on [^)]*\) is gone" "$1" |
    sed -E 's/.*rank ([0-9]+) \(pid [0-9]+ on [^)]*\) is gone$/\1/'
}

# One job, two steps that form one Braid job (ranks 0-2, rank 3); scancel of rank 3's step.
slurm_scancel() {
  local job step t0 pids pid r rc=0
  limit 30 salloc -n 4 --no-shell -J braid-scancel > "$work/salloc.txt" 2>&1
  job=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' "$work/salloc.txt")
  export BRAID_ROOT=127.0.0.1:$(free_pair) BRAID_SECRET=$(secret) BRAID_WORLD_SIZE=4
  export BRAID_TIMEOUT_MS=30000
  local long=("$PERF" -b 1M -e 1M -n 100000 -w 0)
  setsid timeout --foreground -k 5 120 srun --jobid "$job" --overlap -n 3 -J ranks012 --label \
    sh -c 'BRAID_RANK=$SLURM_PROCID exec "$0" "$@"' "${long[@]}" > "$work/three.out" 2>&1 &
  pid=$!
  background+=("$pid")
  setsid timeout --foreground -k 5 120 srun --jobid "$job" --overlap -n 1 -J rank3 \
    sh -c 'BRAID_RANK=3 exec "$0" "$@"' "${long[@]}" > "$work/one.out" 2>&1 &
  background+=("$!")
  wait_for "$work/three.out" "Rank +3 Group" 60  # rank 0 lists the four ranks
  sleep 1  # well inside the collectives
  step=$(limit 20 squeue -h -s -j "$job" -o '%i %j' | awk '$2 == "rank3" { print $1 }')
  [ -n "$step" ] || { limit 20 squeue -s; return 1; }
  t0=$(now)
  limit 20 scancel "$step"
  wait "$pid" || rc=$?
  local took
  took=$(since "$t0")
  echo "ranks 0-2 ended $took s after scancel $step, srun rc $rc"
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || { echo "step 0 did not fail by itself"; return 1; }
  awk -v t="$took" 'BEGIN { exit !(t < 30) }' || { echo "not within BRAID_TIMEOUT_MS"; return 1; }
  # Each rank names rank 3, or (rarely, when the cascade outruns rank 0's relay) a rank
  # that left after naming rank 3 itself.
  local named=()
  for r in 0 1 2; do
    expect "$work/three.out" "^ *$r: .*rank [0-9] \(pid [0-9]+ on [^)]*\) is gone" \
      "rank $r naming a lost rank"
    named[r]=$(blamed "$work/three.out" "$r")
  done
  for r in 0 1 2; do
    [ "${named[r]}" = 3 ] || [ "${named[${named[r]}]:-}" = 3 ] ||
      { echo "rank $r named rank ${named[r]}, which did not name rank 3"; return 1; }
  done
  pids=$(grep -o -E 'Rank +[0-9]+ Group +0 Pid +[0-9]+' "$work/three.out" | awk '{ print $NF }')
  for pid in $pids; do
    if grep -q "^braid-$pid-" <<<"$(ls /dev/shm)"; then echo "segment of pid $pid left"; return 1; fi
  done
  limit 20 scancel "$job"
  said "scancel $step (rank 3): ranks 0, 1, 2 fail naming rank ${named[0]}, ${named[1]}," \
    "${named[2]} ('rank N (pid ..) is gone') $took s later (BRAID_TIMEOUT_MS 30 s);" \
    "no /dev/shm/braid-<pid>-* of pids $(echo $pids)"
}

# ---- torchrun ------------------------------------------------------------------------------

torchrun_train() {
  limit 120 "${TORCHRUN[@]}" --nproc_per_node 2 --master_port "$(free_pair)" \
    "$TRAIN_SCRIPT" --steps 40 > "$work/ttrain.out" 2>&1
  expect "$work/ttrain.out" "rank 0 of 2 \(local 0\): loss .* 2 replicas equal" "rank 0's end"
  expect "$work/ttrain.out" "rank 1 of 2 \(local 1\): loss .* 2 replicas equal" "rank 1's end"
  said "torchrun --nproc_per_node 2 (env://, backend braid, DDP):" \
    "$(grep -o -E 'rank 0 of 2.*' "$work/ttrain.out")"
}

torchrun_perf() {
  limit 120 "${TORCHRUN[@]}" --nproc_per_node 2 --master_port "$(free_pair)" --no_python \
    "$PERF" "${PERF_ARGS[@]}" > "$work/tperf.out" 2>&1
  expect_table "$work/tperf.out" 2
  said "torchrun --no_python all_reduce_perf: $(table_summary "$work/tperf.out")"
}

# Two agents as two nodes of 2 ranks; SIGTERM to agent 1, which stops its ranks 2 and 3.
# Agent 0's ranks must fail by themselves; agent 0 itself then waits in torchrun's exit
# barrier for the lost agent (300 s), so it is stopped here.
torchrun_kill() {
  local port a b t0 took r
  port=$(free_pair)
  local agent=("${TORCHRUN[@]}" --nnodes 2 --nproc_per_node 2 --master_addr 127.0.0.1
    --master_port "$port")
  BRAID_TIMEOUT_MS=30000 setsid timeout --foreground -k 5 150 "${agent[@]}" --node_rank 0 \
    "$TRAIN_SCRIPT" --steps 1000000 > "$work/agent0.out" 2>&1 &
  a=$!
  background+=("$a")
  BRAID_TIMEOUT_MS=30000 setsid timeout --foreground -k 5 150 "${agent[@]}" --node_rank 1 \
    "$TRAIN_SCRIPT" --steps 1000000 > "$work/agent1.out" 2>&1 &
  b=$!
  background+=("$b")
  wait_for "$work/agent0.out" "rank 0 step 20 " 90
  t0=$(now)
  kill -TERM "$b"  # timeout passes it on to the agent
  wait_for "$work/agent0.out" "failed \(exitcode: 1\) local_rank" 60
  took=$(since "$t0")
  kill -TERM -- "-$a" 2> /dev/null || true
  wait "$b" || true
  wait "$a" || true
  echo "agent 0's first rank failed $took s after agent 1 was stopped"
  for r in 0 1; do
    expect "$work/agent0.out" "^\[default$r\]:.*rank [23] \(pid [0-9]+ on [^)]*\) is gone" \
      "local rank $r naming a lost rank"
  done
  ! grep -q "Segmentation fault" "$work/agent0.out" || { echo "a rank crashed"; return 1; }
  expect "$work/agent1.out" "got signal: 15" "agent 1 stopping on SIGTERM"
  said "SIGTERM to agent 1 (it stops ranks 2, 3): agent 0's ranks 0 and 1 raise" \
    "'$(grep -m1 -o -E 'rank [23] \(pid [0-9]+ on [^)]*\) is gone' "$work/agent0.out")'," \
    "exit 1 within $took s (agent's 5 s monitor included)"
}

# ---- MPI -----------------------------------------------------------------------------------

openmpi_mpirun() {
  limit 90 mpirun.openmpi --allow-run-as-root --oversubscribe -n 4 "$PERF" "${PERF_ARGS[@]}" \
    > "$work/ompi.out" 2>&1
  expect_table "$work/ompi.out" 4
  said "mpirun.openmpi -n 4: $(table_summary "$work/ompi.out")"
}

# Hydra's PMI_RANK and PMI_SIZE name no job to derive a port from: BRAID_ROOT does.
mpich_mpiexec() {
  BRAID_ROOT=127.0.0.1:$(free_pair) limit 90 mpiexec.hydra -n 4 "$PERF" "${PERF_ARGS[@]}" \
    > "$work/mpich.out" 2>&1
  expect_table "$work/mpich.out" 4
  BRAID_ROOT=127.0.0.1:$(free_pair) limit 90 mpiexec.hydra -n 2 "$TRAIN" --dp 2 --model micro \
    --steps 3 --global-batch 8 > "$work/mpich-train.out" 2>&1
  expect "$work/mpich-train.out" "braid-train: 3 steps in" "braid-train's end on 2 ranks"
  said "mpiexec.hydra -n 4: $(table_summary "$work/mpich.out"); -n 2 braid-train --dp 2: 3 steps"
}

# ---- run -----------------------------------------------------------------------------------

slurm_checks=(slurm_srun slurm_sbatch slurm_two_nodes slurm_scancel)
other_checks=(torchrun_train torchrun_perf torchrun_kill openmpi_mpirun mpich_mpiexec)
wanted() { [ ${#only[@]} = 0 ] || [[ " ${only[*]} " == *" $1 "* ]]; }
only=("$@")

run_slurm=0
for c in "${slurm_checks[@]}"; do wanted "$c" && run_slurm=1; done
if [ $run_slurm = 1 ]; then
  t0=$(now)
  if slurm_up "$work/slurm" > "$work/slurm-up.log" 2>&1; then
    echo "slurm: munged, slurmctld and 2 slurmd up in $(since "$t0") s ($SLURM_CONF)"
    for c in "${slurm_checks[@]}"; do wanted "$c" && check "$c" "$c"; done
    t0=$(now)
    slurm_down "$work/slurm"
    echo "slurm: down in $(since "$t0") s"
  else
    failed=$((failed + 1))
    echo "FAIL slurm_up"
    tail -n 20 "$work/slurm-up.log" "$work"/slurm/*.log 2> /dev/null
  fi
fi
for c in "${other_checks[@]}"; do wanted "$c" && check "$c" "$c"; done
echo "launchers: $passed passed, $failed failed"
[ "$failed" = 0 ]
