"""The gate's three outputs agree with the verdict: Markdown, JUnit XML (parsed back), terminal table."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import numpy as np
from gatedata import MIB, make_side
from rich.console import Console

from hpubench.analysis.gate.decide import gate
from hpubench.analysis.gate.rules import GateSettings
from hpubench.plan.cell import Cell
from hpubench.present.gate_report import junit_xml, markdown, ordered, terminal_table
from hpubench.store.record import CellResult

CELLS = [Cell("mlp"), Cell("gpt"), Cell("bert"), Cell("resnet"), Cell("mlp", precision="bf16-mixed")]


def make_result(missing: str = "fail"):
    rng = np.random.default_rng(0)
    base = make_side(rng, CELLS, repeats=6, n=60, cv=0.02)
    cur = (
        make_side(rng, CELLS[:1], repeats=6, n=60, cv=0.02, slowdown=0.2)  # regression
        + make_side(rng, CELLS[1:2], repeats=6, n=60, cv=0.02, peak=400 * MIB)  # memory regression
        + make_side(rng, CELLS[2:3], repeats=6, n=60, cv=0.02)  # no change
        + [CellResult(CELLS[3], "failed", reason="RuntimeError: a | pipe\nand a newline")]  # new failure
        + make_side(rng, [Cell("gpt", precision="bf16-mixed")], repeats=6, n=60, cv=0.02)  # new cell
    )  # CELLS[4] is missing
    return gate(base, cur, GateSettings(missing=missing))


def test_order_puts_failing_cells_first() -> None:
    res = make_result()
    order = [v.outcome for v in ordered(res)]
    n_fail = sum(v.fails for v in res.cells)
    assert all(v.fails for v in ordered(res)[:n_fail])
    assert order[-1] in ("no change", "new")


def test_markdown_summary() -> None:
    res = make_result()
    md = markdown(res, "main", "pr-123")
    assert md.startswith("## :x: hpubench gate FAILED")
    assert res.summary() in md
    assert "Baseline `main` vs current `pr-123`" in md
    lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert len(lines) == 1 + len(res.cells)  # header + one row per cell
    row = next(ln for ln in lines if "`mlp/tiny/1x1/32-true/eager/nographs/bsdefault`" in ln)
    assert ":x:" in row and "**regression**" in row and "-16." in row
    failed = next(ln for ln in lines if "resnet" in ln)
    assert "a \\| pipe and a newline" in failed  # escaped: the table keeps its columns
    assert all(ln.count(" | ") >= 8 for ln in lines)
    assert "> **Note:**" not in md  # enough repeated runs on both sides: nothing to warn about
    passed = markdown(gate(*([make_side(np.random.default_rng(1), CELLS[:1], repeats=3)] * 2)))
    assert passed.startswith("## :white_check_mark: hpubench gate passed")


def test_junit_xml_has_one_testcase_per_cell_and_failures_exactly_where_the_gate_fails() -> None:
    res = make_result()
    root = ET.fromstring(junit_xml(res, "main", "pr-123"))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(res.cells)
    assert {c.get("name") for c in cases} == {v.key for v in res.cells}
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert set(failed) == {v.key for v in res.cells if v.fails}
    assert failed[CELLS[0].match_key].get("type") == "regression"
    assert "throughput" in failed[CELLS[0].match_key].get("message")
    assert failed[CELLS[1].match_key].get("type") == "regression"  # peak memory +33%
    assert failed[CELLS[3].match_key].get("type") == "failed"
    assert failed[CELLS[4].match_key].get("type") == "missing"
    new = next(c for c in cases if c.get("name") == Cell("gpt", precision="bf16-mixed").match_key)
    assert new.find("skipped") is not None and new.find("failure") is None
    assert suite.get("tests") == str(len(cases))
    assert suite.get("failures") == str(len(failed))
    assert suite.get("skipped") == "1"
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["verdict"] == "failed" and props["baseline"] == "main" and props["alpha"] == "0.01"
    assert props["statistic"] == "min" and props["test"] == "auto"
    assert all(c.get("classname").startswith("hpubench.analysis.gate.decide.") for c in cases)
    assert "permutation test" in cases[0].find("system-out").text


def test_junit_with_missing_ignored_marks_it_skipped() -> None:
    res = make_result(missing="ignore")
    root = ET.fromstring(junit_xml(res))
    case = next(c for c in root.iter("testcase") if c.get("name") == CELLS[4].match_key)
    assert case.find("failure") is None and case.find("skipped") is not None


def test_terminal_table_renders_every_cell() -> None:
    res = make_result()
    console = Console(width=300, record=True)
    console.print(terminal_table(res))
    text = console.export_text()
    for v in res.cells:
        assert v.key in text
    assert "regression" in text and "holm" in text
    assert "samples/s (min step)" in text
    # ~6,400 samples/s (64 samples, ~10 ms steps): thousands separated, no exponent.
    assert re.search(r"\b6,\d{3} -> 5,\d{3}\b", text) and "e+0" not in text


def test_every_output_names_the_estimator_quality_and_what_it_could_detect() -> None:
    rng = np.random.default_rng(5)
    base = make_side(rng, CELLS[:2], repeats=1)
    cur = make_side(rng, CELLS[:2], repeats=1)

    cur = [replace(r, quality="noisy", quality_reasons=("interval half-width 6% > 5%",)) for r in cur]
    res = gate(base, cur)
    assert {v.outcome for v in res.cells} == {"insufficient evidence"} and res.passed
    md = markdown(res)
    assert "_estimator: fastest step per run" in md and "quality base/cur" in md and "| detects |" in md
    row = next(ln for ln in md.splitlines() if "`mlp/" in ln)
    assert ":warning:" in row and "-/noisy" in row and ">= " in row and "run with --repeat 3 or more" in row
    suite = ET.fromstring(junit_xml(res)).find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["estimator"] == res.settings.estimator and props["strict_quality"] == "False"
    skipped = [c.find("skipped") for c in suite.iter("testcase")]
    assert all(s is not None and s.get("message").startswith("insufficient evidence") for s in skipped)
    out = next(c.find("system-out").text for c in suite.iter("testcase"))
    assert "quality: baseline unknown, current noisy" in out and "smallest detectable drop above" in out
    console = Console(width=400, record=True)
    console.print(terminal_table(res))
    text = console.export_text()
    assert "estimator: fastest step per run" in text and "-/noisy" in text and "detects" in text
