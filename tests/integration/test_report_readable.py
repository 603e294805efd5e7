"""The report read at a glance: every chart point can be told apart (legend, label, hover), every axis
says its scale where a chart has a log axis, notes appear only where they apply, and a device without a
price reads "not applicable" in its own cells instead of a banner over the page."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from reportdata import table_rows

from hpubench.present.cli.main import main

CHART = re.compile(r'<script type="application/json" data-chart-for="([^"]+)">(.*?)</script>', re.S)
PRICE_COLUMNS = (
    "price_usd_per_device_hour",
    "usd_per_million_samples",
    "usd_per_million_tokens",
    "samples_per_usd",
)


def _write(args: list[str], out: Path) -> str:
    main([*args, "-o", str(out)])
    return out.read_text(encoding="utf-8")


def _charts(html: str) -> dict[str, dict]:
    found = {cid: json.loads(spec) for cid, spec in CHART.findall(html)}
    assert found, "no chart in the page"
    return found


def _visible_text(html: str) -> str:
    """The page without its scripts and styles (plotly's bundle and chart JSON), tags dropped."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


@pytest.fixture(scope="module")
def hw_report(hw_runs, tmp_path_factory) -> str:
    """Gaudi, Gaudi2 (a scaling series: five cells of one hardware), Gaudi3 on the test double, an H100."""
    runs = [str(hw_runs[k]) for k in ("gaudi", "gaudi2", "gaudi3", "h100")]
    return _write(["report", *runs], tmp_path_factory.mktemp("hw") / "r.html")


@pytest.fixture(scope="module")
def cpu_report(smoke_runs, tmp_path_factory) -> str:
    """One real CPU run and no price for its CPU: price/performance does not apply."""
    return _write(["report", str(smoke_runs[0])], tmp_path_factory.mktemp("cpu") / "r.html")


@pytest.fixture(scope="module")
def compare_page(hw_runs, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("compare") / "c.html"
    return _write(["compare", str(hw_runs["gaudi"]), str(hw_runs["gaudi2"])], out)


@pytest.mark.parametrize("page", ["hw_report", "cpu_report", "compare_page"])
def test_every_chart_has_a_legend_that_tells_its_traces_apart(page, request):
    for cid, spec in _charts(request.getfixturevalue(page)).items():
        # Plotly hides the legend of a one-trace chart by default: then nothing says whose bars they are.
        assert spec["layout"].get("showlegend") is True, cid
        names = [tr["name"] for tr in spec["data"] if tr.get("showlegend") is not False]
        assert all(names) and len(names) == len(set(names)), (cid, names)


@pytest.mark.parametrize("page", ["hw_report", "cpu_report"])
def test_every_bar_is_one_legend_entry_at_one_axis_label(page, request):
    for cid, spec in _charts(request.getfixturevalue(page)).items():
        bars = [
            (tr["name"], label)
            for tr in spec["data"]
            if tr["type"] == "bar"
            for label in (tr["y"] if tr.get("orientation") == "h" else tr["x"])
        ]
        assert len(bars) == len(set(bars)), cid


def test_every_price_performance_point_is_labelled_with_its_cell(hw_report):
    pp = {cid: s for cid, s in _charts(hw_report).items() if cid.startswith("chart-pp-")}
    assert pp
    several = False
    for cid, spec in pp.items():
        points = []
        for tr in spec["data"]:
            if "markers" not in tr.get("mode", ""):
                continue
            n = len(tr["x"])
            several |= n > 1
            text = tr.get("text")
            assert isinstance(text, list) and len(text) == n and all(text), (cid, tr["name"])
            assert "%{text}" in tr["hovertemplate"] and "text" in tr["mode"], (cid, tr["name"])
            points += [(tr["name"], label) for label in text]
        assert len(points) == len(set(points)), cid  # legend entry + label names exactly one point
    assert several  # the Gaudi2 scaling series: several cells behind one legend entry


def _axes(layout: dict) -> dict[str, dict]:
    return {k: v for k, v in layout.items() if re.fullmatch(r"[xy]axis\d*", k)}


def _title(axis: dict) -> str:
    title = axis.get("title")
    return (title.get("text") if isinstance(title, dict) else title) or ""


@pytest.mark.parametrize("page", ["hw_report", "compare_page"])
def test_a_chart_with_a_log_axis_states_the_scale_of_each_axis(page, request):
    logs = 0
    for cid, spec in _charts(request.getfixturevalue(page)).items():
        axes = _axes(spec["layout"])
        if not any(a.get("type") == "log" for a in axes.values()):
            continue
        for name, axis in axes.items():
            if not _title(axis):
                assert axis.get("type") not in ("log", "linear"), (cid, name)  # a category axis
                continue
            scale = "log scale" if axis.get("type") == "log" else "linear scale"
            assert scale in _title(axis), (cid, name, _title(axis))
            logs += axis.get("type") == "log"
    assert logs  # the scaling chart (devices on a log axis) and the compare's ratio axis


def test_test_double_notes_only_where_test_double_records_are(hw_report, cpu_report):
    cpu = _visible_text(cpu_report).lower()
    assert "test double" not in cpu and "hatched" not in cpu
    hw = _visible_text(hw_report)
    assert 'Machines of the HPU test double say "(test double)" in their labels' in hw
    assert "Diamonds are from the HPU test double" in hw  # the price/performance markers


def test_unpriced_cpu_run_shows_not_applicable_in_its_cells_and_no_banner(cpu_report):
    assert 'class="banner' not in cpu_report
    rows = [r for r in table_rows(cpu_report).values() if r.get("status", ("", ""))[1] == "ok"]
    assert rows
    for r in rows:
        for col in PRICE_COLUMNS:
            assert r[col] == ("", "n/a"), (col, r[col])
    price_cell = r'data-col="price_usd_per_device_hour" data-v="" class="n" title="([^"]*)"'
    titles = re.findall(price_cell, cpu_report)
    assert titles and all("not applicable" in t and "--price-here" in t for t in titles)
    text = _visible_text(cpu_report)
    assert "Price/performance does not apply" in text  # said once, in its own section


def test_price_table_cites_sources_in_the_repository(hw_report):
    # The defaults are hpubench's own table (hpubench/analysis/prices.py), each entry with its source;
    # nothing points at a file a user's clone does not have.
    assert "shared/hardware.md" not in hw_report
    assert "hpubench/analysis/prices.py" in _visible_text(hw_report)
