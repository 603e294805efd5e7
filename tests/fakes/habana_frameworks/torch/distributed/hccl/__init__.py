"""Double of ``habana_frameworks.torch.distributed.hccl``: the ``"hccl"`` backend, for HPU tensors only.

The real HCCL backend is C++ code talking to Gaudi's network engines. As the 1.19 bridge does, the double
registers ``"hccl"`` with ``devices=["hpu"], extended_api=True`` (C14): a collective on host tensors in an
hccl-only group fails in torch ("No backend type associated with device type cpu"). Underneath, each
group's HPU backend is a ``ProcessGroupGloo``; a collective on the double's HPU tensors reaches their
``__torch_dispatch__`` (``habana_frameworks._tensor``), which runs it on the host tensors inside through
``host_group`` (a twin group whose CPU backend is that same gloo backend), so gloo only sees host tensors.

Importing it (which any bridge import does, C13) runs the bridge's environment set-up, as
``hccl/__init__.py`` does at import: ``int(PT_HPU_LAZY_MODE)`` (a non-integer raises ValueError),
``PT_HPU_ENABLE_LAZY_COLLECTIVES`` read once, Open MPI's rank variables copied when all three are set and
torch's are not, ``MASTER_ADDR``/``MASTER_PORT`` defaulted (localhost / 12345) unless torch's three rank
variables were all set before, ``HLS_MODULE_ID`` set from ``LOCAL_RANK`` (the ``LOCAL_RANK``-th entry of
``HABANA_VISIBLE_MODULES`` when set) if unset and ``WORLD_SIZE`` is not 1, and ``ID`` set to the rank.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist

import habana_frameworks.torch.core  # noqa: F401  (the backend lives in the bridge, which this loads)
from habana_frameworks._cards import MODULE_ENV, VISIBLE_ENV, acquire
from habana_frameworks._double import record

_LAZY_MODE = int(os.environ.get("PT_HPU_LAZY_MODE", "1"))
LAZY_COLLECTIVES = os.environ.get("PT_HPU_ENABLE_LAZY_COLLECTIVES", "False").lower() in ("true", "1")
_OMPI_TO_TORCH = {
    "OMPI_COMM_WORLD_LOCAL_RANK": "LOCAL_RANK",
    "OMPI_COMM_WORLD_SIZE": "WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK": "RANK",
}
# id(group) -> (the group, its twin). The group is held, so no later group can reuse its id.
_HOST_GROUPS: dict[int, tuple[dist.ProcessGroup, dist.ProcessGroup]] = {}


def _setup_environment_from_mpi() -> None:
    if all(key in os.environ for key in _OMPI_TO_TORCH.values()):
        return
    if all(key in os.environ for key in _OMPI_TO_TORCH):
        for src, dst in _OMPI_TO_TORCH.items():
            os.environ[dst] = os.environ[src]
    if os.getenv("MASTER_ADDR") is None:
        os.environ["MASTER_ADDR"] = "localhost"
    if os.getenv("MASTER_PORT") is None:
        os.environ["MASTER_PORT"] = "12345"


def _setup_module_id(local_rank: int, world_size: int) -> None:
    if MODULE_ENV in os.environ or local_rank == -1 or world_size == 1:
        return
    if VISIBLE_ENV in os.environ:
        visible = os.environ[VISIBLE_ENV].split(",")
        assert local_rank < len(visible), f"There is not enough devices available for local_rank={local_rank}"
        os.environ[MODULE_ENV] = visible[local_rank]
        return
    os.environ[MODULE_ENV] = str(local_rank)


def initialize_distributed_hpu() -> tuple[int, int, int]:
    _setup_environment_from_mpi()
    world_size = int(os.getenv("WORLD_SIZE", 1))
    rank = int(os.getenv("RANK", -1))
    local_rank = int(os.environ.get("LOCAL_RANK", -1))
    _setup_module_id(local_rank, world_size)
    if rank != -1:
        os.environ["ID"] = str(rank)
    record("hccl.env", f"world_size={world_size} rank={rank} local_rank={local_rank}")
    return world_size, rank, local_rank


def _create_backend(backend_opts: Any, pg_opts: Any) -> Any:
    rank, size = backend_opts.group_rank, backend_opts.group_size
    record("hccl.create_backend", f"rank={rank} world_size={size} (gloo underneath)")
    acquire()  # a rank's collectives run on its own card
    return dist.ProcessGroupGloo(backend_opts.store, rank, size, backend_opts.timeout)


def host_group(group: dist.ProcessGroup) -> dist.ProcessGroup:
    """A twin of ``group`` whose CPU backend is ``group``'s HPU backend: what runs a collective on the host
    tensors inside HPU tensors (the double's own API)."""
    cached = _HOST_GROUPS.get(id(group))
    if cached is not None:
        return cached[1]
    backend = group._get_backend(torch.device("hpu"))
    twin = dist.ProcessGroup(group.rank(), group.size())
    twin._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, backend)
    twin._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
    _HOST_GROUPS[id(group)] = (group, twin)
    return twin


initialize_distributed_hpu()
dist.Backend.register_backend("hccl", _create_backend, extended_api=True, devices=["hpu"])
record("hccl.import", "backend hccl registered for hpu (gloo underneath)")
