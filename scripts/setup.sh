#!/usr/bin/env bash
# Installs the Debian 12 packages (and the few PyPI ones) Braid's build, tests and benchmarks need.
# Idempotent: does nothing when everything is already there. Run as root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
  libhwloc-dev hwloc libucx-dev libibverbs-dev rdma-core
  iproute2 procps openmpi-bin libopenmpi-dev
  mpich libmpich-dev libgloo-dev
  python3 python3-numpy python3-torch python3-pip python3-setuptools python3-matplotlib
  libtorch-dev pybind11-dev python3-dev
  python3-venv python3-wheel
  fortunes
  slurm-wlm munge
)

# PyPI packages (Debian 12's pip installs beside apt's only with the flag): expecttest,
# which PyTorch's test base imports (scripts/ci/torch_suite.sh).
pip_install() {
  /usr/bin/python3 -c "import $1" 2>/dev/null ||
    /usr/bin/python3 -m pip install -q --break-system-packages "$1"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
pip_install expecttest
