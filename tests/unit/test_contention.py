"""Contention at the cell's own threads: schedstat parsing, the run-queue wait share, the edges of the
window, and the rule that keeps a verdict from ``ok`` where the conditions could not be measured
(hpubench.measure.conditions, hpubench.measure.conditions_probe, hpubench.analysis.quality)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from hpubench.analysis.compare import QUALITY_SEVERITY, UNCOMPARABLE_QUALITIES
from hpubench.analysis.quality import (
    INTERFERED,
    OK,
    PRECEDENCE,
    RESOLUTION_BOUND,
    RUN_QUEUE_BOUND,
    UNMEASURED,
    assess,
)
from hpubench.measure.conditions import (
    BUSY_THREAD_SHARE,
    HostSample,
    interference,
    procs_running,
    run_queue_wait,
    schedstat_times,
    self_contended,
    thread_state,
)
from hpubench.measure.conditions_probe import InterferenceMeter, tree_threads

MS = 1_000_000  # ns
STEADY = [0.01] * 40  # a tight, trendless cell: ok on its step times alone


# ---- parsing ----------------------------------------------------------------------------------------------


def test_schedstat_lines_give_on_cpu_and_wait_nanoseconds():
    assert schedstat_times("247239 1200 17\n") == (247239, 1200)
    assert schedstat_times("0 0 0") == (0, 0)
    for bad in ("", "12", "a b c", "-1 5 2"):
        assert schedstat_times(bad) is None


def test_procs_running_and_thread_state_are_read_from_procs_text():
    assert procs_running("cpu 1 2 3\ncpu0 1 2 3\nprocs_running 3\nprocs_blocked 0\n") == 3
    assert procs_running("cpu0 1 2 3\n") is None
    assert thread_state("4242 (python) R 1 4242 4242 0 -1") == "R"
    # A thread's name may hold spaces and parentheses: the state follows the last one.
    assert thread_state("77 (pt_main (x) y) S 1 77") == "S"
    assert thread_state("garbage") is None


# ---- the run-queue wait share ------------------------------------------------------------------------------


def test_a_thread_with_a_core_of_its_own_reads_zero():
    start = {10: (5 * MS, 1 * MS)}
    end = {10: (45 * MS, 1 * MS)}  # 40 ms on CPU in a 40 ms window, no new wait
    w = run_queue_wait(start, end, 0.040)
    assert w is not None and w.fraction == 0.0 and w.busy_threads == 1


def test_a_thread_beside_two_hogs_on_two_cores_reads_a_third_or_more():
    # Three runnable threads on two CPUs: the cell's gets two thirds of a CPU, waits the rest.
    w = run_queue_wait({10: (0, 0)}, {10: (24 * MS, 12 * MS)}, 0.036)
    assert w is not None and w.fraction == pytest.approx(1 / 3)
    assert w.fraction > RUN_QUEUE_BOUND


def test_a_cell_whose_own_busy_threads_outnumber_its_cpus_is_not_judged_by_its_wait():
    # Two ranks and their communication threads on two CPUs: they wait for each other, not for others.
    end = {10: (20 * MS, 16 * MS), 11: (20 * MS, 16 * MS), 12: (10 * MS, 8 * MS)}
    w = run_queue_wait({}, end, 0.040)
    assert w is not None and w.busy_threads == 3 and w.fraction > RUN_QUEUE_BOUND
    why = self_contended(w, 2)
    assert why is not None and "3 busy threads outnumber its 2 CPUs" in why
    assert self_contended(w, 4) is None  # enough CPUs: any wait was for another process


def test_sleeping_and_briefly_waking_threads_do_not_count():
    start = {1: (0, 0), 2: (0, 0), 3: (0, 0)}
    end = {
        1: (40 * MS, 0),  # the busy step thread, never waited
        2: (0, 0),  # a passive OpenMP thread asleep all along
        3: (int(0.2 * MS), int(1.5 * MS)),  # a timer thread: woke, waited 1.5 ms, ran 0.2 ms (< 5% of 40 ms)
    }
    w = run_queue_wait(start, end, 0.040)
    assert w is not None and w.fraction == 0.0
    assert (w.busy_threads, w.threads) == (1, 3)
    assert (0.2 * MS + 1.5 * MS) / 1e9 < BUSY_THREAD_SHARE * 0.040


def test_spinning_threads_count_and_still_read_high_beside_hogs():
    # all policy: two threads spinning between ops. Quiet: both on CPU all along. Beside two hogs: all four
    # threads share two CPUs, each waits half the time.
    quiet = run_queue_wait({1: (0, 0), 2: (0, 0)}, {1: (40 * MS, 0), 2: (40 * MS, 0)}, 0.040)
    busy = run_queue_wait({1: (0, 0), 2: (0, 0)}, {1: (20 * MS, 20 * MS), 2: (20 * MS, 20 * MS)}, 0.040)
    assert quiet is not None and quiet.fraction == 0.0
    assert busy is not None and busy.fraction == pytest.approx(0.5)


def test_threads_born_in_the_window_or_with_a_reused_id_count_from_zero():
    start = {1: (100 * MS, 50 * MS)}
    end = {1: (30 * MS, 10 * MS), 2: (30 * MS, 10 * MS)}  # 1's counters went back: a new thread, same id
    w = run_queue_wait(start, end, 0.040)
    assert w is not None and w.busy_threads == 2 and w.fraction == pytest.approx(0.25)


def test_a_kernel_without_sched_info_says_nothing_rather_than_zero():
    assert run_queue_wait({1: (0, 0)}, {1: (0, 0), 2: (0, 0)}, 0.040) is None  # it prints "0 0 0"
    assert run_queue_wait({}, {}, 0.040) is None


def test_every_thread_asleep_is_a_measured_zero():
    w = run_queue_wait({1: (5 * MS, 0)}, {1: (5 * MS, 0)}, 0.040)
    assert w is not None and w.fraction == 0.0 and w.busy_threads == 0


def test_the_window_edges_travel_in_the_interference_detail():
    start = HostSample(0.0, {0: 0, 1: 0}, 0.0, None, 3, 1)
    end = HostSample(0.035, {0: 3, 1: 3}, 0.03, None, 4, 1)
    d = interference(start, end, [0, 1], 0.01).detail()
    assert d["runnable_at_edges"] == {"host": [3, 4], "own": [1, 1], "cpus_online": 2}
    assert (
        "runnable_at_edges"
        not in interference(HostSample(0.0, {0: 0}, 0.0), HostSample(1.0, {0: 1}, 0.0), [0], 0.01).detail()
    )


# ---- reading ----------------------------------------------------------------------------------------------


def _fake_proc(root: Path, pid: int, threads: dict[int, tuple[str, str | None]]) -> None:
    for tid, (state, schedstat) in threads.items():
        d = root / str(pid) / "task" / str(tid)
        d.mkdir(parents=True)
        (d / "stat").write_text(f"{tid} (pt (main)) {state} 1 {pid}\n")
        if schedstat is not None:
            (d / "schedstat").write_text(schedstat)


def test_tree_threads_reads_every_thread_of_every_process(tmp_path: Path):
    _fake_proc(tmp_path, 100, {100: ("R", "40 2 3\n"), 101: ("S", "0 0 0\n")})
    _fake_proc(tmp_path, 200, {200: ("R", "30 1 1\n")})
    procs = [SimpleNamespace(pid=100), SimpleNamespace(pid=200), SimpleNamespace(pid=300)]  # 300 has ended
    times, running = tree_threads(procs, str(tmp_path))  # type: ignore[arg-type]
    assert times == {100: (40, 2), 101: (0, 0), 200: (30, 1)}
    assert running == 2


def test_tree_threads_without_schedstat_says_none(tmp_path: Path):
    _fake_proc(tmp_path, 100, {100: ("R", None)})
    times, running = tree_threads([SimpleNamespace(pid=100)], str(tmp_path))  # type: ignore[list-item]
    assert times is None and running == 1
    assert tree_threads([SimpleNamespace(pid=1)], str(tmp_path / "none")) == (None, None)  # type: ignore[list-item]


def test_the_meter_records_the_run_queue_wait_of_this_process():
    meter = InterferenceMeter(__import__("os").getpid())
    meter.start()
    x = 0
    for i in range(200_000):
        x += i
    meter.stop()
    rt = meter.record()
    assert 0.0 <= rt["run_queue_wait"] <= 1.0
    assert rt["run_queue_detail"]["busy_threads"] >= 1
    assert rt["interference_detail"]["runnable_at_edges"]["own"][0] >= 1  # the reading thread runs


# ---- the verdict ------------------------------------------------------------------------------------------

COARSE = {"interference": 0.0, "interference_detail": {"resolution": 0.57, "window_s": 0.035}}
FINE = {"interference": 0.0, "interference_detail": {"resolution": 0.01, "window_s": 2.0}}
NO_SCHEDSTAT = {"run_queue_detail": {"available": False, "reason": "no per-thread schedstat on this host"}}


def test_a_coarse_window_without_schedstat_is_never_ok():
    q = assess(STEADY, {**COARSE, **NO_SCHEDSTAT})
    assert q.verdict == UNMEASURED
    assert q.reasons[0].startswith("conditions not measurable in this window")
    assert "±57%" in q.reasons[0] and "35 ms" in q.reasons[0] and "no per-thread schedstat" in q.reasons[0]
    # A record that measured the window but holds no run-queue figure at all (written before it existed).
    assert assess(STEADY, COARSE).verdict == UNMEASURED
    # No /proc/stat at all (not Linux): nothing was measured.
    assert assess(STEADY, {"interference_error": "FileNotFoundError: /proc/stat"}).verdict == UNMEASURED


def test_either_source_alone_measures_the_window():
    assert assess(STEADY, {**COARSE, "run_queue_wait": 0.01}).verdict == OK  # schedstat, any window
    assert assess(STEADY, {**FINE, **NO_SCHEDSTAT}).verdict == OK  # /proc/stat over a long enough window
    at_bound = {"interference": 0.0, "interference_detail": {"resolution": RESOLUTION_BOUND}}
    assert assess(STEADY, at_bound).verdict == OK


def test_records_without_conditions_facts_are_judged_as_before():
    assert assess(STEADY, {}).verdict == OK
    assert assess(STEADY, None).verdict == OK


def test_a_busy_thread_that_waited_past_the_bound_is_interfered():
    q = assess(STEADY, {**COARSE, "run_queue_wait": 0.31})
    assert q.verdict == INTERFERED
    assert q.reasons == (
        "the cell's busy threads waited for a CPU 31% of the time they were runnable (> 10% bound)",
    )
    assert assess(STEADY, {**COARSE, "run_queue_wait": RUN_QUEUE_BOUND}).verdict == OK  # at the bound: ok


def _edges(host: list[int], own: list[int], resolution: float = 0.57) -> dict:
    detail = {"resolution": resolution, "runnable_at_edges": {"host": host, "own": own, "cpus_online": 2}}
    return {"interference": 0.3, "interference_detail": detail, "run_queue_wait": 0.0}


def test_a_crowded_host_at_both_ends_of_a_short_window_is_interfered():
    # The cell's one thread had a CPU to itself while two hogs shared the other: it waited for nothing,
    # but the host had 3 runnable threads on 2 CPUs at both ends.
    q = assess(STEADY, _edges([3, 3], [1, 1]))
    assert q.verdict == INTERFERED
    assert q.reasons[0].startswith("more runnable threads than the host's 2 CPUs at both ends")
    assert assess(STEADY, _edges([3, 2], [1, 1])).verdict == OK  # one end only: a passing neighbour
    assert assess(STEADY, _edges([3, 3], [3, 3])).verdict == OK  # the cell's own threads: not a neighbour
    # Over a long window /proc/stat's own share decides (0.3 - 0.01 > 10%: interfered; the edges aside).
    assert assess(STEADY, _edges([1, 1], [1, 1], resolution=0.01)).verdict == INTERFERED


def test_unmeasured_is_the_least_severe_problem_and_comparable():
    assert PRECEDENCE[-2:] == (UNMEASURED, OK)
    assert {q: i for i, q in enumerate(reversed(PRECEDENCE))} == QUALITY_SEVERITY
    assert UNMEASURED not in UNCOMPARABLE_QUALITIES
    # A noisy cell in an unmeasured window is noisy first, with both reasons.
    q = assess(STEADY, COARSE, rel_halfwidth=0.2)
    assert q.verdict == "noisy" and len(q.reasons) == 2
