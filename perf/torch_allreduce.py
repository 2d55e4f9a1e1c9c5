#!/usr/bin/python3
"""torch.distributed.all_reduce (float32, sum), backend "weft" against "gloo", on one host.

    perf/torch_allreduce.py --build build --ranks 2 4 --reps 5

For each rank count, each of --reps repetitions runs one job per backend (the order alternates
from one repetition to the next, so both see the same machine state on average); every job
sweeps the sizes (8 B to 64 MiB by default), timing --iters back-to-back calls per size after
a warm-up (fewer for large sizes: --budget bytes per size), and reports rank 0's time per call.
The table shows, per size, each backend's median over repetitions and the ratio weft/gloo
(below 1: weft is faster). A benchmark, not a test: it asserts nothing.

Needs /usr/bin/python3 with Debian's torch and weft_torch under <build>/python.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

SIZES = [8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def human(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def worker(args):
    # Under mpirun (perf/multihost_allreduce), the rank comes from Open MPI's environment.
    for ours, ompi in (("RANK", "OMPI_COMM_WORLD_RANK"), ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"),
                       ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")):
        if ours not in os.environ and ompi in os.environ:
            os.environ[ours] = os.environ[ompi]
    import torch
    import torch.distributed as dist
    if args.backend == "weft":
        import weft_torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    # A fresh job's first thousand-odd calls are slow whatever their size (processes still
    # settling onto cores): warm the job up before the first timed size, not only each size.
    one = torch.ones(1)
    for _ in range(args.job_warmup):
        dist.all_reduce(one)
    results = {}
    for size in args.sizes:
        t = torch.ones(max(1, size // 4), dtype=torch.float32)
        iters = max(args.min_iters, min(args.iters, args.budget // max(size, 1)))
        for _ in range(args.warmup):
            dist.all_reduce(t)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        elapsed = time.perf_counter() - start
        # Every rank's time; the slowest is the collective's.
        took = torch.tensor([elapsed / iters], dtype=torch.float64)
        dist.all_reduce(took, op=dist.ReduceOp.MAX)
        results[size] = took.item()
    if rank == 0:
        print("RESULT " + json.dumps(results), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def run_job(args, backend, n):
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(os.path.abspath(args.build), "python") + (
        ":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(n),
               OMP_NUM_THREADS="1")
    argv = [sys.executable, os.path.abspath(__file__), "--worker", "--backend", backend,
            "--iters", str(args.iters), "--min-iters", str(args.min_iters), "--warmup",
            str(args.warmup), "--job-warmup", str(args.job_warmup), "--budget", str(args.budget),
            "--sizes", *[str(s) for s in args.sizes]]
    procs = [subprocess.Popen(argv, env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
             for r in range(n)]
    out = []
    try:
        for p in procs:
            text, _ = p.communicate(timeout=args.timeout)
            out.append(text)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait()
    if any(p.returncode != 0 for p in procs):
        raise SystemExit(f"{backend} job with {n} ranks failed: {[p.returncode for p in procs]}")
    for line in out[0].splitlines():
        if line.startswith("RESULT "):
            return {int(k): v for k, v in json.loads(line[7:]).items()}
    raise SystemExit(f"{backend} job with {n} ranks printed no result")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--iters", type=int, default=200, help="calls timed per size (at most)")
    parser.add_argument("--min-iters", type=int, default=5)
    parser.add_argument("--budget", type=int, default=256 << 20,
                        help="bytes reduced per size and job (fewer calls for large sizes)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls before each size")
    parser.add_argument("--job-warmup", type=int, default=1000,
                        help="untimed 4-byte calls at the start of each job")
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", help="also write the medians here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--backend", choices=["weft", "gloo"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    table = {}
    for n in args.ranks:
        runs = {"weft": [], "gloo": []}
        for rep in range(args.reps):
            order = ["weft", "gloo"] if rep % 2 == 0 else ["gloo", "weft"]
            for backend in order:
                runs[backend].append(run_job(args, backend, n))
            print(f"# {n} ranks: repetition {rep + 1}/{args.reps} done", file=sys.stderr,
                  flush=True)
        table[n] = {size: {b: statistics.median(r[size] for r in runs[b]) for b in runs}
                    for size in args.sizes}
    print(f"# torch.distributed.all_reduce float32 sum, medians of {args.reps} alternating "
          "repetitions (us per call; ratio = weft / gloo)")
    print(f"{'ranks':>5} {'size':>9} {'weft us':>10} {'gloo us':>10} {'ratio':>7}")
    for n, rows in table.items():
        for size, t in rows.items():
            w, g = t["weft"] * 1e6, t["gloo"] * 1e6
            print(f"{n:>5} {human(size):>9} {w:>10.1f} {g:>10.1f} {w / g:>7.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({str(n): {str(s): t for s, t in rows.items()} for n, rows in table.items()},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
