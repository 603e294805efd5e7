"""Helpers for the contract tests (hpu-api.md "Contract facts" C1..C11): the bridge and HLML
doubles of tests/fakes, in this process or in a worker subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from hpudouble import FAKES, FOREIGN

ROOT = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent(
    """
    import json, sys
    from hpubench.plan.cell import Cell
    from hpubench.plan.runoptions import RunOptions
    from hpubench.run.worker import run_cell

    cell = Cell.from_dict(json.loads(sys.argv[1]))
    options = RunOptions.from_dict(json.loads(sys.argv[2]))
    print(json.dumps(run_cell(cell, options=options).to_dict()))
    """
)


def double_env(**extra: str) -> dict[str, str]:
    """This process's environment without any bridge/double variable, the doubles on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN)}
    path = [str(FAKES), str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.update(extra)
    return env


def run_worker(
    cell: dict[str, Any], env: dict[str, str], options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One cell through ``hpubench.run.worker.run_cell`` in a fresh interpreter on the doubles."""
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, json.dumps(cell), json.dumps(options or {})],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def logged(path: Path, name: str) -> list[str]:
    """Details of every ``name`` call in a double's call log."""
    if not path.exists():
        return []
    lines = [line.split("\t", 1) for line in path.read_text().splitlines()]
    return [parts[1] if len(parts) > 1 else "" for parts in lines if parts[0] == name]
