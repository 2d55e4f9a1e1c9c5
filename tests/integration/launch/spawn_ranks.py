#!/usr/bin/env python3
"""Start N ranks of a program the way a launcher would, and clean up after them.

    spawn_ranks.py -n 4 --style torchrun [--timeout 120] [--env K=V ...] -- prog args...

Styles (the environment each rank gets, on top of this process's own):
  torchrun  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and
            MASTER_PORT (a port free at start-up)
  slurm     SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_NODEID=0,
            SLURM_STEP_TASKS_PER_NODE, SLURM_STEP_ID=0, and MASTER_ADDR/MASTER_PORT (srun without
            PMIx: weft's store)
  plain     nothing but WEFT_SPAWN_PORT (the free port), for programs that set things up
            themselves
--secret-file writes a random secret to a fresh mode-0600 file, sets WEFT_SECRET_FILE to it for
every rank, and removes it at the end.

Several hosts (scripts/netns-cluster.sh): --hosts 2,1 puts ranks 0-1 on host 0 and rank 2 on
host 1 (LOCAL_RANK, LOCAL_WORLD_SIZE and SLURM_NODEID follow), --wrap "CMD {host}" runs each
rank as CMD (split like a shell line, "{host}" replaced) followed by the program, and
--master-addr names rank 0's address as the others reach it.

Faults: --run-when REGEX CMD runs the shell command CMD once, after every rank has printed a
line matching REGEX; --expect-exit CODE makes every rank's exit status CODE the success (a rank
that exits with another status no longer stops the others early; the timeout still does).

"{rank}" and "{port}" in arguments and --env values are replaced per rank. Every rank runs in
its own process group; when one fails (or the timeout passes) the others are killed, group and
all, and this script exits non-zero after every child is reaped. Output lines are prefixed with
"[rank] ". Standard library only.
"""
import argparse
import os
import random
import secrets
import re
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    """A TCP port nobody uses now, below the kernel's ephemeral range: between this pick and
    rank 0's listen, the kernel cannot hand it to some process's outgoing connection (weft's
    and UCX's sockets make many), which a port the kernel picked could be."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.SystemRandom()
    for _ in range(1000):
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port
    raise SystemExit("spawn_ranks: no free port below the ephemeral range")


def host_layout(hosts, n):
    """[(host, local rank, ranks on that host)] per rank, from "2,1" (or one host of n)."""
    counts = [int(c) for c in hosts.split(",")] if hosts else [n]
    if sum(counts) != n or min(counts) < 1:
        raise SystemExit(f"spawn_ranks: --hosts {hosts} does not add up to -n {n}")
    return [(h, local, c) for h, c in enumerate(counts) for local in range(c)]


def rank_environment(style, rank, n, port, where, master):
    host, local, local_n = where
    env = {"WEFT_SPAWN_PORT": str(port)}
    if style == "torchrun":
        env.update(RANK=str(rank), WORLD_SIZE=str(n), LOCAL_RANK=str(local),
                   LOCAL_WORLD_SIZE=str(local_n), MASTER_ADDR=master, MASTER_PORT=str(port))
    elif style == "slurm":
        env.update(SLURM_PROCID=str(rank), SLURM_NTASKS=str(n), SLURM_STEP_NUM_TASKS=str(n),
                   SLURM_LOCALID=str(local), SLURM_NODEID=str(host),
                   SLURM_STEP_TASKS_PER_NODE=str(local_n), SLURM_STEP_ID="0",
                   SLURM_JOB_ID="4242", MASTER_ADDR=master, MASTER_PORT=str(port))
    return env


def kill_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, required=True)
    parser.add_argument("--style", choices=["torchrun", "slurm", "plain"], default="torchrun")
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("--env", action="append", default=[], help="K=V for every rank")
    parser.add_argument("--secret-file", action="store_true")
    parser.add_argument("--hosts", help="ranks per host, e.g. 2,1")
    parser.add_argument("--wrap", default="", help="command before each rank's, {host} replaced")
    parser.add_argument("--master-addr", default="127.0.0.1")
    parser.add_argument("--run-when", nargs=2, metavar=("REGEX", "CMD"))
    parser.add_argument("--expect-exit", type=int, default=0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no program")

    port = free_port()
    secret_file = None
    if args.secret_file:
        fd, secret_file = tempfile.mkstemp(prefix="weft-secret-")
        os.write(fd, secrets.token_hex(32).encode() + b"\n")
        os.close(fd)  # mkstemp makes it 0600
        args.env.append(f"WEFT_SECRET_FILE={secret_file}")
    try:
        return run(args, command, port)
    finally:
        if secret_file:
            os.unlink(secret_file)


def run(args, command, port):
    procs = []
    layout = host_layout(args.hosts, args.n)
    # Children die with us even if we are killed (ctest's timeout): they lead their own process
    # groups, which the cleanup below kills.
    for rank in range(args.n):
        env = dict(os.environ)
        env.update(rank_environment(args.style, rank, args.n, port, layout[rank],
                                    args.master_addr))
        for item in args.env:
            key, _, value = item.partition("=")
            env[key] = value.replace("{rank}", str(rank)).replace("{port}", str(port))
        argv = [a.replace("{rank}", str(rank)).replace("{port}", str(port)) for a in command]
        argv = [w.replace("{host}", str(layout[rank][0])) for w in shlex.split(args.wrap)] + argv
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, start_new_session=True))

    selector = selectors.DefaultSelector()
    partial = {}
    for rank, p in enumerate(procs):
        selector.register(p.stdout, selectors.EVENT_READ, rank)
        partial[rank] = b""

    trigger = re.compile(args.run_when[0]) if args.run_when else None
    seen = set()

    def emit(rank, data, final=False):
        partial[rank] += data
        *lines, partial[rank] = partial[rank].split(b"\n")
        if final and partial[rank]:
            lines.append(partial[rank])
            partial[rank] = b""
        for line in lines:
            text = line.decode(errors="replace")
            sys.stdout.write(f"[{rank}] {text}\n")
            if trigger and rank not in seen and trigger.search(text):
                seen.add(rank)
                if len(seen) == len(procs):
                    sys.stdout.write(f"spawn_ranks: every rank printed /{args.run_when[0]}/; "
                                     f"running: {args.run_when[1]}\n")
                    sys.stdout.flush()
                    done = subprocess.run(args.run_when[1], shell=True)
                    sys.stdout.write(f"spawn_ranks: exit status {done.returncode}\n")
        sys.stdout.flush()

    deadline = time.monotonic() + args.timeout
    failed = None
    try:
        open_streams = len(procs)
        while open_streams > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                failed = f"timed out after {args.timeout:g} s"
                break
            for key, _ in selector.select(timeout=min(left, 0.5)):
                data = os.read(key.fileobj.fileno(), 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    emit(key.data, b"", final=True)
                    open_streams -= 1
                else:
                    emit(key.data, data)
            for rank, p in enumerate(procs):
                if p.poll() not in (None, args.expect_exit) and failed is None:
                    failed = f"rank {rank} exited with status {p.returncode}"
            if failed:
                break
    except KeyboardInterrupt:
        failed = "interrupted"
    finally:
        # Every stream closed: the ranks are ending; give them until the deadline.
        for rank, p in enumerate(procs):
            if failed:
                break
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                failed = f"rank {rank} still runs after closing its output ({args.timeout:g} s)"
            if p.returncode not in (None, args.expect_exit) and not failed:
                failed = f"rank {rank} exited with status {p.returncode}"
        if failed:
            for p in procs:
                kill_group(p, signal.SIGTERM)
            grace = time.monotonic() + 5
            while time.monotonic() < grace and any(p.poll() is None for p in procs):
                time.sleep(0.05)
        for p in procs:
            kill_group(p, signal.SIGKILL)  # stragglers a rank left behind, too
            p.wait()
            try:
                rest = p.stdout.read()
            except (OSError, ValueError):
                rest = b""
            if rest:
                emit(procs.index(p), rest, final=True)
            p.stdout.close()
    if failed:
        print(f"spawn_ranks: {failed}; stopped the other ranks", file=sys.stderr)
        return 1
    if trigger and len(seen) < len(procs):
        print(f"spawn_ranks: ranks {sorted(set(range(len(procs))) - seen)} never printed "
              f"/{args.run_when[0]}/", file=sys.stderr)
        return 1
    bad = [(r, p.returncode) for r, p in enumerate(procs) if p.returncode != args.expect_exit]
    if bad:
        print(f"spawn_ranks: ranks failed: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
