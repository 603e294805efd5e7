"""HPU cells through the pre-warmed fork server (``hpubench.run.forkserver.server``) on the strict double
(C2, C3).

With autoload (C2) ``import torch`` in the fork server loads the bridge, and every cell child is forked
from it. C3 says a child forked after the bridge initialised cannot use the device, and leaves open
whether a bridge that was only loaded is safe to fork: the cases run with
``HPUBENCH_FAKE_HPU_FORK_AFTER_LOAD=refuse`` (the harsher reading), which hpubench must survive.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.launch import Launcher
from hpubench.store.rundir import ResultStore

FAKES = Path(__file__).resolve().parents[1] / "fakes"


def _env(tmp_path: Path, reading: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT_HPU", "HPUBENCH_FAKE", "HLS_"))}
    env.pop("HABANA_VISIBLE_MODULES", None)
    env.update(
        PYTHONPATH=os.pathsep.join([str(FAKES), env.get("PYTHONPATH", "")]),
        HPUBENCH_FAKE_HPU_FORK_AFTER_LOAD=reading,
        HPUBENCH_FAKE_HPU_CALL_LOG=str(tmp_path / "calls.log"),
    )
    return env


@pytest.mark.slow
@pytest.mark.parametrize("reading", ["refuse", "allow"])
def test_an_hpu_cell_runs_in_a_forked_child_under_either_reading_of_c3(tmp_path: Path, reading: str) -> None:
    cell = Cell("mlp", accelerator="hpu", mode="eager", warmup_steps=1, steps=2)
    store = ResultStore(tmp_path / "run")
    with Launcher(base_env=_env(tmp_path, reading), isolation="fork") as launcher:
        inventory, _ = launcher.detect()
        (result,) = launcher.run([PlannedCell(cell)], store, timeout_s=120)
    # Detection is forked from a server too; a refused device call there reads as "no HPU".
    assert (inventory.count("hpu"), inventory.device_name("hpu")) == (8, "GAUDI2")
    assert result.status == "ok", (result.reason, result.traceback_tail)
    assert "(test double)" in result.runtime["software"]["habana_frameworks"]
