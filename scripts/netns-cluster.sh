#!/usr/bin/env bash
# A cluster of K "hosts" on this machine, for multi-host tests and benchmarks (root only).
#
#   netns-cluster.sh up    PREFIX K [RATE]   make (or keep) hosts 0..K-1; RATE: tc rate, e.g. 1gbit
#   netns-cluster.sh down  PREFIX            kill what runs there, remove everything PREFIX made
#   netns-cluster.sh exec  PREFIX H CMD...   run CMD on host H (all of its namespaces)
#   netns-cluster.sh agent PREFIX ADDR CMD... the same, host named by its address: Open MPI's
#                                            rsh agent (--mca plm_rsh_agent "... agent PREFIX")
#   netns-cluster.sh addr  PREFIX H          print host H's address
#
# Host H is a network namespace PREFIX-hH plus a persistent IPC, UTS and mount namespace bound
# under /run/weft-ns/ (own hostname PREFIX-hH, '_' and '.' made '-', own System V IPC, own /dev/shm and a /sys that
# shows its own network), so that processes on different hosts can share no memory, as on real
# hosts, while every process of one host shares all of it. Each host has one interface, eth0,
# with 10.212.0.(H+2)/24, a veth into a bridge that lives in its own namespace PREFIX-br. The
# addresses exist only inside these namespaces (every cluster has its own bridge, so clusters
# with different prefixes never see each other). RATE shapes both directions of every host's
# link with tc tbf (this kernel has no netem: no delay). `up` is idempotent: an existing cluster
# with the same prefix is torn down first. Callers trap `down`.
set -euo pipefail

NSDIR=/run/weft-ns
SUBNET=10.212.0

die() { echo "netns-cluster: $*" >&2; exit 2; }

[[ $(id -u) == 0 ]] || die "needs root"
command -v ip >/dev/null || die "needs ip (iproute2)"
command -v unshare >/dev/null && command -v nsenter >/dev/null || die "needs unshare and nsenter (util-linux)"

check_prefix() {
  # Interface names stay inside the namespaces (eth0, vH), so only the namespace names carry it.
  [[ $1 =~ ^[A-Za-z0-9_.-]{1,40}$ ]] || die "bad prefix '$1' (letters, digits, _ . -; at most 40)"
}

host_addr() { echo "$SUBNET.$(($2 + 2))"; }

# Persistent namespaces are bind mounts of /proc/PID/ns/*; that needs a private mount to hold them.
# Clusters come up in parallel (ctest -j): one of them makes the mount, under a lock.
ensure_nsdir() {
  mkdir -p "$NSDIR"
  (
    flock 9
    if ! findmnt -n "$NSDIR" >/dev/null 2>&1; then
      mount --bind "$NSDIR" "$NSDIR"
    fi
    mount --make-private "$NSDIR"
  ) 9>"$NSDIR.lock"
}

hosts_of() {  # host indexes of cluster $1 that exist now
  ip netns list | awk '{print $1}' | sed -n "s/^$1-h\([0-9][0-9]*\)\$/\1/p" | sort -n
}

down() {
  local p=$1 h ns pids pid
  for h in $(hosts_of "$p"); do
    ns=$p-h$h
    # Every process in the host: those that entered its network namespace; the rest of its
    # namespaces die with them.
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n $pids ]] && kill -KILL $pids 2>/dev/null || true
  done
  for h in $(hosts_of "$p"); do
    for kind in ipc uts mnt; do
      if [[ -e $NSDIR/$p-h$h.$kind ]]; then
        umount "$NSDIR/$p-h$h.$kind" 2>/dev/null || true
        rm -f "$NSDIR/$p-h$h.$kind"
      fi
    done
    ip netns del "$p-h$h" 2>/dev/null || true
  done
  if [[ -f $NSDIR/$p.keeper ]]; then
    pid=$(cat "$NSDIR/$p.keeper")
    # Only our own sleeper (the pid may have been reused).
    [[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == "weft-ns-keeper-$p infinity " ]] &&
      kill -KILL "$pid" 2>/dev/null
    rm -f "$NSDIR/$p.keeper"
  fi
  if ip netns list | awk '{print $1}' | grep -qx "$p-br"; then
    pids=$(ip netns pids "$p-br" 2>/dev/null || true)
    [[ -n $pids ]] && kill -KILL $pids 2>/dev/null || true
    ip netns del "$p-br"
  fi
}

shape() {  # shape NETNS DEV RATE: tbf on DEV's egress
  # burst: a few ms of the rate (at least 64 KiB) so that tbf does not cap below RATE.
  ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3" burst 512kb latency 100ms
}

up() {
  local p=$1 k=$2 rate=${3:-} h ns
  [[ $k =~ ^[0-9]+$ ]] && ((k >= 1 && k <= 200)) || die "K must be 1..200, got '$k'"
  down "$p"
  ensure_nsdir
  # A process that stays in this mount namespace, where the hosts' namespace files are mounted:
  # `exec` from inside a host (mpirun's agent) goes back through it.
  setsid bash -c "exec -a weft-ns-keeper-$p sleep infinity" </dev/null >/dev/null 2>&1 &
  echo $! >"$NSDIR/$p.keeper"
  ip netns add "$p-br"
  ip -n "$p-br" link set lo up
  ip -n "$p-br" link add name br0 type bridge
  ip -n "$p-br" link set br0 up
  for ((h = 0; h < k; h++)); do
    ns=$p-h$h
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link add name eth0 type veth peer name "v$h" netns "$p-br"
    ip -n "$ns" addr add "$(host_addr "$p" "$h")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$p-br" link set "v$h" master br0
    ip -n "$p-br" link set "v$h" up
    if [[ -n $rate ]]; then
      shape "$ns" eth0 "$rate"        # host -> bridge
      shape "$p-br" "v$h" "$rate"     # bridge -> host
    fi
    for kind in ipc uts mnt; do : >"$NSDIR/$ns.$kind"; done
    # Inside: its own hostname, a /sys that lists its own interfaces (UCX and Open MPI read it),
    # and an empty /dev/shm of its own.
    nsenter --net="/run/netns/$ns" unshare --ipc="$NSDIR/$ns.ipc" --uts="$NSDIR/$ns.uts" \
      --mount="$NSDIR/$ns.mnt" --propagation private \
      sh -c "hostname '${ns//[_.]/-}' && mount -t sysfs sysfs /sys && mount -t tmpfs -o mode=1777 tmpfs /dev/shm"
  done
}

enter() {  # enter PREFIX H CMD...
  local p=$1 h=$2 ns
  shift 2
  ns=$p-h$h
  [[ -e $NSDIR/$ns.mnt ]] || die "no host $h in cluster '$p' (run: $0 up $p K)"
  if ! findmnt -n "$NSDIR/$ns.ipc" >/dev/null 2>&1; then
    # Called from inside another host (mpirun's agent): its mount namespace does not see the
    # other hosts' namespace files. They are mounted where `up` ran, which the cluster's
    # keeper process still sees: go there first.
    local keeper
    keeper=$(cat "$NSDIR/$p.keeper" 2>/dev/null) || die "host $h of cluster '$p' is gone"
    [[ $(readlink /proc/self/ns/mnt) != $(readlink "/proc/$keeper/ns/mnt") ]] ||
      die "host $h of cluster '$p' is gone"
    exec nsenter --mount="/proc/$keeper/ns/mnt" -- "$0" exec "$p" "$h" "$@"
  fi
  exec nsenter --net="/run/netns/$ns" --ipc="$NSDIR/$ns.ipc" --uts="$NSDIR/$ns.uts" \
    --mount="$NSDIR/$ns.mnt" -- "$@"
}

cmd=${1:-}
[[ $# -ge 2 ]] || die "usage: $0 up PREFIX K [RATE] | down PREFIX | exec PREFIX H CMD... | agent PREFIX ADDR CMD... | addr PREFIX H"
prefix=$2
check_prefix "$prefix"
case $cmd in
  up) [[ $# -ge 3 ]] || die "usage: $0 up PREFIX K [RATE]"; up "$prefix" "$3" "${4:-}" ;;
  down) down "$prefix" ;;
  exec) [[ $# -ge 4 ]] || die "usage: $0 exec PREFIX H CMD..."; enter "$prefix" "$3" "${@:4}" ;;
  agent)
    # Open MPI calls "AGENT [ssh options] HOST COMMAND...": skip options, map the address or
    # host name to a host index.
    shift 2
    while [[ $# -gt 0 && $1 == -* ]]; do shift; done
    [[ $# -ge 2 ]] || die "agent: no host or command"
    target=$1
    shift
    if [[ $target =~ ^$SUBNET\.([0-9]+)$ ]]; then h=$((BASH_REMATCH[1] - 2))
    elif [[ $target =~ ^$prefix-h([0-9]+)$ ]]; then h=${BASH_REMATCH[1]}
    else die "agent: '$target' is no host of cluster '$prefix'"; fi
    # ssh runs its command through a shell; so do we.
    enter "$prefix" "$h" sh -c "$*" ;;
  addr) [[ $# -ge 3 ]] || die "usage: $0 addr PREFIX H"; host_addr "$prefix" "$3" ;;
  *) die "unknown command '$cmd'" ;;
esac
