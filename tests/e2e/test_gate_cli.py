"""`hpubench gate`, `baseline` and `export` end to end: real runs, hand-edited copies, exit codes 0/1/2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # one real run (~10 s) shared by the module

KEY = "mlp/tiny/cpu/1x1/32-true/eager/nographs/bsdefault"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hpubench", *args],
        cwd=cwd,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of one tiny cell repeated twice plus a skipped cell, as `run --repeat 2` writes it."""
    out = tmp_path_factory.mktemp("gate") / "base"
    proc = run_cli(
        "run", "-w", "mlp", "--mode", "eager,lazy", "--steps", "12", "--warmup-steps", "2", "--repeat", "2",
        "-o", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    # The gate leaves out runs whose timing verdict makes them uncomparable (interfered, recompiled,
    # partial; tests/unit cover that). These tests are about the gate's mechanics, so a busy host's verdict
    # on this run must not turn them into "insufficient evidence": its runs are marked quiet.
    recs = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    for r in recs:
        if r["status"] == "ok":
            r.update(quality="ok", quality_reasons=[])
    (out / "cells.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return out


def _copy(src: Path, dst: Path, edit=None) -> Path:
    shutil.copytree(src, dst)
    if edit is not None:
        lines = (dst / "cells.jsonl").read_text().splitlines()
        recs = [json.loads(line) for line in lines]
        for r in recs:
            edit(r)
        (dst / "cells.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return dst


def _steady(step_s: float):
    """Replace real step times with quiet ones (1% jitter), so the verdict does not depend on this machine."""

    def edit(r: dict) -> None:
        if r["status"] == "ok":
            n = len(r["step_times_s"])
            r["step_times_s"] = [step_s * (1 + 0.01 * ((7 * i + 3 * r["repeat"]) % 5 - 2)) for i in range(n)]

    return edit


def test_run_repeat_records_repetitions(real_run: Path) -> None:
    recs = [json.loads(line) for line in (real_run / "cells.jsonl").read_text().splitlines()]
    ok = [r for r in recs if r["status"] == "ok"]
    assert sorted(r["repeat"] for r in ok) == [0, 1]
    assert {r["key"] for r in ok} == {KEY}
    skipped = [r for r in recs if r["status"] == "skipped"]
    assert len(skipped) == 1 and skipped[0]["repeat"] == 0  # skipped cells are recorded once
    assert json.loads((real_run / "meta.json").read_text())["repeat"] == 2
    assert (real_run / "logs").is_dir() and len(list((real_run / "logs").glob("*.r1.log"))) == 1


def test_a_run_against_itself_passes_and_writes_markdown_and_junit(real_run: Path, tmp_path: Path) -> None:
    md, xml = tmp_path / "summary.md", tmp_path / "out" / "gate.xml"
    proc = run_cli(
        "gate",
        "--baseline",
        str(real_run),
        "--current",
        str(real_run),
        "--markdown",
        str(md),
        "--junit",
        str(xml),
    )
    assert proc.returncode == 0, proc.stderr
    assert "PASSED" in proc.stderr and "no change" in proc.stdout
    assert md.read_text().startswith("## :white_check_mark: hpubench gate passed")
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite.get("failures") == "0" and len(suite.findall("testcase")) == 2  # the cell + the skipped one


def test_a_slower_current_fails_with_exit_1(real_run: Path, tmp_path: Path) -> None:
    base = _copy(real_run, tmp_path / "base", _steady(0.010))
    cur = _copy(real_run, tmp_path / "cur", _steady(0.012))  # 1/1.2: throughput -16.7%
    xml = tmp_path / "gate.xml"
    proc = run_cli("gate", "-b", str(base), "-c", str(cur), "--junit", str(xml))
    assert proc.returncode == 1, proc.stderr
    assert "FAILED" in proc.stderr and "regression" in proc.stdout and "-16.7%" in proc.stdout
    failures = list(ET.parse(xml).getroot().iter("failure"))
    assert len(failures) == 1 and failures[0].get("type") == "regression"
    # The same slowdown passes when the tolerated throughput drop is larger than it.
    ok = run_cli("gate", "-b", str(base), "-c", str(cur), "--max-regression", "throughput=20%")
    assert ok.returncode == 0, ok.stderr
    # And an improvement is reported, never failed.
    better = run_cli("gate", "-b", str(cur), "-c", str(base))
    assert better.returncode == 0 and "improvement" in better.stdout
    # 2 runs against 2 cannot reach 1%: forced, the permutation test cannot fail, and the gate says so.
    blind = run_cli("gate", "-b", str(base), "-c", str(cur), "--test", "permutation")
    assert blind.returncode == 0, blind.stderr
    assert "too few runs to ever reach significance" in blind.stdout + blind.stderr


def test_a_cell_that_failed_in_current_fails_the_gate(real_run: Path, tmp_path: Path) -> None:
    def fail_first(r: dict) -> None:
        if r["status"] == "ok" and r["repeat"] == 0:
            r.update(
                status="failed", reason="RuntimeError: CUDA error: an illegal memory access", metrics=None
            )

    cur = _copy(real_run, tmp_path / "cur", fail_first)
    proc = run_cli("gate", "-b", str(real_run), "-c", str(cur))
    assert proc.returncode == 1
    assert "failed in 1 of 2 repetitions" in proc.stdout


def test_missing_cells_fail_or_pass_by_option(real_run: Path, tmp_path: Path) -> None:
    base = _copy(real_run, tmp_path / "base")
    with open(base / "cells.jsonl", "a") as f:  # a baseline cell the current run does not have
        for line in (real_run / "cells.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r["status"] == "ok":
                r["cell"]["batch_size"] = 32
                r["key"] = r["key"].replace("bsdefault", "bs32")
                f.write(json.dumps(r) + "\n")
    assert run_cli("gate", "-b", str(base), "-c", str(real_run)).returncode == 1
    proc = run_cli("gate", "-b", str(base), "-c", str(real_run), "--missing", "ignore")
    assert proc.returncode == 0, proc.stderr
    assert "missing" in proc.stdout


def test_baseline_save_then_gate_by_name(real_run: Path, tmp_path: Path) -> None:
    save = run_cli("baseline", "save", str(real_run), "--name", "main", cwd=tmp_path)
    assert save.returncode == 0, save.stderr
    assert "saved baseline 'main'" in save.stdout
    saved = tmp_path / ".hpubench" / "baselines"
    assert (saved / "main" / "cells.jsonl").is_file() and (saved / "main" / "meta.json").is_file()
    index = json.loads((saved / "index.json").read_text())
    assert index["baselines"]["main"]["repeats"] == 2 and index["baselines"]["main"]["ok"] == 2
    assert json.loads((saved / "main" / "meta.json").read_text())["baseline"]["name"] == "main"
    again = run_cli("baseline", "save", str(real_run), "--name", "main", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr
    assert (
        run_cli("baseline", "save", str(real_run), "--name", "main", "--force", cwd=tmp_path).returncode == 0
    )
    listing = run_cli("baseline", "list", cwd=tmp_path)
    assert listing.returncode == 0 and "main" in listing.stdout
    gate = run_cli("gate", "--baseline", "main", "--current", str(real_run), cwd=tmp_path)
    assert gate.returncode == 0, gate.stderr
    assert not list(saved.glob(".main.*"))  # no temporary directories left behind


def test_export_pytest_benchmark(real_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "pb.json"
    proc = run_cli("export", "--format", "pytest-benchmark", str(real_run), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "1 cell(s) without a measurement left out" in proc.stderr
    doc = json.loads(out.read_text())
    (bench,) = doc["benchmarks"]
    assert bench["param"] == KEY and bench["stats"]["rounds"] == 24  # 2 repetitions x 12 steps
    assert bench["extra_info"]["repeats"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-b", "{run}", "-c", "{tmp}/nope"], "no results at"),
        (["-b", "{run}", "-c", "{run}", "--max-regression", "lots"], "--max-regression takes a percentage"),
        (["-b", "{run}", "-c", "{run}", "--max-regression", "speed=5%"], "unknown metric 'speed'"),
        (["-b", "{run}", "-c", "{run}", "--correction", "bonferroni"], "correction must be one of"),
        (["-b", "{run}", "-c", "{run}", "--alpha", "2"], "alpha must be at least 1e-06 and below 1"),
        (["-b", "{run}", "-c", "{run}", "--test", "ks"], "test must be one of auto, permutation, welch"),
        (["-b", "{run}", "-c", "{run}", "--statistic", "p90"], "statistic must be one of"),
        (["-b", "{run}", "-c", "{run}", "--memory-floor", "1 parsec"], "--memory-floor takes a size"),
        (["-b", "{run}", "-c", "{run}", "--current-accelerator", "hpu"], "keeps no records"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    real_run: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    proc = run_cli("gate", *(a.format(run=real_run, tmp=tmp_path) for a in args))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_unreadable_or_incompatible_results_exit_2(real_run: Path, tmp_path: Path) -> None:
    newer = _copy(real_run, tmp_path / "newer", lambda r: r.update(schema=99))
    proc = run_cli("gate", "-b", str(real_run), "-c", str(newer))
    assert proc.returncode == 2 and "schema version 99" in proc.stderr
    corrupt = _copy(real_run, tmp_path / "corrupt")
    with open(corrupt / "cells.jsonl", "a") as f:
        f.write("{not json\n")
    proc = run_cli("gate", "-b", str(real_run), "-c", str(corrupt))
    assert proc.returncode == 2 and "corrupt result record" in proc.stderr

    def other_workload(r: dict) -> None:
        r["cell"]["workload"] = "gpt"
        r["key"] = r["key"].replace("mlp/", "gpt/")

    other = _copy(real_run, tmp_path / "other", other_workload)
    proc = run_cli("gate", "-b", str(real_run), "-c", str(other))
    assert proc.returncode == 2 and "nothing matched" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def _only_repeat(keep: int):
    """Keep one repetition (one run a side, what a CI job usually has); other records are dropped."""

    def edit(recs: list[dict]) -> list[dict]:
        return [r for r in recs if r["repeat"] == keep or r["status"] != "ok"]

    return edit


def _rewrite(dst: Path, edit) -> Path:
    recs = [json.loads(line) for line in (dst / "cells.jsonl").read_text().splitlines()]
    (dst / "cells.jsonl").write_text("".join(json.dumps(r) + "\n" for r in edit(recs)))
    return dst


def test_one_run_a_side_is_insufficient_evidence_exit_0_with_what_it_could_detect(
    real_run: Path, tmp_path: Path
) -> None:
    base = _rewrite(_copy(real_run, tmp_path / "base", _steady(0.010)), _only_repeat(0))
    cur = _rewrite(_copy(real_run, tmp_path / "cur", _steady(0.013)), _only_repeat(0))  # -23% throughput
    md = tmp_path / "gate.md"
    proc = run_cli("gate", "-b", str(base), "-c", str(cur), "--markdown", str(md))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "insufficient evidence" in out and "run with --repeat 3 or more" in out
    assert "PASSED" in proc.stderr and "1 insufficient evidence" in proc.stderr
    assert "detects" in proc.stdout and ">= " in proc.stdout  # the smallest drop the steps alone could show
    assert "estimator: fastest step per run" in proc.stdout.replace("\n", " ")
    assert ">= " in md.read_text() and "insufficient evidence" in md.read_text()


def test_baseline_save_stores_run_to_run_spread_that_makes_single_runs_testable(
    real_run: Path, tmp_path: Path
) -> None:
    def three_repeats(recs: list[dict]) -> list[dict]:
        ok = [r for r in recs if r["status"] == "ok"]
        extra = json.loads(json.dumps(ok[0]))
        extra["repeat"] = 2
        extra["step_times_s"] = [t * 1.01 for t in extra["step_times_s"]]  # runs drift by about 1%
        ok[1]["step_times_s"] = [t * 0.99 for t in ok[1]["step_times_s"]]
        return [*recs, extra]

    repeated = _rewrite(_copy(real_run, tmp_path / "repeated", _steady(0.010)), three_repeats)
    save = run_cli("baseline", "save", str(repeated), "--name", "main", cwd=tmp_path)
    assert save.returncode == 0, save.stderr
    assert "run-to-run spread stored for 1 cell(s)" in save.stdout
    saved = tmp_path / ".hpubench" / "baselines"
    spread = json.loads((saved / "main" / "meta.json").read_text())["run_to_run"][KEY.replace("cpu/", "")]
    assert spread["runs"] == 3 and 0.005 < spread["min"] < 0.05
    # Re-saved from one run (a CI job on every merge), the baseline keeps the spread measured before.
    single = _rewrite(_copy(real_run, tmp_path / "single", _steady(0.010)), _only_repeat(0))
    assert run_cli("baseline", "save", str(single), "--name", "main", "--force", cwd=tmp_path).returncode == 0
    assert "run_to_run" in json.loads((saved / "main" / "meta.json").read_text())
    # One run against one run is now tested with that spread: a 30% slowdown fails, an A/A passes.
    cur = _rewrite(_copy(real_run, tmp_path / "cur", _steady(0.013)), _only_repeat(0))
    slow = run_cli("gate", "-b", "main", "-c", str(cur), cwd=tmp_path)
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "regression" in slow.stdout and "1 regression" in slow.stderr
    assert "spread was modelled" in slow.stderr  # the note says the drift is assumed, not measured
    same = run_cli("gate", "-b", "main", "-c", str(single), cwd=tmp_path)
    assert same.returncode == 0 and "no change" in same.stdout
