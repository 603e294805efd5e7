"""The programmatic API behind the CLI: resolve a matrix, detect, plan, run.

The CLI only parses and prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpubench import matrix
from hpubench.cell import PlannedCell
from hpubench.errors import UsageError
from hpubench.inventory import Inventory
from hpubench.launch import Event, Launcher
from hpubench.record import CellResult
from hpubench.store import ResultStore, run_metadata


def resolve_spec(matrix_arg: str | None, overrides: dict[str, Any]) -> matrix.MatrixSpec:
    """A preset name or a TOML path, restricted/overridden by the dimensions given on the command line."""
    base = None
    if matrix_arg:
        if matrix_arg in matrix.PRESETS:
            base = matrix.preset(matrix_arg)
        elif matrix_arg.endswith(".toml") or os.path.sep in matrix_arg:
            if not Path(matrix_arg).is_file():
                raise UsageError(f"matrix file {matrix_arg!r} does not exist; give a path to a .toml file")
            base = matrix.load_matrix_file(matrix_arg)
        else:
            raise UsageError(
                f"unknown matrix {matrix_arg!r}; use a preset ({', '.join(matrix.PRESETS)}) "
                "or a path to a .toml file"
            )
    return matrix.spec_from_options(base=base, **overrides)


@dataclass(frozen=True)
class Plan:
    spec: matrix.MatrixSpec
    inventory: Inventory
    catalog: dict[str, tuple[str, ...]]
    cells: list[PlannedCell]


def make_plan(spec: matrix.MatrixSpec, launcher: Launcher) -> Plan:
    inventory, catalog = launcher.detect()
    return Plan(spec, inventory, catalog, matrix.expand(spec, inventory, catalog))


def check_out_dir(out: Path, resume: bool) -> None:
    """Refuse to mix a new run into an existing one: its records must never be lost or blended."""
    if not resume and ResultStore(out).exists():
        raise UsageError(
            f"results directory {str(out)!r} already holds a run; "
            "pass --resume to continue it or choose another --out"
        )


def run_plan(
    plan: Plan,
    launcher: Launcher,
    out: Path,
    *,
    resume: bool,
    timeout_s: float,
    on_event: Callable[[Event], None],
    argv: list[str],
) -> list[CellResult]:
    store = ResultStore(out)
    if not store.exists() or store.read_meta() is None:
        store.write_meta(run_metadata(argv=argv, inventory=plan.inventory, spec_name=plan.spec.name))
    return launcher.run(plan.cells, store, timeout_s=timeout_s, resume=resume, on_event=on_event)
