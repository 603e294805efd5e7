"""torch.profiler over a window of steady-state steps: a Chrome/Perfetto trace and a top-N operator table.

When a cell is slow the throughput figure cannot say why; the operator table and the trace can. The
profiled steps run in their own pass *after* the plain measured steps, with their own step times, so
profiler overhead never reaches the throughput, the interval or the gate.

Activities: CPU everywhere, CUDA on CUDA, and on HPU ``ProfilerActivity.HPU`` when the torch in use has it
once the bridge is imported (the bridge adds it and routes it to the Gaudi profiler, which
``HABANA_PROFILE`` configures: we never override it, only record what was in force).

The record types here import no torch: the results store reads them on every CLI start.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from hpubench.plan.runoptions import ProfileOptions

if TYPE_CHECKING:
    import torch

    from workloads.base import Batch

TRACES_DIR = "traces"
# Our own ranges mark the step and its data fetch in the trace; as table rows they would only repeat
# the step time. "ProfilerStep*" is the profiler's own per-step range.
_HIDDEN_PREFIXES = ("ProfilerStep", "hpubench::")
STEP_RANGE = "hpubench::step"
DATA_RANGE = "hpubench::data"


@dataclass(frozen=True)
class OpRow:
    """One line of the operator table, aggregated over the active (traced) steps."""

    name: str
    kind: str  # "op" | "kernel" (a device row) | "annotation" (a record_function range, e.g. Optimizer.step)
    device_type: str  # where the row ran: "CPU", "CUDA", "HPU" (kernels show up as device rows)
    calls: int  # over all active steps
    self_cpu_s: float
    cpu_total_s: float  # including children
    self_device_s: float | None  # None where no device activity was traced
    device_total_s: float | None
    pct_of_step: float  # the sorted-by self time as % of the active steps' wall time

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProfileResult:
    wait: int
    warmup: int
    active: int
    activities: tuple[str, ...]
    sort_by: str  # "self_device" (a device activity recorded time) | "self_cpu"
    step_times_s: tuple[float, ...]  # the active steps, profiler on: never mixed into the metrics
    step_time_mean_s: float | None
    overhead_vs_plain: float | None  # mean profiled step / mean plain step - 1
    trace_path: str | None  # relative to the run directory, e.g. traces/<key>.json
    trace_bytes: int | None
    top_ops: tuple[OpRow, ...]
    cpu_self_total_s: float | None
    device_busy_s: float | None  # summed self time of device rows (kernels); None without device activity
    habana_profile: str | None  # HABANA_PROFILE in force while profiling (HPU only; None elsewhere)
    notes: tuple[str, ...] = ()
    error: str | None = None  # the plain figures stand; only the profile pass failed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileResult:
        d = dict(data)
        d["activities"] = tuple(d.get("activities") or ())
        d["step_times_s"] = tuple(d.get("step_times_s") or ())
        d["top_ops"] = tuple(OpRow(**r) for r in d.get("top_ops") or ())
        d["notes"] = tuple(d.get("notes") or ())
        return cls(**d)


def trace_file_name(key: str) -> str:
    """A file name for a cell key: '/' becomes '__', anything unusual '_' (same rule as the logs)."""
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", key.replace("/", "__")) + ".json"


def trace_relpath(key: str) -> str:
    return f"{TRACES_DIR}/{trace_file_name(key)}"


# ---- the operator table (pure: works on anything shaped like key_averages() entries) --------------------


def _device_type_name(event: Any) -> str:
    dt = getattr(event, "device_type", None)
    name = getattr(dt, "name", None) or str(dt or "CPU")
    return name.rsplit(".", 1)[-1].upper()


def _device_self_us(event: Any) -> float:
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(event, attr, None)
        if value is not None:
            return float(value)
    return 0.0


def _device_total_us(event: Any) -> float:
    for attr in ("device_time_total", "cuda_time_total"):
        value = getattr(event, attr, None)
        if value is not None:
            return float(value)
    return 0.0


def _kind(event: Any) -> str:
    if _device_type_name(event) != "CPU":
        return "kernel"
    return "annotation" if getattr(event, "is_user_annotation", False) else "op"


def op_table(
    events: Iterable[Any], active_wall_s: float, top: int, device_traced: bool
) -> tuple[tuple[OpRow, ...], str, float, float | None]:
    """Top ``top`` rows by self time, with totals: (rows, sort_by, cpu_self_total_s, device_busy_s).

    Self device time decides the order when the device recorded any (a step on an accelerator is as fast
    as its kernels); otherwise self CPU time does. Percentages are of the active steps' wall time, so the
    rows of an op-bound step add up to roughly 100% (more where ops run on several threads or streams).
    """
    visible = [e for e in events if not str(e.key).startswith(_HIDDEN_PREFIXES)]
    cpu_total = sum(float(e.self_cpu_time_total) for e in visible) / 1e6
    device_rows = [e for e in visible if _device_type_name(e) != "CPU"]
    device_busy = sum(_device_self_us(e) for e in device_rows) / 1e6 if device_traced else None
    by_device = bool(device_traced and any(_device_self_us(e) > 0 for e in visible))
    sort_by = "self_device" if by_device else "self_cpu"

    def self_us(e: Any) -> float:
        return _device_self_us(e) if by_device else float(e.self_cpu_time_total)

    ranked = sorted(visible, key=lambda e: (-self_us(e), str(e.key)))[:top]
    wall_us = active_wall_s * 1e6
    rows = tuple(
        OpRow(
            name=str(e.key),
            kind=_kind(e),
            device_type=_device_type_name(e),
            calls=int(e.count),
            self_cpu_s=float(e.self_cpu_time_total) / 1e6,
            cpu_total_s=float(e.cpu_time_total) / 1e6,
            self_device_s=_device_self_us(e) / 1e6 if device_traced else None,
            device_total_s=_device_total_us(e) / 1e6 if device_traced else None,
            pct_of_step=100.0 * self_us(e) / wall_us if wall_us > 0 else 0.0,
        )
        for e in ranked
    )
    return rows, sort_by, cpu_total, device_busy


# ---- the profiled pass -------------------------------------------------------------------------------------


class ProfiledDevice(Protocol):
    """What profiling asks of the accelerator (``hpubench.accelerators.base.Accelerator``)."""

    def profiler_activities(self) -> tuple[list[Any], list[str]]: ...

    def profiler_setting(self) -> tuple[str | None, str | None]: ...


def profile_steps(
    step: Callable[[Batch], torch.Tensor],
    next_batch: Callable[[], Batch],
    synchronize: Callable[[], None],
    device: ProfiledDevice,
    options: ProfileOptions,
    trace_path: Path | None,
    trace_relpath: str | None = None,
    plain_step_mean_s: float | None = None,
) -> ProfileResult:
    """Run ``options.total_steps`` steps under torch.profiler; trace and table cover the active ones."""
    acts, notes = device.profiler_activities()
    act_names = [a.name for a in acts]
    habana_profile, note = device.profiler_setting()
    notes += [note] if note else []
    traced = _traced(acts, act_names, trace_path, step, next_batch, synchronize, options)
    notes += traced.notes
    active_times = tuple(traced.times[options.wait + options.warmup :])
    active_wall = sum(active_times)
    device_traced = len(traced.activities) > 1
    rows, sort_by, cpu_total, device_busy = op_table(
        traced.prof.key_averages(), active_wall, options.top, device_traced
    )
    if device_traced and sort_by == "self_cpu":
        notes.append(
            f"{traced.activities[-1]} activity recorded no device time; the table is sorted by CPU time"
        )
    mean = active_wall / len(active_times) if active_times else None
    return ProfileResult(
        wait=options.wait,
        warmup=options.warmup,
        active=options.active,
        activities=tuple(traced.activities),
        sort_by=sort_by,
        step_times_s=active_times,
        step_time_mean_s=mean,
        overhead_vs_plain=(mean / plain_step_mean_s - 1.0) if (mean and plain_step_mean_s) else None,
        trace_path=trace_relpath if traced.exported else None,
        trace_bytes=_trace_bytes(trace_path) if traced.exported else None,
        top_ops=rows,
        cpu_self_total_s=cpu_total,
        device_busy_s=device_busy,
        habana_profile=habana_profile,
        notes=tuple(notes),
    )


class _Traced(NamedTuple):
    """The profiled pass: its step times, the profiler (for its table), what it traced and exported."""

    times: list[float]
    prof: Any
    activities: list[str]  # the names of the activities traced (CPU only after a fallback)
    exported: bool  # the Chrome trace was written
    notes: list[str]  # what went wrong on the way, in order


def _traced(
    acts: list[Any],
    act_names: list[str],
    trace_path: Path | None,
    step: Callable[[Batch], torch.Tensor],
    next_batch: Callable[[], Batch],
    synchronize: Callable[[], None],
    options: ProfileOptions,
) -> _Traced:
    """The profiled pass, with every activity asked for, else (when a device activity cannot start) again
    on the CPU only: the host-side picture is still worth having."""
    notes: list[str] = []
    exported: list[str] = []

    def on_ready(prof: Any) -> None:
        if trace_path is None:
            return
        try:
            trace_path.parent.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(trace_path))
            exported.append(str(trace_path))
        except Exception as exc:
            notes.append(f"trace export failed: {type(exc).__name__}: {exc}")

    try:
        times, prof = _trace_pass(acts, on_ready, step, next_batch, synchronize, options)
    except Exception as exc:
        if len(acts) == 1:
            raise
        # A device activity the profiler cannot start (no CUPTI, a torch whose HPU activity has no
        # Gaudi profiler behind it) should still leave the host-side picture: retry with CPU only.
        notes.append(
            f"{'+'.join(act_names[1:])} activity failed to start ({' '.join(str(exc).split())[:200]}); "
            "traced CPU only"
        )
        acts, act_names = acts[:1], act_names[:1]
        times, prof = _trace_pass(acts, on_ready, step, next_batch, synchronize, options)
    return _Traced(times, prof, act_names, bool(exported), notes)


def _trace_pass(
    activities: list[Any],
    on_ready: Callable[[Any], None],
    step: Callable[[Batch], torch.Tensor],
    next_batch: Callable[[], Batch],
    synchronize: Callable[[], None],
    options: ProfileOptions,
) -> tuple[list[float], Any]:
    """(step times, profiler) of one pass under torch.profiler, each step and its data fetch in a range of
    its own so the trace tells them apart."""
    # deferred: hpubench.store.record imports this module (ProfileResult) on the torch-free CLI path
    from torch.profiler import profile, record_function, schedule

    times: list[float] = []
    sched = schedule(wait=options.wait, warmup=options.warmup, active=options.active, repeat=1)
    synchronize()
    with profile(
        activities=activities,
        schedule=sched,
        on_trace_ready=on_ready,
        record_shapes=options.record_shapes,
    ) as prof:
        for _ in range(options.total_steps):
            t0 = time.perf_counter()
            with record_function(DATA_RANGE):
                batch = next_batch()
            with record_function(STEP_RANGE):
                step(batch)
                synchronize()
            times.append(time.perf_counter() - t0)
            prof.step()
    return times, prof


def _trace_bytes(trace_path: Path | None) -> int | None:
    """The written trace's size, so the record says how big a file it points at; None if unreadable."""
    if trace_path is None:
        return None
    try:
        return trace_path.stat().st_size
    except OSError:
        return None


def failed_profile(options: ProfileOptions, exc: BaseException) -> ProfileResult:
    """The profile pass raised: the cell's plain figures stand, the record says what went wrong."""
    return ProfileResult(
        wait=options.wait,
        warmup=options.warmup,
        active=options.active,
        activities=(),
        sort_by="self_cpu",
        step_times_s=(),
        step_time_mean_s=None,
        overhead_vs_plain=None,
        trace_path=None,
        trace_bytes=None,
        top_ops=(),
        cpu_self_total_s=None,
        device_busy_s=None,
        habana_profile=None,
        error=" ".join(f"{type(exc).__name__}: {exc}".split())[:500],
    )
