"""Every HPU worker path ends its process before its card is wanted again (contract C5, issue 12 item 5).

1.19 has no Python call that releases a card: ``_hpu_C.cleanup`` (which ``Accelerator.release`` runs,
since ``os._exit`` skips the bridge's exit handlers) only syncs threads and clears the scalar cache; the
card is free once the process holding it has exited. So a cell's result must arrive only after its
processes are gone: each case runs real cells through the real launcher (a forked child, a spawned
interpreter, two distributed ranks, a cell that fails part way) and asks, right when the result is in,
which cards the double's box still has held. The double logs the cleanup as ``hpu.cleanup<TAB>pid=N``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.launch import Launcher
from hpubench.store.rundir import ResultStore

FAKES = Path(__file__).resolve().parents[1] / "fakes"

FAILING_WORKLOAD = textwrap.dedent(
    """
    from typing import ClassVar

    import torch
    from torch import nn

    import workloads
    from workloads.base import SizeSpec, Workload

    _calls = {"n": 0}


    @workloads.register
    class FailsAtThirdStep(Workload):
        name = "fails_at_third_step"
        description = "a linear model whose third training step raises"
        sizes: ClassVar[dict[str, SizeSpec]] = {"tiny": SizeSpec(8, "tiny")}
        optimizer = "sgd"

        def build_model(self, size):
            return nn.Linear(4, 1)

        def make_batch(self, size, batch_size, device, generator):
            return (torch.randn(batch_size, 4, generator=generator).to(device),)

        def loss(self, model, batch):
            if batch[0].device.type != "meta":
                _calls["n"] += 1
                if _calls["n"] == 3:
                    raise RuntimeError("this workload fails at its third step")
            return model(batch[0]).square().mean()
    """
)


def _env(calls: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PT_HPU", "HPUBENCH_FAKE", "HLS_"))}
    env.pop("HABANA_VISIBLE_MODULES", None)
    env.update(
        PYTHONPATH=os.pathsep.join([str(FAKES), env.get("PYTHONPATH", "")]),
        HPUBENCH_FAKE_HPU_CALL_LOG=str(calls),
    )
    return env


def _cleanups(calls: Path) -> list[str]:
    """The cleanup lines, asserting each comes after its process's last device call."""
    lines = calls.read_text().splitlines()
    cleanups = [line for line in lines if line.startswith("hpu.cleanup\t")]
    if cleanups:
        last_cleanup = max(i for i, line in enumerate(lines) if line.startswith("hpu.cleanup\t"))
        assert all(not line.startswith("hpu.set_device") for line in lines[last_cleanup + 1 :])
    return cleanups


HELD = "from habana_frameworks import _cards; print(sorted(_cards.held_modules()))"


def _held(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", HELD], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def _run(tmp_path: Path, cell: Cell, isolation: str = "fork", files: list[str] | None = None):
    calls = tmp_path / "calls.log"
    store = ResultStore(tmp_path / "run")
    env = _env(calls)
    with Launcher(files, base_env=env, isolation=isolation) as launcher:
        (result,) = launcher.run([PlannedCell(cell)], store, timeout_s=150)
        assert _held(env) == "[]"  # the cell's processes are gone: no card is held any more
    return result, _cleanups(calls)


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["fork", "spawn"])
def test_a_single_device_cell_releases_its_card_before_exiting(tmp_path: Path, isolation: str) -> None:
    cell = Cell("mlp", accelerator="hpu", mode="eager", warmup_steps=1, steps=2)
    result, cleanups = _run(tmp_path, cell, isolation)
    assert result.status == "ok", (result.reason, result.traceback_tail)
    assert len(cleanups) == 1, cleanups


@pytest.mark.slow
def test_a_failing_cell_releases_its_card_too(tmp_path: Path) -> None:
    plugin = tmp_path / "failing.py"
    plugin.write_text(FAILING_WORKLOAD)
    cell = Cell("fails_at_third_step", accelerator="hpu", mode="eager", warmup_steps=1, steps=4)
    result, cleanups = _run(tmp_path, cell, files=[str(plugin)])
    assert result.status == "failed" and "third step" in str(result.reason), result.reason
    assert len(cleanups) == 1, cleanups


@pytest.mark.slow
def test_every_rank_of_a_multi_card_cell_releases_its_card(tmp_path: Path) -> None:
    cell = Cell("mlp", accelerator="hpu", devices=2, mode="eager", warmup_steps=1, steps=2)
    result, cleanups = _run(tmp_path, cell)
    assert result.status == "ok", (result.reason, result.traceback_tail)
    pids = {line.split("\t")[1].split()[0] for line in cleanups}
    assert len(pids) == 2, cleanups
