#!/usr/bin/python3
"""Data-parallel training of a small MLP on synthetic data with torch's DistributedDataParallel,
over backend "weft" or "gloo" (--backend).

Run under torchrun (or anything that sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):

    PYTHONPATH=build/python torchrun --nproc_per_node 4 examples/torch_ddp.py --backend weft
    torchrun --nproc_per_node 4 examples/torch_ddp.py --backend gloo

Every rank builds the same model (same seed) and trains on its own shard of a synthetic
regression problem; DDP averages the gradients with allreduce. With the same data, "weft" and
"gloo" must end with the same parameters (tests/integration/torch/ddp_test.py checks that).
--save writes rank 0's final parameters (torch.save of the state dict).
"""
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def make_model(seed=0):
    """A small MLP, identical on every rank for the same seed."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 1))


def batch(rank, step, size=16):
    """Rank `rank`'s batch at `step`: inputs and targets of a fixed noisy linear function."""
    g = torch.Generator().manual_seed(7919 * step + rank)
    x = torch.randn(size, 32, generator=g)
    w = torch.linspace(-1.0, 1.0, 32).unsqueeze(1)
    y = x @ w + 0.1 * torch.randn(size, 1, generator=g)
    return x, y


def train(steps, process_group=None, seed=0, log=None, lr=0.02, momentum=0.0):
    """Trains make_model(seed) for `steps` steps of SGD with DDP over `process_group` (None:
    the default group); returns the trained (unwrapped) model and the last loss."""
    model = make_model(seed)
    ddp = DistributedDataParallel(model, process_group=process_group)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=momentum)
    rank = dist.get_rank(process_group)
    loss = None
    for step in range(steps):
        x, y = batch(rank, step)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        optimizer.step()
        if log is not None and (step % 5 == 0 or step == steps - 1):
            log(f"step {step:3d}: loss {loss.item():.6f}")
    return model, loss.item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["weft", "gloo"], default="weft")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--save", help="write rank 0's final parameters here")
    args = parser.parse_args()
    if args.backend == "weft":
        import weft_torch  # noqa: F401  (registers the backend)
    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    log = (lambda text: print(f"[{args.backend}] {text}", flush=True)) if rank == 0 else None
    model, loss = train(args.steps, log=log)
    if rank == 0:
        print(f"[{args.backend}] {dist.get_world_size()} processes, {args.steps} steps: final "
              f"loss {loss:.6f}", flush=True)
        if args.save:
            torch.save(model.state_dict(), args.save)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
