"""The results store: one run directory, run metadata beside one append-only JSON Lines file of records.

A benchmark run can be killed at any moment (Ctrl-C, OOM killer, a lost node), and a later ``--resume``
must trust what is on disk. So every record is one ``os.write`` of a whole line on an ``O_APPEND``
descriptor followed by ``fsync``; a line without its newline can only be a torn write and is dropped
(and cut off before the next append), and the metadata is replaced atomically, never edited in place.
Anything else that does not parse is somebody's edit or another hpubench version: that is reported with
the file and line rather than guessed around.

Pandas is imported only inside :func:`to_dataframe`: the CLI imports this module on every start.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpubench.core.memory import MemoryStats
from hpubench.errors import UsageError, WriteFailed
from hpubench.measure.ranks import rank_peaks
from hpubench.plan import dimensions
from hpubench.plan.cell import Cell
from hpubench.plan.dimvalues import strategy_of
from hpubench.plan.inventory import Inventory
from hpubench.present.outfile import os_error_text
from hpubench.store.record import (
    READABLE_SCHEMAS,
    SCHEMA_VERSION,
    STATUS_FAILED,
    STATUS_OK,
    CellResult,
    Metrics,
)
from hpubench.store.recordcheck import RecordError

if TYPE_CHECKING:
    import pandas

try:  # advisory lock so two runs pointed at the same directory cannot interleave repair and append
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None  # type: ignore[assignment]

CELLS_FILE = "cells.jsonl"
META_FILE = "meta.json"
LOGS_DIR = "logs"
META_SCHEMA_VERSION = 1


def _fsync_dir(path: Path) -> None:
    """Make a rename or a new file durable: the directory entry lives in the directory, not the file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, payload: bytes) -> None:
    """Every byte, then fsync; the loop only matters for a short write (disk full)."""
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def write_file_synced(path: str | os.PathLike[str], payload: bytes) -> None:
    """Create or replace ``path`` with ``payload``, on disk before returning (not atomic by itself)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, payload)
    finally:
        os.close(fd)


def write_json_atomic(
    path: str | os.PathLike[str], data: Any, *, indent: int | None = 2, durable: bool = True
) -> None:
    """Write JSON so a reader sees the old file or the new one, never half of either (temp + replace).

    ``durable=False`` is for a child's result that its live parent reads back at once: still whole or
    absent, but not forced to disk, which would cost 1-4 ms of every cell here and protects nothing (a
    machine crash takes the waiting parent with it).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if indent is None:
        text = json.dumps(data, separators=(",", ":"), default=str)
    else:
        text = json.dumps(data, indent=indent, sort_keys=True, default=str)
    try:
        if durable:
            write_file_synced(tmp, (text + "\n").encode())
        else:
            tmp.write_text(text + "\n")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # a full disk must not also keep the half-written copy
            tmp.unlink()
        raise
    if durable:
        _fsync_dir(path.parent)


def record_line(result: CellResult) -> bytes:
    # json.dumps escapes newlines inside strings, so one record is always exactly one line.
    return (json.dumps(result.to_dict(), separators=(",", ":"), default=str) + "\n").encode()


def _parse_records(path: Path) -> list[CellResult]:
    """Every complete record of a cells.jsonl file, in file order (duplicates kept)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"results file {path} does not exist") from None
    except OSError as e:
        raise UsageError(f"cannot read results file {path}: {e.strerror or e}") from None
    lines = data.split(b"\n")
    # The last element is what follows the final newline: empty for a clean file, else a torn write.
    lines.pop()
    out: list[CellResult] = []
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            d = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise UsageError(
                f"{path}:{lineno}: corrupt result record ({e}); fix: delete that line "
                "(the cell is then re-run with --resume) or write results to a new run directory"
            ) from None
        if not isinstance(d, dict):
            raise UsageError(
                f"{path}:{lineno}: corrupt result record (not a JSON object); fix: delete that line "
                "or write results to a new run directory"
            )
        schema = d.get("schema")
        if schema not in READABLE_SCHEMAS:
            readable = " and ".join(map(str, READABLE_SCHEMAS))
            raise UsageError(
                f"{path}:{lineno}: result record has schema version {schema!r} but this hpubench reads "
                f"versions {readable}; fix: read it with the hpubench version that wrote it, "
                "or re-run into a new run directory"
            )
        try:
            out.append(CellResult.from_dict(d))
        except RecordError as e:
            raise UsageError(
                f"{path}:{lineno}: invalid result record: {e}; fix: correct or delete that line "
                "(the cell is then re-run with --resume) or write results to a new run directory"
            ) from None
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(
                f"{path}:{lineno}: invalid result record ({type(e).__name__}: {e}); fix: delete that line "
                "or write results to a new run directory"
            ) from None
    return out


def _latest_per_key(results: Iterable[CellResult]) -> list[CellResult]:
    """A re-run replaces: the last record of a (key, repeat) wins, kept at its first position (run order).

    Repetitions (``hpubench run --repeat N``) are distinct records of one key, so they are all kept.
    """
    latest: dict[tuple[str, int], CellResult] = {}
    for r in results:
        latest[r.run_id] = r
    return list(latest.values())


class ResultStore:
    """One run directory: ``meta.json``, ``cells.jsonl`` and the per-cell worker logs."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)

    @property
    def cells_path(self) -> Path:
        return self.run_dir / CELLS_FILE

    @property
    def meta_path(self) -> Path:
        return self.run_dir / META_FILE

    def log_path(self, key: str, repeat: int = 0) -> Path:
        """Where the worker's stdout/stderr for ``key`` goes; kept so a failure can be read in full."""
        safe = re.sub(r"[^A-Za-z0-9._=+-]", "_", key.replace("/", "__"))
        suffix = f".r{repeat}" if repeat else ""  # repetitions of a cell keep their own logs
        return self.run_dir / LOGS_DIR / f"{safe}{suffix}.log"

    def write_meta(self, meta: dict[str, Any]) -> None:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.meta_path, meta)
        except OSError as e:
            raise WriteFailed(f"cannot write {self.meta_path}: {os_error_text(e)}") from None

    def exists(self) -> bool:
        """Whether a run already wrote here (a new run must not silently mix with an old one)."""
        return self.meta_path.exists() or self.cells_path.exists()

    def read_meta(self) -> dict[str, Any] | None:
        """The run's metadata, or None where none was written yet (a run killed before its first write)."""
        try:
            text = self.meta_path.read_text()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise UsageError(f"cannot read {self.meta_path}: {e.strerror or e}") from None
        try:
            meta = json.loads(text)
        except ValueError as e:
            raise UsageError(f"{self.meta_path} is not valid JSON ({e}); fix: restore or delete it") from None
        if not isinstance(meta, dict):
            raise UsageError(f"{self.meta_path} is not a JSON object; fix: restore or delete it")
        return meta

    def append(self, result: CellResult) -> None:
        """Add one record durably; cut off a torn tail first so the new line starts on a line boundary.

        A write that fails (disk full, read-only filesystem) is undone (the file is cut back to where it
        ended) and raised as WriteFailed: the records before it stay intact, no torn line is left.
        """
        line = record_line(result)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.cells_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise WriteFailed(f"cannot write a record to {self.cells_path}: {os_error_text(e)}") from None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._repair_tail(fd)
            end = os.fstat(fd).st_size
            try:
                _write_all(fd, line)
            except OSError as e:
                with contextlib.suppress(OSError):  # shrinking needs no space
                    os.ftruncate(fd, end)
                    os.fsync(fd)
                raise WriteFailed(
                    f"{os_error_text(e)}: could not write a record to {self.cells_path}; "
                    "the records written before it are intact"
                ) from None
        finally:
            os.close(fd)  # also releases the lock

    @staticmethod
    def _repair_tail(fd: int) -> None:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        # Find the last newline, reading backwards in blocks (records are small; this is rare anyway).
        end = size
        block = 65536
        while end > 0:
            start = max(0, end - block)
            chunk = os.pread(fd, end - start, start)
            i = chunk.rfind(b"\n")
            if i >= 0:
                os.ftruncate(fd, start + i + 1)
                return
            end = start
        os.ftruncate(fd, 0)

    def load(self) -> list[CellResult]:
        """The latest record of every (key, repeat); an empty list for a run that stored nothing yet."""
        if not self.cells_path.exists():
            return []
        return _latest_per_key(_parse_records(self.cells_path))

    def done_keys(self) -> set[str]:
        """Keys with a finished repetition; skipped cells are not here: the matrix re-derives them."""
        return {key for key, _ in self.done_runs()}

    def done_runs(self) -> set[tuple[str, int]]:
        """(key, repeat) pairs that need not run again: what ``--resume`` keeps."""
        return {r.run_id for r in self.load() if r.status in (STATUS_OK, STATUS_FAILED)}


def load_results(paths: list[str]) -> list[CellResult]:
    """Records from several runs (directories or cells.jsonl files), each run deduplicated, in order.

    Records of the same key from different runs are all kept: comparing runs is the point of reading
    several. Within a run, every repetition of a key is kept (``CellResult.repeat`` tells them apart).
    """
    out: list[CellResult] = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise UsageError(
                f"results path {p} does not exist; fix: give a run directory or a {CELLS_FILE} file"
            )
        if path.is_dir():
            if not (path / CELLS_FILE).exists():
                raise UsageError(
                    f"no {CELLS_FILE} in {p}; fix: point at a run directory written by 'hpubench run'"
                )
            path = path / CELLS_FILE
        if not os.access(path, os.R_OK):
            raise UsageError(f"cannot read results file {path} (permission denied)")
        out.extend(_latest_per_key(_parse_records(path)))
    return out


# ---- DataFrame ----------------------------------------------------------------------------------------

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
    ("energy_per_sample_j", ("telemetry", "energy_per_sample_j")),
    ("samples_per_kwh", ("telemetry", "samples_per_kwh")),
    ("energy_price_per_kwh", ("telemetry", "energy_price_per_kwh")),
    ("energy_cost_per_1m_samples", ("telemetry", "energy_cost_per_1m_samples")),
    ("loader_data_wait_mean_s", ("loader", "data_wait_mean_s")),
    ("loader_data_fraction", ("loader", "data_fraction")),
    ("loader_samples_per_s", ("loader", "samples_per_s")),
    ("profile_step_time_mean_s", ("profile", "step_time_mean_s")),
    ("profile_trace", ("profile", "trace_path")),
)

COLUMNS: tuple[str, ...] = (
    "key",
    "match_key",
    "repeat",
    *_CELL_FIELDS,
    "world_size",
    "status",
    "reason",
    "quality",
    "quality_reasons",
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
    row["status"] = r.status
    row["reason"] = r.reason
    # Flat like every other column: reasons joined with "; " (None where there are none).
    row["quality"] = r.quality
    row["quality_reasons"] = "; ".join(r.quality_reasons) or None
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
    import pandas as pd

    from hpubench.analysis.scaling import scaling_efficiencies

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


# ---- run metadata -------------------------------------------------------------------------------------


def _git_commit(cwd: str | os.PathLike[str] | None) -> dict[str, Any] | None:
    """The checkout being benchmarked, if any: a number without its code version can't be compared."""

    def git(*args: str) -> str | None:
        try:
            p = subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return p.stdout.strip() if p.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": commit,
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": None if status is None else bool(status),
    }


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_metadata(
    *,
    argv: list[str] | None = None,
    inventory: Inventory | None = None,
    started_at: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Facts about the host and invocation that every record of the run shares.

    torch/habana versions are not here: importing torch would slow every CLI start, and the worker
    records the versions it really ran with in each result's ``runtime``.
    """
    import hpubench

    meta: dict[str, Any] = {
        "meta_schema": META_SCHEMA_VERSION,
        "record_schema": SCHEMA_VERSION,
        "hpubench_version": hpubench.__version__,
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python_version": platform.python_version(),
        "python_executable": sys.executable,
        "command_line": list(sys.argv if argv is None else argv),
        "cwd": str(Path(cwd) if cwd is not None else Path.cwd()),
        "started_at": started_at or utc_now_iso(),
        "git": _git_commit(cwd),
        "inventory": None if inventory is None else inventory.to_dict(),
    }
    meta.update(extra)
    return meta
