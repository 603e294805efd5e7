"""Records as a pandas DataFrame: one row per record, flat columns in a fixed order.

Separate from reading and writing records because only reports and exports need a frame; pandas is
imported only inside :func:`to_dataframe`, so importing this module (or the store) stays light.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from hpubench.analysis.scaling import scaling_efficiencies
from hpubench.measure.memory import MemoryStats
from hpubench.measure.ranks import rank_peaks
from hpubench.plan import dimensions
from hpubench.plan.cell import Cell
from hpubench.store.record import CellResult, Metrics
from hpubench.strategy.spec import strategy_of

if TYPE_CHECKING:
    import pandas

# "extra" (values of added dimensions) becomes one column per added dimension: see added_dimensions.
_CELL_FIELDS = [f.name for f in fields(Cell) if f.name != "extra"]
_MEMORY_FIELDS = [f.name for f in fields(MemoryStats) if f.name not in ("raw", "source")]
# Facts read back from the live run that reports group and filter by: column -> path into ``runtime``.
# "batch_size_resolved" is the batch that ran (the cell's own may be None: the workload's default).
RUNTIME_COLUMNS: dict[str, tuple[str, ...]] = {
    "mode_in_force": ("mode_in_force",),
    "device_name": ("device_name",),
    "batch_size_resolved": ("batch_size",),
    "strategy": ("strategy",),
    "torch_version": ("software", "torch"),
    "habana_version": ("software", "habana_frameworks"),
    "setup_s": ("setup_s",),
    "dispatch_to_first_step_s": ("dispatch_to_first_step_s",),
    # Data-parallel cells (hpubench.measure.ranks): per-rank arrays stay in runtime["distributed"]["ranks"].
    "dist_backend": ("distributed", "backend"),
    "threads_per_rank": ("distributed", "threads_per_rank"),
    "slowest_rank": ("distributed", "slowest_rank"),
    "peak_memory_sum_bytes": ("distributed", "peak_memory_sum_bytes"),
}
# Derived across records (hpubench.analysis.scaling): an N-device cell against its 1-device baseline.
SCALING_COLUMNS: tuple[str, ...] = (
    "scaling_efficiency",
    "scaling_speedup",
    "scaling_baseline_key",
    "scaling_baseline_samples_per_s",
)
_CI_FIELDS = {"samples_per_s_ci", "tokens_per_s_ci"}


def _metric_columns() -> list[tuple[str, str, int | None]]:
    """(column, metrics field, index into a CI tuple or None), in the Metrics field order."""
    cols: list[tuple[str, str, int | None]] = []
    taken = set(_CELL_FIELDS)
    for f in fields(Metrics):
        if f.name in _CI_FIELDS:
            base = f.name[: -len("_ci")]
            cols += [(f"{base}_lo", f.name, 0), (f"{base}_hi", f.name, 1)]
        else:
            # Metrics.warmup_steps (what ran) would shadow Cell.warmup_steps (what was asked).
            col = f"measured_{f.name}" if f.name in taken else f.name
            cols.append((col, f.name, None))
    return cols


_METRIC_COLUMNS = _metric_columns()

# What was observed beside the figures (hpubench profile, telemetry, --loader, --memory-every): column ->
# (record field, attribute). None where the record has no such observation (telemetry absent included).
_OBSERVED_COLUMNS: tuple[tuple[str, tuple[str, str]], ...] = (
    ("telemetry_source", ("telemetry", "source")),
    ("power_mean_w", ("telemetry", "mean_power_w")),
    ("power_max_w", ("telemetry", "max_power_w")),
    ("energy_per_step_j", ("telemetry", "energy_per_step_j")),
    ("energy_resolution_pct", ("telemetry", "energy_resolution_pct")),
    ("telemetry_sampler_cpu_pct", ("telemetry", "sampler_cpu_pct")),
    ("energy_per_sample_j", ("telemetry", "energy_per_sample_j")),
    ("samples_per_kwh", ("telemetry", "samples_per_kwh")),
    ("energy_price_per_kwh", ("telemetry", "energy_price_per_kwh")),
    ("energy_cost_per_1m_samples", ("telemetry", "energy_cost_per_1m_samples")),
    ("loader_data_wait_mean_s", ("loader", "data_wait_mean_s")),
    ("loader_data_fraction", ("loader", "data_fraction")),
    ("loader_samples_per_s", ("loader", "samples_per_s")),
    ("profile_step_time_mean_s", ("profile", "step_time_mean_s")),
    ("profile_trace", ("profile", "trace_path")),
    # Where the step's time goes (hpubench.measure.phases): shares of the measured mean step.
    ("phase_forward_share", ("phases", "forward_share")),
    ("phase_backward_share", ("phases", "backward_share")),
    ("phase_optimizer_share", ("phases", "optimizer_share")),
    ("phase_data_share", ("phases", "data_share")),
    ("phase_residue", ("phases", "residue")),
    ("phases", ("phases", "detail")),
)

COLUMNS: tuple[str, ...] = (
    "key",
    "match_key",
    "repeat",
    *_CELL_FIELDS,
    "world_size",
    "condition",
    "status",
    "reason",
    "quality",
    "quality_reasons",
    "numerics",
    "numerics_reasons",
    "started_at",
    "wall_s",
    *(c for c, _, _ in _METRIC_COLUMNS),
    "memory_source",
    *(f"memory_{f}" for f in _MEMORY_FIELDS),
    *RUNTIME_COLUMNS,
    "peak_memory_per_rank_bytes",
    *(c for c, _ in _OBSERVED_COLUMNS),
    "profile_top_op",
    "memory_timeline_points",
    *SCALING_COLUMNS,
)


def _row(r: CellResult) -> dict[str, Any]:
    cell = r.cell
    row: dict[str, Any] = {"key": r.key, "match_key": cell.match_key, "repeat": r.repeat}
    for name in _CELL_FIELDS:
        row[name] = getattr(cell, name)
    # Flat scalars: options as "k=v,k=v", device ids as "0,1" so columns group and compare cleanly.
    row["options"] = ",".join(f"{k}={v}" for k, v in cell.options)
    row["device_ids"] = None if cell.device_ids is None else ",".join(str(i) for i in cell.device_ids)
    row["world_size"] = cell.world_size
    row["condition"] = cell.value("condition")  # tuned (the harness's host settings) or plain
    row["status"] = r.status
    row["reason"] = r.reason
    # Flat like every other column: reasons joined with "; " (None where there are none).
    row["quality"] = r.quality
    row["quality_reasons"] = "; ".join(r.quality_reasons) or None
    row["numerics"] = r.numerics  # None: recorded before numerics were checked (shown "-", never ok)
    row["numerics_reasons"] = "; ".join(r.numerics_reasons) or None
    row["started_at"] = r.started_at
    row["wall_s"] = r.wall_s
    m = r.metrics
    for col, name, idx in _METRIC_COLUMNS:
        value = None if m is None else getattr(m, name)
        row[col] = value if idx is None or value is None else value[idx]
    mem = r.memory
    row["memory_source"] = None if mem is None else mem.source
    for f in _MEMORY_FIELDS:
        row[f"memory_{f}"] = None if mem is None else getattr(mem, f)
    for col, path in RUNTIME_COLUMNS.items():
        value: Any = r.runtime
        for part in path:
            value = value.get(part) if isinstance(value, Mapping) else None
        row[col] = value
    row["strategy"] = row["strategy"] or strategy_of(cell)  # a cell that never ran: the one it would run
    row["peak_memory_per_rank_bytes"] = rank_peaks(r.runtime)  # a list, or None for one process
    for col, (name, attr) in _OBSERVED_COLUMNS:
        row[col] = getattr(getattr(r, name), attr, None)
    row["profile_top_op"] = r.profile.top_ops[0].name if r.profile and r.profile.top_ops else None
    row["memory_timeline_points"] = len(r.memory_timeline)
    return row


def added_dimensions(results: Iterable[CellResult]) -> list[str]:
    """The added dimensions (``Cell.extra``) any of these cells has away from its default, sorted; one
    that already has a column of its own (``strategy``) is shown there."""
    return sorted({name for r in results for name, _ in r.cell.extra} - set(COLUMNS))


def added_dimension_columns(columns: Iterable[str]) -> list[str]:
    """The added dimensions' columns of a frame made by :func:`to_dataframe` (after the cell fields)."""
    cols = list(columns)
    return cols[cols.index(_CELL_FIELDS[-1]) + 1 : cols.index("world_size")]


def to_dataframe(results: Iterable[CellResult]) -> pandas.DataFrame:
    """One row per cell with flat columns in a fixed order (reports and exports rely on the order).

    An added dimension (``hpubench.plan.dimensions``) that any cell sets is one more column after the cell's
    own fields; a cell at its default holds the default there (None if that dimension is not registered
    here). Results without added dimensions have exactly the columns they always had.
    """
    # deferred: pandas is heavy (a third of a second); the column lists here are read without a frame
    import pandas as pd

    results = list(results)
    rows = [_row(r) for r in results]
    added = added_dimensions(results)
    for row, r in zip(rows, results, strict=True):
        for name in added:
            row[name] = dict(r.cell.extra)[name] if name in dict(r.cell.extra) else _default(name)
    for row, s in zip(rows, scaling_efficiencies(results), strict=True):
        row["scaling_efficiency"] = None if s is None else s.efficiency
        row["scaling_speedup"] = None if s is None else s.speedup
        row["scaling_baseline_key"] = None if s is None else s.baseline_key
        row["scaling_baseline_samples_per_s"] = None if s is None else s.baseline_samples_per_s
    at = COLUMNS.index("world_size")
    return pd.DataFrame(rows, columns=[*COLUMNS[:at], *added, *COLUMNS[at:]])


def _default(name: str) -> Any:
    try:
        return dimensions.get(name).default
    except KeyError:  # a dimension of a plugin not installed here
        return None
