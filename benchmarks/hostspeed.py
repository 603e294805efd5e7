"""The host's own steadiness, as ``hpubench doctor``'s ``host speed`` line measures it, for a benchmark to
print before and after its figures: a figure measured while the host's speed swung says so beside it.

Measured in a fresh process (it imports torch; the benchmarks themselves need not), while nothing else of
the benchmark runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hpubench.analysis.steadiness import judge  # noqa: E402

PROBE = (
    "import json, torch; from hpubench.run.doctorfacts import host_steadiness; "
    "print(json.dumps(host_steadiness(torch)))"
)


def measure() -> dict[str, Any]:
    """The ``steadiness`` facts doctor gathers (``work``, ``block_s``, ``rates``), or ``error``."""
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def line(when: str, facts: dict[str, Any]) -> str:
    """One printable line: ``host speed (WHEN): steady|UNSTEADY: what was measured``."""
    judged = judge(facts)
    if judged is None:
        return f"host speed ({when}): not measured: {facts.get('error', 'too few blocks')}"
    return f"host speed ({when}): {'steady' if judged[0] else 'UNSTEADY'}: {judged[1]}"
