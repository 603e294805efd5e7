"""Nothing outside the accelerators package branches on a device type by name (issue 13, item 4).

Everything that differs by device is a hook on ``Accelerator`` (generator device, telemetry source,
capturable optimizer, pinned host batches, process-group set-up and device ids, profiler activities and
settings, environment checks...). A comparison with "hpu", "cuda" or "cpu" anywhere else is a leak that
makes the next accelerator an edit in many files; this test finds it by reading the sources.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("hpubench", "reports", "workloads")
OWNER = ROOT / "hpubench" / "core" / "accelerators"
NAME = r"[\"'](?:hpu|cuda|cpu|HPU|CUDA)[\"']"
BRANCH = re.compile(
    rf"(?:==|!=)\s*{NAME}|{NAME}\s*(?:==|!=)|\bin\s*[(\[{{]\s*{NAME}|{NAME}\s+(?:not\s+)?in\b|[{{,]\s*{NAME}\s*:"
)
# Uses of these words that are not a device kind: each (file, text on the line) with why it is allowed.
ALLOWED = {
    ("hpubench/measure/conditions.py", 'name == "cpu"'): "the aggregate line of /proc/stat is named cpu",
}


def leaks() -> list[str]:
    found = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if OWNER in path.parents:
                continue
            rel = path.relative_to(ROOT).as_posix()
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if BRANCH.search(line) and not any(f == rel and t in line for f, t in ALLOWED):
                    found.append(f"{rel}:{n}: {line.strip()}")
    return found


def test_no_device_type_is_tested_by_name_outside_the_accelerators() -> None:
    assert leaks() == []


def test_the_scan_finds_a_leak(tmp_path: Path) -> None:
    planted = ['if cell.accelerator == "cuda":', "pin = acc in ('hpu', 'x')", 'SOURCES = {"hpu": f}']
    assert all(BRANCH.search(line) for line in planted)
    assert not BRANCH.search('PeakEntry(accelerator="hpu", name="Gaudi2")')  # data naming a kind is fine
