"""Estimates and budgets from the real command line: columns, bad --budget values, budget and memory skips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parent.parent / "plugins" / "big_models.py"


def records(run: Path) -> dict[str, dict]:
    return {r["cell"]["workload"]: r for r in map(json.loads, (run / "cells.jsonl").read_text().splitlines())}


@pytest.fixture
def cache_env(tmp_path):
    return {"XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_list_cells_shows_time_memory_and_source_per_cell_and_the_total(cli, tmp_path, cache_env):
    proc = cli("list", "cells", "-w", "mlp,gpt", "--size", "tiny", cwd=tmp_path, env=cache_env)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for column in ("est. time", "memory/device", "src"):
        assert column in out
    assert "cpu linear-layer rate calibrated here" in out and "formula (counted on meta)" in out
    assert "2 to run, 0 skipped; estimated total ~" in out
    assert (tmp_path / "cache" / "hpubench" / "model-facts.json").is_file()  # counted once, cached
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("value", ["ten", "-5m", "0s", "5d"])
def test_a_bad_budget_is_one_line_and_exit_2(cli, tmp_path, value):
    proc = cli("run", "-w", "mlp", "--budget", value, cwd=tmp_path)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr and len(err.splitlines()) == 1
    assert err.startswith("error: --budget") and "60m" in err


def test_a_cell_too_big_for_memory_is_skipped_with_its_estimate_not_crashed(cli, tmp_path, cache_env):
    listing = cli(
        "list",
        "cells",
        "-w",
        "hugemem",
        "--workloads-from",
        str(PLUGIN),
        "--skipped",
        cwd=tmp_path,
        env=cache_env,
    )
    assert listing.returncode == 0, listing.stderr
    assert "skip: needs ~" in listing.stdout and "GiB per device" in listing.stdout
    run = tmp_path / "run"
    proc = cli(
        "run", "-w", "hugemem", "--workloads-from", str(PLUGIN), "-o", str(run), cwd=tmp_path, env=cache_env
    )
    assert proc.returncode == 0, proc.stderr
    rec = records(run)["hugemem"]
    assert rec["status"] == "skipped"
    assert rec["reason"].startswith("needs ~") and "GiB available" in rec["reason"]
    assert (run / "estimates.json").is_file()


def test_a_budget_skips_what_cannot_fit_up_front_and_records_what_it_did(cli, tmp_path, cache_env):
    run = tmp_path / "run"
    proc = cli(
        "run",
        "-w",
        "mlp,hugeflops",
        "--size",
        "tiny",
        "--budget",
        "180s",
        "--workloads-from",
        str(PLUGIN),
        "--no-telemetry",
        "-o",
        str(run),
        cwd=tmp_path,
        env=cache_env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "cannot fit: hugeflops/tiny" in proc.stderr and "budget 3.0 min (" in proc.stderr
    recs = records(run)
    big, mlp = recs["hugeflops"], recs["mlp"]
    assert big["status"] == "skipped"
    assert big["reason"].startswith("budget: needs ~") and "minimum of 1 warm-up + 2 steps" in big["reason"]
    assert big["runtime"]["budget"]["given"] is None
    assert mlp["status"] == "ok"
    note = mlp["runtime"]["budget"]
    assert note["budget_s"] == 180 and note["asked"] == [3, 20]
    assert note["given"] == [mlp["cell"]["warmup_steps"], mlp["cell"]["steps"]]
    assert len(mlp["step_times_s"]) == mlp["cell"]["steps"] >= 2


@pytest.mark.parametrize("policy", ["steady", "system"])
def test_the_rates_are_calibrated_under_the_heap_policy_the_cells_get(cli, tmp_path, cache_env, policy):
    run = tmp_path / "run"
    env = {**cache_env, "HPUBENCH_MALLOC": policy}
    proc = cli("run", "-w", "mlp", "--size", "tiny", "--steps", "2", "-o", str(run), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    heap = json.loads((run / "estimates.json").read_text())["calibration"]["cpu"]["heap"]
    assert heap["policy"] == policy and heap["applied"] is (policy == "steady")
    assert heap == records(run)["mlp"]["runtime"]["heap"]
