"""What a bisect keeps in its directory so that it resumes after an interruption: ``bisect.json``.

It holds the request (GOOD, BAD, the run's options, the set-up command), how many interleaved rounds each
commit has finished, the set-up failures, and the seconds each run took (for the time-left estimate).
The runs' records live in run directories beside it; every call is recomputed from them, so a resumed
bisect takes the same path and skips only work already done. Written atomically after every round.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpubench.errors import UsageError
from hpubench.store.rundir import write_json_atomic
from hpubench.store.runlock import LOCK_FILE

STATE_FILE = "bisect.json"
STATE_VERSION = 1
_SAME = ("good", "bad", "run_args", "setup")


@dataclass
class BisectState:
    """The mutable progress of one bisect (not a record: it is rewritten as rounds finish)."""

    path: Path
    good: str
    bad: str
    run_args: list[str]
    setup: str | None
    rounds: dict[str, int] = field(default_factory=dict)  # commit sha -> interleaved rounds finished
    setup_failed: dict[str, str] = field(default_factory=dict)  # commit sha -> why
    run_seconds: list[float] = field(default_factory=list)  # wall time of every run so far

    def as_json(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "good": self.good,
            "bad": self.bad,
            "run_args": self.run_args,
            "setup": self.setup,
            "rounds": self.rounds,
            "setup_failed": self.setup_failed,
            "run_seconds": self.run_seconds,
        }

    def save(self) -> None:
        write_json_atomic(self.path, self.as_json())

    def seconds_per_run(self) -> float | None:
        recent = self.run_seconds[-8:]
        return sum(recent) / len(recent) if recent else None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(
            f"cannot read {path} ({exc}); fix: give a new --out (or delete it to start over)"
        ) from None
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        raise UsageError(f"{path} is not a bisect state of this hpubench; fix: give a new --out")
    return data


def open_state(out: Path, good: str, bad: str, run_args: Sequence[str], setup: str | None) -> BisectState:
    """The state in ``out`` for this request: new, or the one an interrupted bisect left, which must be of
    the same commits, run options and set-up (``--repeat`` may differ: more rounds add evidence)."""
    path = out / STATE_FILE
    want = {"good": good, "bad": bad, "run_args": list(run_args), "setup": setup}
    if not path.exists():
        if out.exists() and any(p.name != LOCK_FILE for p in out.iterdir()):
            raise UsageError(f"{out} holds other files and no {STATE_FILE}; fix: give an empty or new --out")
        return BisectState(path, good, bad, list(run_args), setup)
    data = _read(path)
    differs = [k for k in _SAME if data.get(k) != want[k]]
    if differs:
        raise UsageError(
            f"{out} holds a bisect with another {', '.join(differs)} ({data.get('good', '?')[:10]}.."
            f"{data.get('bad', '?')[:10]}); fix: give the same command to resume it, or a new --out"
        )
    return BisectState(
        path,
        good,
        bad,
        list(run_args),
        setup,
        {str(k): int(v) for k, v in dict(data.get("rounds") or {}).items()},
        {str(k): str(v) for k, v in dict(data.get("setup_failed") or {}).items()},
        [float(x) for x in data.get("run_seconds") or []],
    )
