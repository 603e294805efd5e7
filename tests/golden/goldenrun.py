"""The CLI outputs that must stay byte-identical across the plugin-package refactor (issue 32).

``python tests/golden/goldenrun.py write`` runs each command below on fixed hand-made result sets (and one
real one-cell run, whose record is reduced to its shape) and writes the outputs to ``tests/golden/data``;
``tests/golden/test_golden_outputs.py`` runs the same commands with the code under test and compares.
The outputs were first written by the code before the refactor (main at dddc4b5).
Only what varies run to run is masked: dates, durations, the machine's load, paths and commit ids.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from reportdata import DOUBLE, fake_result, table_rows, write_run  # noqa: E402

RULE = re.compile(r"^[┏┡└┗┌╭├][━─┳┯╇┴┷┬]*")  # a table's top, header or bottom rule
DATA = Path(__file__).parent / "data"
# Fixed, so that nothing of this machine reaches the tables.
ENV = {"COLUMNS": "160", "LINES": "50", "HPUBENCH_NO_PROGRESS": "1", "TZ": "UTC"}


def result_sets(root: Path) -> dict[str, Path]:
    """Two fixed result sets: Gaudi (with a failed and an hf cell) and Gaudi2 (the same cells, faster)."""
    g1 = [
        fake_result("mlp", "hpu", "GAUDI", step_s=0.10, software=DOUBLE, seed=1),
        fake_result("gpt", "hpu", "GAUDI", step_s=0.30, tokens_per_sample=64, software=DOUBLE, seed=2),
        fake_result("mlp", "hpu", "GAUDI", precision="32-true", step_s=0.2, software=DOUBLE, seed=3),
        fake_result("gpt", "hpu", "GAUDI", devices=8, step_s=0.35, software=DOUBLE, seed=4),
        fake_result("resnet", "hpu", "GAUDI", status="failed", reason="RuntimeError: boom", software=DOUBLE),
    ]
    g2 = [
        fake_result("mlp", "hpu", "GAUDI2", step_s=0.05, software=DOUBLE, seed=5),
        fake_result("gpt", "hpu", "GAUDI2", step_s=0.12, tokens_per_sample=64, software=DOUBLE, seed=6),
        fake_result("mlp", "hpu", "GAUDI2", precision="32-true", step_s=0.09, software=DOUBLE, seed=7),
        fake_result("gpt", "hpu", "GAUDI2", devices=8, step_s=0.14, software=DOUBLE, seed=8),
        fake_result("resnet", "hpu", "GAUDI2", step_s=0.2, software=DOUBLE, seed=9),
    ]
    return {
        "gaudi": write_run(root / "gaudi", g1, hostname="gaudi-1"),
        "gaudi2": write_run(root / "gaudi2", g2, hostname="gaudi2-1"),
    }


NUMBER = re.compile(r"(?<![\w/.-])\d[\d,.]*")
# A duration's unit follows its size ("58 s", "1.1 min"), so a slower host changes the unit as well.
DURATION = re.compile(r"(?<![\w/.-])\d[\d,.]* (?:s|min|h)\b")
MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?"), "<time>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?( UTC)?"), "<time>"),
    (re.compile(r"\b[0-9a-f]{40}\b|\b[0-9a-f]{12}\b"), "<commit>"),
]


def mask(text: str, root: Path) -> str:
    text = text.replace(str(root), "<tmp>").replace(str(root).replace("/", "\\/"), "<tmp>")
    for pattern, repl in MASKS:
        text = pattern.sub(repl, text)
    return text


def cli(*args: str, cwd: Path, columns: int = 160) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "hpubench", *args],
        cwd=cwd,
        env={**os.environ, **ENV, "COLUMNS": str(columns)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    head = f"$ hpubench {' '.join(args)}\nexit {proc.returncode}"
    return f"{head}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}"


def shape(value: Any) -> Any:
    """A record's structure with its measured values replaced by their type: what the refactor must keep."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    if isinstance(value, bool) or value is None:
        return value
    return type(value).__name__


def record_shapes(run_dir: Path) -> str:
    lines = (run_dir / "cells.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        rec = json.loads(line)
        out.append({"cell": rec["cell"], "status": rec["status"], "shape": shape(rec)})
    return json.dumps(out, indent=1, sort_keys=True) + "\n"


def read(path: Path) -> str:
    return path.read_text() if path.exists() else f"({path.name} not written)\n"


def outputs(root: Path) -> dict[str, str]:
    """Every golden output, by file name, produced by the code on the path."""
    sets = result_sets(root)
    a, b = str(sets["gaudi"]), str(sets["gaudi2"])
    out: dict[str, str] = {}
    out["results.txt"] = cli("results", a, b, "--wide", cwd=root)
    out["results_fit.txt"] = cli("results", a, cwd=root)
    out["results_csv.txt"] = cli("results", a, "--format", "csv", cwd=root)
    out["results_json.txt"] = cli("results", b, "--format", "json", cwd=root)
    out["compare.txt"] = cli("compare", a, b, "-o", str(root / "compare.html"), cwd=root)
    out["compare.txt"] += json.dumps(table_rows(read(root / "compare.html")), indent=1, sort_keys=True) + "\n"
    out["results_narrow.txt"] = cli("results", a, b, cwd=root, columns=70)
    for fmt in ("csv", "json"):
        text = cli("report", a, b, "-o", str(root / f"report.{fmt}"), cwd=root)
        out[f"report_{fmt}.txt"] = text + read(root / f"report.{fmt}")
    html = cli("report", a, b, "-o", str(root / "report.html"), cwd=root)
    rows = table_rows(read(root / "report.html"))
    out["report_html_rows.txt"] = html + json.dumps(rows, indent=1, sort_keys=True) + "\n"
    out["export.txt"] = cli("export", a, "-o", str(root / "pb.json"), cwd=root)
    pb = json.loads((root / "pb.json").read_text())
    out["export.txt"] += json.dumps([(x["name"], x["stats"]) for x in pb["benchmarks"]], indent=1) + "\n"
    base = str(root / "baselines")
    out["baseline.txt"] = cli("baseline", "save", a, "--name", "g1", "--dir", base, cwd=root)
    out["gate.txt"] = cli(
        "gate",
        "--baseline",
        "g1",
        "--baseline-dir",
        base,
        "--current",
        b,
        "--markdown",
        str(root / "g.md"),
        cwd=root,
    )
    out["gate.txt"] += (root / "g.md").read_text()
    out["list_smoke.txt"] = cli("list", "cells", "--matrix", "smoke", "--skipped", cwd=root, columns=400)
    out["list_full.txt"] = cli(
        "list", "cells", "--matrix", "full", "--size", "tiny", "--skipped", cwd=root, columns=400
    )
    out["list_workloads.txt"] = cli("list", "workloads", cwd=root)
    out["run.txt"] = cli(
        "run",
        "-w",
        "mlp",
        "--size",
        "tiny",
        "-p",
        "32-true",
        "--devices",
        "1",
        "--warmup-steps",
        "1",
        "--steps",
        "3",
        "--out",
        str(root / "real"),
        cwd=root,
    )
    # A real cell's figures vary run to run: its table keeps only the header's words (the rules' widths follow
    # the figures), its record only its shape.
    rows = (line for line in out["run.txt"].splitlines() if "│" not in line and not RULE.search(line))
    out["run.txt"] = "\n".join(rows) + "\n"
    out["record_shape.json"] = record_shapes(root / "real")
    # Estimates rest on a matmul rate timed here, and a real cell's timings vary: in those outputs every
    # number and duration is masked and spacing collapsed (table widths follow the numbers); keys, reasons and
    # words stay.
    for name in ("list_smoke.txt", "list_full.txt", "run.txt"):
        masked = (NUMBER.sub("#", DURATION.sub("#time", line)) for line in out[name].splitlines())
        lines = [" ".join(line.split()) for line in masked]
        out[name] = "\n".join(lines) + "\n"
    return {name: mask(text, root) for name, text in out.items()}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = outputs(Path(tmp))
    if sys.argv[1:] == ["write"]:
        DATA.mkdir(exist_ok=True)
        for name, text in got.items():
            (DATA / name).write_text(text)
    for name, text in got.items():
        print(f"{name}: {len(text.splitlines())} lines")
