"""Reading back what a single-process cell's child left: its result file, its log's tail, how it ended.

Results travel through a file the child writes atomically (never through a pipe), so a child killed
mid-write leaves either a whole result or none. A result on disk wins even over a timeout: the child
finished right at the deadline. Without one, the reason is how the process ended
(``hpubench.run.exitwords``) and the log's tail says where.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hpubench.plan.cell import Cell
from hpubench.plan.inventory import Inventory
from hpubench.run import exitwords
from hpubench.store.record import STATUS_FAILED, CellResult

TAIL_LINES = 40
# The probe child's one line of bad input (an unusable --option, a workload file that cannot load): the
# parent refuses the run with it instead of planning without estimates.
PROBE_USAGE_PREFIX = "hpubench-probe: usage error: "


def probe_usage(text: str) -> str | None:
    """The probe's usage error in its log or stderr ``text`` (the last such line), or None."""
    for line in reversed(text.splitlines()):
        if line.startswith(PROBE_USAGE_PREFIX):
            return line[len(PROBE_USAGE_PREFIX) :]
    return None


@dataclass(frozen=True)
class Detected:
    """What a detection child found: the devices, the workload catalog, the options each workload takes
    (None from a worker too old to say)."""

    inventory: Inventory
    catalog: dict[str, tuple[str, ...]]
    workload_options: dict[str, tuple[str, ...]] | None
    workload_unavailable: dict[str, str] = field(default_factory=dict)  # workload -> why it cannot run


def failed(cell: Cell, reason: str, tail: str | None = None, **kw: Any) -> CellResult:
    return CellResult(cell, STATUS_FAILED, reason=reason, traceback_tail=tail, **kw)


def tail(path: Path | str, lines: int = TAIL_LINES) -> str | None:
    """The last lines of a log, read from its end: logs of a chatty cell can be large."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read()
    except OSError:
        return None
    text = data.decode(errors="replace").rstrip("\n")
    return "\n".join(text.splitlines()[-lines:]) or None


def last_line(log: Path) -> str:
    end = tail(log, 1)
    return end.strip() if end else "(empty)"


def read_out(out: Path) -> dict[str, Any] | None:
    """The child's JSON result file, removed once read; None when it wrote none."""
    try:
        data = json.loads(out.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"unreadable": f"{type(exc).__name__}: {exc}"}
    finally:
        with contextlib.suppress(OSError):
            out.unlink()
    return data if isinstance(data, dict) else {"unreadable": "not a JSON object"}


def collect(
    cell: Cell,
    reply: dict[str, Any],
    out: Path,
    log: Path,
    timeout_s: float,
    started_at: str,
    sent: float,
) -> tuple[CellResult, float | None]:
    """The cell's record from its result file, or its failure from the wait's ``reply``; and the time
    from ``sent`` (request sent) to the child entering the cell, where the child said."""
    data = read_out(out)
    wall_s = reply.get("wall_s")
    if data is not None and "result" in data:
        try:
            result = CellResult.from_dict(data["result"])
        except (KeyError, TypeError, ValueError) as exc:
            return failed(
                cell,
                f"the worker wrote an unreadable result ({exc})",
                tail(log),
                started_at=started_at,
                wall_s=wall_s,
            ), None
        child_started = data.get("child_started_at")
        return result, (child_started - sent) if isinstance(child_started, (int, float)) else None
    if data is not None and "unreadable" in data:
        reason = f"the worker wrote an unreadable result ({data['unreadable']})"
    else:
        reason = exitwords.reply_reason(reply, timeout_s)
    return failed(cell, reason, tail(log), started_at=started_at, wall_s=wall_s), None


def detection_failed(reply: dict[str, Any], log: Path) -> str:
    """The one line for a detection child that gave no inventory."""
    return (
        f"accelerator detection failed in a child process ({exitwords.reply_reason(reply)}); "
        f"last log line: {last_line(log)}; fix: check the device driver and framework install"
    )


def detected(data: dict[str, Any], catalog: dict[str, tuple[str, ...]]) -> Detected:
    """A detection child's JSON (with its ``inventory``) as a record."""
    names = data.get("workload_options")
    options = {k: tuple(v) for k, v in names.items()} if isinstance(names, dict) else None
    missing = data.get("workload_unavailable")
    unavailable = {str(k): str(v) for k, v in missing.items()} if isinstance(missing, dict) else {}
    return Detected(Inventory.from_dict(data["inventory"]), catalog, options, unavailable)
