"""Regression gating: one trustworthy pass/fail for a whole matrix, baseline against current.

Pure: lists of CellResults in, frozen verdicts out; no I/O, no torch. Cells are matched exactly as
``hpubench compare`` matches them (``hpubench.analysis.compare``: by ``Cell.match_key``, repetitions grouped).

Throughput: when does a cell regress?
    A cell regresses when its throughput drop is larger than the threshold (``--max-regression``,
    5% by default) AND the drop is statistically significant after a multiple-comparison correction
    over every cell tested (Holm by default, at ``alpha`` = 0.01).

    Why both. A fixed threshold alone (TorchBench's 7%, pytest-benchmark's ``--benchmark-compare-fail``)
    fails noisy cells by chance and cannot tell a real 6% from noise; significance alone fails a build for
    a real but irrelevant 0.3% on a quiet machine. Requiring both is asv's rule, and the two parts do
    different jobs: significance bounds the false alarms, the threshold says what is worth failing for.

    Why not "the whole confidence interval lies beyond the threshold" (a test of "drop <= threshold").
    That rule flags only changes shown to be *larger* than the threshold: a true 10% slowdown against a
    5% threshold would need the noise to be under about 2% per side, which repeated CPU runs rarely give,
    and the gate would miss most 10% slowdowns. With ours, the chance of failing when nothing changed is
    still at most ``alpha`` (significance alone guarantees it; the threshold only removes more), and a
    slowdown twice the threshold is caught as soon as it is measured precisely enough to be told from
    zero. The price: a real change close to the threshold is flagged about half of the time, because the
    threshold is where we stop caring, not a guarantee. Improvements mirror regressions on the log scale
    (a gain past 1/(1 - threshold) - 1, significant), so swapping the two sides swaps the two verdicts.

    Why Holm, over all tested cells. Any single false alarm fails the build, so the error rate a team
    feels is the family-wise one (the chance of any false alarm), which Holm controls and is never less
    powerful than Bonferroni. ``correction="bh"`` (Benjamini-Hochberg) is offered for big matrices where
    many cells move together: under "nothing changed" it has the same false-alarm rate, and it finds more
    when much changed. The family is every cell with a throughput test, not only those past the
    threshold: correcting over cells selected by their estimate would understate the multiplicity.

    What is compared (``statistic``): each run is summarised by one figure, by default its fastest step
    ("min"). On a shared machine the speed the host gives a VM changes for seconds at a time (measured on
    this project's 2-core VM: stretches 20-50% slower, whole 3-second runs inside one), so a run's mean or
    median moves by 5-15% between identical runs, while its fastest step, taken from whichever stretch
    ran at full speed, moves by 1-2%. A change that slows every step moves the fastest step as much as the
    mean; a change that only adds occasional stalls does not, and for that ``statistic="mean"`` (what
    training delivers) is there, for quiet dedicated runners.

    The test (``analysis.ratiotests``). With enough repetitions on both sides (``hpubench run --repeat
    N``): a permutation test on the runs' log values, comparing the mean of the fastest half of each side's
    runs; the change shown is that shift. Runs, not steps, are the samples, so run-to-run drift is part of
    the noise. The fastest half, because the machine only ever slows a run down: a run slowed as a whole
    would swell a t test's variance, and a rank test would count it as slower than every run of the other
    side; either way a real change can be missed (on the project VM's runs, a t test on fastest steps
    caught 18 of 20 planted 10% slowdowns where this test caught 20; in a simulation of its speed
    regimes a Mann-Whitney test on 8 runs caught 16 of 20, this test 20). The permutation test makes no
    assumption about how runs vary, so such runs cost power, never false alarms. "Enough" is what the
    correction needs: R against R runs cannot give a p-value below 1 / C(2R, R) (0.05 at 3 runs a side),
    so ``test="auto"`` uses it only where that smallest p-value passes alpha / (cells tested): 5 runs a
    side for 2 cells at alpha 0.01, 6 for 3 to 7 cells, 9 for 200 cells; a few more than that let a slow
    run or two through.
    With fewer runs (2 or more a side): a Welch t test on the runs' log values (the heavy tails of a t with
    R - 1 degrees of freedom keep three repeats honest). The whole per-cell computation is
    :func:`hpubench.analysis.stats.estimator.estimate_change`, which ``hpubench compare`` calls too.

One run on a side. Its steps say nothing about how much runs drift (measured here: run-to-run CV 3.7-11%
against one run's interval of often under 1%; judged on its steps, one run against one failed 4 of 5 A/A
gates). So its spread is modelled, from the other side's 3 or more runs or from the figure ``baseline
save`` stored for the cell (``run_to_run``), and the t test takes that spread's degrees of freedom; without
either the cell is INSUFFICIENT ("insufficient evidence: run with --repeat 3 or more"): never a failure,
never part of the correction's family, counted in the summary. Every tested cell also carries the smallest
drop it could detect (80% power at alpha over the cells tested), so a pass says what it could have seen.
Simulated A/A gates with runs drifting by 4-10% stay at or under alpha at 1, 3 and 8 runs a side
(tests/unit/test_gate_false_alarms.py).

Quality. Runs whose record is interfered, recompiled or partial measured something other than the cell:
they are left out, and a cell left with no run on a side is NOT_COMPARABLE (counted, never a failure
unless ``strict_quality``). Noisy and unstable runs are tested: their noise is in the run-to-run error.
Each side's worst quality is shown.

Peak memory: device allocator peaks are nearly deterministic, so no test: memory regresses when it grows
by more than its threshold (5% by default) AND by more than an absolute floor (1 MiB by default), and,
when both sides have repetitions, every current repetition is above every baseline one. A CPU process's
resident set is not deterministic (identical runs here: 280-355 MiB), so for it the same rule needs 3 or
more runs a side; with fewer, growth past the threshold is "noisy", never a failure. Process RSS and
device memory are different quantities and are never compared.

Numerics: a cell whose numerics regress (``ok`` in the baseline, ``drift`` or ``diverged`` now, each side's
worst over its runs: :mod:`hpubench.analysis.numerics`) fails the gate as a "numerics regression", its own
outcome, whatever its throughput did: a step made faster by a cast or a graph that broke the loss is no
improvement. A baseline recorded before numerics were checked, or ``unchecked`` on either side, is no
evidence either way: never a failure, and a note says which cells were not compared.

Failures: a cell that failed (in any repetition) in current and in none in baseline fails the gate. A cell
in baseline that current lacks, or that current skipped, is "missing": whether that fails the gate is
``missing="fail"`` (default: a run cut short must not pass) or ``"ignore"``. New cells never fail.

This module holds the entry point, :func:`gate`, and its steps; the pieces live beside it: the settings
(``gaterules``), the verdict records and outcome names (``gateoutcomes``), the cells settled by their
records alone (``gateinputs``), the per-metric verdicts (``gateverdicts``) and the notes (``gatenotes``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hpubench.analysis.compare import CellRuns, by_match_key, check_schema
from hpubench.analysis.gate.inputs import comparable_runs, missing_from_current, new_in_current, settle
from hpubench.analysis.gate.notes import gate_notes
from hpubench.analysis.gate.outcomes import (
    FAILED,
    FIXED,
    NOT_COMPARABLE,
    STILL_FAILING,
    CellVerdict,
    GateResult,
)
from hpubench.analysis.gate.rules import GateSettings
from hpubench.analysis.gate.verdicts import measured_verdict, throughput_change, with_numerics
from hpubench.analysis.stats.correction import adjust_pvalues
from hpubench.analysis.stats.estimator import Change, RunSpread
from hpubench.errors import UsageError
from hpubench.store.record import CellResult

Sides = dict[str, CellRuns]


def gate(
    baseline: Sequence[CellResult],
    current: Sequence[CellResult],
    settings: GateSettings | None = None,
    run_to_run: Mapping[str, RunSpread] | None = None,
) -> GateResult:
    """Judge ``current`` against ``baseline``; raises UsageError for inputs that cannot be judged.

    ``run_to_run``: per match key, a run-to-run spread stored with the baseline (``baseline save``) for
    the settings' statistic; it lets a side that ran once be tested where the other side cannot say
    how much runs drift."""
    s = settings or GateSettings()
    b_map, c_map, matched = _match(baseline, current)
    settled, to_test = _settle_matched(b_map, c_map, matched, s)
    changes, tested = _estimate_changes(b_map, c_map, to_test, s, run_to_run or {})
    adjusted = _corrected_pvalues(changes, tested, s)
    verdicts = _verdicts(b_map, c_map, settled, changes, adjusted, s)
    _check_something_to_gate(changes, verdicts, matched)
    return GateResult(s, tuple(verdicts), gate_notes(changes, b_map, c_map, matched, s))


def _match(baseline: Sequence[CellResult], current: Sequence[CellResult]) -> tuple[Sides, Sides, list[str]]:
    """Both sides grouped by match key, and the keys in both (in baseline order); UsageError if none."""
    if not baseline:
        raise UsageError("the baseline holds no result records; fix: point --baseline at a saved run")
    if not current:
        raise UsageError("the current results hold no records; fix: point --current at a finished run")
    check_schema(baseline, current)
    b_map, c_map = by_match_key(baseline, "baseline"), by_match_key(current, "current")
    matched = [k for k in b_map if k in c_map]
    if not matched:
        raise UsageError(
            f"nothing matched: none of the {len(c_map)} current cell(s) is among the {len(b_map)} baseline "
            "cell(s); fix: gate runs of the same matrix (cells match on their key without the accelerator)"
        )
    return b_map, c_map, matched


def _settle_matched(
    b_map: Sides, c_map: Sides, matched: list[str], s: GateSettings
) -> tuple[dict[str, CellVerdict], list[str]]:
    """First pass: the verdicts of matched cells that need no statistics, and the keys left to test."""
    settled: dict[str, CellVerdict] = {}
    to_test: list[str] = []
    for key in matched:
        verdict = settle(key, b_map[key], c_map[key], s)
        if verdict is None:
            to_test.append(key)
        else:
            settled[key] = verdict
    return settled, to_test


def _estimate_changes(
    b_map: Sides, c_map: Sides, to_test: list[str], s: GateSettings, spreads: Mapping[str, RunSpread]
) -> tuple[dict[str, Change], list[str]]:
    """The throughput change of every cell to test, and the keys of those actually tested.

    The family size is known only now, and whether a permutation test can decide depends on it. Cells
    whose runs cannot show significance are not tested, so they do not dilute the correction."""

    def estimate(k: str, tests: int) -> Change:
        b, c = comparable_runs(b_map[k]), comparable_runs(c_map[k])
        return throughput_change(b, c, s, tests, spreads.get(k))

    changes = {k: estimate(k, len(to_test)) for k in to_test}
    tested = [k for k in to_test if changes[k].testable]
    if len(tested) < len(to_test):  # a smaller family: the tests' level and choice can change
        changes.update({k: estimate(k, len(tested)) for k in tested})
    return changes, tested


def _corrected_pvalues(
    changes: dict[str, Change], tested: list[str], s: GateSettings
) -> dict[str, tuple[float, float]]:
    """Second pass: per tested key, the (slower, faster) p-values after the correction over every one."""
    p_slow = adjust_pvalues([changes[k].p_increase for k in tested], s.correction)
    p_fast = adjust_pvalues([changes[k].p_decrease for k in tested], s.correction)
    return {k: (ps, pf) for k, ps, pf in zip(tested, p_slow, p_fast, strict=True)}


def _verdicts(
    b_map: Sides,
    c_map: Sides,
    settled: dict[str, CellVerdict],
    changes: dict[str, Change],
    adjusted: dict[str, tuple[float, float]],
    s: GateSettings,
) -> list[CellVerdict]:
    """One verdict per cell: the baseline's cells in their order, then the cells only current holds."""
    verdicts: list[CellVerdict] = []
    for key, b in b_map.items():
        if key in settled:
            v = settled[key]
        elif key in changes:
            p_slow, p_fast = adjusted.get(key, (1.0, 1.0))
            v = measured_verdict(key, b, c_map[key], changes[key], p_slow, p_fast, s)
        else:
            v = missing_from_current(key, b, s)
        verdicts.append(with_numerics(v, b, c_map.get(key)))
    verdicts += [
        with_numerics(new_in_current(key, c), None, c) for key, c in c_map.items() if key not in b_map
    ]
    return verdicts


def _check_something_to_gate(
    changes: dict[str, Change], verdicts: list[CellVerdict], matched: list[str]
) -> None:
    """UsageError when no matched cell was measured on both sides and none failed or was left out."""
    if not changes and not any(v.outcome in (FAILED, STILL_FAILING, FIXED, NOT_COMPARABLE) for v in verdicts):
        raise UsageError(
            f"nothing to gate: {len(matched)} cell(s) matched but none was measured on both sides; "
            "fix: gate runs where the cells ran (see 'hpubench results')"
        )
