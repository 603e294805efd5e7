"""The result record of one cell: what was measured, how, and on what. Versioned for safe reading.

Every figure carries the facts needed to trust it (steps measured, warm-up kept apart, spread), and
failures keep their reason and the child's traceback tail, so a report can say why a cell has no number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from hpubench.measure.devicestats import MemorySample
from hpubench.measure.loader import LoaderSplit
from hpubench.measure.memory import MemoryStats
from hpubench.measure.phases import PhaseSplit
from hpubench.measure.profile import ProfileResult
from hpubench.measure.telemetry.summary import TelemetryResult
from hpubench.plan.cell import Cell
from hpubench.store.recordcheck import RecordError, check_record
from hpubench.store.runtimeinfo import RuntimeInfo

SCHEMA_VERSION = 2
# Versions this hpubench reads. 2: ``runtime`` is read as a typed ``RuntimeInfo``
# (hpubench.store.runtimeinfo);
# its JSON is the same object as in 1, so a version-1 record reads unchanged (tests/data/v1_run).
READABLE_SCHEMAS: tuple[int, ...] = (1, 2)

STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_SKIPPED = "skipped"
STATUSES = (STATUS_OK, STATUS_FAILED, STATUS_SKIPPED)


@dataclass(frozen=True)
class Metrics:
    """Steady-state figures from the measured steps (warm-up excluded, device synchronised each step)."""

    measured_steps: int
    warmup_steps: int
    samples_per_step: int  # global: summed over every rank
    tokens_per_step: int | None
    samples_per_s: float
    samples_per_s_ci: tuple[float, float]  # bootstrap interval over step times
    tokens_per_s: float | None
    tokens_per_s_ci: tuple[float, float] | None
    confidence: float
    step_time_mean_s: float
    step_time_std_s: float
    step_time_p50_s: float
    step_time_p90_s: float
    step_time_p99_s: float
    first_step_s: float  # includes compile / graph capture; never part of the steady state
    warmup_total_s: float
    loss_first: float
    loss_last: float
    flops_per_step: int | None  # counted with torch.utils.flop_counter (forward + backward)
    achieved_tflops: float | None
    peak_tflops: float | None
    peak_source: str | None
    mfu: float | None


@dataclass(frozen=True)
class CellResult:
    cell: Cell
    status: str
    reason: str | None = None  # why skipped / why failed, one line
    traceback_tail: str | None = None
    metrics: Metrics | None = None
    memory: MemoryStats | None = None
    # Facts read back from the live run: mode in force, device name, resolved batch size, backend, ...
    # (a mapping given here, as the worker gathers them, becomes a RuntimeInfo)
    runtime: RuntimeInfo = field(default_factory=RuntimeInfo)
    step_times_s: tuple[float, ...] = ()
    warmup_times_s: tuple[float, ...] = ()
    started_at: str | None = None
    wall_s: float | None = None
    schema: int = SCHEMA_VERSION
    # Which independent repetition of the cell this is (``hpubench run --repeat N``: 0 .. N-1). Kept out of
    # the Cell so repetitions still match as the same cell; records written before it existed read as 0.
    repeat: int = 0
    # What was observed beside the figures, each only when asked for (RunOptions); records written before
    # these existed read as empty. None of it is ever part of the figures above: the profiled and
    # loader-fed steps run after the measured ones and keep their own step times.
    memory_timeline: tuple[MemorySample, ...] = ()  # --memory-every K
    telemetry: TelemetryResult | None = None  # power/energy over the measured steps; source None = absent
    loader: LoaderSplit | None = None  # --loader host: data wait vs compute per step
    profile: ProfileResult | None = None  # hpubench profile: operator table and trace file
    # Where a step's time goes (hpubench.measure.phases): forward / backward / optimizer (and data with
    # --loader host) on sampled steps after the measured ones, or why the step cannot be split. Every
    # measured record has it; records written before it read as None.
    phases: PhaseSplit | None = None
    # Can the figure be trusted (hpubench.analysis.quality): "ok", "unmeasured", "noisy", "unstable",
    # "interfered", "recompiled" or "partial", with one line per problem found; None where nothing was
    # measured. Records written before the verdict existed read as None / (): unjudged, which no table or
    # report shows as ok.
    # Not checked against a fixed list here, so a record from a newer hpubench with a new verdict still reads.
    quality: str | None = None
    quality_reasons: tuple[str, ...] = ()
    # Does the configuration still train (hpubench.analysis.numerics): "ok", "drift", "diverged" or
    # "unchecked", with one line per problem found; what it was computed from is runtime["numerics"]. None
    # for skipped cells; records written before the verdict existed read as None / (): unjudged, never ok.
    numerics: str | None = None
    numerics_reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if isinstance(self.repeat, bool) or not isinstance(self.repeat, int) or self.repeat < 0:
            raise ValueError(f"repeat must be a whole number >= 0, got {self.repeat!r}")
        if not isinstance(self.runtime, RuntimeInfo):
            object.__setattr__(self, "runtime", RuntimeInfo.from_dict(self.runtime))

    @property
    def key(self) -> str:
        return self.cell.key

    @property
    def run_id(self) -> tuple[str, int]:
        """Identity of the record in a store: the cell and which repetition of it."""
        return (self.cell.key, self.repeat)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cell"] = self.cell.to_dict()
        d["runtime"] = self.runtime.to_dict()
        d["key"] = self.key
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CellResult:
        d = dict(data)
        schema = d.get("schema")
        if schema not in READABLE_SCHEMAS:
            raise ValueError(
                f"result schema {schema!r} is not supported "
                f"(this hpubench reads {', '.join(map(str, READABLE_SCHEMAS))})"
            )
        check_record(d)  # types and ranges, naming the field: a record may come from anywhere
        d.pop("key", None)
        d["cell"] = _part("cell", Cell.from_dict, d["cell"])
        d["runtime"] = _part("runtime", RuntimeInfo.from_dict, d.get("runtime") or {})
        d["schema"] = SCHEMA_VERSION  # read into this version's types; written back as this version
        if d.get("metrics") is not None:
            m = dict(d["metrics"])
            m["samples_per_s_ci"] = tuple(m["samples_per_s_ci"])
            if m.get("tokens_per_s_ci") is not None:
                m["tokens_per_s_ci"] = tuple(m["tokens_per_s_ci"])
            d["metrics"] = _part("metrics", lambda x: Metrics(**x), m)
        if d.get("memory") is not None:
            d["memory"] = _part("memory", MemoryStats.from_dict, d["memory"])
        d["step_times_s"] = tuple(d.get("step_times_s") or ())
        d["warmup_times_s"] = tuple(d.get("warmup_times_s") or ())
        d["quality_reasons"] = tuple(str(x) for x in d.get("quality_reasons") or ())
        d["numerics_reasons"] = tuple(str(x) for x in d.get("numerics_reasons") or ())
        d["memory_timeline"] = tuple(
            _part("memory_timeline", MemorySample.from_dict, x) for x in d.get("memory_timeline") or ()
        )
        for name, kind in (
            ("telemetry", TelemetryResult),
            ("loader", LoaderSplit),
            ("profile", ProfileResult),
            ("phases", PhaseSplit),
        ):
            if d.get(name) is not None:
                d[name] = _part(name, kind.from_dict, d[name])
        return cls(**d)


def _part(name: str, build: Callable[[Any], Any], data: Any) -> Any:
    """One part of a record built from its JSON, a failure naming the part (unknown or missing keys)."""
    try:
        return build(data)
    except RecordError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise RecordError(name, f"{type(e).__name__}: {e}") from None
