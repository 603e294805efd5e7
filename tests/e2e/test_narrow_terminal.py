"""`hpubench results` at 80 columns, as in a terminal (issue 15): every line fits, rows stay apart."""

from __future__ import annotations

from pathlib import Path

from reportdata import hpubench_cli


def test_results_fit_80_columns_and_wide_gives_every_column(hw_runs: dict[str, Path]) -> None:
    run = str(hw_runs["gaudi2"])
    proc = hpubench_cli("results", run, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, proc.stdout
    rows = [line for line in lines if line.lstrip().startswith(("bert", "resnet", "gpt"))]
    assert len(rows) == len(set(rows)) >= 6  # bert, resnet x5 (1-16 devices), the failed gpt
    assert any("failed" in r for r in rows)
    wide = hpubench_cli("results", run, "--wide", env={"COLUMNS": "80"})
    assert wide.returncode == 0 and "bootstrap" in wide.stdout  # the full table's caption
    piped = hpubench_cli("results", run)  # no COLUMNS: piped output is wide, keys whole
    assert "resnet/tiny/hpu/8x2/bf16-mixed" in piped.stdout


def test_compare_fits_80_columns(hw_runs: dict[str, Path], tmp_path: Path) -> None:
    args = ("compare", str(hw_runs["gaudi"]), str(hw_runs["gaudi2"]))
    proc = hpubench_cli(*args, "-o", str(tmp_path / "c.html"), env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80, proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.lstrip().startswith(("bert", "resnet"))]
    assert len(rows) == 2 and all("x ±" in r for r in rows)  # ratio and its interval
    assert "geometric mean of the ratios: all workloads 2.50x" in proc.stdout
    wide = hpubench_cli(*args, "-o", str(tmp_path / "w.html"), "--wide", env={"COLUMNS": "80"})
    assert "memory > 1" in " ".join(wide.stdout.split())  # the full table's caption
