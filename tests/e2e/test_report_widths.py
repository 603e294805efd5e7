"""The report and the comparison in real headless Chromium at a phone width (390 px) and a desktop width
(1366 px): the page body never scrolls sideways (a wide table scrolls inside its own box), and every chart
is drawn, visible and inside the viewport.

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

PHONE, DESKTOP = 390, 1366

DRAWN = """
(() => {
  const charts = Array.from(document.querySelectorAll('.chart'));
  return charts.length > 0 && charts.every(c => c.querySelector('svg.main-svg'));
})()
"""
# Every chart: its box, its computed style, and the width plotly drew it at.
LAYOUT = """
(() => ({
  scrollWidth: document.documentElement.scrollWidth,
  bodyScrollWidth: document.body.scrollWidth,
  innerWidth: window.innerWidth,
  charts: Array.from(document.querySelectorAll('.chart')).map(c => {
    const r = c.getBoundingClientRect();
    const s = getComputedStyle(c);
    const svg = c.querySelector('svg.main-svg');
    return {
      id: c.id, width: r.width, height: r.height, left: r.left, right: r.right,
      display: s.display, visibility: s.visibility, connected: c.isConnected,
      drawn: svg ? svg.getBoundingClientRect().width : 0,
    };
  }),
}))()
"""
# Elements wider than the viewport that are not inside a box that scrolls on its own: the culprits.
CULPRITS = """
(() => Array.from(document.querySelectorAll('body *'))
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
  .filter(e => !e.closest('.tablewrap, pre'))
  .slice(0, 8)
  .map(e => e.tagName + (e.id ? '#' + e.id : '')
    + (typeof e.className === 'string' && e.className ? '.' + e.className : '')))()
"""


@pytest.fixture(scope="module")
def pages(smoke_runs, hw_runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pages")
    a, b = smoke_runs
    commands = {
        # Several result sets: the widest legends, headline cards and tables the report makes.
        "report": ["report", str(a), str(b), *(str(hw_runs[k]) for k in ("gaudi2", "gaudi3", "h100"))],
        "cpu-report": ["report", str(a)],
        "compare": ["compare", str(a), str(b)],
    }
    for name, argv in commands.items():
        main([*argv, "-o", str(out / f"{name}.html")])
    return out


@pytest.fixture(scope="module", params=[PHONE, DESKTOP], ids=["phone-390", "desktop-1366"])
def browser(request, tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("chromium") / "profile", width=request.param, height=844)
    yield b
    b.close()


@pytest.mark.parametrize("page", ["report", "cpu-report", "compare"])
def test_page_fits_the_width_and_shows_every_chart(browser, pages, page):
    browser.open(pages / f"{page}.html")
    browser.wait_for(DRAWN)
    got = browser.evaluate(LAYOUT)
    width = got["innerWidth"]
    assert width in (PHONE, DESKTOP)
    assert got["scrollWidth"] <= width, (got["scrollWidth"], browser.evaluate(CULPRITS))
    assert got["bodyScrollWidth"] <= width
    assert got["charts"]
    for c in got["charts"]:
        assert c["connected"] and c["display"] != "none" and c["visibility"] == "visible", c
        assert c["width"] > 0 and c["height"] > 0, c
        assert c["left"] >= 0 and c["right"] <= width + 0.5, c  # inside the viewport, not cut off
        assert 0 < c["drawn"] <= c["width"] + 0.5, c  # plotly drew it at its box's width
    assert browser.console_errors() == []
