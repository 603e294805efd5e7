"""The gate's memory verdicts: growth past both the relative threshold and the absolute floor fails; runs
that overlap, too few runs of a process's resident set, or different memory sources do not."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from gatedata import CELLS, MEAN, MIB, by_key, make_side

from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.outcomes import MEMORY, NO_CHANGE, NOISY, NOT_TESTED, REGRESSION
from hpubench.measure.memory import MemoryStats


def test_memory_growth_beyond_threshold_and_floor_regresses() -> None:
    rng = np.random.default_rng(8)
    dev = "torch.cuda.memory_stats"
    base = make_side(rng, CELLS, peak=300 * MIB, source=dev)
    cur = make_side(rng, CELLS[:1], peak=330 * MIB, source=dev) + make_side(
        rng, CELLS[1:], peak=300 * MIB + MIB // 2, source=dev
    )
    res = gate(base, cur)
    by = by_key(res)
    v = by[CELLS[0].match_key]
    assert v.outcome == REGRESSION and v.memory.decision == REGRESSION
    assert v.memory.change == pytest.approx(0.1)
    assert "peak memory +10.0%" in v.reason
    assert by[CELLS[1].match_key].memory.decision == NO_CHANGE


def test_process_rss_growth_needs_three_runs_a_side() -> None:
    """A process's resident set varies by 10-15% between identical runs on this VM: one or two runs a side
    cannot fail on it; three a side, every current peak above every baseline one, can."""
    rng = np.random.default_rng(33)
    for runs in (1, 2):
        (v,) = gate(
            make_side(rng, CELLS[:1], repeats=runs, peak=300 * MIB),
            make_side(rng, CELLS[:1], repeats=runs, peak=350 * MIB),
            MEAN,
        ).cells
        assert v.memory.decision == NOISY and not v.fails and "3 or more runs a side" in v.memory.detail
    (w,) = gate(
        make_side(rng, CELLS[:1], repeats=3, peak=300 * MIB),
        make_side(rng, CELLS[:1], repeats=3, peak=350 * MIB),
        MEAN,
    ).cells
    assert w.memory.decision == REGRESSION and w.fails


def test_memory_growth_under_the_absolute_floor_passes() -> None:
    rng = np.random.default_rng(9)
    # 20% of 2 MiB is 0.4 MiB: past the relative threshold, under the 1 MiB floor.
    res = gate(make_side(rng, CELLS[:1], peak=2 * MIB), make_side(rng, CELLS[:1], peak=int(2.4 * MIB)))
    assert res.passed and res.cells[0].memory.decision == NO_CHANGE


def test_memory_with_repeats_needs_separated_runs() -> None:
    rng = np.random.default_rng(10)
    base = [
        replace(r, memory=MemoryStats("process", peak_allocated_bytes=p))
        for r, p in zip(make_side(rng, CELLS[:1], repeats=3), [300 * MIB, 360 * MIB, 310 * MIB], strict=True)
    ]
    cur = [
        replace(r, memory=MemoryStats("process", peak_allocated_bytes=p))
        for r, p in zip(make_side(rng, CELLS[:1], repeats=3), [340 * MIB, 350 * MIB, 345 * MIB], strict=True)
    ]
    (v,) = gate(base, cur).cells
    assert v.memory.decision == NOISY and not v.fails  # the medians differ by 11%, the runs overlap


def test_memory_of_different_sources_is_not_compared() -> None:
    rng = np.random.default_rng(11)
    base = make_side(rng, CELLS[:1])
    cur = [
        replace(r, memory=MemoryStats("hpu.memory_stats", peak_allocated_bytes=10 * MIB))
        for r in make_side(rng, CELLS[:1])
    ]
    (v,) = gate(base, cur).cells
    assert v.memory.metric == MEMORY and v.memory.decision == NOT_TESTED
    assert "not comparable" in v.memory.detail
