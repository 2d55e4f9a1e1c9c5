"""Every operation of backend "weft" against a reference computed here, for every dtype.

One rank of a job started by spawn_ranks.py (torchrun-style variables). Inputs are small
integers chosen so that every partial result is exact in every dtype, so any reduction order
must give the reference bit for bit; each rank computes every rank's input itself, and the
reference with plain float64/int64/complex128 arithmetic.
"""
import math
import os

import torch
import torch.distributed as dist

import weft_torch
from rank_main import run_rank  # noqa: E402

RANK = int(os.environ["RANK"])
N = int(os.environ["WORLD_SIZE"])
R = dist.ReduceOp

DTYPES = [torch.int8, torch.uint8, torch.bool, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]
FLOATING = {torch.float16, torch.bfloat16, torch.float32, torch.float64}
COMPLEX = {torch.complex64, torch.complex128}
SIGNED = {torch.int8, torch.int32, torch.int64} | FLOATING | COMPLEX


class _PreMul2:
    """PREMUL_SUM by 2 (torch.distributed._make_nccl_premul_sum(2.0)); test with `is`."""

    def __repr__(self):
        return "PREMUL_SUM(2)"


PREMUL = _PreMul2()

checks = 0


def wide(dtype):
    """The dtype references are computed in."""
    if dtype in COMPLEX:
        return torch.complex128
    if dtype in FLOATING:
        return torch.float64
    return torch.int64


def make(rank, count, dtype, kind, salt):
    """Rank `rank`'s input: small integers (prod: 1, -1 or 2; sums: -3..3), bools for bool."""
    g = torch.Generator().manual_seed(1000003 * salt + 7919 * rank + count)
    if dtype == torch.bool:
        return torch.randint(0, 2, (count,), generator=g).bool()
    if kind == "prod":
        choices = torch.tensor([1, 2] if dtype not in SIGNED else [1, -1, 2])
        v = choices[torch.randint(0, len(choices), (count,), generator=g)]
    else:
        low = 0 if dtype not in SIGNED else -3
        v = torch.randint(low, 4, (count,), generator=g)
    if dtype in COMPLEX:
        w = torch.randint(-3, 4, (count,), generator=g)
        return torch.complex(v.double(), w.double()).to(dtype)
    return v.to(dtype)


def check(name, got, want):
    global checks
    checks += 1
    if got.dtype != want.dtype or not torch.equal(got, want):
        diff = (got != want).nonzero()[:5].flatten().tolist()
        raise AssertionError(f"rank {RANK}: {name}: wrong at {diff}: got {got.flatten()[:8]} "
                             f"want {want.flatten()[:8]}")


def reference(inputs, op, dtype):
    if dtype == torch.bool and op is not PREMUL:
        stack = torch.stack([t.to(torch.int64) for t in inputs])
        out = stack.amax(0) if op in (R.SUM, R.MAX) else stack.amin(0)
        return out.bool()
    stack = torch.stack([t.to(wide(dtype)) for t in inputs])
    if op is PREMUL:
        out = (stack * 2).sum(0)
    elif op == R.SUM:
        out = stack.sum(0)
    elif op == R.PRODUCT:
        out = stack.prod(0)
    elif op == R.MAX:
        out = stack.amax(0)
    elif op == R.MIN:
        out = stack.amin(0)
    elif op == R.AVG:
        # Floating types: every input times 1/n, then summed (exact for n = 2, 4); integers:
        # the sum divided with truncation.
        if dtype in FLOATING or dtype in COMPLEX:
            out = (stack * (1.0 / N)).sum(0)
        else:
            out = torch.div(stack.sum(0), N, rounding_mode="trunc")
    return out.to(dtype)


def ops_for(dtype):
    if dtype == torch.bool:
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX]
    if dtype in COMPLEX:
        return [R.SUM, R.AVG, PREMUL]
    ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.AVG]
    return ops + [PREMUL] if dtype in FLOATING else ops


def torch_op(op):
    return dist._make_nccl_premul_sum(2.0) if op is PREMUL else op


def test_allreduce(dtype, count, salt):
    for i, op in enumerate(ops_for(dtype)):
        kind = "prod" if op is not PREMUL and op == R.PRODUCT else "sum"
        inputs = [make(r, count, dtype, kind, salt + i) for r in range(N)]
        t = inputs[RANK].clone()
        dist.all_reduce(t, op=torch_op(op))
        check(f"all_reduce {dtype} {op} x{count}", t, reference(inputs, op, dtype))


def test_allreduce_coalesced(dtype, count, salt):
    # Several tensors of one dtype and different shapes in one call.
    shapes = [(count,), (2, count), (3,)]
    inputs = [[make(r, math.prod(shape), dtype, "sum", salt + 5 * i).reshape(shape)
               for i, shape in enumerate(shapes)] for r in range(N)]
    mine = [t.clone() for t in inputs[RANK]]
    dist.all_reduce_coalesced(mine, op=R.SUM)
    for i in range(len(shapes)):
        want = reference([inputs[r][i].flatten() for r in range(N)], R.SUM, dtype)
        check(f"all_reduce_coalesced {dtype} tensor {i}", mine[i], want.reshape(shapes[i]))


def test_reduce(dtype, count, salt):
    root = 1 % N
    for op in [R.SUM] if dtype in COMPLEX else [R.SUM, R.MAX]:
        inputs = [make(r, count, dtype, "sum", salt) for r in range(N)]
        t = inputs[RANK].clone()
        dist.reduce(t, dst=root, op=op)
        if RANK == root:
            check(f"reduce {dtype} {op}", t, reference(inputs, op, dtype))


def test_broadcast(dtype, count, salt):
    root = N - 1
    t = make(RANK, count, dtype, "sum", salt)
    dist.broadcast(t, src=root)
    check(f"broadcast {dtype}", t, make(root, count, dtype, "sum", salt))


def test_allgather(dtype, count, salt):
    inputs = [make(r, count, dtype, "sum", salt) for r in range(N)]
    outs = [torch.empty(count, dtype=dtype) for _ in range(N)]
    dist.all_gather(outs, inputs[RANK])
    for r in range(N):
        check(f"all_gather {dtype} from {r}", outs[r], inputs[r])
    flat = torch.empty(N * count, dtype=dtype)
    dist.all_gather_into_tensor(flat, inputs[RANK])  # _allgather_base in torch 1.13
    check(f"all_gather_into_tensor {dtype}", flat, torch.cat(inputs))


def test_reduce_scatter(dtype, count, salt):
    for op in [R.SUM] if dtype in COMPLEX else [R.SUM, R.MAX]:
        # inputs[r][p]: rank r's block for rank p
        inputs = [[make(r, count, dtype, "sum", salt + 17 * p) for p in range(N)] for r in range(N)]
        want = reference([inputs[r][RANK] for r in range(N)], op, dtype)
        out = torch.empty(count, dtype=dtype)
        dist.reduce_scatter(out, [t.clone() for t in inputs[RANK]], op=op)
        check(f"reduce_scatter {dtype} {op}", out, want)
        out2 = torch.empty(count, dtype=dtype)
        dist.reduce_scatter_tensor(out2, torch.cat(inputs[RANK]), op=op)  # _reduce_scatter_base
        check(f"reduce_scatter_tensor {dtype} {op}", out2, want)


def test_alltoall(dtype, count, salt):
    # Even: every block `count` long.
    blocks = [[make(r, count, dtype, "sum", salt + 31 * p) for p in range(N)] for r in range(N)]
    out = torch.empty(N * count, dtype=dtype)
    dist.all_to_all_single(out, torch.cat(blocks[RANK]))
    check(f"all_to_all_single even {dtype}", out, torch.cat([blocks[r][RANK] for r in range(N)]))
    # Uneven: rank r sends r + p + 1 rows of 3 to rank p.
    rows = lambda r, p: r + p + 1  # noqa: E731
    uneven = [[make(r, 3 * rows(r, p), dtype, "sum", salt + p).reshape(-1, 3) for p in range(N)]
              for r in range(N)]
    want = torch.cat([uneven[r][RANK] for r in range(N)])
    got = torch.empty_like(want)
    dist.all_to_all_single(got, torch.cat(uneven[RANK]),
                           output_split_sizes=[rows(r, RANK) for r in range(N)],
                           input_split_sizes=[rows(RANK, p) for p in range(N)])
    check(f"all_to_all_single uneven {dtype}", got, want)
    outs = [torch.empty_like(uneven[r][RANK]) for r in range(N)]
    dist.all_to_all(outs, [t.clone() for t in uneven[RANK]])
    for r in range(N):
        check(f"all_to_all list {dtype} from {r}", outs[r], uneven[r][RANK])


def test_gather_scatter(dtype, count, salt):
    inputs = [make(r, count, dtype, "sum", salt) for r in range(N)]
    gathered = [torch.empty(count, dtype=dtype) for _ in range(N)] if RANK == 0 else None
    dist.gather(inputs[RANK], gathered, dst=0)
    if RANK == 0:
        for r in range(N):
            check(f"gather {dtype} from {r}", gathered[r], inputs[r])
    root = N - 1
    out = torch.empty(count, dtype=dtype)
    dist.scatter(out, [t.clone() for t in inputs] if RANK == root else None, src=root)
    check(f"scatter {dtype}", out, inputs[RANK])


def test_point_to_point(dtype, count, salt):
    nxt, prv = (RANK + 1) % N, (RANK - 1) % N
    mine = make(RANK, count, dtype, "sum", salt)
    got = torch.empty(count, dtype=dtype)
    # A ring: everybody sends and receives at once (batch_isend_irecv groups them).
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, nxt),
                                   dist.P2POp(dist.irecv, got, prv)])
    for q in reqs:
        q.wait()
    check(f"batch_isend_irecv {dtype}", got, make(prv, count, dtype, "sum", salt))
    # Blocking pairs, in an order that cannot deadlock: 0 -> 1 -> ... -> n-1 -> 0.
    token = torch.empty(count, dtype=dtype)
    if RANK == 0:
        dist.send(mine, nxt)
        dist.recv(token, prv)
        check(f"send/recv {dtype}", token, make(prv, count, dtype, "sum", salt))
    else:
        dist.recv(token, prv)
        check(f"send/recv {dtype}", token, make(prv, count, dtype, "sum", salt))
        dist.send(mine, nxt)


def main():
    dist.init_process_group("weft", rank=RANK, world_size=N)
    assert dist.get_backend() == "weft", dist.get_backend()
    tests = [test_allreduce, test_allreduce_coalesced, test_reduce, test_broadcast, test_allgather, test_reduce_scatter,
             test_alltoall, test_gather_scatter, test_point_to_point]
    for d, dtype in enumerate(DTYPES):
        for t, test in enumerate(tests):
            for count in (1, 37):
                test(dtype, count, 100 * d + 10 * t + count)
        dist.barrier()
    # Larger buffers take other paths (staged, chunked): float32 and bfloat16 sums.
    for dtype in (torch.float32, torch.bfloat16):
        test_allreduce(dtype, 300_001, 7)
        test_reduce_scatter(dtype, 70_001, 8)
        test_allgather(dtype, 70_001, 9)
    dist.barrier()
    print(f"rank {RANK}: {checks} checks of {len(DTYPES)} dtypes passed", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    run_rank(main)
