#!/usr/bin/env bash
# Installs everything weft builds, tests and benchmarks with, from Debian 12's packages.
# Idempotent: does nothing (and needs no network) when every package is already installed.
# Run as root (CI and the README's commands do); uses sudo otherwise when it can.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ pkg-config
  # libraries weft uses
  libucx-dev ucx-utils libhwloc-dev hwloc libfmt-dev libsodium-dev
  # tests; clang and its runtime for the libFuzzer targets (scripts/fuzz.sh)
  catch2 clang libclang-rt-14-dev
  # MPI baselines (perf/) and launching across hosts. Open MPI stays the default mpirun/mpicc:
  # MPICH registers its alternatives at priority 40, Open MPI at 50 (perf/README.md).
  libopenmpi-dev openmpi-bin mpich libmpich-dev
  # PMIx headers: weftCommInitFromEnv takes the unique id from mpirun's/srun's PMIx server
  libpmix-dev
  # the PyTorch backend (bindings/python, for /usr/bin/python3) and its tests and benchmark
  python3-torch libtorch-dev pybind11-dev python3-dev
  # reduction microbenchmark (perf/reduce-bench)
  libbenchmark-dev
  # multi-host test bed (scripts/netns-cluster.sh: ip and tc; unshare, nsenter, flock, findmnt)
  iproute2 util-linux
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

as_root=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (missing: ${missing[*]})" >&2; exit 1; }
  as_root=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
