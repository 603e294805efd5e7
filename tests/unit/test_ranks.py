"""Merging every rank's measurements, naming a distributed failure, and the multi-node schedule (pure)."""

from __future__ import annotations

import pytest

from hpubench.measure.ranks import RankSample, merge_ranks, rank_peaks
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.cluster import ClusterEnv
from hpubench.run.distributed.causes import root_cause, timeout_reason
from hpubench.run.distributed.launch import schedule
from hpubench.run.distributed.spec import rendezvous_id
from hpubench.run.exitwords import MemoryEvidence


def sample(rank: int, measured: list[float], peak: int | None, loss: float = 1.0) -> RankSample:
    return RankSample(
        rank=rank,
        local_rank=rank % 2,
        node_rank=rank // 2,
        host=f"h{rank // 2}",
        pid=100 + rank,
        device_index=rank % 2,
        threads=1,
        warmup_s=(1.0 + rank, 0.5),
        measured_s=tuple(measured),
        loss_first=loss,
        loss_last=loss / 2,
        memory={"source": "process", "peak_allocated_bytes": peak, "in_use_bytes": 1},
    )


def test_global_step_times_are_the_slowest_ranks_own() -> None:
    """Rank 0's window (0.7 s) is longer than rank 1's (0.6 s): its steps are the cell's. A per-step maximum
    (0.2, 0.5, 0.3: 1.0 s) would be longer than either rank's window, which is what the ranks took."""
    merged = merge_ranks([sample(1, [0.2, 0.1, 0.3], 50), sample(0, [0.1, 0.5, 0.1], 70, loss=3.0)])
    assert merged.measured_s == (0.1, 0.5, 0.1)
    assert merged.warmup_s == (2.0, 0.5)  # rank 1's warm-up (2.5 s) was the longer one
    assert merged.loss_first == pytest.approx(2.0) and merged.loss_last == pytest.approx(1.0)
    assert merged.memory is not None and merged.memory.peak_allocated_bytes == 70
    rt = merged.runtime
    assert [r["rank"] for r in rt["ranks"]] == [0, 1]
    assert rt["ranks"][1]["step_times_s"] == [0.2, 0.1, 0.3]
    assert rt["ranks"][0]["peak_memory_bytes"] == 70
    peaks = (rt["peak_memory_max_bytes"], rt["peak_memory_max_rank"], rt["peak_memory_sum_bytes"])
    assert peaks == (70, 0, 120)
    assert rt["slowest_rank"] == 0 and rt["hosts"] == ["h0"]


def test_each_ranks_peak_is_kept_in_rank_order_and_read_from_older_records_too() -> None:
    merged = merge_ranks([sample(1, [0.1], 50), sample(0, [0.1], 70), sample(2, [0.1], None)])
    assert merged.runtime["peak_memory_per_rank_bytes"] == [70, 50, None]
    assert rank_peaks({"distributed": merged.runtime}) == [70, 50, None]  # a record's runtime
    # a record written before the list existed: the same figures from its per-rank entries
    older = {
        "distributed": {"ranks": [{"rank": 0, "peak_memory_bytes": 9}, {"rank": 1, "peak_memory_bytes": 8}]}
    }
    assert rank_peaks(older) == [9, 8]
    assert rank_peaks({}) is None and rank_peaks({"distributed": {}}) is None


def test_merge_refuses_inconsistent_ranks() -> None:
    with pytest.raises(ValueError, match="different numbers"):
        merge_ranks([sample(0, [0.1, 0.1], 1), sample(1, [0.1], 1)])
    with pytest.raises(ValueError, match="not ranks"):
        merge_ranks([sample(0, [0.1], 1), sample(2, [0.1], 1)])
    assert merge_ranks([sample(0, [0.1], None), sample(1, [0.1], None)]).memory is not None


# ---- what went wrong ----------------------------------------------------------------------------------


def test_the_earliest_reported_failure_is_the_cause() -> None:
    statuses = [
        {"rank": 0, "phase": "failed", "reason": "RuntimeError: Connection closed by peer", "time": 12.0},
        {
            "rank": 1,
            "phase": "failed",
            "reason": "RuntimeError: kaboom",
            "time": 10.0,
            "traceback_tail": "t",
        },
    ]
    cause = root_cause(statuses, [], [{"rank": 0}, {"rank": 1}])
    assert cause.rank == 1
    assert cause.reason == "rank 1 failed: RuntimeError: kaboom (then also failed or stopped: rank 0)"
    assert cause.tail == "t"


def test_a_note_from_another_node_beats_the_errors_it_caused_here() -> None:
    statuses = [
        {"rank": 0, "node_rank": 0, "local_rank": 0, "phase": "failed", "reason": "closed", "time": 12.0}
    ]
    notes = [{"rank": 2, "node_rank": 1, "reason": "RuntimeError: kaboom", "time": 11.0}]
    reason = root_cause(statuses, notes, [{"rank": 0}], multi_node=True).reason
    assert reason.startswith("rank 2 (node 1, local rank None) failed: RuntimeError: kaboom")
    assert "rank 0" in reason


def test_a_crash_without_report_is_named_by_its_signal_not_the_ranks_the_agent_stopped() -> None:
    failures = [
        {"rank": 0, "signal": "SIGTERM", "exitcode": -15, "timestamp": 5},
        {"rank": 1, "signal": "SIGSEGV", "exitcode": -11, "timestamp": 6, "callstack": None},
    ]
    cause = root_cause([], [], failures)
    assert cause.reason == "rank 1 died: crashed with signal SIGSEGV (then also failed or stopped: rank 0)"
    assert cause.rank == 1
    cause = root_cause([], [], [{"rank": 1, "exitcode": 3, "message": "boom", "timestamp": 1}])
    assert cause.reason == "rank 1 exited with code 3: boom"
    assert root_cause([], [], []).rank is None


def test_a_rank_killed_from_outside_is_the_cause_not_the_rank_the_agent_stopped_after_it() -> None:
    # 2026-11-27: the kernel's OOM killer took rank 1 (SIGKILL); the agent then sent rank 0 SIGTERM.
    failures = [
        {"rank": 0, "signal": "SIGTERM", "exitcode": -15, "timestamp": 5},
        {"rank": 1, "signal": "SIGKILL", "exitcode": -9, "timestamp": 5},
    ]
    oom = MemoryEvidence(None, None, oom_kills=1)
    cause = root_cause([], [], failures, memory=oom)
    assert cause.rank == 1
    assert cause.reason == (
        "rank 1 died: killed by SIGKILL, likely out of memory (the kernel's OOM killer acted in its cgroup) "
        "(then also failed or stopped: rank 0)"
    )
    # Without the kernel's word, no memory claim; and a rank's own crash still comes before any kill.
    assert (
        root_cause([], [], failures).reason
        == "rank 1 died: killed by SIGKILL (then also failed or stopped: rank 0)"
    )
    crash = [*failures, {"rank": 2, "signal": "SIGABRT", "exitcode": -6, "timestamp": 9}]
    assert root_cause([], [], crash, memory=oom).rank == 2
    unknown = [{"rank": 1, "signal": "SIGFOO", "exitcode": -99, "timestamp": 1}]
    assert root_cause([], [], unknown).reason == "rank 1 died: killed by SIGFOO"


def test_timeout_reasons() -> None:
    assert "before any of the 2 ranks started" in timeout_reason(30, [], 2, multi_node=False)
    assert "waiting for the other nodes" in timeout_reason(30, [], 1, multi_node=True)
    started = [{"rank": 0, "phase": "started"}, {"rank": 1, "phase": "done"}]
    assert (
        timeout_reason(30, started, 2, False)
        == "timed out after 30 s: rank 0 never finished while rank 1 did"
    )
    both = [{"rank": 0, "phase": "started"}, {"rank": 1, "phase": "started"}]
    assert timeout_reason(30, both, 2, False).startswith("timed out after 30 s: ranks 0, 1 still running")


# ---- which cells a node runs, and how long it may wait for node 0 -----------------------------------------


def test_schedule_for_node_one_counts_node_zero_cells_in_between() -> None:
    plan = [
        PlannedCell(Cell("mlp", nodes=2)),
        PlannedCell(Cell("mlp")),
        PlannedCell(Cell("gpt")),
        PlannedCell(Cell("mlp", devices=2)),
        PlannedCell(Cell("bert", nodes=2), skip_reason="no"),
        PlannedCell(Cell("gpt", nodes=2)),
    ]
    node1 = ClusterEnv(node_rank=1, master_addr="h", master_port=1)
    slots = schedule(plan, 2, node1)
    assert sorted(slots) == [(0, 0), (0, 1), (5, 0), (5, 1)]
    assert slots[(0, 0)].cells_before == 0
    assert slots[(5, 0)].cells_before == 3  # mlp, gpt, mlp 2 devices: node 0's alone
    assert slots[(0, 1)].cells_before == 0  # nothing runnable between gpt (pass 0) and mlp (pass 1)
    ids = [rendezvous_id(plan[i].cell.key, rep) for i, rep in ((5, 0), (0, 1), (5, 1))]
    assert slots[(0, 0)].ahead_ids == tuple(ids)
    assert slots[(5, 1)].ahead_ids == ()
    node0 = schedule(plan, 1, ClusterEnv(node_rank=0, master_addr="h", master_port=1))
    assert sorted(node0) == [(0, 0), (3, 0), (5, 0)]
    assert all(s.cells_before == 0 for s in node0.values())
    assert sorted(schedule(plan, 1, None)) == [(0, 0), (3, 0), (5, 0)]


def test_rendezvous_ids_differ_by_cell_and_repeat_and_agree_across_nodes() -> None:
    key = Cell("mlp", nodes=2).key
    assert rendezvous_id(key, 0) == rendezvous_id(key, 0)
    other = Cell("gpt", nodes=2).key
    assert len({rendezvous_id(key, 0), rendezvous_id(key, 1), rendezvous_id(other, 0)}) == 3
