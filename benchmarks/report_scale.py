"""How long the report takes at the scale users run it (``make bench``; issue 35): 1,000 cells over four
machines (``tests/reportscale.py``), built by ``hpubench report`` (target: under 5 s) and opened in headless
Chromium until every chart is drawn (target: under 3 s), each timed over several tries; the median and the
range are printed, and the page's size. Never run beside other work.

``python benchmarks/report_scale.py [--tries 3] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "e2e")]

from cdp import Browser, find_chromium  # noqa: E402

from hpubench.present.cli.main import main as cli  # noqa: E402
from tests.reportscale import write_scale_runs  # noqa: E402

DRAWN = (
    "Array.from(document.querySelectorAll('.chart')).every(c => c.querySelector('svg.main-svg'))"
    " && document.querySelectorAll('.chart').length > 0"
)
TARGETS = {"build": 5.0, "open": 3.0}


def _line(what: str, times: list[float]) -> str:
    med = statistics.median(times)
    verdict = "within" if med < TARGETS[what] else "OVER"
    spread = f"{min(times):.2f}-{max(times):.2f}"
    return f"{what:5}: median {med:.2f} s ({spread}), {verdict} the {TARGETS[what]:g} s target"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument(
        "--keep", type=Path, help="write the runs and the report here instead of a temporary folder"
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hpubench-report-scale-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        runs = write_scale_runs(root / "runs")
        page = root / "report.html"
        build = []
        for _ in range(args.tries):
            t0 = time.perf_counter()
            page.unlink(missing_ok=True)
            cli(["report", *map(str, runs), "-o", str(page)])
            if not page.is_file():
                raise SystemExit("hpubench report wrote no page")
            build.append(time.perf_counter() - t0)
        print(f"1,000 cells over {len(runs)} machines; page {page.stat().st_size / 2**20:.1f} MiB")
        print(_line("build", build))
        if find_chromium() is None:
            print("open : chromium is not installed (apt-get install -y chromium): not timed")
            return 0
        opened = []
        for i in range(args.tries):
            browser = Browser(root / f"profile-{i}", width=1366, height=900)
            try:
                t0 = time.perf_counter()
                browser.open(page)
                browser.wait_for(DRAWN, timeout=120)
                opened.append(time.perf_counter() - t0)
            finally:
                browser.close()
        print(_line("open", opened))
    return 0


if __name__ == "__main__":
    sys.exit(main())
