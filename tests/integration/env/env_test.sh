#!/usr/bin/env bash
# WEFT_DEBUG / WEFT_DEBUG_SUBSYS / WEFT_DEBUG_FILE reach the log (and the path each collective
# takes is in it), WEFT_SHM_SLOT_BYTES the segment, WEFT_SHM_CMA_COST the choice of CMA, and a
# bad WEFT_* value is a clear error at init, naming the variable.
set -euo pipefail
weftrun=$1 smoke=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# INFO lines of the INIT subsystem go to one file per process (%p: the pid).
WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=INIT WEFT_DEBUG_FILE="$work/log.%p" \
  "$weftrun" -n 2 --timeout 60 "$smoke" >/dev/null
logs=("$work"/log.*)
[[ ${#logs[@]} -ge 2 ]] || { echo "expected a log file per rank, got: ${logs[*]}"; exit 1; }
grep -q "WEFT INFO rank 0 of 2: ready" "$work"/log.* || { echo "no INIT line"; cat "$work"/log.*; exit 1; }
# ... and nothing of other subsystems.
if grep -v " INIT\| rank [0-9]* of [0-9]*: ready" "$work"/log.* | grep -q "WEFT INFO .*NET"; then
  echo "a NET line leaked through WEFT_DEBUG_SUBSYS=INIT"; exit 1
fi

# The choice of each collective's path is logged at INFO (TUNE): a communicator of one rank
# copies, two ranks on one host take the native shared-memory code.
WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TUNE \
  "$weftrun" -n 1 --timeout 60 "$smoke" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
grep -q "AllReduce runs as a copy (one rank)" "$work/out" ||
  { echo "1 rank: no 'AllReduce runs as a copy (one rank)' in the log:"; cat "$work/out"; exit 1; }
WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=TUNE \
  "$weftrun" -n 2 --timeout 60 "$smoke" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
grep -q "AllReduce runs as shared memory (native)" "$work/out" ||
  { echo "2 ranks: no 'AllReduce runs as shared memory (native)':"; cat "$work/out"; exit 1; }

# WEFT_SHM_SLOT_BYTES sizes the segment's slots (the log says so), and the job still works.
WEFT_SHM_SLOT_BYTES=65536 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=SHM \
  "$weftrun" -n 2 --timeout 60 "$smoke" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
grep -q "slots of 65536" "$work/out" || { echo "WEFT_SHM_SLOT_BYTES=65536 not in the log:"; cat "$work/out"; exit 1; }

# WEFT_SHM_CMA_COST replaces the set-up's measurement of CMA (the log says so).
WEFT_SHM_CMA_COST=7.5 WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=SHM \
  "$weftrun" -n 2 --timeout 60 "$smoke" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
if grep -q "CMA from rank .* refused" "$work/out"; then
  echo "env: CMA refused here, WEFT_SHM_CMA_COST not checked"
else
  grep -q "costs 7.50 memcpys here (median of 2 ranks, WEFT_SHM_CMA_COST)" "$work/out" ||
    { echo "WEFT_SHM_CMA_COST=7.5 not in the log:"; cat "$work/out"; exit 1; }
fi

# A bad value is an error at init that names the variable.
for bad in "WEFT_TIMEOUT_MS=soon" "WEFT_DEBUG=LOUD" "WEFT_DEBUG_SUBSYS=INIT,BOGUS" "WEFT_CHUNK_BYTES=3" \
           "WEFT_SHM_SLOT_BYTES=100" "WEFT_SHM_CMA_COST=cheap" "WEFT_SHM_CMA_COST=0" \
           "WEFT_SHM_SPREAD=2" "WEFT_SHM_TUNE=yes"; do
  if env "$bad" "$weftrun" -n 2 --timeout 60 "$smoke" >"$work/out" 2>&1; then
    echo "$bad: the job succeeded"; exit 1
  fi
  grep -q "${bad%%=*}" "$work/out" || { echo "$bad: message does not name it:"; cat "$work/out"; exit 1; }
done
echo "env: ok"
