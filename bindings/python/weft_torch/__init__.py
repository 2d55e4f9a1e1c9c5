"""weft's backend for torch.distributed.

``import weft_torch`` registers the backend "weft"; then::

    torch.distributed.init_process_group("weft", rank=rank, world_size=world_size)

CPU tensors of dtypes int8, uint8, bool, int32, int64, float16, bfloat16, float32, float64,
complex64 and complex128; allreduce (SUM, AVG, PRODUCT, MIN, MAX, PREMUL_SUM), broadcast,
reduce, all_gather (and _allgather_base / all_gather_into_tensor), reduce_scatter (and
_reduce_scatter_base), all_to_all and all_to_all_single (even or uneven splits), gather,
scatter, send, recv, batch_isend_irecv, barrier, and groups from new_group. Every operation
runs asynchronously on a weft host stream; works have futures (DDP uses them).

The rendezvous goes through torch's store (rank 0 of each group puts a weft unique id there);
everything else -- bootstrap, shared memory within a host, UCX between hosts -- is weft's.
"""
import torch.distributed as _dist

from . import _C

__all__ = ["BACKEND", "supported_dtypes", "weft_version"]

BACKEND = "weft"


def _register():
    # Registering twice raises in torch; a second import (or importlib.reload) must not.
    if BACKEND.upper() in getattr(_dist.Backend, "_plugins", {}):
        return
    _dist.Backend.register_backend(BACKEND, _C.create_process_group)


_register()


def supported_dtypes():
    """The torch dtypes the backend supports, by name."""
    return list(_C.supported_dtypes())


def weft_version():
    """weft's version as (major, minor, patch)."""
    v = _C.weft_version()
    return (v // 10000, v // 100 % 100, v % 100)
