"""Everything a run records *about* a cell beyond its figures: memory timeline, telemetry, loader split,
profile, phase split. The worker drives it through a few fixed calls, so the measuring code stays the
same for every option; the runtime facts it learns are returned, for the record to merge.

Order matters and is fixed here: telemetry sources open before the warm-up (library start-up never lands
in the measured window), memory samples and telemetry ride on the plain steps through ``measure_steps``'
hooks (outside the timed brackets), and the loader and profile passes run only after the plain steps
and the memory snapshot are taken, so neither can touch the throughput, its interval or the peak memory.
The phase split runs last, on every cell, with the loader pass's waits as its data phase where one ran.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hpubench.measure.compilecount import CompileWindow
from hpubench.measure.devicestats import MemoryTimeline
from hpubench.measure.loader import LoaderSplit, run_loader_pass
from hpubench.measure.phases import PhasePlan, PhaseSplit
from hpubench.measure.phasetimer import split_phases
from hpubench.measure.profile import ProfileResult, failed_profile, profile_steps, trace_relpath
from hpubench.measure.telemetry import Monitor, TelemetryResult
from hpubench.plan.runoptions import RunOptions

if TYPE_CHECKING:
    import torch

    from hpubench.accelerators.base import Accelerator
    from hpubench.plan.cell import Cell
    from workloads.base import Batch


class Observation:
    """One cell's observers beside its figures, driven in a fixed order (module docstring) so that none
    can touch the measured steps: hooks around them, then :meth:`window_facts`, :meth:`summarise` and
    :meth:`extra_passes` after them, :meth:`record_fields` for the record and :meth:`close` in any case.
    """

    def __init__(
        self, cell: Cell, acc: Accelerator, options: RunOptions, samples_per_step: int, world_size: int = 1
    ) -> None:
        """``samples_per_step`` is global (all ranks), like the plain figures."""
        self.cell = cell
        self.acc = acc
        self.options = options
        self.samples_per_step = samples_per_step
        self.world_size = world_size
        # Under --steps auto the last measured step is not known ahead, so it gets no sample of its own
        # (the memory snapshot after the measured steps still covers it).
        self.timeline = MemoryTimeline(acc.memory_stats, options.memory_every, cell.steps or 0)
        self.monitor = (
            Monitor(acc.telemetry_source, options.telemetry_interval_s) if options.telemetry else None
        )
        self.compiles = CompileWindow(acc.compile_counters())  # steady-state proof, on every cell
        self.loader: LoaderSplit | None = None
        self.profile: ProfileResult | None = None
        self.telemetry: TelemetryResult | None = None
        self.phases: PhaseSplit | None = None  # a distributed cell's caller puts rank 0's here

    def measure_hooks(self) -> dict[str, Callable[..., None]]:
        """Keyword arguments for ``measure_steps``: the observers ride on its hooks, which run outside every
        timed bracket, so observing never lands in a step time."""
        self.timeline.start()
        hooks: dict[str, Callable[..., None]] = {}
        if self.timeline.enabled:
            hooks["on_step"] = self.timeline.on_step
        # The compile count opens before the warm-up's lead-in step (hpubench.measure.steps): the warm-up
        # rule had stopped by then, so a compile in that step means the compiler was not done.
        hooks["on_window_open"] = self.compiles.start
        ends = [self.compiles.stop]
        if self.monitor is not None:
            hooks["on_measured_start"] = self.monitor.start
            ends.insert(0, self.monitor.stop)
        hooks["on_measured_end"] = _chain(ends)
        return hooks

    def window_facts(self) -> tuple[tuple[str, Any], ...]:
        """The compile counts over the measured window, as runtime facts: the steady-state proof.

        Read before anything else runs after the measured steps, so a pass that fails later still leaves
        them in the failed record.
        """
        compiles = self.compiles.result()
        return tuple(compiles.runtime_fields().items()) if compiles is not None else ()

    def summarise(self, measured_steps: int | None = None) -> tuple[tuple[str, Any], ...]:
        """The telemetry summary over the measured steps (kept for :meth:`record_fields`), then the memory
        timeline's failure as a runtime fact, if it had one.

        ``measured_steps``: how many plain steps ran (the cell's count unless ``--steps auto`` chose it).
        """
        steps = measured_steps if measured_steps is not None else self.cell.steps or 0
        if self.monitor is not None:
            self.monitor.stop()
            # A source measures this process's device only, so per-sample energy uses its share.
            per_device = max(1, self.samples_per_step // max(1, self.world_size))
            self.telemetry = self.monitor.result(steps, per_device, self.options.energy_price_per_kwh)
            if self.world_size > 1 and self.telemetry.source is not None:
                self.telemetry = replace(
                    self.telemetry,
                    notes=(
                        *self.telemetry.notes,
                        f"one device of {self.world_size}: energy and samples are this rank's share",
                    ),
                )
        return (("memory_timeline_error", self.timeline.error),) if self.timeline.error else ()

    def extra_passes(
        self,
        step: Callable[[Batch], torch.Tensor],
        batches: Sequence[Batch],
        host_batches: Callable[[], Iterator[Batch]],
        plain_step_mean_s: float,
        measured_steps: int | None = None,
    ) -> None:
        """The loader pass and the profile pass, each only when asked for, after the plain steps so
        neither touches their figures; their results are kept for :meth:`record_fields`."""
        opts = self.options
        steps = measured_steps if measured_steps is not None else self.cell.steps or 0
        feed: Iterator[Batch] | None = None
        if opts.loader == "host":
            feed = host_batches()
            self.loader = run_loader_pass(step, feed, self.acc.synchronize, steps, self.samples_per_step)
        if opts.profile is not None:
            source = feed if feed is not None else itertools.cycle(batches)
            rel = opts.trace_relpath or trace_relpath(self.cell.key)
            path = Path(opts.output_dir) / rel if opts.output_dir else None
            try:
                self.profile = profile_steps(
                    step,
                    lambda: next(source),
                    self.acc.synchronize,
                    self.acc,
                    opts.profile,
                    path,
                    rel,
                    plain_step_mean_s,
                )
            except Exception as exc:
                self.profile = failed_profile(opts.profile, exc)

    def phase_pass(self, plan: PhasePlan, batches: Sequence[Batch], measured_s: Sequence[float]) -> None:
        """The phase split (``hpubench.measure.phases``) on the measured step's own batches, after the other
        passes, checked against ``measured_s`` (this process's measured step times); the loader pass's
        per-step waits, where it ran, are its data phase."""
        source = itertools.cycle(batches)
        data = self.loader.data_wait_s if self.loader is not None else None
        mean, p50 = sum(measured_s) / len(measured_s), statistics.median(measured_s)
        self.phases = split_phases(plan, lambda: next(source), self.acc.synchronize, mean, data, p50)

    def record_fields(self) -> dict[str, Any]:
        """The CellResult fields this observation fills (defaults where nothing was asked for)."""
        return {
            "memory_timeline": tuple(self.timeline.samples),
            "telemetry": self.telemetry,
            "loader": self.loader,
            "profile": self.profile,
            "phases": self.phases,
        }

    def close(self) -> None:
        """Release the telemetry sources, also when the steps failed (a sampler thread must not outlive
        the cell)."""
        if self.monitor is not None:
            self.monitor.close()


def _chain(calls: Sequence[Callable[[], None]]) -> Callable[[], None]:
    """One hook running several, in order (the measured window has several observers)."""

    def run() -> None:
        for call in calls:
            call()

    return run
