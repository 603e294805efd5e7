"""The CLI end to end: real runs in real subprocesses, results read back, a killed run resumed."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import psutil
import pytest

from hpubench.run.executors.base import SCRATCH_PREFIX

QUICK = ["--steps", "3", "--warmup-steps", "1"]


def ours(tmpdir):
    """What hpubench made in a temp directory (torch keeps its compile cache there too)."""
    return [p for p in tmpdir.iterdir() if p.name.startswith("hpubench-")]


def records(run_dir):
    return [json.loads(line) for line in (run_dir / "cells.jsonl").read_text().splitlines()]


def test_run_then_results_as_csv(cli, tmp_path):
    run = tmp_path / "run"
    proc = cli(
        "run", "-w", "mlp,gpt", "-p", "32-true,bf16-mixed", "--mode", "eager,lazy", *QUICK, "-o", str(run)
    )
    assert proc.returncode == 0, proc.stderr
    recs = records(run)
    ok = [r for r in recs if r["status"] == "ok"]
    skipped = [r for r in recs if r["status"] == "skipped"]
    assert len(ok) == 4 and len(skipped) == 4
    assert all("lazy mode exists only on HPU" in r["reason"] for r in skipped)
    assert all(r["metrics"]["samples_per_s"] > 0 and len(r["step_times_s"]) == 3 for r in ok)
    meta = json.loads((run / "meta.json").read_text())
    assert meta["inventory"]["cpu"]["count"] >= 1
    assert "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault" in proc.stdout  # summary table

    csv = cli("results", str(run), "--format", "csv")
    assert csv.returncode == 0, csv.stderr
    df = pd.read_csv(io.StringIO(csv.stdout))
    assert len(df) == 8
    by_key = {r["key"]: r for r in ok}
    for _, row in df[df.status == "ok"].iterrows():
        assert row.samples_per_s == pytest.approx(by_key[row.key]["metrics"]["samples_per_s"])


def test_list_cells_and_env_run_nothing(cli, tmp_path):
    proc = cli("list", "cells", "--matrix", "smoke", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "graph capture is not available on cpu" in proc.stdout
    assert "bert/tiny/cpu/1x1/32-true/eager/nographs/bsdefault" in proc.stdout
    assert not (tmp_path / "results").exists()
    env = cli("env")
    assert env.returncode == 0 and "cpu" in env.stdout and "mlp" in env.stdout


def test_a_failing_cell_is_recorded_and_the_rest_still_run(cli, tmp_path):
    (tmp_path / "bad.py").write_text(
        "from workloads import register\n"
        "from workloads.mlp import MLP\n"
        "@register\n"
        "class Exploding(MLP):\n"
        "    name = 'exploding'\n"
        "    def build_model(self, size):\n"
        "        raise RuntimeError('kaboom in build_model')\n"
    )
    run = tmp_path / "run"
    proc = cli(
        "run", "-w", "exploding,mlp", *QUICK, "-o", str(run), "--workloads-from", str(tmp_path / "bad.py")
    )
    assert proc.returncode == 1  # a run with failed cells is not a clean run
    recs = {r["cell"]["workload"]: r for r in records(run)}
    assert recs["mlp"]["status"] == "ok"
    assert recs["exploding"]["status"] == "failed"
    assert "kaboom in build_model" in recs["exploding"]["reason"]
    assert "Traceback" in recs["exploding"]["traceback_tail"]


@pytest.mark.slow
def test_a_killed_run_resumes_only_the_missing_cells(tmp_path):
    run = tmp_path / "run"
    args = [
        sys.executable,
        "-m",
        "hpubench",
        "run",
        "-w",
        "mlp,gpt,bert,resnet",
        "-p",
        "32-true,bf16-mixed",
        "--steps",
        "20",
        "--warmup-steps",
        "2",
        "-o",
        str(run),
    ]
    scratch = tmp_path / "tmp"  # the run's temp directory, to see what its kill leaves there
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env
    )
    cells = run / "cells.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (cells.exists() and cells.read_text().count("\n") >= 2):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole tree: CLI, pre-warmed server, running cell
    proc.wait()
    done_before = records(run)
    assert 2 <= len(done_before) < 8, "the kill should land mid-run"
    assert cells.read_text().endswith("\n")  # no torn record
    assert [p.name[: len(SCRATCH_PREFIX)] for p in ours(scratch)] == [SCRATCH_PREFIX]

    resumed = subprocess.run([*args, "--resume"], capture_output=True, text=True, timeout=300, env=env)
    assert resumed.returncode == 0, resumed.stderr
    after = records(run)
    keys = [r["key"] for r in after]
    assert len(keys) == len(set(keys)) == 8
    assert after[: len(done_before)] == done_before  # kept, not re-run
    assert all(r["status"] == "ok" for r in after)
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if str(run) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers
    assert ours(scratch) == []  # the killed run's scratch folder went with the resume
