"""The rules half of the accelerator interface: class facts and pure class methods, no torch.

Matrix expansion, the CLI and the launchers ask these on a machine without the device (which cells it
refuses, the environment a worker or rank needs before it imports the device framework), so they import
nothing heavy. Kept apart from ``base.py`` (the runtime half, whose hooks import torch when called) so
each half reads on its own; ``Accelerator`` inherits both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from hpubench.plan.cell import Cell


class AcceleratorRules:
    """What an accelerator kind is and refuses, answerable without the device or torch."""

    name: ClassVar[str]
    dist_backend: ClassVar[str]  # torch.distributed backend for this device kind
    autocast_device_type: ClassVar[str]
    auto_priority: ClassVar[int]  # "auto" picks the available accelerator with the highest priority
    graph_capture_name: ClassVar[str | None] = None  # "HPU graphs", "CUDA graphs"; None: not available
    # Host batches (--loader host) in page-locked memory, where that makes the copy to the device faster.
    pin_host_batches: ClassVar[bool] = False

    @classmethod
    def skip_reason(cls, cell: Cell, device_name: str) -> str | None:
        """Why ``cell`` cannot run on this accelerator kind (``device_name`` picks the generation)."""
        if cell.mode == "lazy":
            return f"lazy mode exists only on HPU, not on {cls.name}"
        if cell.graphs and cls.graph_capture_name is None:
            return f"graph capture is not available on {cls.name}"
        if cell.precision == "fp8":
            return (
                f"no supported fp8 training path on {cls.name} "
                "(fp8 runs on HPU Gaudi2+ via transformer_engine)"
            )
        return None

    @classmethod
    def env_before_import(cls, cell: Cell) -> dict[str, str]:
        """Environment a worker must have *before* importing the device's framework for this cell."""
        return {}

    @classmethod
    def check_environment(cls, environ: Mapping[str, str]) -> None:
        """Refuse (``UsageError``, one line) environment settings of this device kind that cannot work,
        before any worker starts: a bad value would otherwise fail inside every cell."""

    @classmethod
    def fork_server_env(cls) -> dict[str, str]:
        """Environment of every pre-warmed fork server (``hpubench.run.forkserver.server``), whatever cell
        it serves.

        A server imports torch and forks a child per cell; what torch loads with it, every child
        inherits. A device framework that torch loads at ``import torch`` is turned off here, so each
        child loads it itself. The variables reach every worker process (forked, spawned, ranks).
        """
        return {}

    @classmethod
    def rank_device_index(cls, cell: Cell, local_rank: int) -> int:
        """The device index one rank's process uses: one device per local rank, the cell's ids if named."""
        return cell.device_ids[local_rank] if cell.device_ids else local_rank

    @classmethod
    def rank_env(cls, cell: Cell, local_rank: int, environ: Mapping[str, str]) -> dict[str, str]:
        """Environment one rank's process needs before it imports the device framework (device choice)."""
        return {}
