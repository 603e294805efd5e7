"""Result files for the bad-input tests: one good record as a run writes it, and ways to spoil it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hpubench.store.rundir import record_line
from tests.reportdata import fake_result


def good_record() -> dict[str, Any]:
    """One ok record of a CPU cell, exactly as ``ResultStore.append`` writes it."""
    return json.loads(record_line(fake_result("mlp", "cpu", "Test CPU", precision="32-true")))


GOOD = good_record()


def json_line(record: dict[str, Any]) -> bytes:
    """``record`` as one line of a cells.jsonl."""
    return json.dumps(record).encode() + b"\n"


def cells_with(record: dict[str, Any]) -> bytes:
    """A cells.jsonl of the good record followed by ``record``."""
    return json_line(GOOD) + json_line(record)


def write_run(run_dir: Path, records: list[dict[str, Any]], raw_tail: bytes = b"") -> Path:
    """A run directory whose cells.jsonl holds ``records`` (one JSON line each) and ``raw_tail``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    (run_dir / "cells.jsonl").write_bytes(lines + raw_tail)
    return run_dir


def with_path(record: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``record`` with the dotted ``path`` set to ``value`` (``...`` deletes it)."""
    out = json.loads(json.dumps(record))
    parts = path.split(".")
    target = out
    for p in parts[:-1]:
        target = target[p]
    if value is ...:
        target.pop(parts[-1], None)
    else:
        target[parts[-1]] = value
    return out
