"""The llama workload through the real CLI: tiny runs; the 8B size is estimated and skipped up front on a
machine whose memory it cannot fit, with the estimate and the ways out in its reason, never run into an
out-of-memory kill."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psutil
import pytest

from tests.e2e.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
REASON = re.compile(r"needs ~(?P<needed>[\d.]+) GiB per device, (?P<available>[\d.]+) GiB available")


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines() if line.strip()]


def test_llama_large_is_skipped_with_its_memory_estimate_and_tiny_runs(tmp_path: Path) -> None:
    # 8.03B parameters with AdamW at fp32: ~150 GiB before activations, beyond any machine this runs on.
    assert psutil.virtual_memory().total < 150 * 1024**3
    out = tmp_path / "run"
    proc = run_cli(
        "run", "-w", "llama", "--size", "tiny,large", "-a", "cpu", "--steps", "3", "--out", str(out), cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    by_size = {r["cell"]["size"]: r for r in _records(out)}
    assert by_size["tiny"]["status"] == "ok"
    large = by_size["large"]
    assert large["status"] == "skipped"
    m = REASON.search(large["reason"])
    assert m is not None, large["reason"]
    assert float(m["needed"]) > 150 > float(m["available"])
    assert "FSDP" in large["reason"] and "more devices" in large["reason"]


def test_a_seq_len_option_reaches_the_model_the_figures_and_the_estimate(tmp_path: Path) -> None:
    """``--option seq_len=32`` must change what runs, not only the cell key: the tokens a step holds, the
    FLOPs counted for MFU, and the model the estimate probe counts."""
    out = tmp_path / "run"
    proc = run_cli(
        "run", "-w", "llama", "--size", "tiny", "-a", "cpu", "--steps", "3", "--option", "seq_len=32",
        "--out", str(out), cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (record,) = _records(out)
    assert record["status"] == "ok" and record["key"].endswith("/seq_len=32")
    metrics = record["metrics"]
    assert metrics["tokens_per_step"] == 8 * 32
    # Every matmul but the attention scores scales with the tokens: half the tokens, a bit under half.
    default_tiny_flops = 5_838_471_168  # seq 64, batch 8 (tests/unit/test_llama.py checks it analytically)
    assert 0.4 * default_tiny_flops < metrics["flops_per_step"] < 0.5 * default_tiny_flops
    estimates = json.loads((out / "estimates.json").read_text())
    assert [f["flops"] for f in estimates["facts"].values()] == [metrics["flops_per_step"]]


@pytest.mark.parametrize("isolation", ["fork", "spawn"])
def test_an_option_value_the_workload_cannot_use_is_refused_before_any_cell(
    tmp_path: Path, isolation: str
) -> None:
    """The plan's model probe reads ``seq_len`` before any cell runs: a value the model cannot take is one
    line and exit 2, with no run directory left, under either isolation (the forked probe and the probe
    interpreter both)."""
    out = tmp_path / "run"
    proc = run_cli(
        "run", "-w", "llama", "--size", "tiny", "-a", "cpu", "--steps", "3", "--option", "seq_len=-8",
        "--isolation", isolation, "--out", str(out), cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "option seq_len takes a positive integer, got '-8'" in lines[0], proc.stderr
    assert not out.exists()
