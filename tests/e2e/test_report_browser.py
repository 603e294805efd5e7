"""Reports and comparisons in real headless Chromium: they render offline, without console errors, the
charts are drawn, the table sorts on a header click and filters, and a script in the results never runs.

Needs Debian's ``chromium`` package (``apt-get install -y chromium``) and ``websocket-client``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hpubench.present.cli.main import main

websocket = pytest.importorskip(
    "websocket", reason="websocket-client is not installed (pip install -e .[dev])"
)
from cdp import Browser, find_chromium  # noqa: E402 - after the skip: it imports websocket

pytestmark = pytest.mark.skipif(
    find_chromium() is None, reason="chromium is not installed; install it with: apt-get install -y chromium"
)

CHARTS_DRAWN = """
(() => {
  const charts = Array.from(document.querySelectorAll('.chart'));
  return charts.length > 0 && charts.every(c => {
    const svg = c.querySelector('svg.main-svg');
    const marks = c.querySelectorAll(
      '.point, path.point, .bars path, .scatterlayer path.js-line, .hm image').length;
    return svg && svg.getBoundingClientRect().width > 100 && marks > 0;
  });
})()
"""
COLUMN = """
Array.from(document.querySelectorAll('#{table} tbody tr'))
  .filter(r => !r.hidden)
  .map(r => r.querySelector('td[data-col="{col}"]').getAttribute('data-v'))
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("chromium") / "profile")
    yield b
    b.close()


@pytest.fixture(scope="module")
def pages(smoke_runs, hw_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("pages")
    a, b = smoke_runs
    commands = {
        "report": [
            "report",
            str(a),
            str(b),
            str(hw_runs["gaudi"]),
            str(hw_runs["gaudi2"]),
            str(hw_runs["gaudi3"]),
        ],
        "compare": ["compare", str(a), str(b)],
        "evil-report": ["report", str(hw_runs["evil"])],
        "evil-compare": ["compare", str(hw_runs["evil"]), str(hw_runs["evil"])],
    }
    for name, argv in commands.items():
        main([*argv, "-o", str(out / f"{name}.html")])
    return out


def _open(browser: Browser, page: Path) -> None:
    browser.open(page)
    browser.wait_for(CHARTS_DRAWN)


def _numbers(values: list[str]) -> list[float]:
    return [float(v) for v in values if v != ""]


@pytest.mark.parametrize(
    ("page", "table", "col"),
    [("report", "cell-table", "samples_per_s"), ("compare", "matched-table", "ratio")],
)
def test_page_renders_offline_and_its_table_sorts(browser, pages, tmp_path, page, table, col):
    _open(browser, pages / f"{page}.html")
    assert browser.console_errors() == []
    # no network, no CDN: the page itself, and the heat maps' images drawn in the page (data: URLs)
    assert {u.split(":", 1)[0] for u in browser.requested_urls()} <= {"file", "data"}
    header = f"#{table} th[data-col='{col}']"
    browser.click(header)
    values = browser.evaluate(COLUMN.replace("{table}", table).replace("{col}", col))
    nums = _numbers(values)
    assert len(nums) > 3 and nums == sorted(nums)
    assert browser.evaluate(f"document.querySelector(\"{header}\").getAttribute('aria-sort')") == "ascending"
    browser.click(header)
    nums = _numbers(browser.evaluate(COLUMN.replace("{table}", table).replace("{col}", col)))
    assert nums == sorted(nums, reverse=True)
    assert all(v == "" for v in values[len(nums) :])  # cells without a number stay at the bottom
    shot = tmp_path / f"{page}.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
    assert browser.console_errors() == []


def test_report_table_filters(browser, pages):
    _open(browser, pages / "report.html")
    browser.type_text("input[data-filter-for='cell-table']", "gpt bf16-mixed ok")
    keys = browser.evaluate(COLUMN.replace("{table}", "cell-table").replace("{col}", "key"))
    assert keys and all("gpt/" in k and "/bf16-mixed/" in k for k in keys)
    assert browser.evaluate("document.getElementById('cell-table-count').textContent").startswith(
        f"{len(keys)} of "
    )


@pytest.mark.parametrize("page", ["evil-report", "evil-compare"])
def test_script_in_host_and_workload_names_never_runs(browser, pages, page):
    _open(browser, pages / f"{page}.html")
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.console_errors() == []
    text = browser.evaluate("document.body.innerText")
    assert "<script>window.__pwned = 1</script>" in text  # shown to the reader as plain text
    if page == "evil-report":
        assert "host<script>window.__pwned = 1</script>" in text  # the host name, in the provenance section
    # Plotly shows the workload name as text too (it renders a subset of HTML in chart labels).
    chart_text = browser.evaluate(
        "Array.from(document.querySelectorAll('.chart svg text')).map(t => t.textContent)"
    )
    assert any("gpt<script>window.__pwned = 1</script>" in t for t in chart_text)
    # The only elements holding the payload are our JSON data blocks, which never execute.
    holders = browser.evaluate(
        "Array.from(document.scripts).filter(s => s.textContent.includes('__pwned')).map(s => s.type)"
    )
    assert set(holders) <= {"application/json"}
