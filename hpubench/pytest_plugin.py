"""pytest plugin: benchmark hpubench cells from your own ``test_*.py`` files with pytest-benchmark.

    def test_mlp_tiny(hpubench_cell):
        result = hpubench_cell("mlp", size="tiny", steps=50)
        assert result.metrics.samples_per_s > 1000

The cell runs exactly as in ``hpubench run``: through the launcher, in its own process, warm-up kept
apart, the device synchronised around every step. Its measured step times then become the rounds of
the test's ``benchmark`` fixture, so pytest-benchmark's table, ``--benchmark-save``,
``--benchmark-compare``, ``--benchmark-compare-fail`` and ``--benchmark-json`` work as for any benchmark,
and the saved JSON carries the cell's key, throughput and peak memory in ``extra_info``.

How the times get in: pytest-benchmark times a callable with a timer; this plugin gives those tests a
timer (through the public ``benchmark(timer=...)`` marker, merged with any marker the test has) that
replays the recorded step times, and calls ``benchmark.pedantic`` with one round per measured step. So
the statistics are pytest-benchmark's own, computed from hpubench's measurements, not from timing a
no-op here. One cell per test, as pytest-benchmark records one benchmark per test.

Loaded automatically where hpubench is installed (entry point ``pytest11``); it imports nothing heavy
until a test asks for ``hpubench_cell``. A session-scoped ``hpubench_launcher`` keeps one pre-warmed
worker pool for the whole session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from hpubench.run.launch import Launcher
    from hpubench.store.record import CellResult

DEFAULT_TIMEOUT_S = 900.0


class ReplayClock:
    """A pytest-benchmark timer that replays recorded durations.

    pytest-benchmark reads the timer twice per round (before and after the call) and records the
    difference; this clock answers 0.0 and then the next recorded duration, so each round records one
    measured step exactly, with no floating-point drift from a running total.
    """

    __name__ = "hpubench_recorded_step_time"  # how pytest-benchmark names the timer in saved JSON

    def __init__(self) -> None:
        self._durations: list[float] = []
        self._next = 0
        self._started = False

    def load(self, durations: Sequence[float]) -> None:
        self._durations = [float(d) for d in durations]
        self._next = 0
        self._started = False

    def __call__(self) -> float:
        if not self._started:
            self._started = True
            return 0.0
        self._started = False
        if self._next >= len(self._durations):
            raise RuntimeError("pytest-benchmark asked for more rounds than the cell measured steps")
        value = self._durations[self._next]
        self._next += 1
        return value


_CLOCK = pytest.StashKey[ReplayClock]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test that uses ``hpubench_cell`` a replaying timer, keeping its other marker options."""
    for item in items:
        if "hpubench_cell" not in getattr(item, "fixturenames", ()):
            continue
        clock = ReplayClock()
        item.stash[_CLOCK] = clock
        existing = item.get_closest_marker("benchmark")
        kwargs = dict(existing.kwargs) if existing is not None else {}
        kwargs["timer"] = clock
        item.add_marker(pytest.mark.benchmark(**kwargs), append=False)  # first: the closest marker wins


@pytest.fixture(scope="session")
def hpubench_launcher() -> Iterator[Launcher]:
    """One launcher (and its pre-warmed worker processes) for the whole test session."""
    # deferred: this plugin loads in every pytest session; the launcher (numpy, psutil) only when asked
    from hpubench.run.launch import Launcher

    with Launcher() as launcher:
        yield launcher


def _noop() -> None:
    return None


@pytest.fixture
def hpubench_cell(
    request: pytest.FixtureRequest, benchmark: Any, hpubench_launcher: Launcher, tmp_path: Path
) -> Callable[..., CellResult]:
    """Run one cell and record its steps as this test's benchmark; returns the cell's CellResult.

    Call it with a workload name and Cell fields (``hpubench_cell("gpt", precision="bf16-mixed")``) or
    with a Cell. A cell that fails fails the test with its reason; one that cannot run here is skipped.
    """
    # deferred: this plugin loads in every pytest session; hpubench itself only when a test asks
    from hpubench.plan.cell import Cell, PlannedCell
    from hpubench.store.rundir import ResultStore  # deferred: as above

    clock = request.node.stash.get(_CLOCK, None)
    if clock is None:  # asked for dynamically (getfixturevalue): collection could not set the timer
        raise pytest.UsageError("hpubench_cell must be a test argument, not requested with getfixturevalue")
    used: list[str] = []

    def run(cell: Cell | str, /, *, timeout_s: float = DEFAULT_TIMEOUT_S, **fields: Any) -> CellResult:
        if used:
            raise RuntimeError(
                f"hpubench_cell already ran {used[0]} in this test; benchmark one cell per test"
            )
        c = replace(cell, **fields) if isinstance(cell, Cell) else Cell(cell, **fields)
        used.append(c.key)
        store = ResultStore(tmp_path / "hpubench-run")
        (result,) = hpubench_launcher.run([PlannedCell(c)], store, timeout_s=timeout_s)
        if result.status == "skipped":
            pytest.skip(f"{c.key}: {result.reason}")
        if result.status != "ok" or result.metrics is None:
            tail = f"\n{result.traceback_tail}" if result.traceback_tail else ""
            pytest.fail(f"{c.key} failed: {result.reason}{tail}", pytrace=False)
        m = result.metrics
        benchmark.extra_info.update(
            {
                "hpubench_key": result.key,
                "samples_per_s": m.samples_per_s,
                "tokens_per_s": m.tokens_per_s,
                "first_step_s": m.first_step_s,
                "mfu": m.mfu,
                "peak_memory_bytes": result.memory.peak_allocated_bytes if result.memory else None,
                "device_name": result.runtime.device_name,
            }
        )
        clock.load(result.step_times_s)
        benchmark.pedantic(_noop, rounds=len(result.step_times_s), iterations=1, warmup_rounds=0)
        return result

    return run
