"""The report at the scale users run it (issue 35): 1,000 cells over four machines (tests/reportscale.py), in
real headless Chromium at a phone's width (390 px) and a laptop's (1366 px). No axis label is rotated, no
two labels of an axis overlap, the cells table starts with measured cells, the page never scrolls
sideways, and every workload has its per-machine decision table. (How long it takes to build and open is
``benchmarks/report_scale.py``'s figure, not a test's.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hpubench.present.cli.main import main
from tests.reportscale import PER_MACHINE, WORKLOADS, write_scale_runs

websocket = pytest.importorskip(
    "websocket", reason="websocket-client is not installed (pip install -e .[dev])"
)
from cdp import Browser, find_chromium  # noqa: E402 - after the skip: it imports websocket

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        find_chromium() is None,
        reason="chromium is not installed; install it with: apt-get install -y chromium",
    ),
]

CHARTS_DRAWN = """
(() => {
  const charts = Array.from(document.querySelectorAll('.chart'));
  return charts.length > 0 && charts.every(c => c.querySelector('svg.main-svg'));
})()
"""
# Tick labels (plotly's .xtick / .ytick text) whose transform rotates them, by chart.
ROTATED = """
Array.from(document.querySelectorAll('.chart .xtick text, .chart .ytick text'))
  .filter(t => /rotate\\((?!0[ ,)])/.test(t.getAttribute('transform') || ''))
  .map(t => t.closest('.chart').id + ': ' + t.textContent)
"""
# Pairs of tick labels of one axis whose boxes intersect (a pixel of slack), by chart.
OVERLAPS = """
(() => {
  const found = [];
  for (const chart of document.querySelectorAll('.chart')) {
    for (const axis of ['xtick', 'ytick']) {
      const boxes = Array.from(chart.querySelectorAll('.' + axis + ' text'))
        .filter(t => t.textContent.trim() !== '')
        .map(t => [t.textContent, t.getBoundingClientRect()]);
      for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
        const [a, r] = boxes[i], [b, s] = boxes[j];
        if (r.left < s.right - 1 && s.left < r.right - 1 && r.top < s.bottom - 1 && s.top < r.bottom - 1)
          found.push(chart.id + ': ' + a + ' / ' + b);
      }
    }
  }
  return found;
})()
"""
FIRST_STATUSES = """
Array.from(document.querySelectorAll('#cell-table tbody tr')).slice(0, 25)
  .map(r => r.querySelector('td[data-col="status"]').textContent.trim())
"""
SIDEWAYS = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_scale_runs(tmp_path_factory.mktemp("scale"))


@pytest.fixture(scope="module")
def page(runs: list[Path]) -> Path:
    out = runs[0].parent / "report.html"
    main(["report", *map(str, runs), "-o", str(out)])
    assert out.is_file()
    return out


@pytest.mark.parametrize("width", [390, 1366])
def test_a_thousand_cell_report_reads_at_every_width(tmp_path: Path, page: Path, width: int) -> None:
    browser = Browser(tmp_path / "profile", width=width, height=900)
    try:
        browser.open(page)
        browser.wait_for(CHARTS_DRAWN, timeout=60)
        assert browser.console_errors() == []
        assert browser.evaluate(ROTATED) == []
        assert browser.evaluate(OVERLAPS) == []
        assert set(browser.evaluate(FIRST_STATUSES)) == {"ok"}
        assert browser.evaluate(SIDEWAYS) <= 0
        decided = browser.evaluate(
            "Array.from(document.querySelectorAll('table.decision')).map(t => [t.dataset.workload,"
            " t.querySelectorAll('tbody tr').length])"
        )
        assert sorted(w for w, _ in decided) == sorted(WORKLOADS)
        assert all(n >= 2 for _, n in decided)  # several machines side by side for every workload
    finally:
        browser.close()


def test_the_table_holds_the_measured_cells_and_counts_the_rest_by_reason(
    runs: list[Path], page: Path
) -> None:
    statuses = [json.loads(line)["status"] for run in runs for line in (run / "cells.jsonl").open()]
    assert len(statuses) == 4 * PER_MACHINE
    html = page.read_text()
    table = html[html.index('id="cell-table"') : html.index("</table>", html.index('id="cell-table"'))]
    assert table.count("<tr data-key=") == statuses.count("ok")
    skipped, failed = statuses.count("skipped"), statuses.count("failed")
    assert skipped > 100 and failed > 0
    groups = re.findall(r'<details class="problem" data-status="(\w+)"><summary>.*? (\d+) × ', html)
    assert sum(int(n) for s, n in groups if s == "skipped") == skipped
    assert sum(int(n) for s, n in groups if s == "failed") == failed
    assert groups[0][0] == "failed"  # failures first
