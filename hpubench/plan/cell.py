"""The Cell: one point of the benchmark matrix, and the unit of running, storing and comparing.

A Cell names *what* to run, never how it went. Its key is stable across machines and runs so the same
cell can be matched between result sets (Gaudi vs Gaudi2, baseline vs current). The key deliberately
leaves out step counts and the ``--steps auto`` settings: measuring a cell longer must not make it a
different cell.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from hpubench.plan import dimensions
from hpubench.plan.autosteps import AutoSteps
from hpubench.plan.dimensions import MODES, PRECISIONS

__all__ = ["CELL_FIELDS", "MODES", "PRECISIONS", "Cell", "PlannedCell", "flops_key", "parse_flops_key"]

# The dimensions of the first release (declared in ``hpubench.plan.dimensions``): every hpubench version wrote
# them into a record's cell, so a record lacking one is damaged and refused (``hpubench.store.recordcheck``);
# a dimension declared later and absent from an old record reads as its default. A historical fact, not a
# second declaration: it never grows.
FIRST_RELEASE_DIMENSIONS: tuple[str, ...] = (
    "workload",
    "size",
    "accelerator",
    "devices",
    "nodes",
    "precision",
    "mode",
)


@dataclass(frozen=True)
class Cell:
    workload: str
    size: str = "tiny"
    accelerator: str = "cpu"
    devices: int = 1
    nodes: int = 1
    precision: str = "32-true"
    mode: str = "eager"
    graphs: bool = False
    batch_size: int | None = None  # None: the workload's default for its size
    warmup_steps: int = 3
    steps: int | None = 20  # measured steps; None: ``--steps auto``, measured as ``auto_steps`` says
    auto_steps: AutoSteps | None = None  # set exactly when steps is None (AutoSteps() unless given)
    options: tuple[tuple[str, str], ...] = field(default=())  # workload options, sorted (name, value)
    # Which device indices to use; None means the first ``devices``. Not part of the key: the same cell
    # on device 3 is still the same cell.
    device_ids: tuple[int, ...] | None = None
    # Values of dimensions registered beyond the fields above (hpubench.plan.dimensions), sorted (name,
    # value), only those that differ from the dimension's default: a cell of an older result is the same cell.
    extra: tuple[tuple[str, Any], ...] = field(default=())

    def __post_init__(self) -> None:
        if self.devices < 1 or self.nodes < 1:
            raise ValueError(f"devices and nodes must be >= 1, got devices={self.devices} nodes={self.nodes}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.warmup_steps < 1 or (self.steps is not None and self.steps < 2):
            raise ValueError(
                "need warmup_steps >= 1 and steps >= 2 (or None: auto), "
                f"got warmup_steps={self.warmup_steps} steps={self.steps}"
            )
        if self.steps is None and self.auto_steps is None:
            object.__setattr__(self, "auto_steps", AutoSteps())
        if self.steps is not None and self.auto_steps is not None:
            # A fixed count wins (``replace(cell, steps=50)`` of an auto cell is a fixed cell).
            object.__setattr__(self, "auto_steps", None)
        if self.device_ids is not None:
            object.__setattr__(self, "device_ids", tuple(int(i) for i in self.device_ids))
            if len(self.device_ids) != self.devices:
                raise ValueError(f"device_ids {list(self.device_ids)} do not match devices={self.devices}")
        object.__setattr__(self, "options", tuple(sorted((str(k), str(v)) for k, v in self.options)))
        object.__setattr__(self, "extra", tuple(sorted((str(k), v) for k, v in dict(self.extra).items())))

    @property
    def world_size(self) -> int:
        return self.devices * self.nodes

    def value(self, name: str) -> Any:
        """The cell's value of a dimension: its field, or its ``extra`` entry, or that one's default."""
        if name in CELL_FIELDS:
            return getattr(self, name)
        return dict(self.extra).get(name, dimensions.get(name).default)

    def key_parts(self, *, with_hardware: bool = True) -> list[str]:
        """Each dimension's part of the key, in dimension order (``dimensions.Dimension.key``)."""
        return dimensions.key_parts(self, with_hardware=with_hardware)

    @property
    def key(self) -> str:
        """Stable identity of the cell, e.g. ``mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault``."""
        return "/".join(self.key_parts())

    @property
    def match_key(self) -> str:
        """The key without the hardware, for matching cells across hardware kinds (compare)."""
        return "/".join(self.key_parts(with_hardware=False))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["options"] = dict(self.options)
        d["extra"] = dict(self.extra)
        if not self.extra:  # records stay as they were before dimensions could be added
            del d["extra"]
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown cell field(s): {', '.join(sorted(unknown))}")
        kwargs = dict(data)
        opts = kwargs.get("options") or {}
        kwargs["options"] = tuple(opts.items()) if isinstance(opts, dict) else tuple(tuple(o) for o in opts)
        extra = kwargs.get("extra") or {}
        kwargs["extra"] = tuple(extra.items()) if isinstance(extra, dict) else tuple(tuple(e) for e in extra)
        if isinstance(kwargs.get("auto_steps"), dict):
            kwargs["auto_steps"] = AutoSteps(**kwargs["auto_steps"])
        return cls(**kwargs)


CELL_FIELDS = frozenset(f.name for f in fields(Cell))


@dataclass(frozen=True)
class PlannedCell:
    """A cell as the matrix expanded it: runnable, or skipped with the reason why."""

    cell: Cell
    skip_reason: str | None = None

    @property
    def runnable(self) -> bool:
        return self.skip_reason is None


def flops_key(workload: str, size: str, batch_size: int, options: tuple[tuple[str, str], ...] = ()) -> str:
    """What a training step's FLOP count depends on (``workloads.flops.count_flops``): the workload, its
    size, the per-device batch and the cell's workload options (``seq_len=...`` changes the model); not the
    precision, mode, graphs or device. Cells sharing it share it. ``workload|size|batch[|name=value,...]``.
    """
    base = f"{workload}|{size}|{batch_size}"
    return f"{base}|{','.join(f'{k}={v}' for k, v in sorted(options))}" if options else base


def parse_flops_key(key: str) -> tuple[str, str, int, dict[str, str]]:
    """The parts of a :func:`flops_key`: workload, size, batch and options."""
    workload, size, batch, *rest = key.split("|", 3)
    options = dict(item.split("=", 1) for item in rest[0].split(",")) if rest and rest[0] else {}
    return workload, size, int(batch), options
