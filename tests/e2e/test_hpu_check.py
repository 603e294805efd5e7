"""make hpu-check (benchmarks/hpu_check.py) on the HPU test double: every HPU path once, one table, one JSON.

The double's figures describe this host's CPU, so the table and the JSON must say "(test double)" where
nobody can miss it. Small on purpose (mlp tiny, 1 warm-up, 2 steps, a box of 2 modules): a CI check of
the script and the paths, not a measurement.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "hpu_check.py"
FAKES = ROOT / "tests" / "fakes"
SMALL = ("--steps", "2", "--warmup-steps", "1")
# A developer's shell must not change the outcome: the double's knobs, the bridge's and hpubench's policies.
CLEARED = ("PT_HPU", "HABANA_", "HLS_", "HPUBENCH_FAKE", "HPUBENCH_CPU_THREADS", "HPUBENCH_MALLOC", "OMP_")
FIRST_GEN = "first-generation Gaudi"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary directory of this module's own: the double keeps its module locks (and its compiled
    device runtime) under the temporary directory, so tests of the same checkout running at the same time
    elsewhere would otherwise hold this test's cards ("Device acquire failed ... held by process N")."""
    return tmp_path_factory.mktemp("hpu-box")


def _check(
    out: Path, *args: str, box: Path | None = None, double: bool = True, **env: str
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(CLEARED)}
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([str(FAKES)] if double else [])])
    if box is not None:
        full["TMPDIR"] = str(box)
    full.update(env)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(out), *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _report(out: Path) -> dict[str, Any]:
    return json.loads((out / "hpu-check.json").read_text())


def _paths(cells: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each HPU path the check promises, and the cells that exercise it."""
    c = [(x, x["cell"]) for x in cells]
    return {
        "lazy": [x for x, k in c if k["mode"] == "lazy" and k["devices"] == 1 and not k["graphs"]],
        "eager": [x for x, k in c if k["mode"] == "eager" and k["devices"] == 1],
        "compile": [x for x, k in c if k["mode"] == "compile" and k["devices"] == 1],
        "hpu graphs": [x for x, k in c if k["graphs"]],
        "all cards lazy": [x for x, k in c if k["devices"] == 2 and k["mode"] == "lazy"],
        "all cards eager": [x for x, k in c if k["devices"] == 2 and k["mode"] == "eager"],
        "all cards compile": [x for x, k in c if k["devices"] == 2 and k["mode"] == "compile"],
        "fp8": [x for x, k in c if k["precision"] == "fp8"],
    }


def _table(stdout: str) -> list[str]:
    """The table's rows: the lines between its header and the banner repeated below it."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("dev precision"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("!!! TEST DOUBLE"))
    return lines[start + 1 : end]


def _assert_labelled_as_the_double(proc: subprocess.CompletedProcess[str], report: dict[str, Any]) -> None:
    banner = "!!! TEST DOUBLE: habana_frameworks 1.19.0+testdouble (test double)"
    lines = proc.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("dev precision"))
    assert lines[head - 1].startswith(banner), proc.stdout
    assert "none was measured on a Gaudi" in lines[head - 1]
    assert "TEST DOUBLE, not a Gaudi" in proc.stdout
    assert "HPU figures" not in proc.stdout
    assert report["test_double"] is True and "(test double)" in report["label"]
    for cell in report["cells"]:
        if cell["status"] == "ok":  # a cell stopped before its worker answered has no versions
            assert "(test double)" in cell["software"]["habana_frameworks"], cell["key"]


def test_every_hpu_path_runs_once_on_the_double(tmp_path: Path, box: Path) -> None:
    out = tmp_path / "check"
    proc = _check(out, *SMALL, box=box, HPUBENCH_FAKE_HPU_COUNT="2")
    report = _report(out)
    failed = {c["key"]: c["reason"] for c in report["cells"] if c["status"] == "failed"}
    assert proc.returncode == 0, (failed, proc.stdout[-4000:], proc.stderr[-2000:])
    _assert_labelled_as_the_double(proc, report)
    assert report["exit_code"] == 0 and report["counts"]["failed"] == 0
    for path, cells in _paths(report["cells"]).items():
        assert cells, f"no cell for the {path} path"
        assert all(c["status"] == "ok" for c in cells), (path, [c["reason"] for c in cells])
    rows = _table(proc.stdout)
    assert len(rows) == len(report["cells"]) == 14
    assert all(" ok " in row for row in rows), rows
    for cell in report["cells"]:
        k, rt = cell["cell"], cell["runtime"]
        assert cell["samples_per_s"] > 0 and cell["quality"], cell["key"]
        assert isinstance(cell["compiles_measured"], int), cell["key"]
        assert isinstance(cell["graph_compilations_measured"], int), cell["key"]
        assert cell["memory"]["source"] == "hpu.memory_stats" and cell["memory"]["peak_allocated_bytes"] > 0
        assert cell["device_name"] == "GAUDI2"
        assert cell["env_flags"]["PT_HPU_LAZY_MODE"] == ("1" if k["mode"] == "lazy" else "0"), cell["key"]
        assert cell["module_ids"] == {
            "rank0_HLS_MODULE_ID": "0",
            "HABANA_VISIBLE_MODULES": "0,1" if k["devices"] == 2 else "0",
        }
        assert rt["mode_in_force"] == k["mode"]
        if k["devices"] == 2:
            assert rt["distributed"]["backend"] == "hccl" and rt["strategy"] == "ddp"
        assert rt.get("graphs") == ("HPU graphs" if k["graphs"] else None), cell["key"]
    doctor = report["doctor"]
    assert doctor["findings"] and any(d["accelerator"] == "hpu" for d in doctor["facts"]["devices"])
    assert report["python"] == f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    assert report["torch"] and len(report["hpubench_git"]["commit"]) == 40
    assert report["run"]["exit_code"] == 0 and report["run_meta"]["inventory"]["hpu"]["count"] == 2


def test_first_gen_gaudi_skips_with_reasons_and_a_failed_cell_exits_1(tmp_path: Path, box: Path) -> None:
    """First-generation Gaudi: fp16, fp8 and HPU graphs are skipped with the planner's reasons; every other
    cell is forced to fail (a 10 ms timeout), so the failure path is shown too, cheaply."""
    out = tmp_path / "check"
    proc = _check(
        out,
        *SMALL,
        "--timeout",
        "0.01",
        box=box,
        HPUBENCH_FAKE_HPU_COUNT="2",
        HPUBENCH_FAKE_HPU_NAME="GAUDI",
    )
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-2000:]
    report = _report(out)
    _assert_labelled_as_the_double(proc, report)
    assert report["exit_code"] == 1 and "failed" in report["verdict"]
    paths = _paths(report["cells"])
    for path in ("fp8", "hpu graphs"):
        assert paths[path] and all(c["status"] == "skipped" for c in paths[path]), path
        assert all(FIRST_GEN in c["reason"] for c in paths[path]), [c["reason"] for c in paths[path]]
    fp16 = [c for c in report["cells"] if c["cell"]["precision"] == "16-mixed"]
    assert fp16 and all(FIRST_GEN in c["reason"] for c in fp16)
    failed = [c for c in report["cells"] if c["status"] == "failed"]
    assert len(failed) == 10 and all("timed out after 0.01 s" in c["reason"] for c in failed)
    assert report["counts"] == {"ok": 0, "failed": 10, "skipped": 4}
    rows = _table(proc.stdout)
    assert sum(FIRST_GEN in row and "skipped" in row for row in rows) == 4
    assert sum("failed" in row and "timed out" in row for row in rows) == 10
    assert "exit 1: 10 cell(s) failed" in proc.stdout


@pytest.mark.parametrize(
    ("double", "why"), [(True, "no Gaudi module"), (False, "habana_frameworks is not installed")]
)
def test_without_a_module_nothing_is_verified_and_the_json_says_why(
    tmp_path: Path, box: Path, double: bool, why: str
) -> None:
    out = tmp_path / "check"
    proc = _check(out, box=box, double=double, HPUBENCH_FAKE_HPU_COUNT="0")
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"no HPU on this machine ({why}): nothing was verified" in proc.stdout
    report = _report(out)
    assert report["exit_code"] == 2 and why in report["verdict"]
    hpu = next(d for d in report["doctor"]["facts"]["devices"] if d["accelerator"] == "hpu")
    assert hpu["present"] is False and hpu["absent_reason"] == why
    assert not (out / "cells.jsonl").exists()


def test_an_earlier_check_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "check"
    out.mkdir()
    (out / "hpu-check.json").write_text("kept\n")
    proc = _check(out)
    assert proc.returncode == 2 and "exists; give a new --out" in proc.stdout
    assert (out / "hpu-check.json").read_text() == "kept\n"
