#!/usr/bin/env bash
# Braid as a user adopts it, from an existing build (BUILD, default build/):
#   1. cmake --install into a staging prefix, moved elsewhere (relocatable); every example
#      built against that prefix only (find_package and a one-line pkg-config build) and
#      run under the installed braidrun, with exact results;
#   2. the Debian package (cpack -G DEB): installed, the CMake example built against it and
#      run, then removed, leaving none of its files behind;
#   3. the wheel (pip wheel ./python, reusing the installed libbraid.so and braidrun: no
#      rebuild) in a fresh virtual environment, a 2-rank torch.distributed check run from
#      outside the checkout.
# Run as root on Debian 12 (it installs and removes a package). Leaves nothing behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD=$(realpath "${BUILD:-build}")
NRANKS=4
WORK=$(mktemp -d /tmp/braid-install-check.XXXXXX)
DEB_INSTALLED=0

cleanup() {
  if [ "$DEB_INSTALLED" = 1 ]; then dpkg -r braid >/dev/null 2>&1 || true; fi
  rm -rf "$WORK" "$ROOT/python/build" "$ROOT/python/braid.egg-info"
}
trap cleanup EXIT

step() { printf '\n== install check: %s (%ds)\n' "$1" "$SECONDS"; }
fail() { echo "install check: FAILED: $*" >&2; exit 1; }

# Runs "$@" (a braidrun command line) and wants every one of N ranks to print "exact".
expect_exact() {
  local n=$1; shift
  local out; out=$("$@" 2>&1) || { echo "$out"; fail "$*"; }
  echo "$out"
  [ "$(grep -c 'exact$' <<<"$out")" = "$n" ] || fail "$*: not $n exact ranks"
}

# A prefix must be the only Braid the examples see: no build tree, no other install.
unset CMAKE_PREFIX_PATH PKG_CONFIG_PATH LD_LIBRARY_PATH PYTHONPATH BRAID_LIBRARY BRAIDRUN
export CMAKE_FIND_USE_PACKAGE_REGISTRY=OFF  # the user package registry may point anywhere

step "install into a staging prefix, then move it"
cmake --install "$BUILD" --prefix "$WORK/staged" >/dev/null
mv "$WORK/staged" "$WORK/prefix"
P=$WORK/prefix
for f in "$P"/bin/* "$P"/lib/libbraid.so.0 "$P"/libexec/braid/perf/*; do
  if readelf -d "$f" 2>/dev/null | grep -E 'R(UN)?PATH' | grep -v '\$ORIGIN' >/dev/null; then
    fail "$f has an absolute RPATH: $(readelf -d "$f" | grep -E 'R(UN)?PATH')"
  fi
done
[ -e "$P/lib/braid/nccl/libnccl.so.2" ] || [ ! -e "$BUILD/lib/libnccl.so.2" ] ||
  fail "the NCCL drop-in is not in lib/braid/nccl"
[ ! -e "$P/lib/libnccl.so.2" ] || fail "libnccl.so.2 is on the loader's path in lib/"

step "examples/cmake: find_package(Braid) from the moved prefix"
cmake -S examples/cmake -B "$WORK/ex-cmake" -G Ninja -DCMAKE_PREFIX_PATH="$P" >/dev/null
grep -q "^Braid_DIR:PATH=$P/lib/cmake/Braid$" "$WORK/ex-cmake/CMakeCache.txt" ||
  fail "find_package(Braid) found $(grep ^Braid_DIR "$WORK/ex-cmake/CMakeCache.txt")"
cmake --build "$WORK/ex-cmake" >/dev/null
expect_exact $NRANKS "$P/bin/braidrun" -n $NRANKS "$WORK/ex-cmake/allreduce_c"
expect_exact $NRANKS "$P/bin/braidrun" -n $NRANKS "$WORK/ex-cmake/allreduce_cpp"
grep -q "libbraid.so.0 => $P/lib/" <<<"$(ldd "$WORK/ex-cmake/allreduce_c")" || fail "not the prefix's libbraid"
if [ -e "$P/lib/libbraid.a" ]; then  # Braid::braid_static: no libbraid.so at run time
  ! grep -q libbraid <<<"$(ldd "$WORK/ex-cmake/allreduce_c_static")" || fail "allreduce_c_static loads libbraid.so"
  expect_exact $NRANKS "$P/bin/braidrun" -n $NRANKS "$WORK/ex-cmake/allreduce_c_static"
fi

step "pkg-config: the one-line builds"
export PKG_CONFIG_PATH=$P/lib/pkgconfig
mkdir -p "$WORK/ex-pc"
cc examples/c/allreduce.c -o "$WORK/ex-pc/allreduce" $(pkg-config --cflags --libs braid) -Wl,-rpath,$(pkg-config --variable=libdir braid)
c++ -std=c++20 examples/cpp/allreduce.cpp -o "$WORK/ex-pc/allreduce_cpp" $(pkg-config --cflags --libs braid) -Wl,-rpath,$(pkg-config --variable=libdir braid)
unset PKG_CONFIG_PATH
expect_exact $NRANKS "$P/bin/braidrun" -n $NRANKS "$WORK/ex-pc/allreduce"
expect_exact $NRANKS "$P/bin/braidrun" -n $NRANKS "$WORK/ex-pc/allreduce_cpp"

step "the installed perf tools and tools"
out=$("$P/bin/braidrun" -n 2 "$P/libexec/braid/perf/all_reduce_perf" -b 8 -e 1M -f 64 2>&1) ||
  { echo "$out"; fail "all_reduce_perf"; }
grep -q 'Out of bounds values : 0 OK' <<<"$out" || { echo "$out"; fail "all_reduce_perf results"; }
"$P/bin/braid-info" --env >/dev/null
"$P/bin/braid-topo" >/dev/null
"$P/bin/braid-tune" --help >/dev/null

step "Debian package: build, install, use, remove"
dpkg -s braid >/dev/null 2>&1 && fail "a braid package is installed already; remove it first"
(cd "$BUILD" && cpack -G DEB -B "$WORK/deb" >/dev/null)
deb=$(ls "$WORK"/deb/braid_*.deb)
dpkg-deb -f "$deb" Depends
DEB_INSTALLED=1
apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
dpkg -L braid > "$WORK/deb-files"
cmake -S examples/cmake -B "$WORK/ex-deb" -G Ninja >/dev/null
grep -q '^Braid_DIR:PATH=/usr/lib/cmake/Braid$' "$WORK/ex-deb/CMakeCache.txt" ||
  fail "find_package(Braid) did not find the package's /usr/lib/cmake/Braid"
cmake --build "$WORK/ex-deb" >/dev/null
expect_exact $NRANKS braidrun -n $NRANKS "$WORK/ex-deb/allreduce_c"
pkg-config --exists braid || fail "pkg-config does not find the package's braid.pc"
apt-get remove -y -qq braid >/dev/null
DEB_INSTALLED=0
while read -r f; do
  [ -d "$f" ] || [ ! -e "$f" ] || fail "$f is left after removing the package"
done < "$WORK/deb-files"
! dpkg -s braid >/dev/null 2>&1 || fail "the package is still installed"
grep -q libbraid <<<"$(ldconfig -p)" && fail "ldconfig still lists libbraid"

step "wheel: built from the installed library, used from a fresh venv"
rm -rf python/build python/braid.egg-info
BRAID_PREFIX=$P BRAID_TORCH_EXT_DIR=$BUILD/python/braid /usr/bin/python3 -m pip wheel -q \
  --no-build-isolation --no-deps -w "$WORK/wheel" ./python
rm -rf python/build python/braid.egg-info
/usr/bin/python3 -m venv --system-site-packages "$WORK/venv"  # Debian's torch and numpy
"$WORK/venv/bin/pip" install -q --no-index --no-deps "$WORK"/wheel/braid-*.whl
mkdir "$WORK/outside" && cp examples/python/torch_allreduce.py "$WORK/outside/"
out=$(cd "$WORK/outside" && "$WORK/venv/bin/python" -m braid.run -n 2 torch_allreduce.py 2>&1) ||
  { echo "$out"; fail "torch check"; }
echo "$out"
[ "$(grep -c "over braid $WORK/venv/.*: exact$" <<<"$out")" = 2 ] ||
  fail "torch check: not 2 exact ranks using the venv's braid"
# The native torch backend travels in the wheel when the build made it for this torch.
if ls "$BUILD"/python/braid/_pg_torch1_13.*.so >/dev/null 2>&1; then
  impl=$(cd "$WORK/outside" && "$WORK/venv/bin/python" -c \
    'import braid.torch; print(braid.torch.IMPLEMENTATION, braid.torch.ProcessGroupBraid.__module__)')
  [[ "$impl" == "native braid._pg_torch1_13" ]] || fail "the wheel's torch backend: $impl"
fi

step "done"
