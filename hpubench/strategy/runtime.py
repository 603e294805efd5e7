"""Strategies: how many processes train one model and how they talk.

The worker only sees this interface, so the data-parallel strategy slots in beside the single-device one
without the training step or the measurement changing. Which class runs a cell is declared in
``hpubench.strategy.spec`` (``StrategySpec.runtime``, "module:Class"): :func:`for_cell` imports it there,
so a third-party ``Strategy`` subclass (a DDP with other bucket settings, say) runs through the same worker.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib
import inspect
import os
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from hpubench.accelerators.base import Accelerator
from hpubench.errors import CellSkipped
from hpubench.plan.cell import Cell
from hpubench.strategy import spec as strategies
from hpubench.strategy.pgtimeout import DEFAULT_S, pg_timeout_s
from hpubench.strategy.spec import (
    StrategySpec,
    multi_process_skip_reason,
    strategy_misfits_layout,
    strategy_of,
    strategy_refuses_precision,
)


class Strategy(ABC):
    name: str = ""  # the registered strategy it runs (``for_cell`` sets the spec's name)
    world_size: int = 1
    rank: int = 0
    local_rank: int = 0
    node_rank: int = 0
    threads: int | None = None  # torch intra-op threads this process runs with, once set up
    thread_policy: str | None = None  # the name of the thread policy applied in setup

    @classmethod
    def from_env(cls, cell: Cell, environ: Mapping[str, str] | None = None) -> Strategy:
        """The strategy for ``cell`` in this process; one process needs nothing from the environment."""
        return cls()

    def cell_root_pid(self) -> int:
        """The process whose tree is this cell (the rest of the host is "other" for interference)."""
        return os.getpid()

    @property
    def is_global_zero(self) -> bool:
        return self.rank == 0

    @abstractmethod
    def setup(self, acc: Accelerator) -> None: ...

    def wrap_model(self, model: nn.Module, blocks: Sequence[nn.Module] = ()) -> nn.Module:
        """The model as this strategy trains it; ``blocks`` are its repeated blocks (``Workload.blocks``)."""
        return model

    def facts(self) -> dict[str, Any]:
        """What the wrapping did, for ``runtime["distributed"]`` (nothing for most strategies)."""
        return {}

    @abstractmethod
    def gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` on every rank, in rank order."""

    def from_rank0(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank (the others pass anything, e.g. None)."""
        return self.gather(obj)[0]

    def barrier(self) -> None:
        """Wait for every rank."""

    def teardown(self) -> None:
        """Release what setup took (process groups)."""

    def replica_check(self, model: nn.Module, loss_of: Callable[[nn.Module], torch.Tensor]) -> dict[str, Any]:
        """Evidence that the ranks train one model (``REPLICA_CHECK_ENV``; collective where a strategy
        overrides it). A strategy without its own check says so instead of failing the cell."""
        return {"rank": self.rank, "checked": False, "why": f"strategy {self.name} has no replica check"}

    def describe(self) -> dict[str, Any]:
        """This process's place in the run, for the record."""
        return {
            "rank": self.rank,
            "local_rank": self.local_rank,
            "node_rank": self.node_rank,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "threads": self.threads,
        }


class SingleDevice(Strategy):
    name = "single"

    def setup(self, acc: Accelerator) -> None:
        self.thread_policy = acc.apply_threads(1, 0)
        acc.setup()
        self.threads = torch.get_num_threads()

    def gather(self, obj: Any) -> list[Any]:
        return [obj]


# "1" in the environment of a run (tests set it): after its measured steps each rank also records evidence
# that the replicas form one data-parallel model (parameter digests, local vs all-reduced gradients). Off
# by default: it costs extra forward/backward passes and a copy of every parameter to the host.
REPLICA_CHECK_ENV = "HPUBENCH_DDP_CHECK"
# The variables torch.distributed's elastic agent gives every worker process.
RANK_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")


class DDP(Strategy):
    """One process per device, gradients all-reduced every step by ``DistributedDataParallel``.

    The processes are started by torch.distributed's elastic agent (see ``hpubench.run.distributed``), which
    hands each one its place through RANK / LOCAL_RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT; this class
    only joins the group those describe. The backend is the accelerator's (gloo, nccl, hccl), so the same code
    serves CPU, CUDA and HPU.
    """

    name = "ddp"

    def __init__(
        self,
        rank: int,
        local_rank: int,
        world_size: int,
        local_world_size: int,
        node_rank: int = 0,
        timeout_s: float = DEFAULT_S,
    ) -> None:
        if not (0 <= rank < world_size and 0 <= local_rank < local_world_size <= world_size):
            raise ValueError(
                f"inconsistent ranks: rank={rank} local_rank={local_rank} world_size={world_size} "
                f"local_world_size={local_world_size}"
            )
        self.rank = rank
        self.local_rank = local_rank
        self.world_size = world_size
        self.local_world_size = local_world_size
        self.node_rank = node_rank
        self.timeout_s = timeout_s
        self.backend: str | None = None
        self.threads: int | None = None
        self._device_ids: list[int] | None = None
        self._barrier_ids: list[int] | None = None

    def cell_root_pid(self) -> int:
        """The elastic agent that started this node's ranks: they and it are the cell on this host."""
        return os.getppid()

    @classmethod
    def from_env(cls, cell: Cell, environ: Mapping[str, str] | None = None) -> DDP:  # or a subclass
        """The rank this process was given; refuses a group whose size is not the cell's nodes x devices."""
        env = os.environ if environ is None else environ
        missing = [k for k in RANK_ENV if k not in env]
        if missing:
            raise RuntimeError(
                f"cell {cell.key} needs {cell.world_size} processes, but {', '.join(missing)} "
                "is not set: multi-process cells are started by hpubench's distributed launcher"
            )
        world_size = int(env["WORLD_SIZE"])
        local_world_size = int(env["LOCAL_WORLD_SIZE"])
        if world_size != cell.world_size or local_world_size != cell.devices:
            raise RuntimeError(
                f"process group of {world_size} ({local_world_size} per node) does not match cell "
                f"{cell.key}: {cell.nodes} node(s) x {cell.devices} device(s)"
            )
        timeout = pg_timeout_s(env)
        return cls(
            rank=int(env["RANK"]),
            local_rank=int(env["LOCAL_RANK"]),
            world_size=world_size,
            local_world_size=local_world_size,
            node_rank=int(env.get("GROUP_RANK", "0")),
            timeout_s=timeout,
        )

    def setup(self, acc: Accelerator) -> None:
        # Several ranks share the host's cores: each one taking all of them oversubscribes the machine
        # and measures contention, not scaling. A user's OMP_NUM_THREADS still wins.
        self.thread_policy = acc.apply_threads(self.local_world_size, self.local_rank)
        self.threads = torch.get_num_threads()
        acc.setup()
        backend = acc.dist_backend
        acc.before_process_group()
        dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=self.timeout_s))
        if dist.get_world_size() != self.world_size or dist.get_rank() != self.rank:
            raise RuntimeError(
                f"process group has rank {dist.get_rank()} of {dist.get_world_size()}, "
                f"expected rank {self.rank} of {self.world_size}"
            )
        self.backend = str(dist.get_backend())
        ids = acc.process_group_device_ids()
        if ids is not None:
            self._device_ids = ids
            self._barrier_ids = ids

    def ddp_options(self) -> dict[str, Any]:
        """Keyword arguments for ``DistributedDataParallel`` (bucket_cap_mb, gradient_as_bucket_view, ...):
        none here; a subclass that tunes them is a strategy of its own, and the record shows them."""
        return {}

    def wrap_model(self, model: nn.Module, blocks: Sequence[nn.Module] = ()) -> nn.Module:
        return DistributedDataParallel(model, device_ids=self._device_ids, **self.ddp_options())

    def facts(self) -> dict[str, Any]:
        options = self.ddp_options()
        return {"ddp_options": options} if options else {}

    def gather(self, obj: Any) -> list[Any]:
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def from_rank0(self, obj: Any) -> Any:
        """A broadcast, not a gather of unequal objects: all_gather_object grows the smaller ranks' buffers
        in place (``resize_``), which a device tensor type need not support, while a broadcast receives
        into a buffer made at the sent size."""
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        if self._barrier_ids is not None:
            dist.barrier(device_ids=self._barrier_ids)
        else:
            dist.barrier()

    def teardown(self) -> None:
        """Wait until every rank is past its last collective; the group itself outlives the model.

        Destroying the group while the DDP model (and its reducer) still exist has hung at exit under
        load; the process that owns the group destroys it once ``run_cell`` has returned and the model
        is gone (``hpubench.run.distributed.worker``, or :meth:`destroy`).
        """
        if dist.is_initialized():
            self.barrier()

    @staticmethod
    def destroy() -> None:
        if dist.is_initialized():
            dist.destroy_process_group()

    def replica_check(self, model: nn.Module, loss_of: Callable[[nn.Module], torch.Tensor]) -> dict[str, Any]:
        """Evidence that the ranks train one model, not N independent ones (collective: every rank calls it).

        ``param_digest`` hashes every parameter: equal on all ranks only if DDP broadcast the initial
        weights and every optimizer step saw the same gradients. ``local_grad`` is a probe parameter's
        gradient on this rank's own batch without synchronisation (``no_sync``), so it differs between
        ranks that got different data; ``synced_grad`` is the same gradient after DDP's all-reduce, which
        must be the mean of every rank's ``local_grad``. Leaves the gradients cleared.
        """
        params = [p for p in model.parameters() if p.requires_grad]
        digest = hashlib.sha256()
        for p in params:
            digest.update(p.detach().to("cpu").contiguous().flatten().view(torch.uint8).numpy().tobytes())
        name, probe = [(n, p) for n, p in model.named_parameters() if p.requires_grad][-1]

        def grad_of_probe(sync: bool) -> list[float]:
            for p in params:
                p.grad = None
            if sync:
                loss_of(model).backward()
            else:
                with model.no_sync():  # type: ignore[operator]
                    loss_of(model).backward()
            assert probe.grad is not None
            return probe.grad.detach().to("cpu", torch.float64).flatten()[:64].tolist()

        local = grad_of_probe(sync=False)
        synced = grad_of_probe(sync=True)
        for p in params:
            p.grad = None
        return {
            "rank": self.rank,
            "param_digest": digest.hexdigest()[:32],
            "probe": name,
            "local_grad": local,
            "synced_grad": synced,
        }


class FSDP(DDP):
    """Fully sharded data parallel (``torch.distributed.fsdp.fully_shard``): each rank keeps a shard of
    every parameter, gradient and optimizer state; a sharded unit's parameters are all-gathered for its
    forward and backward and its gradients reduce-scattered. Each repeated block of the model is its own
    unit (so only one block is whole at a time), then the root takes the rest. Joins the process group as
    DDP does; the mesh is one dimension over all ranks, on the accelerator's device type.
    """

    name = "fsdp"

    def setup(self, acc: Accelerator) -> None:
        super().setup(acc)
        self._device_type = acc.torch_device().type
        self._units: list[str] = []

    def wrap_model(self, model: nn.Module, blocks: Sequence[nn.Module] = ()) -> nn.Module:
        # deferred: only FSDP cells load the FSDP stack (heavy; fully_shard is public since torch 2.6)
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard  # deferred: as above

        mesh = init_device_mesh(self._device_type, (self.world_size,))
        names = {id(m): n for n, m in model.named_modules()}
        for block in blocks:
            fully_shard(block, mesh=mesh)
            self._units.append(names.get(id(block), type(block).__name__))
        fully_shard(model, mesh=mesh)
        self._units.append("(root)")
        return model

    def facts(self) -> dict[str, Any]:
        return {"fsdp_units": list(self._units)}

    def replica_check(self, model: nn.Module, loss_of: Callable[[nn.Module], torch.Tensor]) -> dict[str, Any]:
        """As DDP's, with every parameter and the probe's gradient gathered whole from the shards
        (collective). ``local_grad`` is None: a sharded model has no unsynchronised whole gradient."""
        params = [p for p in model.parameters() if p.requires_grad]
        digest = hashlib.sha256()
        for p in params:
            whole = p.full_tensor() if hasattr(p, "full_tensor") else p
            digest.update(whole.detach().to("cpu").contiguous().flatten().view(torch.uint8).numpy().tobytes())
        name, probe = [(n, p) for n, p in model.named_parameters() if p.requires_grad][-1]
        for p in params:
            p.grad = None
        loss_of(model).backward()
        assert probe.grad is not None
        grad = probe.grad.full_tensor() if hasattr(probe.grad, "full_tensor") else probe.grad
        synced = grad.detach().to("cpu", torch.float64).flatten()[:64].tolist()
        for p in params:
            p.grad = None
        return {
            "rank": self.rank,
            "param_digest": digest.hexdigest()[:32],
            "probe": name,
            "local_grad": None,
            "synced_grad": synced,
        }


def runtime_class(spec: StrategySpec) -> type[Strategy]:
    """The concrete ``Strategy`` subclass ``spec.runtime`` ("module:Class") names, imported now."""
    module, _, attr = spec.runtime.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise RuntimeError(
            f"strategy {spec.name!r}: its runtime {spec.runtime!r} cannot be imported "
            f"({type(exc).__name__}: {exc}); fix or reinstall the package that provides it"
        ) from exc
    if not (inspect.isclass(cls) and issubclass(cls, Strategy) and not inspect.isabstract(cls)):
        raise RuntimeError(
            f"strategy {spec.name!r}: its runtime {spec.runtime!r} is not a concrete "
            "hpubench.strategy.runtime.Strategy subclass"
        )
    return cls


def for_cell(cell: Cell, environ: Mapping[str, str] | None = None) -> Strategy:
    """The cell's strategy (``spec.strategy_of``), built from its registered runtime class: SingleDevice for
    one process; DDP, FSDP or an installed strategy, from the elastic agent's variables, for several. A
    combination the matrix would skip raises CellSkipped."""
    reason = (
        strategy_misfits_layout(cell) or strategy_refuses_precision(cell) or multi_process_skip_reason(cell)
    )
    if reason:
        raise CellSkipped(reason)
    spec = strategies.get(strategy_of(cell))
    strategy = runtime_class(spec).from_env(cell, environ)
    strategy.name = spec.name  # the record names the strategy that ran, also for a subclass of a built-in
    return strategy
