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
slow=
# On the way out (a target failed, or an interrupt), the background lane and its fuzzer stop too.
stopSlow() {
  [[ -n $slow ]] || return 0
  kill "$slow" $(cat "/proc/$slow/task/"*/children 2>/dev/null) 2>/dev/null || true
}
trap 'rc=$?; stopSlow; rm -rf "$work"; exit $rc' EXIT
# One target: its corpus plus `runs` generated inputs up to `max_len` bytes. Prints the run's
# statistics, or its whole output when it fails (libFuzzer's report of the crash, leak or hang).
fuzz() {
  local target=$1 target_runs=$2 max_len=$3 status=0
  mkdir -p "$work/$target/new"
  # A fixed seed: the same inputs every run, so a CI run is reproducible.
  "$build"/bin/$target -seed=1 -runs="$target_runs" -timeout=10 -max_len="$max_len" \
    -print_final_stats=1 "$work/$target/new" "tests/fuzz/corpus/$target" \
    >"$work/$target/log" 2>&1 || status=$?
  echo "fuzz: $target, $target_runs runs"
  if ((status != 0)); then
    cat "$work/$target/log"
    echo "fuzz: $target failed (exit status $status)"
    return "$status"
  fi
  tail -n 4 "$work/$target/log"
}
# hwloc parses a whole XML file per input (the fixtures are up to 30 KB): fewer, longer runs,
# about as long as all the other targets together, so it runs beside them on the second core.
fuzz fuzz_topology $((runs / 10)) 32768 >"$work/topology.out" 2>&1 &
slow=$!
for target in fuzz_wire fuzz_unique_id fuzz_env fuzz_bootstrap fuzz_transport fuzz_tuning; do
  target_runs=$runs
  # The stateful target opens a connection per input: fewer runs.
  [[ $target == fuzz_bootstrap ]] && target_runs=$((runs / 10))
  fuzz "$target" "$target_runs" 4096
done
status=0
wait "$slow" || status=$?
slow=
cat "$work/topology.out"
((status == 0)) || exit "$status"
echo "fuzz: every target ran clean"
