"""pytest-benchmark interoperability, checked with pytest-benchmark itself: its `compare` command reads our
export, and the hpubench_cell fixture drives its --benchmark-save / --benchmark-compare flow."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from reportdata import fake_result, write_run

from hpubench.present.export import to_pytest_benchmark
from hpubench.store.readback import load_results
from hpubench.store.record import STATUS_FAILED

pytest_plugins = ["pytester"]


def _compare_cmd() -> list[str]:
    exe = shutil.which("pytest-benchmark")
    return [exe] if exe else [sys.executable, "-m", "pytest_benchmark"]


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120, env=dict(os.environ))


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    def results(step_s: float, seed: int):
        return [
            fake_result(
                "mlp", "cpu", "Xeon", precision="32-true", step_s=step_s, seed=seed, memory_source="process"
            ),
            fake_result("gpt", "cpu", "Xeon", precision="32-true", step_s=2 * step_s, seed=seed + 1),
            fake_result("bert", "cpu", "Xeon", status=STATUS_FAILED, reason="RuntimeError: boom"),
        ]

    return (
        write_run(tmp_path / "base", results(0.010, 0)),
        write_run(tmp_path / "cur", results(0.012, 5)),
    )


def test_export_document_has_what_pytest_benchmark_needs(tmp_path: Path) -> None:
    base, _ = _runs(tmp_path)
    doc = to_pytest_benchmark(load_results([str(base)]), {"hostname": "node-1", "git": {"commit": "abc"}})
    assert set(doc) == {"machine_info", "commit_info", "benchmarks", "datetime", "version"}
    assert doc["commit_info"]["id"] == "abc" and doc["machine_info"]["node"] == "node-1"
    assert [b["name"] for b in doc["benchmarks"]] == [
        "mlp[mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault]",
        "gpt[gpt/tiny/cpu/1x1/32-true/eager/nographs/bsdefault]",
    ]  # the failed cell is left out, as pytest-benchmark leaves out benchmarks that errored
    needed = {"min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3", "iqr_outliers"}
    needed |= {"stddev_outliers", "outliers", "ld15iqr", "hd15iqr", "ops", "total", "iterations", "data"}
    for b in doc["benchmarks"]:
        assert needed <= set(b["stats"])
        assert {"group", "name", "fullname", "params", "param", "extra_info", "options"} <= set(b)
        assert b["stats"]["rounds"] == 12 and len(b["stats"]["data"]) == 12
        assert b["stats"]["mean"] == pytest.approx(sum(b["stats"]["data"]) / 12)
    json.dumps(doc)  # plain JSON throughout


def test_pytest_benchmark_compare_reads_two_exports(tmp_path: Path) -> None:
    base, cur = _runs(tmp_path)
    for run, out in ((base, "0001_base.json"), (cur, "0002_cur.json")):
        proc = _run(
            [sys.executable, "-m", "hpubench", "export", "-f", "pytest-benchmark", str(run), "-o", out],
            tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
    csv = tmp_path / "cmp"
    proc = _run([*_compare_cmd(), "compare", "0001_base.json", "0002_cur.json", "--csv", str(csv)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "Failed to load" not in out  # pytest-benchmark skips files it cannot read with only a warning
    for name in ("mlp[mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault]", "gpt[gpt/tiny/cpu/"):
        assert out.count(name) == 2, out  # one row per file
    rows = (tmp_path / "cmp.csv").read_text().splitlines()
    assert len(rows) == 1 + 4  # header + 2 benchmarks x 2 files
    assert sum("mlp[mlp/tiny/cpu" in r for r in rows[1:]) == 2
    assert sum("gpt[gpt/tiny/cpu" in r for r in rows[1:]) == 2


TEST_FILE = """
from hpubench.plan.cell import Cell


def test_mlp_tiny(hpubench_cell):
    result = hpubench_cell("mlp", steps=6, warmup_steps=1)
    assert result.status == "ok" and len(result.step_times_s) == 6


def test_lazy_is_skipped_on_cpu(hpubench_cell):
    hpubench_cell(Cell("mlp", mode="lazy", steps=2, warmup_steps=1))
"""


@pytest.mark.slow  # two pytest sessions, each running a real cell (~10 s)
def test_hpubench_cell_fixture_with_benchmark_save_and_compare(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The inner sessions are a user's own pytest: under pytest-xdist this one's worker variables would be
    # inherited, and pytest-benchmark switches itself off in any session that looks like an xdist worker.
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST_")]:
        monkeypatch.delenv(name)
    pytester.makepyfile(test_cells=TEST_FILE)
    storage = pytester.path / "bench-store"
    common = ["-p", "no:cacheprovider", f"--benchmark-storage=file://{storage}"]
    first = pytester.runpytest_subprocess(*common, "--benchmark-save=first", timeout=300)
    first.assert_outcomes(passed=1, skipped=1)
    (saved,) = storage.rglob("0001_first.json")
    doc = json.loads(saved.read_text())
    (bench,) = doc["benchmarks"]
    assert bench["name"] == "test_mlp_tiny"
    assert bench["stats"]["rounds"] == 6 and bench["stats"]["iterations"] == 1
    assert bench["options"]["timer"] == "hpubench_recorded_step_time"
    assert bench["extra_info"]["hpubench_key"] == "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault"
    assert bench["extra_info"]["samples_per_s"] > 0
    # The rounds are the cell's own step times: their mean is the record's mean step time.
    assert bench["stats"]["mean"] == pytest.approx(64 / bench["extra_info"]["samples_per_s"], rel=1e-9)

    second = pytester.runpytest_subprocess(
        *common, "--benchmark-compare=0001", "--benchmark-compare-fail=mean:1000%", timeout=300
    )
    second.assert_outcomes(passed=1, skipped=1)
    second.stderr.fnmatch_lines(["*Comparing against benchmarks from*0001_first.json*"])
    table = second.stdout.str()
    assert "test_mlp_tiny (0001_first)" in table and "test_mlp_tiny (NOW)" in table
