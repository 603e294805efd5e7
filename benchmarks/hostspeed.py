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
from typing import Any, TextIO

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


def take(host: dict[str, dict[str, Any]], when: str, file: TextIO | None = sys.stdout) -> None:
    """Measure now, keep the facts in ``host`` under ``when``, and print their line to ``file`` (None:
    not yet; ``lines`` prints them all later)."""
    host[when] = measure()
    if file is not None:
        print(line(when, host[when]), file=file, flush=True)


def lines(host: dict[str, dict[str, Any]]) -> str:
    """Every line of ``host``, in the order they were taken."""
    return "\n".join(line(when, facts) for when, facts in host.items())
