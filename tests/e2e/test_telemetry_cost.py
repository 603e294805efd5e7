"""benchmarks/telemetry_cost.py with nothing to measure: it says why, exits 2 and measures nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "telemetry_cost.py"


def _cost(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the benchmark runs for real")
def test_without_a_gpu_nothing_is_measured_and_it_says_so() -> None:
    proc = _cost("--device", "cuda")
    assert proc.returncode == 2
    assert proc.stdout.strip() == "no cuda device on this machine: nothing measured"


@pytest.mark.skipif(Path("/sys/class/powercap").exists(), reason="RAPL may be readable here")
def test_a_device_without_telemetry_has_nothing_to_price() -> None:
    proc = _cost("--device", "cpu")
    assert proc.returncode == 2
    assert proc.stdout.startswith("no telemetry on this cpu device (no RAPL powercap interface")
    assert proc.stdout.rstrip().endswith("nothing to measure")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--workloads", "nope"), "unknown workload(s) nope; valid: "),
        (("--device", "tpu"), "unknown accelerator 'tpu'; known: "),
        (("--rounds", "1"), "--rounds must be >= 2"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_2(args: tuple[str, ...], says: str) -> None:
    proc = _cost(*args)
    assert proc.returncode == 2 and says in proc.stdout and "Traceback" not in proc.stderr
    assert len(proc.stdout.strip().splitlines()) == 1
