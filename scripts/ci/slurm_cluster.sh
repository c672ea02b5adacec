# A private Slurm cluster on this machine, for scripts/ci/launchers.sh (sourced).
#
#   slurm_up DIR     munged, slurmctld and two slurmd (nodes n1, n2) with every file in DIR
#   slurm_down DIR   cancels the jobs, then stops the daemons (by the pids kept in DIR/pids)
#
# Debian's slurmd runs several times on one host (`slurmd -N name`, each node with its own
# port), so two nodes live on one machine: partition "one" (the default) holds n1 alone,
# partition "two" both. Nothing touches /etc: SLURM_CONF points at DIR/slurm.conf, munged
# listens on DIR/munge.sock with its own key, the daemons take free ports. The node
# sizes are this machine's memory and max(cores, 4) CPUs (SlurmdParameters=config_overrides
# lets a 2-core machine run the 4-rank checks). No cgroups, which containers forbid:
# proctrack/linuxproc, task/none, no accounting.

# A free TCP port (the kernel's pick).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}

# Writes DIR/slurm.conf for this host.
slurm_write_conf() {
  local dir=$1 host cores cpus mem
  host=$(hostname -s)  # slurmctld compares its short host name with SlurmctldHost
  cores=$(getconf _NPROCESSORS_ONLN)
  cpus=$((cores > 4 ? cores : 4))
  mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
  mem=${mem:-1}
  cat > "$dir/slurm.conf" <<EOF
ClusterName=braidci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
KillWait=5
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$(free_port) CPUs=$cpus RealMemory=$mem
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$(free_port) CPUs=$cpus RealMemory=$mem
PartitionName=one Nodes=n1 Default=YES MaxTime=INFINITE State=UP
PartitionName=two Nodes=n1,n2 MaxTime=INFINITE State=UP
EOF
}

# Waits up to $2 seconds for command $1 (a string; each try limited to 5 s) to succeed.
slurm_wait() {
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    timeout 5 bash -c "$1" > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "slurm: '$1' did not succeed within $2 s" >&2
  return 1
}

# Starts daemon "$@" in the foreground of its own session, its pid in DIR/pids.
slurm_daemon() {
  local dir=$1 name=$2
  shift 2
  setsid "$@" < /dev/null > "$dir/$name.out" 2>&1 &
  echo "$!" >> "$dir/pids"
}

slurm_up() {
  local dir=$1
  mkdir -p "$dir/state" "$dir/spool/n1" "$dir/spool/n2"
  # munged wants its socket's directory (and those above it) open to all, its key private.
  chmod 755 "$dir"
  if command -v mungekey > /dev/null; then
    mungekey --create --keyfile="$dir/munge.key" --bits=1024 || return 1
  else
    dd if=/dev/urandom of="$dir/munge.key" bs=128 count=1 status=none || return 1
  fi
  chmod 600 "$dir/munge.key"
  slurm_daemon "$dir" munged munged --foreground --socket="$dir/munge.sock" \
    --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
    --seed-file="$dir/munged.seed"
  slurm_wait "munge -S '$dir/munge.sock' -n | unmunge -S '$dir/munge.sock'" 10 || return 1
  slurm_write_conf "$dir" || return 1
  export SLURM_CONF=$dir/slurm.conf
  slurm_daemon "$dir" slurmctld slurmctld -D -i
  slurm_wait "scontrol ping | grep -q UP" 20 || return 1
  slurm_daemon "$dir" slurmd-n1 slurmd -D -N n1
  slurm_daemon "$dir" slurmd-n2 slurmd -D -N n2
  slurm_wait "[ \"\$(sinfo -h -N -p two -o %T | sort -u)\" = idle ]" 30
}

# Sends SIGTERM to the pids in DIR/pids, then waits up to 10 s for all of them to go
# (SIGKILL to those left after 5 s). Each daemon takes about 2 s to stop: together, not in turn.
slurm_stop_daemons() {
  local pids=() pid i alive
  [ -s "$1/pids" ] || return 0
  for pid in $(cat "$1/pids"); do kill -TERM "$pid" 2> /dev/null && pids+=("$pid"); done
  for ((i = 0; i < 100; i++)); do
    alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2> /dev/null && alive+=("$pid"); done
    [ ${#alive[@]} -eq 0 ] && break
    [ "$i" = 50 ] && kill -KILL "${alive[@]}" 2> /dev/null
    sleep 0.1
  done
  rm -f "$1/pids"
}

slurm_down() {
  local dir=$1
  [ -d "$dir" ] || return 0
  export SLURM_CONF=$dir/slurm.conf
  if [ -S "$dir/munge.sock" ] && [ -f "$SLURM_CONF" ]; then
    # Jobs first, so that their steps (slurmstepd and the ranks) end with them.
    timeout 10 scancel --user="$(id -un)" 2> /dev/null || true
    slurm_wait "[ -z \"\$(squeue -h)\" ]" 15 || true
  fi
  slurm_stop_daemons "$dir"
}
