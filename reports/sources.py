"""Result sets as a report sees them: the records of one run, its provenance, and a short label.

``hpubench.store.readback.load_results`` merges runs into one list; a report must keep them apart (which run
said what, on which machine, with which software), so each path is loaded on its own here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from hpubench.analysis.compare import CellRuns, group_runs
from hpubench.analysis.economics import device_name
from hpubench.store.layout import CELLS_FILE
from hpubench.store.readback import load_results
from hpubench.store.record import CellResult
from hpubench.store.rundir import ResultStore

TEST_DOUBLE_MARK = "test double"


def is_test_double(result: CellResult) -> bool:
    """Figures from the habana_frameworks test double describe the host CPU, never a Gaudi."""
    software = result.runtime.software
    return isinstance(software, dict) and TEST_DOUBLE_MARK in str(software.get("habana_frameworks", ""))


@dataclass(frozen=True)
class ResultSet:
    label: str
    path: str
    meta: dict[str, Any] | None
    results: tuple[CellResult, ...]

    @cached_property
    def runs(self) -> list[CellRuns]:
        return group_runs(self.results)

    @property
    def device_kinds(self) -> list[tuple[str, str]]:
        """(accelerator, device name) of every record that got far enough to name its device."""
        return sorted({(r.cell.accelerator, device_name(r)) for r in self.results if device_name(r)})

    @property
    def test_double(self) -> bool:
        return any(is_test_double(r) for r in self.results)

    def inventory_device(self, accelerator: str) -> str:
        """The device name the run detected, for cells that never got as far as naming their device."""
        inventory = (self.meta or {}).get("inventory")
        entry = inventory.get(accelerator) if isinstance(inventory, dict) else None
        return str(entry.get("device_name") or "") if isinstance(entry, dict) else ""

    @property
    def hardware(self) -> str:
        kinds = [f"{name} ({acc})" for acc, name in self.device_kinds] or ["unknown device"]
        return ", ".join(kinds) + (" — HPU TEST DOUBLE" if self.test_double else "")


def _label(path: Path) -> str:
    p = path.resolve()
    return (p.parent if p.name == CELLS_FILE else p).name or str(p)


def load_result_set(path: str | os.PathLike[str], label: str | None = None) -> ResultSet:
    """One run directory or cells.jsonl file; bad input is a UsageError from the store, with the fix."""
    p = Path(path)
    results = load_results([str(p)])
    run_dir = p.parent if p.name == CELLS_FILE else p
    meta = ResultStore(run_dir).read_meta() if run_dir.is_dir() else None
    return ResultSet(label=label or _label(p), path=str(path), meta=meta, results=tuple(results))


def load_result_sets(paths: Sequence[str | os.PathLike[str]]) -> list[ResultSet]:
    """Each path as its own result set; labels made unique so two runs named alike stay apart."""
    sets: list[ResultSet] = []
    seen: dict[str, int] = {}
    for path in paths:
        label = _label(Path(path))
        seen[label] = seen.get(label, 0) + 1
        sets.append(load_result_set(path, label if seen[label] == 1 else f"{label} ({seen[label]})"))
    return sets
