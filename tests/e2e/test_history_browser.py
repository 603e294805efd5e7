"""The history page in real headless Chromium: three saved baselines (the middle one with a planted 30%
slowdown of one cell), ordered by date; the page renders offline without console errors, draws one
chart per cell with a point per baseline, shows the gate's verdicts between consecutive baselines (the
regression and the recovery), sorts its table, and never runs a script from a workload name.

Needs Debian's ``chromium`` package (``apt-get install -y chromium``) and ``websocket-client``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from reportdata import PAYLOAD, fake_result

from hpubench.present.cli.main import main
from hpubench.store.rundir import ResultStore
from hpubench.store.runmeta import run_metadata

websocket = pytest.importorskip(
    "websocket", reason="websocket-client is not installed (pip install -e .[dev])"
)
from cdp import Browser, find_chromium  # noqa: E402 - after the skip: it imports websocket

pytestmark = pytest.mark.skipif(
    find_chromium() is None, reason="chromium is not installed; install it with: apt-get install -y chromium"
)

EVIL = f"gpt{PAYLOAD}"
ROWS = """
Array.from(document.querySelectorAll('#history-verdicts tbody tr')).map(r =>
  [r.querySelector('td[data-col="key"]').textContent, r.querySelector('td[data-col="newer"]').textContent,
   r.querySelector('td[data-col="outcome"]').textContent])
"""
CHARTS = """
(() => {
  const charts = Array.from(document.querySelectorAll('.chart'));
  return charts.length > 0 && charts.every(c => {
    const svg = c.querySelector('svg.main-svg');
    return svg && svg.getBoundingClientRect().width > 100 && c.querySelectorAll('.point').length === 3;
  }) && charts.length;
})()
"""


def _baseline(root: Path, name: str, day: int, slow: float) -> None:
    run = root / f"run-{name}"
    store = ResultStore(run)
    meta = run_metadata(argv=["hpubench", "run"], started_at=f"2024-01-0{day}T00:00:00+00:00")
    store.write_meta({**meta, "git": {"commit": f"{day}" * 40, "branch": "main", "dirty": False}})
    for rep in range(6):
        for workload, step in (("mlp", 0.05 * (1 + slow)), (EVIL, 0.1)):
            r = fake_result(
                workload, "cpu", "host cpu", precision="32-true", step_s=step, seed=day * 10 + rep
            )
            store.append(replace(r, repeat=rep))
    assert main(["baseline", "save", str(run), "--name", name, "--dir", str(root / "bl")]) is None


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("history")
    for name, day, slow in (("v2", 2, 0.3), ("v1", 1, 0.0), ("v3", 3, 0.0)):
        _baseline(root, name, day, slow)
    out = root / "history.html"
    main(["history", "--dir", str(root / "bl"), "--order", "date", "-o", str(out)])
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("chromium-history") / "profile")
    yield b
    b.close()


def test_history_page_draws_every_cell_and_the_verdicts(browser, page, tmp_path) -> None:
    browser.open(page)
    assert browser.wait_for(CHARTS) == 2  # one chart per cell, a point per baseline
    assert browser.console_errors() == []
    assert {u.split(":", 1)[0] for u in browser.requested_urls()} == {"file"}  # no network
    order = browser.evaluate(
        "Array.from(document.querySelectorAll('#history-points li strong')).map(e => e.textContent)"
    )
    assert order == ["v1", "v2", "v3"]
    rows = browser.evaluate(ROWS)
    mlp = [(newer.split(" @")[0], verdict) for key, newer, verdict in rows if key.startswith("mlp/")]
    assert mlp == [("v2", "regression"), ("v3", "improvement")]
    evil = [verdict for key, _, verdict in rows if key.startswith("gpt")]
    assert evil == ["no change", "no change"]
    colors = browser.evaluate(
        "Array.from(document.querySelectorAll('#history-0 .point')).map(p => p.style.fill)"
    )
    assert colors[1] == "rgb(178, 24, 43)" and colors[2] == "rgb(27, 120, 55)"  # regression, improvement
    browser.click("#history-verdicts th[data-col='change']")
    changes = [
        float(v)
        for v in browser.evaluate(
            "Array.from(document.querySelectorAll('#history-verdicts tbody tr'))"
            ".map(r => r.querySelector('td[data-col=\"change\"]').getAttribute('data-v'))"
            ".filter(v => v !== '')"
        )
    ]
    assert len(changes) == 4 and changes == sorted(changes) and changes[0] < -0.2
    shot = tmp_path / "history.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 30_000
    assert browser.console_errors() == []


def test_script_in_a_workload_name_never_runs(browser, page) -> None:
    browser.open(page)
    browser.wait_for(CHARTS)
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert PAYLOAD in browser.evaluate("document.body.innerText")
    titles = browser.evaluate(
        "Array.from(document.querySelectorAll('.chart svg text')).map(t => t.textContent)"
    )
    assert any(PAYLOAD in t for t in titles)
    holders = browser.evaluate(
        "Array.from(document.scripts).filter(s => s.textContent.includes('__pwned')).map(s => s.type)"
    )
    assert set(holders) <= {"application/json"}
