"""The gate's decisions on synthetic step times: it must pass what did not change, fail what did."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import numpy as np
import pytest
from gatedata import CELLS, MEAN, MIB, ar1_steps, by_key, make_result, make_side, regime_side
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.outcomes import (
    FAILED,
    FIXED,
    IMPROVEMENT,
    INSUFFICIENT,
    MISSING,
    NEW,
    NO_CHANGE,
    NOISY,
    REGRESSION,
    SKIPPED,
    STILL_FAILING,
)
from hpubench.analysis.gate.rules import (
    MIN_ALPHA,
    GateSettings,
    permutation_test_can_decide,
    runs_needed_for_permutation_test,
)
from hpubench.analysis.stats.estimator import RunSpread, estimate_change
from hpubench.errors import UsageError
from hpubench.measure.ranks import STEP_TIME_REDUCTION
from hpubench.plan.cell import Cell
from hpubench.store.record import CellResult
from hpubench.store.runtimeinfo import RuntimeInfo


def test_a_a_passes_and_reports_no_change() -> None:
    rng = np.random.default_rng(0)
    res = gate(make_side(rng, CELLS, repeats=3, run_sd=0.01), make_side(rng, CELLS, repeats=3, run_sd=0.01))
    assert res.passed and res.exit_code == 0
    assert {v.outcome for v in res.cells} == {NO_CHANGE}
    for v in res.cells:
        assert v.throughput is not None and v.throughput.decision == NO_CHANGE
        lo, hi = v.throughput.interval
        assert lo <= v.throughput.change <= hi
        assert v.baseline_runs == v.current_runs == 3


@pytest.mark.parametrize(
    ("slowdown", "repeats", "settings"),
    [(0.10, 3, MEAN), (0.20, 3, MEAN), (0.10, 6, GateSettings()), (0.10, 6, MEAN)],
)
def test_a_slowdown_is_a_regression_that_fails_the_gate(
    slowdown: float, repeats: int, settings: GateSettings
) -> None:
    rng = np.random.default_rng(1)
    base = make_side(rng, CELLS, repeats=repeats, run_sd=0.01)
    cur = make_side(rng, CELLS[:1], repeats=repeats, run_sd=0.01, slowdown=slowdown) + make_side(
        rng, CELLS[1:], repeats=repeats, run_sd=0.01
    )
    res = gate(base, cur, settings)
    assert not res.passed and res.exit_code == 1
    v = by_key(res)[CELLS[0].match_key]
    assert v.outcome == REGRESSION and v.fails
    assert v.throughput.change == pytest.approx(1 / (1 + slowdown) - 1, abs=0.03)
    assert v.throughput.p_adjusted <= res.settings.alpha
    assert "throughput" in v.reason
    assert [c.key for c in res.failures] == [CELLS[0].match_key]
    # 6 runs a side can pass Holm over 3 cells at 1% (1/924 < 0.01/3); 3 runs cannot (1/20).
    test = "permutation test" if repeats == 6 else "Welch"
    assert test in v.throughput.detail


def test_single_runs_are_insufficient_evidence_never_a_failure() -> None:
    """One run a side cannot show how much runs drift: even a 30% drop passes, said loudly, with the
    smallest drop the steps alone could ever show; a memory growth (nearly deterministic) still fails."""
    rng = np.random.default_rng(2)
    res = gate(make_side(rng, CELLS, n=100), make_side(rng, CELLS, n=100, slowdown=0.30))
    assert res.passed and {v.outcome for v in res.cells} == {INSUFFICIENT}
    for v in res.cells:
        assert v.throughput.change == pytest.approx(1 / 1.3 - 1, abs=0.03)
        assert "insufficient evidence" in v.reason and "run with --repeat 3 or more" in v.reason
        assert v.throughput.p_adjusted is None and v.throughput.evidence == "insufficient"
        assert 0 < v.throughput.mde < 0.3 and v.throughput.mde_text.startswith("above")
    assert any(n.startswith("insufficient evidence for 3 of 3 cell(s)") for n in res.notes)
    dev = "torch.cuda.memory_stats"  # a device allocator's peak repeats exactly: one run says enough
    grown = gate(make_side(rng, CELLS[:1], source=dev), make_side(rng, CELLS[:1], peak=400 * MIB, source=dev))
    assert not grown.passed and grown.cells[0].outcome == REGRESSION


def test_an_improvement_is_reported_and_passes() -> None:
    rng = np.random.default_rng(3)
    res = gate(make_side(rng, CELLS, repeats=3), make_side(rng, CELLS, repeats=3, slowdown=-0.2))
    assert res.passed
    assert {v.outcome for v in res.cells} == {IMPROVEMENT}
    assert all(v.throughput.change > 0.2 for v in res.cells)


def test_a_small_real_change_below_the_threshold_passes() -> None:
    rng = np.random.default_rng(4)
    res = gate(
        make_side(rng, CELLS, repeats=3, cv=0.01), make_side(rng, CELLS, repeats=3, cv=0.01, slowdown=0.02)
    )
    assert res.passed
    assert all(v.outcome == NO_CHANGE for v in res.cells)


def test_a_big_but_noisy_change_is_flagged_noisy_not_failed() -> None:
    rng = np.random.default_rng(5)
    # Two runs per side with a large run-to-run spread: 1 degree of freedom each, nothing is significant.
    res = gate(
        make_side(rng, CELLS[:1], repeats=2, run_sd=0.15),
        make_side(rng, CELLS[:1], repeats=2, run_sd=0.15, slowdown=0.12),
        GateSettings(throughput_threshold=0.01),
    )
    (v,) = res.cells
    assert v.outcome in (NOISY, NO_CHANGE) and not v.fails


def test_between_run_variance_prevents_false_alarms_that_within_run_statistics_raise() -> None:
    """Runs that drift by ~8% between runs: judged on their steps, single runs would alarm often; the gate
    calls them insufficient evidence instead, and repetitions show the drift is noise."""
    rng = np.random.default_rng(6)
    within_alarms = single_failed = false_repeated = 0
    for _ in range(30):
        base = make_side(rng, CELLS[:1], repeats=3, run_sd=0.08, n=80, cv=0.03)
        cur = make_side(rng, CELLS[:1], repeats=3, run_sd=0.08, n=80, cv=0.03)
        b1, c1 = [r for r in base if r.repeat == 0], [r for r in cur if r.repeat == 0]
        single = gate(b1, c1)
        single_failed += not single.passed
        ch = estimate_change([b1[0].step_times_s], [c1[0].step_times_s], statistic="min")
        within_alarms += ch.p_increase <= 0.01 and ch.throughput_ratio < 0.95
        false_repeated += not gate(base, cur).passed
    assert within_alarms >= 5  # within-run errors cannot see between-run drift ...
    assert single_failed == 0  # ... so the gate never trusts them
    # Repeated: at most alpha (1%) of gates by design; one in 30 can still happen by chance.
    assert false_repeated <= 1


def test_a_single_current_run_borrows_the_baselines_run_to_run_spread() -> None:
    rng = np.random.default_rng(7)
    drifts = [0.9, 1.0, 1.1, 1.0]  # ~8% between runs, with steps that are quiet within each run
    base = [make_result(CELLS[0], ar1_steps(rng, cv=0.005) * f, repeat=i) for i, f in enumerate(drifts)]
    cur = [make_result(CELLS[0], ar1_steps(rng, cv=0.005) * 1.08)]
    (v,) = gate(base, cur, MEAN).cells
    assert "4 vs 1 run(s); run-to-run spread from the baseline's 4 runs" in v.throughput.detail
    assert v.throughput.evidence == "modelled"
    lo, hi = v.throughput.interval
    assert hi - lo > 0.2  # the drift between runs is in the interval
    assert v.outcome != REGRESSION  # 8% slower, but well within what one run can drift
    # Without the baseline's repetitions the same run has no run-to-run spread: insufficient evidence,
    # and the interval shown is the steps' alone.
    (w,) = gate(base[:1], cur, MEAN).cells
    assert w.outcome == INSUFFICIENT and not w.fails
    assert w.throughput.interval[1] - w.throughput.interval[0] < 0.05
    # A spread stored with the baseline (baseline save) makes the same single runs testable.
    stored = {CELLS[0].match_key: RunSpread(0.08, 4, "stored with the baseline")}
    (x,) = gate(base[:1], cur, MEAN, run_to_run=stored).cells
    assert x.throughput.evidence == "modelled" and x.outcome != INSUFFICIENT
    assert "stored with the baseline" in x.throughput.detail
    assert x.throughput.interval[1] - x.throughput.interval[0] > 0.2


def test_failed_in_current_but_not_in_baseline_fails_the_gate() -> None:
    rng = np.random.default_rng(12)
    base = make_side(rng, CELLS, repeats=2)
    cur = make_side(rng, CELLS, repeats=2)
    cur[0] = CellResult(CELLS[0], "failed", reason="RuntimeError: boom", repeat=0)
    res = gate(base, cur)
    v = by_key(res)[CELLS[0].match_key]
    assert v.outcome == FAILED and v.fails
    assert v.reason == "failed in 1 of 2 repetitions: RuntimeError: boom"
    assert res.exit_code == 1


def test_failed_on_both_sides_is_reported_and_fixed_cells_pass() -> None:
    rng = np.random.default_rng(13)
    broken = CellResult(CELLS[0], "failed", reason="OOM")
    base = [broken, *make_side(rng, CELLS[1:2]), CellResult(CELLS[2], "failed", reason="old bug")]
    cur = [broken, *make_side(rng, CELLS[1:])]
    res = gate(base, cur)
    by = by_key(res)
    assert by[CELLS[0].match_key].outcome == STILL_FAILING
    assert by[CELLS[2].match_key].outcome == FIXED
    assert res.passed


@pytest.mark.parametrize(("policy", "fails"), [("fail", True), ("ignore", False)])
def test_missing_cells_are_reported_and_fail_by_policy(policy: str, fails: bool) -> None:
    rng = np.random.default_rng(14)
    base = make_side(rng, CELLS)
    skipped = CellResult(CELLS[1], "skipped", reason="no cuda device on this machine")
    cur = [*make_side(rng, CELLS[:1]), skipped, *make_side(rng, [Cell("bert")])]
    res = gate(base, cur, GateSettings(missing=policy))
    by = by_key(res)
    assert by[CELLS[1].match_key].outcome == MISSING
    assert "skipped in current: no cuda device" in by[CELLS[1].match_key].reason
    assert by[CELLS[2].match_key].outcome == MISSING
    assert by[CELLS[2].match_key].reason == "not in the current results"
    assert by[Cell("bert").match_key].outcome == NEW and not by[Cell("bert").match_key].fails
    assert res.passed is not fails


def test_skipped_on_both_sides_is_neither_pass_nor_fail() -> None:
    rng = np.random.default_rng(15)
    sk = CellResult(CELLS[1], "skipped", reason="lazy mode exists only on HPU")
    res = gate([*make_side(rng, CELLS[:1]), sk], [*make_side(rng, CELLS[:1]), sk])
    assert by_key(res)[CELLS[1].match_key].outcome == SKIPPED
    assert res.passed


def test_cells_match_across_hardware_like_compare() -> None:
    rng = np.random.default_rng(16)
    base = make_side(rng, [Cell("mlp", accelerator="cpu")])
    cur = make_side(rng, [Cell("mlp", accelerator="cuda")], device="NVIDIA H100")
    res = gate(base, cur)
    assert len(res.cells) == 1 and res.cells[0].outcome != MISSING
    assert any("device changed" in n for n in res.notes)


def test_bad_input_raises_usage_error() -> None:
    rng = np.random.default_rng(17)
    with pytest.raises(UsageError, match="nothing matched"):
        gate(make_side(rng, CELLS[:1]), make_side(rng, CELLS[1:2]))
    with pytest.raises(UsageError, match="no result records"):
        gate([], make_side(rng, CELLS[:1]))
    sk = CellResult(CELLS[0], "skipped", reason="x")
    with pytest.raises(UsageError, match="nothing to gate"):
        gate([sk], [sk])
    with pytest.raises(UsageError, match="workload definition differs"):
        gate(make_side(rng, CELLS[:1]), make_side(rng, CELLS[:1], samples_per_step=32))
    with pytest.raises(UsageError, match="alpha"):
        GateSettings(alpha=0)
    with pytest.raises(UsageError, match="threshold"):
        GateSettings(throughput_threshold=1.5)


def test_correction_keeps_200_null_cells_from_failing_by_chance() -> None:
    """200 unchanged cells, each with a sub-threshold true difference of 0: without a correction some
    would be significant at alpha; with Holm the family-wise false alarms stay at about alpha."""
    rng = np.random.default_rng(18)
    cells = [Cell("mlp", batch_size=i + 1) for i in range(200)]
    gates_failed_holm = gates_failed_none = significant_uncorrected = 0
    trials = 10
    for _ in range(trials):
        # Three runs a side (one run a side is never tested), drifting by 6% between runs.
        base = make_side(rng, cells, n=20, cv=0.02, rho=0.0, repeats=3, run_sd=0.06)
        cur = make_side(rng, cells, n=20, cv=0.02, rho=0.0, repeats=3, run_sd=0.06)
        # A 1% threshold so that the threshold does not hide what the correction does.
        holm = gate(base, cur, GateSettings(throughput_threshold=0.01, statistic="mean"))
        none = gate(base, cur, GateSettings(throughput_threshold=0.01, statistic="mean", correction="none"))
        gates_failed_holm += not holm.passed
        gates_failed_none += not none.passed
        significant_uncorrected += sum(
            v.throughput.p_value <= 0.01 and v.throughput.change < 0 for v in none.cells
        )
    # Uncorrected: ~alpha * 200 = 2 false cells per gate, so nearly every gate fails.
    assert significant_uncorrected >= trials
    assert gates_failed_none >= trials // 2
    # Holm: at most ~alpha of the gates (0.1 expected in 10 trials); allow one by chance.
    assert gates_failed_holm <= 1


def test_bh_finds_more_than_holm_when_many_cells_regress() -> None:
    rng = np.random.default_rng(19)
    cells = [Cell("mlp", batch_size=i + 1) for i in range(40)]
    base = make_side(rng, cells, n=30, cv=0.15, rho=0.0)
    cur = make_side(rng, cells, n=30, cv=0.15, rho=0.0, slowdown=0.08)
    holm = sum(v.outcome == REGRESSION for v in gate(base, cur).cells)
    bh = sum(v.outcome == REGRESSION for v in gate(base, cur, GateSettings(correction="bh")).cells)
    assert bh >= holm


def test_median_and_min_statistics_ignore_rare_stalls() -> None:
    rng = np.random.default_rng(20)
    base = make_side(rng, CELLS[:1], n=100, cv=0.01, repeats=3)
    cur = []
    for r in make_side(rng, CELLS[:1], n=100, cv=0.01, repeats=3):
        t = np.array(r.step_times_s)
        t[::10] *= 3  # a stall every 10th step: the mean moves 20%, the median does not
        cur.append(replace(r, step_times_s=tuple(t)))
    assert gate(base, cur, MEAN).cells[0].outcome == REGRESSION
    assert gate(base, cur, GateSettings(statistic="median")).cells[0].outcome == NO_CHANGE
    assert gate(base, cur).cells[0].outcome == NO_CHANGE  # the default: the fastest step


@settings(max_examples=40, deadline=None)
@example(seed=4787, scale=1.0, repeats=1, n=77)  # a change right at the threshold: symmetry must hold
@given(
    seed=st.integers(0, 2**32 - 1),
    scale=st.floats(1e-4, 10.0),
    repeats=st.integers(1, 4),
    n=st.integers(4, 80),
)
def test_invariants(seed: int, scale: float, repeats: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    base = make_side(rng, CELLS[:2], repeats=repeats, n=n, mean=0.01 * scale, run_sd=0.02)
    cur = make_side(rng, CELLS[:2], repeats=repeats, n=n, mean=0.01 * scale, run_sd=0.02)
    res = gate(base, cur)
    # Identical inputs never regress; swapping sides mirrors the throughput change.
    assert gate(base, base).passed
    swapped = gate(cur, base)
    for v, w in zip(res.cells, swapped.cells, strict=True):
        assert v.throughput.change == pytest.approx(1 / (1 + w.throughput.change) - 1, rel=1e-9, abs=1e-12)
        assert (v.outcome == INSUFFICIENT) == (repeats == 1) == (v.throughput.p_value is None)
        if v.throughput.p_value is not None:
            assert v.throughput.p_value == pytest.approx(w.throughput.p_value, rel=1e-6, abs=1e-12)
            assert 0 <= v.throughput.p_value <= v.throughput.p_adjusted <= 1
        assert (v.outcome == REGRESSION) == (w.outcome == IMPROVEMENT)
        # Scaling time (a uniformly faster machine on both sides) does not change the decision.
        assert v.fails == (v.outcome == REGRESSION)
    # A change can only be flagged past the threshold (a gain past its mirror image, 1/0.95 - 1).
    for v in res.cells:
        if v.outcome == REGRESSION:
            assert -v.throughput.change > res.settings.throughput_threshold
        if v.outcome == IMPROVEMENT:
            assert v.throughput.change > 1 / (1 - res.settings.throughput_threshold) - 1


def test_scaling_all_times_does_not_change_decisions() -> None:
    rng = np.random.default_rng(21)
    base = make_side(rng, CELLS, repeats=3)
    cur = make_side(rng, CELLS, repeats=3, slowdown=0.1)

    def scaled(rs, f):
        return [replace(r, step_times_s=tuple(t * f for t in r.step_times_s)) for r in rs]

    a, b = gate(base, cur), gate(scaled(base, 1000), scaled(cur, 1000))
    assert [v.outcome for v in a.cells] == [v.outcome for v in b.cells]
    assert [v.throughput.p_value for v in a.cells] == pytest.approx([v.throughput.p_value for v in b.cells])


def test_default_sees_through_machine_speed_regimes_where_the_mean_cannot() -> None:
    """Runs on a VM whose speed drops 30% for long stretches (often whole runs): the default gate (fastest
    step per run, fastest half of 8 runs, permutation test) catches a 10% slowdown every time with no false
    alarm, while the mean step time with a t test misses most; fixed seed, 20 independent gates each."""
    rng = np.random.default_rng(30)
    cells = [Cell("mlp"), Cell("gpt")]
    rounds = 20
    caught = {"default": 0, "mean+welch": 0}
    false_alarms = 0
    for _ in range(rounds):
        base = regime_side(rng, cells, 8)
        same = regime_side(rng, cells, 8)
        slower = regime_side(rng, cells[:1], 8, slowdown=0.10) + regime_side(rng, cells[1:], 8)
        false_alarms += not gate(base, same).passed
        caught["default"] += not gate(base, slower).passed
        caught["mean+welch"] += not gate(base, slower, GateSettings(statistic="mean", test="welch")).passed
    assert false_alarms == 0
    assert caught["default"] == rounds
    assert caught["mean+welch"] <= rounds // 2


def test_auto_permutes_only_where_it_can_reach_the_corrected_alpha() -> None:
    assert runs_needed_for_permutation_test(0.01, 2) == 5  # 1/C(10,5) = 0.0040 <= 0.005 < 1/C(8,4)
    assert runs_needed_for_permutation_test(0.01, 3) == 6  # 1/C(12,6) = 0.0011 <= 0.0033 < 1/C(10,5)
    assert runs_needed_for_permutation_test(0.01, 200) == 9  # 1/C(18,9) = 2.1e-5 <= 5e-5 < 1/C(16,8)
    # Past EXACT_PERMUTATIONS relabellings the p-value is drawn, and never falls below 1/(draws + 1): at
    # alpha 0.01 over 2,000 cells no run count can decide, and the answer says so instead of searching on.
    assert runs_needed_for_permutation_test(0.01, 1000) == 10
    assert runs_needed_for_permutation_test(0.01, 2000) is None
    assert runs_needed_for_permutation_test(MIN_ALPHA, 1) is None
    assert not permutation_test_can_decide(5, 5, 0.01, 3) and permutation_test_can_decide(5, 6, 0.01, 3)
    rng = np.random.default_rng(31)
    few = gate(make_side(rng, CELLS, repeats=5), make_side(rng, CELLS, repeats=5))
    assert all("Welch" in v.throughput.detail for v in few.cells)
    assert any("too few runs for the permutation test (6 per side" in n for n in few.notes)
    enough = gate(make_side(rng, CELLS, repeats=6), make_side(rng, CELLS, repeats=6))
    assert all("permutation test" in v.throughput.detail for v in enough.cells) and not enough.notes
    three = make_side(rng, CELLS, repeats=3), make_side(rng, CELLS, repeats=3)
    forced = gate(*three, GateSettings(test="permutation"))
    assert any("too few runs to ever reach significance" in n for n in forced.notes)
    six = make_side(rng, CELLS, repeats=6), make_side(rng, CELLS, repeats=6)
    welch = gate(*six, GateSettings(test="welch"))
    assert all("Welch" in v.throughput.detail for v in welch.cells) and not welch.notes


def test_at_an_alpha_no_run_count_reaches_the_gate_says_so_and_ends() -> None:
    rng = np.random.default_rng(33)
    strict = GateSettings(alpha=MIN_ALPHA)
    result = gate(make_side(rng, CELLS, repeats=5), make_side(rng, CELLS, repeats=5), strict)
    (note,) = [n for n in result.notes if "too few runs for the permutation test" in n]
    assert "no run count reaches alpha 1e-06" in note and note.endswith(
        "gate fewer cells at once or raise --alpha"
    )
    with pytest.raises(UsageError, match="at least 1e-06"):
        GateSettings(alpha=MIN_ALPHA / 10)


def test_a_note_says_when_one_side_was_measured_wholly_before_the_other() -> None:
    rng = np.random.default_rng(32)

    def stamped(records: list[CellResult], start: str) -> list[CellResult]:
        t0 = datetime.fromisoformat(start)
        return [replace(r, started_at=(t0 + timedelta(minutes=i)).isoformat()) for i, r in enumerate(records)]

    base = stamped(make_side(rng, CELLS, repeats=3), "2026-11-20T10:00:00+00:00")
    later = stamped(make_side(rng, CELLS, repeats=3), "2026-11-22T10:00:00+00:00")
    (note,) = [n for n in gate(base, later).notes if "wholly before" in n]
    assert note.startswith("baseline was measured wholly before current (2 days apart)")
    swapped = [n for n in gate(later, base).notes if "wholly before" in n]
    assert swapped and swapped[0].startswith("current was measured wholly before baseline")
    # Interleaved (overlapping spans), unstamped or unreadable: no note.
    mixed = stamped(make_side(rng, CELLS, repeats=3), "2026-11-20T10:01:30")  # naive: read as UTC
    assert not any("wholly before" in n for n in gate(base, mixed).notes)
    assert not any("wholly before" in n for n in gate(make_side(rng, CELLS), make_side(rng, CELLS)).notes)
    bad = [replace(r, started_at="yesterday") for r in later]
    assert not any("wholly before" in n for n in gate(base, bad).notes)


def _with_policy(results: list[CellResult], **facts: dict[str, str]) -> list[CellResult]:
    return [replace(r, runtime=RuntimeInfo.from_dict(r.runtime).with_facts(**facts)) for r in results]


def test_a_changed_heap_or_thread_policy_is_noted_and_an_unchanged_one_is_not() -> None:
    rng = np.random.default_rng(18)
    base, cur = make_side(rng, CELLS[:1]), make_side(rng, CELLS[:1])
    same = gate(_with_policy(base, heap={"policy": "steady"}), _with_policy(cur, heap={"policy": "steady"}))
    assert not any("policy changed" in n for n in same.notes), same.notes
    older = gate(base, _with_policy(cur, heap={"policy": "steady"}))  # a baseline from before runtime.heap
    (note,) = [n for n in older.notes if "policy changed" in n]
    assert note.startswith("the heap policy changed between baseline and current (not recorded -> steady)")
    threads = gate(
        _with_policy(base, threads={"policy": "all"}), _with_policy(cur, threads={"policy": "cores-1"})
    )
    assert any(n.startswith("the CPU thread policy changed") and "all -> cores-1" in n for n in threads.notes)


def test_a_changed_multi_rank_step_time_reduction_is_noted_and_one_device_cells_are_not() -> None:
    """Records of a 2-rank cell from before the step times became the slowest rank's own series read slower
    with no change of the code: the gate says so. One-device cells have no reduction on either side."""
    rng = np.random.default_rng(19)
    base, cur = make_side(rng, CELLS[:1]), make_side(rng, CELLS[:1])
    assert not any("reduction" in n for n in gate(base, cur).notes)
    old = {"step_time_reduction": "max over ranks, per step"}
    new = {"step_time_reduction": STEP_TIME_REDUCTION}
    same = gate(_with_policy(base, distributed=new), _with_policy(cur, distributed=new))
    assert not any("reduction" in n for n in same.notes), same.notes
    changed = gate(_with_policy(base, distributed=old), _with_policy(cur, distributed=new))
    (note,) = [n for n in changed.notes if "reduction" in n]
    assert note.startswith("the multi-rank step-time reduction changed between baseline and current")
    assert f"max over ranks, per step -> {STEP_TIME_REDUCTION}" in note


def test_a_changed_model_is_refused_unless_flops_changes_are_allowed() -> None:
    """A commit that made the model do more work: FLOPs per step differ, samples per step agree. The gate
    refuses it by default; with same_flops=False (gate --allow-flops-change, bisect) it is a regression."""
    rng = np.random.default_rng(23)
    base = make_side(rng, CELLS[:1], repeats=6, cv=0.01)
    wider = [
        replace(r, metrics=replace(r.metrics, flops_per_step=1250))
        for r in make_side(rng, CELLS[:1], repeats=6, cv=0.01, slowdown=0.2)
    ]
    with pytest.raises(UsageError, match="workload definition differs"):
        gate(base, wider)
    (v,) = gate(base, wider, GateSettings(same_flops=False)).cells
    assert v.outcome == REGRESSION and v.fails
    with pytest.raises(UsageError, match="workload definition differs"):  # samples per step still must agree
        gate(base, make_side(rng, CELLS[:1], samples_per_step=32), GateSettings(same_flops=False))
