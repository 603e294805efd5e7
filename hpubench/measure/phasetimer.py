"""The phase split's pass: a few steps after the measured ones, each phase timed on its own.

It runs after the plain steps and the memory snapshot (``hpubench.measure.observe``), so the syncs it adds
between phases touch neither the headline figure nor the peak memory. The steps it runs train the model
further, as the loader and profile passes do; nothing is measured from the model after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hpubench.measure.phases import (
    SAMPLED_STEPS,
    PhasedStep,
    PhasePlan,
    PhaseSplit,
    not_separable,
    split_from_samples,
)

if TYPE_CHECKING:
    from workloads.base import Batch

WARM_STEPS = 1  # untimed phased steps first: the first call of each phase from a new call site


def run_phase_pass(
    phased: PhasedStep,
    next_batch: Callable[[], Batch],
    synchronize: Callable[[], None],
    step_mean_s: float,
    data_s: Sequence[float] | None = None,
    notes: Sequence[str] = (),
    steps: int = SAMPLED_STEPS,
    step_p50_s: float | None = None,
) -> PhaseSplit:
    """``steps`` phased steps after :data:`WARM_STEPS` untimed ones, each phase between two syncs; the
    split of their medians against ``step_mean_s``. ``data_s``: the host loader's per-step waits, where a
    loader pass ran."""
    forward: list[float] = []
    backward: list[float] = []
    optimizer: list[float] = []
    phased.zero_grad()  # the measured step zeroes at its start: its last gradients are still there
    for i in range(WARM_STEPS + steps):
        batch = next_batch()
        synchronize()
        t0 = time.perf_counter()
        loss = phased.forward(batch)
        synchronize()
        t1 = time.perf_counter()
        phased.backward(loss)
        synchronize()
        t2 = time.perf_counter()
        del loss  # as the measured loop: no step's graph outlives it
        phased.optimizer()
        synchronize()
        t3 = time.perf_counter()
        if i >= WARM_STEPS:
            forward.append(t1 - t0)
            backward.append(t2 - t1)
            optimizer.append(t3 - t2)
    return split_from_samples(forward, backward, optimizer, step_mean_s, data_s, notes, step_p50_s=step_p50_s)


def split_phases(
    plan: PhasePlan,
    next_batch: Callable[[], Batch],
    synchronize: Callable[[], None],
    step_mean_s: float,
    data_s: Sequence[float] | None = None,
    step_p50_s: float | None = None,
) -> PhaseSplit:
    """The cell's split: not separable with the plan's reason where the step has no phases, else the
    pass; a pass that fails is recorded as no split with the failure, as the profile pass is, so the
    cell's figures stand."""
    if plan.phased is None:
        why = plan.why_not or "no phased step for this cell"
        return not_separable(why, step_mean_s, plan.notes, step_p50_s)
    try:
        return run_phase_pass(
            plan.phased, next_batch, synchronize, step_mean_s, data_s, plan.notes, step_p50_s=step_p50_s
        )
    except Exception as exc:
        text = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        return not_separable(f"the phase pass failed: {text}", step_mean_s, plan.notes, step_p50_s)
