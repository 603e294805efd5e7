"""How a cell is observed, as opposed to what the cell is.

Profiling, telemetry, memory sampling and the host-loader pass change what gets *recorded* about a cell,
never what the cell *is*: a profiled run of a cell must still match the plain run of the same cell in a
comparison. So these settings travel beside the Cell (CLI -> api -> launcher -> zygote request ->
``run_cell(cell, dispatched_at, options)``) and never enter ``Cell.key``. Every default keeps the plain
run exactly as it was, so callers that pass no options are unaffected.

Pure: no torch, so the CLI can validate these on every start.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from hpubench.errors import UsageError

LOADERS: tuple[str, ...] = ("device", "host")
DEFAULT_TELEMETRY_INTERVAL_S = 0.1


@dataclass(frozen=True)
class ProfileOptions:
    """A torch.profiler schedule over steady-state steps that run *after* the plain measured steps.

    ``wait`` steps run with the profiler idle, ``warmup`` steps with it tracing but discarding (the first
    traced step pays the profiler's own start-up), ``active`` steps are what the trace and table show.
    """

    wait: int = 1
    warmup: int = 1
    active: int = 3
    top: int = 20
    record_shapes: bool = False

    def __post_init__(self) -> None:
        if self.wait < 0 or self.warmup < 0:
            raise UsageError(
                f"profile wait and warmup must be >= 0, got wait={self.wait} warmup={self.warmup}"
            )
        if self.active < 1:
            raise UsageError(f"profile --active must be at least 1 (steps traced), got {self.active}")
        if self.top < 1:
            raise UsageError(f"profile --top must be at least 1, got {self.top}")

    @property
    def total_steps(self) -> int:
        return self.wait + self.warmup + self.active


@dataclass(frozen=True)
class RunOptions:
    profile: ProfileOptions | None = None  # None: no profiling pass
    # The run directory; traces go to <output_dir>/traces/. Absolute, set by the api, not the user.
    output_dir: str | None = None
    # The cell's trace file relative to output_dir; the launcher sets it per cell (a repetition gets its
    # own file). None: traces/<sanitised key>.json.
    trace_relpath: str | None = None
    telemetry: bool = True  # power/energy sampler around the measured steps, where a source exists
    telemetry_interval_s: float = DEFAULT_TELEMETRY_INTERVAL_S
    memory_every: int = 0  # memory timeline: every K-th measured step (+ warm-up, first, last); 0 = off
    loader: str = "device"  # "host": also time a pass fed by a host-side loader (data wait vs compute)
    energy_price_per_kwh: float | None = None  # only what the user gave; no invented default

    def __post_init__(self) -> None:
        if self.loader not in LOADERS:
            raise UsageError(f"--loader must be one of {', '.join(LOADERS)}, got {self.loader!r}")
        if self.memory_every < 0:
            raise UsageError(
                f"--memory-every must be >= 0 (0 turns the timeline off), got {self.memory_every}"
            )
        if not (math.isfinite(self.telemetry_interval_s) and self.telemetry_interval_s > 0):
            raise UsageError(
                f"--telemetry-interval must be a positive number of seconds, got {self.telemetry_interval_s}"
            )
        price = self.energy_price_per_kwh
        if price is not None and not (math.isfinite(price) and price >= 0):
            raise UsageError(f"--energy-price must be a non-negative price per kWh, got {price}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RunOptions:
        if not data:
            return cls()
        # Unknown names are dropped: a newer launcher may send settings an older worker cannot use.
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in data.items() if k in known}
        if d.get("profile") is not None:
            d["profile"] = ProfileOptions(**d["profile"])
        return cls(**d)
