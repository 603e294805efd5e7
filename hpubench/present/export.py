"""Exports of results to other tools' formats: the frames' csv/json (:func:`with_columns`) and
pytest-benchmark's JSON.

The csv/json exports write a frame: ``hpubench.analysis.frame.to_dataframe``'s (one row per record) for
``hpubench results --format``, ``reports.frames.cell_frame``'s (one row per cell and result set) for
``hpubench report``. Every field of a record is a column of both already; :func:`with_columns` adds each
column of the registry (``hpubench.present.columns``) that is declared ``export`` and that the frame
lacks, computed by the column's getter from each row.

pytest-benchmark's saved-run JSON (``machine_info``, ``commit_info``, ``benchmarks[].stats``) is read by
its ``pytest-benchmark compare`` command, by ``--benchmark-compare`` and by many dashboards. Each measured
cell becomes one benchmark whose rounds are the cell's measured steps (all repetitions pooled), so the
statistics are the ones pytest-benchmark itself would compute from those step times. Failed and skipped
cells are left out, as pytest-benchmark leaves out benchmarks that errored; the exporter says how many.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpubench.analysis.compare import group_runs
from hpubench.analysis.frame import to_dataframe
from hpubench.analysis.stats.benchmark import pytest_benchmark_stats
from hpubench.plan.autosteps import AutoSteps
from hpubench.present.columns import COLUMNS, Column, FrameRow, exported
from hpubench.present.outfile import write_output
from hpubench.store.record import CellResult
from hpubench.store.runmeta import utc_now_iso
from hpubench.store.runtimeinfo import RuntimeInfo

if TYPE_CHECKING:
    import pandas

try:  # the version written into the file, as pytest-benchmark itself writes it
    from pytest_benchmark import __version__ as _PYTEST_BENCHMARK_VERSION
except ImportError:  # pragma: no cover - it is a dependency
    _PYTEST_BENCHMARK_VERSION = "5.0.0"

FORMATS: tuple[str, ...] = ("pytest-benchmark",)
SUFFIXES: tuple[str, ...] = ("json",)  # what -o may end in: pytest-benchmark's saved runs are JSON


def with_columns(df: pandas.DataFrame, columns: Sequence[Column] = COLUMNS) -> pandas.DataFrame:
    """``df`` with every exported column of the registry it lacks appended, in registry order (``df``
    itself where it lacks none, as with the registry as shipped: its exported figures are frame columns)."""
    missing = [c for c in exported(columns) if c.name not in df.columns]
    if not missing:
        return df
    rows = [FrameRow(r) for _, r in df.iterrows()]
    return df.assign(**{c.name: [c.value(row) for row in rows] for c in missing})


def results_frame(records: Sequence[CellResult], columns: Sequence[Column] = COLUMNS) -> pandas.DataFrame:
    """What ``hpubench results --format csv|json`` writes: one row per record, the registry's exported
    columns included."""
    return with_columns(to_dataframe(records), columns)


def benchmark_name(result: CellResult) -> str:
    """pytest-style ``func[param]``: grouping by "func" in pytest-benchmark then groups by workload."""
    return f"{result.cell.workload}[{result.key}]"


def _machine_info(meta: dict[str, Any], records: Sequence[CellResult]) -> dict[str, Any]:
    platform_text = str(meta.get("platform") or "")
    system, _, rest = platform_text.partition("-")
    release = rest.split("-")[0] if rest else ""
    runtime = next((r.runtime for r in records if r.runtime), RuntimeInfo())
    software = runtime.software or {}
    return {
        "node": meta.get("hostname"),
        "processor": meta.get("machine"),
        "machine": meta.get("machine"),
        "python_compiler": "",
        "python_implementation": "CPython",
        "python_implementation_version": meta.get("python_version"),
        "python_version": meta.get("python_version"),
        "python_build": [],
        "release": release,
        "system": system,
        "cpu": {"count": meta.get("cpu_count"), "brand_raw": runtime.device_name},
        "hpubench": {
            "version": meta.get("hpubench_version"),
            "platform": platform_text,
            "device_name": runtime.device_name,
            "software": software,
            "run_started_at": meta.get("started_at"),
        },
    }


def _commit_info(meta: dict[str, Any]) -> dict[str, Any]:
    git = meta.get("git") or {}
    cwd = meta.get("cwd")
    return {
        "id": git.get("commit") or "unknown",
        "time": None,
        "author_time": None,
        "dirty": bool(git.get("dirty")),
        "project": Path(cwd).name if cwd else "hpubench",
        "branch": git.get("branch") or "(unknown)",
    }


def _params(result: CellResult) -> dict[str, Any]:
    d = result.cell.to_dict()
    d["device_ids"] = None if result.cell.device_ids is None else list(result.cell.device_ids)
    return d


def to_pytest_benchmark(records: Sequence[CellResult], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pytest-benchmark saved-run document; pure (no I/O), so it is unit-testable."""
    meta = meta or {}
    benchmarks = []
    for runs in group_runs(records):
        measured = runs.measured
        if not measured:
            continue
        first = measured[0]
        m = first.metrics
        assert m is not None  # measured records have metrics
        auto = first.cell.auto_steps or AutoSteps()
        times = [t for r in measured for t in r.step_times_s]
        stats = pytest_benchmark_stats(times)
        stats["data"] = times
        peak = first.memory.peak_allocated_bytes if first.memory else None
        name = benchmark_name(first)
        benchmarks.append(
            {
                "group": None,
                "name": name,
                "fullname": f"hpubench::{name}",
                "params": _params(first),
                "param": first.key,
                "extra_info": {
                    "hpubench_key": first.key,
                    "repeats": len(measured),
                    "samples_per_step": m.samples_per_step,
                    "tokens_per_step": m.tokens_per_step,
                    "samples_per_s": m.samples_per_s,
                    "tokens_per_s": m.tokens_per_s,
                    "first_step_s": m.first_step_s,
                    "mfu": m.mfu,
                    "peak_memory_bytes": peak,
                    "device_name": first.runtime.device_name,
                    "mode_in_force": first.runtime.mode_in_force,
                },
                "options": {
                    "disable_gc": False,
                    "timer": "perf_counter (device synchronised around each training step)",
                    # --steps auto maps onto pytest-benchmark's own knobs; fixed steps have none
                    "min_rounds": first.cell.steps or auto.min_steps,
                    "max_time": auto.max_time_s if first.cell.steps is None else 0,
                    "min_time": auto.min_time_s if first.cell.steps is None else 0,
                    "warmup": m.warmup_steps,
                },
                "stats": stats,
            }
        )
    return {
        "machine_info": _machine_info(meta, records),
        "commit_info": _commit_info(meta),
        "benchmarks": benchmarks,
        "datetime": meta.get("started_at") or utc_now_iso(),
        "version": str(_PYTEST_BENCHMARK_VERSION),
    }


def write_pytest_benchmark(
    records: Sequence[CellResult], meta: dict[str, Any] | None, out: str | os.PathLike[str]
) -> dict[str, Any]:
    """Write the document where an output may go (``hpubench.present.outfile``); returns it."""
    doc = to_pytest_benchmark(records, meta)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_output(out, (json.dumps(doc, indent=4, sort_keys=True, default=str) + "\n").encode())
    return doc
