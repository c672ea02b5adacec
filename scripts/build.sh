#!/usr/bin/env bash
# Configures and builds Braid in ./build (Release with debug info).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$(getconf _NPROCESSORS_ONLN)"
