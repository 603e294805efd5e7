import dataclasses
import math

import numpy as np
import pytest
from reportdata import fake_result

from hpubench.analysis.compare import compare, group_runs
from hpubench.analysis.prices import Tables
from hpubench.errors import UsageError
from hpubench.store.record import SCHEMA_VERSION


def _mean(r):
    return float(np.mean(r.step_times_s))


@pytest.fixture
def gaudi_vs_gaudi2():
    base = [
        fake_result("bert", "hpu", "GAUDI", step_s=0.20, tokens_per_sample=128),
        fake_result("resnet", "hpu", "GAUDI", step_s=0.10, seed=1),
        fake_result("resnet", "hpu", "GAUDI", precision="32-true", step_s=0.1, seed=2),
        fake_result("gpt", "hpu", "GAUDI", seed=3),
        fake_result("mlp", "hpu", "GAUDI", seed=4),
    ]
    cand = [
        fake_result("bert", "hpu", "GAUDI2", step_s=0.08, tokens_per_sample=128, seed=5),
        fake_result("resnet", "hpu", "GAUDI2", step_s=0.04, seed=6),
        fake_result("resnet", "hpu", "GAUDI2", precision="32-true", step_s=0.1, seed=7),
        fake_result("gpt", "hpu", "GAUDI2", status="failed", reason="RuntimeError: OOM"),
        fake_result("lstm", "hpu", "GAUDI2", seed=8),
    ]
    return base, cand


def test_ratios_geomeans_and_unmatched(gaudi_vs_gaudi2):
    base, cand = gaudi_vs_gaudi2
    c = compare(base, cand, Tables(), base_label="gaudi", candidate_label="gaudi2")
    assert [x.match_key for x in c.cells] == [b.cell.match_key for b in base[:3]]
    for x, b, k in zip(c.cells, base, cand, strict=False):
        expected = _mean(b) / _mean(k)  # candidate throughput over base: the inverse ratio of step times
        assert x.throughput_ratio.value == pytest.approx(expected)
        assert x.throughput_ratio.lo <= expected <= x.throughput_ratio.hi
        # Prices: Gaudi $1.64, Gaudi2 $1.30 per device-hour, so samples per $ gain 1.64/1.30 on top.
        assert x.perf_per_usd_ratio.value == pytest.approx(expected * 1.64 / 1.30)
        assert x.memory_ratio == pytest.approx(1.0)
    # One run a side: the intervals hold the steps' noise only, and the verdict says so.
    assert [x.verdict for x in c.cells] == [
        "faster (within-run only)",
        "faster (within-run only)",
        "no significant difference",
    ]
    assert all(x.change.evidence == "insufficient" for x in c.cells)
    assert c.statistic == "mean" and "mean step time per run" in c.estimator
    by_name = {g.name: g for g in c.per_workload}
    assert set(by_name) == {"bert", "resnet"} and by_name["resnet"].cells == 2
    logs = [math.log(x.throughput_ratio.value) for x in c.cells]
    assert c.overall.throughput.value == pytest.approx(math.exp(sum(logs) / 3))
    assert c.overall.throughput.lo <= c.overall.throughput.value <= c.overall.throughput.hi
    assert c.overall.perf_per_usd.value == pytest.approx(c.overall.throughput.value * 1.64 / 1.30)
    assert by_name["resnet"].throughput.value == pytest.approx(math.exp(sum(logs[1:]) / 2))
    assert [n.match_key for n in c.not_comparable] == [base[3].cell.match_key]
    assert "failed on candidate: RuntimeError: OOM" in c.not_comparable[0].why
    assert [r.cell.workload for r in c.only_base] == ["mlp"]
    assert [r.cell.workload for r in c.only_candidate] == ["lstm"]


def test_perf_per_usd_needs_a_price_on_both_sides():
    base = [fake_result("bert", "cpu", "AMD EPYC", precision="32-true")]
    cand = [fake_result("bert", "hpu", "GAUDI2", precision="32-true")]
    c = compare(base, cand, Tables())
    assert c.cells[0].perf_per_usd_ratio is None and c.overall.perf_per_usd is None
    assert c.overall.priced_cells == 0
    priced = compare(base, cand, Tables().with_price_here("cpu", "AMD EPYC", 0.65))
    assert priced.overall.perf_per_usd.value == pytest.approx(priced.overall.throughput.value * 0.65 / 1.30)


def test_memory_sources_that_differ_are_flagged():
    base = [fake_result("bert", "cpu", "AMD EPYC", memory_source="process (RSS)", peak_bytes=2**30)]
    cand = [fake_result("bert", "hpu", "GAUDI2", peak_bytes=2**31)]
    x = compare(base, cand, Tables()).cells[0]
    assert x.memory_ratio == pytest.approx(2.0) and x.memory_sources_differ


def test_repetitions_are_one_cell_with_all_their_steps():
    reps = [dataclasses.replace(fake_result("bert", "hpu", "GAUDI2", seed=s), repeat=s) for s in range(3)]
    (runs,) = group_runs(reps)
    assert len(runs.measured) == 3
    mean_of_means = np.mean([np.mean(r.step_times_s) for r in reps])
    assert runs.samples_per_s.value == pytest.approx(32 / mean_of_means)
    base = [fake_result("bert", "hpu", "GAUDI", step_s=0.2)]
    x = compare(base, reps, Tables()).cells[0]
    # The shared estimator: runs are averaged on the log scale (a geometric mean of the run means), and
    # the single base run takes the candidate's run-to-run spread.
    geo = math.exp(np.mean([math.log(np.mean(r.step_times_s)) for r in reps]))
    assert x.throughput_ratio.value == pytest.approx(_mean(base[0]) / geo)
    assert x.change.evidence == "modelled" and "spread from the current's 3 runs" in x.change.method
    assert x.candidate_economics.samples_per_s == pytest.approx(runs.samples_per_s.value)


def test_a_single_repetition_reads_exactly_as_its_record():
    r = fake_result("bert", "hpu", "GAUDI2")
    (runs,) = group_runs([r])
    e = runs.samples_per_s
    assert e.value == pytest.approx(r.metrics.samples_per_s, rel=1e-12)
    assert (e.lo, e.hi) == pytest.approx(r.metrics.samples_per_s_ci, rel=1e-12)


def test_a_failed_repetition_is_not_averaged_in():
    ok = fake_result("bert", "hpu", "GAUDI2")
    failed = dataclasses.replace(fake_result("bert", "hpu", "GAUDI2", status="failed", reason="x"), repeat=1)
    (runs,) = group_runs([ok, failed])
    assert runs.measured == (ok,) and runs.record is ok


def test_nothing_matched_is_refused():
    with pytest.raises(UsageError, match=r"nothing to compare: 0 cell.*1 only in base, 1 only in candidate"):
        compare([fake_result("bert", "hpu", "GAUDI")], [fake_result("gpt", "hpu", "GAUDI2")], Tables())


def test_matched_but_never_measured_on_both_is_refused():
    with pytest.raises(UsageError, match="1 cell\\(s\\) matched but none was measured on both sides"):
        compare(
            [fake_result("bert", "hpu", "GAUDI")],
            [fake_result("bert", "hpu", "GAUDI2", status="failed", reason="x")],
            Tables(),
        )


def test_different_schema_versions_are_refused():
    old = dataclasses.replace(fake_result("bert", "hpu", "GAUDI"), schema=0)
    with pytest.raises(
        UsageError,
        match=f"different record schema versions \\(base \\[0\\], candidate \\[{SCHEMA_VERSION}\\]\\)",
    ):
        compare([old], [fake_result("bert", "hpu", "GAUDI2")], Tables())


def test_a_changed_workload_definition_is_refused():
    base = fake_result("bert", "hpu", "GAUDI")
    cand = fake_result("bert", "hpu", "GAUDI2")
    cand = dataclasses.replace(cand, metrics=dataclasses.replace(cand.metrics, flops_per_step=1))
    with pytest.raises(UsageError, match=r"cannot compare bert/tiny/1x1.*workload definition differs"):
        compare([base], [cand], Tables())


def test_two_hardware_kinds_for_one_cell_on_one_side_is_refused():
    base = [fake_result("bert", "hpu", "GAUDI"), fake_result("bert", "cpu", "AMD EPYC")]
    with pytest.raises(UsageError, match=r"base holds two hardware kinds.*--base-accelerator"):
        compare(base, [fake_result("bert", "hpu", "GAUDI2")], Tables())
