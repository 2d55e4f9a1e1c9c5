"""Backend "weft": asynchronous works and their futures, groups from new_group, unbatched
send/recv exchanges, and the errors a caller gets for what weft cannot do.

One rank of a job started by spawn_ranks.py (torchrun-style variables), 2 or 4 ranks.
"""
import os
import threading

import torch
import torch.distributed as dist

import weft_torch
from rank_main import run_rank  # noqa: E402

RANK = int(os.environ["RANK"])
N = int(os.environ["WORLD_SIZE"])


def expect(condition, what):
    if not condition:
        raise AssertionError(f"rank {RANK}: {what}")


def expect_error(call, *needles):
    try:
        call()
    except RuntimeError as e:
        for needle in needles:
            expect(needle in str(e), f"error '{e}' does not mention '{needle}'")
        return
    raise AssertionError(f"rank {RANK}: no error (expected one mentioning {needles})")


def sum_of_ranks(group_ranks):
    return float(sum(r + 1 for r in group_ranks))


def test_async_works_complete_in_order_with_their_results():
    tensors = [torch.full((1000 + i,), float(RANK + 1)) for i in range(40)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    order = []
    lock = threading.Lock()
    futures = []
    for i, w in enumerate(works):
        def done(fut, i=i):
            with lock:
                order.append(i)
            return fut.value()[0].sum().item()
        futures.append(w.get_future().then(done))
    # Waiting in reverse order must not matter.
    for w in reversed(works):
        expect(w.wait(), "wait() returned False")
        expect(w.is_completed() and w.is_success(), "completed work not successful")
    for i, t in enumerate(tensors):
        expect(torch.all(t == sum_of_ranks(range(N))), f"async all_reduce {i} wrong")
    values = torch.futures.wait_all(futures)
    expect(values == [sum_of_ranks(range(N)) * (1000 + i) for i in range(40)], "future values")
    expect(order == sorted(order) and len(order) == 40, f"futures completed out of order: {order}")
    expect(works[0].result()[0] is tensors[0] or torch.equal(works[0].result()[0], tensors[0]),
           "result() is not the output tensor")


def test_polling_alone_completes_a_work():
    t = torch.full((1 << 20,), float(RANK))
    w = dist.all_reduce(t, async_op=True)
    while not w.is_completed():  # nobody waits: polling (or the completion thread) completes it
        pass
    expect(torch.all(t == float(sum(range(N)))), "polled all_reduce wrong")


def test_a_future_nobody_waits_for_still_completes():
    t = torch.ones(10)
    w = dist.all_reduce(t, async_op=True)
    fired = threading.Event()
    w.get_future().add_done_callback(lambda _: fired.set())
    expect(fired.wait(timeout=120), "the completion thread never completed the future")


def test_an_operation_nobody_touches_still_runs():
    # Rank 0 starts a small all_reduce and then blocks outside weft (on torch's store) until
    # every other rank has finished the same all_reduce, which needs rank 0's part: the
    # operation must run without rank 0 waiting for it, polling it or asking for its future.
    store = dist.distributed_c10d._get_default_store()
    t = torch.full((3,), float(RANK + 1))
    w = dist.all_reduce(t, async_op=True)
    if RANK == 0:
        for r in range(1, N):
            store.get(f"weft_test_untouched_done_{r}")
    else:
        w.wait()
        store.set(f"weft_test_untouched_done_{RANK}", "1")
    w.wait()
    expect(torch.all(t == sum_of_ranks(range(N))), "untouched all_reduce wrong")


def test_unbatched_exchanges_do_not_deadlock():
    # Every rank sends first, then receives: with one stream per group this would wait forever
    # if the send had to finish before the receive starts (16 MiB does not fit a socket buffer).
    peer = RANK ^ 1
    if peer >= N:
        return
    for size in (8, 4 << 20):
        out = torch.full((size,), float(RANK))
        got = torch.empty(size)
        s = dist.isend(out, peer)
        r = dist.irecv(got, peer)
        s.wait()
        r.wait()
        expect(torch.all(got == float(peer)), f"exchange of {size} floats wrong")


def test_new_group():
    evens = list(range(0, N, 2))
    tail = list(range(1, N))  # one rank when N is 2: a group of one
    g_even = dist.new_group(evens)  # every rank calls new_group, members or not
    g_tail = dist.new_group(tail)
    if RANK in evens:  # (torch 1.13 refuses get_backend on a group one is not in)
        expect(dist.get_backend(g_even) == "weft", "subgroup backend")
        t = torch.full((7,), float(RANK + 1))
        dist.all_reduce(t, group=g_even)
        expect(torch.all(t == sum_of_ranks(evens)), "all_reduce in the even group")
        b = torch.full((3,), float(RANK))
        dist.broadcast(b, src=evens[-1], group=g_even)  # a global rank
        expect(torch.all(b == float(evens[-1])), "broadcast in the even group")
    if RANK in tail:
        expect(dist.get_rank(g_tail) == RANK - 1, "group rank in the tail group")
        gathered = [torch.empty(2) for _ in tail]
        dist.all_gather(gathered, torch.full((2,), float(RANK)), group=g_tail)
        expect([g[0].item() for g in gathered] == [float(r) for r in tail],
               "all_gather order in the tail group")
        # Groups interleave with the default one, asynchronously.
        b = torch.full((100,), 2.0)
        wb = dist.all_reduce(b, group=g_tail, async_op=True)
    a = torch.full((100,), 1.0)
    wa = dist.all_reduce(a, async_op=True)
    if RANK in tail:
        wb.wait()
        expect(torch.all(b == 2.0 * len(tail)), "all_reduce in the tail group")
    wa.wait()
    expect(torch.all(a == float(N)), "all_reduce interleaved with a group's")
    dist.destroy_process_group(g_even)
    dist.destroy_process_group(g_tail)


def test_what_weft_cannot_do_is_an_error_not_a_hang():
    expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)), "weft", "Short")
    expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BAND),
                 "BAND")
    expect_error(lambda: dist.all_reduce(torch.ones(4, 4).t()), "contiguous")
    expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.complex64),
                                         op=dist.ReduceOp.MAX), "complex")
    expect_error(lambda: dist.send(torch.ones(1), N + 3), "rank")
    # The group still works afterwards.
    t = torch.ones(3)
    dist.all_reduce(t)
    expect(torch.all(t == float(N)), "all_reduce after refused calls")


def main():
    dist.init_process_group("weft", rank=RANK, world_size=N)
    for test in [test_async_works_complete_in_order_with_their_results,
                 test_polling_alone_completes_a_work,
                 test_a_future_nobody_waits_for_still_completes,
                 test_an_operation_nobody_touches_still_runs,
                 test_unbatched_exchanges_do_not_deadlock,
                 test_new_group,
                 test_what_weft_cannot_do_is_an_error_not_a_hang]:
        test()
        dist.barrier()
        if RANK == 0:
            print(f"ok: {test.__name__}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    run_rank(main)
