"""Steady state proven and adaptive steps, from the CLI: real cells in real subprocesses.

The compile test runs torch.compile's default backend on CPU (inductor, which needs the C compiler found
here); both cells share one run so the second reuses the first one's compiled kernels.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_errors import assert_one_line_error

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "shapes.py"


def records(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "cells.jsonl").read_text().splitlines()
    return {r["cell"]["workload"]: r for r in map(json.loads, lines)}


@pytest.mark.slow
def test_a_shape_change_in_the_measured_steps_is_counted_as_a_compilation(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli(
        "run",
        "--workloads-from",
        str(PLUGIN),
        "-w",
        "shapeshift,shapefixed",
        "--mode",
        "compile",
        "--steps",
        "4",
        "--warmup-steps",
        "2",  # then the lead-in: the long 4th batch is the first measured step
        "-o",
        str(run),
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = records(run)
    shift, fixed = recs["shapeshift"], recs["shapefixed"]
    assert shift["status"] == fixed["status"] == "ok", (shift.get("reason"), fixed.get("reason"))
    assert shift["runtime"]["mode_in_force"] == "compile"
    assert shift["runtime"]["compiles_measured"] >= 1
    assert shift["runtime"]["compile_detail"]["dynamo_frames"] >= 1
    assert fixed["runtime"]["compiles_measured"] == 0
    for r in (shift, fixed):
        assert "torch._dynamo" in r["runtime"]["compile_counter"]
        assert r["runtime"]["steps_stop"] == "fixed: 4 steps"


@pytest.mark.slow
def test_steps_auto_stops_within_max_time_and_says_why(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli("run", "-w", "mlp", "--steps", "auto", "--target-ci", "5%", "--max-time", "3", "-o", str(run))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = records(run)["mlp"]
    assert rec["status"] == "ok", rec.get("reason")
    assert rec["cell"]["steps"] is None
    assert rec["cell"]["auto_steps"]["target_ci"] == pytest.approx(0.05)
    assert rec["cell"]["auto_steps"]["max_time_s"] == 3.0
    stop = rec["runtime"]["steps_stop"]
    n = len(rec["step_times_s"])
    assert n >= rec["cell"]["auto_steps"]["min_steps"]
    assert rec["metrics"]["measured_steps"] == n
    if stop.startswith("target:"):
        assert stop.endswith(f"<= 5.0% after {n} steps")
        assert rec["runtime"]["steps_auto"]["half_width"] <= 0.05
    else:
        assert stop.startswith("max-time: 3 s reached"), stop
        # the limit is checked after every step: the steps before the last one ran less than 3 s
        assert sum(rec["step_times_s"][:-1]) < 3.0
    assert rec["runtime"]["compiles_measured"] == 0
    # the warm-up lasted the rule's minimum time after its first step
    min_time = rec["cell"]["auto_steps"]["min_time_s"]
    assert min_time > 0 and sum(rec["warmup_times_s"][1:]) >= min_time
    assert len(rec["warmup_times_s"]) > rec["cell"]["warmup_steps"]
    assert f"to reach {min_time:g} s after the first" in rec["runtime"]["warmup_extended"]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--steps", "foo"], "--steps takes a whole number >= 2 or 'auto', got 'foo'"),
        (["--steps", "auto", "--target-ci", "0"], "--target-ci 0: target_ci must be"),
        (["--steps", "auto", "--max-time", "-1"], "--max-time -1: max_time must be positive"),
        (["--steps", "auto", "--min-time", "9", "--max-time", "2"], "longer than max_time"),
        (["--steps", "10", "--max-time", "5"], "--max-time applies to --steps auto only"),
    ],
)
def test_bad_auto_step_settings_are_one_line(cli, tmp_path, args, fragment):
    assert_one_line_error(cli("run", "-w", "mlp", *args, cwd=tmp_path), fragment)
    assert not (tmp_path / "results").exists()
