"""C13: any bridge import runs the bridge's set-up (``habana_frameworks/torch/__init__.py`` and
``distributed/hccl/__init__.py``, 1.19): ``TORCHINDUCTOR_COMPILE_THREADS=1`` (overwritten),
``int(PT_HPU_LAZY_MODE)`` (a non-integer raises ValueError), ``MASTER_ADDR``/``MASTER_PORT`` defaulted unless
torch's three rank variables are set, ``HLS_MODULE_ID`` set from ``LOCAL_RANK`` (through
``HABANA_VISIBLE_MODULES``) when unset and ``WORLD_SIZE`` is not 1. So a rank's variables must be in place
before its first bridge import: hpubench sets them before it imports torch in each rank."""

from __future__ import annotations

import os

import pytest
from contract_doubles import double_env, logged

from hpubench.plan.cell import Cell, PlannedCell
from hpubench.run.launch import Launcher
from hpubench.store.rundir import ResultStore


def test_any_bridge_import_runs_the_setup(bridge, monkeypatch) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "8")
    for key in ("MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(key, raising=False)
    bridge()
    assert os.environ["TORCHINDUCTOR_COMPILE_THREADS"] == "1"
    assert (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]) == ("localhost", "12345")
    assert "HLS_MODULE_ID" not in os.environ  # one process: no module chosen


def test_a_rank_gets_its_visible_module_unless_one_is_set(bridge, monkeypatch) -> None:
    for key, value in {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "MASTER_PORT": "29999"}.items():
        monkeypatch.setenv(key, value)
    bridge(HABANA_VISIBLE_MODULES="4,5")
    assert os.environ["HLS_MODULE_ID"] == "5" and os.environ["MASTER_PORT"] == "29999"
    bridge(HABANA_VISIBLE_MODULES="4,5", HLS_MODULE_ID="4")
    assert os.environ["HLS_MODULE_ID"] == "4"  # never overwritten


@pytest.mark.parametrize("value", ["true", "lazy", ""])
def test_a_non_integer_lazy_mode_fails_every_bridge_import(bridge, value: str) -> None:
    with pytest.raises(ValueError, match="invalid literal for int"):
        bridge(PT_HPU_LAZY_MODE=value)


@pytest.mark.slow
def test_each_rank_imports_the_bridge_with_its_rank_variables_in_place(tmp_path) -> None:
    """The bridge's set-up, as logged at each rank's import, saw that rank's variables (not defaults)."""
    calls = tmp_path / "calls.log"
    env = double_env(HPUBENCH_FAKE_HPU_CALL_LOG=str(calls))
    cell = Cell("mlp", accelerator="hpu", devices=2, mode="eager", warmup_steps=1, steps=2)
    with Launcher(None, base_env=env) as launcher:
        (result,) = launcher.run([PlannedCell(cell)], ResultStore(tmp_path / "run"), timeout_s=150)
    assert result.status == "ok", (result.reason, result.traceback_tail)
    seen = [line for line in logged(calls, "hccl.env") if "world_size=2" in line]
    assert sorted(seen) == ["world_size=2 rank=0 local_rank=0", "world_size=2 rank=1 local_rank=1"], seen
