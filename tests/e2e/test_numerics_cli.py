"""The numerics verdict end to end: a finite but wrong bf16 loss is ``drift`` through the real CLI, the
same workload at 32-true is ``ok``, and the 32-true eager reference is computed once per run and reused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpubench.plan.autosteps import LEAD_IN_STEPS

PLUGIN = Path(__file__).resolve().parent.parent / "plugins" / "numerics_wrong.py"


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "cells.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_finite_but_wrong_bf16_loss_is_drift_and_the_reference_is_computed_once(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli(
        "run",
        "-w",
        "bf16wrong",
        "-p",
        "32-true,bf16-mixed,bf16-true",
        "--steps",
        "3",
        "--warmup-steps",
        "1",
        "--workloads-from",
        str(PLUGIN),
        "-o",
        str(run),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = {r["cell"]["precision"]: r for r in records(run)}
    assert set(recs) == {"32-true", "bf16-mixed", "bf16-true"}
    assert all(r["status"] == "ok" and r["numerics"] is not None for r in recs.values())
    assert recs["32-true"]["numerics"] == "ok", recs["32-true"]["numerics_reasons"]
    for precision in ("bf16-mixed", "bf16-true"):
        r = recs[precision]
        assert r["numerics"] == "drift", r["numerics_reasons"]
        assert "relative deviation 0.5" in r["numerics_reasons"][0]
    # What the verdict was computed from is in the record: 1 warm-up step, the lead-in and 3 measured steps,
    # against the same reference.
    facts = [r["runtime"]["numerics"] for r in recs.values()]
    steps = 1 + LEAD_IN_STEPS + 3
    assert all(f["steps_compared"] == steps and len(f["reference_losses"]) == 8 for f in facts)
    assert len({f["reference_key"] for f in facts}) == 1
    # Computed once, by one cell (its cost recorded), then read from the run directory by the others.
    assert sorted(f["reference"] for f in facts) == ["cached", "cached", "computed"]
    assert [f["reference_s"] > 0 for f in facts if f["reference"] == "computed"] == [True]
    cached = list((run / "references").glob("*.json"))
    assert len(cached) == 1
    assert json.loads(cached[0].read_text())["losses"] == facts[0]["reference_losses"]


@pytest.mark.slow
def test_two_ranks_are_judged_against_a_one_device_replay_of_their_step(cli, tmp_path):
    """mlp and resnet (BatchNorm: each rank normalises its own batch, as the replay's slices do) at two
    ranks are ``ok`` against their own two-rank reference; the planted bf16 error is ``drift``."""
    run = tmp_path / "run"
    proc = cli("run", "-w", "mlp,resnet", "--devices", "2", "--steps", "10", "-o", str(run))
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = {r["cell"]["workload"]: r for r in records(run)}
    assert set(recs) == {"mlp", "resnet"}
    for r in recs.values():
        assert r["status"] == "ok" and r["numerics"] == "ok", r["numerics_reasons"]
        facts = r["runtime"]["numerics"]
        assert facts["ranks"] == 2 and facts["steps_compared"] == 8
        assert facts["reference_key"].endswith("/ranks 2") and facts["reference"] == "computed"
    wrong = tmp_path / "wrong"
    args = ("-w", "bf16wrong", "-p", "32-true,bf16-mixed", "--devices", "2", "--steps", "3")
    proc = cli("run", *args, "--warmup-steps", "1", "--workloads-from", str(PLUGIN), "-o", str(wrong))
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = {r["cell"]["precision"]: r for r in records(wrong)}
    assert recs["32-true"]["numerics"] == "ok", recs["32-true"]["numerics_reasons"]
    assert recs["bf16-mixed"]["numerics"] == "drift", recs["bf16-mixed"]["numerics_reasons"]
    assert "relative deviation 0.5" in recs["bf16-mixed"]["numerics_reasons"][0]
