"""``--condition tuned,plain``: the same cell under the harness's host settings and under a plain script's,
each record saying which it is, the plain one in a fresh interpreter with glibc's heap and torch's threads
whatever the run's own settings, and ``results`` and ``report`` setting the two figures side by side."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def test_tuned_and_plain_side_by_side(cli, tmp_path):
    out = tmp_path / "run"
    # The run's own settings are the tuned ones; the plain cell must not inherit them.
    env = {"HPUBENCH_MALLOC": "steady", "HPUBENCH_CPU_THREADS": "cores-1", "HPUBENCH_NO_PROGRESS": "1"}
    proc = cli(
        "run",
        "-w",
        "mlp",
        "--condition",
        "tuned,plain",
        "--steps",
        "20",
        "--repeat",
        "2",
        "-o",
        str(out),
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    records = [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]
    by_condition: dict[str, list[dict]] = {}
    for r in records:
        assert r["status"] == "ok", r.get("reason")
        by_condition.setdefault(r["runtime"]["condition"]["name"], []).append(r)
    assert sorted(by_condition) == ["plain", "tuned"] and all(len(v) == 2 for v in by_condition.values())
    for r in by_condition["plain"]:
        assert r["key"].endswith("/condition=plain")
        assert r["runtime"]["heap"]["policy"] == "system" and r["runtime"]["heap"]["applied"] is False
        assert r["runtime"]["threads"]["policy"] == "all"
        assert r["runtime"]["condition"]["process"] == "fresh interpreter"
        assert r["runtime"]["page_faults_measured"]["minor"] >= 0
    for r in by_condition["tuned"]:
        assert "condition" not in r["key"]
        assert r["runtime"]["heap"]["policy"] == "steady" and r["runtime"]["threads"]["policy"] == "cores-1"
        assert r["runtime"]["condition"]["process"] == "forked from the pre-warmed server"
    tuned_key = by_condition["tuned"][0]["key"]
    # run's own summary and results both set the two figures side by side, with the heap modes counted
    for text in (proc.stdout, cli("results", str(out), cwd=tmp_path).stdout):
        line = next(x for x in text.splitlines() if x.startswith(f"{tuned_key}: tuned "))
        assert "plain/tuned" in line and "of 2 heap regrown every step" in line, line
    # doctor --from the run: the pair as a finding about the user's own training (a tip, if it cost)
    doc = cli("doctor", "--from", str(out), "--matrix", "smoke", "--json", cwd=tmp_path)
    mine = [f for f in json.loads(doc.stdout)["findings"] if f["section"] == "your training"]
    assert any(f["check"] == "tuned vs plain" and tuned_key in f["detail"] for f in mine), mine
    assert all(f["level"] == "OK" or "MALLOC_MMAP_THRESHOLD_" in f["fix"] for f in mine), mine
    html = tmp_path / "r.html"
    rep = cli("report", str(out), "-o", str(html), cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr[-2000:]
    page = html.read_text()
    assert 'id="tuning-table"' in page and tuned_key in page.split('id="tuning"')[1].split("</section>")[0]


def test_report_without_plain_cells_says_how_to_get_them(cli, tmp_path):
    out = tmp_path / "run"
    proc = cli("run", "-w", "mlp", "--steps", "10", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "plain/tuned" not in proc.stdout
    html = tmp_path / "r.html"
    assert cli("report", str(out), "-o", str(html), cwd=tmp_path).returncode == 0
    section = html.read_text().split('id="tuning"')[1].split("</section>")[0]
    assert "--condition tuned,plain" in section and "tuning-table" not in section
