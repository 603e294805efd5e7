"""The run directory's file names: what the writer (:mod:`hpubench.store.rundir`) lays out and the readers
(:mod:`hpubench.store.readback`, reports, baselines) look for.

A module of its own so the reader and the writer share the names without importing each other.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

CELLS_FILE = "cells.jsonl"
META_FILE = "meta.json"
LOGS_DIR = "logs"
# The numerics references of a run (hpubench.run.cellrun.reference): one small JSON file per reference key.
REFERENCES_DIR = "references"
# What marks a results directory: a run directory or a saved baseline.
RESULTS_MARKERS = (CELLS_FILE, META_FILE)
# What marks a baseline store (hpubench.store.baselines): its index of saved baselines.
INDEX_FILE = "index.json"


def results_dir_of(path: Path) -> Path | None:
    """The results directory ``path`` lies in (it or any ancestor holds cells.jsonl or meta.json)."""
    for parent in path.parents:
        if any((parent / marker).exists() for marker in RESULTS_MARKERS):
            return parent
    return None


def same_results(paths: Sequence[str | os.PathLike[str]]) -> tuple[str, str] | None:
    """The first two of ``paths`` that name one results directory (the directory, its cells.jsonl, a link
    to either), or None: a report or history of them would count one run twice."""
    seen: dict[str, str] = {}
    for raw in paths:
        path = Path(os.path.realpath(raw))
        key = str(path.parent if path.name == CELLS_FILE else path)
        if key in seen:
            return seen[key], str(raw)
        seen[key] = str(raw)
    return None


def baseline_store_of(path: Path) -> Path | None:
    """The baseline store ``path`` lies in: an ancestor whose index.json is a baselines index (an object
    with "baselines"), so a web folder's own index.json is not taken for one."""
    for parent in path.parents:
        index = parent / INDEX_FILE
        if not index.is_file():
            continue
        try:
            data = json.loads(index.read_bytes())
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict) and "baselines" in data:
            return parent
    return None


def references_dir_of(cell_file: Path) -> Path | None:
    """The references directory of the run a cell's log or step feed (``RUN/logs/...``) belongs to; None
    for a file outside a run directory's logs (a cell run on its own keeps no references)."""
    if cell_file.parent.name != LOGS_DIR:
        return None
    return cell_file.parent.parent / REFERENCES_DIR
