"""C4: ``HABANA_VISIBLE_MODULES`` lists the module ids a job may use; ``HLS_MODULE_ID`` picks one
process's module, which must be visible. Local rank i gets the i-th visible module, not module i; a
single-device cell runs on the module its device index names."""

from __future__ import annotations

import pytest
from contract_doubles import double_env, logged, run_worker

from hpubench.accelerators.hpu.accelerator import HPUAccelerator
from hpubench.plan.cell import Cell

ACQUIRE_FAILED = "Device acquire failed"


def test_a_module_outside_the_visible_list_cannot_be_acquired(bridge) -> None:
    bridge(HABANA_VISIBLE_MODULES="4,5,6,7", HLS_MODULE_ID="1")
    from habana_frameworks.torch import hpu

    with pytest.raises(RuntimeError, match=ACQUIRE_FAILED):
        hpu.synchronize()  # the card is acquired at the first device use


def test_hls_module_id_picks_the_process_module(bridge) -> None:
    bridge(HABANA_VISIBLE_MODULES="4,5,6,7", HLS_MODULE_ID="6")
    from habana_frameworks import _cards
    from habana_frameworks.torch import hpu

    hpu.set_device(0)
    assert _cards.held_module() is None  # set_device acquires nothing
    hpu.synchronize()
    assert _cards.held_module() == 6


@pytest.mark.parametrize(("device_ids", "modules"), [(None, [4, 5, 6, 7]), ((0, 2), [4, 6])])
def test_rank_i_gets_the_ith_visible_module(bridge, monkeypatch, device_ids, modules) -> None:
    """The environment hpubench gives each rank, applied to the double: each lands on its own module."""
    cell = Cell("mlp", accelerator="hpu", devices=len(modules), device_ids=device_ids)
    user = {"HABANA_VISIBLE_MODULES": "4,5,6,7"}
    got = []
    for rank in range(len(modules)):
        env = {**user, **HPUAccelerator.rank_env(cell, rank, user)}
        bridge(**env)
        from habana_frameworks import _cards
        from habana_frameworks.torch import hpu

        hpu.set_device(HPUAccelerator.rank_device_index(cell, rank))
        hpu.synchronize()
        got.append(_cards.held_module())
        _cards.release()  # what this rank's process exit would do
    assert got == modules


def test_without_a_user_list_rank_i_gets_module_i(bridge) -> None:
    cell = Cell("mlp", accelerator="hpu", devices=2, device_ids=(1, 3))
    envs = [HPUAccelerator.rank_env(cell, rank, {}) for rank in range(2)]
    assert [e["HLS_MODULE_ID"] for e in envs] == ["1", "3"]


def test_a_single_device_cell_runs_on_the_module_of_its_device_index(tmp_path, monkeypatch) -> None:
    """The environment the launcher gives the cell's process (``env_before_import``), then the worker."""
    log = tmp_path / "calls.log"
    cell = {"workload": "mlp", "accelerator": "hpu", "mode": "eager", "warmup_steps": 1, "steps": 2}
    cell["device_ids"] = [2]
    env = double_env(HABANA_VISIBLE_MODULES="4,5,6,7", HPUBENCH_FAKE_HPU_CALL_LOG=str(log))
    monkeypatch.setenv("HABANA_VISIBLE_MODULES", "4,5,6,7")  # the launcher's environment
    env.update(HPUAccelerator.env_before_import(Cell.from_dict(cell)))
    rec = run_worker(cell, env)
    assert logged(log, "card.acquire") == ["module=6"], (rec["status"], rec["reason"])
