"""The conditions a cell measured under: interference arithmetic, thread policies, the facts' shape."""

from __future__ import annotations

import mmap
import os

import pytest
import torch

from hpubench.accelerators.cpu import CPUAccelerator
from hpubench.measure.conditions import (
    DEFAULT_THREAD_POLICY,
    THREADS_ENV,
    HostSample,
    busy_ticks_per_cpu,
    interference,
    plan_threads,
    thread_policy,
)
from hpubench.measure.conditions_probe import InterferenceMeter, thread_facts
from hpubench.measure.steps import measure_steps
from hpubench.plan.autosteps import LEAD_IN_STEPS
from hpubench.plan.cell import Cell

PROC_STAT = """cpu  900 10 300 5000 20 5 7 3 0 0
cpu0 100 1 50 2500 10 2 3 1 40 0
cpu1 800 9 250 2500 10 3 4 2 0 0
intr 12345 0 0
ctxt 999
"""


def test_busy_ticks_sum_every_column_but_idle_and_iowait_per_cpu():
    # user + nice + system + irq + softirq + steal; guest (already inside user) is not added twice
    assert busy_ticks_per_cpu(PROC_STAT) == {0: 100 + 1 + 50 + 2 + 3 + 1, 1: 800 + 9 + 250 + 3 + 4 + 2}


def _sample(t: float, busy: dict[int, int], own: float) -> HostSample:
    return HostSample(wall_s=t, busy_ticks=busy, own_cpu_s=own)


def test_interference_is_others_share_of_the_windows_core_seconds():
    start = _sample(10.0, {0: 1000, 1: 2000, 2: 0}, own=5.0)
    # 2 s on CPUs 0 and 1: 4 core-seconds; 300 ticks (3.0 s) busy there, 1.0 s of it the cell's own
    end = _sample(12.0, {0: 1150, 1: 2150, 2: 200}, own=6.0)
    r = interference(start, end, [0, 1], tick_s=0.01)
    assert r.fraction == pytest.approx((3.0 - 1.0) / 4.0)
    assert r.cpus == (0, 1)  # CPU 2 is outside the cell's affinity: its 2 busy seconds are not counted
    assert r.busy_core_s == pytest.approx(3.0) and r.own_core_s == pytest.approx(1.0)
    assert r.window_s == pytest.approx(2.0)
    assert r.resolution == pytest.approx(2 * 2 * 0.01 / 4.0)
    d = r.detail()
    assert {"window_s", "cpus", "busy_core_s", "own_core_s"} <= d.keys() and d["cpus"] == [0, 1]


def test_interference_is_clamped_to_zero_and_one():
    start = _sample(0.0, {0: 0}, own=0.0)
    # own time a tick above the busy ticks (counters round differently): 0, not negative
    assert interference(start, _sample(1.0, {0: 100}, own=1.02), [0], 0.01).fraction == 0.0
    # more busy ticks than the window holds (the clocks disagree slightly): 1, not above
    assert interference(start, _sample(1.0, {0: 104}, own=0.0), [0], 0.01).fraction == 1.0


def test_an_empty_window_says_nothing():
    s = _sample(5.0, {0: 10}, own=1.0)
    r = interference(s, s, [0], 0.01)
    assert r.fraction == 0.0 and r.resolution == 1.0
    assert interference(s, _sample(6.0, {0: 50}, 1.0), [7], 0.01).cpus == ()  # no CPU of the cell known


def test_thread_policy_defaults_and_refuses_unknown_names():
    assert thread_policy({}) == DEFAULT_THREAD_POLICY
    assert thread_policy({THREADS_ENV: " pinned "}) == "pinned"
    with pytest.raises(ValueError, match=f"{THREADS_ENV}='fast'.*all, all-passive, cores-1, pinned"):
        thread_policy({THREADS_ENV: "fast"})


def test_a_users_omp_num_threads_always_wins():
    for policy in ("all", "all-passive", "cores-1", "pinned"):
        plan = plan_threads(policy, [0, 1, 2, 3], 1, 0, {"OMP_NUM_THREADS": "3"})
        assert plan.policy == "user: OMP_NUM_THREADS=3"
        assert plan.threads is None and plan.affinity is None


@pytest.mark.parametrize(
    ("policy", "cpus", "ranks", "rank", "threads", "affinity"),
    [
        ("all", [0, 1], 1, 0, None, None),  # torch's own default
        ("all", [0, 1, 2, 3], 2, 1, 2, None),  # several ranks divide the cores
        ("all-passive", [0, 1, 2, 3], 1, 0, None, None),
        ("cores-1", [0, 1], 1, 0, 1, None),
        ("cores-1", [0, 1, 2, 3, 4, 5, 6, 7], 1, 0, 7, None),
        ("cores-1", [0], 1, 0, 1, None),  # never zero threads
        ("cores-1", [0, 1], 2, 0, 1, None),
        ("pinned", [0, 1], 1, 0, 1, (1,)),  # the first CPU is left free
        ("pinned", [4, 2, 3], 1, 0, 2, (3, 4)),
        ("pinned", [0, 1, 2, 3, 4], 2, 1, 2, (3, 4)),  # each rank its own slice
        ("pinned", [0, 1], 2, 0, 1, (0,)),  # as many CPUs as ranks: one each, the first CPU included
        ("pinned", [0, 1], 2, 1, 1, (1,)),
        ("pinned", [0, 1], 3, 2, 1, (0, 1)),  # more ranks than CPUs: they share them all
        ("pinned", [5], 1, 0, 1, (5,)),
    ],
)
def test_thread_plans(policy, cpus, ranks, rank, threads, affinity):
    plan = plan_threads(policy, cpus, ranks, rank, {})
    assert (plan.policy, plan.threads, plan.affinity) == (policy, threads, affinity)


def test_thread_facts_have_the_contracts_shape():
    facts = thread_facts("cores-1")
    assert set(facts) == {"intra_op", "inter_op", "omp_wait_policy", "affinity", "load_avg_start", "policy"}
    assert facts["intra_op"] >= 1 and facts["inter_op"] >= 1
    assert facts["affinity"] and all(isinstance(c, int) for c in facts["affinity"])
    assert isinstance(facts["load_avg_start"], float) and facts["policy"] == "cores-1"


def test_the_meter_brackets_the_measured_steps_inside_the_other_hooks():
    calls: list[str] = []
    meter = InterferenceMeter(os.getpid())
    meter.start = lambda: calls.append("meter start")  # type: ignore[method-assign]
    meter.stop = lambda: calls.append("meter stop")  # type: ignore[method-assign]
    hooks = meter.hooks(
        {
            "on_step": lambda *a: calls.append("step"),
            "on_measured_start": lambda: calls.append("telemetry start"),
            "on_measured_end": lambda: calls.append("telemetry stop"),
        }
    )
    hooks["on_measured_start"]()
    hooks["on_step"]("measured", 0)
    hooks["on_measured_end"]()
    assert calls == ["telemetry start", "meter start", "step", "meter stop", "telemetry stop"]
    assert set(meter.hooks({})) == {"on_window_open", "on_measured_start", "on_measured_end"}


def test_the_meters_proc_sample_comes_before_the_lead_in_and_its_fault_count_at_the_window():
    """Once the warm-up rule is done, its bookkeeping, then the slow /proc sample (once), then the warm-up's
    lead-in step; the page faults are counted from the window's start."""
    events: list[str] = []
    meter = InterferenceMeter(os.getpid())
    sample, faults = meter.open_window, meter.start
    meter.open_window = lambda: (events.append("proc sample"), sample())[-1]  # type: ignore[method-assign]
    meter.start = lambda: (events.append("faults"), faults())[-1]  # type: ignore[method-assign]
    out = measure_steps(
        lambda b: b[0].sum(),
        [(torch.ones(2),)],
        lambda: None,
        2,
        2,
        on_warmup_done=lambda: events.append("warm-up done"),
        on_step=lambda phase, i: events.append(f"{phase} {i}"),
        **meter.hooks({}),
    )
    lead_in = [f"warmup {2 + i}" for i in range(LEAD_IN_STEPS)]
    assert events == [
        *("warmup 0", "warmup 1", "warm-up done", "proc sample", *lead_in, "faults"),
        *("measured 0", "measured 1"),
    ]
    assert len(out.warmup_s) == 2 + LEAD_IN_STEPS
    rec = meter.record()
    assert "page_faults_measured" in rec and ("interference" in rec or "interference_error" in rec)


def test_a_meter_that_never_started_records_nothing():
    meter = InterferenceMeter(os.getpid())
    meter.stop()
    assert meter.record() == {}


def test_the_meter_reads_this_hosts_cpus_and_this_process_tree():
    meter = InterferenceMeter(os.getpid())
    meter.start()
    sum(i * i for i in range(200_000))  # some CPU time of our own between the samples
    meter.stop()
    rec = meter.record()
    assert 0.0 <= rec["interference"] <= 1.0
    detail = rec["interference_detail"]
    assert detail["cpus"] == sorted(os.sched_getaffinity(0)) and detail["window_s"] > 0


def test_passive_policy_sets_the_wait_policy_before_torch_loads(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv(THREADS_ENV, "all-passive")
    assert CPUAccelerator.env_before_import(Cell("mlp")) == {"OMP_WAIT_POLICY": "PASSIVE"}
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the user's own choice stays
    assert CPUAccelerator.env_before_import(Cell("mlp")) == {}
    monkeypatch.setenv(THREADS_ENV, "cores-1")
    monkeypatch.delenv("OMP_WAIT_POLICY")
    assert CPUAccelerator.env_before_import(Cell("mlp")) == {}


def test_the_meter_counts_the_page_faults_of_memory_first_touched_in_the_window():
    quiet = InterferenceMeter(os.getpid())
    quiet.start()
    quiet.stop()
    touched = InterferenceMeter(os.getpid())
    touched.start()
    block = mmap.mmap(-1, 8 << 20)  # 2048 fresh pages, each faulted in by its first write
    for offset in range(0, len(block), mmap.PAGESIZE):
        block[offset] = 1
    touched.stop()
    block.close()
    assert quiet.record()["page_faults_measured"]["minor"] < 50
    assert touched.record()["page_faults_measured"]["minor"] >= (8 << 20) // mmap.PAGESIZE
    assert touched.record()["page_faults_measured"]["major"] == 0
