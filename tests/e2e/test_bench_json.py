"""The benchmarks' ``--json PATH``: checked before anything is measured, never written over an old file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("overhead.py", "trust.py", "telemetry_cost.py", "threads.py", "heap.py", "clock_cost.py")


def _bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True, text=True, cwd=ROOT
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_an_earlier_result_is_kept_and_nothing_runs(script: str, tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    out.write_text("kept")
    proc = _bench(script, "--json", str(out))
    assert proc.returncode == 2
    assert f"--json {out} exists; give a new path" in proc.stdout + proc.stderr
    assert "measuring" not in proc.stdout and "Traceback" not in proc.stderr
    assert out.read_text() == "kept"


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_missing_folder_is_named_before_measuring(script: str, tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "figures.json"
    proc = _bench(script, "--json", str(out))
    assert proc.returncode == 2
    assert f"--json {out} is in a folder that does not exist" in proc.stdout + proc.stderr
    assert not out.parent.exists()
