"""``hpubench profile`` for real on CPU: traces that load, operator tables of real torch ops, and plain
figures that the profiler never touches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpubench.plan.autosteps import LEAD_IN_STEPS
from hpubench.plan.cell import Cell
from hpubench.plan.runoptions import RunOptions
from hpubench.run.worker import run_cell
from hpubench.store.readback import load_results

MATMUL_OPS = {"aten::addmm", "aten::mm", "aten::linear", "aten::matmul", "aten::bmm"}
STEPS, WARMUP, ACTIVE = 3, 1, 2


def _cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hpubench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "250"},
    )


@pytest.fixture(scope="module")
def profiled(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("profile") / "run"
    proc = _cli(
        "profile",
        "--workload",
        "mlp,gpt",
        "--size",
        "tiny",
        "--accelerator",
        "cpu",
        "--steps",
        str(STEPS),
        "--warmup-steps",
        str(WARMUP),
        "--wait",
        "0",
        "--warmup",
        "1",
        "--active",
        str(ACTIVE),
        "--top",
        "15",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


@pytest.mark.slow  # shares one real `hpubench profile` run (~10 s)
def test_profile_writes_a_chrome_trace_per_cell_that_loads_with_events(profiled):
    out, _ = profiled
    results = load_results([str(out)])
    assert [r.cell.workload for r in results] == ["mlp", "gpt"]
    for r in results:
        assert r.status == "ok", r.reason
        p = r.profile
        assert p is not None and p.error is None
        assert p.trace_path == f"traces/{r.key.replace('/', '__')}.json"
        trace = json.loads((out / p.trace_path).read_text())
        events = trace["traceEvents"]
        assert len(events) > 50
        names = {e.get("name", "") for e in events}
        assert any(n.startswith("aten::") for n in names)
        assert "hpubench::step" in names  # our range marks each profiled step in the timeline
        assert p.trace_bytes == (out / p.trace_path).stat().st_size


@pytest.mark.slow  # shares one real `hpubench profile` run (~10 s)
def test_the_operator_table_is_led_by_real_torch_ops(profiled):
    out, _ = profiled
    for r in load_results([str(out)]):
        rows = r.profile.top_ops
        assert 5 <= len(rows) <= 15
        top5 = [row.name for row in rows[:5]]
        assert sum(n.startswith("aten::") for n in top5) >= 3, top5
        assert MATMUL_OPS & {row.name for row in rows[:8]}, top5
        assert r.profile.sort_by == "self_cpu" and r.profile.activities == ("CPU",)
        assert all(row.calls > 0 and row.self_cpu_s >= 0 and row.pct_of_step >= 0 for row in rows)
        selfs = [row.self_cpu_s for row in rows]
        assert selfs == sorted(selfs, reverse=True)
        assert not any(row.name.startswith(("ProfilerStep", "hpubench::")) for row in rows)
        assert sum(row.pct_of_step for row in rows) < 150


@pytest.mark.slow  # shares one real `hpubench profile` run (~10 s)
def test_profiled_steps_are_recorded_apart_from_the_plain_figures(profiled):
    out, _ = profiled
    for r in load_results([str(out)]):
        m = r.metrics
        assert len(r.step_times_s) == STEPS and m.measured_steps == STEPS
        assert len(r.profile.step_times_s) == ACTIVE
        # throughput is computed from the plain steps alone
        assert m.samples_per_s == pytest.approx(m.samples_per_step * STEPS / sum(r.step_times_s))
        assert r.profile.step_time_mean_s == pytest.approx(sum(r.profile.step_times_s) / ACTIVE)
        assert r.runtime["run_options"]["profile"]["active"] == ACTIVE


@pytest.mark.slow  # shares one real `hpubench profile` run (~10 s)
def test_profile_samples_a_memory_timeline_every_step(profiled):
    out, _ = profiled
    for r in load_results([str(out)]):
        tl = r.memory_timeline
        warm = WARMUP + LEAD_IN_STEPS
        assert [s.phase for s in tl] == ["start"] + ["warmup"] * warm + ["measured"] * STEPS
        assert [s.step for s in tl] == list(range(1 + warm + STEPS))
        assert all(s.in_use_bytes and s.in_use_bytes > 0 for s in tl)
        assert tl == tuple(sorted(tl, key=lambda s: s.t_s))


@pytest.mark.slow  # shares one real `hpubench profile` run (~10 s)
def test_profile_prints_operator_tables_and_results_can_show_them_again(profiled):
    out, proc = profiled
    assert "top operators: mlp/tiny/cpu" in proc.stdout and "top operators: gpt/tiny/cpu" in proc.stdout
    assert "memory over the steps" in proc.stdout
    again = _cli("results", str(out), "--profile")
    assert again.returncode == 0, again.stderr
    assert "top operators: gpt/tiny/cpu" in again.stdout and "aten::" in again.stdout
    plain = _cli("results", str(out))
    assert "top operators" not in plain.stdout


@pytest.mark.slow  # shares one real `hpubench profile` run (~10 s)
def test_telemetry_on_cpu_is_measured_or_absent_with_a_reason_never_zero(profiled):
    out, _ = profiled
    for r in load_results([str(out)]):
        t = r.telemetry
        assert t is not None
        if t.source is None:
            assert t.absent_reason and t.mean_power_w is None and t.energy_per_step_j is None
        else:
            assert t.source == "rapl" and (t.energy_j is None or t.energy_j > 0)


def test_a_plain_run_records_no_profile_and_no_timeline():
    r = run_cell(Cell("mlp", steps=2, warmup_steps=1))
    assert r.status == "ok", r.reason
    assert r.profile is None and r.memory_timeline == () and r.loader is None
    assert r.telemetry is not None  # on by default: measured, or absent with its reason
    assert "run_options" not in r.runtime


def test_no_telemetry_means_no_telemetry_record():
    r = run_cell(Cell("mlp", steps=2, warmup_steps=1), options=RunOptions(telemetry=False))
    assert r.status == "ok" and r.telemetry is None


def test_host_loader_pass_splits_data_wait_from_compute():
    cell = Cell("gpt", steps=3, warmup_steps=1)
    r = run_cell(cell, options=RunOptions(loader="host", telemetry=False))
    assert r.status == "ok", (r.reason, r.traceback_tail)
    s = r.loader
    assert s.steps == 3 and len(s.data_wait_s) == 3 and len(s.compute_s) == 3
    assert all(w > 0 for w in s.data_wait_s) and all(c > 0 for c in s.compute_s)
    assert 0 < s.data_fraction < 1
    assert len(r.step_times_s) == 3  # the plain steps are untouched by the loader pass


@pytest.mark.slow
def test_profile_options_reach_a_spawned_worker_too(tmp_path):
    out = tmp_path / "run"
    proc = _cli(
        "profile",
        "-w",
        "mlp",
        "-a",
        "cpu",
        "--steps",
        "2",
        "--warmup-steps",
        "1",
        "--active",
        "1",
        "--memory-every",
        "0",
        "--loader",
        "host",
        "--isolation",
        "spawn",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (r,) = load_results([str(out)])
    assert r.profile is not None and len(r.profile.step_times_s) == 1
    assert (out / r.profile.trace_path).is_file()
    assert r.memory_timeline == () and r.loader is not None


def test_bad_profile_options_exit_2_with_one_line(tmp_path):
    proc = _cli("profile", "-w", "mlp", "--active", "0", "--out", str(tmp_path / "x"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--active" in proc.stderr
    proc = _cli("run", "-w", "mlp", "--loader", "disk", "--out", str(tmp_path / "y"))
    assert proc.returncode == 2 and "--loader" in proc.stderr
