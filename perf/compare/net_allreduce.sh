#!/usr/bin/env bash
# All-reduce (float32 sum) across two "hosts" made of network namespaces joined
# by a veth pair, one rank in each, no shaping: Braid over socket, Braid over
# ucx (UCX_TLS=tcp), Gloo's TCP all-reduce (torch.distributed), and OpenMPI's
# MPI_Allreduce with btl tcp, in one run. Prints one table: time per call (us)
# and busbw (GB/s) per size and library. Needs root and iproute2; skips what
# is not installed (python3-torch, libopenmpi-dev). Removes what it creates.
#
#   perf/compare/net_allreduce.sh [build-dir]      (default: build)
#   SIZES="8 1048576" ITERS_SCALE=... perf/compare/net_allreduce.sh build-net
#
# Runs under `nice -n -10` when it may, so compile jobs disturb it less.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
perf=$build/perf/coll/all_reduce_perf
sizes=${SIZES:-"8 64 512 4096 32768 262144 4194304 16777216 67108864 268435456"}
tag=bnet$$
nsA=${tag}a nsB=${tag}b vA=${tag}x vB=${tag}y
ipA=10.79.0.1 ipB=10.79.0.2
work=$(mktemp -d /tmp/braid-net-allreduce-XXXXXX)

cleanup() {
  ip netns pids "$nsA" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns pids "$nsB" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$nsA" 2>/dev/null
  ip netns del "$nsB" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

[ "$(id -u)" = 0 ] || { echo "net_allreduce: needs root (network namespaces)"; exit 1; }
[ -x "$perf" ] || { echo "net_allreduce: build all_reduce_perf in $build first"; exit 1; }
ip netns add "$nsA" && ip netns add "$nsB" &&
  ip link add "$vA" type veth peer name "$vB" &&
  ip link set "$vA" netns "$nsA" && ip link set "$vB" netns "$nsB" &&
  ip -n "$nsA" addr add $ipA/24 dev "$vA" && ip -n "$nsB" addr add $ipB/24 dev "$vB" &&
  ip -n "$nsA" link set "$vA" up && ip -n "$nsB" link set "$vB" up &&
  ip -n "$nsA" link set lo up && ip -n "$nsB" link set lo up ||
  { echo "net_allreduce: cannot create network namespaces"; exit 1; }
nice="nice -n -10"
$nice true 2>/dev/null || nice=""

port() { echo $((20000 + RANDOM % 30000)); }

# Braid: all_reduce_perf, one rank per namespace; two runs (small sizes with
# many iterations, large with few), calls on the NULL stream (-y 1) as Gloo's
# block. Rows: "<label> bytes time_us busbw".
braid() {
  local label=$1 env=$2 secret p
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  for range in "-b 8 -e 262144 -f 8 -n 200 -w 5" "-b 4M -e 256M -f 4 -n 3 -w 1"; do
    p=$(port)
    for r in 0 1; do
      ns=$nsA; [ $r = 1 ] && ns=$nsB
      ip netns exec "$ns" env BRAID_WORLD_SIZE=2 BRAID_RANK=$r BRAID_ROOT=$ipA:$p \
        BRAID_SECRET="$secret" BRAID_HOST_ID="$ns" BRAID_TIMEOUT_MS=120000 $env \
        $nice "$perf" $range -c 1 -a 3 -y 1 > "$work/$label.$r.log" 2>&1 &
    done
    wait
    grep -q "Out of bounds values : 0 OK" "$work/$label.0.log" ||
      { echo "# $label failed:"; sed 's/^/#   /' "$work/$label.0.log" | tail -5; }
    awk -v l="$label" '$1 ~ /^[0-9]+$/ && NF >= 12 { print l, $1, $6, $8 }' "$work/$label.0.log"
  done
}

gloo() {
  /usr/bin/python3 -c "import torch.distributed" 2>/dev/null ||
    { echo "# gloo skipped: /usr/bin/python3 has no torch (python3-torch)"; return; }
  local p; p=$(port)
  for r in 0 1; do
    ns=$nsA; dev=$vA; [ $r = 1 ] && { ns=$nsB; dev=$vB; }
    ip netns exec "$ns" env RANK=$r WORLD_SIZE=2 MASTER_ADDR=$ipA MASTER_PORT=$p \
      GLOO_SOCKET_IFNAME="$dev" OMP_NUM_THREADS=1 \
      $nice /usr/bin/python3 "$here/net_gloo_allreduce.py" $sizes > "$work/gloo.$r.log" 2>&1 &
  done
  wait
  grep -q "^gloo" "$work/gloo.0.log" || sed 's/^/# gloo: /' "$work/gloo.0.log" | tail -5
  awk '/^gloo/ { print "gloo", $2, $3, $4; if ($5 != "yes") print "# gloo: wrong sum at", $2 }' \
    "$work/gloo.0.log"
}

# OpenMPI: mpirun in namespace a starts the rank of namespace b through an rsh
# "agent" that enters b, so its daemon and ranks really live there.
openmpi() {
  command -v mpicc > /dev/null && [ -f /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] ||
    { echo "# openmpi skipped: no mpicc/mpi.h (libopenmpi-dev)"; return; }
  mpicc -O2 "$here/net_mpi_allreduce.c" -o "$work/mpi_allreduce" 2> "$work/mpicc.log" ||
    { echo "# openmpi skipped: mpicc failed"; return; }
  cat > "$work/agent.sh" <<EOF
#!/bin/sh
host=\$1; shift
ns=$nsA; [ "\$host" = $ipB ] && ns=$nsB
exec ip netns exec \$ns sh -c "\$*"
EOF
  chmod +x "$work/agent.sh"
  ip netns exec "$nsA" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    $nice mpirun --host $ipA,$ipB -np 2 --bind-to none --mca plm_rsh_agent "$work/agent.sh" \
    --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 10.79.0.0/24 \
    --mca oob_tcp_if_include 10.79.0.0/24 "$work/mpi_allreduce" $sizes > "$work/mpi.log" 2>&1
  grep -q "^openmpi" "$work/mpi.log" || sed 's/^/# openmpi: /' "$work/mpi.log" | tail -5
  awk '/^openmpi/ { print "openmpi", $2, $3, $4; if ($5 != "yes") print "# openmpi: wrong sum at", $2 }' \
    "$work/mpi.log"
}

{
  braid braid-socket ""
  if grep -q "transports:.*ucx" <<<"$("$build/tools/braid_info/braid-info")"; then
    braid braid-ucx "BRAID_NET=ucx UCX_TLS=tcp,self"
  else
    echo "# braid-ucx skipped: this build has no ucx"
  fi
  gloo
  openmpi
} > "$work/rows.txt"

grep "^#" "$work/rows.txt"
echo "# all-reduce float32 sum, 2 ranks in 2 network namespaces over veth; time us / busbw GB/s"
awk '!/^#/ { k = $1 SUBSEP $2; t[k] = $3; b[k] = $4; lib[$1] = 1; sz[$2] = 1 }
  END {
    n = split("braid-socket braid-ucx gloo openmpi", order, " ")
    printf "%12s", "bytes"
    for (i = 1; i <= n; ++i) if (order[i] in lib) printf " %22s", order[i]
    printf "\n"
    m = 0; for (s in sz) list[++m] = s + 0
    for (i = 1; i <= m; ++i) for (j = i + 1; j <= m; ++j) if (list[j] < list[i]) { x = list[i]; list[i] = list[j]; list[j] = x }
    for (i = 1; i <= m; ++i) {
      printf "%12d", list[i]
      for (o = 1; o <= n; ++o) {
        if (!(order[o] in lib)) continue
        k = order[o] SUBSEP list[i]
        if (k in t) printf " %12.1f / %7.3f", t[k], b[k]; else printf " %22s", "-"
      }
      printf "\n"
    }
  }' "$work/rows.txt"
