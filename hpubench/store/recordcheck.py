"""Types and ranges of a result record as read from disk: the one check every reader goes through.

A ``cells.jsonl`` line can come from anywhere (another machine, an older or newer hpubench, a hand edit,
a CI artifact), so valid JSON with the right keys is not enough: ``"step_times_s": "0.1,0.2"`` would
iterate into characters, a one-element interval would break every table, and a NaN step time would turn
every statistic into NaN. :func:`check_record` raises :class:`RecordError` naming the field (dotted path)
and what it should hold; the store adds the file and line. Pure: no I/O, no torch.

Old records stay readable: every field added after the first release (``repeat``, ``quality``, ``numerics``,
``telemetry``, ``loader``, ``profile``, ``phases``, ``memory_timeline``, the cell's ``auto_steps`` and
``device_ids``) may be absent. The fields that identify a cell (``REQUIRED_CELL_FIELDS``: the first release's
matrix dimensions, declared beside the Cell in ``hpubench.plan.cell``) every version wrote, so their absence
means a damaged record and is refused rather than defaulted (a missing ``precision`` would otherwise read as
32-true and match the wrong baseline).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hpubench.plan.cell import FIRST_RELEASE_DIMENSIONS, MODES
from hpubench.precision import spec as precisions
from hpubench.store.runtimeinfo import field_kinds

REQUIRED_CELL_FIELDS: tuple[str, ...] = FIRST_RELEASE_DIMENSIONS
# Metrics whose value may legitimately be NaN or infinite: a loss that diverged is a fact to record.
_ANY_FLOAT = frozenset({"loss_first", "loss_last"})
_METRIC_INTS = ("measured_steps", "warmup_steps", "samples_per_step")
_METRIC_OPT_INTS = ("tokens_per_step", "flops_per_step")
_METRIC_FLOATS = (
    "samples_per_s",
    "confidence",
    "step_time_mean_s",
    "step_time_std_s",
    "step_time_p50_s",
    "step_time_p90_s",
    "step_time_p99_s",
    "first_step_s",
    "warmup_total_s",
    "loss_first",
    "loss_last",
)
_METRIC_OPT_FLOATS = ("tokens_per_s", "achieved_tflops", "peak_tflops", "mfu")
# Divisors of every ratio, cost and chart: a measured step takes time and trains samples, so 0 is damage.
_METRIC_POSITIVE = frozenset({"samples_per_s", "step_time_mean_s", "step_time_p50_s"})
# Longer than any step (11.6 days), and small enough that sums and squares of a run's steps stay finite.
MAX_STEP_S = 1e6
# Every count and byte figure fits a signed 64-bit integer, as other tools reading the JSON expect; a
# larger one overflows the float arithmetic of every table.
MAX_INT = 2**63 - 1
RUNTIME_KINDS = field_kinds()


class RecordError(ValueError):
    """A record field with the wrong type or range; ``field`` is its dotted path in the record."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"field {field}: {problem}")
        self.field = field
        self.problem = problem


def is_whole(v: object) -> bool:
    """An int that is not a bool (JSON true would pass isinstance(v, int)); shared with metacheck."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int(d: Mapping[str, Any], name: str, where: str, low: int, optional: bool = False) -> None:
    v = d.get(name)
    if v is None and optional:
        return
    if not is_whole(v) or not low <= v <= MAX_INT:
        raise RecordError(
            f"{where}{name}", f"must be a whole number >= {low} and < 2**63, got {short_repr(v)}"
        )


def _float(d: Mapping[str, Any], name: str, where: str, optional: bool = False) -> None:
    v = d.get(name)
    if v is None and optional:
        return
    if not is_number(v):
        raise RecordError(f"{where}{name}", f"must be a number, got {v!r}")
    if name in _ANY_FLOAT:
        return
    if name in _METRIC_POSITIVE and not (math.isfinite(v) and v > 0):
        raise RecordError(f"{where}{name}", f"must be a finite number > 0, got {v!r}")
    if not math.isfinite(v) or v < 0:
        raise RecordError(f"{where}{name}", f"must be a finite number >= 0, got {v!r}")


def _str(d: Mapping[str, Any], name: str, where: str, optional: bool = False) -> None:
    v = d.get(name)
    if v is None and optional:
        return
    if not isinstance(v, str):
        raise RecordError(f"{where}{name}", f"must be a string, got {v!r}")


def _times(d: Mapping[str, Any], name: str) -> None:
    v = d.get(name)
    if v is None:
        return
    if not isinstance(v, (list, tuple)):
        raise RecordError(name, f"must be a list of seconds, got {type(v).__name__} {short_repr(v)}")
    for i, x in enumerate(v):
        if not is_number(x) or not 0 < x <= MAX_STEP_S:
            raise RecordError(
                f"{name}[{i}]", f"must be a number of seconds > 0 and <= {MAX_STEP_S:g}, got {x!r}"
            )


def _interval(d: Mapping[str, Any], name: str, optional: bool) -> None:
    v = d.get(name)
    if v is None and optional:
        return
    pair = isinstance(v, (list, tuple)) and len(v) == 2
    if not pair or not all(is_number(x) and math.isfinite(x) for x in v):
        raise RecordError(f"metrics.{name}", f"must be [low, high], two finite numbers, got {short_repr(v)}")
    if v[0] > v[1]:
        raise RecordError(f"metrics.{name}", f"low end {v[0]} is above high end {v[1]}")


def short_repr(v: object) -> str:
    """``v`` as an error message shows it: its repr, cut to 60 characters."""
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_runtime(runtime: Mapping[str, Any]) -> None:
    """Each fact RuntimeInfo declares, of its declared kind; keys it does not know are kept as written."""
    for name, kind in RUNTIME_KINDS.items():
        if kind == "str":
            _str(runtime, name, "runtime.", optional=True)
        elif kind == "int":
            _int(runtime, name, "runtime.", 0, optional=True)
        elif kind == "float":
            v = runtime.get(name)
            if v is not None and not (is_number(v) and math.isfinite(v)):
                raise RecordError(f"runtime.{name}", f"must be a finite number, got {short_repr(v)}")
        elif kind == "Facts" and runtime.get(name) is not None and not isinstance(runtime[name], Mapping):
            raise RecordError(f"runtime.{name}", f"must be an object, got {short_repr(runtime[name])}")


def _check_memory(memory: Mapping[str, Any]) -> None:
    _str(memory, "source", "memory.", optional=True)
    for name in ("peak_allocated_bytes", "in_use_bytes", "limit_bytes", "num_allocs", "num_frees"):
        _int(memory, name, "memory.", 0, optional=True)


def _check_cell(cell: object) -> None:
    if not isinstance(cell, Mapping):
        raise RecordError("cell", f"must be an object, got {short_repr(cell)}")
    for name in REQUIRED_CELL_FIELDS:
        if name not in cell:
            raise RecordError(f"cell.{name}", "is missing (every hpubench version writes it)")
    for name in ("workload", "size", "accelerator"):
        # Any non-empty text: hpubench never writes a "/" here (registration refuses it), but a file from
        # elsewhere may hold anything, and readers show it escaped rather than refuse the whole file.
        v = cell[name]
        if not isinstance(v, str) or not v:
            raise RecordError(f"cell.{name}", f"must be a non-empty name, got {v!r}")
    _int(cell, "devices", "cell.", 1)
    _int(cell, "nodes", "cell.", 1)
    known = precisions.names()  # built-in and installed: a plugin's precision reads where it is installed
    if cell["precision"] not in known:
        raise RecordError(
            "cell.precision",
            f"must be one of {', '.join(known)} (or an installed one), got {cell['precision']!r}",
        )
    if cell["mode"] not in MODES:
        raise RecordError("cell.mode", f"must be one of {', '.join(MODES)}, got {cell['mode']!r}")
    if "graphs" in cell and not isinstance(cell["graphs"], bool):
        raise RecordError("cell.graphs", f"must be true or false, got {cell['graphs']!r}")
    _int(cell, "batch_size", "cell.", 1, optional=True)
    _int(cell, "warmup_steps", "cell.", 1, optional=True)
    _int(cell, "steps", "cell.", 2, optional=True)
    opts = cell.get("options")
    if opts is not None and not isinstance(opts, (Mapping, list, tuple)):
        raise RecordError("cell.options", f"must be an object of name: value, got {short_repr(opts)}")
    for name in ("auto_steps",):
        if cell.get(name) is not None and not isinstance(cell[name], Mapping):
            raise RecordError(f"cell.{name}", f"must be an object, got {short_repr(cell[name])}")
    ids = cell.get("device_ids")
    listed = isinstance(ids, (list, tuple)) and all(is_whole(i) and i >= 0 for i in ids)
    if ids is not None and not listed:
        raise RecordError("cell.device_ids", f"must be a list of device indices, got {short_repr(ids)}")


def _check_metrics(m: object) -> None:
    if not isinstance(m, Mapping):
        raise RecordError("metrics", f"must be an object, got {short_repr(m)}")
    for name in _METRIC_INTS:
        _int(m, name, "metrics.", 1 if name == "samples_per_step" else 0)
    for name in _METRIC_OPT_INTS:
        _int(m, name, "metrics.", 0, optional=True)
    for name in _METRIC_FLOATS:
        _float(m, name, "metrics.")
    for name in _METRIC_OPT_FLOATS:
        _float(m, name, "metrics.", optional=True)
    if not m["confidence"] <= 1:
        raise RecordError("metrics.confidence", f"must be between 0 and 1, got {m['confidence']!r}")
    _interval(m, "samples_per_s_ci", optional=False)
    _interval(m, "tokens_per_s_ci", optional=True)
    _str(m, "peak_source", "metrics.", optional=True)


def check_record(d: Mapping[str, Any]) -> None:
    """Raise RecordError for the first field of ``d`` (a decoded record) with a wrong type or range."""
    if "cell" not in d:
        raise RecordError("cell", "is missing")
    _check_cell(d["cell"])
    if "status" not in d:
        raise RecordError("status", "is missing")
    for name in ("status", "reason", "traceback_tail", "started_at", "quality", "numerics"):
        _str(d, name, "", optional=name != "status")
    _float(d, "wall_s", "", optional=True)
    _int(d, "repeat", "", 0, optional=True)
    if not isinstance(d.get("runtime", {}), Mapping):
        raise RecordError("runtime", f"must be an object, got {short_repr(d['runtime'])}")
    _times(d, "step_times_s")
    _times(d, "warmup_times_s")
    if d.get("metrics") is not None:
        _check_metrics(d["metrics"])
    for name in ("quality_reasons", "numerics_reasons"):
        reasons = d.get(name)
        if reasons is not None and not isinstance(reasons, (list, tuple)):
            raise RecordError(name, f"must be a list of lines, got {short_repr(reasons)}")
    for name in ("memory", "telemetry", "loader", "profile", "phases"):
        if d.get(name) is not None and not isinstance(d[name], Mapping):
            raise RecordError(name, f"must be an object, got {short_repr(d[name])}")
    _check_runtime(d.get("runtime") or {})
    if d.get("memory") is not None:
        _check_memory(d["memory"])
    timeline = d.get("memory_timeline")
    if timeline is not None and (
        not isinstance(timeline, (list, tuple)) or not all(isinstance(x, Mapping) for x in timeline)
    ):
        raise RecordError("memory_timeline", f"must be a list of objects, got {short_repr(timeline)}")
