"""Synthetic result records for the gate tests: autocorrelated step times, repetitions, drift."""

from __future__ import annotations

import math

import numpy as np

from hpubench.analysis.gate.rules import GateSettings
from hpubench.measure.memory import MemoryStats
from hpubench.plan.cell import Cell
from hpubench.store.record import CellResult, Metrics

MIB = 1 << 20
CELLS = [Cell("mlp"), Cell("gpt"), Cell("mlp", precision="bf16-mixed")]
# Most gate tests use stationary step noise (AR(1), no slow stretches), for which the mean is the
# efficient statistic; the default (fastest step, permutation test) is tested on regime noise.
MEAN = GateSettings(statistic="mean")


def by_key(result) -> dict:
    """A gate result's cell verdicts by their match key."""
    return {v.key: v for v in result.cells}


def make_metrics(steps: tuple[float, ...], samples_per_step: int) -> Metrics:
    """Cheap metrics (the gate reads step times and samples per step; no bootstrap needed here)."""
    mean = sum(steps) / len(steps)
    sps = samples_per_step / mean
    return Metrics(
        measured_steps=len(steps),
        warmup_steps=2,
        samples_per_step=samples_per_step,
        tokens_per_step=None,
        samples_per_s=sps,
        samples_per_s_ci=(sps, sps),
        tokens_per_s=None,
        tokens_per_s_ci=None,
        confidence=0.95,
        step_time_mean_s=mean,
        step_time_std_s=0.0,
        step_time_p50_s=mean,
        step_time_p90_s=mean,
        step_time_p99_s=mean,
        first_step_s=0.1,
        warmup_total_s=0.15,
        loss_first=2.3,
        loss_last=2.2,
        flops_per_step=1000,
        achieved_tflops=None,
        peak_tflops=None,
        peak_source=None,
        mfu=None,
    )


def make_result(
    cell: Cell,
    times: np.ndarray,
    *,
    repeat: int = 0,
    peak: int | None = 300 * MIB,
    source: str = "process",
    samples_per_step: int = 64,
    device: str = "cpu0",
    numerics: str | None = "ok",  # as today's worker records a measured cell whose loss matched the reference
) -> CellResult:
    steps = tuple(float(t) for t in times)
    memory = None if peak is None else MemoryStats(source, peak_allocated_bytes=peak)
    return CellResult(
        cell,
        "ok",
        metrics=make_metrics(steps, samples_per_step),
        memory=memory,
        runtime={"device_name": device},
        step_times_s=steps,
        repeat=repeat,
        numerics=numerics,
    )


def ar1_steps(rng: np.random.Generator, n: int = 60, mean: float = 0.01, cv: float = 0.05, rho: float = 0.5):
    """Autocorrelated (AR(1)) log-normal-ish step times: what a busy machine produces."""
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0]
    for i in range(1, n):
        x[i] = rho * x[i - 1] + math.sqrt(1 - rho**2) * e[i]
    return mean * np.exp(cv * x - cv**2 / 2)


def make_side(
    rng: np.random.Generator,
    cells: list[Cell],
    *,
    slowdown: float = 0.0,
    repeats: int = 1,
    run_sd: float = 0.0,
    peak: int = 300 * MIB,
    samples_per_step: int = 64,
    device: str = "cpu0",
    source: str = "process",
    **kw,
) -> list[CellResult]:
    out = []
    for r in range(repeats):
        for cell in cells:
            drift = math.exp(rng.normal(0, run_sd)) if run_sd else 1.0
            times = ar1_steps(rng, **kw) * (1 + slowdown) * drift
            out.append(
                make_result(
                    cell,
                    times,
                    repeat=r,
                    peak=peak,
                    samples_per_step=samples_per_step,
                    device=device,
                    source=source,
                )
            )
    return out


def regime_steps(
    rng: np.random.Generator,
    n: int = 200,
    mean: float = 0.01,
    cv: float = 0.03,
    slow: float = 1.3,
    p_switch: float = 0.01,
    p_slow_start: float = 0.4,
) -> np.ndarray:
    """Step times on a shared VM as measured on this project's: quiet steps, but the whole machine drops
    to a slower speed (``slow`` x) for long stretches, often a whole run. A two-state Markov chain."""
    slow_now = rng.random() < p_slow_start
    out = np.empty(n)
    for i in range(n):
        if rng.random() < p_switch:
            slow_now = not slow_now
        out[i] = mean * (slow if slow_now else 1.0) * math.exp(cv * rng.normal())
    return out


def regime_side(
    rng: np.random.Generator, cells: list[Cell], repeats: int, slowdown: float = 0.0
) -> list[CellResult]:
    return [
        make_result(cell, regime_steps(rng) * (1 + slowdown), repeat=r)
        for r in range(repeats)
        for cell in cells
    ]


def drifting_side(
    rng: np.random.Generator,
    cell: Cell,
    runs: int,
    drift_sd: float,
    *,
    slowdown: float = 0.0,
    n: int = 40,
    step_cv: float = 0.05,
) -> list[CellResult]:
    """Runs that drift as a whole (log-normal, sd ``drift_sd``: 0.04-0.10 is what this project's VM shows
    for run means) with AR(1) step noise inside each run: the case a single run cannot see."""
    return [
        make_result(
            cell,
            ar1_steps(rng, n=n, cv=step_cv) * math.exp(rng.normal(0, drift_sd)) * (1 + slowdown),
            repeat=r,
        )
        for r in range(runs)
    ]
