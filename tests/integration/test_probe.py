"""The estimates' probe: forked from the pre-warmed server, or a fresh interpreter under spawn isolation."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hpubench.errors import ProbeFailed
from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.launch import Launcher
from hpubench.run.preflight import run_probe

# Registered only from this file: the server loaded it, so the forked probe knows it without being told.
WORKLOAD = textwrap.dedent(
    """
    import torch
    from torch import nn

    import workloads
    from workloads.base import SizeSpec, Workload


    @workloads.register
    class Probed(Workload):
        name = "probed"
        description = "two linear layers, registered from a file"
        sizes = {"tiny": SizeSpec(4, "2.7k parameters"), "standard": SizeSpec(8, "2.7k parameters")}

        def build_model(self, size):
            return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))

        def make_batch(self, size, batch_size, device, generator):
            return (torch.randn((batch_size, 16), generator=generator, device=device),)

        def loss(self, model, batch):
            return model(batch[0]).square().mean()
    """
)
PARAMS = 16 * 32 + 32 + 32 * 2 + 2


@pytest.fixture
def workload_file(tmp_path: Path) -> str:
    path = tmp_path / "probed.py"
    path.write_text(WORKLOAD)
    return str(path)


def _probe(launcher: Launcher, cache: Path, runner: bool) -> tuple[dict, dict, str | None]:
    cells = [PlannedCell(Cell("probed", "tiny", "cpu"))]
    return run_probe(
        cells,
        python=launcher.python,
        workload_files=launcher.workload_files,
        env={**launcher.base_env, "XDG_CACHE_HOME": str(cache)},
        host_accelerators=("cpu",),
        runner=launcher.probe if runner else None,
    )


def test_the_probe_runs_forked_from_the_server_and_agrees_with_a_fresh_interpreter(
    workload_file: str, tmp_path: Path
) -> None:
    with Launcher(isolation="fork", workload_files=[workload_file]) as launcher:
        launcher.detect()
        forked = _probe(launcher, tmp_path / "c1", runner=True)
        fresh = _probe(launcher, tmp_path / "c2", runner=False)
    for facts, cals, problem in (forked, fresh):
        assert problem is None
        assert facts["probed|tiny|0"]["params"] == PARAMS
        assert cals["cpu"].tflops["fp32"] > 0
    assert forked[0]["probed|tiny|0"]["flops"] == fresh[0]["probed|tiny|0"]["flops"]


def test_spawn_isolation_has_no_server_to_fork_the_probe_from(workload_file: str) -> None:
    with Launcher(isolation="spawn", workload_files=[workload_file]) as launcher, pytest.raises(ProbeFailed):
        launcher.probe(["--cell", "probed|tiny|0"], 60)


def test_a_failed_probe_leaves_the_run_unestimated_with_the_reason(tmp_path: Path) -> None:
    def broken(argv: list[str], timeout_s: float) -> dict:
        raise ProbeFailed("the worker process died (test)")

    facts, cals, problem = run_probe(
        [PlannedCell(Cell("mlp"))], python="python3", workload_files=[], env={}, runner=broken
    )
    assert (facts, cals) == ({}, {})
    assert problem == "the estimate probe failed: the worker process died (test)"
