#!/usr/bin/env bash
# Builds weft's libFuzzer targets with clang and runs each for a bounded number of runs over its
# corpus in tests/fuzz/corpus/<target>/. Any crash, hang (-timeout) or leak fails.
#   scripts/fuzz.sh [runs-per-target]   (default 20000)
#   scripts/fuzz.sh --seed              (rewrites the seed inputs in tests/fuzz/corpus)
# WEFT_FUZZ_BUILD names a build folder configured with -DWEFT_FUZZ=ON (scripts/sanitizers.sh
# passes its own); without it, build-fuzz/ is configured here.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20000}
build=${WEFT_FUZZ_BUILD:-build-fuzz}
if [[ -z ${WEFT_FUZZ_BUILD:-} ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DWEFT_FUZZ=ON -DWEFT_WERROR=OFF >/dev/null
fi
cmake --build "$build" --target weft-fuzz fuzz_seeds
if [[ $runs == --seed ]]; then
  "$build"/bin/fuzz_seeds tests/fuzz/corpus
  exit 0
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
# UCX's memory hooks do not mix with sanitizers: keep them off.
export UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for target in fuzz_wire fuzz_unique_id fuzz_env fuzz_bootstrap fuzz_transport fuzz_tuning \
    fuzz_topology; do
  target_runs=$runs
  max_len=4096
  # The stateful target opens a connection per input: fewer runs.
  [[ $target == fuzz_bootstrap ]] && target_runs=$((runs / 10))
  # hwloc parses a whole XML file per input (the fixtures are up to 30 KB): fewer, longer runs.
  [[ $target == fuzz_topology ]] && target_runs=$((runs / 10)) && max_len=32768
  echo "fuzz: $target, $target_runs runs"
  rm -rf "${work:?}"/*
  # A fixed seed: the same inputs every run, so a CI run is reproducible.
  "$build"/bin/$target -seed=1 -runs="$target_runs" -timeout=10 -max_len="$max_len" -print_final_stats=1 \
    "$work" "tests/fuzz/corpus/$target" 2>&1 | tail -n 4
done
echo "fuzz: every target ran clean"
