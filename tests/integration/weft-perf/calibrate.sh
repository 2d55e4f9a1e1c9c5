#!/usr/bin/env bash
# weft-perf --calibrate end to end: it writes a tuning file that weft-sim and weft's own tuner
# read; a second run for another link class keeps what the first measured; a bad file or a
# missing launcher is an error that leaves the file alone. Checks what is written, never how
# fast anything is.
#   calibrate.sh <bin folder>
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tune=$work/tune.txt
fail() { echo "calibrate.sh: $*" >&2; exit 1; }

"$bin/weftrun" -n 2 --timeout 240 "$bin/weft-perf" --calibrate "$tune"
for key in shm.latency_us shm.message_us shm.bandwidth_gbps@65536 shm.bandwidth_gbps@16777216 \
           reduce_gbps reduce_gbps@1048576 reduce_gbps.bfloat16 copy_gbps@16777216 host.cores; do
  grep -q "^$key = [0-9]" "$tune" || fail "$key is not in the tuning file"
done
shm_before=$(grep '^shm\.' "$tune")

# UCX between the processes of this host: its own keys, the shared-memory ones kept.
WEFT_SHM_DISABLE=1 "$bin/weftrun" -n 2 --timeout 240 "$bin/weft-perf" --calibrate "$tune"
grep -q '^ucx.bandwidth_gbps@1048576 = [0-9]' "$tune" || fail "the ucx run wrote no ucx curve"
[[ $(grep '^shm\.' "$tune") == "$shm_before" ]] || fail "the ucx run changed the shm keys"

# More ranks than cores: only host.switch_us is measured, on top of the file. (Skipped where
# that would take more than 5 ranks.)
cores=$(nproc)
if (( cores <= 4 )); then
  "$bin/weftrun" -n $((cores + 1)) --timeout 240 "$bin/weft-perf" --calibrate "$tune" \
    | tee "$work/over.txt"
  grep -q "host.switch_us = " "$work/over.txt" || fail "the oversubscribed run said nothing"
  [[ $(grep '^shm\.' "$tune") == "$shm_before" ]] || fail "the oversubscribed run changed shm"
  # Without a calibration at one rank per core to build on, it is an error.
  if "$bin/weftrun" -n $((cores + 1)) --timeout 240 "$bin/weft-perf" --calibrate \
      "$work/fresh.txt" > "$work/fresh.log" 2>&1; then
    fail "an oversubscribed calibration without a base was accepted"
  fi
  grep -q "first" "$work/fresh.log" || fail "no advice: $(cat "$work/fresh.log")"
fi

# The cost model and the runtime read it.
"$bin/weft-sim" --ranks 4 --tune-file "$tune" all_reduce -b 64K -e 1M -f 4 | tee "$work/sim.txt"
grep -q "cores [0-9]" "$work/sim.txt" || fail "weft-sim did not read host.cores"
WEFT_TUNE_FILE=$tune WEFT_ALGO='allreduce:^native' "$bin/weftrun" -n 3 --timeout 240 \
  "$bin/weft-perf" all_reduce -b 8 -e 1M -f 8 -c 1 -n 2 | tee "$work/perf.txt"
grep -q "Out of bounds values : 0 OK" "$work/perf.txt" || fail "allreduce with the file failed"

# A file that is not a tuning file: refused before measuring, and left as it was.
echo "not a tuning file" > "$work/bad.txt"
if "$bin/weftrun" -n 2 --timeout 240 "$bin/weft-perf" --calibrate "$work/bad.txt" \
    > "$work/bad.log" 2>&1; then
  fail "a bad tuning file was accepted"
fi
grep -q "bad.txt" "$work/bad.log" || fail "the error does not name the file: $(cat "$work/bad.log")"
[[ $(cat "$work/bad.txt") == "not a tuning file" ]] || fail "the bad file was overwritten"

# A file that cannot be written: exit status 1 and a message naming it, before measuring.
status=0
"$bin/weftrun" -n 2 --timeout 240 "$bin/weft-perf" --calibrate "$work/missing/dir/t.txt" \
  > "$work/unwritable.log" 2>&1 || status=$?
[[ $status != 0 ]] || fail "writing into a missing folder succeeded"
grep -q "missing/dir/t.txt: cannot write it" "$work/unwritable.log" ||
  fail "no message for an unwritable file: $(cat "$work/unwritable.log")"
! grep -q "^# host:" "$work/unwritable.log" || fail "it measured before finding the file unwritable"

# Threads of one process are not what the model describes: a launcher is required.
status=0
"$bin/weft-perf" --calibrate "$work/t.txt" > "$work/threads.log" 2>&1 || status=$?
[[ $status == 2 ]] || fail "without a launcher: exit status $status, expected 2"
grep -q "launcher" "$work/threads.log" || fail "without a launcher: $(cat "$work/threads.log")"
echo "calibrate.sh: ok"
