#!/usr/bin/env bash
# in_cluster.sh NAME K [--rate RATE] [--timeout S] [--expect-output REGEX] -- COMMAND...
#
# Brings up a test-bed cluster of K hosts (scripts/netns-cluster.sh) named NAME-<pid>, so that
# the same test from two build trees or a rerun never shares one, runs COMMAND (in the root
# namespaces; it enters the hosts itself) with "{cluster}" in its arguments replaced by the
# cluster's name and NETNS_CLUSTER set to the script, and tears the cluster down on every way
# out. COMMAND is killed after S seconds (default 150), below ctest's own timeout, so that the
# teardown always runs. Exits with COMMAND's status; 77 (ctest SKIP_RETURN_CODE) with a message
# when this machine cannot build the cluster (not root, no ip, unshare or nsenter).
# --expect-output: COMMAND's output (stdout and stderr) must also match the extended regular
# expression REGEX on some line, or the test fails (exit 1). May be given several times: every
# REGEX must match.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cluster_script=$(cd "$here/../../../scripts" && pwd)/netns-cluster.sh

name=$1 k=$2
shift 2
rate="" limit=150 expect=()
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --expect-output) expect+=("$2"); shift 2 ;;
    *) echo "in_cluster.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
shift  # --

if [[ $(id -u) != 0 ]]; then
  echo "SKIPPED: the multi-host test bed needs root (network namespaces)"; exit 77
fi
for tool in ip unshare nsenter tc; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: no '$tool' (iproute2, util-linux)"; exit 77; }
done

# A kernel or container without network namespaces: say so, do not fail. (Past this probe, a
# cluster that cannot be built is a failure.)
if ! unshare --net --ipc --uts --mount true 2>/dev/null; then
  echo "SKIPPED: this kernel or container does not allow new namespaces (unshare --net failed)"
  exit 77
fi

cluster=$name-$$
log=$(mktemp)
down() { "$cluster_script" down "$cluster"; rm -f "$log"; }
trap down EXIT
trap 'exit 143' TERM INT
"$cluster_script" up "$cluster" "$k" $rate || { echo "in_cluster: cannot build the cluster"; exit 1; }

args=()
for a in "$@"; do args+=("${a//\{cluster\}/$cluster}"); done
export NETNS_CLUSTER=$cluster_script
echo "in_cluster: $k host(s) as '$cluster'${rate:+, links shaped to $rate}: ${args[*]}"
timeout --kill-after=5 "$limit" "${args[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[[ $status == 124 ]] && echo "in_cluster: '${args[*]}' still ran after $limit s: killed"
if [[ $status == 0 ]]; then
  for regex in "${expect[@]}"; do
    grep -Eq -- "$regex" "$log" && continue
    echo "in_cluster: the output has no line matching '$regex'"
    exit 1
  done
fi
exit $status
