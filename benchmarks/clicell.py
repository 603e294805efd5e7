"""One tiny CPU cell through the CLI as a user runs it, for the benchmarks that compare policies."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def tiny_cell(workload: str, steps: int, warmup: int, env: Mapping[str, str], tag: str) -> dict[str, Any]:
    """``python -m hpubench run`` of one tiny 32-true eager CPU cell into a fresh store, without telemetry.

    Returns the record of an ``ok`` cell, else ``{"error": ...}`` with the last line of output or the
    record's reason. ``tag`` names the temporary store (``hpubench-TAG-``)."""
    with tempfile.TemporaryDirectory(prefix=f"hpubench-{tag}-") as tmp:
        args = [
            sys.executable, "-m", "hpubench", "run", "-w", workload, "--size", "tiny", "-a", "cpu",
            "--precision", "32-true", "--mode", "eager", "--steps", str(steps),
            "--warmup-steps", str(warmup), "--no-telemetry", "-o", tmp,
        ]  # fmt: skip
        proc = subprocess.run(args, env=dict(env), capture_output=True, text=True, timeout=900)
        lines = (Path(tmp) / "cells.jsonl").read_text().splitlines() if proc.returncode == 0 else []
    if not lines:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}
    rec = json.loads(lines[-1])
    if rec["status"] != "ok":
        return {"error": rec.get("reason")}
    return rec
