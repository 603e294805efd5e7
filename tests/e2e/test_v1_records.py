"""A result directory written with record schema 1 still loads, prints, reports, compares and gates
(issue 13, item 5): ``tests/data/v1_run`` is a real run kept as hpubench wrote it before ``runtime``
became a typed record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hpubench.store.readback import load_results
from hpubench.store.record import SCHEMA_VERSION
from hpubench.store.runtimeinfo import RuntimeInfo

V1 = Path(__file__).resolve().parents[1] / "data" / "v1_run"


def test_the_fixture_is_version_1() -> None:
    assert SCHEMA_VERSION == 2
    assert {json.loads(line)["schema"] for line in (V1 / "cells.jsonl").read_text().splitlines()} == {1}


def test_version_1_records_read_as_typed_runtime_facts() -> None:
    records = load_results([str(V1)])
    assert len(records) == 4
    rt = records[0].runtime
    assert isinstance(rt, RuntimeInfo)
    assert rt.accelerator == "cpu" and rt.mode_in_force == "eager" and rt.batch_size == 64
    assert rt.threads is not None and rt.steps_stop == "fixed: 6 steps"
    raw = json.loads((V1 / "cells.jsonl").read_text().splitlines()[0])["runtime"]
    assert rt.to_dict() == raw  # nothing lost: writing it back gives the same object


def test_results_report_compare_and_gate_accept_a_version_1_directory(cli, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(V1, old)
    shown = cli("results", str(old), cwd=tmp_path)
    assert shown.returncode == 0 and "mlp" in shown.stdout, shown.stderr
    report = cli("report", str(old), "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "gpt" in (tmp_path / "r.html").read_text()
    compared = cli("compare", str(old), str(V1), "-o", str(tmp_path / "c.html"), cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    gated = cli("gate", "-b", str(old), "-c", str(V1), cwd=tmp_path)
    assert gated.returncode in (0, 1) and "Traceback" not in gated.stderr, gated.stderr
