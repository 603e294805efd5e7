"""The warm-up runs until the compiler is done, from the CLI: real cells in real subprocesses.

A 2-rank DDP compile cell once read ``recompiled`` (dynamo's frame count took DDP's second-step logging
for compilations, and the wrapped ``nn.Sequential`` compiled nothing); a workload that recompiles every
step must still read ``recompiled``, its warm-up stopped at the bound.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_steady import records

from hpubench.plan.autosteps import COMPILE_WARMUP_MAX_STEPS, LEAD_IN_STEPS, STOP_BOUND, STOP_SETTLED

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "recompiles.py"


@pytest.mark.slow
def test_a_two_rank_ddp_compile_cell_measures_after_the_compiler_is_done(cli, tmp_path):
    run = tmp_path / "run"
    args = ("-w", "mlp", "--size", "tiny", "--devices", "2", "--mode", "compile", "--warmup-steps", "1")
    proc = cli("run", *args, "--steps", "5", "--no-telemetry", "-o", str(run), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = records(run)["mlp"]
    assert rec["status"] == "ok", rec.get("reason")
    rt = rec["runtime"]
    assert rt["compiles_measured"] == 0, rt.get("compile_detail")
    assert rec["quality"] != "recompiled", rec["quality_reasons"]
    # the one planned warm-up step compiled the model (it really compiles under DDP), the next one nothing
    assert rt["warmup_compiles"]["compiles"] >= 1
    assert rt["warmup_stop"].startswith(f"{STOP_SETTLED}:"), rt["warmup_stop"]
    assert len(rec["warmup_times_s"]) == 2 + LEAD_IN_STEPS
    assert "while compiles rose" in rt["warmup_extended"]


@pytest.mark.slow
def test_a_workload_that_recompiles_every_step_is_recompiled_at_the_bound(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli(
        "run",
        "--workloads-from",
        str(PLUGIN),
        "-w",
        "recompiler",
        "--steps",
        "5",
        "--no-telemetry",
        "-o",
        str(run),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = records(run)["recompiler"]
    assert rec["status"] == "ok", rec.get("reason")
    rt = rec["runtime"]
    assert rt["compiles_measured"] >= 1
    assert rt["warmup_stop"].startswith(f"{STOP_BOUND}:"), rt["warmup_stop"]
    most = rec["cell"]["warmup_steps"] + COMPILE_WARMUP_MAX_STEPS + LEAD_IN_STEPS
    assert len(rec["warmup_times_s"]) <= most
    assert rec["quality"] == "recompiled"
    assert "warm-up stopped at its bound" in rec["quality_reasons"][0]
