"""Double of ``habana_frameworks.torch.distributed.hccl``: the ``"hccl"`` process-group backend.

The real HCCL backend is C++ code talking to Gaudi's network engines. The double registers a backend
named ``"hccl"`` whose every instance is a ``ProcessGroupGloo``, so ``init_process_group(backend="hccl")``
forms a real process group and collectives really run, over gloo. A collective on the double's HPU
tensors is a ``c10d`` op that reaches their ``__torch_dispatch__`` (``habana_frameworks._tensor``), which
runs it on the host tensors inside: gloo only ever sees host tensors.
Like the real module, importing it maps Open MPI's rank variables to torch.distributed's when those are
unset and gives MASTER_ADDR / MASTER_PORT defaults, so both torchrun and mpirun launches work.
"""

from __future__ import annotations

import datetime
import os

import torch.distributed as dist

import habana_frameworks.torch.core  # noqa: F401  (the backend lives in the bridge, which this loads)
from habana_frameworks._cards import acquire
from habana_frameworks._double import record

_OMPI_TO_TORCH = (
    ("OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"),
    ("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "RANK"),
)


def _map_launcher_env() -> None:
    for src, dst in _OMPI_TO_TORCH:
        if dst not in os.environ and src in os.environ:
            os.environ[dst] = os.environ[src]
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "12345")


def _create_backend(
    store: dist.Store, rank: int, world_size: int, timeout: datetime.timedelta
) -> dist.ProcessGroup:
    record("hccl.create_backend", f"rank={rank} world_size={world_size} (gloo underneath)")
    acquire()  # a rank's collectives run on its own card
    return dist.ProcessGroupGloo(store, rank, world_size, timeout)


_map_launcher_env()
# Host tensors only: collectives on HPU tensors reach gloo with the host tensors they hold.
dist.Backend.register_backend("hccl", _create_backend, devices=["cpu"])
record("hccl.import", "backend hccl registered (gloo underneath)")
