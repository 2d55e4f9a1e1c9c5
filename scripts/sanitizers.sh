#!/usr/bin/env bash
# The sanitizer and fuzzing stage: the last step of CI (.ci/run) and of the README's test command.
#  1. one clang build (build-san/) with AddressSanitizer + UndefinedBehaviorSanitizer
#     (-fno-sanitize-recover: any report fails) and libFuzzer's coverage, at -O1 without debug
#     information, which compiles in a fraction of RelWithDebInfo's time;
#  2. the unit and integration tests on it, the sweeps in their quick form (WEFT_TEST_QUICK=1:
#     see tests/support/quick.hpp). CI runs every area (shm and UCX collectives, faults and dead
#     peers, abort, split/shrink, WEFT_CHECK, bootstrap, launchers, multihost, weftrun,
#     weft-perf) but leaves out the repetitions that take minutes each when instrumented on 2
#     cores: the list is $ci_skip below, with the reason for each. `--all` runs those too;
#  3. every libFuzzer target over tests/fuzz/corpus from the same build (scripts/fuzz.sh);
#  4. ThreadSanitizer (build-tsan/: the library and only the programs it runs) on the programs
#     whose ranks are threads: communicators from weftCommInitAll and weftCommInitRank, host
#     streams, abort from another thread, split and shrink, WEFT_CHECK; their ranks talk over
#     UCX there, not shared memory (why: above that step), and reports from inside UCX are
#     suppressed (scripts/tsan.supp).
# CI's budget (20 minutes for the whole test command on 2 cores) sets what CI runs here. At
# af14922, from a clean clone on the 2-core Intel Xeon build machine, this stage took 516 s
# (ASan+UBSan build 164 s, tests 292 s, fuzzers 12 s, TSan build 35 s and tests 13 s) after
# 575 s of Release build and tests: the whole command, 18 min, is just within the budget. `--all`
# also runs every test the list below leaves out: roughly 15-25 minutes more.
# Warnings are the normal build's job (-DWEFT_WERROR=OFF here).
# UCX's memory hooks do not mix with sanitizers: they are switched off (UCX_MEM_*), which only
# costs UCX a registration cache weft does not use.
#   scripts/sanitizers.sh [--all] [fuzz-runs-per-target]   (default 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
all=0
[[ ${1:-} == --all ]] && all=1 && shift
runs=${1:-20000}
export UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no
export CC=clang CXX=clang++
fast=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1" "-DCMAKE_C_FLAGS_RELEASE=-O1"
      -DWEFT_WERROR=OFF)
# hwloc's PCI plugin (libhwloc-plugins) is dlclose'd with libpciaccess at exit, which leaves
# libpciaccess's few allocations (~1 KB, kept for its lifetime) looking leaked from an
# "<unknown module>" that no suppression can name: preloading libpciaccess keeps it mapped.
# (The library list is read whole before grep looks at it: `ldconfig -p | grep -q` lets grep
# quit at the first match and ldconfig die of SIGPIPE on its 75 KB, which pipefail turns into
# "not found", and leaves every test above failing on that leak.)
preload=
libraries=$(PATH=$PATH:/sbin:/usr/sbin ldconfig -p 2>/dev/null || true)
if grep -q 'libpciaccess\.so\.0 ' <<<"$libraries"; then
  preload=libpciaccess.so.0
fi
run() { LD_PRELOAD=$preload "$@"; }

echo "sanitizers: address,undefined build (and the fuzz targets)"
start=$SECONDS
cmake -S . -B build-san "${fast[@]}" -DWEFT_SANITIZE=address,undefined -DWEFT_FUZZ=ON >/dev/null
cmake --build build-san
echo "sanitizers: address,undefined build took $((SECONDS - start)) s"

# Never run here: the install test (it rebuilds the project) and the soak (its short form still
# runs 2000 operations).
skip='^install:|^soak:'
# Left out of CI (--all runs them): the repetitions that take 15 s to 150 s each when
# instrumented on 2 cores (ctest's times under ASan+UBSan), each for a cheaper test of the same
# code that CI keeps:
#  - mp on 4-8 processes, and ucx, staged and memalloc on 3: every variant on 2 processes and
#    shm on 3;
#  - mp with WEFT_CHECK (30-50 s): the check: tests (WEFT_CHECK on thread ranks);
#  - the WEFT_ALGO rounds (50-100 s): every algorithm on loopback in the collectives tests, and
#    WEFT_ALGO's parsing and forcing in the tuner tests and "mp: a bad WEFT_ALGO";
#  - large allreduces, 17-33 MB (100-150 s), and the other collectives' 17 MB outputs (12-23 s
#    each): the native and mp sweeps up to 65537 elements;
#  - multihost on 5 ranks, the default algorithms on 2+1 and the link cuts (15-65 s):
#    WEFT_HOST_ID and mpirun across hosts (a dead peer's errors: the faults tests);
#  - the loopback sweeps over many ranks, chunk sizes, fixtures and simulations (12-140 s):
#    pipelining, every algorithm on 32..64 ranks, schedule pairing on 1..17 ranks, rendezvous
#    stalls on 1..64 ranks, replaying every rank against one per symmetry class, the tuner
#    against every forced algorithm, the fixture schedules and packing bounds: the smaller
#    collectives, cost and topology tests run the same code;
#  - reduce-scatter on thread ranks, native and on loopback (25-35 s): every collective of the
#    mp tests runs it natively on 2 and 3 processes (shm) and through the executor (ucx); the
#    staged, CMA, memalloc and UCX variants of the native reduce (7-13 s): their allreduce;
#  - the hierarchical algorithms on 2+1 processes (25 s): on loopback over many host layouts;
#  - weft-perf's all_reduce, reduce and reduce_scatter sweeps of every type and op (12-40 s),
#    which check what the native and mp tests check: weft-perf's other collectives; and its
#    --calibrate runs (30-35 s), which time the same transfers and reductions at many sizes.
ci_skip='every collective, type and op on [4-8] processes'
ci_skip+='|^mp\((ucx|shm-staged|shm-memalloc)\): every collective, type and op on 3 '
ci_skip+='|^mp\((shm|ucx)-check\)|^mp\(WEFT_ALGO round'
ci_skip+='|large allreduces|large outputs'
ci_skip+='|^multihost: every collective, type and op on'
ci_skip+='|^multihost: host 1.s link cut during allreduces'
ci_skip+='|^collectives:(pipelining|every algorithm is exact on 32|reduce-scatter is exact)'
ci_skip+='|^algorithms:every schedule.s messages pair up'
ci_skip+='|^cost:(no schedule stalls|replaying one rank per symmetry class)'
ci_skip+='|^tuner:the tuner.s choice is the simulated minimum'
ci_skip+='|^topology:(the chosen trees and rings|packed broadcast|replayed message|on the DGX-1)'
ci_skip+='|^native\([a-z]+\): reduce-scatter|^native\((staged|cma|memalloc|ucx)\): reduce is'
ci_skip+='|^weft-perf-(all_reduce|reduce|reduce_scatter)-t[23]$'
ci_skip+='|^weft-perf-weftrun-(all_reduce-n2|registered-(all_reduce|reduce_scatter)-n3)$'
ci_skip+='|^weft-perf-calibrate$|^multihost: weft-perf --calibrate'
((all)) || skip+="|$ci_skip"
# Under mpirun, libpmix and Open MPI's plugins leak at exit (pmix_rte_init, and ~120 KB in
# unloaded MCA modules): the launch integration tests ("launch: ...") and the others that start
# mpirun run without leak detection, everything else with it (the launch unit tests too).
mpirun='^launch: |mpirun'
start=$SECONDS
export UBSAN_OPTIONS=print_stacktrace=1 WEFT_TEST_QUICK=1
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  run ctest --test-dir build-san --output-on-failure -j 2 -E "$skip|$mpirun"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  run ctest --test-dir build-san --output-on-failure -j 2 -R "$mpirun" -E "$skip"
unset UBSAN_OPTIONS WEFT_TEST_QUICK
echo "sanitizers: address,undefined tests took $((SECONDS - start)) s"
start=$SECONDS
LD_PRELOAD=$preload WEFT_FUZZ_BUILD=build-san ./scripts/fuzz.sh "$runs"
echo "sanitizers: fuzzing took $((SECONDS - start)) s"

echo "sanitizers: thread"
start=$SECONDS
threaded=(weft-test-api weft-test-check weft-test-base)
cmake -S . -B build-tsan "${fast[@]}" -DWEFT_SANITIZE=thread >/dev/null
cmake --build build-tsan --target "${threaded[@]}"
echo "sanitizers: thread build took $((SECONDS - start)) s"
# Their ctest cases, with ctest's environment for each (WEFT_CHECK=1 for check:). Ranks talk
# over UCX here (WEFT_SHM_DISABLE=1): thread ranks each map the shared-memory segment at their
# own address, and ThreadSanitizer, which orders accesses by address, cannot see the
# synchronization of the segment's flags across mappings: every shm collective would be
# reported as a race (the ASan+UBSan tests above run those paths).
# UCX_MEM_EVENTS=no: UCX's memory hooks (libucm) intercept the madvise a thread makes as it
# exits and take a lock through ThreadSanitizer after the thread's state is gone, which
# crashes every program whose threads use UCX. weft asks nothing of those events.
# UCX's own shared-memory transports have the same blind spot inside UCX, which is not
# instrumented: scripts/tsan.supp says why reports with a UCX frame are suppressed.
start=$SECONDS
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp" \
  WEFT_SHM_DISABLE=1 WEFT_TEST_QUICK=1 \
  UCX_MEM_EVENTS=no run ctest --test-dir build-tsan --output-on-failure -j 2 \
  -R '^(api|check|base):'
# Every threaded program's cases must have run: a program that crashes at start-up lists no
# test cases to ctest, which would then run only the others and pass.
listed=$(ctest --test-dir build-tsan -N -R '^(api|check):' | grep -c 'Test *#' || true)
if ((listed < 20)); then
  echo "sanitizers: only $listed api/check test cases under ThreadSanitizer: did a program crash?"
  exit 1
fi
echo "sanitizers: thread tests took $((SECONDS - start)) s"
echo "sanitizers: clean"
