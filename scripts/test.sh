#!/usr/bin/env bash
# The whole test suite: set up, build, then every unit and integration test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bash scripts/ci/install_check.sh  # install, examples, .deb and wheel, as a user adopts Braid (~40 s)
cd build
# Integration tests start many processes each; running them one at a time
# keeps a 2-core machine from starving them.
ctest --output-on-failure -L unit -j "$(getconf _NPROCESSORS_ONLN)"
ctest --output-on-failure -L integration
# PyTorch's own distributed suite on braid and gloo side by side (~2 min).
bash ../scripts/ci/torch_suite.sh "$PWD"
# The backend under PyTorch 2.x (setup.sh's venv), beside gloo: FSDP2, tensor parallel on
# a 2-D mesh, pipelining, compiled functional collectives, and the 2.x suite (~5 min).
bash ../scripts/ci/torch2.sh "$PWD"
bash ../scripts/ci/launchers.sh  # real Slurm, torchrun, mpirun and mpiexec (~1.5 min)
# The device failure, ordering, threads and graph replay tests again over the emulated GPU,
# its stream work landing up to 300 us late and each process's streams sharing 2 hardware
# queues (tests/gpu_emu/emulated_gpu.h): races with the host, and waits that hold back
# another stream's work, show here.
BRAID_EMU_JITTER_US=300 BRAID_EMU_CONNECTIONS=2 ctest --output-on-failure -j 2 \
  -R '^Emulated\.(Ranks/CudaFailures|CudaOrder|Ranks/CudaThreads|CudaThreadsOneGpu|CudaThreadsTwoGpus|Ranks/CudaGraphs\.Replays)'
# Every parser of outside input, fuzzed under ASan + UBSan (clang, build-fuzz/).
bash ../scripts/fuzz.sh
# The unit and integration tests under ASan + UBSan (reusing build-fuzz/), and
# the threaded parts under TSan (build-tsan/).
bash ../scripts/sanitize.sh
