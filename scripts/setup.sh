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
  python3-dev  # Python.h: torch.compile's C++ on CPU (scripts/ci/torch2.sh) includes it
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
  grep -q "install ok installed" <<<"$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" || missing+=("$p")
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

# PyTorch 2.x from PyPI in its own virtual environment (scripts/ci/torch2.sh tests the
# backend under it; Debian's python3-torch stays 1.13). BRAID_TORCH2_VENV moves it.
# CPU use of the published wheel: its libraries link the CUDA ones, which this machine's
# CUDA 13 toolkit (/usr/local/cuda) mostly has; the four below it lacks or has older.
# That is ~1.1 GB of downloads (torch 539 MB, these 523 MB) against several GB for
# torch's whole dependency set, which is the fallback where torch still does not import.
torch2_venv=${BRAID_TORCH2_VENV:-/opt/braid/torch2-venv}
torch2_version=2.15.0
torch2_libs=(nvidia-nccl-cu13==2.30.7 nvidia-cusparselt-cu13==0.8.1
             nvidia-nvshmem-cu13==3.7.2 nvidia-cufile==1.17.1.22)
torch2_imports() { "$torch2_venv/bin/python" -c "import torch" 2>/dev/null; }
if torch2_imports; then
  echo "setup: torch 2.x present in $torch2_venv"
else
  echo "setup: installing torch $torch2_version into $torch2_venv"
  mkdir -p "$(dirname "$torch2_venv")"
  [ -x "$torch2_venv/bin/pip" ] || /usr/bin/python3 -m venv "$torch2_venv"
  pip2=("$torch2_venv/bin/pip" install -q --progress-bar off)
  # torch's Python dependencies first: pip then has no torch to find CUDA wheels missing for.
  "${pip2[@]}" filelock 'typing-extensions>=4.13.0' 'setuptools>=77.0.3' 'sympy>=1.13.3' \
    'networkx>=2.5.1' jinja2 'fsspec>=0.8.5' numpy expecttest
  "${pip2[@]}" --no-deps "torch==$torch2_version"
  torch2_imports || "${pip2[@]}" --no-deps "${torch2_libs[@]}"
  torch2_imports || "${pip2[@]}" "torch==$torch2_version"
  torch2_imports || { echo "setup: torch $torch2_version does not import"; exit 1; }
fi
