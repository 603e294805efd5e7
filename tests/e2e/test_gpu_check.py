"""make gpu-check (benchmarks/gpu_check.py) off a GPU machine: it says nothing was verified and exits 2."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from hpubench.measure.clocks import EventClock, HostClock

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(), reason="a GPU is here: make gpu-check runs for real"
)


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


def test_without_a_gpu_nothing_is_verified_and_it_says_so(tmp_path: Path) -> None:
    proc = _check("--out", str(tmp_path / "check"))
    assert proc.returncode == 2
    assert "no CUDA device on this machine: nothing was verified" in proc.stdout
    assert not (tmp_path / "check").exists()


def test_an_earlier_check_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "check"
    out.mkdir()
    (out / "cells.jsonl").write_text("kept\n")
    proc = _check("--out", str(out))
    assert proc.returncode == 2 and "exists; give a new --out" in proc.stdout
    assert (out / "cells.jsonl").read_text() == "kept\n"


def test_the_check_matrix_covers_every_cuda_path() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hpubench",
            "list",
            "cells",
            "--matrix",
            str(ROOT / "benchmarks" / "gpu-check.toml"),
            "--skipped",  # no GPU here: every cell is skipped, and listed only on request
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout + proc.stderr
    for part in (
        "/cuda/",
        "32-true",
        "bf16-mixed",
        "16-mixed",
        "/eager/",
        "/compile/",
        "/graphs/",
        "/nographs/",
    ):
        assert part in text, part
    assert "/cpu/" not in text


def test_the_table_names_the_clock_each_record_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock column reads the record's ``runtime.timing``: every clock's own method maps to its word."""
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as a script, its own folder is on the path
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    events = EventClock(lambda: None, lambda: None, pin=False)  # no event is made before a step begins
    stamps = EventClock(lambda: None, lambda: None, pin=False)
    stamps.warmed([1.0], [1.0])
    assert gpu_check.clock_of(events.method) == "events"
    assert gpu_check.clock_of(stamps.method) == "stamps"
    assert gpu_check.clock_of(HostClock(lambda: None).method) == "sync"
    assert gpu_check.clock_of(None) == "-"
