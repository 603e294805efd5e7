"""``docs/report.png`` from healthy runs on three machines: ``make report-png``.

Runs a small matrix through the CLI as a user would (adaptive steps) on this host's CPU and on the HPU test
double twice, as a first-generation Gaudi and as a Gaudi2 (``tests/fakes``; its records and the page say
"test double": those figures are this CPU running hpubench's HPU code, never a Gaudi's). A run is kept
only when it is healthy: every cell measured and judged ``ok`` (no noisy, interfered or unstable figure;
such a run is retried, up to ``--attempts`` times, since a busy machine makes exactly the collapsed
numbers the picture must not show). Then ``hpubench report`` writes the page with the README's example
price for the CPU (``--prices``) and headless Chromium screenshots its top at a desktop width. Prints each
cell's samples/s, so the figures in the picture can be checked before it is committed.

Exit 0 with the picture written, 1 when no attempt was healthy (nothing written; the reasons printed),
2 when Chromium is missing (``make browser``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUN_ARGS = ("-w", "mlp,gpt", "-p", "32-true,bf16-mixed", "--steps", "auto")
FAKES = ROOT / "tests" / "fakes"
# (run directory, accelerator, environment): the directory names the result set on the page
MACHINES = (
    ("cpu", "cpu", {}),
    ("gaudi-double", "hpu", {"PYTHONPATH": str(FAKES), "HPUBENCH_FAKE_HPU_NAME": "GAUDI"}),
    ("gaudi2-double", "hpu", {"PYTHONPATH": str(FAKES), "HPUBENCH_FAKE_HPU_NAME": "GAUDI2"}),
)
# The README's example price for this machine's CPU (the page says where a price came from); the Gaudi
# generations keep the price table's own entries.
PRICES = """[[price]]
name = "this host's CPU (given by hand for the picture)"
accelerator = "cpu"
match = ".*"
usd_per_device_hour = 0.10
source = "benchmarks/report_png.py, the README's example --price-here"
as_of = "2026-11-27"
"""
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run")


def hpubench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    if env and "PYTHONPATH" in env:
        full["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(ROOT)])
    return subprocess.run(
        [sys.executable, "-m", "hpubench", *args], capture_output=True, text=True, cwd=ROOT, env=full
    )


def healthy_run(
    folder: Path, name: str, accelerator: str, env: dict[str, str], attempts: int, wait: float
) -> Path | None:
    """The run of one machine, retried until healthy; None when no attempt was."""
    for attempt in range(1, attempts + 1):
        run_dir = folder / f"attempt-{attempt}" / name  # the page labels the run by its directory
        proc = hpubench("run", *RUN_ARGS, "-a", accelerator, "-o", str(run_dir), env=env)
        why = unhealthy(run_dir) if (run_dir / "cells.jsonl").is_file() else [proc.stderr[-500:]]
        print(f"{name}, attempt {attempt}: " + ("healthy" if not why else "not healthy"))
        print("\n".join(figures(run_dir) if (run_dir / "cells.jsonl").is_file() else []))
        for line in why:
            print(f"  {line}")
        if not why:
            return run_dir
        if attempt < attempts:
            time.sleep(wait)
    return None


def unhealthy(run_dir: Path) -> list[str]:
    """Why the run's figures may not be shown: a cell not measured, or measured but not judged ok."""
    recs: list[dict[str, Any]] = [json.loads(x) for x in (run_dir / "cells.jsonl").read_text().splitlines()]
    why = []
    for r in recs:
        key = r["cell"]["workload"] + "/" + r["cell"]["precision"]
        if r["status"] != "ok":
            why.append(f"{key}: {r['status']} ({r.get('reason')})")
        elif r.get("quality") != "ok":
            why.append(f"{key}: {r.get('quality')} ({'; '.join(r.get('quality_reasons') or [])})")
    return why or ([] if recs else ["no records"])


def figures(run_dir: Path) -> list[str]:
    lines = []
    for x in (run_dir / "cells.jsonl").read_text().splitlines():
        r = json.loads(x)
        m = r.get("metrics") or {}
        cell = r["cell"]
        sps = m.get("samples_per_s") or 0.0
        lines.append(f"  {cell['workload']:<7}{cell['precision']:<12}{sps:>12,.1f} samples/s")
    return lines


def screenshot(chromium: str, page: Path, png: Path, width: int, height: int) -> None:
    proc = subprocess.run(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={page.parent / 'chromium'}",
            "--virtual-time-budget=15000",  # lets the page's script draw every chart before the shot
            f"--window-size={width},{height}",
            f"--screenshot={png}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    if proc.returncode != 0 or not png.is_file():
        raise SystemExit(f"chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr[-500:]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "report.png")
    ap.add_argument("--attempts", type=int, default=3)
    ap.add_argument("--wait", type=float, default=10.0, help="seconds between attempts")
    ap.add_argument("--width", type=int, default=1366)
    ap.add_argument("--height", type=int, default=1800)
    args = ap.parse_args(argv)
    chromium = next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)
    if chromium is None:
        print("report_png: chromium is not installed; install it with: make browser", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="report-png-") as tmp:
        runs = []
        for name, accelerator, env in MACHINES:
            run_dir = healthy_run(Path(tmp), name, accelerator, env, args.attempts, args.wait)
            if run_dir is None:
                print(
                    f"report_png: no healthy {name} run in {args.attempts} attempts; {args.out} is unchanged"
                )
                return 1
            runs.append(str(run_dir))
        page = Path(tmp) / "report.html"
        prices = Path(tmp) / "prices.toml"
        prices.write_text(PRICES)
        proc = hpubench("report", *runs, "-o", str(page), "--prices", str(prices))
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        shot = Path(tmp) / "report.png"
        screenshot(chromium, page, shot, args.width, args.height)
        shutil.copyfile(shot, args.out)
    print(f"wrote {args.out} ({args.width}×{args.height})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
