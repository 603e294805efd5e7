"""Where a benchmark writes its JSON figures: never over an earlier result, never after minutes of
measuring into a folder that is not there."""

from __future__ import annotations

from pathlib import Path


def json_out_problem(path: str | Path | None) -> str | None:
    """Why ``--json PATH`` cannot be written (one line), or None; checked before anything is measured."""
    if path is None:
        return None
    p = Path(path)
    if p.exists():
        return f"--json {p} exists; give a new path"
    if not p.parent.is_dir():
        return f"--json {p} is in a folder that does not exist"
    return None
