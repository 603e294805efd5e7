"""Unwritable places (issue 14 item 4): one line each, exit 2, no traceback, nothing created.

Tests run as root here, so permissions stop nothing: the paths are under a regular file (a directory can
never be made there), under /proc (nothing can be created) and under /sys (a read-only filesystem).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reportdata import fake_result, hpubench_cli, write_run

UNWRITABLE = ("{file}/x", "/proc/hpubench-test-x", "/sys/hpubench-test-x")


def one_line(proc) -> str:
    err = proc.stderr
    assert proc.returncode == 2, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err[-3000:]
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("where", UNWRITABLE)
def test_run_into_an_unwritable_out(where: str, tmp_path: Path) -> None:
    regular = tmp_path / "a-file"
    regular.write_text("x")
    out = where.format(file=regular)
    proc = hpubench_cli("run", "-w", "mlp", "--steps", "3", "--warmup-steps", "1", "-o", out)
    line = one_line(proc)
    assert out in line and "--out" in line
    assert regular.read_text() == "x"


@pytest.mark.parametrize("where", UNWRITABLE)
def test_baseline_save_into_an_unwritable_dir(where: str, tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [fake_result("mlp", "cpu", "cpu", precision="32-true")])
    regular = tmp_path / "a-file"
    regular.write_text("x")
    directory = where.format(file=regular)
    proc = hpubench_cli("baseline", "save", str(run), "--name", "main", "--dir", directory)
    line = one_line(proc)
    assert directory in line and "--dir" in line


@pytest.mark.parametrize("command", ["report", "export"])
@pytest.mark.parametrize("where", UNWRITABLE)
def test_an_output_in_an_unwritable_place(command: str, where: str, tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [fake_result("mlp", "cpu", "cpu", precision="32-true")])
    regular = tmp_path / "a-file"
    regular.write_text("x")
    out = where.format(file=regular) + (".html" if command == "report" else ".json")
    one_line(hpubench_cli(command, str(run), "-o", out))
