"""Scaling efficiency: how much of N devices' worth of speed a data-parallel cell actually delivers.

    efficiency(N) = samples/s with N processes / (N x samples/s with 1 device)

for the same workload, size, accelerator, precision, mode, graph capture, per-device batch size and
workload options; only devices and nodes differ. The per-device batch is fixed, so this is weak scaling:
1.0 means the all-reduce and the extra processes cost nothing, 0.5 that half of the added devices' work
is lost. It is derived when results are read, never stored: it relates two records, and either may be
re-run. Pure: no torch, no I/O.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass

from hpubench.plan import dimensions
from hpubench.plan.cell import CELL_FIELDS, Cell
from hpubench.store.record import STATUS_OK, CellResult


@dataclass(frozen=True)
class Scaling:
    world_size: int
    samples_per_s: float
    baseline_key: str
    baseline_samples_per_s: float

    @property
    def speedup(self) -> float:
        return self.samples_per_s / self.baseline_samples_per_s

    @property
    def efficiency(self) -> float:
        return self.speedup / self.world_size


def workload_identity(cell: Cell) -> tuple[object, ...]:
    """What must match between an N-device cell and its 1-device baseline: every dimension but the
    layout (``Dimension.layout``: devices, nodes, strategy), added dimensions included."""
    layout = {d.name for d in dimensions.all_dimensions() if d.layout}
    own = tuple(
        cell.value(d.name)
        for d in dimensions.all_dimensions()
        if d.name not in layout and d.name in CELL_FIELDS
    )
    return (*own, tuple((k, v) for k, v in cell.extra if k not in layout))


def _time(r: CellResult) -> float | None:
    if not r.started_at:
        return None
    try:
        return _dt.datetime.fromisoformat(r.started_at).timestamp()
    except ValueError:
        return None


def _usable(r: CellResult) -> bool:
    return r.status == STATUS_OK and r.metrics is not None and r.metrics.samples_per_s > 0


def scaling_efficiencies(results: Sequence[CellResult]) -> list[Scaling | None]:
    """One entry per result (same order): its scaling against a 1-device baseline, or None.

    None for 1-device cells, for cells that did not finish ok, and where no ok baseline exists. Records of
    several runs may be mixed (``hpubench results A B``): the baseline then comes from the same device
    name, and among several candidates the one that started closest in time, then closest in the list,
    wins, which picks the baseline from the same run when the runs are read together.
    """
    baselines: dict[tuple[object, ...], list[int]] = {}
    for i, r in enumerate(results):
        if _usable(r) and r.cell.world_size == 1:
            baselines.setdefault(workload_identity(r.cell), []).append(i)
    out: list[Scaling | None] = []
    for i, r in enumerate(results):
        if r.cell.world_size == 1 or not _usable(r):
            out.append(None)
            continue
        name = r.runtime.device_name
        candidates = [
            j
            for j in baselines.get(workload_identity(r.cell), [])
            if name is None or results[j].runtime.device_name in (None, name)
        ]
        if not candidates:
            out.append(None)
            continue
        t = _time(r)

        def distance(j: int, t: float | None = t, i: int = i) -> tuple[float, int]:
            tj = _time(results[j])
            return (abs(tj - t) if (t is not None and tj is not None) else float("inf"), abs(j - i))

        best = results[min(candidates, key=distance)]
        assert r.metrics is not None and best.metrics is not None
        out.append(
            Scaling(
                world_size=r.cell.world_size,
                samples_per_s=r.metrics.samples_per_s,
                baseline_key=best.key,
                baseline_samples_per_s=best.metrics.samples_per_s,
            )
        )
    return out
