"""DDP for 20 steps over backend "weft" ends with the parameters of the same run over "gloo".

One rank of a job started by spawn_ranks.py (torchrun-style variables). The default group is
gloo's; a second group with every rank is weft's. The example's model (examples/torch_ddp.py)
is trained twice from the same seed on the same data, once per group, and the parameters are
compared: gloo and weft may sum in different orders, so they must agree within 1e-6 (plain
SGD, the example's default, keeps rounding differences at the last bits: about 3e-8 here).
"""
import os
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
import torch_ddp  # noqa: E402
import weft_torch  # noqa: E402,F401
from rank_main import run_rank  # noqa: E402

RANK = int(os.environ["RANK"])
N = int(os.environ["WORLD_SIZE"])
STEPS = 20


def main():
    dist.init_process_group("gloo", rank=RANK, world_size=N)
    weft_group = dist.new_group(backend="weft")
    assert dist.get_backend(weft_group) == "weft"
    via_gloo, loss_gloo = torch_ddp.train(STEPS)
    via_weft, loss_weft = torch_ddp.train(STEPS, process_group=weft_group)
    worst = 0.0
    for (name, p), q in zip(via_gloo.named_parameters(), via_weft.parameters()):
        diff = (p.detach() - q.detach()).abs().max().item()
        worst = max(worst, diff)
        if diff > 1e-6:
            raise AssertionError(f"rank {RANK}: {name} differs by {diff:g} after {STEPS} steps")
    # The model really trained (the comparison is not between two untouched models).
    untrained = torch_ddp.make_model()
    moved = max((p.detach() - q).abs().max().item()
                for p, q in zip(via_weft.parameters(), untrained.parameters()))
    if moved < 1e-3:
        raise AssertionError(f"rank {RANK}: parameters barely moved ({moved:g})")
    print(f"rank {RANK}: {STEPS} DDP steps on {N} ranks: weft and gloo parameters agree "
          f"(largest difference {worst:g}; losses {loss_weft:.6f} / {loss_gloo:.6f})",
          flush=True)
    dist.barrier()
    dist.destroy_process_group(weft_group)
    dist.destroy_process_group()


if __name__ == "__main__":
    run_rank(main)
