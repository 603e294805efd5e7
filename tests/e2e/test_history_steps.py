"""Steps in level from the command line: twelve saved baselines of real record files whose mlp cell gets 10%
slower at the eighth, and twelve where nothing changes. ``hpubench history`` prints the step (and only it)
in the terminal and marks it in the HTML, where Chromium draws its dashed line; the A/A series prints none.

The chart check needs Debian's ``chromium`` package and ``websocket-client``; the rest runs without them.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import replace
from pathlib import Path

import pytest
from reportdata import fake_result

from hpubench.present.cli.main import main
from hpubench.store.rundir import ResultStore
from hpubench.store.runmeta import run_metadata

N = 12
STEP_AT = 7


def _baselines(root: Path, slow_from: int | None) -> Path:
    """N saved baselines, 3 runs each; every baseline drifts by about 2% as a day on a shared runner does."""
    rng = random.Random(7)
    for i in range(N):
        run = root / f"run-{i:02d}"
        store = ResultStore(run)
        meta = run_metadata(argv=["hpubench", "run"], started_at=f"2024-02-{i + 1:02d}T00:00:00+00:00")
        store.write_meta(meta)
        day = math.exp(rng.gauss(0, 0.02))
        slow = 1.10 if slow_from is not None and i >= slow_from else 1.0
        for rep in range(3):
            for workload, step in (("mlp", 0.05 * slow * day), ("gpt", 0.1 * day)):
                r = fake_result(
                    workload, "cpu", "host cpu", precision="32-true", step_s=step, seed=i * 10 + rep
                )
                store.append(replace(r, repeat=rep))
        assert main(["baseline", "save", str(run), "--name", f"v{i:02d}", "--dir", str(root / "bl")]) is None
    return root / "bl"


def _history(capsys, baselines: Path, out: Path) -> str:
    capsys.readouterr()
    assert main(["history", "--dir", str(baselines), "--order", "date", "-o", str(out)]) is None
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def stepped(tmp_path_factory) -> Path:
    return _baselines(tmp_path_factory.mktemp("stepped"), STEP_AT)


def test_history_prints_and_marks_the_one_step(capsys, stepped, tmp_path) -> None:
    page = tmp_path / "history.html"
    text = _history(capsys, stepped, page)
    assert "1 step(s) in level" in text
    rows = [line for line in text.splitlines() if "mlp/" in line and "v06" in line]
    assert len(rows) == 1 and "v07" in rows[0]
    lo, hi = (float(x) for x in re.search(r"\[([-+0-9.]+)%, ([-+0-9.]+)%\]", rows[0]).groups())
    assert lo < (1 / 1.1 - 1) * 100 < hi < 0  # the planted 10% slowdown is a 9.1% drop in throughput
    assert "gpt/" not in text.split("step(s) in throughput")[1].split("change points:")[0]
    assert "at most 0.01 per cell" in text
    html = page.read_text()
    assert 'id="history-steps"' in html and "history-no-steps" not in html


def test_an_aa_history_prints_no_step(capsys, tmp_path) -> None:
    text = _history(capsys, _baselines(tmp_path, None), tmp_path / "aa.html")
    assert "0 step(s) in level" in text and "no step in any cell's throughput" in text
    assert 'id="history-no-steps"' in (tmp_path / "aa.html").read_text()


def test_chromium_draws_the_steps_line(capsys, stepped, tmp_path) -> None:
    pytest.importorskip("websocket", reason="websocket-client is not installed (pip install -e .[dev])")
    from cdp import Browser, find_chromium

    if find_chromium() is None:
        pytest.skip("chromium is not installed; install it with: apt-get install -y chromium")
    page = tmp_path / "history.html"
    _history(capsys, stepped, page)
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(page)
        lines = browser.wait_for(
            "(() => { const n = document.querySelectorAll('#history-0 .shapelayer path').length;"
            " return n > 0 && n; })()"
        )
        assert lines == 1  # mlp's chart: one dashed line
        assert browser.evaluate("document.querySelectorAll('#history-1 .shapelayer path').length") == 0
        label = browser.evaluate("document.querySelector('#history-0 .annotation-text').textContent")
        shown = browser.evaluate(
            "document.querySelector('#history-steps td[data-col=\"change\"]').textContent"
        )
        assert label == f"step {shown}" and shown.startswith("-")
        assert browser.console_errors() == []
    finally:
        browser.close()
