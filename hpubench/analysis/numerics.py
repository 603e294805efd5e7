"""A verdict on every cell's training numerics: does the faster configuration still train? Pure.

A cell whose loss is finite but wrong (a stale graph output, a bad fp8 scale, a wrong cast) used to be
``ok`` and could be named the best configuration. This module compares the cell's loss trajectory over
its first steps with a *reference*: the same workload, size, batch and seed on the same accelerator at
32-true, eager, one device, trained from identical initial weights on identical batches
(``hpubench.run.cellrun.reference`` computes it, once per run). Warm-up steps are the first steps: they
start from the seeded weights, so the first :data:`STEPS_COMPARED` steps of any cell are comparable.

Verdicts, most severe first (:data:`PRECEDENCE`):

- ``diverged``: a loss is not finite (NaN or infinite); the cell's run also fails, as before.
- ``drift``: the trajectory left the reference by more than the tolerance of the cell's precision and
  mode (:data:`TOLERANCES`, measured by ``benchmarks/numerics_tolerance.py``; figures in
  docs/measurements.md).
- ``unchecked``: no comparable reference exists (data not reproducible from the seed, ranks whose steps
  one device cannot replay, the reference failed), with the reason; never a silent ``ok``.

A cell of several ranks is compared with the mean of its ranks' losses, against a one-device reference
that replays the data-parallel step (``hpubench.run.cellrun.rankref``).
- ``ok``: within the tolerance at every compared step.

Records written before the verdict existed hold ``None``: unjudged, which no table shows as ok.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hpubench.plan.cell import Cell
from hpubench.store.record import STATUS_FAILED, CellResult

OK = "ok"
DRIFT = "drift"
DIVERGED = "diverged"
UNCHECKED = "unchecked"
# Most severe first: several cells (or ranks) together read as the first verdict among them here.
PRECEDENCE: tuple[str, ...] = (DIVERGED, DRIFT, UNCHECKED, OK)
VERDICTS = PRECEDENCE

STEPS_COMPARED = 8
"""Steps of the trajectory compared (fewer where the cell runs fewer). Enough for a wrong cast, a stale
graph or a bad scale to show (each moves the loss from the first update on), few enough that the fp32
reference costs a handful of eager steps once per run, and short enough that rounding differences,
which grow with every update, stay well below a real error."""

FLOOR_SHARE = 0.1
"""The deviation at a step is measured against ``max(|reference loss|, FLOOR_SHARE * largest |reference
loss|)``: a loss trained towards zero would otherwise turn a negligible absolute difference into a large
relative one."""

MARGIN = 4.0
"""How far above the largest deviation measured a tolerance is set: the measurement covers tiny models on
one CPU over three seeds; larger models, other kernels and other devices stray further."""

MIN_TOLERANCE = 0.001
"""No tolerance is below this: fp32 strays far less on the CPU (docs/measurements.md), but a device that
reorders fp32 sums (atomics, TF32 matmuls) strays more, and an error worth finding moves the loss by
percents (a wrong cast, a stale graph output), not by a tenth of one."""

REFERENCE_PRECISION = "32-true"
REFERENCE_MODE = "eager"


@dataclass(frozen=True)
class Tolerances:
    """Largest relative deviation (:func:`deviation`) still called ``ok``, per precision and per mode.

    A cell's tolerance is its precision's (against fp32 eager) plus its mode's (a compiled or graph-
    captured step reorders floating-point work), so bf16 under torch.compile allows both. Precisions and
    modes not measured borrow a measured one's figure (``nearest``), which the reason line names.
    """

    precision: tuple[tuple[str, float], ...]
    mode: tuple[tuple[str, float], ...]
    nearest: tuple[tuple[str, str], ...]  # an unmeasured precision or mode -> the measured one it borrows
    graphs: str = "compile"  # graph capture (HPU / CUDA graphs) borrows this mode's tolerance

    def for_precision(self, precision: str) -> tuple[float, str]:
        """The precision's tolerance and the measured kind it comes from; an unknown precision (a
        plugin's) gets the loosest measured one."""
        table, nearest = dict(self.precision), dict(self.nearest)
        kind = precision if precision in table else nearest.get(precision)
        if kind in table:
            return table[kind], kind
        loosest = max(table, key=lambda k: table[k])
        return table[loosest], loosest

    def for_mode(self, mode: str, graphs: bool = False) -> tuple[float, str]:
        """The mode's extra tolerance (0 for eager) and the measured kind it comes from."""
        table, nearest = dict(self.mode), dict(self.nearest)
        kind = mode if mode in table else nearest.get(mode, self.graphs)
        if graphs and table.get(self.graphs, 0.0) > table.get(kind, 0.0):
            kind = self.graphs
        return table.get(kind, 0.0), kind

    def allowed(self, precision: str, mode: str, graphs: bool = False) -> tuple[float, str]:
        """The cell's tolerance and a few words saying what it is made of."""
        p_tol, p_kind = self.for_precision(precision)
        m_tol, m_kind = self.for_mode(mode, graphs)
        label = p_kind if p_kind == precision else f"{precision} as {p_kind}"
        if m_tol:
            shown = mode + (" + graphs" if graphs else "")
            label += f" + {shown}" if m_kind == mode else f" + {shown} as {m_kind}"
        return p_tol + m_tol, label


TOLERANCES = Tolerances(
    # Each is MARGIN x the largest deviation measured over the reference workloads and seeds, rounded up to
    # one significant figure, and never below MIN_TOLERANCE (benchmarks/numerics_tolerance.py; the figures
    # are in docs/measurements.md, 2026-11-27).
    precision=(("32-true", 0.001), ("bf16-mixed", 0.005), ("16-mixed", 0.003), ("bf16-true", 0.06)),
    mode=(("eager", 0.0), ("compile", 0.004)),
    nearest=(("fp8", "bf16-true"), ("lazy", "compile")),
)


def step_deviations(losses: Sequence[float], reference: Sequence[float]) -> tuple[float, ...]:
    """Each common first step's relative deviation (at most :data:`STEPS_COMPARED` steps), measured
    against the reference's own scale (:data:`FLOOR_SHARE`), so one tolerance serves losses of 7 and of
    0.02."""
    n = min(len(losses), len(reference), STEPS_COMPARED)
    if n == 0:
        return ()
    scale = max(abs(r) for r in reference[:n])
    return tuple(
        abs(losses[i] - reference[i]) / max(abs(reference[i]), FLOOR_SHARE * scale, 1e-12) for i in range(n)
    )


def deviation(losses: Sequence[float], reference: Sequence[float]) -> tuple[float, int]:
    """The largest of :func:`step_deviations` and its step ((0.0, -1) with no common step): the maximum
    rather than a mean, because one wrong step anywhere is the finding."""
    devs = step_deviations(losses, reference)
    if not devs:
        return 0.0, -1
    at = max(range(len(devs)), key=lambda i: devs[i])
    return devs[at], at


def judge(
    losses: Sequence[float],
    reference: Sequence[float] | None,
    precision: str,
    mode: str,
    why_unchecked: str | None = None,
    *,
    graphs: bool = False,
    tolerances: Tolerances = TOLERANCES,
) -> tuple[str, tuple[str, ...]]:
    """The verdict on a cell's first losses and one line per problem (none when ``ok``).

    ``why_unchecked``: why no comparable reference exists for the cell (several ranks, data not
    reproducible, the reference failed); a non-finite loss is ``diverged`` even then, since it needs none.
    """
    bad = [(i, v) for i, v in enumerate(losses) if not math.isfinite(v)]
    if bad:
        i, v = bad[0]
        return DIVERGED, (f"step {i}: loss {v} is not finite (the first of {len(bad)} non-finite steps)",)
    if why_unchecked:
        return UNCHECKED, (why_unchecked,)
    if not reference:
        return UNCHECKED, ("no reference trajectory to compare with",)
    ref_bad = next((i for i, v in enumerate(reference) if not math.isfinite(v)), None)
    if ref_bad is not None:
        return UNCHECKED, (
            f"the 32-true eager reference itself diverged at step {ref_bad}: nothing to compare",
        )
    n = min(len(losses), len(reference), STEPS_COMPARED)
    if n == 0:
        return UNCHECKED, ("the cell ran no step to compare with the reference",)
    tol, label = tolerances.allowed(precision, mode, graphs)
    largest, at = deviation(losses, reference)
    if largest <= tol:
        return OK, ()
    over = sum(1 for d in step_deviations(losses, reference) if d > tol)
    return DRIFT, (
        f"step {at}: loss {losses[at]:.6g} vs reference {reference[at]:.6g}, relative deviation "
        f"{largest:.3g} > tolerance {tol:.3g} ({label}; {over} of {n} steps over)",
    )


def worst(verdicts: Iterable[str | None]) -> str | None:
    """The most severe of ``verdicts`` (:data:`PRECEDENCE`); None where none was judged."""
    seen = [v for v in verdicts if v is not None]
    if not seen:
        return None
    rank = {v: i for i, v in enumerate(PRECEDENCE)}
    return min(seen, key=lambda v: rank.get(v, -1))


def judged_failure(result: CellResult) -> CellResult:
    """A failed record nobody judged (its process crashed, timed out or never started, so the launcher
    wrote it): ``unchecked`` with the reason, rather than unjudged, which reads as a record from before
    numerics existed."""
    if result.status != STATUS_FAILED or result.numerics is not None:
        return result
    why = f"the cell stopped before its losses were compared: {result.reason or 'no reason recorded'}"
    return replace(result, numerics=UNCHECKED, numerics_reasons=(why,))


def judge_facts(
    facts: Mapping[str, Any] | None, precision: str, mode: str, graphs: bool = False
) -> tuple[str, tuple[str, ...]]:
    """:func:`judge` on what a record's ``runtime["numerics"]`` holds (the cell's losses, the reference's,
    why no reference compares), so the verdict can be recomputed from the record alone. A cell that is its
    own reference says so in its one reason line (``note``)."""
    facts = facts or {}
    losses = [float(x) for x in facts.get("losses") or ()]  # "nan" / "inf" were written as text
    reference = facts.get("reference_losses")
    ref = [float(x) for x in reference] if reference is not None else None
    verdict, reasons = judge(losses, ref, precision, mode, facts.get("unchecked"), graphs=graphs)
    note = facts.get("note")
    if verdict == OK and note:
        reasons = (str(note),)
    return verdict, reasons


def reference_steps_planned(cells: Sequence[Cell]) -> tuple[int, ...]:
    """The reference steps each cell of a run (in run order) is expected to compute, for its estimate:
    :data:`STEPS_COMPARED` for the first cell of each reference (workload, options, size, accelerator,
    batch, ranks) unless a one-device cell in the reference configuration running at least that many steps
    came first (it becomes the reference), 0 for every other cell. A reference for W ranks trains each step
    on the W ranks' batches on one device: W times the steps of one batch."""
    covered: set[tuple[Any, ...]] = set()
    out: list[int] = []
    for cell in cells:
        key = (cell.workload, tuple(sorted(dict(cell.options).items())), cell.size, cell.accelerator)
        key += (cell.batch_size, cell.world_size)
        if key in covered:
            out.append(0)
            continue
        covered.add(key)
        own = cell.precision == REFERENCE_PRECISION and cell.mode == REFERENCE_MODE and not cell.graphs
        own = own and cell.world_size == 1
        runs = cell.warmup_steps + (cell.steps if cell.steps is not None else STEPS_COMPARED)
        out.append(0 if own and runs >= STEPS_COMPARED else STEPS_COMPARED * cell.world_size)
    return tuple(out)
